"""Excitation trajectories for identification: finite Fourier series optimised for the base regressor.

Each joint follows a finite Fourier series of base frequency ``w = 2 pi /
period`` (Swevers, Ganseman, Tukel, De Schutter and Van Brussel, *Optimal
robot excitation and identification*, IEEE Trans. Robotics and Automation
13(5), 1997)::

    q_i(t)   = q0_i + sum_l  a_il / (w l) sin(w l t) - b_il / (w l) cos(w l t)
    qd_i(t)  =        sum_l  a_il cos(w l t) + b_il sin(w l t)
    qdd_i(t) =        sum_l -a_il w l sin(w l t) + b_il w l cos(w l t)

with l = 1 .. harmonics. The trajectory is periodic (repeat it for more
data; averaging over periods reduces noise), and here it also starts and
ends at rest: ``sum_l a_il = 0`` (qd(0) = 0) and ``sum_l l b_il = 0``
(qdd(0) = 0), which fixes a_i1 and b_i1.

The coefficients and offsets minimise the 2-norm condition number of the
base regressor (:func:`~robot_dynamics.base_parameters`) stacked over
``samples`` points of one period, subject to the limits at ``4 samples``
points (linear inequality constraints, :func:`scipy.optimize.minimize`
with SLSQP, the objective's gradient by finite differences), from a random
start scaled into the limits. Afterwards the limits are checked at 20000
points per period and the harmonics scaled down if a peak fell between
the constraint points, so the returned trajectory respects them.

Limits, per joint:

- position: the URDF's ``lower``/``upper`` (or ``lower=``/``upper=``),
  moved inwards by ``position_margin`` [rad | m]; a joint without limits
  (continuous) gets +-pi about 0.
- velocity: ``velocity=`` if given, else ``velocity_scale`` times the URDF
  velocity limit (1 rad/s where the URDF has none).
- acceleration: ``acceleration=`` if given, else 3 rad/s^2 (m/s^2): URDF
  has no acceleration limits (a Panda's datasheet allows 7.5 to 20 rad/s^2).

Each override is one number, one per joint, or a dict {joint: value}.
"""
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Tuple

import numpy as np

from ..errors import InputError
from ..algorithms.dispatch import get_num_threads, set_num_threads
from .base import base_parameters
from ..algorithms.floating import require_fixed

DEFAULT_ACCELERATION = 3.0      # rad/s^2 (m/s^2): URDF has no acceleration limits
UNLIMITED_VELOCITY = 1.0        # rad/s (m/s) for a joint without a URDF velocity limit
CHECK_POINTS = 20000            # per period, for the final limit check


@dataclass(frozen=True)
class ExcitationTrajectory:
    """A finite Fourier series trajectory per joint (see the module text).

    Fields:
        joint_names: the joints, in ``q`` column order.
        period: T [s] (base frequency 1 / T).
        offset: (nq,) q0 [rad | m].
        a, b: (nq, harmonics) the series coefficients [rad/s | m/s].
        lower, upper, velocity, acceleration: (nq,) the limits it respects.
        condition: condition number of the stacked base regressor over
            ``samples`` points of one period (what was minimised).
        initial_condition: the same for the unoptimised (random, scaled) start.
        samples: points per period of the condition number.
        iterations: optimiser iterations done.
        interrupted: True when Ctrl-C stopped the optimisation (the best
            trajectory found so far is returned).
        friction: whether the base parameters included friction.
        parameters: their number.
    """
    joint_names: Tuple[str, ...]
    period: float
    offset: np.ndarray
    a: np.ndarray
    b: np.ndarray
    lower: np.ndarray = field(repr=False)
    upper: np.ndarray = field(repr=False)
    velocity: np.ndarray = field(repr=False)
    acceleration: np.ndarray = field(repr=False)
    condition: float = float("nan")
    initial_condition: float = float("nan")
    samples: int = 0
    iterations: int = 0
    interrupted: bool = False
    friction: bool = False
    parameters: int = 0

    @property
    def harmonics(self):
        return self.a.shape[1]

    def sample(self, t):
        """``(q, qd, qdd)`` at times ``t`` (n,) [s], each (n, nq)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return _series(self.offset, self.a, self.b, 2 * np.pi / self.period, t)

    def times(self, rate, cycles=1):
        """Sample times [s] at ``rate`` [Hz] over ``cycles`` periods, both ends included."""
        if not (math.isfinite(rate) and rate > 0):
            raise InputError("rate must be a frequency > 0 [Hz], got %r" % (rate,))
        if not (math.isfinite(cycles) and cycles > 0):
            raise InputError("cycles must be > 0, got %r" % (cycles,))
        n = int(round(cycles * self.period * rate))
        return np.arange(n + 1) / rate

    def to_csv(self, path=None, *, rate=100.0, cycles=1):
        """CSV text (written to ``path`` if given): a ``#`` comment line, the header
        ``t,q[joint]...,qd[joint]...,qdd[joint]...`` and one row per sample at ``rate`` [Hz]."""
        t = self.times(rate, cycles)
        q, qd, qdd = self.sample(t)
        cols = ["t"] + ["%s[%s]" % (k, n) for k in ("q", "qd", "qdd") for n in self.joint_names]
        lines = ["# robot_dynamics excitation trajectory: period=%r harmonics=%d condition=%.6g"
                 % (self.period, self.harmonics, self.condition), ",".join(cols)]
        for row in np.column_stack([t, q, qd, qdd]):
            lines.append(",".join("%.12g" % (0.0 if abs(v) < 1e-12 else v) for v in row))
        return _write("\n".join(lines) + "\n", path)

    def to_yaml(self, path=None, *, rate=50.0, cycles=1, start=2.0):
        """A ``trajectory_msgs/msg/JointTrajectory`` as YAML text (written to ``path`` if given).

        The fields ``ros2 topic pub`` takes for the message, or a
        FollowJointTrajectory action goal's ``trajectory``: ``joint_names``
        and ``points`` with ``positions``, ``velocities``, ``accelerations``
        and ``time_from_start`` (``sec``, ``nanosec``), at ``rate`` [Hz] over
        ``cycles`` periods. The first point is at ``start`` [s] to give the
        controller time to reach the trajectory's first pose (where the
        trajectory is at rest).
        """
        if not (math.isfinite(start) and start >= 0):
            raise InputError("start must be a time >= 0 [s], got %r" % (start,))
        t = self.times(rate, cycles)
        q, qd, qdd = self.sample(t)
        lines = ["# robot_dynamics excitation trajectory: period %r s, %d harmonics, condition number %.6g"
                 % (self.period, self.harmonics, self.condition),
                 "header:", "  frame_id: ''",
                 "joint_names: [%s]" % ", ".join(self.joint_names), "points:"]
        for k in range(t.size):
            ns = int(round((t[k] + start) * 1e9))
            lines += ["- positions: [%s]" % _list(q[k]), "  velocities: [%s]" % _list(qd[k]),
                      "  accelerations: [%s]" % _list(qdd[k]), "  effort: []",
                      "  time_from_start: {sec: %d, nanosec: %d}" % (ns // 10 ** 9, ns % 10 ** 9)]
        return _write("\n".join(lines) + "\n", path)

    def check_limits(self, points=CHECK_POINTS):
        """Largest ratio of |excursion| to the room the limits leave, over
        ``points`` samples of a period (<= 1 when every limit is respected)."""
        q, qd, qdd = self.sample(np.arange(points) * self.period / points)
        return float(_limit_ratio(q - self.offset, qd, qdd, self.offset, self.lower, self.upper, self.velocity,
                                  self.acceleration))


def _list(x):
    scale = max(float(np.max(np.abs(x))), 1.0)
    return ", ".join("%.10g" % (0.0 if abs(v) < 1e-12 * scale else v) for v in x)   # no rounding residue


def _write(text, path):
    if path is not None:
        with open(path, "w") as f:
            f.write(text)
    return text


def _series(offset, a, b, w, t):
    L = a.shape[1]
    wl = w * np.arange(1, L + 1)                       # (L,)
    S, C = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))
    q = offset + (S / wl) @ a.T - (C / wl) @ b.T
    qd = C @ a.T + S @ b.T
    qdd = -(S * wl) @ a.T + (C * wl) @ b.T
    return q, qd, qdd


def _limit_ratio(e, qd, qdd, q0, lo, hi, vmax, amax):
    """max over samples and joints of the excursion e = q - q0 (room hi - q0 or q0 - lo),
    |qd| / vmax and |qdd| / amax."""
    up = np.max(e, axis=0) / np.maximum(hi - q0, 1e-300)
    down = np.max(-e, axis=0) / np.maximum(q0 - lo, 1e-300)
    return max(np.max(up), np.max(down), np.max(np.max(np.abs(qd), axis=0) / vmax),
               np.max(np.max(np.abs(qdd), axis=0) / amax))


def _per_joint(model, value, what):
    """One override -> (nq,) floats, or None."""
    if value is None:
        return None
    if isinstance(value, dict):
        out = np.full(model.nq, np.nan)
        for name, v in value.items():
            if name not in model.joint_names:
                raise InputError("%s: unknown joint %r; the joints are: %s" % (what, name, ", ".join(model.joint_names)))
            out[model.joint_names.index(name)] = float(v)
        return out                                        # NaN: not overridden
    try:
        out = np.broadcast_to(np.asarray(value, dtype=float), (model.nq,)).copy()
    except ValueError:
        raise InputError("%s: expected one value or %d (one per joint), got %r" % (what, model.nq, value)) from None
    return out


def excitation_limits(model, *, lower=None, upper=None, velocity=None, acceleration=None, position_margin=0.1,
                      velocity_scale=0.5):
    """(lower, upper, velocity, acceleration), each (nq,): the limits an
    excitation trajectory keeps (see the module text)."""
    if not (math.isfinite(position_margin) and position_margin >= 0):
        raise InputError("position_margin must be >= 0 [rad | m], got %r" % (position_margin,))
    if not (math.isfinite(velocity_scale) and 0 < velocity_scale <= 1):
        raise InputError("velocity_scale must be in (0, 1], got %r" % (velocity_scale,))
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    for arr, override, what in ((lo, lower, "lower"), (hi, upper, "upper")):
        o = _per_joint(model, override, what)
        if o is not None:
            arr[:] = np.where(np.isnan(o), arr, o)
    lo, hi = lo + position_margin, hi - position_margin
    bad = [n for n, l, h in zip(model.joint_names, lo, hi) if not l < h]
    if bad:
        raise InputError("no room between the position limits (after the %g margin) of %s"
                         % (position_margin, ", ".join(bad)))
    v = np.where(np.isfinite(model.velocity_limit) & (model.velocity_limit > 0),
                 velocity_scale * model.velocity_limit, UNLIMITED_VELOCITY)
    a = np.full(model.nq, DEFAULT_ACCELERATION)
    for arr, override, what in ((v, velocity, "velocity"), (a, acceleration, "acceleration")):
        o = _per_joint(model, override, what)
        if o is not None:
            arr[:] = np.where(np.isnan(o), arr, o)
        if not np.all(np.isfinite(arr) & (arr > 0)):
            raise InputError("%s limits must be finite and > 0, got %s" % (what, arr))
    return lo, hi, v, a


def excitation_trajectory(model, *, period=10.0, harmonics=5, samples=None, friction=False, lower=None,
                          upper=None, velocity=None, acceleration=None, position_margin=0.1, velocity_scale=0.5,
                          max_iterations=100, seed=0, progress=None, base=None):
    """An excitation trajectory for ``model`` optimised for the base regressor's condition number.

    Args:
        model: the :class:`~robot_dynamics.Model`.
        period: T [s] of the periodic trajectory.
        harmonics: number of harmonics per joint (frequencies 1/T .. harmonics/T).
        samples: points per period of the stacked regressor (default
            ``max(50, 3 count / nq)`` for ``count`` base parameters).
        friction: optimise for the base parameters with friction too.
        lower, upper, velocity, acceleration, position_margin, velocity_scale:
            the limits (module text; :func:`excitation_limits`).
        max_iterations: SLSQP iterations (each costs about 2 nq harmonics
            regressor evaluations).
        seed: seed of the random start.
        progress: show the iterations on stderr (default: when stderr is a terminal).
        base: optional :class:`~.base.BaseParameters` of ``model``.

    Returns:
        :class:`ExcitationTrajectory`. Ctrl-C (KeyboardInterrupt) during the
        optimisation returns the best trajectory so far with
        ``interrupted=True`` instead of raising.
    """
    require_fixed(model, "excitation_trajectory")
    if not (math.isfinite(period) and period > 0):
        raise InputError("period must be a time > 0 [s], got %r" % (period,))
    if int(harmonics) != harmonics or harmonics < 2:
        raise InputError("harmonics must be an integer >= 2, got %r" % (harmonics,))
    nq, L = model.nq, int(harmonics)
    lo, hi, vmax, amax = excitation_limits(model, lower=lower, upper=upper, velocity=velocity,
                                           acceleration=acceleration, position_margin=position_margin,
                                           velocity_scale=velocity_scale)
    if base is None:
        base = base_parameters(model, friction=friction)
    base.check_model(model)
    M = int(samples) if samples is not None else max(50, -(-3 * base.count // nq))
    if M * nq <= base.count:
        raise InputError("samples=%d per period give %d equations for %d base parameters: need more"
                         % (M, M * nq, base.count))
    w = 2 * np.pi / period
    l = np.arange(1, L + 1)

    def unpack(x):
        """x = [a_il, l >= 2 (nq, L-1); b_il, l >= 2 (nq, L-1); q0 (nq)] -> (q0, a, b), at rest at t = 0."""
        af = x[:nq * (L - 1)].reshape(nq, L - 1)
        bf = x[nq * (L - 1):2 * nq * (L - 1)].reshape(nq, L - 1)
        a = np.column_stack([-af.sum(axis=1), af])
        b = np.column_stack([-(bf * l[1:]).sum(axis=1), bf])
        return x[2 * nq * (L - 1):], a, b

    t_obj = np.arange(M) * period / M

    def condition(x):
        q, qd, qdd = _series(*unpack(x), w, t_obj)
        return _condition(base.regressor(model, q, qd, qdd).reshape(M * nq, base.count))

    previous = get_num_threads()
    set_num_threads(1)            # one small batch per call: threads cost more than they give here
    try:
        return _optimise(model, base, unpack, condition, nq, L, M, w, period, lo, hi, vmax, amax, seed, progress,
                         max_iterations, friction)
    finally:
        set_num_threads(previous)


def _condition(W):
    """2-norm condition number of W (rows >= columns) from the singular values of its R factor
    (as accurate as the SVD of W, and much faster for a tall W)."""
    s = np.linalg.svd(np.linalg.qr(np.ascontiguousarray(W), mode="r"), compute_uv=False)   # a strided W: 50x slower
    return float(s[0] / s[-1]) if s[-1] > 0 else np.inf


def _optimise(model, base, unpack, condition, nq, L, M, w, period, lo, hi, vmax, amax, seed, progress,
              max_iterations, friction):
    import scipy.optimize
    # Linear constraints G x + h >= 0 at 4 M points: q, qd, qdd are linear in x.
    t_con = np.arange(4 * M) * period / (4 * M)
    nx = 2 * nq * (L - 1) + nq
    basis = np.eye(nx)
    Q, QD, QDD = [], [], []
    for k in range(nx):
        q, qd, qdd = _series(*unpack(basis[k]), w, t_con)
        Q.append(q.ravel())
        QD.append(qd.ravel())
        QDD.append(qdd.ravel())
    Q, QD, QDD = np.array(Q).T, np.array(QD).T, np.array(QDD).T       # (4M nq, nx): value = G x
    LO, HI = np.tile(lo, 4 * M), np.tile(hi, 4 * M)
    VM, AM = np.tile(vmax, 4 * M), np.tile(amax, 4 * M)
    G = np.vstack([Q, -Q, QD, -QD, QDD, -QDD])
    h = np.concatenate([-LO, HI, VM, VM, AM, AM])
    # scale rows to O(1) so SLSQP's tolerances mean the same for every limit
    rs = np.concatenate([HI - LO, HI - LO, VM, VM, AM, AM])
    G, h = G / rs[:, None], h / rs

    # random start, scaled into the limits (the "unoptimised" reference)
    rng = np.random.default_rng(seed)
    x0 = np.concatenate([rng.uniform(-1, 1, 2 * nq * (L - 1)), 0.5 * (lo + hi)])
    q0_, a0, b0 = unpack(x0)
    qq, qqd, qqdd = _series(q0_, a0, b0, w, np.arange(CHECK_POINTS) * period / CHECK_POINTS)
    x0[:2 * nq * (L - 1)] *= 0.9 / _limit_ratio(qq - q0_, qqd, qqdd, q0_, lo, hi, vmax, amax)
    start = condition(x0)

    show = sys.stderr.isatty() if progress is None else bool(progress)
    best = {"x": x0, "c": start, "it": 0}
    began = time.perf_counter()

    def callback(xk, *_):
        best["it"] += 1
        if np.all(G @ xk + h >= -1e-9):
            c = condition(xk)
            if c < best["c"]:
                best["x"], best["c"] = xk.copy(), c
        if show:
            sys.stderr.write("\roptimising the excitation: iteration %d/%d, condition number %.4g (start %.4g), "
                             "%.0f s " % (best["it"], max_iterations, best["c"], start, time.perf_counter() - began))
            sys.stderr.flush()

    interrupted = False
    try:
        sol = scipy.optimize.minimize(lambda x: math.log(condition(x)), x0, method="SLSQP",
                                      constraints=[dict(type="ineq", fun=lambda x: G @ x + h, jac=lambda x: G)],
                                      options=dict(maxiter=int(max_iterations), ftol=1e-6), callback=callback)
        if np.all(G @ sol.x + h >= -1e-9):
            c = condition(sol.x)
            if c < best["c"]:
                best["x"], best["c"] = sol.x, c
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if show:
            sys.stderr.write("\n" if not interrupted else " interrupted: keeping the best so far\n")
            sys.stderr.flush()
    q0, a, b = unpack(best["x"])
    # a peak between the constraint points may pass a limit by a little: scale the harmonics down
    qq, qqd, qqdd = _series(q0, a, b, w, np.arange(CHECK_POINTS) * period / CHECK_POINTS)
    r = _limit_ratio(qq - q0, qqd, qqdd, q0, lo, hi, vmax, amax)
    if r > 1.0 - 1e-6:
        r *= 1.0 + 1e-6           # and a hair more for the peaks between even these points
        a, b = a / r, b / r
        x = best["x"].copy()
        x[:2 * nq * (L - 1)] /= r
        best["c"] = condition(x)
    return ExcitationTrajectory(joint_names=tuple(model.joint_names), period=float(period), offset=q0, a=a, b=b,
                                lower=lo, upper=hi, velocity=vmax, acceleration=amax, condition=best["c"],
                                initial_condition=start, samples=M, iterations=best["it"], interrupted=interrupted,
                                friction=bool(friction), parameters=base.count)
