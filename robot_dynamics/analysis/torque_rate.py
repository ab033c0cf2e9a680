"""The torque-rate limit of the impedance laws and of dynamics_node's impedance modes, and the
former keyword names the laws still take for one release (:func:`renamed`).

Each torque changes by at most ``max_torque_rate`` [N m/s] times the time since the last torque [s];
Franka's examples use 1000 N m/s (1 N m per 1 ms step).
"""
import math
import warnings

import numpy as np

from ..errors import InputError
from . import impedance_inputs as inputs


class TorqueRateLimit:
    """Each torque changes by at most ``max_rate`` [N m/s] times the time since the last torque [s]
    between two single-state calls (None: no limit); the one torque-rate limiter of the package: the
    laws' ``max_torque_rate`` and dynamics_node's (:class:`robot_dynamics.control.impedance_target.TorqueRate`
    gives it the node-clock time).

    Args:
        max_rate: scalar or (n,) [N m/s], or None.
        n: the number of torques (a scalar rate is kept scalar).
        period: the time [s] used when a call gives none.

    Attributes:
        max_rate, period: as given; last: the last torque (n,) or None (without a limit, :meth:`apply_finite`
            does not keep it); limited: the number of calls
            whose torque was limited; kept: whether the last call's torque was finite (it is the last).
    """

    def __init__(self, max_rate, n, period=1e-3):
        self.max_rate = None if max_rate is None else (
            inputs.positive(float(max_rate), 'max_torque_rate') if np.ndim(max_rate) == 0
            else inputs.limits(max_rate, n, 'max_torque_rate'))
        self.period = inputs.positive(period, 'period')
        self.period_step = None if self.max_rate is None else self.max_rate * self.period      # [N m]
        self._rates = None if self.max_rate is None else _vector(self.max_rate)     # (n,) or (1,): within_step's
        from ..algorithms import vectors        # compiled passes; not at the package's import (numba's compiler)
        self._vectors = vectors
        self.last = None
        self.limited = 0
        self.kept = False

    @classmethod
    def of_law(cls, law, max_torque_rate, max_torque_step, period, n):
        """The limiter of ``law`` (its class name) from its ``max_torque_rate`` [N m/s] or the deprecated
        ``max_torque_step`` [N m per call of ``period``], which it keeps exactly as the period's step."""
        rate = max_torque_rate
        if max_torque_step is not None:
            step = inputs.limits(max_torque_step, n, 'max_torque_step')
            rate = renamed(law, 'max_torque_step', step / period, 'max_torque_rate', max_torque_rate,
                           ' [N m/s] = max_torque_step / period', stacklevel=4)
        limit = cls(rate, n, period)
        if max_torque_step is not None:
            limit.period_step = step
        return limit

    def reset(self):
        """Forget the last torque (the next call is not limited)."""
        self.last = None

    def apply_finite(self, tau, dt=None):
        """:meth:`apply` for one state's torque (n,) known to be finite (a law's kernel checked it); without a
        limit nothing is copied (no later call reads the last torque)."""
        if self.max_rate is None:
            self.kept = True
            return tau
        return self.apply(tau, dt)

    def apply(self, tau, dt=None):
        """``tau`` (n,) within ``max_rate * dt`` [N m] of the last torque (``dt`` [s] >= 0; None: the
        period); a batch (B, n) is returned as it is. A non-finite torque is not limited and never
        becomes the last. Where the limit does not bind, ``tau`` itself is returned and nothing is
        allocated (one compiled pass for a contiguous float64 ``tau``,
        :func:`robot_dynamics.algorithms.vectors.within_step`)."""
        if tau.ndim != 1:
            return tau
        last, self.kept = self.last, True
        if self.max_rate is not None and last is not None:
            if dt is None:
                step, rates, scale = self.period_step, self._period_steps, 1.0
            elif 0.0 <= dt < math.inf:
                step, rates, scale = None, self._rates, dt
            else:
                raise InputError('dt must be the time since the last torque, finite and >= 0 [s]; got %r' % (dt,))
            try:        # one pass: it does not bind and tau is finite (tau is then the last), or not
                if self._vectors.within_step(tau, last, rates, scale):
                    return tau
                binds = tau.shape == last.shape and len(rates) in (1, len(tau))
            except TypeError:                                   # not a contiguous float64 vector: numpy's way
                binds = False
            if step is None:
                step = self.max_rate * dt
            if not binds:
                move = np.subtract(tau, last)
                if (np.abs(move, out=move) <= step).all():      # it does not bind, and tau is finite
                    np.copyto(last, tau)
                    return tau
            limited = np.clip(tau, last - step, last + step)
            self.limited += not np.array_equal(limited, tau)
            tau = limited
        self.kept = self._finite(tau)
        if self.kept:
            self._keep(tau)
        return tau

    @property
    def period_step(self):
        """The step [N m] of a call without ``dt``: ``max_rate * period`` (scalar or (n,)), or None."""
        return self._period_step

    @period_step.setter
    def period_step(self, step):
        self._period_step = step
        self._period_steps = None if step is None else _vector(step)

    def _finite(self, tau):
        """Whether every value of ``tau`` (n,) is finite (one compiled pass for float64)."""
        try:
            return self._vectors.all_finite(tau)
        except TypeError:
            return bool(np.isfinite(tau).all())

    def _keep(self, tau):
        """``tau`` becomes the last torque (into the last one's buffer when it has the shape)."""
        last = self.last
        if last is not None and last.shape == tau.shape:
            np.copyto(last, tau)
        else:
            self.last = np.array(tau, dtype=float)


def _vector(x):
    """``x`` (a scalar or (n,)) as a contiguous float64 vector ((1,) for a scalar), for :func:`within_step`."""
    return np.ascontiguousarray(np.atleast_1d(np.asarray(x, dtype=float)).ravel())


def renamed(law, old, old_value, new, new_value, unit='', stacklevel=3):
    """``new_value``, or ``old_value`` of the deprecated keyword ``old`` with a DeprecationWarning
    naming ``new``; both given: InputError."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise InputError('%s: give %s only (%s is its former name)' % (law, new, old))
    warnings.warn('%s(%s=...) is deprecated: use %s=...%s' % (law, old, new, unit), DeprecationWarning,
                  stacklevel=stacklevel)
    return old_value
