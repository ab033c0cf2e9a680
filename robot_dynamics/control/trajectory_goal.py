"""A FollowJointTrajectory goal judged as ros2_controllers' joint_trajectory_controller judges it (no DDS needed).

The decisions of joint_trajectory_controller (branch ``jazzy``), point by point (docs/NODES.md,
"The FollowJointTrajectory action"):

- :func:`goal_problem`: whether a goal's trajectory is refused, with the text that controller logs
  (``validate_trajectory_msg`` in src/joint_trajectory_controller.cpp), then this node's own checks
  (a joint named twice, a non-finite value, a first point at time 0 far from the current position).
- :func:`default_tolerances` and :func:`goal_tolerances`: the tolerances of the parameters
  (``constraints.*``) and of the goal (``path_tolerance``, ``goal_tolerance``, ``goal_time_tolerance``,
  ``get_segment_tolerances`` and ``resolve_tolerance_source`` in include/.../tolerances.hpp).
- :func:`from_current_state`: the current state put before the trajectory when its first point is later
  than its start (``Trajectory::set_point_before_trajectory_msg`` in src/trajectory.cpp).
- :class:`TrajectoryTracker`: the sampler the torque loop follows, which checks the path tolerances
  while the trajectory runs and the goal tolerances after its last point, at every joint state
  (``update`` in joint_trajectory_controller.cpp), decides the outcome (a :class:`Outcome`: the result's
  error code and string), and then holds the current position.

Units: positions [rad or m], velocities [rad/s or m/s], times [s]. Arrays are (n,) in the order of the
controller's joints (the model joints the node commands).
"""
import copy
import math
from typing import NamedTuple

import numpy as np

from .trajectory import TrajectorySampler

#: control_msgs/action/FollowJointTrajectory's Result error codes.
SUCCESSFUL = 0
INVALID_GOAL = -1
INVALID_JOINTS = -2
OLD_HEADER_TIMESTAMP = -3
PATH_TOLERANCE_VIOLATED = -4
GOAL_TOLERANCE_VIOLATED = -5

#: The result strings joint_trajectory_controller writes (jazzy, src/joint_trajectory_controller.cpp).
SUCCESS_TEXT = 'Goal successfully reached!'
PATH_TEXT = 'Aborted due to path tolerance violation'
PREEMPTED_TEXT = 'Current goal preempted by new incoming action.'
#: This node's own: a message on ~/trajectory or ~/reference replaced the goal's trajectory.
REPLACED_TEXT = 'Current goal preempted by a trajectory on ~/trajectory or ~/reference.'

#: float's epsilon, with which the controller compares a tolerance to -1 and a last velocity to 0.
FLOAT_EPSILON = float(np.finfo(np.float32).eps)


class Outcome(NamedTuple):
    """How a goal ended: the Result's ``error_code`` and ``error_string``; ``canceled`` for a cancel (an
    empty Result, status CANCELED); ``succeeded`` for status SUCCEEDED, else ABORTED."""
    error_code: int
    error_string: str
    canceled: bool = False

    @property
    def succeeded(self):
        return self.error_code == SUCCESSFUL and not self.canceled


SUCCEEDED = Outcome(SUCCESSFUL, SUCCESS_TEXT)
PATH_VIOLATED = Outcome(PATH_TOLERANCE_VIOLATED, PATH_TEXT)
PREEMPTED = Outcome(INVALID_GOAL, PREEMPTED_TEXT)
REPLACED = Outcome(INVALID_GOAL, REPLACED_TEXT)
CANCELED = Outcome(SUCCESSFUL, '', canceled=True)


def goal_time_exceeded(time_difference):
    """The result of a goal outside its goal tolerance ``time_difference`` [s] after its last point, later
    than goal_time_tolerance (the controller's ``std::to_string``: six decimals)."""
    return Outcome(GOAL_TOLERANCE_VIOLATED,
                   'Aborted due to goal_time_tolerance exceeding by %f seconds' % time_difference)


def seconds(duration):
    """builtin_interfaces Duration or Time [s]."""
    return duration.sec + duration.nanosec * 1e-9


# --- acceptance ------------------------------------------------------------------------------------------

def goal_problem(trajectory, joints, now_s, q=None, start_tolerance=0.0):
    """Why a trajectory is refused (the goal rejected, the topic message ignored), or None.

    Args:
        trajectory: trajectory_msgs/JointTrajectory (or alike: joint_names, header.stamp, points).
        joints: the controller's joints (every one must be in the trajectory: no partial goals, the
            controller's default ``allow_partial_joints_goal: false``).
        now_s: the node clock's time [s] (a trajectory with a start stamp that ends before it is refused).
        q: (n,) the current positions, or None (then the start is not checked).
        start_tolerance: [rad or m] a first point at time 0 farther than this from ``q`` is refused
            (0: not checked, the controller's behaviour).

    Returns:
        None, or the text: joint_trajectory_controller's own log message for its checks, in its order
        (joint count, empty names, no points, unknown joint, last velocity, end in the past, times, array
        sizes), then this node's (a joint named twice, non-finite values, the start).
    """
    names = list(trajectory.joint_names)
    points = trajectory.points
    if len(names) != len(joints):
        return "Joints on incoming trajectory don't match the controller joints."
    if not names:
        return 'Empty joint names on incoming trajectory.'
    if not len(points):
        return 'Empty trajectory received.'
    for name in names:
        if name not in joints:
            return "Incoming joint %s doesn't match the controller's joints." % name
    last = points[-1].velocities
    for i, v in enumerate(last):
        if abs(v) > FLOAT_EPSILON:
            return 'Velocity of last trajectory point of joint %s is not zero: %.15f' % (names[i], v)
    start = seconds(trajectory.header.stamp)
    if start != 0.0 and start + seconds(points[-1].time_from_start) < now_s:
        return ('Received trajectory with non-zero start time (%f) that ends in the past (%f)'
                % (start, start + seconds(points[-1].time_from_start)))
    previous = 0.0
    for i, point in enumerate(points):
        t = seconds(point.time_from_start)
        if i > 0 and t <= previous:
            return ('Time between points %d and %d is not strictly increasing, it is %f and %f respectively'
                    % (i - 1, i, previous, t))
        previous = t
        for label, values, empty_ok in (('positions', point.positions, False),
                                        ('velocities', point.velocities, True),
                                        ('accelerations', point.accelerations, True)):
            if not (empty_ok and not len(values)) and len(values) != len(names):
                return ('Mismatch between joint_names size (%d) and %s (%d) at point #%d.'
                        % (len(names), label, len(values), i))
    if len(set(names)) != len(names):
        return 'joint_names names a joint twice: %s' % ', '.join(sorted({n for n in names if names.count(n) > 1}))
    for i, point in enumerate(points):
        for label, values in (('position', point.positions), ('velocity', point.velocities),
                              ('acceleration', point.accelerations)):
            bad = [names[k] for k, v in enumerate(values) if not math.isfinite(v)]
            if bad:
                return 'point %d: non-finite %s of joint %s' % (i, label, bad[0])
    if q is not None and start_tolerance > 0 and seconds(points[0].time_from_start) == 0.0:
        index = {n: k for k, n in enumerate(names)}
        for j, name in enumerate(joints):
            gap = abs(points[0].positions[index[name]] - q[j])
            if gap > start_tolerance:
                return ('first point at time 0 is %f from the current position of joint %s, more than '
                        'start_tolerance (%f)' % (gap, name, start_tolerance))
    return None


def from_current_state(trajectory, joints, q, qd):
    """The trajectory to follow: ``trajectory`` itself if its first point is at time 0, else a copy with the
    current state (``q``, ``qd``: (n,) in the order of ``joints``) put before it at time 0, as the
    controller interpolates from the state at its first sample to the first point (accelerations 0, and
    velocities only if the first point gives them: the interpolation's order is that of every point)."""
    first = trajectory.points[0]
    if seconds(first.time_from_start) != 0.0:
        order = [list(joints).index(n) for n in trajectory.joint_names]
        start = copy.deepcopy(first)
        start.time_from_start = type(first.time_from_start)()
        start.positions = [float(q[k]) for k in order]
        start.velocities = [float(qd[k]) for k in order] if len(first.velocities) else []
        start.accelerations = [0.0] * len(order) if len(first.accelerations) else []
        start.effort = []
        trajectory = copy.copy(trajectory)
        trajectory.points = [start] + list(trajectory.points)
    return trajectory


# --- tolerances ------------------------------------------------------------------------------------------

class Tolerances(NamedTuple):
    """The tolerances of a goal. ``path`` and ``goal``: (n, 3) [position, velocity, acceleration] per
    joint, 0 where none applies; ``goal_time`` [s], 0: the goal tolerance is waited for without end."""
    path: np.ndarray
    goal: np.ndarray
    goal_time: float


def default_tolerances(joints, trajectory, goal, stopped_velocity_tolerance=0.01, goal_time=0.0):
    """The tolerances of the parameters: ``constraints.<joint>.trajectory`` and ``.goal`` (dicts joint ->
    [rad or m], missing: 0), ``constraints.stopped_velocity_tolerance`` (the goal's velocity tolerance of
    every joint) and ``constraints.goal_time`` [s]."""
    n = len(joints)
    path, end = np.zeros((n, 3)), np.zeros((n, 3))
    for j, name in enumerate(joints):
        path[j, 0] = trajectory.get(name, 0.0)
        end[j, 0] = goal.get(name, 0.0)
        end[j, 1] = stopped_velocity_tolerance
    return Tolerances(path, end, float(goal_time))


def resolve(default, value):
    """A goal's tolerance ``value`` over the ``default``: > 0 replaces it, -1 erases it (0), 0 keeps it.
    Raises ValueError for another negative value."""
    if value > 0.0:
        return value
    if abs(value + 1.0) < FLOAT_EPSILON:
        return 0.0
    if value < 0.0:
        raise ValueError('Illegal tolerance value.')
    return default


def goal_tolerances(defaults, goal, joints):
    """The tolerances of a FollowJointTrajectory ``goal`` over ``defaults`` (:func:`default_tolerances`).

    Returns:
        (Tolerances, problem): problem None, or the controller's log message when the goal names an
        unknown joint or an illegal value; then, as the controller does, the defaults, whole.
    """
    try:
        goal_time = resolve(defaults.goal_time, seconds(goal.goal_time_tolerance))
    except ValueError:
        return defaults, ('Specified illegal goal_time_tolerance: %f. Using default tolerances'
                          % seconds(goal.goal_time_tolerance))
    path, end = defaults.path.copy(), defaults.goal.copy()
    for field, table in (('path_tolerance', path), ('goal_tolerance', end)):
        for tol in getattr(goal, field):
            if tol.name not in joints:
                return defaults, ("joint '%s' specified in goal.%s does not exist. Using default tolerances."
                                  % (tol.name, field))
            j = list(joints).index(tol.name)
            for k, kind in enumerate(('position', 'velocity', 'acceleration')):
                try:
                    table[j, k] = resolve(table[j, k], getattr(tol, kind))
                except ValueError:
                    return defaults, ("joint '%s' specified in goal.%s has a invalid %s tolerance. Using default "
                                      "tolerances." % (tol.name, field, kind))
    return Tolerances(path, end, goal_time), None


def violations(error, tolerance):
    """The joints (indices) whose ``error`` ((n, 2): position, velocity; desired - actual) is over a
    ``tolerance`` ((n, 3)) that applies (> 0); accelerations are not measured, so never over."""
    over = (tolerance[:, :2] > 0.0) & (np.abs(error) > tolerance[:, :2])
    return np.flatnonzero(over.any(axis=1))


# --- following ---------------------------------------------------------------------------------------------

class TrajectoryTracker:
    """The reference of the torque loop (it calls :meth:`sample` with each joint state) for one trajectory:
    samples it, checks its tolerances against the state the loop has just merged, decides the
    :class:`Outcome`, and holds the current position after a violation or :meth:`hold`.

    Args:
        sampler: the :class:`.trajectory.TrajectorySampler` of the trajectory (:func:`from_current_state`).
        tolerances: :class:`Tolerances` of the n joints.
        state: ``state()`` -> (q, qd), (n,) arrays of the state the loop is computing the torque of.

    Attributes:
        outcome: None while it runs; the :class:`Outcome` once decided (SUCCEEDED, PATH_VIOLATED or a
            goal_time_exceeded), which the action then reports.
        held: True once it holds a position instead of the trajectory (a violation or a cancel).
        sampled_at, desired, actual, error: the last sample: time [s] from the start (None before the first),
            (3, n) desired q, qd, qdd, (2, n) actual q, qd, (2, n) desired - actual.
        t, duration: the points' times and the last one [s] (as a TrajectorySampler's, for the diagnostics).
        violated: the joints over their tolerance at the outcome (indices), for the log.
    """

    def __init__(self, sampler, tolerances, state):
        self.sampler, self.tol, self.state = sampler, tolerances, state
        self.duration = sampler.duration
        n = sampler.Q.shape[1]
        self.outcome, self.held, self.sampled_at, self.violated = None, False, None, ()
        self.t = sampler.t
        self.desired, self.actual, self.error = np.zeros((3, n)), np.zeros((2, n)), np.zeros((2, n))
        self._hold = np.zeros(n), np.zeros(n), np.zeros(n)

    def sample(self, t):
        """(q_d, qd_d, qdd_d) at ``t`` [s] from the start, the tolerances checked with ``state()``."""
        q, qd = self.state()
        first = self.sampled_at is None
        self.sampled_at = t
        if self.held:
            q_d, qd_d, qdd_d = self._hold
        else:
            q_d, qd_d, qdd_d = self.sampler.sample(t)
        desired, actual, error = self.desired, self.actual, self.error
        desired[0], desired[1], desired[2] = q_d, qd_d, qdd_d
        actual[0], actual[1] = q, qd
        np.subtract(desired[:2], actual, out=error)
        if self.outcome is None and not self.held:
            self._judge(t, first, q)
        return q_d, qd_d, qdd_d

    def _judge(self, t, first, q):
        """The controller's checks of one sample: the path before the last point (and at the first sample),
        the goal after it, within goal_time of it if that is not 0."""
        before_last = t < self.duration
        if before_last or first:
            over = violations(self.error.T, self.tol.path)
            if len(over):
                self.violated = over
                self.outcome = PATH_VIOLATED
                return self.hold(q)
        if before_last:
            return None
        over = violations(self.error.T, self.tol.goal)
        if not len(over):
            self.outcome = SUCCEEDED
        elif self.tol.goal_time != 0.0 and t - self.duration > self.tol.goal_time:
            self.violated = over
            self.outcome = goal_time_exceeded(t - self.duration)
            self.hold(q)
        return None

    def hold(self, q):
        """Hold ``q`` ((n,)) at rest from the next sample on (the controller's ``set_hold_position``)."""
        self._hold[0][:] = q
        self._hold[1][:] = 0.0
        self._hold[2][:] = 0.0
        self.held = True


def tracker(trajectory, joints, tolerances, state, q, qd):
    """The :class:`TrajectoryTracker` of an accepted ``trajectory`` (:func:`goal_problem` found none), from
    the current ``q``, ``qd``. Raises JointMapError as TrajectorySampler does."""
    sampler = TrajectorySampler(joints, from_current_state(trajectory, joints, q, qd))
    return TrajectoryTracker(sampler, tolerances, state)

