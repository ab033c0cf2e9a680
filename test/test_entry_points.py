"""Every entry point, every real robot: a description is loaded or refused, with its reason, at once.

Issue 31. Each URDF that example-robot-data installs (all 69, not a sample) goes through each path a
user takes, with a time bound that a regression fails loudly:

- ``rd.load_urdf(path)``;
- the nodes' loader (``constraints.load.load_description``: what the ``robot_description`` parameter
  and topic hand it, the text as bytes; and what ``urdf_path`` hands it, the text and its path);
- ``robot-dynamics info`` and ``robot-dynamics codegen`` (generation only) in-process
  (``tools.cli.main``), and ``robot-dynamics info`` as a fresh process (cold start included).

The hostile descriptions of test/hostile_descriptions.py go through the same paths.

Bounds are on CPU time, measured where the work is done (``time.thread_time`` around the call in this
process, the child's own user + system time from ``os.wait4`` for a subprocess): a loaded 2-core
machine slows the wall clock, not the work. In-process bound 1 s per file (the slowest takes a few
tens of ms; at 5c0a0a8 the regular expression that told MJCF from URDF took over 10 s on 20 of these
files); a cold ``robot-dynamics info`` 5 s. The slowest file of each entry point is printed at the end
of the module (docs/PERFORMANCE.md has the benchmark's figures, bench/load_time.py).
"""
import io
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import robot_dynamics as rd
from hostile_descriptions import cases as hostile_cases, refused
from reporting import require, write_lines
from robot_dynamics.constraints.load import load_description
from robot_dynamics.tools import cli
from robot_dynamics.tools.sample import example_robot_data_dir

ERD = example_robot_data_dir()
URDFS = sorted(ERD.rglob("*.urdf")) if ERD else []
IDS = [str(p.relative_to(ERD)) for p in URDFS]
N_URDFS = 69                             # example-robot-data 6.0.0
#: Refused, and why: an empty xacro leftover, a <robot> with no name and no link (urdfdom and Pinocchio refuse it too).
REFUSED = {"ur_description/urdf/ur3.urdf": "Required attribute not set in XML: name"}
IN_PROCESS_BOUND = 1.0                   # [s] of CPU per file and entry point
COLD_CLI_BOUND = 5.0                     # [s] of CPU of a fresh `robot-dynamics info` process
ROBOTS = [pytest.param(p, id=i) for i, p in zip(IDS, URDFS)] or [None]
SLOWEST = {}                             # entry point -> (seconds, file)


@pytest.fixture(scope="module", autouse=True)
def report(request, tmp_path_factory):
    """Warm: the first call of a process loads the kernels from numba's cache (the cold process has its
    own test); then, at the end, the slowest file of each entry point."""
    panda = str(Path(__file__).resolve().parents[1] / "urdf" / "panda_arm.urdf")
    cli_run("info", panda)
    cli_run("codegen", panda, "-o", tmp_path_factory.mktemp("warm"))
    yield
    if SLOWEST:
        write_lines(request, ["entry points, slowest file (CPU s): " + "; ".join(
            "%s %.3f (%s)" % (k, s, f) for k, (s, f) in sorted(SLOWEST.items()))])


def timed(entry, label, call):
    """(value or the URDFError raised, CPU seconds) of ``call()``; the bound asserted, the slowest kept."""
    t0 = time.thread_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = call()
    except rd.URDFError as exc:
        value = exc
    seconds = time.thread_time() - t0
    if seconds > SLOWEST.get(entry, (-1.0, ""))[0]:
        SLOWEST[entry] = (seconds, label)
    assert seconds < IN_PROCESS_BOUND, "%s took %.2f s of CPU on %s" % (entry, seconds, label)
    return value


def cli_run(*argv):
    """(exit code, stdout, stderr) of ``robot-dynamics`` in this process."""
    out, err = io.StringIO(), io.StringIO()
    old, sys.stderr = sys.stderr, err
    try:
        code = cli.main([str(a) for a in argv], out=out)
    finally:
        sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def test_the_whole_corpus_is_here():
    require("example-robot-data", ERD is not None)
    assert len(URDFS) == N_URDFS


@pytest.mark.parametrize("path", ROBOTS)
def test_every_entry_point_loads_every_real_robot(path, tmp_path):
    require("example-robot-data", path is not None)
    label = str(path.relative_to(ERD))
    data = path.read_bytes()
    loaded = timed("rd.load_urdf", label, lambda: rd.load_urdf(str(path)))
    from_text = timed("node loader, text", label, lambda: load_description(data))
    from_path = timed("node loader, urdf_path", label, lambda: load_description(data, path=path))
    info = timed("info", label, lambda: cli_run("info", path))
    codegen = timed("codegen", label, lambda: cli_run("codegen", path, "-o", tmp_path))
    if label in REFUSED:
        for refusal in (loaded, from_text, from_path):
            assert isinstance(refusal, rd.URDFError) and REFUSED[label] in str(refusal), refusal
        for code, _, err in (info, codegen):
            assert code == 2 and REFUSED[label] in err, err
        return
    for model in (from_text, from_path):
        assert not isinstance(model, Exception), model
        assert model.joint_names == loaded.joint_names and model.total_mass == loaded.total_mass
    assert info[0] == 0 and "Robot '%s'" % loaded.name in info[1], info[2]
    if not loaded.joint_names:          # a body without joints (a quadrotor): nothing to generate, said so
        assert codegen[0] == 2 and "at least one moving joint" in codegen[2], codegen[2]
    else:
        assert codegen[0] == 0 and "%d joints" % len(loaded.joint_names) in codegen[1], codegen[2]


def _cold_info(path):
    """(exit code, stderr, the child's CPU seconds) of a new ``python -m robot_dynamics info`` process."""
    proc = subprocess.Popen([sys.executable, "-m", "robot_dynamics", "info", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err.decode(errors="replace"), usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("path", ROBOTS)
def test_a_cold_command_line_finishes_on_every_real_robot(path):
    require("example-robot-data", path is not None)
    label = str(path.relative_to(ERD))
    code, err, seconds = _cold_info(path)
    if seconds > SLOWEST.get("info, cold process", (-1.0, ""))[0]:
        SLOWEST["info, cold process"] = (seconds, label)
    assert code == (2 if label in REFUSED else 0), err
    assert seconds < COLD_CLI_BOUND, "robot-dynamics info took %.1f s of CPU on %s" % (seconds, label)


@pytest.mark.parametrize("name, text, outcome", hostile_cases(), ids=[c[0] for c in hostile_cases()])
def test_hostile_descriptions_are_decided_at_once(name, text, outcome, tmp_path):
    """Loaded (``outcome`` is then the model's name) or refused with ``outcome`` in the reason, within
    1 s of CPU, by the nodes' loader (text and urdf_path) and the command line."""
    data = text.encode()
    path = tmp_path / "hostile.xml"
    path.write_bytes(data)
    results = [timed("hostile: node loader, text", name, lambda: load_description(data)),
               timed("hostile: node loader, urdf_path", name, lambda: load_description(data, path=path))]
    code, out, err = timed("hostile: info", name, lambda: cli_run("info", path))
    for result in results:
        if isinstance(result, Exception):
            assert outcome in str(result), "%s: %s" % (name, result)
        else:
            assert result.name == outcome, "%s: loaded as %r, expected a refusal naming %r" % (
                name, result.name, outcome)
    if isinstance(results[0], Exception):
        assert code == 2 and outcome in err, err
    else:
        assert code == 0 and "Robot '%s'" % outcome in out, err


def test_missing_meshes_are_skipped_on_request_by_the_command_line_and_the_nodes_loader(tmp_path):
    """An MJCF whose mesh files are absent, every inertia explicit: refused naming the file, loaded with
    the option (``--skip-missing-meshes``; the nodes' ``skip_missing_meshes`` parameter hands the loader
    the same flag), as ``rd.load_mjcf`` (test_mjcf_elements.py)."""
    from test_mjcf_elements import INERTIAL, MESHED
    path = tmp_path / "arm.xml"
    path.write_text(MESHED.format(fore_inertial=INERTIAL))
    code, _, err = cli_run("info", path)
    assert code == 2 and "shell.stl" in err, err
    code, out, err = cli_run("info", path, "--skip-missing-meshes")
    assert code == 0 and "Robot '" in out, err
    with pytest.raises(rd.URDFError, match="shell.stl"):
        load_description(path.read_bytes(), path=path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.URDFWarning)
        model = load_description(path.read_bytes(), path=path, skip_missing_meshes=True)
    assert model.joint_names == rd.load_mjcf(str(path), skip_missing_meshes=True).joint_names
