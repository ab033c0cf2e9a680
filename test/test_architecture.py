"""The public Model / Data design, the one dispatcher and the package layout.

- Model arrays are the book's model structure and agree with the URDF;
  with_gravity / with_payload return new models.
- Data: every algorithm gives the same result with and without ``data=``
  and ``out=``; ``out`` is filled in place; a batch on several threads
  equals the states one by one.
- Layout: no module outside the model layer reads a private model field or
  the packed table; no import cycles (a package's ``__init__`` counted as a
  module); no floor imports a higher one (:data:`FLOORS`); one error hierarchy.
"""
import ast
import importlib
import re
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.model import inertia
from robot_dynamics.model.data import work, work_crba, work_rnea, work_size
from robot_dynamics.tools.sample import random_urdf

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "robot_dynamics"
PANDA = ROOT / "urdf" / "panda_arm.urdf"


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(str(PANDA))


@pytest.fixture(scope="module", params=[3, 11])
def tree(request):
    return rd.load_urdf(random_urdf(request.param, 9, mimic=request.param == 11, p_massless=0.0))


# --- Model ---------------------------------------------------------------------------------

def test_model_arrays_follow_the_tree(panda):
    m = panda
    assert m.parent.tolist() == [-1, 0, 1, 2, 3, 4, 5]
    assert all(m.parent[i] < i for i in range(m.nb))
    assert m.joint_type.tolist() == [rd.model.REVOLUTE] * 7
    assert [m.link_names[l] for l in m.body_link] == ["panda_link%d" % k for k in range(1, 8)]
    assert list(m.body_joint) == ["panda_joint%d" % k for k in range(1, 8)]
    for i, j in enumerate(m.body_joint):            # serial arm, no fixed joints between: X_tree == origin
        np.testing.assert_allclose(m.joint_placement[i], m.joints[j].origin, atol=1e-15)
        np.testing.assert_allclose(m.axis[i], m.joints[j].axis)
    np.testing.assert_array_equal(m.coupling, np.eye(7))


def test_body_inertias_add_up_the_links_own_inertials(tree):
    """Each body's (m, h, I_O) is the sum of its links' own URDF inertials moved
    into the body frame (the link <-> body map and the link placements)."""
    m = tree
    for b in range(m.nb):
        mass, h, Io = 0.0, np.zeros(3), np.zeros((3, 3))
        for l in np.flatnonzero(m.link_body == b):
            ml, c, Ic = m.link_mass[l], m.link_com[l], m.link_inertia[l]
            _, hl, Il = inertia.transform_inertia(m.link_placement[l], ml, ml * c,
                                                  inertia.inertia_about_origin(ml, c, Ic))
            mass, h, Io = mass + ml, h + hl, Io + Il
        assert m.body_mass[b] == pytest.approx(mass, rel=1e-14)
        np.testing.assert_allclose(m.body_mass[b] * m.body_com[b], h, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(m.body_inertia[b], Io, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(m.body_parameters[b], inertia.parameters(mass, h, Io), rtol=1e-12, atol=1e-15)
        S = m.spatial_inertia[b]                   # linear first: [f; n] = S [v; w]
        np.testing.assert_allclose(S, S.T, atol=1e-15)
        v, w = np.array([0.3, -0.2, 0.5]), np.array([1.0, 0.4, -0.7])
        f = mass * v + np.cross(w, h)
        n = Io @ w + np.cross(h, v)
        np.testing.assert_allclose(S @ np.r_[v, w], np.r_[f, n], rtol=1e-12, atol=1e-12)


def test_with_gravity_and_with_payload_return_new_models(panda):
    g0 = panda.gravity.copy()
    moon = panda.with_gravity((0.0, 0.0, -1.62))
    assert moon is not panda and np.all(panda.gravity == g0)
    q = np.linspace(-0.5, 0.5, 7)
    np.testing.assert_allclose(rd.gravity_torques(moon, q), rd.gravity_torques(panda, q) * 1.62 / 9.81,
                               rtol=1e-12, atol=1e-14)
    loaded = panda.with_payload("panda_link8", 2.0, com=(0, 0, 0.1))
    assert loaded.total_mass == pytest.approx(panda.total_mass + 2.0)
    assert np.all(panda.body_mass == rd.load_urdf(str(PANDA)).body_mass)          # unchanged
    np.testing.assert_array_equal(loaded.link_mass, panda.link_mass)                # the URDF's own inertials
    assert loaded.body_mass[-1] == pytest.approx(panda.body_mass[-1] + 2.0)


# --- Data, out= and the dispatcher ---------------------------------------------------------

def _calls(model, q, qd, qdd):
    link = model.link_names[-1]
    return {
        "rnea": (lambda **k: rd.rnea(model, q, qd, qdd, **k), (model.nq,)),
        "gravity_torques": (lambda **k: rd.gravity_torques(model, q, **k), (model.nq,)),
        "nonlinear_effects": (lambda **k: rd.nonlinear_effects(model, q, qd, **k), (model.nq,)),
        "mass_matrix": (lambda **k: rd.mass_matrix(model, q, **k), (model.nq, model.nq)),
        "aba": (lambda **k: rd.aba(model, q, qd, qdd, **k), (model.nq,)),
        "coriolis_matrix": (lambda **k: rd.coriolis_matrix(model, q, qd, **k), (model.nq, model.nq)),
        "jacobian": (lambda **k: rd.jacobian(model, q, link, **k), (6, model.nq)),
    }


def test_data_and_out_give_the_same_results(tree):
    rng = np.random.default_rng(5)
    data = rd.Data(tree)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-1, 1, (3, tree.nq))
        for name, (call, shape) in _calls(tree, q, qd, qdd).items():
            ref = call()
            out = np.full(shape, np.nan)
            got = call(data=data, out=out)
            assert got is out, name
            np.testing.assert_array_equal(out, ref, err_msg=name)
            np.testing.assert_array_equal(call(data=data), ref, err_msg=name)


def test_out_of_the_wrong_shape_is_refused(panda):
    q = np.zeros(7)
    with pytest.raises(ValueError, match=r"out must be a writable C-contiguous float64 array of shape \(7,\)"):
        rd.rnea(panda, q, q, q, out=np.empty(6))
    with pytest.raises(ValueError, match=r"shape \(7, 7\)"):
        rd.mass_matrix(panda, q, out=np.empty((7, 7), dtype=np.float32))


def test_data_of_a_smaller_model_is_refused_not_overrun(panda):
    small = rd.Data(rd.load_urdf(random_urdf(0, 2, p_fixed=0.0, p_massless=0.0)))
    q = np.full(7, 0.3)
    with pytest.raises(ValueError, match="Data"):
        rd.rnea(panda, q, q, q, data=small)


def test_work_views_of_the_single_state_kernels_are_the_full_layouts(panda):
    n, nq = panda.nb + 1, panda.nq
    W = np.arange(work_size(panda.nb, nq), dtype=float)
    full = work.py_func(W, n, nq)
    R, p, v, a, f, zero = work_rnea.py_func(W, n, nq)
    for x, y in ((R, full.R), (p, full.p), (v, full.v), (a, full.a), (f, full.f), (zero, full.zero)):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(work_crba.py_func(W, n, nq), (full.R, full.p, full.IC, full.F)):
        np.testing.assert_array_equal(x, y)
    assert full.zero[-1] == W[-1]                   # the layout ends where the buffer ends


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_on_threads_equal_the_single_states(tree, threads):
    if threads > rd.get_num_threads() and threads > __import__("numba").config.NUMBA_NUM_THREADS:
        pytest.fail("NUMBA_NUM_THREADS < 2: cannot test the threaded batch")
    rng = np.random.default_rng(threads)
    B = 700                                         # several chunks
    Q, QD, QDD = rng.uniform(-1, 1, (3, B, tree.nq))
    old = rd.get_num_threads()
    rd.set_num_threads(threads)
    try:
        for name, (call, _) in _calls(tree, Q, QD, QDD).items():
            batch = call()
            one = np.array([_calls(tree, Q[k], QD[k], QDD[k])[name][0]() for k in range(0, B, 37)])
            np.testing.assert_array_equal(batch[::37], one, err_msg=name)
    finally:
        rd.set_num_threads(old)


def test_set_num_threads_checks_its_argument():
    with pytest.raises(ValueError, match="number of threads must be an integer from 1 to"):
        rd.set_num_threads(0)


# --- layout ------------------------------------------------------------------------------------

PRIVATE = re.compile(r"\b(?:model|m|self\.model|arm)\._(?!_)[a-z]\w*|\.packed\b")


def test_no_private_model_field_outside_the_model_layer():
    """Only robot_dynamics/model/ (and the compiled kernels of algorithms/ and the
    simulator's compiled step, which take the packed table) read Model.packed;
    nothing reads a private field of a model."""
    allowed_packed = {"algorithms", "model"}
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        for k, line in enumerate(path.read_text().splitlines(), 1):
            for hit in PRIVATE.findall(line):
                if hit == ".packed" and (rel.parts[0] in allowed_packed or rel.as_posix() == "simulation/fused_path.py"):
                    continue
                offenders.append("%s:%d: %s" % (rel, k, line.strip()))
    assert not offenders, "\n".join(offenders)


def _module_name(path, root=PKG):
    parts = (root.name,) + path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path, root=PKG):
    """The modules of the package ``root`` that ``path`` imports: every ``import``
    and ``from ... import`` statement in the file, function bodies and ``if``
    branches included, relative ones resolved. ``from pkg import name`` counts
    ``pkg.name``: the module of that name, or else (a name the package's
    ``__init__`` defines) the package's ``__init__`` itself (:func:`import_graph`)."""
    mod = _module_name(path, root)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == root.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == root.name:
                target = node.module
            else:
                continue
            out.update(target + "." + a.name for a in node.names)      # a module, or a name of ``target``
    return mod, out


def import_graph(root=PKG):
    """{module: the modules it imports} over the whole package ``root`` (a package's
    ``__init__.py`` is the module named as the package)."""
    paths = sorted(root.rglob("*.py"))
    modules = {_module_name(p, root) for p in paths}
    graph = {}
    for path in paths:
        mod, deps = _imports(path, root)
        graph[mod] = set()
        for d in deps:
            while d and d not in modules:                 # an imported name: its module
                d = d.rsplit(".", 1)[0] if "." in d else ""
            if d and d != mod:
                graph[mod].add(d)
    return graph


def import_cycle(graph):
    """One import cycle of ``graph`` as a list of modules (first == last), or None.

    Every edge counts, those between a package's face (its ``__init__.py``)
    and its own submodules included: a face that imports a submodule which
    imports the face back (``import robot_dynamics as rd``, ``from .. import
    name``) hands that submodule the half-built face, a load-time cycle. A
    sibling imported through the package (``from . import checks``) is an
    edge to the sibling, not to the face (:func:`_imports`)."""
    def edges(m):
        yield from sorted(graph.get(m, ()))

    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in edges(m):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_import_graph_reads_function_level_imports():
    """The graph the cycle check walks has the imports inside functions and the
    relative ``from . import x`` of a module (a check that read only column-0
    statements missed the 9-file cycle around algorithms/floating.py)."""
    graph = import_graph()
    assert "robot_dynamics.algorithms.floating" in graph["robot_dynamics.algorithms.rnea"]  # from . import floating
    assert "robot_dynamics.constraints.assembly" in graph["robot_dynamics.constraints.load"]
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b"}, "b": set()}) is None
    nested = ast.parse("def f():\n    if True:\n        from . import g\n")
    assert any(isinstance(n, ast.ImportFrom) for n in ast.walk(nested))                # what _imports walks


def test_a_face_that_imports_a_module_importing_it_back_is_a_cycle(tmp_path):
    """On a small package: the face re-exports a law whose module imports the face
    (what robot_dynamics/__init__.py -> control.impedance -> ``import robot_dynamics
    as rd`` was); a sibling imported through the package is not an edge to the face."""
    pkg = tmp_path / "pkg"
    (pkg / "laws").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .laws.spring import Spring\nfrom . import checks\n")
    (pkg / "checks.py").write_text("X = 1\n")
    (pkg / "laws" / "__init__.py").write_text("")
    (pkg / "laws" / "spring.py").write_text("def f():\n    import pkg as rd\n    return rd.checks\n"
                                            "from .. import checks\n")
    graph = import_graph(pkg)
    assert graph["pkg.laws.spring"] == {"pkg", "pkg.checks"}        # the face by ``import pkg``; checks by name
    assert import_cycle(graph) == ["pkg", "pkg.laws.spring", "pkg"]
    (pkg / "laws" / "spring.py").write_text("from ..checks import X\nfrom .. import checks\n")
    graph = import_graph(pkg)
    assert graph["pkg.laws.spring"] == {"pkg.checks"}
    assert import_cycle(graph) is None
    (pkg / "laws" / "spring.py").write_text("from .. import X\n")  # a name the face defines: the face
    assert import_cycle(import_graph(pkg)) == ["pkg", "pkg.laws.spring", "pkg"]
    assert import_cycle({"p": {"p.x"}, "p.x": {"p"}}) == ["p", "p.x", "p"]


def test_no_import_cycles():
    """No cycle among robot_dynamics' modules, function-level imports included."""
    cycle = import_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


#: The package's floors, lowest first: a module imports only modules of its own floor or a lower
#: one (siblings on one floor may import each other; test_no_import_cycles keeps that acyclic).
#: Each entry is a top-level module or folder of robot_dynamics/, ``__init__`` the package face.
#: The floor holds what every layer uses: errors, the numba cache's location, the input checks;
#: the face (``import robot_dynamics as rd``) sits above the library it re-exports and below the
#: node pipeline (control/), the nodes (ros/) and the command-line tools (tools/), which use it.
FLOORS = (
    ("errors", "cache", "checks", "bundled"),
    ("model",),
    ("algorithms",),
    ("symbolic", "constraints", "identification", "analysis", "contact"),
    ("simulation", "timing", "codegen"),
    ("__init__",),
    ("control",),
    ("ros",),
    ("tools", "__main__"),
)


def floor_of(module):
    """The index in FLOORS of a robot_dynamics module (its longest listed prefix)."""
    parts = module.split(".")[1:] or ["__init__"]
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        for k, floor in enumerate(FLOORS):
            if name in floor:
                return k
    raise AssertionError("%s is on no floor of FLOORS" % module)


def test_no_floor_imports_a_higher_one():
    """No arrow runs back up: each import goes to the importer's floor or a lower one
    (the face counted as a module: a library module that imports ``robot_dynamics``
    imports upward)."""
    assert floor_of("robot_dynamics") == 5 and floor_of("robot_dynamics.bundled") == 0
    assert floor_of("robot_dynamics.tools.cli") == 8 and floor_of("robot_dynamics.model.urdf") == 1
    upward = ["%s (floor %d) -> %s (floor %d)" % (m, floor_of(m), d, floor_of(d))
              for m, deps in sorted(import_graph().items()) for d in sorted(deps) if floor_of(d) > floor_of(m)]
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_layers_are_folders():
    for layer in ("model", "algorithms", "analysis", "constraints", "identification", "symbolic", "simulation", "ros",
                  "tools"):
        assert (PKG / layer / "__init__.py").is_file(), layer
    assert (PKG / "algorithms" / "dispatch.py").is_file()


def _ros_imports(path):
    """The robot_dynamics.ros modules ``path`` imports anywhere in it (function bodies too)."""
    mod = ".".join(("robot_dynamics",) + path.relative_to(PKG).with_suffix("").parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = mod.split(".")[:len(mod.split(".")) - node.level] if node.level else []
            names = [".".join(base + ([node.module] if node.module else []))]
            names = [n + "." + a.name for n in names for a in node.names] + names
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n == "robot_dynamics.ros" or n.startswith("robot_dynamics.ros.")}
    return found


def test_tools_do_not_import_the_nodes_but_the_demo_its_executor():
    """tools/ runs without the ROS layer: the demo starts its nodes as child processes
    (tools/processes.py) and imports of ros/ only the executor the nodes spin (ros/spin.py)."""
    imports = {path.name: _ros_imports(path) for path in sorted((PKG / "tools").glob("*.py"))}
    assert imports.pop("demo.py") == {"robot_dynamics.ros.spin", "robot_dynamics.ros.spin.make_executor"}
    assert not {name: found for name, found in imports.items() if found}
    assert not (PKG / "ros" / "process.py").exists()       # the tests' harness is test/ros/node_process.py


def test_every_deliberate_error_is_a_robot_dynamics_error():
    from robot_dynamics import errors
    for name in dir(errors):
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, Exception) and not issubclass(obj, Warning) \
                and obj.__module__ == errors.__name__:
            assert issubclass(obj, rd.RobotDynamicsError), name
    for name in ("InputError", "URDFError", "SingularityError", "ParameterError", "JointMapError", "CommandError",
                 "UsageError"):
        assert issubclass(getattr(errors, name), ValueError), name
    with pytest.raises(rd.RobotDynamicsError):
        rd.load_urdf("<robot name='x'/>")
    model = rd.load_urdf(str(PANDA))
    with pytest.raises(rd.InputError, match="q has 6 values, model nq is 7"):
        rd.rnea(model, np.zeros(6), np.zeros(7), np.zeros(7))
    with pytest.raises(rd.InputError, match="unknown link"):
        rd.jacobian(model, np.zeros(7), "no_such_link")
    defined = []
    for path in PKG.rglob("*.py"):
        if path.name != "errors.py":
            defined += ["%s: %s" % (path.relative_to(PKG), c) for c in
                        re.findall(r"^class (\w+)\((?:\w+Error|Exception|ValueError|RuntimeError)\)", path.read_text(), re.M)]
    assert not defined, "errors defined outside robot_dynamics/errors.py: %s" % defined


def test_package_imports_from_any_folder_with_the_venv_python(tmp_path):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import robot_dynamics, sys; print(robot_dynamics.__file__)"],
                         cwd=tmp_path, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve() == (PKG / "__init__.py").resolve()
    for exe in ("robot-dynamics", "dynamics_node", "simulator_node", "dynamics_services"):
        assert (Path(sys.executable).parent / exe).exists(), exe


def test_import_loads_no_heavy_optional_module(tmp_path):
    """``import robot_dynamics`` stays within 0.2 s of ``import numba`` (bench/benchmark.py):
    scipy's solvers, rosbags, matplotlib, sympy, rclpy and toppra are imported where they are used."""
    import subprocess
    import sys
    heavy = ("scipy.linalg", "scipy.optimize", "scipy.signal", "scipy.interpolate", "rosbags", "matplotlib", "sympy",
             "rclpy", "toppra")
    code = "import sys, robot_dynamics; print(' '.join(m for m in %r if m in sys.modules))" % (heavy,)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []


def test_kernels_live_in_the_layers_the_numba_cache_is_keyed_on():
    """robot_dynamics/cache.py keys the numba cache on the kernel layers' sources only:
    a kernel (or an inlined helper) anywhere else would be served stale from the cache."""
    from robot_dynamics.cache import KERNEL_LAYERS
    decorator = re.compile(r"^\s*@(?:nb\.|numba\.)?(?:njit|jit|inline|parallel|entry|vectorize|guvectorize)\b", re.M)
    outside = [str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
               if p.relative_to(PKG).parts[0] not in KERNEL_LAYERS and decorator.search(p.read_text())]
    assert not outside, outside
