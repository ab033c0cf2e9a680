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
  velocity limit, its largest value;
- the result is then checked at CHECK_DENSITY points per grid interval
  (CHECK_POINTS in all, at least) and at the waypoints (where the spline's
  third derivative jumps, so the accelerations and torques have a kink) against the limits asked for; where a ratio passes 1 - TOLERANCE (the
  feasibility check's one tolerance, :data:`.check.TOLERANCE`) the limit
  toppra is given is tightened by 1.5 times the excess (3, 6, ... times
  on later rounds) and toppra runs again, so that what :func:`retime` returns passes
  :func:`~robot_dynamics.check_trajectory` at the same limits.
"""
import math

import numpy as np

from .. import checks
from ..algorithms.rnea import gravity_torques
from ..errors import InputError
from .check import TOLERANCE, fixed_base, joint_limits, motor_torques

#: Largest grid interval [rad | m of chord length] of the default grid, and its bounds in points.
GRID_STEP = 0.01
MIN_GRIDPOINTS, MAX_GRIDPOINTS = 400, 4000
PARAMETERS = ("chord", "uniform")
UNLIMITED = 1e12          # a joint without a limit, for toppra (which takes finite bounds)
#: retime checks its result at CHECK_DENSITY points per grid interval, more on a coarse grid (CHECK_POINTS
#: in all, at least), and re-runs toppra at most MAX_REFINEMENTS times with limits tightened where a ratio
#: passed 1 - TOLERANCE between the grid points.
CHECK_DENSITY, CHECK_POINTS = 10, 20000
MAX_REFINEMENTS = 4


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

    def __init__(self, model, waypoints, s, gridpoints, sd, path, limits):
        self.joint_names = model.joint_names
        self.waypoints, self.gridpoints, self.sd = waypoints, gridpoints, sd
        self.waypoint_parameter = s
        self.effort_limit, self.velocity_limit, self.acceleration_limit = limits
        self._model, self._path = model, path
        self._sdd = np.diff(sd ** 2) / (2.0 * np.diff(gridpoints))
        self.t = _grid_times(gridpoints, sd)
        self.duration = float(self.t[-1])
        self.q, self.qd, self.qdd = self.sample(self.t)
        self.tau = motor_torques(model, self.q, self.qd, self.qdd)

    def sample(self, t):
        """(q, qd, qdd), each (len(t), nq), at times ``t`` in [0, duration] [s]: on the grid interval i
        that holds t, sdd constant, sd = sd_i + sdd (t - t_i) (>= 0: the motion never reverses, so the
        friction's sign is the path's, even at rest within rounding), s = s_i + sd_i (t - t_i) + sdd (t - t_i)^2 / 2."""
        t = np.clip(np.atleast_1d(checks.as_float_array(t, "t")), 0.0, self.duration)
        i = np.clip(np.searchsorted(self.t, t, side="right") - 1, 0, self.t.size - 2)
        tau, sdd = t - self.t[i], self._sdd[i]
        s = np.minimum(self.gridpoints[i] + self.sd[i] * tau + 0.5 * sdd * tau ** 2, self.gridpoints[-1])
        return motion_at(self._path, s, np.maximum(self.sd[i] + sdd * tau, 0.0), sdd)

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

    from .path_torque import path_dynamics
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
    coulomb, viscous = friction_coefficients(model)
    s = path_parameter(W, parameter)
    path = toppra.SplineInterpolator(s, W)
    n = default_gridpoints(float(np.sum(np.linalg.norm(np.diff(W, axis=0), axis=1)))) if gridpoints is None \
        else int(gridpoints)
    if n < 2:
        raise InputError("gridpoints must be >= 2, got %r" % (gridpoints,))
    grid = np.linspace(s[0], s[-1], n)
    given = Limits(effort, vel, acc)
    inner = Limits(np.where(np.isfinite(effort), effort - viscous * vel - law_margins(model, vel), UNLIMITED),
                   vel.copy(), np.where(np.isfinite(acc), acc, UNLIMITED))
    dense = np.union1d(dense_parameter(grid, max(CHECK_DENSITY, math.ceil(CHECK_POINTS / (n - 1)))), s)
    dynamics = path_dynamics(model, path, grid, coulomb)
    for attempt in range(MAX_REFINEMENTS + 1):
        sd = time_optimal(path, grid, dynamics, inner)
        if not tighten(inner, given, peaks(model, motion_along(path, grid, sd, dense)), 1.5 * 2 ** attempt):
            return TimedTrajectory(model, W, s, grid, sd, path, (effort, vel, acc))
    raise InputError("retime still exceeded a limit between its %d grid points after %d re-runs of toppra with "
                     "tightened limits: pass more gridpoints" % (n, MAX_REFINEMENTS))


class Limits:
    """(nq,) limits of the motion: ``effort`` [N m | N], ``velocity`` [rad/s | m/s], ``acceleration``
    [rad/s^2 | m/s^2] (inf or UNLIMITED: none)."""

    def __init__(self, effort, velocity, acceleration):
        self.effort, self.velocity, self.acceleration = effort, velocity, acceleration


def time_optimal(path, grid, dynamics, limits):
    """toppra's TOPPRA (solver 'seidel', constant sdd on each grid interval) under ``limits``, the torques
    from the path ``dynamics`` (a, b, c of :func:`.path_torque.path_dynamics`): (N,) sd at the grid points."""
    import toppra.algorithm
    import toppra.constraint as tc

    from .path_torque import PathTorqueConstraint
    constraints = [tc.JointVelocityConstraint(np.c_[-limits.velocity, limits.velocity])]
    if np.any(limits.acceleration < UNLIMITED):
        a = limits.acceleration
        constraints.append(tc.JointAccelerationConstraint(np.c_[-a, a], tc.DiscretizationType.Interpolation))
    if np.any(limits.effort < UNLIMITED):
        constraints.append(PathTorqueConstraint(dynamics, limits.effort))
    algorithm = toppra.algorithm.TOPPRA(constraints, path, gridpoints=grid, solver_wrapper="seidel")
    algorithm.compute_parameterization(0.0, 0.0)
    if algorithm.problem_data.return_code != toppra.algorithm.ParameterizationReturnCode.Ok:
        raise InputError("toppra found no feasible time parameterisation (return code %s): the limits leave no "
                         "motion along this path; try a larger effort_scale or other waypoints"
                         % (algorithm.problem_data.return_code,))
    return np.asarray(algorithm.problem_data.sd_vec, dtype=float)


def dense_parameter(grid, density):
    """Path parameter s at ``density`` evenly spaced points per grid interval, the last grid point included."""
    steps = np.arange(density) / density
    return np.r_[(grid[:-1, None] + np.diff(grid)[:, None] * steps).ravel(), grid[-1]]


def motion_along(path, grid, sd, s):
    """(q, qd, qdd), each (len(s), nq), at path parameters ``s`` of the motion toppra returns: sdd constant
    on each grid interval, sd^2 linear in s."""
    sdd = np.diff(sd ** 2) / (2.0 * np.diff(grid))
    i = np.clip(np.searchsorted(grid, s, side="right") - 1, 0, grid.size - 2)
    return motion_at(path, s, np.sqrt(np.maximum(sd[i] ** 2 + 2.0 * sdd[i] * (s - grid[i]), 0.0)), sdd[i])


def motion_at(path, s, sd, sdd):
    """(q, qd, qdd), each (n, nq), at path parameters ``s`` with path velocities ``sd`` and accelerations
    ``sdd`` (each (n,)): qd = q'(s) sd, qdd = q'(s) sdd + q''(s) sd^2."""
    ps = path(s, 1)
    return path(s), ps * sd[:, None], ps * sdd[:, None] + path(s, 2) * (sd ** 2)[:, None]


def peaks(model, motion):
    """:class:`Limits` of the largest |torque|, |velocity| and |acceleration| of each joint along ``motion``."""
    q, qd, qdd = motion
    return Limits(*(np.max(np.abs(x), axis=0) for x in (motor_torques(model, q, qd, qdd), qd, qdd)))


def tighten(inner, given, peak, gain):
    """Tighten ``inner``, the limits toppra is given, where ``peak`` passes (1 - TOLERANCE) x ``given``:
    by ``gain`` times the excess (torques in N m, velocities and accelerations as a factor). True if it did.

    The excess does not always shrink in proportion (where another joint's limit binds at the grid points,
    a joint's peak between them moves less than its own limit), so :func:`retime` doubles the gain at each
    re-run: 1.5, 3, 6, ..."""
    bound = (1.0 - TOLERANCE)
    over = {k: getattr(peak, k) > bound * getattr(given, k) for k in ("effort", "velocity", "acceleration")}
    inner.effort[over["effort"]] -= gain * (peak.effort - bound * given.effort)[over["effort"]]
    for k in ("velocity", "acceleration"):
        ratio = getattr(peak, k)[over[k]] / (bound * getattr(given, k)[over[k]])
        getattr(inner, k)[over[k]] /= 1.0 + gain * (ratio - 1.0)
    return any(np.any(o) for o in over.values())
