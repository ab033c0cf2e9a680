"""One argument order, one loader (docs/API-CONTRACT.md, "Argument order").

- Every public function takes ``(model, q, qd, ..., link, point)``, then options.
- The four functions that had another order still take it for one release,
  with a DeprecationWarning naming the new form, and give the same result.
- ``rd.load_urdf`` is the one loader; ``rd.model.load_urdf`` is its
  deprecated alias without the assembly check.
"""
import inspect
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd

PANDA = Path(__file__).resolve().parents[1] / "urdf" / "panda_arm.urdf"
STATES = ("q", "q_guess", "qd", "qd_minus", "v", "qdd", "tau", "wrench", "normal")


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(str(PANDA))


def test_every_public_function_puts_link_and_point_after_the_states():
    checked = []
    for name in rd.__all__:
        fn = getattr(rd, name)
        if not inspect.isfunction(fn):
            continue
        params = list(inspect.signature(fn).parameters)
        if params[:1] != ["model"] or "link" not in params:
            continue
        states = [params.index(p) for p in STATES if p in params]
        assert params.index("link") > max(states), (name, params)
        if "point" in params:
            assert params.index("point") == params.index("link") + 1, (name, params)
        checked.append(name)
    assert {"operational_space", "static_torques", "identify_payload", "impact", "jacobian",
            "jacobian_derivative_times_qd", "cartesian_dynamics"} <= set(checked), checked


def _old_call_warns(new_form, call):
    with pytest.warns(DeprecationWarning, match=r"argument order is deprecated.*call %s" % new_form):
        return call()


def test_static_torques_old_order_warns_and_agrees(panda):
    q, F = np.linspace(-0.4, 0.6, 7), np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    new = rd.static_torques(panda, q, F, "panda_link8", (0, 0, 0.1))
    old = _old_call_warns(r"static_torques\(model, q, wrench, link, point\)",
                          lambda: rd.static_torques(panda, q, "panda_link8", F, (0, 0, 0.1)))
    np.testing.assert_array_equal(old, new)
    np.testing.assert_allclose(new, rd.jacobian(panda, q, "panda_link8", (0, 0, 0.1)).T @ F, rtol=1e-14)


def test_operational_space_old_order_warns_and_agrees(panda):
    q, qd = np.linspace(-0.4, 0.6, 7), np.linspace(0.3, -0.2, 7)
    new = rd.operational_space(panda, q, qd, "panda_link8", (0, 0, 0.1))
    old = _old_call_warns(r"operational_space\(model, q, qd, link, point\)",
                          lambda: rd.operational_space(panda, q, "panda_link8", (0, 0, 0.1), qd=qd))
    for field in ("Lambda", "mu", "rho", "J"):
        np.testing.assert_array_equal(getattr(old, field), getattr(new, field))
    assert np.any(new.mu != rd.operational_space(panda, q, None, "panda_link8", (0, 0, 0.1)).mu)   # qd was used
    with pytest.raises(rd.InputError, match="operational_space needs link"):
        rd.operational_space(panda, q, qd)


def test_identify_payload_old_order_warns_and_agrees(panda):
    loaded = panda.with_payload("panda_link8", 1.5, com=(0.0, 0.02, 0.08))
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-1, 1, (3, 40, 7))
    tau = rd.rnea(loaded, q, qd, qdd)
    new = rd.identify_payload(panda, q, qd, qdd, tau, "panda_link8")
    old = _old_call_warns(r"identify_payload\(model, q, qd, qdd, tau, link\)",
                          lambda: rd.identify_payload(panda, "panda_link8", q, qd, qdd, tau))
    assert new.mass == pytest.approx(1.5, rel=1e-6)
    assert old.mass == new.mass
    np.testing.assert_array_equal(old.com, new.com)


def test_impact_old_order_warns_and_agrees(panda):
    q, qd = np.linspace(-0.4, 0.6, 7), np.linspace(0.3, -0.2, 7)
    n = -(rd.jacobian(panda, q, "panda_link7", (0, 0, 0.05)) @ qd)[:3]       # the point moves into the obstacle
    new = rd.impact(panda, q, qd, n, "panda_link7", (0, 0, 0.05), 0.5)
    old = _old_call_warns(r"impact\(model, q, qd_minus, normal, link, point, restitution\)",
                          lambda: rd.impact(panda, q, qd, "panda_link7", (0, 0, 0.05), n, 0.5))
    np.testing.assert_array_equal(old[0], new[0])
    np.testing.assert_array_equal(old[1], new[1])
    assert not np.allclose(new[0], qd)                       # the impact changed the velocity


# --- one loader ------------------------------------------------------------------------------

def _loops_that_cannot_close():
    return [dict(name=kind, kind=kind, parent=parent, child=child, parent_xyz=[0.1, -0.05, 0.2],
                 parent_rpy=[0.3, -0.2, 1.1], child_xyz=[-0.03, 0.08, 0.1], child_rpy=[-0.7, 0.4, 0.2])
            for kind, (parent, child) in zip(("point", "revolute", "weld"), [
                ("panda_link2", "panda_link5"), ("panda_link1", "panda_link4"), ("panda_link3", "panda_link7")])]


def test_load_urdf_checks_loops_one_way_and_the_model_alias_warns():
    with pytest.raises(rd.URDFError, match="a closure that cannot be assembled"):
        rd.load_urdf(str(PANDA), loops=_loops_that_cannot_close())
    declared = rd.load_urdf(str(PANDA), loops=_loops_that_cannot_close(), check_assembly=False)
    assert [loop.name for loop in declared.loops] == ["point", "revolute", "weld"]
    with pytest.warns(DeprecationWarning, match=r"robot_dynamics.load_urdf\(\.\.\., check_assembly=False\)"):
        alias = rd.model.load_urdf
    old = alias(str(PANDA), loops=_loops_that_cannot_close())
    assert [(loop.name, loop.parent, loop.child) for loop in old.loops] == \
        [(loop.name, loop.parent, loop.child) for loop in declared.loops]
    with pytest.raises(rd.URDFError, match="nowhere"):             # the declaration is checked either way
        rd.load_urdf(str(PANDA), loops=[dict(name="x", kind="point", parent="panda_link2", child="nowhere")],
                     check_assembly=False)
    assert not hasattr(rd.model, "no_such_name")


def test_a_star_import_shadows_no_builtin():
    """``from robot_dynamics import *`` keeps Python's builtins: rd.compile is public, not in __all__."""
    import builtins
    assert not set(rd.__all__) & set(dir(builtins)), set(rd.__all__) & set(dir(builtins))
    assert callable(rd.compile) and rd.compile.__module__ == "robot_dynamics.codegen.compiled"
    namespace = {}
    exec("from robot_dynamics import *", namespace)          # noqa: S102
    assert "compile" not in namespace and "rnea" in namespace
