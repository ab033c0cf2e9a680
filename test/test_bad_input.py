"""Bad arguments raise ValueError saying what was expected and what came;
unusual but valid arrays (lists, ints, read-only, strided) just work."""
import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.tools.sample import random_urdf


@pytest.fixture(scope="module")
def model():
    return rd.load_urdf(random_urdf(5, n_links=6))


ALGOS = {
    "rnea": lambda m, x: rd.rnea(m, x, x, x),
    "gravity_torques": lambda m, x: rd.gravity_torques(m, x),
    "nonlinear_effects": lambda m, x: rd.nonlinear_effects(m, x, x),
    "mass_matrix": lambda m, x: rd.mass_matrix(m, x),
    "aba": lambda m, x: rd.aba(m, x, x, x),
    "coriolis_matrix": lambda m, x: rd.coriolis_matrix(m, x, x),
    "kinetic_energy": lambda m, x: rd.kinetic_energy(m, x, x),
    "potential_energy": lambda m, x: rd.potential_energy(m, x),
    "friction_torques": lambda m, x: rd.friction_torques(m, x),
    "forward_kinematics": lambda m, x: rd.forward_kinematics(m, x),
    "jacobian": lambda m, x: rd.jacobian(m, x, m.link_names[-1]),
}


@pytest.mark.parametrize("name", ALGOS)
def test_wrong_length_names_argument_and_sizes(model, name):
    bad = np.zeros(model.nq - 1)
    with pytest.raises(ValueError, match=r"(q|qd) has %d values, model nq is %d" % (model.nq - 1, model.nq)):
        ALGOS[name](model, bad)
    with pytest.raises(ValueError, match=r"shape \(2, %d\)" % (model.nq + 1)):
        ALGOS[name](model, np.zeros((2, model.nq + 1)))


@pytest.mark.parametrize("name", ALGOS)
def test_non_finite_input_is_named(model, name):
    x = np.zeros(model.nq)
    x[2] = np.nan
    with pytest.raises(ValueError, match=r"\[2\] is nan: inputs must be finite"):
        ALGOS[name](model, x)
    X = np.zeros((3, model.nq))
    X[1, 0] = np.inf
    with pytest.raises(ValueError, match=r"\[1, 0\] is inf"):
        ALGOS[name](model, X)


@pytest.mark.parametrize("name", ALGOS)
def test_non_numeric_input(model, name):
    with pytest.raises(ValueError, match="must be an array of (real )?numbers"):
        ALGOS[name](model, ["a"] * model.nq)


def test_lists_ints_readonly_and_strided_arrays_are_accepted(model):
    q = np.linspace(-1, 1, model.nq)
    expected = rd.rnea(model, q, q, q)
    ro = q.copy()
    ro.setflags(write=False)
    strided = np.repeat(q, 2)[::2]
    assert not strided.flags.c_contiguous
    for x in (list(q), tuple(q), ro, strided, q.astype(np.float32).astype(np.float64)):
        np.testing.assert_allclose(rd.rnea(model, x, x, x), expected, rtol=1e-12)
    np.testing.assert_allclose(rd.gravity_torques(model, np.zeros(model.nq, dtype=int)),
                               rd.gravity_torques(model, np.zeros(model.nq)))
    np.testing.assert_allclose(rd.mass_matrix(model, ro), rd.mass_matrix(model, q))


def test_read_only_and_broadcast_states_reach_the_kernels_in_the_compiled_form(model):
    """numba compiles a kernel once per layout and read-only flag of its arguments, and the
    set-up compiles C-contiguous writable states: a read-only or broadcast batch must reach the
    kernel in that form (no new specialisation, which would cost tens of seconds on first use)."""
    from robot_dynamics.algorithms import aba, rnea
    q = np.linspace(-1, 1, 3 * model.nq).reshape(3, model.nq)
    expected_tau, expected_qdd = rd.rnea(model, q, q, q), rd.aba(model, q, q, q)
    before = len(rnea.rnea_batch.signatures), len(aba.aba_batch.signatures)
    ro = q.copy()
    ro.setflags(write=False)
    row = np.broadcast_to(q[0], q.shape)                   # read-only, stride 0
    np.testing.assert_allclose(rd.rnea(model, ro, q, ro), expected_tau, rtol=1e-12)
    np.testing.assert_allclose(rd.rnea(model, row, row, row)[1], rd.rnea(model, q[0], q[0], q[0]), rtol=1e-12)
    np.testing.assert_allclose(rd.aba(model, ro, ro, q), expected_qdd, rtol=1e-12)
    np.testing.assert_allclose(rd.rnea(model, q, q[0], q[0]), rd.rnea(model, q, np.tile(q[0], (3, 1)),
                                                                     np.tile(q[0], (3, 1))), rtol=1e-12)
    assert (len(rnea.rnea_batch.signatures), len(aba.aba_batch.signatures)) == before, (
        "new kernel specialisations: %s, %s" % (rnea.rnea_batch.signatures, aba.aba_batch.signatures))


def test_unknown_link_lists_the_valid_names(model):
    with pytest.raises(ValueError, match="unknown link 'hand'; the model's links are: base, link1"):
        rd.jacobian(model, np.zeros(model.nq), "hand")
    with pytest.raises(ValueError, match="unknown link 'hand'"):
        rd.rnea(model, np.zeros(model.nq), np.zeros(model.nq), np.zeros(model.nq), {"hand": np.zeros(6)})


def test_bad_wrenches(model):
    z = np.zeros(model.nq)
    with pytest.raises(ValueError, match=r"f_ext\['link1'\] must be a wrench of 6 values"):
        rd.rnea(model, z, z, z, {"link1": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"f_ext must have shape \(\.\.\., %d, 6\)" % len(model.link_names)):
        rd.rnea(model, z, z, z, np.zeros((2, 6)))
    with pytest.raises(ValueError, match="f_ext batch shape"):
        rd.rnea(model, np.zeros((3, model.nq)), z, z, np.zeros((2, len(model.link_names), 6)))


def test_bad_point_gravity_and_broadcast(model):
    z = np.zeros(model.nq)
    with pytest.raises(ValueError, match="point must be 3 finite numbers"):
        rd.jacobian(model, z, "link1", point=(0, 1))
    with pytest.raises(ValueError, match="gravity must be 3 finite numbers"):
        model.with_gravity((0, 0, np.nan))
    with pytest.raises(AttributeError, match="immutable: use model = model.with_gravity"):
        model.gravity = (0, 0, -1.0)
    np.testing.assert_array_equal(model.gravity, [0, 0, -9.81])
    with pytest.raises(ValueError, match="do not broadcast"):
        rd.rnea(model, np.zeros((2, model.nq)), np.zeros((3, model.nq)), z)
    with pytest.raises(ValueError, match="smoothing"):
        rd.friction_torques(model, z, smoothing=-1)


def test_model_arrays_are_read_only(model):
    with pytest.raises(ValueError):
        model.effort_limit[0] = 1.0
    for name in ("packed", "parent", "joint_type", "axis", "joint_placement", "body_mass", "body_com",
                 "body_inertia", "spatial_inertia", "body_parameters", "coupling", "link_body",
                 "link_placement", "link_mass", "link_com", "link_inertia", "body_link"):
        a = getattr(model, name)
        with pytest.raises(ValueError):
            a.flat[0] = 1.0


def test_singular_forward_dynamics_is_reported():
    urdf = ('<robot name="x"><link name="a"/><link name="b"/>'
            '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
            '<limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>')
    m = rd.load_urdf(urdf)
    with pytest.raises(ValueError, match="singular: a moving joint of 'x' carries no mass"):
        rd.aba(m, [0.0], [0.0], [1.0])


@pytest.mark.parametrize("bad", [np.zeros(3, dtype=complex), np.array(["1", "2", "3"]), np.ones(3, dtype=bool)])
def test_complex_text_and_bool_arrays_are_refused_not_cast(model, bad):
    x = np.resize(bad, model.nq)
    with pytest.raises(ValueError, match="must be an array of real numbers"):
        rd.gravity_torques(model, x)
