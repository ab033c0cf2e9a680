"""The trajectory-timing services of a node with a robot model: handlers of (holder, request, response).

``~/retime_trajectory`` (RetimeTrajectory): the fastest motion, from rest to
rest, along a smooth path through waypoints within the velocity,
acceleration and torque limits (:func:`robot_dynamics.retime`: toppra's
reachability analysis on this package's inverse dynamics).
``~/check_trajectory`` (CheckTrajectory): each joint's worst ratio of
torque, velocity and acceleration to its limit along a timed trajectory
(:func:`robot_dynamics.check_trajectory`). docs/RETIMING.md.

Both read the node's current model, payloads included, and change nothing;
joints by name in any order, every model joint named. Like the other
read-only services, dynamics_node does not serve them: the dynamics_services
process beside it does, under its names (:mod:`.query_services`), so that a
retiming (0.02 to 0.4 s of computation) never holds the torque loop. A bad
request gets ``success: false`` and a message naming the point and the joint.

Bounds, so that no request runs for long: at most :data:`MAX_WAYPOINTS`
waypoints, :data:`MAX_GRIDPOINTS` grid points (0.35 s for the Panda on the
2-core test machine) and :data:`MAX_POINTS` points in an answer at a
``rate``. ``~/check_trajectory`` takes trajectories of any length, like
``~/fill_trajectory_efforts`` (one batch of inverse dynamics).
Fixed-base trees only: a floating or planar base, or closed loops, are refused.
"""
import math

import numpy as np
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd

from ..control.joint_map import JointMapError
from ..control.trajectory import trajectory_arrays
from ..errors import InputError
from ..timing.check import QUANTITIES, TOLERANCE, motor_torques
from ..model.model import describe_base
from .queries import fail, ok

#: Waypoints of one ~/retime_trajectory request, at most (1000 waypoints of the Panda: 0.14 s).
MAX_WAYPOINTS = 1000
#: Grid points of one ~/retime_trajectory request, at most (the computation grows linearly with them).
MAX_GRIDPOINTS = 10000
#: Points of a ~/retime_trajectory answer sampled at ``rate``, at most.
MAX_POINTS = 100_000


def warm_up_timing():
    """Import toppra (about 1 s, with matplotlib) and run both services' computations once on the warm-up
    robot, so that the first request is answered as fast as the next ones."""
    from .warm_up import warm_up_model
    model = warm_up_model()
    traj = rd.retime(model, [[0.0, 0.0], [0.5, 0.3]], acceleration_limits=[5.0, 5.0], gridpoints=20)
    rd.check_trajectory(model, traj.t, traj.q)


def waypoints_of(model, trajectory):
    """(m, nq) waypoints in model order from a JointTrajectory's positions (its times are ignored).

    Raises:
        JointMapError: a joint named twice or missing, a point whose positions
            do not match the names, a non-finite position (the point and the
            joint named). InputError: more than MAX_WAYPOINTS points.
    """
    names = list(trajectory.joint_names)
    points = trajectory.points
    if len(points) > MAX_WAYPOINTS:
        raise InputError('waypoints has %d points, more than %d' % (len(points), MAX_WAYPOINTS))
    src = name_order(model, names, 'waypoints.joint_names')
    W = np.empty((len(points), model.nq))
    for k, p in enumerate(points):
        a = np.asarray(p.positions, dtype=float)
        if a.shape != (len(names),):
            raise JointMapError('waypoint %d: positions has %d values for %d joint_names' % (k, a.size, len(names)))
        W[k] = a[src]
        if not np.all(np.isfinite(W[k])):
            j = int(np.flatnonzero(~np.isfinite(W[k]))[0])
            raise JointMapError('waypoint %d: non-finite position of joint %s' % (k, model.joint_names[j]))
    return W


def name_order(model, names, what):
    """(nq,) index into ``names`` of each model joint (JointMapError: a name twice, a joint missing)."""
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise JointMapError('%s names %s twice' % (what, ', '.join(dup)))
    missing = [j for j in model.joint_names if j not in names]
    if missing:
        raise JointMapError('%s misses model joint(s): %s (the model has: %s)'
                            % (what, ', '.join(missing), ', '.join(model.joint_names)))
    return np.array([names.index(j) for j in model.joint_names], dtype=np.intp)


def per_joint(model, names, values, what):
    """(nq,) ``values`` (one per name of ``names``) in model order, or None when empty."""
    if len(values) == 0:
        return None
    if len(values) != len(names):
        raise JointMapError('%s has %d values for %d joint_names' % (what, len(values), len(names)))
    return np.asarray(values, dtype=float)[name_order(model, list(names), 'joint_names')]


def trajectory_message(joint_names, header, t, q, qd, qdd, tau):
    """A JointTrajectory of (K,) times [s] and (K, nq) arrays, ``joint_names`` in their column order."""
    points = []
    for k in range(t.size):
        sec, nsec = divmod(int(round(t[k] * 1e9)), 1_000_000_000)
        points.append(JointTrajectoryPoint(positions=q[k].tolist(), velocities=qd[k].tolist(),
                                           accelerations=qdd[k].tolist(), effort=tau[k].tolist(),
                                           time_from_start=Duration(sec=sec, nanosec=nsec)))
    return JointTrajectory(header=header, joint_names=list(joint_names), points=points)


def tree_problem(model, service):
    """Why ``service`` cannot answer for ``model`` (a moving base, closed loops), or None."""
    if model.root_joint is not None:
        return '%s: %s takes a fixed-base arm' % (describe_base(model), service)
    if model.loops:
        return 'robot %r has closed loops (loops_file): %s takes trees only' % (model.name, service)
    return None


def _tree(holder, response, service):
    """(the model, None) when the holder's is a fixed-base tree; else (None, ``response`` refused, saying why)."""
    model = holder.model
    if model is None:
        return None, holder.no_model(response)
    problem = tree_problem(model, service)
    return (None, fail(response, problem)) if problem else (model, None)


def retime(holder, request, response):
    """~/retime_trajectory (RetimeTrajectory) of the holder's model."""
    model, refusal = _tree(holder, response, '~/retime_trajectory')
    if refusal is not None:
        return refusal
    names = list(request.waypoints.joint_names)
    try:
        W = waypoints_of(model, request.waypoints)
        vel = per_joint(model, names, request.velocity_limits, 'velocity_limits')
        acc = per_joint(model, names, request.acceleration_limits, 'acceleration_limits')
        if request.gridpoints > MAX_GRIDPOINTS:
            raise InputError('gridpoints is %d, more than %d' % (request.gridpoints, MAX_GRIDPOINTS))
        if not (math.isfinite(request.rate) and request.rate >= 0):
            raise InputError('rate must be >= 0 [Hz] (0: the grid points), got %r' % request.rate)
        traj = rd.retime(model, W, velocity_limits=vel, acceleration_limits=acc,
                         effort_scale=request.effort_scale or 1.0, gridpoints=request.gridpoints or None)
        t, q, qd, qdd, tau = _samples(model, traj, request.rate)
    except ValueError as exc:
        return fail(response, exc)
    response.trajectory = trajectory_message(model.joint_names, request.waypoints.header, t, q, qd, qdd, tau)
    response.duration = traj.duration
    return ok(response, '%d waypoints, duration %.6g s, %d points' % (len(W), traj.duration, t.size))


def _samples(model, traj, rate):
    """(t, q, qd, qdd, tau) of ``traj`` at its grid points (``rate`` 0) or evenly spaced, at least ``rate``
    [Hz] (:meth:`~robot_dynamics.timing.retime.TimedTrajectory.times`)."""
    if not rate:
        return traj.t, traj.q, traj.qd, traj.qdd, traj.tau
    if math.ceil(traj.duration * rate) + 1 > MAX_POINTS:
        raise InputError('rate %.6g Hz gives %d points over %.6g s, more than %d'
                            % (rate, math.ceil(traj.duration * rate) + 1, traj.duration, MAX_POINTS))
    t = traj.times(rate)
    q, qd, qdd = traj.sample(t)
    return t, q, qd, qdd, motor_torques(model, q, qd, qdd)


def check_trajectory(holder, request, response):
    """~/check_trajectory (CheckTrajectory) of the holder's model."""
    model, refusal = _tree(holder, response, '~/check_trajectory')
    if refusal is not None:
        return refusal
    try:
        t, Q, QD, QDD = trajectory_arrays(model.joint_names, request.trajectory)
        acc = per_joint(model, list(request.trajectory.joint_names), request.acceleration_limits,
                        'acceleration_limits')
        check = rd.check_trajectory(model, t, Q, QD, QDD, acceleration_limits=acc)
    except ValueError as exc:
        return fail(response, exc)
    response.feasible = check.feasible
    response.joint_names = list(model.joint_names)
    for k in QUANTITIES:
        setattr(response, k + '_ratio', check.worst[k].tolist())
        setattr(response, k + '_point', check.index[k].tolist())
        setattr(response, k + '_time', check.time[k].tolist())
    kind, joint, ratio, point, at = check.violation()
    return ok(response, 'worst: %s of %s at %.4g x its limit (point %d, t = %.4g s): %s' % (
        kind, joint, ratio, point, at, 'feasible' if ratio <= 1.0 + TOLERANCE else 'NOT feasible'))
