"""Compiled one-pass checks of small vectors, for the torque loop of the nodes (robot_dynamics.control).

Each is one call of about a quarter of a microsecond where the same with
numpy's reductions (``sum``, ``abs``, ``greater``, ``any``) took 1.3 to
2.8 us: at 1 kHz of joint states they were a fifth of dynamics_node's
whole callback (docs/PERFORMANCE.md). They live in a kernel layer so that
numba's cache is keyed on their source (robot_dynamics/cache.py).
"""
import math

import numba
from numba import types

# Every float64 vector a message gives: contiguous or not, read-only (a view of the received bytes) or
# not. Each an exact signature: numba finds two that a conversion fits ambiguous.
_VECTORS = [types.Array(types.float64, 1, layout, readonly=ro) for layout in 'CA' for ro in (False, True)]
_STATE = types.Array(types.float64, 1, 'C')


@numba.njit([types.boolean(x) for x in _VECTORS], cache=True)
def all_finite(x):
    """Whether every value of ``x`` (n,) is finite (one compiled call: 0.3 us where numpy's took 1.3)."""
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return False
    return True


@numba.njit([types.boolean(x, _STATE) for x in _VECTORS], cache=True)
def copy_finite(src, dst):
    """``dst[:] = src`` ((n,) each, dst contiguous) if every value of ``src`` is finite (True); else False, dst untouched."""
    for k in range(src.shape[0]):
        if not math.isfinite(src[k]):
            return False
    dst[:] = src
    return True


_VECTOR = types.Array(types.float64, 1, 'A')
WITHIN, CLAMPED, NOT_FINITE = 0, 1, 2


@numba.njit([types.int64(_VECTOR, _VECTOR)], cache=True)
def clamp(tau, limit):
    """Clamp ``tau`` (n,) to ``[-limit, limit]`` (n,) in place: WITHIN, CLAMPED, or NOT_FINITE (tau untouched).

    One compiled call of the torque loop (a quarter of a microsecond; the same with numpy's
    sum, abs, greater and any took 2.8 us, a tenth of the node's whole callback)."""
    for k in range(tau.shape[0]):
        if not math.isfinite(tau[k]):
            return 2
    status = 0
    for k in range(tau.shape[0]):
        if tau[k] > limit[k]:
            tau[k], status = limit[k], 1
        elif tau[k] < -limit[k]:
            tau[k], status = -limit[k], 1
    return status


@numba.njit([types.boolean(_STATE, _STATE, _STATE, types.float64)], cache=True)
def within_step(tau, last, rate, dt):
    """Whether every ``|tau[k] - last[k]| <= rate[k] * dt`` (tau, last (n,); rate (n,) or (1,) for all
    joints; dt [s]); if so ``last[:] = tau``. False, last untouched, where one is not (a non-finite value
    neither) or the lengths differ. The torque-rate limit's common case (analysis/torque_rate.py) in one
    call (0.3 us where numpy's subtract, abs, less_equal and all took 2)."""
    n, m = tau.shape[0], rate.shape[0]
    if last.shape[0] != n or (m != n and m != 1):
        return False
    for k in range(n):
        if not abs(tau[k] - last[k]) <= rate[k if m == n else 0] * dt:
            return False
    last[:] = tau
    return True
