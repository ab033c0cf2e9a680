"""The robot-dynamics command-line tool end to end, and the plots it draws.

Commands run in-process through ``cli.main(argv, out)`` (fast), and a few
through ``python -m robot_dynamics`` in a subprocess (the real entry point,
exit codes, one-line errors on stderr). Their output is checked against
the library: the JSON numbers equal rd.* at the same state, the generated
Python code equals rd.rnea, the saved simulation equals simulate() called
directly, the plotted arrays equal gravity_torques / cond(M) at the plotted
points and the PNG files are real images with something drawn on them.
"""
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.tools import cli, plots
from robot_dynamics.analysis.report import dynamic_report
from shipped import install_share

ROOT = Path(__file__).resolve().parents[1]
UR5 = str(ROOT / "urdf" / "ur5.urdf")
PANDA = str(ROOT / "urdf" / "panda_arm.urdf")
TEXTBOOK = ROOT / "urdf" / "textbook"
TWO_LINK = str(TEXTBOOK / "point_mass_two_link.urdf")
ONE_AXIS = str(TEXTBOOK / "one_axis_arm.urdf")


def run(*argv):
    """(exit code, stdout, stderr) of cli.main in-process."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err                # argparse's --help goes to sys.stdout
    try:
        code = cli.main([str(a) for a in argv], out=out)
    except SystemExit as e:                          # argparse: --help and usage errors
        code = e.code
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def run_ok(*argv):
    code, out, err = run(*argv)
    assert code == 0, err
    return out


def quiet_load(path, gravity=(0, 0, -9.81)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)
        return rd.load_urdf(path, gravity=gravity)


# ---------------------------------------------------------------------------
# info, torques, equations, report
# ---------------------------------------------------------------------------

def test_help_lists_every_command_with_examples():
    code, out, _ = run("--help")
    assert code == 0
    for command in ("info", "torques", "equations", "report", "simulate", "plot", "retime"):
        assert command in out
        assert "robot-dynamics %s " % command in out           # an example of each
    code, out, _ = run("torques", "--help")
    assert code == 0 and "--qdd" in out and "examples:" in out


def test_info_json_matches_the_model_and_its_centre_of_mass():
    d = json.loads(run_ok("info", UR5, "--json"))
    model = rd.load_urdf(UR5)
    assert d["joints"][1]["name"] == "shoulder_lift_joint" and d["nq"] == 6
    assert d["total_mass"] == pytest.approx(model.total_mass)
    assert d["links"]["upper_arm_link"] == pytest.approx(8.393)
    assert d["joints"][2]["effort"] == pytest.approx(150.0) and d["joints"][2]["lower"] == pytest.approx(-np.pi)
    # Centre of mass from the potential energy alone: U = -m g.c, once per axis with a unit gravity.
    q = model.neutral()
    c = [rd.potential_energy(rd.load_urdf(UR5, gravity=-e), q) / d["moving_mass"] for e in np.eye(3)]
    np.testing.assert_allclose(d["center_of_mass"], c, rtol=1e-12, atol=1e-12)
    assert d["moving_mass"] + d["base_fixed_mass"] == pytest.approx(model.total_mass)


def test_info_text_lists_joints_masses_and_inertia_warnings():
    out = run_ok("info", TWO_LINK, "--gravity", "0,-9.81,0")
    assert "joint1" in out and "revolute" in out and "total" in out and "2.75" in out   # 1.9 + 0.85 kg
    assert "Inertia warnings:" in out and "link 'link1'" in out and "link 'tip'" in out
    assert "Inertia warnings: none" in run_ok("info", UR5)


def test_info_prints_each_joint_s_armature_gear_ratio_and_friction_law():
    """The shipped actuators file: panda_joint1's armature is its rotor inertia through the gear,
    4.0e-5 kg m^2 * 100**2 = 0.4 kg m^2; the others keep the URDF's viscous damping and gear ratio 1."""
    actuators = ROOT / "urdf" / "examples" / "panda.actuators.yaml"
    d = json.loads(run_ok("info", PANDA, "--actuators", actuators, "--json"))
    j1, j2, j3 = d["joints"][:3]
    assert j1["armature"] == pytest.approx(4.0e-5 * 100 ** 2) and j1["gear_ratio"] == 100.0
    assert j1["gear_ratio_from"] == "actuators" and j1["rotor_inertia"] == pytest.approx(4.0e-5)
    assert j1["friction_law"] == {"law": "coulomb", "coulomb": 0.8, "viscous": 0.05, "smoothing": 0.01}
    assert j2["armature"] == 0.3 and j2["gear_ratio"] == 1.0 and j2["gear_ratio_from"] == "default"
    assert j2["friction_law"] == {"law": "sigmoid", "phi1": 0.54, "phi2": 5.12, "phi3": 0.04}
    urdf_damping = float(re.search(r'name="panda_joint3".*?damping="([\d.e-]+)"', Path(PANDA).read_text(), re.S).group(1))
    assert j3["armature"] == 0.0 and j3["friction_law"] == {"law": "viscous", "viscous": urdf_damping}
    text = run_ok("info", PANDA, "--actuators", actuators)
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("panda_joint")
            and ":" in line}
    assert rows["panda_joint1"].split()[1:4] == ["0.4", "100", "coulomb:"]
    assert rows["panda_joint1"].endswith("coulomb: coulomb 0.8, viscous 0.05, smoothing 0.01")
    assert rows["panda_joint2"].split()[1:] == ["0.3", "1", "sigmoid:", "phi1", "0.54,", "phi2", "5.12,", "phi3", "0.04"]
    assert rows["panda_joint3"].split()[1:] == ["0", "1", "viscous:", "viscous", "%g" % urdf_damping]
    mjcf = json.loads(run_ok("info", ROOT / "urdf" / "examples" / "two_link.xml", "--json"))    # <default armature>
    assert [j["armature"] for j in mjcf["joints"]] == [0.05, 0.05]


def test_torques_json_equals_the_library():
    q, qd, qdd = "0.3,-1.2,1.4,-0.5,0.8,0.1", "0.5,0,-0.3,0,0.2,1", "1,2,3,-1,-2,-3"
    d = json.loads(run_ok("torques", UR5, "--q", q, "--qd", qd, "--qdd", qdd, "--json"))
    model = rd.load_urdf(UR5)
    qv, qdv, qddv = (np.array([float(x) for x in s.split(",")]) for s in (q, qd, qdd))
    np.testing.assert_allclose(d["tau"], rd.rnea(model, qv, qdv, qddv), rtol=1e-12)
    np.testing.assert_allclose(d["gravity"], rd.gravity_torques(model, qv), rtol=1e-12)
    np.testing.assert_allclose(d["coriolis"], rd.nonlinear_effects(model, qv, qdv) - rd.gravity_torques(model, qv),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d["mass_matrix"], rd.mass_matrix(model, qv), rtol=1e-12)
    np.testing.assert_allclose(np.add(np.add(d["gravity"], d["coriolis"]), d["inertial"]), d["tau"], atol=1e-9)


def test_torques_named_values_degrees_and_table():
    d = json.loads(run_ok("torques", UR5, "--q", "shoulder_lift_joint=-90deg,elbow_joint=0.5", "--json"))
    assert d["q"] == pytest.approx([0, -np.pi / 2, 0.5, 0, 0, 0])
    assert d["qd"] == [0.0] * 6 and d["tau"] == pytest.approx(d["gravity"])
    out = run_ok("torques", TWO_LINK, "--gravity", "0,-9.81,0", "--q", "0.3,0.4")
    assert "gravity" in out and "Mass matrix" in out and "joint2" in out
    model = quiet_load(TWO_LINK, (0, -9.81, 0))
    g = rd.gravity_torques(model, [0.3, 0.4])
    assert ("%.5g" % g[0]) in out


def test_equations_python_output_runs_and_matches_rnea(tmp_path):
    path = tmp_path / "two_link.py"
    out = run_ok("equations", TWO_LINK, "--gravity", "0,-9.81,0", "--python", "-o", path)
    assert "wrote" in out
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    model = quiet_load(TWO_LINK, (0, -9.81, 0))
    q, qd, qdd = np.random.default_rng(0).uniform(-2, 2, (3, 10, 2))
    np.testing.assert_allclose(ns["inverse_dynamics"](q, qd, qdd), rd.rnea(model, q, qd, qdd), rtol=1e-10,
                               atol=1e-10)


def test_equations_text_latex_and_symbols():
    out = run_ok("equations", TWO_LINK, "--gravity", "0,-9.81,0",
                 "--symbols", "m2=tip.mass,l1=joint2.x+link1.com_x,l2=tip_joint.x,g=gravity")
    assert "tau1 = " in out and "c12 = cos(q1 + q2)" in out and "l2 = 0.37" in out
    assert "G2 = c12*g*l2*m2" in out
    tex = run_ok("equations", TWO_LINK, "--gravity", "0,-9.81,0", "--latex", "--symbols", "m2=tip.mass")
    assert r"\begin{align*}" in tex and r"\ddot{q}_{1}" in tex and "m_{2}" in tex


def test_report_json_equals_dynamic_report():
    d = json.loads(run_ok("report", UR5, "--q", "0,-1.57,1.57,0,0,0", "--point", "0,0,0.1",
                          "--wrench", "0,0,-10,0,0,0", "--json"))
    model = rd.load_urdf(UR5)
    rep = dynamic_report(model, [0, -1.57, 1.57, 0, 0, 0], point=(0, 0, 0.1), wrench=[0, 0, -10, 0, 0, 0])
    assert d["max_payload"] == pytest.approx(rep.max_payload) and d["limiting_joint"] == rep.limiting_joint
    np.testing.assert_allclose(d["static_torques"], rep.static_torques)
    text = run_ok("report", UR5, "--q", "0,-1.57,1.57,0,0,0")
    assert "Maximum payload at this pose" in text and "Coupling inertias" in text


# ---------------------------------------------------------------------------
# simulate and the plots
# ---------------------------------------------------------------------------

def test_simulate_saves_what_simulate_returns(tmp_path):
    from robot_dynamics.simulation import SimulationResult, simulate
    path = tmp_path / "run.npz"
    out = run_ok("simulate", TWO_LINK, "--gravity", "0,-9.81,0", "--duration", "0.5", "--q0", "0.2,0.1",
                 "--torque", "joint2=0.5", "-o", path)
    assert "saved 501 samples" in out
    saved = SimulationResult.load(path)
    model = quiet_load(TWO_LINK, (0, -9.81, 0))
    direct = simulate(model, np.array([0.2, 0.1]), duration=0.5, tau=np.array([0.0, 0.5]), progress=False)
    np.testing.assert_allclose(saved.t, direct.t)
    np.testing.assert_allclose(saved.q, direct.q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(saved.energy, direct.energy, rtol=1e-12, atol=1e-12)
    csv = tmp_path / "run.csv"
    run_ok("simulate", TWO_LINK, "--gravity", "0,-9.81,0", "--duration", "0.5", "--q0", "0.2,0.1",
           "--torque", "joint2=0.5", "-o", csv, "--record-every", "10")
    np.testing.assert_allclose(SimulationResult.load(csv).q, direct.q[::10], rtol=1e-12, atol=1e-12)


def test_simulate_shows_a_progress_bar_when_asked(tmp_path):
    code, out, err = run("simulate", TWO_LINK, "--gravity", "0,-9.81,0", "--duration", "0.2", "--progress",
                         "-o", tmp_path / "r.csv")
    assert code == 0 and "100%" in err and "simulating" in err


def _png(path):
    """(height, width, pixel std) of a PNG written by the plots."""
    import matplotlib.image as mpimg
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(path)
    return img.shape[0], img.shape[1], float(np.std(img[..., :3]))


def test_plot_gravity_data_and_image(tmp_path):
    model = rd.load_urdf(UR5)
    q0 = np.array([0.1, -0.8, 0.9, 0.2, -0.3, 0.0])
    data = plots.plot_gravity(model, tmp_path / "g.png", q0, points=41)
    assert data["joints"] == model.joint_names and data["positions"].shape == (6, 41)
    for k in range(6):
        Q = np.repeat(q0[None], 41, axis=0)
        Q[:, k] = data["positions"][k]
        np.testing.assert_allclose(data["all_torques"][k], rd.gravity_torques(model, Q))
        np.testing.assert_allclose(data["torque"][k], rd.gravity_torques(model, Q)[:, k])
        np.testing.assert_allclose(data["positions"][k][[0, -1]], [model.lower_limit[k], model.upper_limit[k]])
    h, w, std = _png(tmp_path / "g.png")
    assert h > 300 and w > 600 and std > 0.05


def test_plot_gravity_of_the_one_axis_arm_is_its_closed_form(tmp_path):
    """G = g0 m1 a1 cos(q1) / 2 over -pi..pi (a continuous joint: no limits)."""
    model = quiet_load(ONE_AXIS, (0, -9.81, 0))
    data = plots.plot_gravity(model, tmp_path / "g1.png", points=73)
    x = data["positions"][0]
    np.testing.assert_allclose(x[[0, -1]], [-np.pi, np.pi])
    np.testing.assert_allclose(data["torque"][0], 9.81 * 1.7 * 0.43 * np.cos(x) / 2, rtol=1e-12, atol=1e-12)


def test_plot_condition_data_and_image(tmp_path):
    """Two-link arm: M depends on q2 only, so cond(M) is constant along q1 and varies along q2."""
    model = quiet_load(TWO_LINK, (0, -9.81, 0))
    data = plots.plot_condition(model, tmp_path / "c.png", points=31)
    assert data["joints"] == ("joint1", "joint2") and data["condition"].shape == (31, 31)
    cond = data["condition"]
    np.testing.assert_allclose(cond, cond[:, :1] * np.ones((1, 31)), rtol=1e-10)   # rows: fixed q2
    assert cond[:, 0].max() / cond[:, 0].min() > 2
    for r, c in ((0, 0), (7, 20), (30, 30)):
        M = rd.mass_matrix(model, [data["x"][c], data["y"][r]])
        assert cond[r, c] == pytest.approx(np.linalg.cond(M), rel=1e-12)
    h, w, std = _png(tmp_path / "c.png")
    assert h > 300 and w > 400 and std > 0.05
    with pytest.raises(ValueError, match="two different joints"):
        plots.plot_condition(model, tmp_path / "x.png", joints=("joint1", "joint1"))


def test_plot_trajectory_data_and_image(tmp_path):
    from robot_dynamics.simulation import simulate
    model = quiet_load(TWO_LINK, (0, -9.81, 0))
    result = simulate(model, np.array([0.5, 0.0]), duration=0.3, progress=False)
    data = plots.plot_trajectory(result, tmp_path / "t.png", joints=["joint2"])
    np.testing.assert_array_equal(data["t"], result.t)
    np.testing.assert_array_equal(data["q"][:, 0], result.q[:, 1])
    np.testing.assert_array_equal(data["energy"], result.energy)
    h, w, std = _png(tmp_path / "t.png")
    assert h > 500 and w > 500 and std > 0.05


def test_plot_commands_write_pngs(tmp_path):
    out = run_ok("plot", "gravity", UR5, "-o", tmp_path / "g.png", "--joints", "shoulder_lift_joint,elbow_joint")
    assert "shoulder_lift_joint" in out and os.path.getsize(tmp_path / "g.png") > 10_000
    out = run_ok("plot", "condition", UR5, "-o", tmp_path / "c.png", "--points", "15")
    assert "cond(M)" in out and os.path.getsize(tmp_path / "c.png") > 10_000
    run_ok("simulate", TWO_LINK, "--gravity", "0,-9.81,0", "--duration", "0.2", "-o", tmp_path / "r.csv")
    run_ok("plot", "trajectory", tmp_path / "r.csv", "-o", tmp_path / "t1.png")
    run_ok("plot", "trajectory", TWO_LINK, "--gravity", "0,-9.81,0", "--duration", "0.2", "-o", tmp_path / "t2.png")
    for name in ("t1.png", "t2.png"):
        assert _png(tmp_path / name)[2] > 0.05


# ---------------------------------------------------------------------------
# Bad arguments: one line on stderr, exit code 2
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("argv, expected", [
    (("torques", UR5, "--q", "0,0,0"), "expected 6 comma-separated values (one per joint: shoulder_pan_joint"),
    (("torques", UR5, "--q", "0,0,0,0,0,x"), "'x' is not a number"),
    (("torques", UR5, "--q", "wrist_9=1"), "unknown joint 'wrist_9'; the joints are: shoulder_pan_joint"),
    (("torques", UR5, "--q", "0,0,0,0,0,0", "--qd", "1,shoulder_pan_joint=2"), "mix of values and name=value"),
    (("torques", str(ROOT / "nowhere.urdf"), "--q", "0"), "cannot read URDF file"),
    (("torques", UR5), "the following arguments are required: --q"),
    (("info", UR5, "--gravity", "0,-9.81"), "--gravity: expected 3 finite comma-separated numbers"),
    (("equations", PANDA), "limited to 6 joints"),
    (("equations", TWO_LINK, "--symbols", "m2"), "expected name=element.attribute"),
    (("equations", TWO_LINK, "--symbols", "m2=tip.weight"), "unknown attribute 'weight'"),
    (("report", UR5, "--q", "0,0,0,0,0,0", "--point", "0,0"), "--point: expected 3"),
    (("report", UR5, "--q", "0,0,0,0,0,0", "--link", "hand"), "unknown link 'hand'"),
    (("simulate", UR5, "--duration", "-1"), "--duration: expected a positive time"),
    (("simulate", UR5, "--duration", "1", "-o", "run.txt"), "ending in .csv or .npz"),
    (("plot", "gravity", UR5, "-o", "g.jpg"), "ending in .png"),
    (("plot", "condition", UR5, "-o", "c.png", "--joints", "elbow_joint"), "two different joints"),
    (("plot", "trajectory", UR5, "-o", "t.png"), "give a saved run"),
    (("plot", "surface", UR5, "-o", "t.png"), "invalid choice: 'surface'"),
    (("dance", UR5), "invalid choice: 'dance'"),
    (("torques", TWO_LINK, "--q", "0,x"), "'x' is not a number"),
])
def test_bad_arguments_give_one_line_and_exit_code_2(argv, expected, tmp_path, monkeypatch):
    """docs/CLI.md: one error line, the last on stderr, after the loaded URDF's warning lines if any."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(*argv)
    assert code == 2
    *warned, last = err.splitlines()
    assert expected in last and last.startswith("robot-dynamics"), err
    if argv[1] == TWO_LINK:                            # point masses: the loader's two warnings first
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rd.load_urdf(TWO_LINK)
        assert warned == ["warning: %s" % w.message for w in caught] and len(warned) == 2, err
    else:
        assert warned == [], err
    assert not list(tmp_path.iterdir())                 # nothing written


def test_module_entry_point_in_a_subprocess(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ok = subprocess.run([sys.executable, "-m", "robot_dynamics", "torques", TWO_LINK, "--gravity", "0,-9.81,0",
                         "--q", "0.1,0.2", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert ok.returncode == 0, ok.stderr
    d = json.loads(ok.stdout)
    model = quiet_load(TWO_LINK, (0, -9.81, 0))
    np.testing.assert_allclose(d["tau"], rd.gravity_torques(model, [0.1, 0.2]))
    bad = subprocess.run([sys.executable, "-m", "robot_dynamics", "torques", UR5, "--q", "1,2"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "expected 6" in bad.stderr


def test_the_shipped_files_from_an_empty_folder_in_a_subprocess(tmp_path):
    """The console script, run from an empty folder without a ROS environment: `models` lists the
    shipped robots and gives a path that holds the checkout's file; a package:// URI is read."""
    exe = str(Path(sys.executable).parent / "robot-dynamics")
    env = {k: v for k, v in os.environ.items() if k != "AMENT_PREFIX_PATH"}

    def cli_run(*argv):
        return subprocess.run([exe, *argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    listing = cli_run("models")
    assert listing.returncode == 0, listing.stderr
    listed = [line.strip() for line in listing.stdout.splitlines() if line.startswith("  ")]
    assert {"urdf/panda_arm.urdf", "urdf/ur5.urdf", "urdf/examples/two_link.xml", "urdf/examples/panda.actuators.yaml",
            "urdf/textbook/scara.urdf", "config/robots/franka.yaml"} <= set(listed)
    path = cli_run("models", "ur5.urdf")
    assert path.returncode == 0 and Path(path.stdout.strip()).read_bytes() == Path(UR5).read_bytes()
    info = cli_run("info", "package://robot_dynamics/urdf/ur5.urdf", "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["total_mass"] == pytest.approx(rd.load_urdf(UR5).total_mass)
    assert not list(tmp_path.iterdir())


def test_package_uris_wherever_a_file_is_read(tmp_path, monkeypatch):
    """The description, --actuators and --waypoints as package://robot_dynamics/...: the same
    results as the checkout's files by path."""
    monkeypatch.chdir(tmp_path)
    uri = "package://robot_dynamics/urdf/"
    q = "0.3,-1.2,1.4,-0.5,0.8,0.1"
    assert json.loads(run_ok("torques", uri + "ur5.urdf", "--q", q, "--json")) == \
        json.loads(run_ok("torques", UR5, "--q", q, "--json"))
    actuators = str(ROOT / "urdf" / "examples" / "panda.actuators.yaml")
    assert run_ok("info", uri + "panda_arm.urdf", "--actuators", uri + "examples/panda.actuators.yaml") == \
        run_ok("info", PANDA, "--actuators", actuators)
    run_ok("retime", uri + "ur5.urdf", "--waypoints", uri + "examples/ur5.waypoints.yaml", "-o", "a.yaml")
    run_ok("retime", UR5, "--waypoints", ROOT / "urdf" / "examples" / "ur5.waypoints.yaml", "-o", "b.yaml")
    assert (tmp_path / "a.yaml").read_text() == (tmp_path / "b.yaml").read_text()


@pytest.mark.parametrize("argv, expected", [
    (("info", "package://robot_dynamics/urdf/kuka.urdf"), "no file 'urdf/kuka.urdf' is shipped with robot_dynamics"),
    (("info", "package://robot_dynamics/ur5.urdf"), "no file 'ur5.urdf' is shipped"),       # a path, as in ROS
    (("info", "package://no_such_package/urdf/arm.urdf"), "package 'no_such_package' not found"),
    (("info", UR5, "--actuators", "package://robot_dynamics/x.yaml"), "no file 'x.yaml' is shipped"),
    (("models", "kuka.urdf"), "no file 'kuka.urdf' is shipped with robot_dynamics"),
    (("models", "franka.yaml"), "'franka.yaml' is ambiguous: give one of config/controllers/franka.yaml, "
                                "config/robots/franka.yaml"),
])
def test_unknown_shipped_files_give_one_line_and_exit_code_2(argv, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    code, out, err = run(*argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("robot-dynamics %s: error: " % argv[0]) and expected in err, err


def test_negative_first_values_need_no_equals_sign():
    d = json.loads(run_ok("torques", TWO_LINK, "--gravity", "0,-9.81,0", "--q", "-1.2,0.5", "--qd", "-0.3,0",
                          "--json"))
    assert d["q"] == [-1.2, 0.5] and d["qd"] == [-0.3, 0.0]
    assert d["gravity"] == pytest.approx(list(rd.gravity_torques(quiet_load(TWO_LINK, (0, -9.81, 0)), [-1.2, 0.5])))


# ---------------------------------------------------------------------------
# docs/CLI.md: every documented command still prints what the page shows
# ---------------------------------------------------------------------------

def _documented_runs(program="robot-dynamics"):
    """(command, expected output lines, expected exit code) of each '$ robot-dynamics' in docs/CLI.md
    (of each '$ head' with program='head')."""
    text = (ROOT / "docs" / "CLI.md").read_text()
    runs = []
    for block in text.split("```text\n")[1:]:
        lines = block.split("\n```")[0].splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("$ %s " % program):
                cmd, out, code = lines[i][len("$ %s " % program):], [], 0
                i += 1
                while i < len(lines) and not lines[i].startswith("$ "):
                    out.append(lines[i])
                    i += 1
                if i < len(lines) and lines[i] == "$ echo $?":
                    code = int(lines[i + 1])
                    i += 2
                runs.append((cmd, out, code))
            else:
                i += 1
    return runs


def _positive(*values):
    assert all(float(v) > 0 for v in values), values


def _absolute(path, *_):
    assert path.startswith("/"), path


def _condition(value, start=None):
    assert 1.0 <= float(value) <= (float(start) if start else np.inf), (value, start)


# What varies from machine to machine (CPU, BLAS, threads, load), each with the check it gets instead
# of the exact comparison: timings, and the path of an optimiser. On one machine `excite` (SLSQP) took
# 16 iterations to a condition number of 12.19 by default, 19 iterations to 12.19 with OMP_NUM_THREADS=1
# and 19 iterations to 13.04 with OPENBLAS_CORETYPE=Prescott, along different trajectories; so the figures
# of the trajectory found vary as well, and are checked against the limits they must respect. Everything
# else (the limits, the random start, every physical figure) is compared exactly.
MACHINE_DEPENDENT = (
    (r"derived in ([\d.]+) s", "derived in T s", _positive),
    (r"in ([\d.]+) s wall time \(([\d.]+)x real time\)", "in T s wall time (Nx real time)", _positive),
    (r"(\d+) iterations", "N iterations", _positive),
    (r"base parameters\): ([\d.]+) \(random start ([\d.]+)\)", r"base parameters): C (random start \2)",
     _condition),
    (r"condition number ([\d.]+)$", "condition number C", _condition),
    (r"^- positions: \[([-\d.e]+), ([-\d.e]+)\]$", "- positions: [Q, Q]", lambda *q: [float(x) for x in q]),
    # where the package's files are installed (the test's ament prefix; a colcon workspace on the page)
    (r"^Files shipped with robot_dynamics, in (/\S*):$", "Files shipped with robot_dynamics, in SHARE:", _absolute),
    (r"^(/\S*)/(urdf|config)/", r"SHARE/\2/", _absolute),
)
EXCITE_HEADER = ["joint", "q_min", "q_max", "lower", "upper", "|qd|max", "qd_limit", "|qdd|max", "qdd_limit"]


def mask_machine_dependent(lines):
    """The lines with the machine-dependent figures (MACHINE_DEPENDENT) replaced by placeholders,
    each checked first; in the table of `excite` the reached q range, |qd|max and |qdd|max are
    masked and checked to be within the limits printed beside them."""
    import re
    out, table = [], False
    for line in lines:
        for pattern, placeholder, check in MACHINE_DEPENDENT:
            m = re.search(pattern, line)
            if m:
                check(*m.groups())
                line = line[:m.start()] + m.expand(placeholder) + line[m.end():]
        cells = line.split()
        if cells == EXCITE_HEADER:
            table = True
        elif table and len(cells) == len(EXCITE_HEADER):
            q_min, q_max, lower, upper, qd, qd_limit, qdd, qdd_limit = map(float, cells[1:])
            assert lower <= q_min <= q_max <= upper and qd <= qd_limit * (1 + 1e-4) \
                and qdd <= qdd_limit * (1 + 1e-4), line
            line = " ".join([cells[0], "Q", "Q"] + cells[3:5] + ["QD", cells[6], "QDD", cells[8]])
        else:
            table = False
        out.append(line)
    return out


DOCUMENTED = _documented_runs()


def test_docs_show_every_command():
    commands = {cmd.split()[0] for cmd, _, _ in DOCUMENTED}
    assert commands == {"info", "torques", "equations", "report", "simulate", "plot", "excite", "identify", "retime",
                        "models"}
    assert any("--actuators" in cmd for cmd, _, _ in DOCUMENTED if cmd.startswith("info"))
    assert {cmd.split()[1] for cmd, _, _ in DOCUMENTED if cmd.startswith("plot")} == {"gravity", "condition",
                                                                                      "trajectory"}
    assert sum(code == 2 for _, _, code in DOCUMENTED) >= 5


DOCUMENTED_FILES = _documented_runs("head")          # '$ head -N FILE' of what a command above wrote


def _writes(cmd, name):
    words = cmd.split()
    return any(a in ("-o", "--csv") and b == name for a, b in zip(words, words[1:]))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """An ament prefix holding exactly what setup.py installs (test/shipped.py): the page's
    package://robot_dynamics/... files are found there, not in the checkout."""
    return install_share(tmp_path_factory.mktemp("install"))


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory, installed):
    """An empty folder (no link to the checkout) with the files the documented commands write
    that others read (plot trajectory run.csv) or that the page shows (head -N FILE)."""
    d = tmp_path_factory.mktemp("docs")
    shown = {cmd.split()[-1] for cmd, _, _ in DOCUMENTED_FILES} | {"run.csv"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AMENT_PREFIX_PATH", str(installed))
        mp.chdir(d)
        for cmd, _, _ in DOCUMENTED:
            if any(_writes(cmd, name) for name in shown):
                assert run(*cmd.split())[0] == 0, cmd
    assert all((d / name).exists() for name in shown), shown
    return d


@pytest.mark.parametrize("cmd, expected, code", DOCUMENTED, ids=[c[:60] for c, _, _ in DOCUMENTED])
def test_documented_output_is_current(cmd, expected, code, docs_dir, installed, monkeypatch):
    monkeypatch.chdir(docs_dir)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(installed))
    got_code, out, err = run(*cmd.split())
    assert got_code == code, err
    if code == 0:
        got = out.rstrip("\n").splitlines()
    else:                                              # the error line last, after the URDF's warnings if any
        got = err.splitlines()[-1:]
        assert all(l.startswith("warning: link ") for l in err.splitlines()[:-1]), err
    assert mask_machine_dependent(got) == mask_machine_dependent(expected)
    if "--iterations" in cmd:                                         # the one bound the count has
        limit = int(cmd.split("--iterations")[1].split()[0])
        assert all(int(n) <= limit for n in re.findall(r"(\d+) iterations", out)), out


def test_docs_show_the_files_the_commands_write():
    assert {cmd.split()[-1] for cmd, _, _ in DOCUMENTED_FILES} == {"two_link_dynamics.py", "run.csv", "traj.yaml",
                                                                "timed.yaml"}


@pytest.mark.parametrize("cmd, expected, code", DOCUMENTED_FILES, ids=[c for c, _, _ in DOCUMENTED_FILES])
def test_documented_files_are_current(cmd, expected, code, docs_dir):
    """'$ head -N FILE' on the page: the first N lines of what the documented command wrote."""
    n, name = cmd.split()
    assert n.startswith("-") and code == 0 and len(expected) == int(n[1:])
    got = (docs_dir / name).read_text().splitlines()[:int(n[1:])]
    assert mask_machine_dependent(got) == mask_machine_dependent(expected)


# ---------------------------------------------------------------------------
# excite and identify
# ---------------------------------------------------------------------------

def test_excite_writes_a_joint_trajectory_within_the_limits(tmp_path):
    yaml = pytest.importorskip("yaml")
    code, out, err = run("excite", TWO_LINK, "--gravity", "0,-9.81,0", "--period", "2", "--harmonics", "3",
                         "--iterations", "5", "--acceleration", "2", "-o", str(tmp_path / "t.yaml"),
                         "--csv", str(tmp_path / "t.csv"), "--rate", "20", "--no-progress")
    assert code == 0, err
    assert "condition number of the base regressor" in out and "wrote" in out
    msg = yaml.safe_load((tmp_path / "t.yaml").read_text())
    assert msg["joint_names"] == ["joint1", "joint2"] and len(msg["points"]) == 41
    assert max(abs(a) for p in msg["points"] for a in p["accelerations"]) <= 2.0 + 1e-9
    assert (tmp_path / "t.csv").read_text().splitlines()[1].startswith("t,q[joint1],q[joint2],qd[joint1]")
    code, _, err = run("excite", TWO_LINK, "-o", str(tmp_path / "t.txt"))
    assert code == 2 and "expected a file name ending in .yaml" in err


UR5_WAYPOINTS = """# three UR5 poses, joints named in another order than the URDF's
joints: [elbow_joint, shoulder_pan_joint, shoulder_lift_joint, wrist_1_joint, wrist_2_joint, wrist_3_joint]
points:
- [1.57, 0.0, -1.57, 0.0, 0.0, 0.0]
- [1.2, 0.8, -1.0, -0.5, 0.5, 0.0]
- [0.4, 1.6, -0.3, -1.0, 1.0, 0.5]
"""


def test_retime_writes_what_retime_returns_and_plots_the_torques(tmp_path):
    """The YAML is rd.retime's trajectory (joints reordered to the URDF's), the plot its torques
    against the limits scaled by --effort-scale."""
    yaml = pytest.importorskip("yaml")
    (tmp_path / "w.yaml").write_text(UR5_WAYPOINTS)
    out = run_ok("retime", UR5, "--waypoints", tmp_path / "w.yaml", "-o", tmp_path / "timed.yaml",
                 "--plot", tmp_path / "timed.png", "--effort-scale", "0.8")
    model = rd.load_urdf(UR5)
    W = np.array(yaml.safe_load(UR5_WAYPOINTS)["points"])[:, [1, 2, 0, 3, 4, 5]]
    traj = rd.retime(model, W, effort_scale=0.8)
    msg = yaml.safe_load((tmp_path / "timed.yaml").read_text())
    assert msg["joint_names"] == list(model.joint_names) and len(msg["points"]) == traj.t.size
    np.testing.assert_allclose([p["positions"] for p in msg["points"]], traj.q, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([p["effort"] for p in msg["points"]], traj.tau, rtol=1e-9, atol=1e-9)
    assert "duration %.4f s" % traj.duration in out
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in out.splitlines()[2:8]}
    for j, name in enumerate(model.joint_names):
        assert rows[name][0] == pytest.approx(np.abs(traj.tau[:, j]).max() / (0.8 * model.effort_limit[j]),
                                              abs=1e-4)
    assert max(r[0] for r in rows.values()) == pytest.approx(1.0, abs=1e-4)       # a torque limit binds
    h, w, std = _png(tmp_path / "timed.png")
    assert h > 300 and w > 600 and std > 0.05
    from robot_dynamics.tools.plots import plot_retimed_torques
    t, tau = plot_retimed_torques(traj, tmp_path / "again.png")
    np.testing.assert_allclose(tau, traj.torques(t))
    assert np.all(np.abs(tau) <= 1.02 * traj.effort_limit)


def test_the_waypoints_file_docs_cli_shows_is_the_example_file():
    yaml = pytest.importorskip("yaml")
    shown = (ROOT / "docs" / "CLI.md").read_text().split("## retime")[1].split("```yaml\n")[1].split("```")[0]
    assert yaml.safe_load(shown) == yaml.safe_load((ROOT / "urdf" / "examples" / "ur5.waypoints.yaml").read_text())


@pytest.mark.parametrize("waypoints, extra, expected", [
    ("points: [[0, 0, 0, 0, 0, 0]]\njoints: [a]\n", (), "'joints' must name each joint of the robot once"),
    ("points: [[0, 0, 0], [1, 1, 1]]\n", (), "every point must be a list of 6 numbers"),
    ("- 1\n- 2\n", (), "expected a mapping with 'points"),
    # the last pose is the most stretched out, the upper arm 0.3 rad from horizontal: the shoulder's worst
    (UR5_WAYPOINTS, ("--effort-scale", "0.05"), "at waypoint 2 gravity alone needs"),
    (UR5_WAYPOINTS, ("--effort-scale", "0.05"), "on joint shoulder_lift_joint, above its effort limit 7.5 N m"),
    (UR5_WAYPOINTS, ("--effort-scale", "-1"), "--effort-scale: expected a number > 0"),
])
def test_retime_refuses_bad_waypoints_and_infeasible_requests(waypoints, extra, expected, tmp_path):
    (tmp_path / "w.yaml").write_text(waypoints)
    code, _, err = run("retime", UR5, "--waypoints", tmp_path / "w.yaml", "-o", tmp_path / "t.yaml", *extra)
    assert code == 2 and expected in err.splitlines()[-1], err
    assert not (tmp_path / "t.yaml").exists()


def test_identify_from_a_rosbag_of_the_simulated_panda(tmp_path):
    """The Panda simulated along a short excitation (true inertials differ from the URDF), recorded
    as an MCAP rosbag2, identified by the command; the identified model fits to the noise level."""
    yaml = pytest.importorskip("yaml")
    from test_identification_data import PANDA, SIGMA_TAU, perturbed, run_excitation, write_bag
    panda = rd.load_urdf(str(PANDA))
    ex = rd.excitation_trajectory(panda, period=3.0, harmonics=4, max_iterations=4, progress=False)
    rec = run_excitation(perturbed(panda, seed=4), panda, ex, 3.0, seed=5)
    bag = write_bag(tmp_path / "bag", "mcap", rec["t"], panda.joint_names, *rec["noisy"])
    code, out, err = run("identify", str(PANDA), str(bag), "--method", "wls", "-o", str(tmp_path / "p.yaml"),
                         "--plot", str(tmp_path / "p.png"), "--no-progress")
    assert code == 0, err
    assert "Read 3001 samples of 7 joints" in out and "method wls: 43 base parameters" in out
    params = yaml.safe_load((tmp_path / "p.yaml").read_text())
    assert params["method"] == "wls" and len(params["base_parameters"]) == 43
    assert max(params["residual_rms"].values()) < 2 * SIGMA_TAU
    assert (tmp_path / "p.png").stat().st_size > 10000
    code, _, err = run("identify", str(PANDA), str(bag), "--topic", "/nothing", "-o", str(tmp_path / "q.yaml"))
    assert code == 2 and "has no topic '/nothing'" in err and not (tmp_path / "q.yaml").exists()


def test_identify_armature_and_a_friction_law_from_a_rosbag(tmp_path):
    """The same run on a true Panda with armature 0.1-0.4 kg m^2: --armature --friction-law coulomb
    prints each joint's armature and writes it with the law in the YAML; joints 3-7 (base parameters
    of their own) within 10 % of the truth, joints 1-2 NaN (regrouped with I_zz of their bodies)."""
    yaml = pytest.importorskip("yaml")
    from test_identification_data import PANDA, SIGMA_TAU, perturbed, run_excitation, write_bag
    panda = rd.load_urdf(str(PANDA))
    armature = np.array([0.4, 0.35, 0.3, 0.25, 0.2, 0.15, 0.1])
    true = perturbed(panda, seed=4).with_actuators({n: {"armature": float(a)} for n, a in zip(panda.joint_names,
                                                                                             armature)})
    ex = rd.excitation_trajectory(panda, period=3.0, harmonics=4, max_iterations=4, progress=False)
    rec = run_excitation(true, panda, ex, 3.0, seed=5)
    bag = write_bag(tmp_path / "bag", "mcap", rec["t"], panda.joint_names, *rec["noisy"])
    code, out, err = run("identify", str(PANDA), str(bag), "--method", "wls", "--armature", "--friction-law",
                         "coulomb", "-o", str(tmp_path / "p.yaml"), "--no-progress")
    assert code == 0, err
    assert "method wls: 69 base parameters (friction and armature included)" in out
    assert "  panda_joint1: armature nan; coulomb friction coulomb " in out
    assert re.search(r"  panda_joint7: armature 0\.\d+; coulomb friction coulomb ", out), out
    params = yaml.safe_load((tmp_path / "p.yaml").read_text())
    got = np.array([params["joints"][n]["armature"] for n in panda.joint_names], dtype=float)
    assert params["joints"]["panda_joint3"]["law"] == "coulomb"
    assert np.isnan(got[:2]).all() and np.all(np.abs(got[2:] - armature[2:]) < 0.1 * armature[2:]), got
    assert max(params["residual_rms"].values()) < 2 * SIGMA_TAU


def test_ctrl_c_ends_a_command_with_one_line(monkeypatch, capsys):
    from robot_dynamics.tools import cli

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "_load", interrupted)
    assert cli.main(["info", TWO_LINK]) == 130
    assert capsys.readouterr().err.strip() == "robot-dynamics info: interrupted"
