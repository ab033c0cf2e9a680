"""Every documented Python example runs as written ("a documented example is a test").

- Each ```python block of README.md, docs/API-CONTRACT.md, docs/LOOPS.md,
  docs/FLOATING-BASE.md, docs/SIMULATION.md, docs/IMPEDANCE.md and docs/ACTUATORS.md runs in a fresh namespace
  from a folder laid out as the repository root (``urdf/`` linked there, so
  that what a snippet writes, ``run.csv``, does not land in the checkout).
  A line that shows its value in its comment (``model.nq, model.nv  # 19,
  18``) is compared with that value; the other claims of the comments are
  checked in CLAIMS. The blocks that cannot run alone are in NOT_RUN or
  CONTINUES, each with the reason; placeholders a block names without
  defining (README's measurements Q, QD, QDD, TAU and ``recording/``) are
  made in PRELUDES, the block's own text unchanged.
- The doctests (``>>>``) of every robot_dynamics module (ros/ excepted:
  it needs rclpy and a ROS environment), run from the repository root.
- Every ``rd.NAME`` the docs and docstrings use exists.

docs/CLI.md's commands and the files they write are compared in
test_cli.py (test_documented_output_is_current), with the machine-dependent
figures masked; these snippets show no such figures.
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

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/API-CONTRACT.md", "docs/LOOPS.md", "docs/FLOATING-BASE.md", "docs/SIMULATION.md",
        "docs/IMPEDANCE.md", "docs/ACTUATORS.md", "docs/MJCF.md")


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
NEEDS_EXAMPLE_ROBOT_DATA = {("README.md", 1), ("docs/FLOATING-BASE.md", 0)}      # solo12.urdf


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


PRELUDES = {("README.md", 0): _readme_measurements}


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


CLAIMS = {
    ("README.md", 0): _claims_readme,
    ("README.md", 1): _claims_solo,
    ("docs/API-CONTRACT.md", 0): _claims_api,
    ("docs/LOOPS.md", 1): _claims_palletiser,
    ("docs/FLOATING-BASE.md", 0): _claims_solo,
    ("docs/SIMULATION.md", 0): _claims_simulation,
    ("docs/IMPEDANCE.md", 0): _claims_impedance,
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


@pytest.fixture
def root_like(tmp_path, monkeypatch):
    """A working folder laid out as the repository root, and an ament prefix in which the package
    'robot_dynamics' is installed (its share/ with the URDFs), as after colcon build."""
    (tmp_path / "urdf").symlink_to(ROOT / "urdf")
    prefix = tmp_path / "prefix"
    (prefix / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (prefix / "share" / "ament_index" / "resource_index" / "packages" / "robot_dynamics").touch()
    (prefix / "share" / "robot_dynamics").mkdir()
    (prefix / "share" / "robot_dynamics" / "urdf").symlink_to(ROOT / "urdf")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(prefix))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_block_is_run_or_listed():
    assert len(BLOCKS) == 13, [(d, i) for d, i, _, _ in BLOCKS]
    keys = {(d, i) for d, i, _, _ in BLOCKS}
    assert set(NOT_RUN) | set(CONTINUES) | set(PRELUDES) | set(CLAIMS) <= keys


@pytest.mark.parametrize("doc, index, line, src", [b for b in BLOCKS if b[:2] not in NOT_RUN],
                         ids=["%s:%d" % (d, line) for d, i, line, _ in BLOCKS if (d, i) not in NOT_RUN])
def test_documented_python_block_runs(doc, index, line, src, root_like, monkeypatch):
    if (doc, index) in NEEDS_EXAMPLE_ROBOT_DATA and example_robot_data_dir() is None:
        if os.environ.get("CI"):
            pytest.fail("example-robot-data is a dev dependency (requirements-dev.txt)")
        pytest.skip("example-robot-data is not installed")
    ns = {"__name__": "__doc_example__"}
    if (doc, index) in CONTINUES:
        first = CONTINUES[(doc, index)]
        before = [b for b in BLOCKS if b[:2] == first][0]
        ns.update(PRELUDES.get(first, lambda folder: {})(root_like))
        _patch_slow_calls(monkeypatch)
        run_block(before[3], ns, "%s:%d" % (doc, before[2]))
    ns.update(PRELUDES.get((doc, index), lambda folder: {})(root_like))
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


def test_the_floating_base_block_compares_its_shown_sizes(root_like):
    if example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    (line, src), = python_blocks("docs/FLOATING-BASE.md")
    assert run_block(src, {}, "FLOATING-BASE.md:%d" % line) == 1        # 'floating', 19, 18


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
