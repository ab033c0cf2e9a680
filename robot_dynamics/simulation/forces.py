"""Force models: generalized forces and link wrenches that act on the arm.

A force model is any object with the :class:`ForceModel` interface. The
simulator adds the generalized forces of all its force models (and of its
:class:`~robot_dynamics.simulation.JointActuator`) to the joint torque, and
passes their link wrenches to :func:`robot_dynamics.aba` as ``f_ext``:

    qdd = aba(q, qd, sum_m tau_m(t, q, qd, command), f_ext = sum_m W_m(t, q, qd))

Built-in models: :class:`JointFriction` (each joint's friction law),
:class:`PositionLimits` (spring-damper stops at the URDF position limits) and
:class:`ExternalWrenches` (wrenches on links). Velocity limits act on the
velocities after each step (``constraints.py``); effort limits clamp the
motor torque (``commands.py``).
"""
from typing import NamedTuple, Optional, Protocol, runtime_checkable

import numpy as np

from ..algorithms.aba import aba
from ..algorithms.wrench import body_wrenches
from ..algorithms.kernels import jit
from ..algorithms.crba import mass_matrix
from ..analysis.friction import LawTable, friction_torques, law_table
from ..algorithms.kinematics import link_pose
from ..errors import InputError
from ..model.friction import torques as friction_law_torques
from .stiction import COULOMB, ROWS, VISCOUS, candidates, hold, law_rows, law_rows_band, law_torque


@runtime_checkable
class ForceModel(Protocol):
    """Interface of a force model (the physics plug-in for forces).

    ``generalized_force(model, t, q, qd, command)`` returns the model's
    contribution to the joint torque: an (nq,) array [N m or N] in
    ``model.joint_names`` order, positive along the joint axis (the same
    sign as a motor torque), or None when it contributes nothing (cheaper).
    ``t`` is the time [s], ``q`` and ``qd`` (nq,) the state at which the
    integrator evaluates the dynamics (possibly an intermediate RK4 stage),
    ``command`` the current :class:`~robot_dynamics.simulation.Command`
    (passive models ignore it). It must not modify its arguments and should
    be a pure function of them (the integrator may evaluate it at several
    stages of one step).

    Optionally, ``link_wrenches(model, t, q, qd)`` returns external wrenches
    acting on links, an array (len(model.link_names), 6) in the ``f_ext``
    convention of :func:`robot_dynamics.aba` (``[fx fy fz nx ny nz]`` in
    each link's own frame, moment about the link origin), or None.
    """

    def generalized_force(self, model, t: float, q: np.ndarray, qd: np.ndarray,
                          command) -> Optional[np.ndarray]:
        ...


class JointInertia:
    """Per-joint inertia scales of a model, sampled once over its workspace.

    The default stop stiffnesses scale with the inertia each joint drives,
    so that one setting suits a shoulder and a wrist. Sampled at ``samples`` poses drawn uniformly within the position
    limits (+-pi for unbounded joints), with a fixed seed.

    Attributes:
        smallest: (nq,) smallest effective inertia ``1 / (M^-1)_ii`` [kg m^2 or kg]:
            what joint i accelerates when every other joint is free.
        largest: (nq,) largest diagonal ``M_ii`` (every other joint locked).
        coupling: largest eigenvalue of ``D^1/2 M^-1 D^1/2`` with
            ``D = diag(smallest)`` over the samples (>= 1): how much stiffer
            the stiffest joint-space mode is when all joints push at once.
    """

    def __init__(self, model, samples=256, seed=0):
        lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
        hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
        Q = np.tile(model.neutral(), (samples, 1))         # a floating root: at its neutral pose, held
        Q[:, model.root_nq:] = np.random.default_rng(seed).uniform(lo, hi, (samples, len(model.joint_names)))
        M = mass_matrix(model, Q)[:, model.root_nv:, model.root_nv:]
        Minv = np.linalg.inv(M)
        self.smallest = 1.0 / np.einsum("bii->bi", Minv).max(axis=0)
        self.largest = np.einsum("bii->bi", M).max(axis=0)
        s = np.sqrt(self.smallest)
        self.coupling = float(np.linalg.eigvalsh(s[:, None] * Minv * s[None, :]).max())


class FrictionCoefficients(NamedTuple):
    """What :class:`JointFriction` applies: ``tau = -tau_f(qd)``, each joint's
    law; ``damping``, ``friction`` (nq,) their viscous and Coulomb parts
    (``tau = -(damping qd + friction tanh(qd / smoothing))`` for those
    laws; ``sgn`` for ``smoothing = 0``), ``active``: any nonzero;
    ``laws``: the (LROWS, nq) table of :mod:`.stiction` (every law,
    the stick band); ``stiction``: the stick-slip switch is on."""
    damping: np.ndarray
    friction: np.ndarray
    smoothing: float
    active: bool
    laws: Optional[np.ndarray] = None
    stiction: bool = False


class StopCoefficients(NamedTuple):
    """What :class:`PositionLimits` applies: :func:`stop_torques` with these (nq,)
    arrays; ``active``: some joint has a finite limit."""
    lower: np.ndarray
    upper: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    active: bool


def _coefficients(model, value, default, name):
    """(nq,) finite non-negative coefficients: ``default`` if value is None."""
    if value is None:
        return np.array(default, dtype=float)
    a = np.broadcast_to(np.asarray(value, dtype=float), (len(model.joint_names),)).copy()
    if not np.all(np.isfinite(a) & (a >= 0)):
        raise InputError("%s must be finite and >= 0 (one per joint: %s), got %r"
                         % (name, ", ".join(model.joint_names), value))
    return a


class JointFriction:
    """Each joint's friction law (``model.friction_laws``, docs/ACTUATORS.md),
    opposing the motion: ``tau = -tau_f(qd)``, :func:`robot_dynamics.friction_torques`.

    Two ways to integrate the jump of ``sign(qd)`` at zero velocity
    (docs/SIMULATION.md, "Friction and stiction"):

    - smoothing (``stiction=False``): ``sign`` becomes ``tanh(qd /
      smoothing)`` (a law's own ``smoothing`` first), a steep viscous slope
      ``f_c / smoothing`` below the smoothing velocity. A joint under a
      torque below ``f_c`` does not stick: it creeps at ``|qd| < smoothing
      * atanh(tau / f_c)``, a few ``smoothing``. The slope must stay
      integrable: ``dt f_c / smoothing`` well below the joint's smallest
      inertia (0 friction, as in the bundled URDFs, is always fine).
    - the stick-slip switch (``stiction=True``, :mod:`.stiction`,
      Karnopp 1985): the laws unsmoothed while the joint slips; a joint
      within ``stick_velocity`` of rest, or about to cross zero in the
      step, is held at rest by whatever torque that takes, up to what its
      law holds at ``+-stick_velocity`` (the static level), and breaks
      away beyond it. No creep, no chatter. Fixed-base models without mimic
      joints or loops (the others: smoothing).

    Args:
        model: the robot.
        smoothing: velocity scale [rad/s or m/s] of the tanh; 0 gives the
            discontinuous ``sgn`` (not recommended for integration without
            the switch). Not used with the switch.
        damping, friction: (nq,) coefficients [N m s/rad, N m] of a viscous +
            Coulomb law replacing the model's laws (not for models with
            mimic joints).
        stiction: the stick-slip switch; None: on when a joint has a
            stribeck or sigmoid law (and the model allows it), off
            otherwise (viscous and Coulomb laws smoothed, as before the laws).
        stick_velocity: the switch's band [rad/s or m/s], > 0.
    """

    def __init__(self, model, *, smoothing=0.01, damping=None, friction=None, stiction=None, stick_velocity=1e-3):
        if not (np.isfinite(smoothing) and smoothing >= 0):
            raise InputError("smoothing must be a finite velocity >= 0 [rad/s], got %r" % (smoothing,))
        if not (np.isfinite(stick_velocity) and stick_velocity > 0):
            raise InputError("stick_velocity must be a finite velocity > 0 [rad/s], got %r" % (stick_velocity,))
        if model.has_mimic and (damping is not None or friction is not None):
            raise InputError("custom damping/friction coefficients are not supported for %r, which has "
                             "mimic joints: its friction comes from the URDF" % model.name)
        custom = damping is not None or friction is not None
        self.smoothing = float(smoothing)
        self.damping = _coefficients(model, damping, model.damping, "damping")
        self.friction = _coefficients(model, friction, model.friction, "friction")
        self._mimic = model.has_mimic
        self._viscous = bool(np.any(self.damping))
        self._coulomb = bool(np.any(self.friction))
        table = None if custom or model.has_mimic else law_table(model)
        self._table = None if table is None else LawTable(model.friction_laws)
        self.stiction = self._stiction(model, stiction, custom)
        self.stick_velocity = float(stick_velocity)
        if model.has_mimic:                 # the laws of the bodies' joints (friction_torques' columns)
            self._laws = law_rows(law_table(model), model.nb, self.stick_velocity)
            if law_table(model) is None:
                self._laws[VISCOUS], self._laws[COULOMB] = model.body_damping, model.body_friction
                self._laws = law_rows_band(self._laws)
        else:
            self._laws = law_rows(self._table, len(model.joint_names), self.stick_velocity)
            if self._table is None:
                self._laws[VISCOUS], self._laws[COULOMB] = self.damping, self.friction
                self._laws = law_rows_band(self._laws)
        self._s = 0.0 if self.stiction else self.smoothing     # the slipping law's smoothing

    def _stiction(self, model, stiction, custom):
        allowed = model.root_joint is None and not model.loops and not model.has_mimic
        if stiction is None:
            return bool(allowed and self._table is not None and (self._table.stribeck or self._table.sigmoid))
        if stiction and not allowed:
            raise InputError("stiction: the stick-slip switch needs a fixed-base model without mimic joints "
                             "or loops; %r is not one (use stiction=False: the smoothed laws)" % model.name)
        return bool(stiction)

    def coefficients(self):
        """The friction laws as :class:`FrictionCoefficients`. With mimic
        joints the friction acts on each body (:func:`robot_dynamics.friction_torques`):
        ``laws`` is then (LROWS, nb), one column per body's joint, applied at
        ``multiplier * qd`` of the joint it follows and mapped back onto it
        (``G^T tau_f(G qd)``); no stiction."""
        if self._mimic:
            active = bool(np.any(self._laws[:ROWS] != 0.0))
            return FrictionCoefficients(self.damping, self.friction, self._s, active, self._laws, False)
        active = self._viscous or self._coulomb or self._table is not None
        return FrictionCoefficients(self.damping, self.friction, self._s, active, self._laws, self.stiction)

    def generalized_force(self, model, t, q, qd, command):
        if self._mimic:                     # the mimic map lives in friction_torques
            return -friction_torques(model, qd, smoothing=self.smoothing)
        if self._table is None and not self._coulomb:       # the common case: viscous only
            return -(self.damping * qd) if self._viscous else None
        return -friction_law_torques(self._laws, qd, self._s)   # the one law (model/friction.py), without checks

    def hold(self, model, q, qd, tau, qdd, dt, W=None):
        """The stick-slip switch on a fixed base: ``qdd`` (nq,), the
        accelerations under ``tau`` (every force, this friction slipping),
        with the stick candidates held (:mod:`.stiction`). Returns a new
        array, or ``qdd`` itself when no joint is a candidate."""
        n = qd.shape[0]
        S = np.empty(n, dtype=np.int64)
        m = candidates(self._laws, qd, qdd, dt, S)
        if m == 0:
            return qdd
        tau = tau.copy()
        for k in range(m):
            tau[S[k]] += law_torque(self._laws, S[k], qd[S[k]], self._s)
        x = aba(model, q, qd, tau, W)
        C = np.empty((n, n))
        for k in range(m):
            tau[S[k]] += 1.0
            C[:, k] = aba(model, q, qd, tau, W) - x
            tau[S[k]] -= 1.0
        hold(self._laws, x, C, S, m, -qd / dt, np.empty(n))
        return x


@jit
def stop_torques(q, qd, lower, upper, k, c, tau):
    """Kelvin-Voigt stops that only push: tau_i = -(k_i e_i + c_i qd_i) beyond a
    limit (e_i the penetration), clamped so the stop never pulls.

    All arguments (nq,): positions, velocities, limits, stiffness k, damping c;
    writes the torques into ``tau``. Returns True if any stop acts."""
    hit = False
    for i in range(q.shape[0]):
        tau[i] = 0.0
        if q[i] > upper[i]:
            f = k[i] * (q[i] - upper[i]) + c[i] * qd[i]
            if f > 0.0:
                tau[i] = -f
                hit = True
        elif q[i] < lower[i]:
            f = k[i] * (q[i] - lower[i]) + c[i] * qd[i]
            if f < 0.0:
                tau[i] = -f
                hit = True
    return hit


class PositionLimits:
    """Position limits as stiff, damped end stops (a penalty model).

    Beyond a limit the joint meets a linear spring-damper,
    ``tau = -(k e + c qd)`` with ``e`` the penetration past the limit, and
    the stop only pushes (the damper does not glue a joint that leaves the
    stop). A stop cannot be tunnelled through: its force grows without bound
    with the penetration, so a joint pushed by a constant torque ``tau``
    settles at ``e = tau / k`` (:attr:`overshoot_at_full_effort` for
    ``tau = effort_limit``), plus a transient of about ``qd / omega`` when
    it arrives with speed ``qd``. Joints without limits (continuous) get no stop.

    Default stiffness and damping: the stiffest mode of all stops together,
    over the model's workspace, has natural frequency ``frequency`` and
    damping ratio ``damping_ratio`` (``k_i = m_i w^2 / coupling``,
    ``c_i = 2 zeta k_i / w``, with ``m_i`` and ``coupling`` from
    :class:`JointInertia`). ``frequency`` defaults to ``0.6 / dt``, as stiff
    as explicit fixed-step integration allows with margin: semi-implicit
    Euler needs ``w dt < 1`` at ``zeta = 1``, RK4 about ``w dt < 2.7``.

    Args:
        model: the robot (``model.lower_limit``, ``model.upper_limit``).
        stiffness: (nq,) [N m/rad or N/m], or None for the default.
        damping: (nq,) [N m s/rad or N s/m], or None for the default.
        dt: the simulator's step [s] (sets the default frequency).
        frequency: natural frequency w [rad/s] for the defaults.
        damping_ratio: zeta for the default damping.
        inertia: a :class:`JointInertia` of the model, to reuse one already sampled.
    """

    def __init__(self, model, stiffness=None, damping=None, *, dt=1e-3, frequency=None,
                 damping_ratio=1.0, inertia=None):
        if not (np.isfinite(dt) and dt > 0):
            raise InputError("dt must be a finite time step > 0 [s], got %r" % (dt,))
        w = 0.6 / dt if frequency is None else float(frequency)
        if not (np.isfinite(w) and w > 0 and np.isfinite(damping_ratio) and damping_ratio >= 0):
            raise InputError("frequency must be > 0 [rad/s] and damping_ratio >= 0, got %r and %r"
                             % (frequency, damping_ratio))
        if stiffness is None:
            inertia = inertia or JointInertia(model)
            stiffness = inertia.smallest * w ** 2 / inertia.coupling
        self.stiffness = _coefficients(model, stiffness, None, "stiffness")
        self.damping = _coefficients(model, damping, 2.0 * damping_ratio * self.stiffness / w, "damping")
        self.lower = np.array(model.lower_limit, dtype=float)
        self.upper = np.array(model.upper_limit, dtype=float)
        self._active = bool(np.any(np.isfinite(self.lower) | np.isfinite(self.upper)))
        self._effort = np.array(model.effort_limit, dtype=float)
        self._tau = np.empty(len(model.joint_names))

    @property
    def overshoot_at_full_effort(self):
        """(nq,) static penetration [rad or m] of a joint pushed into its stop
        by ``model.effort_limit``: ``effort_limit / k`` (inf without an effort limit)."""
        with np.errstate(divide="ignore"):
            return self._effort / self.stiffness

    def coefficients(self):
        """The stops as :class:`StopCoefficients` (lower, upper, stiffness, damping, active)."""
        return StopCoefficients(self.lower, self.upper, self.stiffness, self.damping, self._active)

    def generalized_force(self, model, t, q, qd, command):
        if self._active and stop_torques(q, qd, self.lower, self.upper, self.stiffness, self.damping,
                                          self._tau):
            return self._tau.copy()
        return None


class ExternalWrenches:
    """Constant wrenches applied to links until changed or cleared.

    A wrench is ``[fx, fy, fz, nx, ny, nz]`` [N, N m] acting ON the link, at
    the link frame origin (moment about that origin), with components either
    in the link's own frame (``frame='link'``, the ``f_ext`` convention of
    :func:`robot_dynamics.aba`: it turns with the link) or in the base frame
    (``frame='base'``: a fixed direction in space, e.g. a hanging weight;
    rotated into the link frame at every evaluation).
    """

    def __init__(self, model):
        self._nl = len(model.link_names)
        self._model = model
        self._local = {}                 # link -> (6,) in the link frame
        self._base = {}                  # link -> (6,) in the base frame
        self._constant = None            # (nl, 6) sum of the link-frame wrenches, or None
        self._compiled = None            # compiled(), made on first use after a change

    def set(self, link, wrench, frame="link"):
        """Apply ``wrench`` (6,) to ``link`` (replaces the link's previous one);
        a zero wrench removes it. ValueError (and no change) on bad input."""
        self._model.link_index(link)                 # ValueError listing the links
        if frame not in ("link", "base"):
            raise InputError("wrench frame must be 'link' or 'base', got %r" % (frame,))
        try:
            w = np.array(wrench, dtype=float)
        except (TypeError, ValueError):
            raise InputError("wrench on %r must be 6 numbers [fx fy fz nx ny nz], got %r" % (link, wrench)) from None
        if w.shape != (6,):
            raise InputError("wrench on %r must have 6 values [fx fy fz nx ny nz], got shape %s"
                             % (link, w.shape))
        if not np.all(np.isfinite(w)):
            raise InputError("wrench on %r is not finite: %s" % (link, w))
        self._local.pop(link, None)
        self._base.pop(link, None)
        if np.any(w):
            (self._local if frame == "link" else self._base)[link] = w
        self._rebuild()

    def clear(self, link=None):
        """Remove the wrench on ``link``, or all wrenches if None."""
        if link is None:
            self._local.clear()
            self._base.clear()
        else:
            self._model.link_index(link)
            self._local.pop(link, None)
            self._base.pop(link, None)
        self._rebuild()

    def is_empty(self):
        """True when no wrench is applied (:meth:`link_wrenches` returns None)."""
        return not self._local and not self._base

    @property
    def wrenches(self):
        """{link: (frame, (6,) wrench)} currently applied (copies)."""
        out = {link: ("link", w.copy()) for link, w in self._local.items()}
        out.update({link: ("base", w.copy()) for link, w in self._base.items()})
        return out

    def _rebuild(self):
        self._compiled = None
        if self.is_empty():
            self._constant = None
            return
        W = np.zeros((self._nl, 6))
        for link, w in self._local.items():
            W[self._model.link_index(link)] += w
        self._constant = W

    def compiled(self):
        """The wrenches for the simulator's compiled step
        (:func:`.fused.stage_wrenches`): ``(F0, BW, BB, BP)``, F0 (nb, 6) the
        link-frame wrenches as body wrenches [n; f] about the body origins
        ((0, 6) when no wrench is applied), BW (k, 6) the base-frame ones,
        BB (k,) their bodies, BP (k, 3) their links' origins in the body
        frames (links on the base are left out: nothing moves them)."""
        if self._compiled is None:
            m = self._model
            if self.is_empty():
                self._compiled = (np.empty((0, 6)), np.empty((0, 6)), np.empty(0, dtype=np.int64), np.empty((0, 3)))
            else:
                F0 = body_wrenches(m, np.zeros((self._nl, 6)) if self._constant is None else self._constant, (), 1)[0]
                base = [(m.link_index(link), w) for link, w in self._base.items()
                        if m.link_body[m.link_index(link)] >= 0]
                BW = np.array([w for _, w in base], dtype=float).reshape(-1, 6)
                BB = np.array([m.link_body[i] for i, _ in base], dtype=np.int64)
                BP = np.array([m.link_pose_rows[i][[3, 7, 11]] for i, _ in base], dtype=float).reshape(-1, 3)
                self._compiled = (np.ascontiguousarray(F0), BW, BB, BP)
        return self._compiled

    def generalized_force(self, model, t, q, qd, command):
        return None

    def link_wrenches(self, model, t, q, qd):
        if not self._base:
            return self._constant
        W = self._constant.copy()
        for link, w in self._base.items():
            R = link_pose(model, q, link)[:3, :3]        # base <- link
            i = model.link_index(link)
            W[i, :3] += w[:3] @ R                        # R^T f
            W[i, 3:] += w[3:] @ R                        # R^T n
        return W
