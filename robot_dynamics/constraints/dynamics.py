"""Dynamics of closed-loop mechanisms: forward dynamics with loop forces, inverse dynamics of an actuated set.

Handbook of Robotics (2nd ed., 2016), sec. 3.6.1. The spanning tree's
equation of motion plus the loop constraint forces ``tau_c = J^T lam``

    M qdd + h = tau + J^T lam                 (eqs. 3.92, 3.96)
    J qdd = l = -Jdot qd - Kv J qd - Kp phi   (eqs. 3.93, 3.109, 3.110)

with M and h = C qd + tau_g from the tree algorithms (:func:`mass_matrix`,
:func:`nonlinear_effects`) and J, Jdot qd, phi from
:mod:`robot_dynamics.constraints.closure`.

Redundant constraints (a planar loop written in 3-D, a parallelogram) make
J rank-deficient and the KKT matrix of eq. 3.97 singular, so it is never
solved directly. The Handbook's method 3 (eq. 3.99) with a numerical rank
test is used instead: the SVD ``J = U S V^T`` splits the joint space into
the constrained directions ``V_r`` (the r = :func:`mechanism_rank` largest
singular values) and the free directions ``K = V_0`` (J K = 0), and

    qdd_0 = V_r S_r^-1 U_r^T l                (a particular solution of J qdd = l)
    K^T M K y = K^T (tau - h - M qdd_0)       (eq. 3.99)
    qdd = qdd_0 + K y
    lam = U_r S_r^-1 V_r^T (M qdd + h - tau)  (the minimum-norm lam with J^T lam = M qdd + h - tau)

The components of ``lam`` along the null space of ``J^T`` (the
indeterminate forces of an over-constrained loop, Handbook sec. 3.6: "the
out-of-plane components of the joint constraint forces are indeterminate")
are set to zero: ``lam`` is the minimum-norm one. The rank is the
mechanism's, measured once on closed configurations (a planar four-bar's 5
revolute rows have rank 2); a state where the r-th singular value falls
below ``sigma_1 / max_condition`` is a singular configuration (a
dead-centre or a flattened parallelogram) and raises
:class:`~robot_dynamics.SingularityError`.
"""
import numpy as np

from ..algorithms.crba import mass_matrix
from ..algorithms.rnea import nonlinear_effects, rnea
from ..errors import InputError, SingularityError
from . import closure
from .closure import one_thread
from .assembly import mechanism_rank

MAX_CONDITION = 1e8          # sigma_1 / sigma_r of J above which a pose counts as singular


@one_thread
def constrained_forward_dynamics(model, q, qd, tau, *, baumgarte=(0.0, 0.0), max_condition=MAX_CONDITION):
    """Joint accelerations and loop constraint forces of a closed-loop mechanism.

    Args:
        model: a fixed-base model with loops (a model without loops gives
            ``aba``'s qdd and an empty lam).
        q, qd: (..., nq) joint positions and velocities [rad, m, rad/s, m/s].
        tau: (..., nq) joint torques/forces [N m, N] on the tree's joints.
        baumgarte: ``(Kv, Kp)`` Baumgarte stabilisation gains [1/s, 1/s^2]
            (Handbook sec. 3.6.2, eq. 3.110): the acceleration constraint
            becomes ``a_e + Kv v_e + Kp p_e = 0``, pulling the drift of an
            integrated trajectory back onto the loops. The Handbook's rule
            is ``Kv = 2/t_c``, ``Kp = 1/t_c^2`` with a time constant t_c of
            0.1 s for large slow robots down to 0.01 s for small fast ones.
            ``(0, 0)`` (default): the exact acceleration constraint.
        max_condition: bound on ``sigma_1 / sigma_r`` of the loop Jacobian.

    Returns:
        ``(qdd, lam)``: (..., nq) accelerations [rad/s^2, m/s^2] and (..., m)
        loop constraint forces (rows of :func:`loop_residual`: the force [N]
        and moments [N m] the parent link exerts on the child at each
        closure, minimum-norm where the loop is over-constrained;
        :func:`loop_wrenches` gives them as wrenches).

    Raises:
        SingularityError: a singular configuration (the loop Jacobian has
            lost rank), or a mass matrix that is singular on the mechanism's
            free directions.
    """
    kv, kp = _gains(baumgarte)
    shape, (Q, QD, TAU) = closure._states(model, q, qd, tau)
    m = closure.loop_rows(model)
    QDD, LAM = np.empty_like(Q), np.empty((Q.shape[0], m))
    for i in range(Q.shape[0]):
        QDD[i], LAM[i] = forward(model, Q[i], QD[i], TAU[i], kv, kp, max_condition)
    return QDD.reshape(shape + (model.nq,)), LAM.reshape(shape + (m,))


def forward(model, q, qd, tau, kv=0.0, kp=0.0, max_condition=MAX_CONDITION, forces=True):
    """One state of :func:`constrained_forward_dynamics`: ``(qdd, lam)`` (lam None without ``forces``).

    No checks and the caller's thread count (the simulator's step calls it
    with its inputs checked and the kernels on one thread)."""
    M, h = mass_matrix(model, q), nonlinear_effects(model, q, qd)
    F = closure.frames(model, q)
    J, bias = closure._jacobian_and_bias(model, F, qd)
    l = -bias                                                               # eq. 3.109
    if kv or kp:
        l = l - kv * (J @ qd) - kp * closure._residual(model, F)           # eq. 3.110
    Ur, sr, Vr, K = split(J, mechanism_rank(model), max_condition)
    qdd0 = Vr @ ((Ur.T @ l) / sr)                                           # J qdd_0 = l
    y = _solve_reduced(K.T @ M @ K, K.T @ (tau - h - M @ qdd0))             # eq. 3.99
    qdd = qdd0 + K @ y
    lam = Ur @ ((Vr.T @ (M @ qdd + h - tau)) / sr) if forces else None     # J^T lam = M qdd + h - tau
    return qdd, lam


@one_thread
def constrained_inverse_dynamics(model, q, qd, qdd, actuated, *, max_condition=MAX_CONDITION):
    """Torques at the actuated joints, and the loop forces, that produce a motion of a closed-loop mechanism.

    Solves ``S tau_a + J^T lam = rnea(q, qd, qdd)`` (the tree's inverse
    dynamics, Handbook eq. 3.92 with ``tau = S tau_a``; S selects the
    actuated joints): projected on the free directions K (``J K = 0``),
    ``K^T S tau_a = K^T rnea``; tau_a is the minimum-norm solution
    (redundant actuation), then lam the minimum-norm one of ``J^T lam =
    rnea - S tau_a``. With qd = qdd = 0 this is the gravity compensation of
    the closed-loop mechanism.

    Args:
        q, qd, qdd: (..., nq) a state and acceleration of the mechanism;
            they should satisfy the loops (:func:`assemble`; ``J qd = 0``,
            ``J qdd = -Jdot qd``): the torques produce the part of the
            motion along the mechanism's free directions.
        actuated: joint names (of ``model.joint_names``) that carry motors.

    Returns:
        ``(tau, lam)``: (..., nq) joint torques [N m, N], zero at the
        passive joints, and (..., m) loop constraint forces (as in
        :func:`constrained_forward_dynamics`).

    Raises:
        InputError: an unknown joint in ``actuated``, or fewer actuated
            joints than the mechanism's degrees of freedom.
        SingularityError: the actuated joints cannot balance the mechanism
            at this pose (an actuation singularity: a four-bar driven by its
            rocker at a dead-centre), or the loop Jacobian is singular.
    """
    shape, (Q, QD, QDD) = closure._states(model, q, qd, qdd)
    S, names = _selection(model, actuated)
    r, m = mechanism_rank(model), closure.loop_rows(model)
    if S.shape[1] < model.nq - r:
        raise InputError("%d actuated joint(s) (%s) cannot drive a mechanism with %d degrees of freedom "
                         "(nq %d - loop rank %d)" % (S.shape[1], ", ".join(names), model.nq - r, model.nq, r))
    TAU, LAM = np.zeros_like(Q), np.empty((Q.shape[0], m))
    for i in range(Q.shape[0]):
        tau_tree = rnea(model, Q[i], QD[i], QDD[i])                               # M qdd + h
        J = closure._jacobian(model, closure.frames(model, Q[i]))
        Ur, sr, Vr, K = split(J, r, max_condition)
        A = K.T @ S                                                               # K^T S tau_a = K^T tau_tree
        tau_a = _actuated_solve(A, K.T @ tau_tree, names, max_condition)
        TAU[i] = S @ tau_a
        LAM[i] = Ur @ ((Vr.T @ (tau_tree - TAU[i])) / sr)
    return TAU.reshape(shape + (model.nq,)), LAM.reshape(shape + (m,))


# ---------------------------------------------------------------------------
# The rank-revealing split (shared with robot_dynamics.constraints.impact)
# ---------------------------------------------------------------------------

def split(J, r, max_condition=MAX_CONDITION):
    """SVD split of a loop Jacobian J (m, n) at the mechanism rank r.

    Returns ``(U_r (m, r), s_r (r,), V_r (n, r), K (n, n - r))``: the
    constrained directions and the free ones (``J K = 0`` up to the
    dropped singular values). SingularityError when ``s_r < s_1 / max_condition``.
    """
    n = J.shape[1]
    if r == 0:
        return np.zeros((J.shape[0], 0)), np.zeros(0), np.zeros((n, 0)), np.eye(n)
    U, s, Vt = np.linalg.svd(J)
    if s[r - 1] * max_condition < s[0] or not np.isfinite(s[0]):
        lost = int(np.sum(s[:r] * max_condition < s[0]))
        raise SingularityError(
            "singular configuration of the closed loops: the loop Jacobian has lost %d of its %d independent "
            "constraints (singular values %s, sigma_1/sigma_%d = %.3g > max_condition %.3g); the constraint "
            "forces are unbounded here (a dead-centre, a flattened linkage)"
            % (lost, r, np.array2string(s[:r + 1], precision=3), r, s[0] / max(s[r - 1], 1e-300), max_condition))
    return U[:, :r], s[:r], Vt[:r].T, Vt[r:].T


def _solve_reduced(Mr, b):
    """Solve the mechanism's reduced mass matrix K^T M K (symmetric positive definite) by Cholesky."""
    if Mr.size == 0:
        return np.zeros(0)
    try:
        np.linalg.cholesky(Mr)                  # the check: positive definite
    except np.linalg.LinAlgError:
        raise SingularityError("the mass matrix is singular on the mechanism's free directions (K^T M K is "
                               "not positive definite: a free motion without inertia)") from None
    return np.linalg.solve(Mr, b)               # one LU solve: numpy has no triangular one (two cost 10 us more)


def _selection(model, actuated):
    if isinstance(actuated, str):
        actuated = [actuated]
    names = list(actuated)
    if len(set(names)) != len(names):
        raise InputError("actuated lists a joint twice: %s" % names)
    S = np.zeros((model.nq, len(names)))
    for k, name in enumerate(names):
        if name not in model.joint_names:
            raise InputError("actuated: %r is not a joint of the model (joints: %s)"
                             % (name, ", ".join(model.joint_names)))
        S[model.joint_names.index(name), k] = 1.0
    return S, names


def _actuated_solve(A, b, names, max_condition):
    """Minimum-norm tau_a of A tau_a = b (A = K^T S, d x n_a, d <= n_a); SingularityError if A loses rank d.

    K is orthonormal and S selects columns, so A's singular values are at
    most 1: one below 1 / max_condition is a lost degree of freedom."""
    d = A.shape[0]
    if d == 0:
        return np.zeros(A.shape[1])
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    if s[d - 1] * max_condition < 1.0:
        raise SingularityError(
            "the actuated joints (%s) cannot balance the mechanism at this pose: they drive %d of its %d degrees "
            "of freedom (singular values of K^T S: %s, bound 1/max_condition = %.3g); an actuation singularity, "
            "e.g. a four-bar driven by its rocker at a dead-centre"
            % (", ".join(names), int(np.sum(s * max_condition >= 1.0)), d, np.array2string(s, precision=3),
               1.0 / max_condition))
    return Vt.T @ ((U.T @ b) / s)


def _gains(baumgarte):
    try:
        kv, kp = (float(x) for x in baumgarte)
    except (TypeError, ValueError):
        raise InputError("baumgarte must be a pair (Kv [1/s], Kp [1/s^2]), got %r" % (baumgarte,)) from None
    if not (np.isfinite(kv) and np.isfinite(kp) and kv >= 0 and kp >= 0):
        raise InputError("baumgarte gains must be finite and >= 0, got Kv=%r, Kp=%r" % (kv, kp))
    return kv, kp
