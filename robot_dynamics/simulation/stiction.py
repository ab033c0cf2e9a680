"""The friction laws in the simulator, with a stick-slip switch at zero velocity.

A joint whose law has a static level (coulomb, stribeck, a steep sigmoid)
cannot be integrated with its discontinuous ``sign(v)``: at a fixed step
the velocity overshoots zero, the friction flips, and the joint chatters.
Smoothing ``sign`` into ``tanh(v / s)`` removes the chatter, but the
joint then creeps under any torque (at ``v ~ s atanh(tau / f_s)``) and
the steep slope ``f_s / s`` destabilises the explicit integrators.

Instead the simulator uses Karnopp's stick-slip switch (D. Karnopp,
*Computer simulation of stick-slip friction in mechanical dynamic
systems*, ASME J. Dyn. Sys., Meas., Control 107(1), 1985), extended to
the coupled joints of an arm. At each evaluation of the dynamics:

1. every joint slips: its friction is ``-tau_f(qd_i)``, the law;
2. a joint is a *stick candidate* when its law holds a nonzero torque at
   zero velocity and it is inside the stick band ``|qd_i| <=
   stick_velocity`` or its slipping acceleration would carry it through
   zero within the step (``qd_i (qd_i + dt qdd_i) < 0``);
3. the candidates' friction torques ``u_S`` are solved for so that their
   velocities reach zero at the end of the step, ``qdd_S = -qd_S / dt``,
   with the other joints' motion included (``qdd = qdd_0 + M^-1_{:,S}
   u_S``: the columns of ``M^-1`` from the forward dynamics, which is
   affine in the torque);
4. a candidate whose torque exceeds what its law can hold, ``[-tau_f(+v_s),
   -tau_f(-v_s)]`` with ``v_s`` the stick velocity, slips with the bound
   (the worst first, then the rest solved again): it breaks away at the
   static level.

A joint at rest under torques its static friction holds stays exactly at
rest; a joint arriving at zero velocity stops there in one step, without
reversing; the friction torque never exceeds the law's level, so it only
takes energy out of the motion. The laws with no static level (viscous,
a coulomb law with its own smoothing) are evaluated as they are.

The laws themselves are :func:`robot_dynamics.model.friction.law_torque` and
its slope, written once there: the table L here is that module's
coefficient table with three rows of the switch's own after it.
"""
import numpy as np

from ..algorithms.kernels import jit
from ..model.friction import (COULOMB, EXCESS, PHI1, ROWS, SMOOTH, VISCOUS, law_slope,  # noqa: F401
                              law_torque)  # (re-exported: the simulator's compiled step calls them from here)

# Rows of the per-joint law table L (LROWS, nq), from law_rows(): the laws' coefficients
# (model/friction.py's rows 0 .. ROWS - 1), then the stick band.
(HOLD_LO, HOLD_HI, STICK_V) = range(ROWS, ROWS + 3)
LROWS = ROWS + 3


def law_rows(table, nq, stick_velocity):
    """The (LROWS, nq) table of :func:`law_torque` from a
    :class:`~robot_dynamics.analysis.friction.LawTable` of the joints (or
    None: zero laws), with its stick band (:func:`law_rows_band`)."""
    L = np.zeros((LROWS, nq))
    if table is not None:
        L[:ROWS] = table.C
    L[STICK_V] = stick_velocity
    return law_rows_band(L)


def law_rows_band(L):
    """L with HOLD_LO, HOLD_HI set: the friction torques ``-tau_f(+v_s)``,
    ``-tau_f(-v_s)`` (v_s = STICK_V) bounding what each joint holds at rest,
    0 and 0 for a law without a static level (viscous, or smoothed by its
    own ``smoothing``)."""
    for i in range(L.shape[1]):
        v = L[STICK_V, i]
        lo, hi = -law_torque(L, i, v, 0.0), -law_torque(L, i, -v, 0.0)
        static = L[COULOMB, i] > 0 or L[EXCESS, i] != 0 or L[PHI1, i] > 0
        L[HOLD_LO, i], L[HOLD_HI, i] = (min(lo, 0.0), max(hi, 0.0)) if static and L[SMOOTH, i] == 0.0 else (0.0, 0.0)
    return L


@jit
def candidates(L, qd, x, scale, S):
    """Write the stick candidates into S; return their number. ``x`` is the
    slipping velocity change per unit ``scale`` (qdd with scale = dt, or
    the step's dv with scale = 1)."""
    m = 0
    for i in range(qd.shape[0]):
        if L[HOLD_LO, i] == 0.0 and L[HOLD_HI, i] == 0.0:
            continue
        if abs(qd[i]) <= L[STICK_V, i] or qd[i] * (qd[i] + scale * x[i]) < 0.0:
            S[m] = i
            m += 1
    return m


@jit
def hold(L, x, C, S, m, target, u):
    """Karnopp's switch for the candidates S[:m]: ``x <- x + C[:, :m] u``
    with ``u`` (m,) such that ``x[S] = target[S]`` for the joints held, each
    u_k within [HOLD_LO, HOLD_HI] of its joint; the worst violator slips at
    its bound, the rest are solved again. ``C[:, k]`` is the response of x
    to a unit friction torque on joint S[k]."""
    held = np.ones(m, dtype=np.bool_)
    for k in range(m):
        u[k] = 0.0
    for _ in range(m):
        idx = np.empty(m, dtype=np.int64)
        r = 0
        for k in range(m):
            if held[k]:
                idx[r] = k
                r += 1
        if r == 0:
            break
        A, b = np.empty((r, r)), np.empty(r)
        for a in range(r):
            i = S[idx[a]]
            b[a] = target[i] - x[i]
            for k in range(m):
                if not held[k]:
                    b[a] -= C[i, k] * u[k]
            for c in range(r):
                A[a, c] = C[i, idx[c]]
        if not solve(A, b):
            break
        worst, excess = -1, 0.0
        for a in range(r):
            k = idx[a]
            lo, hi = L[HOLD_LO, S[k]], L[HOLD_HI, S[k]]
            over = max(b[a] - hi, lo - b[a]) / max(hi - lo, 1e-300)
            if over > excess:
                worst, excess = a, over
        if worst < 0:
            for a in range(r):
                u[idx[a]] = b[a]
            break
        k = idx[worst]
        u[k] = min(max(b[worst], L[HOLD_LO, S[k]]), L[HOLD_HI, S[k]])
        held[k] = False
    for i in range(x.shape[0]):
        for k in range(m):
            x[i] += C[i, k] * u[k]


@jit
def solve(A, b):
    """b <- A^-1 b, Gaussian elimination with partial pivoting (A overwritten); False if
    singular. Small systems: the stick set here, the implicit Euler step in :mod:`.fused`."""
    n = A.shape[0]
    for k in range(n):
        piv, big = k, abs(A[k, k])
        for r in range(k + 1, n):
            if abs(A[r, k]) > big:
                piv, big = r, abs(A[r, k])
        if not big > 0.0:
            return False
        if piv != k:
            for c in range(n):
                A[k, c], A[piv, c] = A[piv, c], A[k, c]
            b[k], b[piv] = b[piv], b[k]
        for r in range(k + 1, n):
            f = A[r, k] / A[k, k]
            for c in range(k + 1, n):
                A[r, c] -= f * A[k, c]
            b[r] -= f * b[k]
    for k in range(n - 1, -1, -1):
        s = b[k]
        for c in range(k + 1, n):
            s -= A[k, c] * b[c]
        b[k] = s / A[k, k]
    return True
