"""Assembly of a closed-loop mechanism: a q that closes every loop, and the mechanism's rank.

Position analysis by Newton's method on the loop residual phi(q) = 0
(Handbook of Robotics, 2nd ed., sec. 2.7.2 "numerical methods" of inverse
kinematics, applied to the loop equations; the damping is Levenberg-
Marquardt's, Nocedal and Wright, *Numerical Optimization*, sec. 10.3).
The Jacobian is :func:`~robot_dynamics.loop_jacobian`, exact at every q,
so the iteration converges quadratically near a solution; its SVD solves
the rank-deficient steps of redundant loops (a planar loop in 3-D) with
the minimum-norm step.
"""
import weakref

import numpy as np

from ..errors import AssemblyError, InputError, URDFError
from . import closure
from .closure import one_thread

TOL = 1e-10              # |phi|_inf at which a loop counts as closed [m, rad]
MAX_ITER = 60
RANK_RTOL = 1e-9         # singular values below RANK_RTOL * sigma_max are rank-deficient directions
STARTS = 12              # starting guesses tried to find the mechanism's rank
_MECHANISMS = weakref.WeakKeyDictionary()


@one_thread
def assemble(model, q_guess, keep=(), *, tol=TOL, max_iter=MAX_ITER):
    """A configuration near ``q_guess`` that closes every loop, moving only the joints not in ``keep``.

    Args:
        model: a fixed-base model with loops.
        q_guess: (..., nq) starting configuration [rad, m]; the branch of
            the mechanism (a four-bar's open or crossed circuit) is the one
            the guess is nearest to.
        keep: joint names held at their ``q_guess`` value (the driven
            joints, e.g. a four-bar's crank).
        tol: the largest residual accepted, |phi|_inf [m, rad].
        max_iter: Newton iterations at most.

    Returns:
        (..., nq) configuration with ``|loop_residual|_inf <= tol``. Joint
        limits are not imposed (check them if they matter).

    Raises:
        AssemblyError: no closure was found from this guess (the kept joints
            put the loop out of reach, or the guess is too far); or the
            iteration closed a revolute or weld loop upside down (closure
            frames' axes opposite). The message names the loop with the
            largest residual.
        InputError: a name in ``keep`` is not a joint of ``model.joint_names``.
    """
    shape, Q = closure._states(model, q_guess)
    free = _free(model, keep)
    out = np.array([_assemble_one(model, x, free, tol, max_iter) for x in Q])
    return out.reshape(shape + (model.nq,))


@one_thread
def mechanism_rank(model):
    """Rank of the loop Jacobian on the closed mechanism (its generic rank).

    The largest rank of :func:`~robot_dynamics.loop_jacobian` at a few
    configurations that :func:`assemble` closes from seeded starting guesses
    (the neutral configuration, then random ones within the joint limits);
    computed once per model. The mobility (degrees of freedom of the closed
    mechanism) is ``nq - mechanism_rank`` (Handbook eq. 3.95). A state
    where the Jacobian's rank is lower is a singular configuration.

    Raises:
        AssemblyError: no starting guess closes the loops.
    """
    if not model.loops:
        return 0
    info = _MECHANISMS.get(model)
    if info is None:
        info = _MECHANISMS[model] = _explore(model)
    if isinstance(info, AssemblyError):
        raise AssemblyError(str(info))
    return info[0]


def mobility(model):
    """Degrees of freedom of the closed mechanism: ``nq - rank(J)`` (Handbook eq. 3.95)."""
    return model.nq - mechanism_rank(model)


def check_assembles(model):
    """URDFError naming the loop if the model's loops close from no starting guess (the load check)."""
    try:
        mechanism_rank(model)
    except AssemblyError as exc:
        raise URDFError("a closure that cannot be assembled: %s" % exc) from None


# ---------------------------------------------------------------------------

def _free(model, keep):
    if isinstance(keep, str):
        keep = [keep]
    kept = set()
    for name in keep:
        if name not in model.joint_names:
            raise InputError("keep: %r is not a joint of the model (joints: %s)" % (name, ", ".join(model.joint_names)))
        kept.add(model.joint_names.index(name))
    return np.array([i for i in range(model.nq) if i not in kept], dtype=np.int64)


def _assemble_one(model, q, free, tol, max_iter):
    """Levenberg-Marquardt on phi(q) = 0 over the free coordinates; AssemblyError if it fails."""
    q = q.copy()
    T = closure.frames(model, q)
    phi = closure._residual(model, T)
    mu = None
    for _ in range(max_iter):
        if np.max(np.abs(phi), initial=0.0) <= tol:
            _check_not_flipped(model, T)
            return q
        J = closure._jacobian(model, T)[:, free]
        U, s, Vt = np.linalg.svd(J, full_matrices=False)
        if s.size == 0 or s[0] == 0.0:
            break
        s = np.where(s > RANK_RTOL * s[0], s, 0.0)
        mu = 1e-6 * s[0] ** 2 if mu is None else mu
        e0 = phi @ phi
        for _ in range(30):                                       # raise the damping until phi shrinks
            step = -Vt.T @ ((s / (s * s + mu)) * (U.T @ phi))     # (J^T J + mu I)^-1 J^T phi by the SVD
            trial = q.copy()
            trial[free] += step
            T_trial = closure.frames(model, trial)
            phi_trial = closure._residual(model, T_trial)
            if phi_trial @ phi_trial < e0:
                q, T, phi = trial, T_trial, phi_trial
                mu = max(mu / 10.0, 1e-15 * s[0] ** 2)
                break
            mu *= 10.0
        else:
            break                                                 # a local minimum of |phi| that is not zero
    if np.max(np.abs(phi), initial=0.0) <= tol:
        _check_not_flipped(model, T)
        return q
    raise AssemblyError(_worst(model, phi, "cannot close the loops from this guess"))


def _worst(model, phi, what):
    worst, name = -1.0, ""
    for loop, rows in zip(model.loops, closure.loop_slices(model).values()):
        e = np.max(np.abs(phi[rows]))
        if e > worst:
            worst, name = e, loop.name
    loop = next(l for l in model.loops if l.name == name)
    pos = np.linalg.norm(phi[closure.loop_slices(model)[name]][:3])
    return ("%s: loop %r (%s, %s -> %s) is left open by %.3g m (|p_B - p_A|) and %.3g in its orientation rows; "
            "check its parent_xyz/child_xyz against the link lengths, or start from another guess"
            % (what, name, loop.kind, loop.parent, loop.child, pos,
               np.max(np.abs(phi[closure.loop_slices(model)[name]][3:]), initial=0.0)))


def _check_not_flipped(model, T):
    for loop, (TA, TB) in zip(model.loops, T.closure):
        R = TA[:3, :3].T @ TB[:3, :3]
        if (loop.kind == "revolute" and R[2, 2] < 0) or (loop.kind == "weld" and np.any(np.diag(R) < 0)):
            raise AssemblyError("loop %r (%s) closed with its frames turned half a turn (z_A . z_B = %.3g): "
                                "start from a guess nearer the intended assembly" % (loop.name, loop.kind, R[2, 2]))


def _explore(model):
    """(rank, q closed) from seeded starting guesses, or an AssemblyError with the neutral guess's residual."""
    rng = np.random.default_rng(0)
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    guesses = [model.neutral()] + [rng.uniform(lo, hi) for _ in range(STARTS - 1)]
    free = np.arange(model.nq)
    found, error = [], None
    for q in guesses:
        try:
            found.append(_assemble_one(model, q, free, TOL, MAX_ITER))
        except AssemblyError as exc:
            error = error or exc                       # the neutral guess's, the one a user can reproduce
        if len(found) == 3:
            break
    if not found:
        detail = str(error).split(": ", 1)[-1]
        return AssemblyError("no configuration closes the loops from %d starting guesses (the neutral one and "
                             "random ones within the joint limits); from the neutral one, %s" % (len(guesses), detail))
    ranks = []
    for q in found:
        s = np.linalg.svd(closure._jacobian(model, closure.frames(model, q)), compute_uv=False)
        ranks.append(int(np.sum(s > RANK_RTOL * s[0])) if s.size and s[0] > 0 else 0)
    best = int(np.argmax(ranks))
    return ranks[best], found[best]


def reference_configuration(model):
    """(nq,) a closed configuration of the mechanism (one that :func:`mechanism_rank` found)."""
    mechanism_rank(model)
    return _MECHANISMS[model][1].copy()
