"""Time-optimal retiming of a path through waypoints under velocity,
acceleration and torque limits.

The path is a cubic spline q(s) through the waypoints (s: cumulative chord
length in joint space [rad | m], or uniform). Along it the dynamics are
``tau = a(s) sdd + b(s) sd^2 + c(s)`` (Bobrow, Dubowsky and Gibson 1985;
Pham and Pham, "A new approach to time-optimal path parameterization based
on reachability analysis", IEEE T-RO 2018), with a, b, c from this
package's inverse dynamics; toppra's TOPPRA algorithm (reachability
analysis, solver 'seidel') finds the fastest sd(s) that keeps every
constraint at the grid points.

What it guarantees (docs/RETIMING.md gives the measured figures):

- the constraints hold at the grid points, at both ends of each grid
  interval (toppra's first-order interpolation discretisation); between
  grid points the path acceleration sdd is constant and sd^2 linear in s,
  so the torques and velocities deviate from the grid values by O(ds^2);
- Coulomb friction is exact (the motion along the path never reverses, so
  sgn(qd) = sgn(q'(s))); viscous friction, b qd, is linear in sd and does
  not fit the form above: the torque limits are tightened by b times the
  velocity limit, its largest value.
"""
import math

import numpy as np

from .. import checks
from ..algorithms.rnea import gravity_torques, rnea
from ..errors import InputError
from .check import fixed_base, joint_limits, motor_torques

#: Largest grid interval [rad | m of chord length] of the default grid, and its bounds in points.
GRID_STEP = 0.01
MIN_GRIDPOINTS, MAX_GRIDPOINTS = 400, 4000
PARAMETERS = ("chord", "uniform")
UNLIMITED = 1e12          # a joint without a limit, for toppra (which takes finite bounds)


def path_parameter(waypoints, kind="chord"):
    """(m,) path parameter s of each waypoint: cumulative chord length [rad | m] or 0, 1, ..., m-1."""
    if kind not in PARAMETERS:
        raise InputError("parameter must be one of %s, got %r" % (PARAMETERS, kind))
    steps = np.linalg.norm(np.diff(waypoints, axis=0), axis=1)
    if np.any(steps == 0.0):
        k = int(np.flatnonzero(steps == 0.0)[0])
        raise InputError("waypoints %d and %d are the same point: remove one" % (k, k + 1))
    return np.r_[0.0, np.cumsum(steps)] if kind == "chord" else np.arange(len(waypoints), dtype=float)


def check_waypoints(model, waypoints):
    """(m, nq) finite waypoints, m >= 2, within the joints' position limits."""
    W = checks.as_float_array(waypoints, "waypoints")
    if W.ndim != 2 or W.shape[1] != model.nq or W.shape[0] < 2:
        raise InputError("waypoints must be (m, nq) = (m >= 2, %d) joint positions, got shape %s"
                         % (model.nq, W.shape))
    if not np.all(np.isfinite(W)):
        raise InputError("waypoints must be finite")
    outside = (W < model.lower_limit) | (W > model.upper_limit)
    if np.any(outside):
        k, j = map(int, np.argwhere(outside)[0])
        raise InputError("waypoint %d: joint %s at %.6g is outside its limits [%.6g, %.6g]"
                         % (k, model.joint_names[j], W[k, j], model.lower_limit[j], model.upper_limit[j]))
    return W


def check_gravity(model, waypoints, effort):
    """InputError naming the waypoint and joint where gravity alone exceeds ``effort``."""
    ratio = np.abs(gravity_torques(model, waypoints)) / effort
    if np.any(ratio > 1.0):
        k, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        raise InputError("infeasible: at waypoint %d gravity alone needs %.4g N m on joint %s, above its "
                         "effort limit %.4g N m (URDF limit x effort_scale); %d waypoint(s) are infeasible"
                         % (k, ratio[k, j] * effort[j], model.joint_names[j], effort[j],
                            int(np.sum(np.any(ratio > 1.0, axis=1)))))


def friction_coefficients(model):
    """(nq,) Coulomb [N m] and viscous [N m s/rad] coefficients of the coordinates
    (mimic joints' friction mapped onto the joint they follow)."""
    G = np.asarray(model.coupling)
    return np.abs(G).T @ model.body_friction, (G ** 2).T @ model.body_damping


def law_margins(model, vel):
    """(nq,) torque [N m | N] the limits give up for the friction laws that are not Coulomb + viscous
    (docs/RETIMING.md): a stribeck law's static excess ``static - coulomb`` (its Coulomb and viscous parts
    are in :func:`friction_coefficients`), a sigmoid law's largest torque over ``|qd| <= vel``
    (monotonic in qd: at one end)."""
    from ..analysis.friction import friction_law_torque
    margin = np.zeros(model.nq)
    for j, law in enumerate(model.friction_laws):
        if law.law == "stribeck":
            margin[j] = max(law["static"] - law["coulomb"], 0.0)
        elif law.law == "sigmoid":
            margin[j] = float(np.max(np.abs(friction_law_torque(law, np.array([-vel[j], vel[j]])))))
    return margin


class TimedTrajectory:
    """A retimed trajectory: samples at the grid points, and any time through :meth:`sample`.

    Attributes:
        joint_names: (nq,); waypoints: (m, nq); duration [s].
        t: (N,) times of the grid points [s]; q, qd, qdd: (N, nq) there
            (qdd: the value on the interval that starts at the point);
            tau: (N, nq) motor torques [N m | N], friction included.
        gridpoints: (N,) path parameter s of the grid points; sd: (N,) ds/dt there.
        effort_limit, velocity_limit, acceleration_limit: (nq,) the limits used.
    """

    def __init__(self, model, waypoints, s, gridpoints, sd, parameterisation, limits):
        self.joint_names = model.joint_names
        self.waypoints, self.gridpoints, self.sd = waypoints, gridpoints, sd
        self.waypoint_parameter = s
        self.effort_limit, self.velocity_limit, self.acceleration_limit = limits
        self._model, self._p = model, parameterisation
        self.duration = float(parameterisation.duration)
        self.t = _grid_times(gridpoints, sd)
        self.q, self.qd, self.qdd = self.sample(self.t)
        self.tau = motor_torques(model, self.q, self.qd, self.qdd)

    def sample(self, t):
        """(q, qd, qdd), each (len(t), nq), at times ``t`` in [0, duration] [s]."""
        t = np.clip(np.atleast_1d(checks.as_float_array(t, "t")), 0.0, self.duration)
        return self._p(t), self._p(t, 1), self._p(t, 2)

    def torques(self, t):
        """(len(t), nq) motor torques [N m | N] at times ``t``, friction included."""
        return motor_torques(self._model, *self.sample(t))

    def times(self, rate):
        """Uniform sample times at ``rate`` [Hz] from 0, the last one at the duration."""
        n = max(int(math.ceil(self.duration * rate)), 1)
        return np.linspace(0.0, self.duration, n + 1)

    def to_yaml(self, path=None, *, rate=None):
        """A ``trajectory_msgs/msg/JointTrajectory`` as YAML (written to ``path`` if given).

        ``joint_names`` and ``points`` with ``positions``, ``velocities``,
        ``accelerations``, ``effort`` and ``time_from_start`` (``sec``,
        ``nanosec``): at the grid points, or at ``rate`` [Hz] if given.
        """
        t = self.t if rate is None else self.times(rate)
        q, qd, qdd = (self.q, self.qd, self.qdd) if rate is None else self.sample(t)
        tau = self.tau if rate is None else motor_torques(self._model, q, qd, qdd)
        lines = ["# robot_dynamics retimed trajectory: %d waypoints, duration %.6g s, %d points"
                 % (len(self.waypoints), self.duration, t.size),
                 "header:", "  frame_id: ''", "joint_names: [%s]" % ", ".join(self.joint_names), "points:"]
        for k in range(t.size):
            ns = int(round(t[k] * 1e9))
            lines += ["- positions: [%s]" % _list(q[k]), "  velocities: [%s]" % _list(qd[k]),
                      "  accelerations: [%s]" % _list(qdd[k]), "  effort: [%s]" % _list(tau[k]),
                      "  time_from_start: {sec: %d, nanosec: %d}" % (ns // 10 ** 9, ns % 10 ** 9)]
        text = "\n".join(lines) + "\n"
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text

    def __repr__(self):
        return "TimedTrajectory(%d joints, %d waypoints, duration %.4g s, %d grid points)" % (
            len(self.joint_names), len(self.waypoints), self.duration, self.t.size)


def _grid_times(s, sd):
    """Times of the grid points under constant sdd on each interval: dt = 2 ds / (sd_i + sd_i+1)."""
    return np.r_[0.0, np.cumsum(2.0 * np.diff(s) / (sd[:-1] + sd[1:]))]


def _list(x):
    return ", ".join("%.10g" % (0.0 if abs(v) < 1e-12 else v) for v in x)


def default_gridpoints(length):
    """Grid points for a path of chord ``length``: intervals <= GRID_STEP, within the bounds."""
    return int(min(max(math.ceil(length / GRID_STEP) + 1, MIN_GRIDPOINTS), MAX_GRIDPOINTS))


def torque_constraint(model, effort):
    """toppra's JointTorqueConstraint on this package's RNEA: |tau| <= effort, with the
    Coulomb friction as its dry-friction term (viscous friction: see :func:`retime`)."""
    import toppra.constraint as tc
    coulomb, _ = friction_coefficients(model)
    return tc.JointTorqueConstraint(lambda q, qd, qdd: rnea(model, q, qd, qdd), np.c_[-effort, effort],
                                    coulomb, discretization_scheme=tc.DiscretizationType.Interpolation)


def retime(model, waypoints, *, velocity_limits=None, acceleration_limits=None, effort_scale=1.0,
           gridpoints=None, parameter="chord"):
    """The time-optimal motion along a spline through ``waypoints`` under velocity, acceleration and torque limits.

    From rest to rest. The torque limit of each joint is its URDF effort
    limit times ``effort_scale``; the torques are the model's inverse
    dynamics (gravity, Coriolis, inertia, payloads) plus its joint friction.

    Args:
        model: a fixed-base :class:`~robot_dynamics.Model`.
        waypoints: (m, nq) joint positions [rad | m], m >= 2, within the joint limits.
        velocity_limits: one number or (nq,) [rad/s | m/s]; default the URDF's.
        acceleration_limits: one number or (nq,) [rad/s^2 | m/s^2]; default none.
        effort_scale: factor (> 0) on the URDF effort limits.
        gridpoints: number of grid points along the path (default: intervals of
            at most 0.01 rad of chord length, 400 to 4000 points).
        parameter: ``"chord"`` (cumulative chord length) or ``"uniform"``: the
            spline's parameter at the waypoints.

    Returns:
        :class:`TimedTrajectory`.

    Raises:
        InputError: bad waypoints or limits; a waypoint where gravity alone
            exceeds the scaled effort limit (the joint and waypoint named);
            toppra finding no parameterisation.
    """
    import toppra
    import toppra.algorithm
    import toppra.constraint as tc
    fixed_base(model, "retime")
    W = check_waypoints(model, waypoints)
    if not (isinstance(effort_scale, (int, float)) and math.isfinite(effort_scale) and effort_scale > 0):
        raise InputError("effort_scale must be a finite number > 0, got %r" % (effort_scale,))
    vel = joint_limits(model, velocity_limits, model.velocity_limit, "velocity_limits")
    if not np.all(np.isfinite(vel)):
        j = int(np.flatnonzero(~np.isfinite(vel))[0])
        raise InputError("joint %s has no velocity limit in the URDF: pass velocity_limits" % model.joint_names[j])
    acc = joint_limits(model, acceleration_limits, np.full(model.nq, np.inf), "acceleration_limits")
    effort = np.asarray(model.effort_limit, dtype=float) * effort_scale
    check_gravity(model, W, effort)
    _, viscous = friction_coefficients(model)
    s = path_parameter(W, parameter)
    path = toppra.SplineInterpolator(s, W)
    n = default_gridpoints(float(np.sum(np.linalg.norm(np.diff(W, axis=0), axis=1)))) if gridpoints is None \
        else int(gridpoints)
    if n < 2:
        raise InputError("gridpoints must be >= 2, got %r" % (gridpoints,))
    grid = np.linspace(s[0], s[-1], n)
    constraints = [tc.JointVelocityConstraint(np.c_[-vel, vel])]
    if np.any(np.isfinite(acc)):
        a = np.where(np.isfinite(acc), acc, UNLIMITED)
        constraints.append(tc.JointAccelerationConstraint(np.c_[-a, a], tc.DiscretizationType.Interpolation))
    finite = np.isfinite(effort)
    if np.any(finite):
        limit = np.where(finite, effort - viscous * vel - law_margins(model, vel), UNLIMITED)
        constraints.append(torque_constraint(model, limit))
    algorithm = toppra.algorithm.TOPPRA(constraints, path, gridpoints=grid, solver_wrapper="seidel",
                                        parametrizer="ParametrizeConstAccel")
    parameterisation = algorithm.compute_trajectory(0.0, 0.0)
    if parameterisation is None:
        raise InputError("toppra found no feasible time parameterisation (return code %s): the limits leave no "
                         "motion along this path; try a larger effort_scale or other waypoints"
                         % (algorithm.problem_data.return_code,))
    return TimedTrajectory(model, W, s, grid, np.asarray(algorithm.problem_data.sd_vec, dtype=float),
                           parameterisation, (effort, vel, acc))
