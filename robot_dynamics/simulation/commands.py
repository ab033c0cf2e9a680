"""Joint commands and the actuator that turns them into motor torques.

The convention of ros2_control's topic-based hardware: every joint has one
command interface at a time, ``'effort'`` [N m or N], ``'position'`` [rad or m]
or ``'velocity'`` [rad/s or m/s]. Position and velocity commands are tracked
by a PD servo inside the simulated drive (with the arm's inverse dynamics as
feed-forward; evaluated continuously, at every integrator stage); all motor
torques are clamped to ``model.effort_limit``. Commands are held constant
between the calls that set them (zero-order hold).
"""
from typing import NamedTuple

import numpy as np

from ..algorithms.kernels import jit
from ..algorithms.rnea import rnea
from ..errors import InputError

EFFORT, POSITION, VELOCITY = 0, 1, 2
MODES = ("effort", "position", "velocity")


class Command(NamedTuple):
    """One command per joint (immutable; build new ones with :meth:`updated`).

    Attributes:
        mode: (nq,) int codes, ``EFFORT`` (0), ``POSITION`` (1) or ``VELOCITY`` (2).
        value: (nq,) command values in the units of each joint's mode, already
            clamped to the joint's limits.
    """
    mode: np.ndarray
    value: np.ndarray

    @classmethod
    def zero(cls, nq):
        """Zero effort on every joint (a limp arm)."""
        return cls(_frozen(np.zeros(nq, dtype=np.int8)), _frozen(np.zeros(nq)))

    def modes(self, model):
        """{joint name: mode name}."""
        return {n: MODES[m] for n, m in zip(model.joint_names, self.mode)}

    def updated(self, model, values, mode="effort", joints=None):
        """A new Command with ``values`` set for ``joints`` (all joints if None).

        Args:
            model: the robot.
            values: one number per joint in ``joints``, or a dict
                {joint name: value} (then ``joints`` must be None).
            mode: ``'effort'``, ``'position'`` or ``'velocity'``, or one mode per joint.
            joints: joint names the values are for; None: all of
                ``model.joint_names``, in that order.

        Position commands are clamped to the position limits, velocity
        commands to +-velocity_limit and efforts to +-effort_limit.

        Raises:
            ValueError: unknown joint or mode, wrong number of values, or a
                value that is not a finite number; nothing changes then.
        """
        if isinstance(values, dict):
            if joints is not None:
                raise InputError("give the joints either as dict keys or as joints=, not both")
            joints, values = list(values), list(values.values())
        if joints is None:
            idx, names = None, model.joint_names
        else:
            names = [joints] if isinstance(joints, str) else list(joints)
            idx = np.array([_joint_index(model, j) for j in names], dtype=int)
            if len(set(idx.tolist())) != len(idx):
                raise InputError("a joint appears twice in the command: %s" % (names,))
        v = _values(values, names, len(names))
        m = _mode_codes(mode, names)
        if idx is None:                                  # all joints: nothing to merge
            new_mode, new_value = m, v
        else:
            new_mode, new_value = self.mode.copy(), self.value.copy()
            new_mode[idx], new_value[idx] = m, v
        lo, hi = _bounds(model, new_mode)
        return Command(_frozen(new_mode), _frozen(np.minimum(np.maximum(new_value, lo), hi)))


def _values(values, names, n):
    """(n,) finite float array or ValueError naming the joint."""
    try:
        v = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise InputError("command values must be numbers, got %r" % (values,)) from None
    if v.ndim == 0 and n == 1:
        v = v.reshape(1)
    if v.shape != (n,):
        raise InputError("command has %s, expected %d (one per joint: %s)"
                         % ("%d values" % v.size if v.ndim == 1 else "shape %s" % (v.shape,),
                            n, ", ".join(names)))
    if not np.isfinite(v).all():
        k = int(np.flatnonzero(~np.isfinite(v))[0])
        raise InputError("command for %s is %r: commands must be finite numbers" % (names[k], float(v[k])))
    return v


def _bounds(model, mode):
    """(lo, hi) per joint for its mode: effort, position or velocity limits."""
    if not mode.any():                                   # all effort (the common case)
        return -model.effort_limit, model.effort_limit
    pos, vel = mode == POSITION, mode == VELOCITY
    hi = np.where(pos, model.upper_limit, np.where(vel, model.velocity_limit, model.effort_limit))
    lo = np.where(pos, model.lower_limit, np.where(vel, -model.velocity_limit, -model.effort_limit))
    return lo, hi


def _joint_index(model, name):
    try:
        return model.joint_names.index(name)
    except ValueError:
        raise InputError("unknown joint %r in the command; the model's joints are: %s"
                         % (name, ", ".join(model.joint_names))) from None


def _mode_codes(mode, names):
    n = len(names)
    if isinstance(mode, str) and mode in MODES:
        return np.full(n, MODES.index(mode), dtype=np.int8)
    modes = [mode] * n if isinstance(mode, str) else list(mode)
    if len(modes) != n:
        raise InputError("got %d command modes for %d joints" % (len(modes), n))
    bad = [(m, j) for m, j in zip(modes, names) if m not in MODES]
    if bad:
        raise InputError("unknown command mode %r for %s; expected 'effort', 'position' or 'velocity'" % bad[0])
    return np.array([MODES.index(m) for m in modes], dtype=np.int8)


def _frozen(a):
    a.setflags(write=False)
    return a


class ActuatorCoefficients(NamedTuple):
    """The drive law of a :class:`JointActuator` for one command, all (nq,) read-only::

        tau = clip(effort + servo * rnea(q, qd, a), lower, upper),  a = a0 - Kq q - Kqd qd

    ``servo`` is 1 on position and velocity joints, 0 on effort joints
    (``a0 = kp u, Kq = kp, Kqd = kd`` for position, ``a0 = kv u, Kqd = kv``
    for velocity); ``lower``, ``upper`` are -+ ``effort_limit``. ``servoed``
    False: no joint is servoed and ``tau = effort`` (already clipped; no RNEA).
    """
    effort: np.ndarray
    servo: np.ndarray
    a0: np.ndarray
    Kq: np.ndarray
    Kqd: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    servoed: bool


class JointActuator:
    """The joint drives: a :class:`Command` in, clamped motor torques out.

    Per joint, by mode, with ``u`` the command::

        effort:    tau_i = u_i
        position:  tau_i = rnea(q, qd, a)_i,  a_i = kp_i (u_i - q_i) - kd_i qd_i
        velocity:  tau_i = rnea(q, qd, a)_i,  a_i = kv_i (u_i - qd_i)
        then       tau = clip(tau, -effort_limit, effort_limit)

    (``a_i = 0`` for effort joints). The position and velocity loops are
    PD servos with an inverse-dynamics feed-forward (computed-torque
    control, Siciliano et al., *Robotics: Modelling, Planning and Control*,
    sec. 8.5.2): when every joint is position or velocity controlled and no
    limit saturates, each joint's error obeys ``e'' + kd e' + kp e = 0``
    (or ``e' + kv e = 0``) exactly, whatever the pose, the gravity and the
    other joints do. So the per-joint gains are per unit inertia: ``kp``
    [1/s^2], ``kd`` and ``kv`` [1/s]. Joints in effort mode are not
    compensated; they feel the reaction of the servoed ones.

    A drive with fixed torque gains tuned for one inertia is either
    sluggish or unstable somewhere in the workspace of an arm whose joint
    inertias vary 40-fold (the Panda's first joint): that is why the
    servo here uses the model.

    Args:
        model: the robot.
        kp, kd, kv: (nq,) or scalar gains, or None: critically damped at
            ``bandwidth``, ``kp = w^2``, ``kd = 2 w``, ``kv = 2 w``.
        bandwidth: w [rad/s] for the default gains.
    """

    def __init__(self, model, *, kp=None, kd=None, kv=None, bandwidth=20.0):
        if not (np.isfinite(bandwidth) and bandwidth > 0):
            raise InputError("bandwidth must be a finite frequency > 0 [rad/s], got %r" % (bandwidth,))
        w = float(bandwidth)
        gains = {}
        for name, value, default in (("kp", kp, w * w), ("kd", kd, 2.0 * w), ("kv", kv, 2.0 * w)):
            a = default if value is None else value
            try:
                a = np.broadcast_to(np.asarray(a, dtype=float), (len(model.joint_names),)).copy()
            except (TypeError, ValueError):
                raise InputError("%s must be %d gains (or one), got %r"
                                 % (name, len(model.joint_names), value)) from None
            if not np.all(np.isfinite(a) & (a >= 0)):
                raise InputError("%s must be finite gains >= 0, one per joint, got %r" % (name, value))
            gains[name] = a
        self.kp, self.kd, self.kv = gains["kp"], gains["kd"], gains["kv"]
        self._hi = _frozen(np.array(model.effort_limit, dtype=float))
        self._lo = _frozen(-self._hi)
        self._command = None

    def coefficients(self, command):
        """The drive law for ``command`` (a :class:`Command`), as :class:`ActuatorCoefficients`.

        The law depends on the command only, not on the state: the motor
        torque at ``(q, qd)`` is ``clip(effort + servo * rnea(q, qd, a0 - Kq q
        - Kqd qd), lower, upper)``, as :meth:`generalized_force` evaluates it.
        Cached for the last command; the arrays are read-only.
        """
        if command is not self._command:
            self._law, self._constant = self._law_for(command)
            self._command = command
        return self._law

    def _law_for(self, command):
        """(ActuatorCoefficients, the constant torque of an all-effort command or None)."""
        u, mode = command.value, command.mode
        zero = _frozen(np.zeros(u.shape[0]))
        if not mode.any():                                          # every joint EFFORT (== 0)
            constant = _frozen(np.clip(u, self._lo, self._hi)) if u.any() else None
            effort = zero if constant is None else constant
            return ActuatorCoefficients(effort, zero, zero, zero, zero, self._lo, self._hi, False), constant
        P = (mode == POSITION).astype(float)
        V = (mode == VELOCITY).astype(float)
        law = ActuatorCoefficients(
            effort=_frozen(np.where(mode == EFFORT, u, 0.0)), servo=_frozen(P + V),
            a0=_frozen(P * self.kp * u + V * self.kv * u), Kq=_frozen(P * self.kp),
            Kqd=_frozen(P * self.kd + V * self.kv), lower=self._lo, upper=self._hi, servoed=True)
        return law, None

    def generalized_force(self, model, t, q, qd, command):
        c = self.coefficients(command)
        if not c.servoed:
            return self._constant
        a = _reference_acceleration(c.a0, c.Kq, c.Kqd, q, qd)
        return _combine(c.effort, c.servo, rnea(model, q, qd, a), c.lower, c.upper)


@jit
def _reference_acceleration(a0, Kq, Kqd, q, qd):
    """a_i = a0_i - Kq_i q_i - Kqd_i qd_i (kp (u - q) - kd qd, or kv (u - qd), or 0)."""
    a = np.empty_like(q)
    for i in range(q.shape[0]):
        a[i] = a0[i] - Kq[i] * q[i] - Kqd[i] * qd[i]
    return a


@jit
def _combine(effort, servo, tau_id, lo, hi):
    """tau_i = clip(effort_i + servo_i tau_id_i, lo_i, hi_i)."""
    tau = np.empty_like(effort)
    for i in range(effort.shape[0]):
        tau[i] = min(max(effort[i] + servo[i] * tau_id[i], lo[i]), hi[i])
    return tau
