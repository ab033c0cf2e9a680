"""The one dispatcher: the public functions made by ``dispatch.public``, the
root routing in dispatch alone, and the control-loop branch equal to the
general path on fixed, floating, planar and mimic models.
"""
import ast
import inspect
import pydoc
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import aba, crba, dispatch, rnea
from robot_dynamics.tools.sample import random_urdf

PKG = Path(__file__).resolve().parents[1] / "robot_dynamics"

SIGNATURES = {
    "rnea": "(model, q, qd, qdd, f_ext=None, *, data=None, out=None)",
    "gravity_torques": "(model, q, *, data=None, out=None)",
    "nonlinear_effects": "(model, q, qd, *, data=None, out=None)",
    "mass_matrix": "(model, q, *, data=None, out=None)",
    "aba": "(model, q, qd, tau, f_ext=None, *, data=None, out=None)",
}
ALGORITHMS = {"rnea": (rnea, "RNEA"), "gravity_torques": (rnea, "GRAVITY"),
              "nonlinear_effects": (rnea, "NONLINEAR_EFFECTS"), "mass_matrix": (crba, "CRBA"), "aba": (aba, "ABA")}
FIRST_LINES = {
    "rnea": "Inverse dynamics: the joint torques that produce ``qdd`` at ``(q, qd)``.",
    "gravity_torques": "Generalized gravity ``g(q) = rnea(q, 0, 0)``: the torques that hold the",
    "nonlinear_effects": "Coriolis, centrifugal and gravity torques ``h(q, qd) = C(q, qd) qd + g(q)",
    "mass_matrix": "Joint-space inertia matrix M(q) by the composite-rigid-body algorithm.",
    "aba": "Forward dynamics: the joint accelerations that ``tau`` produces at ``(q, qd)``.",
}


# --- made by the factory ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_the_control_loop_functions_are_made_by_dispatch_public(name):
    fn = getattr(rd, name)
    module, algorithm = ALGORITHMS[name]
    assert fn.algorithm is getattr(module, algorithm)
    assert fn.__code__.co_filename == dispatch.__file__          # the closure of dispatch.py, no wrapper
    assert not hasattr(fn, "__wrapped__")
    assert (fn.__name__, fn.__qualname__, fn.__module__) == (name, name, module.__name__)
    assert getattr(module, name) is fn
    assert str(inspect.signature(fn)) == SIGNATURES[name]
    assert fn.__doc__.splitlines()[0] == FIRST_LINES[name]
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    assert name + SIGNATURES[name] in text and FIRST_LINES[name] in text


def test_the_states_are_keyword_arguments_too():
    model = rd.load_urdf(random_urdf(2, 5, p_massless=0.0))
    q, qd, qdd = np.random.default_rng(0).uniform(-1, 1, (3, model.nq))
    tau = rd.rnea(model=model, q=q, qd=qd, qdd=qdd)
    np.testing.assert_array_equal(rd.aba(model=model, q=q, qd=qd, tau=tau), rd.aba(model, q, qd, tau))
    np.testing.assert_array_equal(rd.nonlinear_effects(model, q=q, qd=qd), rd.rnea(model, q, qd, 0 * q))


def test_public_refuses_a_signature_it_has_no_function_for():
    with pytest.raises(TypeError, match="no function of parameters"):
        @dispatch.public(rnea.GRAVITY)
        def gravity_torques(model, q, scale, *, data=None, out=None):
            """Not a known signature."""


# --- dispatch alone routes the roots ---------------------------------------------------------

def root_routes(tree):
    """Line numbers of ``if <...>.root_joint is (not) None:`` whose branches return:
    a root routed in place (a branch that raises, require_fixed, does not count)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        tests = [n for n in ast.walk(node.test) if isinstance(n, ast.Compare)]
        on_root = any(isinstance(t.left, ast.Attribute) and t.left.attr == "root_joint"
                      and isinstance(t.ops[0], (ast.Is, ast.IsNot))
                      and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value is None
                      for t in tests)
        branches = node.body + node.orelse
        if on_root and any(isinstance(n, ast.Return) for b in branches for n in ast.walk(b)):
            lines.append(node.lineno)
    return lines


# None routes a root itself: derivatives (tuples of three) and kinematics (dicts, extra arguments) too.
ROUTE_THEMSELVES = set()


def test_no_algorithm_module_but_dispatch_routes_a_root():
    found = {}
    for path in sorted((PKG / "algorithms").glob("*.py")):
        lines = root_routes(ast.parse(path.read_text()))
        if lines and path.name != "dispatch.py":
            found[path.name] = lines
    assert set(found) == ROUTE_THEMSELVES, found
    assert root_routes(ast.parse((PKG / "algorithms" / "dispatch.py").read_text()))


def test_the_root_route_check_sees_a_route_and_not_a_raise():
    routed = "def f(model, q):\n    if model.root_joint is not None:\n        return g(q)\n    return h(q)\n"
    fixed = ("def require_fixed(model, what):\n    if model.root_joint is not None:\n"
             "        unsupported(model, what)\n")
    assert root_routes(ast.parse(routed)) == [2]
    assert root_routes(ast.parse(fixed)) == []


# --- the control-loop branch equals the general path -----------------------------------------

MODELS = {
    "fixed": lambda: rd.load_urdf("urdf/panda_arm.urdf"),
    "mimic": lambda: rd.load_urdf(random_urdf(11, 9, mimic=True, p_massless=0.0)),
    "floating": lambda: rd.load_urdf(random_urdf(7, 7, p_massless=0.0), root_joint="floating"),
    "planar": lambda: rd.load_urdf(random_urdf(5, 7, p_massless=0.0), root_joint="planar"),
    "floating mimic": lambda: rd.load_urdf(random_urdf(11, 9, mimic=True, p_massless=0.0), root_joint="floating"),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    return MODELS[request.param]()


def _states(model, B, seed):
    rng = np.random.default_rng(seed)
    Q = rng.uniform(-1, 1, (B, model.nq))
    if model.root_joint is not None:
        Q = rd.normalize(model, Q)
    QD, QDD = rng.uniform(-1, 1, (2, B, model.nv))
    return Q, QD, QDD


def _calls(model, q, qd, x, f_ext=None):
    """name -> call(**kw): the five functions at one state or a batch (x: qdd for rnea, tau for aba)."""
    return {"rnea": lambda **k: rd.rnea(model, q, qd, x, f_ext, **k),
            "gravity_torques": lambda **k: rd.gravity_torques(model, q, **k),
            "nonlinear_effects": lambda **k: rd.nonlinear_effects(model, q, qd, **k),
            "mass_matrix": lambda **k: rd.mass_matrix(model, q, **k),
            "aba": lambda **k: rd.aba(model, q, qd, x, f_ext, **k)}


def test_data_and_out_equal_the_general_path_and_the_batch(model):
    B = 40
    Q, QD, QDD = _states(model, B, 1)
    batch = {name: call() for name, call in _calls(model, Q, QD, QDD).items()}
    data = rd.Data(model)
    for k in range(0, B, 7):
        q, qd, x = Q[k], QD[k], QDD[k]
        for name, call in _calls(model, q, qd, x).items():
            ref = batch[name][k]
            out = np.full(ref.shape, np.nan)
            assert call(data=data, out=out) is out, name
            np.testing.assert_array_equal(out, ref, err_msg=name)               # the control loop
            np.testing.assert_array_equal(call(), ref, err_msg=name)             # one state, nothing given
            np.testing.assert_array_equal(call(data=data), ref, err_msg=name)
            np.testing.assert_array_equal(call(out=np.empty(ref.shape)), ref, err_msg=name)
        lists = _calls(model, list(q), list(qd), list(x))                        # the general path
        for name, call in lists.items():
            got = call()
            if model.root_joint is None:
                np.testing.assert_array_equal(got, batch[name][k], err_msg=name)
            else:                                                                # the Python root path
                np.testing.assert_allclose(got, batch[name][k], rtol=1e-11, atol=1e-11, err_msg=name)


def test_a_batch_with_data_and_out_equals_one_without(model):
    Q, QD, QDD = _states(model, 9, 2)
    data = rd.Data(model)
    for name, call in _calls(model, Q, QD, QDD).items():
        ref = call()
        out = np.full(ref.shape, np.nan)
        assert call(data=data, out=out) is out
        np.testing.assert_array_equal(out, ref, err_msg=name)


def test_the_control_loop_with_wrenches_equals_the_batch(model):
    Q, QD, QDD = _states(model, 12, 3)
    W = np.random.default_rng(3).uniform(-5, 5, (12, len(model.link_names), 6))
    data = rd.Data(model)
    for name in ("rnea", "aba"):
        batch = _calls(model, Q, QD, QDD, W)[name]()
        for k in range(0, 12, 5):
            call = _calls(model, Q[k], QD[k], QDD[k], W[k])[name]
            out = np.full(model.nv, np.nan)
            assert call(data=data, out=out) is out
            np.testing.assert_array_equal(out, batch[k], err_msg=name)
            np.testing.assert_array_equal(call(), batch[k], err_msg=name)
        zero = _calls(model, Q, QD, QDD, np.zeros_like(W))[name]()
        np.testing.assert_allclose(zero, _calls(model, Q, QD, QDD)[name](), rtol=1e-12, atol=1e-12)


def test_the_control_loop_agrees_with_the_equations_of_motion(model):
    """Independent of the path: aba inverts rnea, rnea = M qdd + h, gravity = h at rest."""
    Q, QD, QDD = _states(model, 5, 4)
    data = rd.Data(model)
    for q, qd, qdd in zip(Q, QD, QDD):
        tau, M, h, g, a = (np.empty(model.nv), np.empty((model.nv, model.nv)), np.empty(model.nv),
                           np.empty(model.nv), np.empty(model.nv))
        rd.rnea(model, q, qd, qdd, data=data, out=tau)
        rd.mass_matrix(model, q, data=data, out=M)
        rd.nonlinear_effects(model, q, qd, data=data, out=h)
        rd.gravity_torques(model, q, data=data, out=g)
        rd.aba(model, q, qd, tau, data=data, out=a)
        scale = max(1.0, np.abs(tau).max())
        np.testing.assert_allclose(M @ qdd + h, tau, atol=1e-10 * scale)
        np.testing.assert_allclose(a, qdd, atol=1e-8 * max(1.0, np.abs(qdd).max()))
        np.testing.assert_allclose(rd.nonlinear_effects(model, q, 0 * qd, data=data), g, atol=1e-12 * scale)

