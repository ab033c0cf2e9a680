"""A state put back onto the closed loops: the projection a simulator applies after each step.

Integrating :func:`~robot_dynamics.constrained_forward_dynamics` keeps the
acceleration constraint ``J qdd = -Jdot qd`` exactly, so the loops hold only
to the integrator's error: the residual drifts by the local error of each
step and grows (the Handbook of Robotics, 2nd ed., sec. 3.6.2, names this
drift; its remedy there is Baumgarte's, eq. 3.110). Baumgarte's feedback
bounds the drift but leaves a residual of the order of the local error
divided by ``dt Kp``; the projection of Hairer, Lubich and Wanner
(*Geometric Numerical Integration*, 2nd ed., sec. IV.4, "standard
projection method") removes it after every step, which is what keeps a
simulated four-bar within 1e-12 of its loops for any duration:

- positions: Gauss-Newton steps ``q <- q - J^+ phi(q)`` (the minimum-norm
  correction, ``J^+`` from the rank split of the loop Jacobian at the
  mechanism's rank) until ``|phi|_inf <= tol``; from a step's drift
  (1e-11 on the examples) one step lands at rounding level;
- velocities: the velocity on the loops closest to ``qd`` in the
  kinetic-energy metric, ``qd <- K (K^T M K)^-1 K^T M qd`` (``J K = 0``), as
  :func:`~robot_dynamics.impact` does with a velocity off the loops: the
  plastic impulse ``J^T Lambda`` that removes only the velocity across the
  loops, so the kinetic energy never grows.
"""
import numpy as np

from ..algorithms.crba import mass_matrix
from ..errors import AssemblyError, InputError
from . import closure
from .assembly import _worst, mechanism_rank
from .closure import one_thread
from .dynamics import MAX_CONDITION, _solve_reduced, split

TOL = 1e-12          # |phi|_inf [m, rad] the positions are projected to
MAX_ITER = 4         # Gauss-Newton steps at most (one is the rule after a step)
DRIFT = 1e-8         # below this |phi|_inf one Gauss-Newton step lands within TOL (checked by the tests)


@one_thread
def project(model, q, qd, *, tol=TOL, max_iter=MAX_ITER, max_condition=MAX_CONDITION):
    """The state ``(q, qd)`` of one configuration moved onto the loops (see the module docstring).

    Args:
        model: a fixed-base model with loops.
        q, qd: (nq,) a state near the loops [rad, m, rad/s, m/s], e.g. the
            end of an integration step.
        tol: |loop_residual|_inf [m, rad] the positions are brought within.
        max_iter: Gauss-Newton steps at most.
        max_condition: as in :func:`~robot_dynamics.constrained_forward_dynamics`.

    Returns:
        ``(q, qd)`` new (nq,) arrays: ``|loop_residual(q)|_inf <= tol`` and
        ``loop_jacobian(q) qd = 0`` to rounding.

    Raises:
        AssemblyError: ``max_iter`` steps left a loop open (a state too far
            from the loops to be a step's drift), naming the loop.
        SingularityError: a singular configuration.
    """
    shape, (Q, QD) = closure._states(model, q, qd)
    if shape:
        raise InputError("project takes one state (nq,), got q of shape %s" % (np.shape(q),))
    return project_one(model, Q[0].copy(), QD[0], tol, max_iter, max_condition)


def project_one(model, q, qd, tol=TOL, max_iter=MAX_ITER, max_condition=MAX_CONDITION, report=False):
    """:func:`project` without its checks, on the caller's threads (the simulator's step); with
    ``report``, ``(q, qd, |phi|_inf before)``.

    The velocity is projected with the free directions K of the Jacobian
    before the last position correction: that correction is a step's drift
    (1e-11), which moves K by as little, and saves a second Jacobian and SVD
    per step (a third of the projection's cost)."""
    r = mechanism_rank(model)
    F = closure.frames(model, q)
    phi = closure._residual(model, F)
    drift = np.max(np.abs(phi), initial=0.0)
    for k in range(max_iter + 1):
        Ur, sr, Vr, K = split(closure._jacobian(model, F), r, max_condition)
        error = np.max(np.abs(phi), initial=0.0)
        if not error > tol:
            break
        if k == max_iter:
            raise AssemblyError(_worst(model, phi, "the state is too far from the loops to project it "
                                       "(%d Gauss-Newton steps)" % max_iter))
        q = q - Vr @ ((Ur.T @ phi) / sr)                          # q - J^+ phi
        if error < DRIFT:                                         # quadratic convergence: |phi| ~ error^2 now
            break
        F = closure.frames(model, q)
        phi = closure._residual(model, F)
    M = mass_matrix(model, q)
    MK = M @ K
    qd = K @ _solve_reduced(K.T @ MK, MK.T @ qd)                 # K (K^T M K)^-1 K^T M qd
    return (q, qd, drift) if report else (q, qd)
