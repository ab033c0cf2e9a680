"""Desired motions from trajectory_msgs/JointTrajectory (no DDS needed).

- :class:`TrajectorySampler`: a JointTrajectory in model order, sampled at
  any time with the interpolation of ros2_controllers'
  joint_trajectory_controller (``interpolation_method: splines``): linear
  between points that give positions only, cubic Hermite when they give
  velocities too, quintic when they also give accelerations. Before the
  first point the sampler holds the first point's position, after the last
  it holds the last position with zero velocity and acceleration.
- :func:`trajectory_efforts` and :func:`fill_trajectory_efforts`: the
  offline (batch) API that fills the ``effort`` of every point with the
  feedforward torque ``tau_ff = M qdd + C qd + g`` in one compiled batch
  call, so a whole trajectory can be sent to joint_trajectory_controller
  with effort feedforward.

Times are seconds from the trajectory start (``time_from_start``).
"""
import bisect
import copy

import numpy as np

import robot_dynamics as rd

from .joint_map import JointMapError


def _seconds(duration):
    return duration.sec + duration.nanosec * 1e-9


def trajectory_arrays(joint_names, trajectory):
    """Arrays of a JointTrajectory in model order.

    Args:
        joint_names: the model's joints in q order; each must be in
            ``trajectory.joint_names`` (extra names are ignored).
        trajectory: trajectory_msgs/JointTrajectory (or an object with
            ``joint_names`` and ``points`` alike).

    Returns:
        (t, Q, QD, QDD): t (K,) seconds from start, strictly increasing;
        Q (K, nq); QD and QDD (K, nq) or None when no point gives them.

    Raises:
        JointMapError: no points, a missing model joint, a point whose
            arrays do not match the names, times not increasing, or a
            non-finite value; the message names the point and the joint.
    """
    names = list(trajectory.joint_names)
    if len(set(names)) != len(names):
        raise JointMapError('joint_names has a name twice')
    index = {n: k for k, n in enumerate(names)}
    missing = [j for j in joint_names if j not in index]
    if missing:
        raise JointMapError('trajectory misses model joint(s): %s' % ', '.join(missing))
    points = trajectory.points
    if not len(points):
        raise JointMapError('trajectory has no points')
    src = np.array([index[j] for j in joint_names], dtype=np.intp)
    K, m = len(points), len(names)
    t = np.empty(K)
    Q = np.empty((K, len(joint_names)))
    QD = np.zeros_like(Q)
    QDD = np.zeros_like(Q)
    have_v = have_a = True
    for k, p in enumerate(points):
        t[k] = _seconds(p.time_from_start)
        for label, values, out in (('positions', p.positions, Q),
                                   ('velocities', p.velocities, QD),
                                   ('accelerations', p.accelerations, QDD)):
            a = np.asarray(values, dtype=float)
            if a.size == 0 and label != 'positions':
                if label == 'velocities':
                    have_v = False
                else:
                    have_a = False
                continue
            if a.shape != (m,):
                raise JointMapError('point %d: %s has %d values for %d joint_names'
                                    % (k, label, a.size, m))
            out[k] = a[src]
        for label, out in (('position', Q), ('velocity', QD), ('acceleration', QDD)):
            if not np.all(np.isfinite(out[k])):
                raise JointMapError('point %d: non-finite value: %s of joint %s'
                                    % (k, label, joint_names[int(np.flatnonzero(~np.isfinite(out[k]))[0])]))
    if K > 1 and not np.all(np.diff(t) > 0):
        raise JointMapError('time_from_start must increase strictly from point to point')
    return t, Q, (QD if have_v else None), (QDD if have_a and have_v else None)


class TrajectorySampler:
    """Sample a desired motion (q_d, qd_d, qdd_d) at any time.

    Args:
        joint_names: the model's joints in q order.
        trajectory: trajectory_msgs/JointTrajectory naming every model joint.
        hold_first: if True, times before the first point hold the first
            point with its own velocity and acceleration (a streamed
            set-point); otherwise with zero velocity and acceleration.

    ``sample(t)`` returns three (nq,) arrays (reused between calls: copy
    them to keep them) for t seconds after the trajectory start.
    """

    def __init__(self, joint_names, trajectory, *, hold_first=False):
        self.t, self.Q, QD, QDD = trajectory_arrays(joint_names, trajectory)
        self.order = 1 if QD is None else (5 if QDD is not None else 3)
        self.QD = np.zeros_like(self.Q) if QD is None else QD
        self.QDD = np.zeros_like(self.Q) if QDD is None else QDD
        self._times = self.t.tolist()
        self.duration = self._times[-1]
        self.hold_first = hold_first
        n = self.Q.shape[1]
        self.q, self.qd, self.qdd = np.zeros(n), np.zeros(n), np.zeros(n)

    def sample(self, t):
        q, qd, qdd = self.q, self.qd, self.qdd
        times = self._times
        if t < times[0] or len(times) == 1:                   # before the start: hold point 0
            q[:] = self.Q[0]
            if self.hold_first:
                qd[:] = self.QD[0]
                qdd[:] = self.QDD[0]
            else:
                qd[:] = 0.0
                qdd[:] = 0.0
            return q, qd, qdd
        if t >= times[-1]:
            q[:] = self.Q[-1]
            qd[:] = 0.0
            qdd[:] = 0.0
            return q, qd, qdd
        k = bisect.bisect_right(times, t) - 1                 # times[k] <= t < times[k+1]
        T = times[k + 1] - times[k]
        s = t - times[k]
        p0, p1 = self.Q[k], self.Q[k + 1]
        if self.order == 1:                                   # linear
            qd[:] = (p1 - p0) / T
            q[:] = p0 + qd * s
            qdd[:] = 0.0
            return q, qd, qdd
        v0, v1 = self.QD[k], self.QD[k + 1]
        if self.order == 3:                                   # cubic Hermite
            c2 = (3 * (p1 - p0) - (2 * v0 + v1) * T) / T ** 2
            c3 = (2 * (p0 - p1) + (v0 + v1) * T) / T ** 3
            q[:] = p0 + s * (v0 + s * (c2 + s * c3))
            qd[:] = v0 + s * (2 * c2 + 3 * s * c3)
            qdd[:] = 2 * c2 + 6 * s * c3
            return q, qd, qdd
        a0, a1 = self.QDD[k], self.QDD[k + 1]                 # quintic
        c3 = (20 * (p1 - p0) - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T ** 2) / (2 * T ** 3)
        c4 = (30 * (p0 - p1) + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T ** 2) / (2 * T ** 4)
        c5 = (12 * (p1 - p0) - 6 * (v1 + v0) * T + (a1 - a0) * T ** 2) / (2 * T ** 5)
        c2 = a0 / 2
        q[:] = p0 + s * (v0 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
        qd[:] = v0 + s * (2 * c2 + s * (3 * c3 + s * (4 * c4 + s * 5 * c5)))
        qdd[:] = 2 * c2 + s * (6 * c3 + s * (12 * c4 + s * 20 * c5))
        return q, qd, qdd


def trajectory_efforts(model, Q, QD=None, QDD=None, *, include_friction=False, friction_smoothing=0.0):
    """Feedforward torques of a whole sampled motion in one batch call.

    Args:
        model: :class:`robot_dynamics.Model`.
        Q: (K, nq) positions; QD, QDD: (K, nq) or None (zeros).
        include_friction: add ``friction_torques(QD)`` (URDF ``<dynamics>``).

    Returns:
        (K, nq) ``tau_ff = M(q) qdd + C(q, qd) qd + g(q)`` [N m or N].
    """
    Q = np.asarray(Q, dtype=float)
    QD = np.zeros_like(Q) if QD is None else QD
    QDD = np.zeros_like(Q) if QDD is None else QDD
    tau = rd.rnea(model, Q, QD, QDD)
    if include_friction:
        tau = tau + rd.friction_torques(model, QD, smoothing=friction_smoothing)
    return tau


def fill_trajectory_efforts(model, trajectory, *, include_friction=False, friction_smoothing=0.0):
    """A copy of ``trajectory`` with every point's ``effort`` set to tau_ff.

    Args:
        model: :class:`robot_dynamics.Model`.
        trajectory: trajectory_msgs/JointTrajectory naming every model joint
            (any order; extra joints get effort 0). Points without
            velocities or accelerations count them as zero.
        include_friction: add friction compensation from the URDF.

    Returns:
        A new JointTrajectory; efforts follow ``trajectory.joint_names``.

    Raises:
        JointMapError: as :func:`trajectory_arrays` (what is wrong, where).

    Example::

        traj = fill_trajectory_efforts(model, traj)
        # send traj to joint_trajectory_controller (effort feedforward)
    """
    t, Q, QD, QDD = trajectory_arrays(model.joint_names, trajectory)
    tau = trajectory_efforts(model, Q, QD, QDD, include_friction=include_friction,
                             friction_smoothing=friction_smoothing)
    names = list(trajectory.joint_names)
    index = {n: k for k, n in enumerate(names)}
    cols = np.array([index[j] for j in model.joint_names], dtype=np.intp)
    efforts = np.zeros((len(t), len(names)))
    efforts[:, cols] = tau
    out = copy.deepcopy(trajectory)
    for point, row in zip(out.points, efforts):
        point.effort = row.tolist()
    return out
