"""dynamics_node's tracking law without DDS (issue 36, point 2): the computed torque of the torque pipeline
(robot_dynamics.control.build, mode computed_torque) against the library's rnea on the bundled Panda.

- gains per joint, named by ``joints`` in the controller's order, reach the right model joints;
- a vendor profile that compensates gravity (Franka, UR) gets the law without the robot's own g(q), and
  with a payload only the node knows, without the robot's g only (the payload's gravity stays in);
  ``tracking_friction`` with a robot that compensates friction is refused (it would be commanded twice);
- the effort limits clamp the computed torque as in the other modes;
- after the end of a trajectory the reference is its last point at rest: the law is
  ``M(q) (Kp (q_end - q) - Kd qd) + h(q, qd)`` (a cancelled FollowJointTrajectory goal holds the current
  position: the action's own tests).
The watchdog is the same for every mode (it acts on joint states that give no torque, whatever the law):
test/ros/test_ros_watchdog_holds.py and test_ros_watchdog_timing.py.
"""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from builtin_interfaces.msg import Duration

import robot_dynamics as rd
from robot_dynamics import control
from robot_dynamics.control import profiles
from robot_dynamics.control.compensation import COMPUTED_TORQUE
from robot_dynamics.control.settings import PipelineSettings
from robot_dynamics.control.trajectory import TrajectorySampler

ROOT = Path(__file__).resolve().parents[1]
PANDA = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'))
NAMES = list(PANDA.joint_names)
Q = np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.6, 0.7])
QD = np.array([0.03, -0.02, 0.04, 0.01, -0.05, 0.02, 0.06])    # [rad/s]: the laws stay within the limits
ORDER = [3, 0, 6, 2, 5, 1, 4]                        # the controller's joints: a permutation of the model's
KP = np.array([400.0, 900.0, 100.0, 2500.0, 225.0, 625.0, 1600.0])     # [1/s^2] in the order of ORDER
KD = 2.0 * np.sqrt(KP)                                                 # [1/s] critically damped
S = 1_000_000_000                                   # [ns] one second


def ct_settings(**kw):
    return PipelineSettings(mode=COMPUTED_TORQUE, joints=tuple(NAMES[i] for i in ORDER), kp=tuple(KP),
                            kd=tuple(KD), friction_smoothing=0.0, diagnostic_torque_rate=-1, **kw)


def model_order(gains):
    """(7,) per-joint gains given in the order of ORDER, in the model's order."""
    out = np.empty(7)
    out[ORDER] = gains
    return out


def motion(q0, q1, duration=1.0):
    """A JointTrajectory from q0 to q1 (positions only) over ``duration`` s, in the controller's order."""
    msg = JointTrajectory(joint_names=[NAMES[i] for i in ORDER])
    msg.points = [JointTrajectoryPoint(positions=q0[ORDER].tolist(), time_from_start=Duration()),
                  JointTrajectoryPoint(positions=q1[ORDER].tolist(), time_from_start=Duration(sec=int(duration)))]
    return msg


def step(loop, now_ns, q=Q, qd=QD):
    return loop.step(NAMES, q, qd, now_ns, now_ns)


def test_per_joint_gains_follow_the_names_of_joints():
    loop = control.build(PANDA, ct_settings())
    np.testing.assert_array_equal(loop.laws.kp, model_order(KP))
    np.testing.assert_array_equal(loop.laws.kd, model_order(KD))
    q0, q1 = Q - 0.005, Q + np.linspace(-0.01, 0.01, 7)
    loop.set_reference(TrajectorySampler(NAMES, motion(q0, q1)), 0)
    result = step(loop, S // 2)                     # half way: q_d, qd_d of the linear segment
    q_d, qd_d = 0.5 * (q0 + q1), q1 - q0
    a = model_order(KD) * (qd_d - QD) + model_order(KP) * (q_d - Q)
    want = rd.rnea(PANDA, Q, QD, a)
    assert not result.clamped
    np.testing.assert_allclose(result.torques['ct'], want, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(result.command, want[ORDER], rtol=1e-12, atol=1e-9)     # the command's order
    # Each joint's gain acts on its own error only: an error on one joint moves M(q) times its gain.
    e = np.zeros(7)
    e[ORDER[2]] = 1e-3
    loop.set_reference(TrajectorySampler(NAMES, motion(Q + e, Q + e)), 0)
    got = step(loop, 2 * S, qd=np.zeros(7)).torques['ct'] - rd.gravity_torques(PANDA, Q)
    np.testing.assert_allclose(got, rd.mass_matrix(PANDA, Q)[:, ORDER[2]] * KP[2] * 1e-3, rtol=1e-9, atol=1e-12)


def test_a_robot_that_compensates_gravity_gets_the_law_without_its_own_gravity():
    loop = control.build(PANDA, ct_settings(robot_compensates_gravity='true', robot_compensates_friction='true'))
    loop.set_reference(TrajectorySampler(NAMES, motion(Q, Q + 0.02)), 0)
    result = step(loop, S // 4)
    q_d, qd_d = Q + 0.005, np.full(7, 0.02)
    assert not result.clamped
    law = rd.rnea(PANDA, Q, QD, model_order(KD) * (qd_d - QD) + model_order(KP) * (q_d - Q))
    np.testing.assert_allclose(result.torques['ct'], law, rtol=1e-12, atol=1e-9)     # ~/computed_torque: the law
    np.testing.assert_allclose(result.command, (law - rd.gravity_torques(PANDA, Q))[ORDER], rtol=1e-12, atol=1e-9)


def test_a_payload_only_the_node_knows_keeps_its_gravity_in_the_command():
    payload = ('panda_hand', 1.5, (0.0, 0.0, 0.1), np.eye(3) * 0.0025)
    loaded = PANDA.with_payload(*payload)
    loop = control.build(loaded, ct_settings(robot_compensates_gravity='true', robot_compensates_friction='true'),
                         base_model=PANDA, payloads={'panda_hand': payload[1:]})
    loop.set_reference(TrajectorySampler(NAMES, motion(Q, Q)), 0)
    result = step(loop, 2 * S)
    law = rd.rnea(loaded, Q, QD, model_order(KD) * (0.0 - QD))
    robot_adds = rd.gravity_torques(PANDA, Q)                   # the robot's model has no payload
    np.testing.assert_allclose(result.command + robot_adds[ORDER], law[ORDER], rtol=1e-12, atol=1e-9)
    assert np.abs(rd.gravity_torques(loaded, Q) - robot_adds).max() > 1.0      # [N m]: the payload's share


def p_of(**kw):
    base = dict(robot_compensates_gravity='true', robot_compensates_friction='true', publish_command=True,
                mode=COMPUTED_TORQUE, tracking_friction=False)
    return SimpleNamespace(**dict(base, **kw))


@pytest.mark.parametrize('mode', ['computed_torque', 'feedforward'])
def test_tracking_friction_on_a_robot_that_compensates_friction_is_refused(mode):
    """The law with tracking_friction adds the friction laws, which CommandTerms does not take out (it takes
    out the compensation's friction of gravity_coriolis_friction): measured, not only refused."""
    p = p_of(mode=mode, tracking_friction=True)
    text = profiles.tracking_friction_problem(p.mode, p.tracking_friction, p.robot_compensates_friction,
                                              p.publish_command)
    assert 'robot_compensates_friction true' in text and 'tracking_friction false' in text and mode in text
    for other in (dict(tracking_friction=False), dict(robot_compensates_friction='false'),
                  dict(publish_command=False), dict(mode='gravity_coriolis')):
        q = p_of(**dict(dict(mode=mode, tracking_friction=True), **other))
        assert profiles.tracking_friction_problem(q.mode, q.tracking_friction, q.robot_compensates_friction,
                                                  q.publish_command) is None, other
    # Why: built anyway, the command would keep the friction the robot adds itself.
    loop = control.build(PANDA, ct_settings(robot_compensates_gravity='true', robot_compensates_friction='true',
                                            tracking_friction=True))
    loop.set_reference(TrajectorySampler(NAMES, motion(Q, Q)), 0)
    result = step(loop, 2 * S)
    without = rd.rnea(PANDA, Q, QD, model_order(KD) * (0.0 - QD)) - rd.gravity_torques(PANDA, Q)
    np.testing.assert_allclose(result.command - without[ORDER],
                               rd.friction_torques(PANDA, QD, smoothing=0.0)[ORDER], rtol=1e-9, atol=1e-12)


def test_the_node_refuses_tracking_friction_on_a_robot_that_compensates_friction():
    from robot_dynamics.ros import dynamics_params
    from robot_dynamics.errors import ParameterError
    from test_param_files import DYNAMICS, declare
    p = declare(DYNAMICS)
    p.mode, p.tracking_friction, p.publish_command = COMPUTED_TORQUE, True, True
    p.robot_compensates_gravity = p.robot_compensates_friction = 'true'
    with pytest.raises(ParameterError, match='tracking_friction true adds the friction laws'):
        dynamics_params.validate(p, lambda text: None)
    p.tracking_friction = False
    dynamics_params.validate(p, lambda text: None)


def test_the_computed_torque_is_clamped_to_the_effort_limits():
    loop = control.build(PANDA, ct_settings(effort_limit_scale=0.5))
    far = Q + np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0])
    loop.set_reference(TrajectorySampler(NAMES, motion(far, far)), 0)
    result = step(loop, 2 * S)
    limit = 0.5 * PANDA.effort_limit
    law = rd.rnea(PANDA, Q, QD, model_order(KD) * (0.0 - QD) + model_order(KP) * (far - Q))
    assert result.clamped and np.any(np.abs(law) > limit)
    np.testing.assert_allclose(result.command, np.clip(law, -limit, limit)[ORDER], rtol=1e-12)


def test_after_the_end_the_reference_is_the_last_point_at_rest():
    q1 = Q + 0.01
    sampler = TrajectorySampler(NAMES, motion(Q, q1))
    for t in (1.0, 1.5, 100.0):                                  # the end and after it
        q_d, qd_d, qdd_d = (x.copy() for x in sampler.sample(t))
        np.testing.assert_allclose(q_d, q1, rtol=0, atol=1e-15)
        assert not qd_d.any() and not qdd_d.any()
    loop = control.build(PANDA, ct_settings())
    loop.set_reference(sampler, 0)
    law = rd.rnea(PANDA, Q, QD, model_order(KD) * (0.0 - QD) + model_order(KP) * (q1 - Q))
    np.testing.assert_allclose(step(loop, 3 * S).torques['ct'], law, rtol=1e-12, atol=1e-9)
