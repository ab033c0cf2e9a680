"""The base state of floating and planar robots to and from nav_msgs/Odometry, and the
torque laws on the full state (robot_dynamics.control.base_state, .base_compensation): no DDS.

Golden cases (an identity pose gives the neutral root; a yawed planar pose
gives theta), round trips through the simulator's Odometry values (also
with a placed root joint), what is refused and why, staleness, and the
laws against the library's own calls on the full state.
"""
import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError
from robot_dynamics.control import base_compensation as BC
from robot_dynamics.control import base_state as B
from robot_dynamics.control.compensation import GRAVITY_CORIOLIS_FRICTION, Compensation

from conftest import ROOT, odometry

URDF = (ROOT / 'test' / 'data' / 'mobile_manipulator.urdf').read_text()
FLOATING = rd.load_urdf(URDF)
PLANAR = rd.load_urdf(URDF.replace('type="floating"', 'type="planar"'))
# The same robot with its root joint placed (0.1, -0.2, 0.3) and turned 0.4 rad about z.
PLACED = rd.load_urdf(URDF.replace('<child link="base_link"/>\n  </joint>',
                                   '<child link="base_link"/>\n    <origin xyz="0.1 -0.2 0.3" rpy="0 0 0.4"/>\n'
                                   '  </joint>', 1))
PLACED_PLANAR = rd.load_urdf(URDF.replace('type="floating"', 'type="planar"').replace(
    '<child link="base_link"/>\n  </joint>',
    '<child link="base_link"/>\n    <origin xyz="0.1 -0.2 0.3" rpy="0 0 0.4"/>\n  </joint>', 1))
TOL = 1e-12



def yaw_quaternion(yaw):
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def random_state(model, rng):
    q = model.neutral()
    if model.root_joint == 'floating':
        quat = rng.normal(size=4)
        q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
    else:
        q[:3] = rng.uniform(-2, 2, 3)
    q[model.root_nq:] = rng.uniform(-1, 1, len(model.joint_names))
    return q, rng.normal(size=model.nv)


def test_the_base_link_is_the_link_the_root_joint_moves():
    assert FLOATING.base_link == 'world'                  # the URDF's root link
    assert B.base_link(FLOATING) == B.base_link(PLANAR) == 'base_link'
    by_argument = rd.load_urdf(URDF.replace('<link name="world"/>', '').replace(
        '<joint name="base_free" type="floating">\n    <parent link="world"/>\n    <child link="base_link"/>\n'
        '  </joint>', ''), root_joint='floating')
    assert by_argument.base_link == B.base_link(by_argument) == 'base_link'
    with pytest.raises(InputError, match='fixed base'):
        B.base_link(rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf')))


def test_floating_golden_case_is_the_message_itself():
    quat = np.array([0.1, -0.2, 0.3, 0.9])
    quat /= np.linalg.norm(quat)
    q, v = B.odometry_state(FLOATING, odometry((1, 2, 3), quat, (0.1, 0.2, 0.3), (-0.4, 0.5, -0.6)), 'base_link')
    np.testing.assert_array_equal(q, np.r_[1, 2, 3, quat])
    np.testing.assert_array_equal(v, [0.1, 0.2, 0.3, -0.4, 0.5, -0.6])


def test_planar_golden_case_keeps_x_y_yaw_and_the_in_plane_twist():
    q, v = B.odometry_state(PLANAR, odometry((1.5, -0.5, 0.0), yaw_quaternion(2.5), (0.3, -0.1, 0.002),
                                             (0.003, -0.004, 0.7)), 'base_link')
    np.testing.assert_allclose(q, [1.5, -0.5, 2.5], atol=TOL)
    np.testing.assert_array_equal(v, [0.3, -0.1, 0.7])   # vz, wx, wy dropped: the plane has no such motion


@pytest.mark.parametrize('model', [FLOATING, PLANAR, PLACED, PLACED_PLANAR], ids=['floating', 'planar',
                                                                                'placed', 'placed_planar'])
def test_odometry_values_and_root_state_are_inverse(model):
    rng = np.random.default_rng(3)
    for _ in range(20):
        q, v = random_state(model, rng)
        position, quat, linear, angular = B.odometry_values(model, q, v)
        R, p = rd.model.configuration.base_pose(model, q)
        np.testing.assert_allclose(position, p, atol=TOL)               # the base in the fixed frame
        np.testing.assert_allclose(rd.model.configuration.quaternion_matrix(quat), R, atol=TOL)
        q_root, v_root = B.root_state(model, position, quat, linear, angular)
        if model.root_joint == 'floating':
            same_sign = np.sign(q_root[6] * q[6]) or 1.0              # q and -q: the same pose
            np.testing.assert_allclose(q_root, np.r_[q[:3], same_sign * q[3:7]], atol=1e-10)
        else:
            np.testing.assert_allclose(q_root[:2], q[:2], atol=1e-10)
            assert abs(math.remainder(q_root[2] - q[2], 2 * math.pi)) < 1e-10
        np.testing.assert_allclose(v_root, v[:model.root_nv], atol=TOL)


def test_odometry_twist_is_the_base_frame_velocity():
    """Odometry's twist is v's root part: the world velocity of the base origin is R v_lin."""
    q, v = random_state(FLOATING, np.random.default_rng(5))
    _, quat, linear, _ = B.odometry_values(FLOATING, q, v)
    dt = 1e-6
    q1 = rd.integrate(FLOATING, q, v, dt)
    R = rd.model.configuration.quaternion_matrix(quat)
    np.testing.assert_allclose((q1[:3] - q[:3]) / dt, R @ linear, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('msg, words', [
    (odometry(child='base_footprint'), "child_frame_id is 'base_footprint'; expected 'base_link'"),
    (odometry(child=''), "child_frame_id is ''; expected 'base_link'"),
    (odometry(position=(float('nan'), 0, 0)), 'pose.position has a non-finite value'),
    (odometry(orientation=(0, 0, 0, 0)), 'has norm 0; expected a unit quaternion (norm within 0.01 of 1)'),
    (odometry(orientation=(0, 0, 0, float('inf'))), 'pose.orientation has a non-finite value'),
    (odometry(orientation=(0, 0, 0, 1.02)), 'has norm 1.02; expected a unit quaternion'),
    (odometry(linear=(0, float('inf'), 0)), 'twist.linear has a non-finite value'),
    (odometry(angular=(0, 0, float('nan'))), 'twist.angular has a non-finite value'),
])
def test_bad_odometry_is_refused_saying_what_is_wrong(msg, words):
    for model in (FLOATING, PLANAR):
        with pytest.raises(InputError) as info:
            B.odometry_state(model, msg, 'base_link')
        assert words in str(info.value), str(info.value)


def test_a_near_unit_quaternion_is_normalised():
    q, _ = B.odometry_state(FLOATING, odometry(orientation=(0, 0, 0.3, 1.0 * 0.96)), 'base_link')
    n = math.hypot(0.3, 0.96)
    assert abs(n - 1) < 1e-2
    np.testing.assert_allclose(q[3:], [0, 0, 0.3 / n, 0.96 / n], atol=TOL)


@pytest.mark.parametrize('pose, words', [
    (dict(orientation=(math.sin(0.01), 0, 0, math.cos(0.01))), 'tilted by 0.02 rad'),     # roll 0.02 rad
    (dict(position=(1.0, 2.0, 0.05)), '0.05 m off'),
])
def test_a_pose_out_of_the_plane_is_refused_for_a_planar_base(pose, words):
    with pytest.raises(InputError, match='not in the plane of the planar base') as info:
        B.odometry_state(PLANAR, odometry(**pose), 'base_link')
    assert words in str(info.value)
    # Within the tolerance: projected onto the plane.
    c, s = math.cos(0.6), math.sin(0.6)
    yawed_and_rolled = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.array(
        [[1, 0, 0], [0, math.cos(0.004), -math.sin(0.004)], [0, math.sin(0.004), math.cos(0.004)]])
    quat = rd.model.configuration.matrix_quaternion(yawed_and_rolled)
    q, _ = B.odometry_state(PLANAR, odometry(orientation=quat, position=(1.0, 2.0, 0.005)), 'base_link')
    np.testing.assert_allclose(q, [1.0, 2.0, 0.6], atol=TOL)


def test_base_state_tracks_freshness_and_keeps_the_last_good_state():
    base = B.BaseState(FLOATING, timeout_ns=100_000_000)
    assert not base.fresh(0) and base.age(0) == math.inf
    assert base.update(odometry((1, 2, 3), linear=(0.5, 0, 0)), now_ns=1_000_000_000) is None
    assert base.fresh(1_100_000_000) and not base.fresh(1_100_000_001)
    assert base.age(1_050_000_000) == pytest.approx(0.05)
    problem = base.update(odometry((float('nan'), 0, 0)), now_ns=1_050_000_000)
    assert 'non-finite' in problem and base.problem == problem
    assert (base.accepted, base.rejected) == (1, 1)
    np.testing.assert_array_equal(base.q, [1, 2, 3, 0, 0, 0, 1])              # unchanged by the bad one
    assert base.received_ns == 1_000_000_000 and base.fixed_frame == 'odom'
    base.forget()
    assert not base.fresh(1_000_000_001)


@pytest.mark.parametrize('model', [FLOATING, PLANAR], ids=['floating', 'planar'])
def test_laws_on_the_full_state_are_the_library_joint_parts(model):
    rng = np.random.default_rng(11)
    r = model.root_nv
    comp = BC.FullStateCompensation(model, GRAVITY_CORIOLIS_FRICTION, 0.01)
    for _ in range(5):
        q, v = random_state(model, rng)
        qs, vs = comp.state(q[:model.root_nq], v[:r], q[model.root_nq:], v[r:])
        np.testing.assert_array_equal(qs, q)
        np.testing.assert_array_equal(vs, v)
        comp.compute(qs, vs)
        g = rd.gravity_torques(model, q)
        h = rd.nonlinear_effects(model, q, v)
        f = rd.friction_torques(model, v, smoothing=0.01)
        np.testing.assert_allclose(comp.gravity, g[r:], rtol=0, atol=1e-12)
        np.testing.assert_allclose(comp.coriolis, (h - g)[r:], rtol=0, atol=1e-12)
        np.testing.assert_allclose(comp.total, (h + f)[r:], rtol=0, atol=1e-12)
        # Feedforward and computed torque: the base's acceleration zero.
        q_d, qd_d, qdd_d = (rng.normal(size=len(model.joint_names)) for _ in range(3))
        kp, kd = np.full(len(q_d), 100.0), np.full(len(q_d), 20.0)
        qf, vf = q.copy(), v.copy()
        qf[model.root_nq:], vf[r:] = q_d, qd_d
        a = np.r_[np.zeros(r), qdd_d]
        np.testing.assert_allclose(BC.feedforward(model, q, v, q_d, qd_d, qdd_d), rd.rnea(model, qf, vf, a)[r:],
                                   atol=1e-12)
        a[r:] = qdd_d + kd * (qd_d - v[r:]) + kp * (q_d - q[model.root_nq:])
        np.testing.assert_allclose(BC.computed_torque(model, q, v, q_d, qd_d, qdd_d, kp, kd),
                                   rd.rnea(model, q, v, a)[r:], atol=1e-10)


def test_on_a_level_base_at_rest_the_laws_equal_the_fixed_base_ones():
    """A floating robot whose base is level and at rest needs the joint torques of the same
    robot bolted to the ground: the identity that ties the two kinds of model together."""
    fixed = rd.load_urdf(URDF.replace('type="floating"', 'type="fixed"'))
    assert fixed.root_joint is None and fixed.joint_names == FLOATING.joint_names
    rng = np.random.default_rng(2)
    joints, rates = rng.uniform(-1, 1, 3), rng.normal(size=3)
    full = BC.FullStateCompensation(FLOATING, GRAVITY_CORIOLIS_FRICTION, 0.01)
    full.compute(*full.state([0.3, -0.2, 0.1, 0, 0, 0, 1], np.zeros(6), joints, rates))
    plain = Compensation(fixed, GRAVITY_CORIOLIS_FRICTION, 0.01)
    plain.compute(joints, rates)
    for name in ('gravity', 'coriolis', 'total'):
        np.testing.assert_allclose(getattr(full, name), getattr(plain, name), atol=1e-12)
