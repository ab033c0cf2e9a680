"""Property-based fuzzing of the library (hypothesis): random trees, random
inputs of wrong shapes, dtypes, non-finite values and extreme magnitudes.
Every call returns finite values of the right shape or raises ValueError
(URDFError is one); never another exception, a crash or silent garbage."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import robot_dynamics as rd
from robot_dynamics.tools.sample import random_urdf

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def models(draw):
    seed = draw(st.integers(0, 10**6))
    n = draw(st.integers(1, 9))
    mimic = draw(st.booleans())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_urdf(random_urdf(seed, n_links=n, mimic=mimic, p_fixed=draw(st.sampled_from([0.2, 0.9]))))


VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.floats(-1e6, 1e6), st.sampled_from([0.0, 1e300, -1e300, 1e-300]))


@st.composite
def states(draw, model):
    """A state-like argument: usually right, sometimes wrong in shape, dtype or value."""
    kind = draw(st.sampled_from(["good", "good", "batch", "short", "long", "scalar", "int", "complex", "text", "nested"]))
    nq = model.nq
    if kind == "good":
        return draw(hnp.arrays(np.float64, (nq,), elements=VALUES))
    if kind == "batch":
        b = draw(st.integers(1, 4))
        return draw(hnp.arrays(np.float64, (b, nq), elements=VALUES))
    if kind == "short":
        return np.zeros(max(nq - 1, 0) if nq else 1) if nq != 1 else np.zeros(2)
    if kind == "long":
        return np.zeros(nq + draw(st.integers(1, 3)))
    if kind == "scalar":
        return 0.5
    if kind == "int":
        return np.arange(nq, dtype=np.int32)
    if kind == "complex":
        return np.zeros(nq, dtype=complex)
    if kind == "text":
        return ["x"] * nq
    return [[0.0] * nq, [0.0] * (nq + 1)]                          # ragged


def _batch_shape(*args):
    """Broadcast batch shape of the state arguments, None when it is not defined."""
    try:
        return np.broadcast_shapes(*(a.shape[:-1] for a in args if isinstance(a, np.ndarray)))
    except (ValueError, IndexError):
        return None


def _check(result, shape):
    arrays = list(result.values()) if isinstance(result, dict) else [result]
    for a in arrays:
        a = np.asarray(a)
        if shape is not None:
            assert a.shape[:len(shape)] == shape, (a.shape, shape)
        assert np.all(np.isfinite(a))


def _call(f, shape_of, *args):
    try:
        result = f(*args)
    except ValueError:
        return
    _check(result, shape_of)


@SETTINGS
@given(st.data())
def test_every_function_returns_finite_results_or_raises_valueerror(data):
    model = data.draw(models())
    q, qd, x = (data.draw(states(model)) for _ in range(3))
    link = data.draw(st.sampled_from(model.link_names + ("no_such_link",)))
    for f, args in [(rd.rnea, (q, qd, x)), (rd.gravity_torques, (q,)), (rd.nonlinear_effects, (q, qd)),
                    (rd.mass_matrix, (q,)), (rd.aba, (q, qd, x)), (rd.coriolis_matrix, (q, qd)),
                    (rd.friction_torques, (qd,)), (rd.kinetic_energy, (q, qd)), (rd.potential_energy, (q,)),
                    (rd.forward_kinematics, (q,)), (rd.jacobian, (q, link))]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")                        # no RuntimeWarning garbage either
            _call(f, _batch_shape(*args), model, *args)


@SETTINGS
@given(st.data())
def test_external_wrenches_fuzzed(data):
    model = data.draw(models())
    nl = len(model.link_names)
    z = np.zeros(model.nq)
    f_ext = data.draw(st.one_of(
        hnp.arrays(np.float64, (nl, 6), elements=VALUES),
        hnp.arrays(np.float64, st.sampled_from([(nl, 5), (nl + 1, 6), (6,), (2, nl, 6)]), elements=st.floats(-1, 1)),
        st.dictionaries(st.sampled_from(model.link_names + ("ghost",)),
                        hnp.arrays(np.float64, st.sampled_from([(6,), (3,)]), elements=VALUES), max_size=3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _call(rd.rnea, (), model, z, z, z, f_ext)
        _call(rd.aba, (), model, z, z, z, f_ext)


@SETTINGS
@given(st.data())
def test_valid_inputs_always_succeed_and_agree(data):
    """Moderate finite inputs never raise, and the identities hold."""
    model = data.draw(models())
    el = st.floats(-3, 3)
    q, qd, qdd = (data.draw(hnp.arrays(np.float64, (model.nq,), elements=el)) for _ in range(3))
    tau = rd.rnea(model, q, qd, qdd)
    np.testing.assert_allclose(rd.mass_matrix(model, q) @ qdd + rd.nonlinear_effects(model, q, qd), tau,
                               rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(rd.aba(model, q, qd, tau), qdd, rtol=1e-6, atol=1e-6)


def test_robot_with_no_moving_joint():
    m = rd.load_urdf('<robot name="statue"><link name="a"/><link name="b"/><joint name="f" type="fixed">'
                     '<parent link="a"/><child link="b"/></joint></robot>')
    assert m.nq == 0
    z = np.zeros(0)
    assert rd.rnea(m, z, z, z).shape == (0,)
    assert rd.mass_matrix(m, z).shape == (0, 0)
    assert rd.aba(m, z, z, z).shape == (0,)
    assert rd.jacobian(m, z, "b").shape == (6, 0)
    assert rd.kinetic_energy(m, z, z) == 0.0
