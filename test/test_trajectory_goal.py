"""robot_dynamics.control.trajectory_goal: a FollowJointTrajectory goal judged as joint_trajectory_controller
(ros2_controllers, branch jazzy) judges it, without DDS.

Each refusal gives that controller's log text (validate_trajectory_msg in src/joint_trajectory_controller.cpp),
the tolerances resolve as its tolerances.hpp does (0 keeps the default, -1 erases it, another negative value
falls back to the defaults whole), and the tracker decides its outcome as its update() does: path tolerances
before the last point and at the first sample, goal tolerances after it, goal_time after that, then holds the
current position. The messages are trajectory_msgs / control_msgs Python types (no node, no DDS).
"""
import math

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTolerance
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.control import trajectory_goal as tg
from robot_dynamics.control.trajectory import TrajectorySampler

JOINTS = ['j1', 'j2']
Q0 = np.array([0.1, -0.2])


def duration(t):
    return Duration(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


def trajectory(points, names=JOINTS, stamp=0.0):
    """points: (t, positions[, velocities])."""
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = Time(sec=int(stamp), nanosec=int(round((stamp - int(stamp)) * 1e9)))
    for p in points:
        msg.points.append(JointTrajectoryPoint(time_from_start=duration(p[0]), positions=list(p[1]),
                                               velocities=list(p[2]) if len(p) > 2 else []))
    return msg


def good():
    return trajectory([(0.0, Q0), (1.0, [0.5, 0.3], [0.0, 0.0])])


# --- acceptance: the controller's texts, in its order --------------------------------------------------

@pytest.mark.parametrize('msg, text', [
    (trajectory([(0.0, [0.1])], names=['j1']), "Joints on incoming trajectory don't match the controller joints."),
    (trajectory([], names=['j1', 'j2']), 'Empty trajectory received.'),
    (trajectory([(0.0, Q0)], names=['j1', 'x']), "Incoming joint x doesn't match the controller's joints."),
    (trajectory([(0.0, Q0), (1.0, [0.5, 0.3], [0.0, 0.25])]),
     'Velocity of last trajectory point of joint j2 is not zero: 0.250000000000000'),
    (trajectory([(0.0, Q0), (1.0, [0.5, 0.3])], stamp=5.0),
     'Received trajectory with non-zero start time (5.000000) that ends in the past (6.000000)'),
    (trajectory([(0.0, Q0), (1.0, [0.5, 0.3]), (1.0, [0.6, 0.3])]),
     'Time between points 1 and 2 is not strictly increasing, it is 1.000000 and 1.000000 respectively'),
    (trajectory([(0.0, Q0), (1.0, [0.5])]), 'Mismatch between joint_names size (2) and positions (1) at point #1.'),
    (trajectory([(0.0, Q0, [0.0])]), 'Mismatch between joint_names size (2) and velocities (1) at point #0.'),
    (trajectory([(0.0, Q0)], names=['j1', 'j1']), 'joint_names names a joint twice: j1'),
    (trajectory([(0.0, Q0), (1.0, [0.5, math.nan])]), 'point 1: non-finite position of joint j2'),
    (trajectory([(0.0, [0.5, -0.2])]),
     'first point at time 0 is 0.400000 from the current position of joint j1, more than start_tolerance (0.100000)'),
], ids=['partial', 'no points', 'unknown joint', 'last velocity', 'ends in the past', 'times', 'positions size',
        'velocities size', 'twice', 'non-finite', 'start far'])
def test_refusals_give_the_controllers_text(msg, text):
    assert tg.goal_problem(msg, JOINTS, now_s=10.0, q=Q0, start_tolerance=0.1) == text


def test_empty_joint_names_of_a_controller_without_joints():
    assert tg.goal_problem(trajectory([(0.0, [])], names=[]), [], 0.0) == 'Empty joint names on incoming trajectory.'


def test_acceptance():
    assert tg.goal_problem(good(), JOINTS, 10.0, Q0, 0.1) is None
    # Any joint order; a start stamp in the future; a far first point that is reached in time (interpolated).
    assert tg.goal_problem(trajectory([(0.5, [0.3, 0.9])], names=['j2', 'j1'], stamp=20.0), JOINTS, 10.0, Q0, 0.1) is None
    # A jump at time 0 is the controller's behaviour when start_tolerance is 0.
    assert tg.goal_problem(trajectory([(0.0, [3.0, 3.0])]), JOINTS, 10.0, Q0, 0.0) is None


def test_from_current_state_interpolates_from_the_state_to_the_first_point():
    late = trajectory([(2.0, [0.3, 0.9], [0.0, 0.0])], names=['j2', 'j1'])
    full = tg.from_current_state(late, JOINTS, Q0, np.array([0.5, 0.0]))
    assert len(full.points) == 2 and len(late.points) == 1            # a copy; the goal is untouched
    assert list(full.points[0].positions) == [-0.2, 0.1] and list(full.points[0].velocities) == [0.0, 0.5]
    sampler = TrajectorySampler(JOINTS, full)
    q, qd, _ = sampler.sample(0.0)
    assert np.allclose(q, Q0) and np.allclose(qd, [0.5, 0.0])         # from the state, smoothly (cubic)
    assert np.allclose(sampler.sample(2.0)[0], [0.9, 0.3])
    assert tg.from_current_state(good(), JOINTS, Q0, np.zeros(2)) is not None
    assert len(tg.from_current_state(good(), JOINTS, Q0, np.zeros(2)).points) == 2   # first point at 0: kept


# --- tolerances -------------------------------------------------------------------------------------------

def defaults():
    return tg.default_tolerances(JOINTS, {'j1': 0.1}, {'j1': 0.01, 'j2': 0.02}, 0.01, 0.5)


def test_default_tolerances_are_the_parameters():
    d = defaults()
    assert d.path.tolist() == [[0.1, 0, 0], [0, 0, 0]]
    assert d.goal.tolist() == [[0.01, 0.01, 0], [0.02, 0.01, 0]]
    assert d.goal_time == 0.5


def test_a_goals_tolerances_replace_erase_or_keep_the_defaults():
    goal = FollowJointTrajectory.Goal(goal_time_tolerance=duration(2.0))
    goal.path_tolerance = [JointTolerance(name='j1', position=-1.0), JointTolerance(name='j2', position=0.3)]
    goal.goal_tolerance = [JointTolerance(name='j2', velocity=0.05)]
    tol, problem = tg.goal_tolerances(defaults(), goal, JOINTS)
    assert problem is None and tol.goal_time == 2.0
    assert tol.path.tolist() == [[0, 0, 0], [0.3, 0, 0]]              # -1 erased j1's 0.1
    assert tol.goal.tolist() == [[0.01, 0.01, 0], [0.02, 0.05, 0]]    # 0 kept j2's position tolerance


@pytest.mark.parametrize('field, tol, text', [
    ('path_tolerance', JointTolerance(name='x', position=0.1),
     "joint 'x' specified in goal.path_tolerance does not exist. Using default tolerances."),
    ('goal_tolerance', JointTolerance(name='j2', velocity=-2.0),
     "joint 'j2' specified in goal.goal_tolerance has a invalid velocity tolerance. Using default tolerances."),
])
def test_a_bad_tolerance_falls_back_to_the_defaults_whole(field, tol, text):
    goal = FollowJointTrajectory.Goal(goal_time_tolerance=duration(2.0))
    setattr(goal, field, [tol])
    got, problem = tg.goal_tolerances(defaults(), goal, JOINTS)
    assert problem == text and got is not None and got.goal_time == 0.5


def test_an_illegal_goal_time():
    goal = FollowJointTrajectory.Goal(goal_time_tolerance=Duration(sec=-3))
    got, problem = tg.goal_tolerances(defaults(), goal, JOINTS)
    assert problem == 'Specified illegal goal_time_tolerance: -3.000000. Using default tolerances' and got.goal_time == 0.5


# --- the tracker's outcome --------------------------------------------------------------------------------

class Arm:
    """The state the tracker checks: q, qd set by the test."""

    def __init__(self, q):
        self.q, self.qd = np.array(q, dtype=float), np.zeros(2)

    def __call__(self):
        return self.q, self.qd


def tracked(tolerances=None, msg=None):
    arm = Arm(Q0)
    tr = tg.tracker(msg or good(), JOINTS, tolerances or defaults(), arm, arm.q, arm.qd)
    return tr, arm


def test_following_the_path_exactly_succeeds_at_the_end_and_holds_the_last_point():
    tr, arm = tracked()
    for t in np.arange(0.0, 1.0, 0.01):
        arm.q[:] = tr.sampler.sample(t)[0]
        arm.qd[:] = tr.sampler.sample(t)[1]
        tr.sample(t)
        assert tr.outcome is None
    arm.q[:], arm.qd[:] = [0.5, 0.3], 0.0
    q_d, qd_d, _ = tr.sample(1.001)
    assert tr.outcome == tg.SUCCEEDED and tr.outcome.error_string == 'Goal successfully reached!'
    assert tr.outcome.error_code == FollowJointTrajectory.Result.SUCCESSFUL and not tr.held
    assert np.allclose(q_d, [0.5, 0.3]) and np.allclose(qd_d, 0.0)


def test_a_path_violation_aborts_and_holds_the_current_position():
    tr, arm = tracked()
    tr.sample(0.0)
    arm.q[1] += 0.05                    # j2 has no path tolerance: not checked
    tr.sample(0.1)
    assert tr.outcome is None
    arm.q[0] = tr.sampler.sample(0.2)[0][0] + 0.11      # j1 over its 0.1
    tr.sample(0.2)
    assert tr.outcome == tg.PATH_VIOLATED and list(tr.violated) == [0]
    assert (tr.outcome.error_code, tr.outcome.error_string) == (
        FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED, 'Aborted due to path tolerance violation')
    held = arm.q.copy()
    arm.q[:] += 1.0
    q_d, qd_d, qdd_d = tr.sample(0.5)
    assert np.array_equal(q_d, held) and not qd_d.any() and not qdd_d.any()


def test_after_the_end_the_goal_tolerance_is_waited_for_until_goal_time():
    tr, arm = tracked()
    arm.q[:] = [0.5 + 0.02, 0.3]        # outside j1's 0.01 goal tolerance
    tr.sample(1.2)                      # 0.2 s after the end, goal_time 0.5: still waiting
    assert tr.outcome is None
    tr.sample(1.6)
    assert tr.outcome.error_code == FollowJointTrajectory.Result.GOAL_TOLERANCE_VIOLATED
    assert tr.outcome.error_string == 'Aborted due to goal_time_tolerance exceeding by 0.600000 seconds'
    assert tr.held


def test_a_moving_arm_is_not_stopped_and_goal_time_zero_waits_without_end():
    tol = tg.default_tolerances(JOINTS, {}, {'j1': 0.01}, 0.01, 0.0)
    tr, arm = tracked(tol)
    arm.q[:], arm.qd[:] = [0.5, 0.3], [0.0, 0.02]       # in place, j2 still moving faster than 0.01 rad/s
    tr.sample(1.5)
    tr.sample(100.0)
    assert tr.outcome is None
    arm.qd[:] = 0.0
    tr.sample(100.01)
    assert tr.outcome == tg.SUCCEEDED


def test_the_first_sample_is_checked_against_the_path_even_past_the_end():
    """A one-point trajectory at time 0 is past its last point at once: the controller checks its path
    tolerance at the first sample all the same."""
    tr, arm = tracked(msg=trajectory([(0.0, [0.25, -0.2])]))
    tr.sample(0.0)
    assert tr.outcome == tg.PATH_VIOLATED


def test_hold_is_a_cancel():
    tr, arm = tracked(tg.default_tolerances(JOINTS, {}, {}, 0.01, 0.0))
    tr.sample(0.3)
    tr.hold(arm.q)
    q_d, qd_d, _ = tr.sample(0.9)
    assert np.array_equal(q_d, Q0) and not qd_d.any() and tr.outcome is None
    assert tg.CANCELED.canceled and not tg.CANCELED.succeeded
    assert (tg.PREEMPTED.error_code, tg.PREEMPTED.error_string) == (
        FollowJointTrajectory.Result.INVALID_GOAL, 'Current goal preempted by new incoming action.')


def test_result_codes_are_control_msgs():
    R = FollowJointTrajectory.Result
    assert (tg.SUCCESSFUL, tg.INVALID_GOAL, tg.INVALID_JOINTS, tg.OLD_HEADER_TIMESTAMP, tg.PATH_TOLERANCE_VIOLATED,
            tg.GOAL_TOLERANCE_VIOLATED) == (R.SUCCESSFUL, R.INVALID_GOAL, R.INVALID_JOINTS, R.OLD_HEADER_TIMESTAMP,
                                            R.PATH_TOLERANCE_VIOLATED, R.GOAL_TOLERANCE_VIOLATED)
