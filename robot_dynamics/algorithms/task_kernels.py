"""Compiled task-space kinematics of one point on a link: its pose, its Jacobian,
its classical acceleration at ``qdd = 0`` (``Jdot qd``) and the operational-space
inertia ``Lambda = (J M^-1 J^T)^-1`` (Handbook of Robotics, sec. 2.8 and 3.5.4).

Conventions (the public functions in :mod:`.task_space` state them too): every
vector is in base-frame axes; a Jacobian row block is ``[v; w]`` (linear first),
``v`` the velocity of the point and ``w`` the angular velocity of its link
(Pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian); ``Jdot qd`` is the point's
classical acceleration ``[a; alpha]`` with ``qdd = 0``, by the outward recursion
in base-frame axes (for body i with parent p, ``r = o_i - o_p``, joint axis
``s_i`` and rate ``u_i``)::

    w_i = w_p (+ s_i u_i)                   v_i = v_p + w_p x r (+ s_i u_i)
    alpha_i = alpha_p (+ w_p x s_i u_i)     a_i = a_p + alpha_p x r + w_p x (w_p x r) (+ 2 w_p x s_i u_i)

(brackets: revolute for w and alpha, prismatic for v and a), then the point
``x``: ``a_x = a_b + alpha_b x (x - o_b) + w_b x (w_b x (x - o_b))``.

Lambda: ``M = L L^T`` (Cholesky), ``Y = L^-1 J^T``, ``Lambda^-1 = Y^T Y``,
``Lambda^-1 = C C^T`` (Cholesky), ``Lambda = Z^T Z`` with ``Z = C^-1``: triangular
solves, no inverse of M. Fixed-base models (the Python path of
:mod:`.task_space` serves the roots).

The scratch arrays are the Data's work arrays (:func:`.kernels.work`): R, p,
Rw, pw (poses), v, a (velocities and accelerations, rows ``[w | v_o]`` and
``[alpha | a_o]`` in base-frame axes here), M (the mass matrix and its factor),
S (``Y``), X, T, Ia (6x6 scratch).
"""
import numpy as np

from .crba import _crba
from .kernels import (MAT, TABLE, V, V_RO, bad_length, entry, finite1, finite2, inline, jit, nbodies, work,
                      work_buffer, world_poses)
from ..model.packed import AXIS, FIXED_ROOT, JTYPE, PARENT, PRISMATIC, QIDX, QMUL, ROOT
import numba as nb

INT = nb.int64
POSE = nb.types.Array(nb.float64, 2, "C")


@inline
def frame_point(D, body, P, point, Rw, pw, T):
    """T (4, 4) <- the pose of the frame at ``point`` (link frame) of the link with
    placement P (12,) (3x4 row-major, in body ``body``); Rw, pw from world_poses."""
    for r in range(3):
        x = P[4 * r] * point[0] + P[4 * r + 1] * point[1] + P[4 * r + 2] * point[2] + P[4 * r + 3]
        for c in range(3):
            T[r, c] = P[4 * r + c]
        T[r, 3] = x
        T[3, r] = 0.0
    T[3, 3] = 1.0
    if body >= 0:
        _to_base(body, Rw, pw, T)


@inline
def _to_base(body, Rw, pw, T):
    """T[:3] <- Rw[body] T[:3] (+ pw[body] in the last column); T[3] = (0, 0, 0, 1)."""
    for c in range(4):
        t0, t1, t2 = T[0, c], T[1, c], T[2, c]
        for r in range(3):
            T[r, c] = Rw[body, r, 0] * t0 + Rw[body, r, 1] * t1 + Rw[body, r, 2] * t2
    for r in range(3):
        T[r, 3] += pw[body, r]
    T[3, 0] = T[3, 1] = T[3, 2] = 0.0
    T[3, 3] = 1.0


@inline
def frame_jacobian(D, body, T, Rw, pw, J):
    """J (6, nv) of the point T[:3, 3] on body ``body``, rows [v; w], base-frame axes."""
    J[:, :] = 0.0
    px, py, pz = T[0, 3], T[1, 3], T[2, 3]
    j = body
    while j >= 0:
        m, k = D[j, QMUL], int(D[j, QIDX])
        a0 = Rw[j, 0, 0] * D[j, AXIS] + Rw[j, 0, 1] * D[j, AXIS + 1] + Rw[j, 0, 2] * D[j, AXIS + 2]
        a1 = Rw[j, 1, 0] * D[j, AXIS] + Rw[j, 1, 1] * D[j, AXIS + 1] + Rw[j, 1, 2] * D[j, AXIS + 2]
        a2 = Rw[j, 2, 0] * D[j, AXIS] + Rw[j, 2, 1] * D[j, AXIS + 1] + Rw[j, 2, 2] * D[j, AXIS + 2]
        if D[j, JTYPE] == PRISMATIC:
            J[0, k] += m * a0
            J[1, k] += m * a1
            J[2, k] += m * a2
        else:
            dx, dy, dz = px - pw[j, 0], py - pw[j, 1], pz - pw[j, 2]
            J[0, k] += m * (a1 * dz - a2 * dy)
            J[1, k] += m * (a2 * dx - a0 * dz)
            J[2, k] += m * (a0 * dy - a1 * dx)
            J[3, k] += m * a0
            J[4, k] += m * a1
            J[5, k] += m * a2
        j = int(D[j, PARENT])


@inline
def _cross_add(s, a0, a1, a2, b0, b1, b2, out, r, c):
    """out[r, c:c + 3] += s (a x b)."""
    out[r, c] += s * (a1 * b2 - a2 * b1)
    out[r, c + 1] += s * (a2 * b0 - a0 * b2)
    out[r, c + 2] += s * (a0 * b1 - a1 * b0)


@inline
def frame_bias(D, qd, body, T, Rw, pw, v, a, acc):
    """acc (6,) <- ``Jdot qd = [a; alpha]`` of the point T[:3, 3] at qdd = 0 (module doc).
    v, a (nb + 1, 6) scratch: rows [w | v_o], [alpha | a_o] in base-frame axes."""
    n = nbodies(D)
    for c in range(6):
        v[n, c] = 0.0
        a[n, c] = 0.0
        acc[c] = 0.0
    if body < 0:
        return
    for i in range(body + 1):                           # the parents come first
        par = int(D[i, PARENT])
        par = par if par >= 0 else n
        r0, r1, r2 = pw[i, 0] - pw[par, 0], pw[i, 1] - pw[par, 1], pw[i, 2] - pw[par, 2]
        for c in range(6):
            v[i, c] = v[par, c]
            a[i, c] = a[par, c]
        w0, w1, w2 = v[par, 0], v[par, 1], v[par, 2]
        _cross_add(1.0, w0, w1, w2, r0, r1, r2, v, i, 3)                 # v_o += w_p x r
        _cross_add(1.0, a[par, 0], a[par, 1], a[par, 2], r0, r1, r2, a, i, 3)
        c0, c1, c2 = w1 * r2 - w2 * r1, w2 * r0 - w0 * r2, w0 * r1 - w1 * r0
        _cross_add(1.0, w0, w1, w2, c0, c1, c2, a, i, 3)                 # + w_p x (w_p x r)
        u = D[i, QMUL] * qd[int(D[i, QIDX])]
        s0 = (Rw[i, 0, 0] * D[i, AXIS] + Rw[i, 0, 1] * D[i, AXIS + 1] + Rw[i, 0, 2] * D[i, AXIS + 2]) * u
        s1 = (Rw[i, 1, 0] * D[i, AXIS] + Rw[i, 1, 1] * D[i, AXIS + 1] + Rw[i, 1, 2] * D[i, AXIS + 2]) * u
        s2 = (Rw[i, 2, 0] * D[i, AXIS] + Rw[i, 2, 1] * D[i, AXIS + 1] + Rw[i, 2, 2] * D[i, AXIS + 2]) * u
        if D[i, JTYPE] == PRISMATIC:
            v[i, 3] += s0
            v[i, 4] += s1
            v[i, 5] += s2
            _cross_add(2.0, w0, w1, w2, s0, s1, s2, a, i, 3)
        else:
            v[i, 0] += s0
            v[i, 1] += s1
            v[i, 2] += s2
            _cross_add(1.0, w0, w1, w2, s0, s1, s2, a, i, 0)
    d0, d1, d2 = T[0, 3] - pw[body, 0], T[1, 3] - pw[body, 1], T[2, 3] - pw[body, 2]
    w0, w1, w2 = v[body, 0], v[body, 1], v[body, 2]
    c0, c1, c2 = w1 * d2 - w2 * d1, w2 * d0 - w0 * d2, w0 * d1 - w1 * d0
    for k in range(3):
        acc[k] = a[body, 3 + k]
        acc[3 + k] = a[body, k]
    acc[0] += a[body, 1] * d2 - a[body, 2] * d1 + w1 * c2 - w2 * c1
    acc[1] += a[body, 2] * d0 - a[body, 0] * d2 + w2 * c0 - w0 * c2
    acc[2] += a[body, 0] * d1 - a[body, 1] * d0 + w0 * c1 - w1 * c0


@inline
def cholesky(A, L, n):
    """L[:n, :n] <- the lower Cholesky factor of A[:n, :n] (L may be A: in place; the
    upper triangle is left as it was). False if A is not positive definite: a pivot
    at most 1e-9 of its diagonal entry counts as zero (a rank-deficient A leaves a
    rounding error there, amplified by the earlier pivots; an A that close to
    singular has a condition number above about 1e9)."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 1e-9 * abs(A[j, j]):
            return False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@inline
def solve_lower_transposed(L, n, J, m, Y):
    """Y (n, m) <- L^-1 J^T for the lower factor L (n, n) and J (m, n)."""
    for c in range(m):
        for i in range(n):
            s = J[c, i]
            for k in range(i):
                s -= L[i, k] * Y[k, c]
            Y[i, c] = s / L[i, i]


@inline
def task_inertia(M, n, J, m, Y, A, C, Z, Lam):
    """Lam (m, m) <- (J M^-1 J^T)^-1 through M = L L^T (M is overwritten by L), Y = L^-1 J^T,
    A = Y^T Y = C C^T, Lam = C^-T C^-1; A keeps J M^-1 J^T. False if M or A is not
    positive definite (J not of full row rank)."""
    if not cholesky(M, M, n):
        return False
    solve_lower_transposed(M, n, J, m, Y)
    for r in range(m):
        for c in range(r + 1):
            s = 0.0
            for k in range(n):
                s += Y[k, r] * Y[k, c]
            A[r, c] = s
            A[c, r] = s
    if not cholesky(A, C, m):
        return False
    for c in range(m):                                   # Z = C^-1 (lower)
        for i in range(m):
            if i < c:
                Z[i, c] = 0.0
                continue
            s = 1.0 if i == c else 0.0
            for k in range(c, i):
                s -= C[i, k] * Z[k, c]
            Z[i, c] = s / C[i, i]
    for r in range(m):                                   # Lam = Z^T Z
        for c in range(r + 1):
            s = 0.0
            for k in range(max(r, c), m):
                s += Z[k, r] * Z[k, c]
            Lam[r, c] = s
            Lam[c, r] = s
    return True


# --- one state and batches (fixed base) ---------------------------------------------------
@inline
def _pose(D, q, body, P, point, T, W):
    w = work(W, nbodies(D) + 1, q.shape[0])
    world_poses(D, q, w.R, w.p, w.Rw, w.pw)
    frame_point(D, body, P, point, w.Rw, w.pw, T)
    return w


@inline
def _jacobian(D, q, body, P, point, J, W):
    w = work(W, nbodies(D) + 1, q.shape[0])
    T = w.T[:4, :4]                                      # the 6x6 scratch T holds the 4x4 pose
    world_poses(D, q, w.R, w.p, w.Rw, w.pw)
    frame_point(D, body, P, point, w.Rw, w.pw, T)
    frame_jacobian(D, body, T, w.Rw, w.pw, J)


@inline
def _jdot_qd(D, q, qd, body, P, point, acc, W):
    w = work(W, nbodies(D) + 1, q.shape[0])
    T = w.T[:4, :4]
    world_poses(D, q, w.R, w.p, w.Rw, w.pw)
    frame_point(D, body, P, point, w.Rw, w.pw, T)
    frame_bias(D, qd, body, T, w.Rw, w.pw, w.v, w.a, acc)


@inline
def _inertia(D, q, body, P, point, Lam, W):
    n = q.shape[0]
    w = work(W, nbodies(D) + 1, n)
    T = w.T[:4, :4]
    world_poses(D, q, w.R, w.p, w.Rw, w.pw)
    frame_point(D, body, P, point, w.Rw, w.pw, T)
    J = w.Sd[:n].T                                       # (6, nv): a view of the (nb + 1, 6) scratch Sd
    frame_jacobian(D, body, T, w.Rw, w.pw, J)
    _crba(D, q, w.M, w.R, w.p, w.IC, 0)
    return task_inertia(w.M, n, J, 6, w.S[:n], w.X, w.Ia, w.IA[0], Lam)


@inline
def not_fixed(D):
    """The entries serve fixed bases (status 1 on a root: the Python path takes it)."""
    return int(D[D.shape[0] - 1, ROOT]) != FIXED_ROOT


@entry(TABLE, V_RO, INT, V_RO, V_RO, POSE, V)
def pose_one(D, q, body, P, point, T, W):
    if not_fixed(D) or bad_length(D, q) or T.shape[0] != 4 or T.shape[1] != 4:
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    _pose(D, q, body, P, point, T, W)
    return 0 if finite1(q) and finite2(T) else 2


@entry(TABLE, V_RO, INT, V_RO, V_RO, MAT, V)
def jacobian_one(D, q, body, P, point, J, W):
    if not_fixed(D) or bad_length(D, q) or J.shape[0] != 6 or J.shape[1] != q.shape[0]:
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    _jacobian(D, q, body, P, point, J, W)
    return 0 if finite1(q) and finite2(J) else 2


@entry(TABLE, V_RO, V_RO, INT, V_RO, V_RO, V, V)
def jdot_qd_one(D, q, qd, body, P, point, acc, W):
    if not_fixed(D) or bad_length(D, q) or bad_length(D, qd) or acc.shape[0] != 6:
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    _jdot_qd(D, q, qd, body, P, point, acc, W)
    return 0 if finite1(q) and finite1(qd) and finite1(acc) else 2


@entry(TABLE, V_RO, INT, V_RO, V_RO, MAT, V)
def inertia_one(D, q, body, P, point, Lam, W):
    """Status 3: J M^-1 J^T is not positive definite (a singular pose, or fewer than 6 joints)."""
    if not_fixed(D) or bad_length(D, q) or Lam.shape[0] != 6 or Lam.shape[1] != 6:
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    if not finite1(q):
        return 2
    if not _inertia(D, q, body, P, point, Lam, W):
        return 3
    return 0 if finite2(Lam) else 2


@jit
def pose_states(D, Q, body, P, point, T, W):
    for b in range(Q.shape[0]):
        _pose(D, Q[b], body, P, point, T[b], W)


@jit
def jacobian_states(D, Q, body, P, point, J, W):
    for b in range(Q.shape[0]):
        _jacobian(D, Q[b], body, P, point, J[b], W)


@jit
def jdot_qd_states(D, Q, QD, body, P, point, A, W):
    for b in range(Q.shape[0]):
        _jdot_qd(D, Q[b], QD[b], body, P, point, A[b], W)


@jit
def inertia_states(D, Q, body, P, point, Lam, W):
    """False for the first state whose J M^-1 J^T is not positive definite (its Lam then NaN)."""
    ok = True
    for b in range(Q.shape[0]):
        if not _inertia(D, Q[b], body, P, point, Lam[b], W):
            Lam[b, :, :] = np.nan
            ok = False
    return ok
