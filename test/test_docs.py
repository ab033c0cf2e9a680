"""Every documented Python example runs as written ("a documented example is a test").

- Each ```python block of README.md and of every docs/*.md runs in a fresh namespace as an
  installed user runs it: from an empty temporary folder, with no link to the checkout, the
  package's files installed in an ament prefix by exactly setup.py's ``data_files``
  (test/shipped.py; ``rd.bundled_path`` finds them there). A file a snippet uses that setup.py
  does not ship, or a path relative to the checkout, fails it.
  A line that shows its value in its comment (``model.nq, model.nv  # 19,
  18``) is compared with that value; the other claims of the comments are
  checked in CLAIMS. The blocks that cannot run alone are in NOT_RUN or
  CONTINUES, each with the reason; placeholders a block names without
  defining (README's measurements Q, QD, QDD, TAU and ``recording/``, NODES.md's model and
  trajectory) are made in PRELUDES, the block's own text unchanged.
- The doctests (``>>>``) of every robot_dynamics module (ros/ excepted:
  it needs rclpy and a ROS environment), run from the repository root.
- Every ``rd.NAME`` the docs and docstrings use exists.

docs/CLI.md's commands and the files they write are compared in
test_cli.py (test_documented_output_is_current), from an empty folder too, with the
machine-dependent figures masked; these snippets show no such figures. The ```console
commands of the other pages (CODEGEN.md, REALTIME.md, MJCF.md) run here from the same kind of
folder (test_documented_console_commands_run).
"""
import ast
import doctest
import importlib
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.tools.sample import example_robot_data_dir
from shipped import install_share

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md"] + ["docs/" + p.name for p in sorted((ROOT / "docs").glob("*.md")) if "```python" in p.read_text()]


def python_blocks(doc):
    """[(first line number, source)] of the ```python blocks of ``doc``."""
    lines = (ROOT / doc).read_text().splitlines()
    blocks, start = [], None
    for k, line in enumerate(lines, 1):
        if start is None and line.strip() == "```python":
            start, body = k + 1, []
        elif start is not None and line.strip() == "```":
            blocks.append((start, "\n".join(body) + "\n"))
            start = None
        elif start is not None:
            body.append(line)
    return blocks


BLOCKS = [(doc, i, line, src) for doc in DOCS for i, (line, src) in enumerate(python_blocks(doc))]

NOT_RUN = {
    ("docs/LOOPS.md", 0): "the call forms, with placeholders (a URDF `urdf` with links a and b, `other_loops`); "
                          "the next block and test_loops.py run them",
}
CONTINUES = {
    ("README.md", 2): ("README.md", 0),     # rd.Data after the first block's model, q, qd, qdd
}

NEEDS_EXAMPLE_ROBOT_DATA = {("README.md", 1), ("docs/FLOATING-BASE.md", 0),      # solo12.urdf
                            ("docs/CONTACT.md", 0)}                               # the Panda's meshes, SRDF


def _readme_measurements(folder):
    """README's Q, QD, QDD, TAU ((N, 7) measurements) and its recording/ (a rosbag2 of them):
    the Panda at random states with 1 kg held 0.1 m beyond panda_link8."""
    from test_identification_data import write_bag
    model = rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))
    rng = np.random.default_rng(0)
    n = 400
    Q = rng.uniform(model.lower_limit, model.upper_limit, (n, 7))
    QD, QDD = rng.uniform(-1, 1, (2, n, 7))
    TAU = rd.rnea(model.with_payload("panda_link8", 1.0, com=(0, 0, 0.1)), Q, QD, QDD)
    write_bag(folder / "recording", "mcap", np.arange(n) * 1e-3, model.joint_names, Q, QD, TAU)
    return dict(Q=Q, QD=QD, QDD=QDD, TAU=TAU)


def _nodes_trajectory(folder):
    """NODES.md's model and traj: the Panda (the shipped file) and a three-point JointTrajectory
    naming its joints in another order, velocities and accelerations given."""
    msgs = pytest.importorskip("trajectory_msgs.msg")
    from builtin_interfaces.msg import Duration
    model = rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))
    names = list(model.joint_names[::-1])
    rng = np.random.default_rng(1)
    traj = msgs.JointTrajectory(joint_names=names)
    for k in range(3):
        q, qd, qdd = rng.uniform(-1, 1, (3, 7))
        traj.points.append(msgs.JointTrajectoryPoint(positions=q.tolist(), velocities=qd.tolist(),
                                                      accelerations=qdd.tolist(), time_from_start=Duration(sec=k)))
    return dict(model=model, traj=traj, given=traj)


PRELUDES = {("README.md", 0): _readme_measurements, ("docs/NODES.md", 0): _nodes_trajectory}


def _claims_readme(ns):
    np.testing.assert_allclose(ns["qdd"], np.ones(7), atol=1e-9)          # "back to ones(7)"
    assert ns["J"].shape == (6, 7) and ns["Y"].shape == (7, 70)
    np.testing.assert_allclose(ns["Y"] @ rd.inertial_parameters(ns["model"]), ns["tau"], atol=1e-9)
    res, Q, QD, QDD, TAU = ns["res"], ns["Q"], ns["QD"], ns["QDD"], ns["TAU"]
    np.testing.assert_allclose(res.predict(Q, QD, QDD), TAU, atol=1e-6)     # exact data: an exact fit
    assert ns["load"].mass == pytest.approx(1.0)
    assert ns["d"].q.shape == Q.shape and ns["ex"].period == 10.0


def _claims_api(ns):
    np.testing.assert_allclose(ns["qdd"], np.ones(7), atol=1e-9)          # "back to ones(7)"
    assert ns["g"].shape == (7,) and ns["M"].shape == (7, 7) and ns["J"].shape == (6, 7)


def _claims_palletiser(ns):
    np.testing.assert_allclose(ns["q"], [0.4, 0.3, 0.3, 0.6, -0.3], atol=1e-9)   # "the passive joints assembled"
    assert np.abs(ns["sim"].q - ns["q"]).max() < 1e-6                           # "it holds its pose"


def _claims_solo(ns):
    assert ns["tau"].shape == (18,) and ns["q"].shape == (19,)
    if "A_G" in ns:
        assert ns["A_G"].shape == (6, 18)                                      # "(6, 18)"


def _claims_simulation(ns):
    r = ns["r"]
    assert r.q.shape == (5001, 7) and r.t[-1] == pytest.approx(5.0)
    assert ns["state"].t == pytest.approx(1.0) and ns["sim"].effort.shape == (7,)


def _claims_impedance(ns):
    assert np.abs(ns["sim"].qd).max() < 5e-3                                    # at rest after 1.5 s


def _claims_nodes(ns):
    """Every point's effort is rnea at its state, in the message's joint order."""
    model, given, traj = ns["model"], ns["given"], ns["traj"]
    order = [list(given.joint_names).index(n) for n in model.joint_names]
    for p, filled in zip(given.points, traj.points):
        q, qd, qdd = (np.asarray(x)[order] for x in (p.positions, p.velocities, p.accelerations))
        np.testing.assert_allclose(np.asarray(filled.effort)[order], rd.rnea(model, q, qd, qdd), atol=1e-9)


def _claims_retiming(ns):
    """timed.yaml is the trajectory, written in the working folder; the check says feasible."""
    yaml = pytest.importorskip("yaml")
    msg = yaml.safe_load(Path("timed.yaml").read_text())
    assert msg["joint_names"] == list(ns["model"].joint_names)
    np.testing.assert_allclose([p["positions"] for p in msg["points"]], ns["traj"].q, rtol=1e-9, atol=1e-12)
    assert ns["check"].feasible, ns["check"].summary()      # retimed, then checked at the same limits (issue 33)


def _claims_realtime(ns):
    """reference.txt as check_panda.cpp reads it: 200 states of q qd qdd tau g c M tau_in qdd friction,
    the frame's p R J Jdot_qd and the law's torque."""
    rows = [line.split() for line in Path("reference.txt").read_text().splitlines()]
    assert len(rows) == 200 and {len(r) for r in rows} == {9 * 7 + 49 + 3 + 9 + 6 * 7 + 6 + 7}
    assert Path("generated/panda.h").is_file() and Path("generated/panda.c").is_file()


CLAIMS = {
    ("README.md", 0): _claims_readme,
    ("README.md", 1): _claims_solo,
    ("docs/API-CONTRACT.md", 0): _claims_api,
    ("docs/LOOPS.md", 1): _claims_palletiser,
    ("docs/FLOATING-BASE.md", 0): _claims_solo,
    ("docs/SIMULATION.md", 0): _claims_simulation,
    ("docs/IMPEDANCE.md", 0): _claims_impedance,
    ("docs/NODES.md", 0): _claims_nodes,
    ("docs/REALTIME.md", 0): _claims_realtime,
    ("docs/RETIMING.md", 0): _claims_retiming,
}


def _shown_value(src, node):
    """The value a line's comment shows, if it is a Python literal (``# 'floating', 19, 18``)."""
    line = src.splitlines()[node.end_lineno - 1]
    if "#" not in line:
        return None, False
    try:
        return ast.literal_eval(line.split("#", 1)[1].strip()), True
    except (ValueError, SyntaxError):
        return None, False


def run_block(src, ns, filename):
    """Run ``src`` statement by statement in ``ns``; an expression whose comment shows a literal
    value must evaluate to it. Returns the number of values compared."""
    compared = 0
    for node in ast.parse(src).body:
        if isinstance(node, ast.Expr):
            shown, literal = _shown_value(src, node)
            value = eval(compile(ast.Expression(node.value), filename, "eval"), ns)
            if literal:
                assert value == shown, (ast.get_source_segment(src, node), value, shown)
                compared += 1
        else:
            exec(compile(ast.Module([node], type_ignores=[]), filename, "exec"), ns)
    return compared


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """An ament prefix holding exactly what setup.py installs (test/shipped.py)."""
    return install_share(tmp_path_factory.mktemp("install"))


@pytest.fixture
def scratch(tmp_path, installed, monkeypatch):
    """An empty working folder, no link to the checkout; the package's files found in the
    installed prefix (AMENT_PREFIX_PATH), as after colcon build and sourcing it."""
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(installed))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert rd.bundled_path("panda_arm.urdf") == installed / "share" / "robot_dynamics" / "urdf" / "panda_arm.urdf"
    return work


def test_every_block_is_run_or_listed():
    assert len(BLOCKS) >= 17, [(d, i) for d, i, _, _ in BLOCKS]
    assert {d for d, _, _, _ in BLOCKS} >= {"docs/REALTIME.md", "docs/CODEGEN.md", "docs/RETIMING.md",
                                            "docs/NODES.md", "docs/MJCF.md"}
    keys = {(d, i) for d, i, _, _ in BLOCKS}
    assert set(NOT_RUN) | set(CONTINUES) | set(PRELUDES) | set(CLAIMS) <= keys
    assert all(reason.strip() for reason in NOT_RUN.values())


def test_no_documented_snippet_uses_a_checkout_path():
    """A snippet that opens "urdf/..." runs only from the checkout: the docs use rd.bundled_path."""
    used = [(d, line) for d, _, line, src in BLOCKS if re.search(r"""["'](urdf|config)/""", src)
            and not re.search(r"""bundled_path\(["'](urdf|config)/""", src)]
    assert not used, used


@pytest.mark.parametrize("doc, index, line, src", [b for b in BLOCKS if b[:2] not in NOT_RUN],
                         ids=["%s:%d" % (d, line) for d, i, line, _ in BLOCKS if (d, i) not in NOT_RUN])
def test_documented_python_block_runs(doc, index, line, src, scratch, monkeypatch):
    if (doc, index) in NEEDS_EXAMPLE_ROBOT_DATA and example_robot_data_dir() is None:
        if os.environ.get("CI"):
            pytest.fail("example-robot-data is a dev dependency (requirements-dev.txt)")
        pytest.skip("example-robot-data is not installed")
    ns = {"__name__": "__doc_example__"}
    if (doc, index) in CONTINUES:
        first = CONTINUES[(doc, index)]
        before = [b for b in BLOCKS if b[:2] == first][0]
        ns.update(PRELUDES.get(first, lambda folder: {})(scratch))
        _patch_slow_calls(monkeypatch)
        run_block(before[3], ns, "%s:%d" % (doc, before[2]))
    ns.update(PRELUDES.get((doc, index), lambda folder: {})(scratch))
    _patch_slow_calls(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run_block(src, ns, "%s:%d" % (doc, line))
    if (doc, index) in CLAIMS:
        CLAIMS[(doc, index)](ns)


def _patch_slow_calls(monkeypatch):
    """README's rd.excitation_trajectory(model, period=10.0) optimises 100 iterations on the Panda
    (a minute or two): the call runs as written, capped at 2 iterations (test_identification.py and
    test_cli.py test the optimisation)."""
    real = rd.excitation_trajectory

    def capped(*args, **kwargs):
        kwargs["max_iterations"] = min(kwargs.get("max_iterations", 2), 2)
        kwargs.setdefault("progress", False)
        return real(*args, **kwargs)
    monkeypatch.setattr(rd, "excitation_trajectory", capped)


def test_a_shown_value_is_compared():
    ns = {}
    assert run_block("x = 3\nx, x + 1        # 3, 4\nx  # three\n", ns, "t") == 1
    with pytest.raises(AssertionError):
        run_block("x = 3\nx, x + 1        # 3, 5\n", ns, "t")


def test_the_floating_base_block_compares_its_shown_sizes(scratch):
    if example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    (line, src), = python_blocks("docs/FLOATING-BASE.md")
    assert run_block(src, {}, "FLOATING-BASE.md:%d" % line) == 1        # 'floating', 19, 18


# --- the commands the pages show ----------------------------------------------------------------

def shown_commands(doc):
    """[(command, output lines shown after it)] of ``doc``: each ``$ `` line of its ```console
    blocks and each indented ``robot-dynamics`` line (a trailing backslash joins the next line)."""
    runs, block, indented = [], None, None
    for line in (ROOT / doc).read_text().splitlines():
        if block is None and line.strip() == "```console":
            block = []
        elif block is not None and line.strip() == "```":
            runs.extend(block)
            block = None
        elif block is not None:
            if line.startswith("$ "):
                block.append((line[2:], []))
            elif block:
                block[-1][1].append(line)
        elif indented is not None:
            indented += " " + line.strip()
        elif line.startswith("    robot-dynamics "):
            indented = line.strip()
        if indented is not None and not indented.endswith("\\"):
            runs.append((indented, []))
            indented = None
        elif indented is not None:
            indented = indented[:-1].rstrip()
    return runs


def cli_words(command):
    """The arguments of a documented ``robot-dynamics`` command: its comment and ``[optional]``
    parts dropped (README: ``[--json]``, ``[--latex|--python]``)."""
    command = re.split(r"\s#\s", command)[0]
    return [w for w in command.split()[1:] if not w.startswith("[")]


COMMAND_DOCS = [d for d in DOCS + ["docs/" + p.name for p in sorted((ROOT / "docs").glob("*.md"))]
                if d != "docs/CLI.md" and shown_commands(d)]
COMMAND_DOCS = sorted(set(COMMAND_DOCS))

#: The commands other than robot-dynamics that pages show, and where each is run.
OTHER_COMMANDS = {
    "cc -O2 -std=c99 -Igenerated main.c": "test_codegen.py (test_the_documented_c_program_prints_the_library_s_values)",
    "cc -O2 -std=c99 -c generated/panda.c": "test_realtime_check_program_from_an_empty_folder (below)",
    "g++ -O2 -std=c++17 -Wall -Werror": "test_realtime_check_program_from_an_empty_folder (below)",
    "ros2 run robot_dynamics dynamics_node": "test/ros (the node given an MJCF urdf_path: test_ros_mjcf.py); "
                                            "`robot-dynamics models NAME` inside it runs here",
}


def test_every_shown_command_is_run_somewhere():
    others = [cmd for doc in COMMAND_DOCS for cmd, _ in shown_commands(doc) if not cmd.startswith("robot-dynamics ")]
    assert all(any(cmd.startswith(prefix) for prefix in OTHER_COMMANDS) for cmd in others), others
    assert {"README.md", "docs/CODEGEN.md", "docs/REALTIME.md", "docs/RETIMING.md"} <= set(COMMAND_DOCS)


@pytest.mark.parametrize("doc", COMMAND_DOCS)
def test_shown_robot_dynamics_commands_run_from_an_empty_folder(doc, scratch):
    """Each page's robot-dynamics commands, in order, from an empty folder against the installed
    files; the output a page shows under a command is what it prints. A ``$(robot-dynamics ...)``
    inside another command runs too and must print a path that exists."""
    import io
    from robot_dynamics.tools import cli
    ran = 0
    for cmd, shown in shown_commands(doc):
        for inner in re.findall(r"\$\((robot-dynamics [^)]*)\)", cmd):
            out = io.StringIO()
            assert cli.main(cli_words(inner), out=out) == 0, inner
            assert Path(out.getvalue().strip()).is_file(), (inner, out.getvalue())
            ran += 1
        if not cmd.startswith("robot-dynamics "):
            continue
        out = io.StringIO()
        assert cli.main(cli_words(cmd), out=out) == 0, cmd
        if shown:
            assert out.getvalue().rstrip("\n").splitlines() == shown, cmd
        ran += 1
    assert ran


def test_realtime_check_program_from_an_empty_folder(scratch):
    """REALTIME.md as a reader follows it: its Python writes generated/ and reference.txt, its law
    and program are saved under the names it gives, its two console commands build and run the check."""
    import shutil
    import subprocess
    if not (shutil.which("cc") and shutil.which("g++")):
        if os.environ.get("CI"):
            pytest.fail("cc and g++ are needed in CI")
        pytest.skip("no cc or g++")
    doc = "docs/REALTIME.md"
    (line, src), = python_blocks(doc)
    run_block(src, {"__name__": "__doc_example__"}, "%s:%d" % (doc, line))
    law, program = re.findall(r"```cpp\n(.*?)```", (ROOT / doc).read_text(), re.S)
    Path("cartesian_impedance.hpp").write_text(law)
    Path("check_panda.cpp").write_text(program)
    commands = [cmd for cmd, _ in shown_commands(doc) if not cmd.startswith("robot-dynamics ")]
    assert len(commands) == 2
    for cmd in commands:
        done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (cmd, done.stdout, done.stderr)
    assert done.stdout.startswith("200 states, worst difference "), done.stdout


# --- doctests and names -------------------------------------------------------------------------

DOCTEST_MODULES = sorted(
    ".".join(("robot_dynamics",) + p.relative_to(ROOT / "robot_dynamics").with_suffix("").parts).replace(
        ".__init__", "")
    for p in (ROOT / "robot_dynamics").rglob("*.py")
    if "ros" not in p.relative_to(ROOT / "robot_dynamics").parts[:1] and re.search(r"^\s*>>> ", p.read_text(), re.M))


def test_doctests_are_found():
    assert "robot_dynamics.simulation.simulator" in DOCTEST_MODULES


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_doctests(name, monkeypatch):
    monkeypatch.chdir(ROOT)                          # the examples' paths are relative to the repository root
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    assert tests
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "%d of %d examples of %s failed (output above)" % (result.failed, result.attempted,
                                                                                   name)


def test_every_rd_name_in_the_docs_and_docstrings_exists():
    """``rd.Simulator`` in a docstring while the package did not export it: every ``rd.NAME`` that
    README.md, docs/*.md and the package's sources use is an attribute of robot_dynamics."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "robot_dynamics").rglob("*.py"))]
    missing = {}
    for path in files:
        for m in re.finditer(r"(?<![\w.])rd\.([A-Za-z_]\w*)", path.read_text()):
            if not hasattr(rd, m.group(1)):
                missing.setdefault(m.group(1), set()).add(str(path.relative_to(ROOT)))
    assert not missing, missing
    assert rd.Simulator is importlib.import_module("robot_dynamics.simulation").Simulator
    assert rd.simulate is importlib.import_module("robot_dynamics.simulation").simulate
