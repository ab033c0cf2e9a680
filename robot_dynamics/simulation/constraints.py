"""Constraints applied to the state after each step; the velocity limits.

A constraint is any object with the :class:`Constraint` interface. The
simulator calls each one on the state the integrator returned, before the
step is committed.

:class:`VelocityLimits` keeps every joint within ``+-model.velocity_limit``
by the smallest joint impulse that does so: the drive of an over-speed
joint brakes it at once, as a real drive's velocity limiter does, and the
reaction reaches the rest of the arm through the inertia. Among all
velocities within the limits it picks the one closest to the integrated
one in the kinetic-energy metric,

    qd+ = argmin_v 1/2 (v - qd)^T M(q) (v - qd)   s.t.  -v_max <= v <= v_max,

so the generalized impulse ``M (qd+ - qd)`` acts only on the joints held
at their limit, and, because the box contains ``v = 0``, the kinetic energy
never increases (the projection is non-expansive in the M-norm). A plain
per-joint clamp lacks both properties: with coupled inertia it can add
energy.

:class:`LoopClosure` puts the state of a closed-loop model back onto its
loops (:func:`robot_dynamics.constraints.project`); the simulator applies
it after the other constraints of every step of such a model.
"""
from typing import Protocol, Tuple, runtime_checkable

import numpy as np

from ..algorithms.kernels import jit
from ..algorithms.crba import mass_matrix
from ..constraints.projection import TOL as LOOP_TOL, project_one
from ..errors import InputError


@runtime_checkable
class Constraint(Protocol):
    """Interface of a step constraint.

    ``apply(model, t, q, qd) -> (q, qd)``: the state at the end of a step
    (time ``t`` [s], (nq,) arrays, not to be modified) mapped to the
    constrained state (the same arrays when nothing changes).
    """

    def apply(self, model, t: float, q: np.ndarray, qd: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        ...


@jit
def _exceeds(qd, vmax):
    for i in range(qd.shape[0]):
        if abs(qd[i]) > vmax[i]:
            return True
    return False


def project_velocity(M, qd, lower, upper):
    """The velocity in ``[lower, upper]`` closest to ``qd`` in the M-norm.

    Solves ``min 1/2 (v - qd)^T M (v - qd)`` s.t. ``lower <= v <= upper`` by
    an active-set method (Nocedal & Wright, *Numerical Optimization*,
    sec. 16.5): fix the violated joints at their bounds, move the free ones
    by ``v_F = qd_F - M_FF^-1 M_FA (v_A - qd_A)``, then add joints that
    leave their bounds and release the ones whose impulse ``M (v - qd)``
    has the wrong sign (pulls towards the limit), until neither happens.

    Args:
        M: (n, n) symmetric positive definite mass matrix.
        qd, lower, upper: (n,) velocity and its bounds (lower <= 0 <= upper).

    Returns:
        (n,) velocity within the bounds.
    """
    as_array = lambda x: np.ascontiguousarray(x, dtype=np.float64)   # noqa: E731
    return _project_velocity(as_array(M), as_array(qd), as_array(lower), as_array(upper))


@jit
def _project_velocity(M, qd, lower, upper):
    """Compiled body of :func:`project_velocity`; side[i] is +1 / -1 at the upper / lower bound, 0 free."""
    n = qd.shape[0]
    side = np.zeros(n, dtype=np.int64)
    for i in range(n):
        side[i] = 1 if qd[i] > upper[i] else (-1 if qd[i] < lower[i] else 0)
    tol = 1e-12 * (1.0 + np.abs(qd).max())
    v = qd.copy()
    for _ in range(3 * n + 3):
        v[:] = qd
        for i in range(n):
            if side[i] > 0:
                v[i] = upper[i]
            elif side[i] < 0:
                v[i] = lower[i]
        F = np.nonzero(side == 0)[0]
        A = np.nonzero(side != 0)[0]
        if F.shape[0] > 0 and A.shape[0] > 0:
            rhs = np.zeros(F.shape[0])
            MFF = np.empty((F.shape[0], F.shape[0]))
            for r in range(F.shape[0]):
                for c in range(A.shape[0]):
                    rhs[r] += M[F[r], A[c]] * (v[A[c]] - qd[A[c]])
                for c in range(F.shape[0]):
                    MFF[r, c] = M[F[r], F[c]]
            dv = np.linalg.solve(MFF, rhs)
            for r in range(F.shape[0]):
                v[F[r]] -= dv[r]
        impulse = M @ (v - qd)
        grew = False
        for i in range(n):                       # grow the active set first
            if side[i] == 0 and v[i] > upper[i] + tol:
                side[i], grew = 1, True
            elif side[i] == 0 and v[i] < lower[i] - tol:
                side[i], grew = -1, True
        if grew:
            continue
        worst, worst_size = -1, -1.0             # release the joint pulled hardest towards its bound
        for i in range(n):
            if (side[i] > 0 and impulse[i] > tol) or (side[i] < 0 and impulse[i] < -tol):
                if abs(impulse[i]) > worst_size:
                    worst, worst_size = i, abs(impulse[i])
        if worst < 0:
            break
        side[worst] = 0
    return np.minimum(np.maximum(v, lower), upper)      # clip: rounding only; stays within the limits


class VelocityLimits:
    """Joint velocities held within ``+-limit`` by a braking impulse (see the module docstring).

    Args:
        model: the robot.
        limit: (nq,) velocity limits [rad/s or m/s], default ``model.velocity_limit``
            (inf: no limit for that joint).

    Attributes:
        last_impulse: (nq,) generalized impulse [N m s or N s] of the last
            correction (zeros when the last step needed none).
    """

    def __init__(self, model, limit=None):
        v = np.array(model.velocity_limit if limit is None else limit, dtype=float)
        v = np.broadcast_to(v, (model.nq,)).copy()
        if np.any(np.isnan(v)) or np.any(v <= 0):
            raise InputError("velocity limits must be > 0 (inf for none), one per joint, got %r" % (limit,))
        self.limit = v
        self.last_impulse = np.zeros(model.nq)

    def apply(self, model, t, q, qd):
        if not _exceeds(qd, self.limit):
            if self.last_impulse.any():
                self.last_impulse = np.zeros_like(qd)
            return q, qd
        M = mass_matrix(model, q)
        v = project_velocity(M, qd, -self.limit, self.limit)
        self.last_impulse = M @ (v - qd)
        return q, v


class LoopClosure:
    """The state of a closed-loop model put back onto its loops after each step.

    :func:`robot_dynamics.constraints.project`: Gauss-Newton on the loop
    residual to ``|phi|_inf <= tol`` (minimum-norm corrections), then the
    velocity on the loops closest to the integrated one in the
    kinetic-energy metric (the projection method of Hairer, Lubich and
    Wanner, *Geometric Numerical Integration*, sec. IV.4; docs/LOOPS.md,
    "Simulator and nodes"). The integrators keep the acceleration
    constraint, so what this removes is one step's drift (about 1e-11 m on
    the four-bar with RK4 at 1 ms); without it the drift grows (4e-8 m
    after 2 s). The simulator applies it, last, to every step of a model
    with loops, on one thread.

    Args:
        model: a fixed-base model with loops.
        tol: the residual [m, rad] the positions are projected to.

    Attributes:
        last_drift: |phi|_inf [m, rad] of the state the last call received
            (the step's drift before the projection).
    """

    def __init__(self, model, tol=LOOP_TOL):
        if not model.loops:
            raise InputError("LoopClosure needs a model with loops; %r has none" % model.name)
        if not (np.isfinite(tol) and tol > 0):
            raise InputError("tol must be a finite residual > 0 [m, rad], got %r" % (tol,))
        self.tol = float(tol)
        self.last_drift = 0.0

    def apply(self, model, t, q, qd):
        q1, qd1, self.last_drift = project_one(model, q, qd, self.tol, report=True)
        return q1, qd1
