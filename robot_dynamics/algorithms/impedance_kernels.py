"""Compiled impedance laws of one state (the laws and their conventions:
:mod:`robot_dynamics.analysis.impedance`, which calls these kernels).

One kernel per law, on the task-space kernels (:mod:`.task_kernels`), the
composite-rigid-body algorithm and the RNEA; the work arrays are a
:class:`~robot_dynamics.Data`'s (``W``) and the law's own scratch (``S``), so a
call allocates nothing. The modal damping's eigenvectors come from a Householder
tridiagonalisation and the implicit QL algorithm (:func:`symmetric_eigen`):
``D = L f(L^-1 K L^-T) L^T`` is a matrix function, the same for any
eigenbasis. It is also ``2 zeta`` times the geometric mean ``I # K`` of the
inertia and the stiffness, symmetric in the two (Bhatia, *Positive Definite
Matrices*, 2007, sec. 4.1): with a diagonal K (a stiffness per joint) the joint
law scales by ``K^-1/2`` instead of factoring ``M(q)`` every call
(:func:`modal_factor`). Status: 0 done, 2 a
value not finite or a quaternion off unit norm (the caller's checks then say
which), 3 ``J M^-1 J^T`` (or ``M``) not positive definite, 4 ``cond(J)`` above
the bound (``S[0]`` holds it).
"""
import numba as nb
import numpy as np

from .crba import _crba
from .kernels import MAT, V, entry, finite1, inline, nbodies, work, world_poses
from .rnea import _gravity, _rnea
from .task_kernels import cholesky, frame_bias, frame_jacobian, frame_point, task_inertia

# Flags of the laws (FLAGS bits); DIAGONAL: the joint law's stiffness is diagonal
GRAVITY, CORIOLIS, SHAPING, TWIST, ACCELERATION, CLIP, DAMPING, DIAGONAL = 1, 2, 4, 8, 16, 32, 64, 128
# The target vector of the Cartesian law: position 0:3, quaternion 3:7 (x, y, z, w),
# twist 7:13, acceleration 13:19, wrench 19:25.
TARGET_SIZE = 25


@inline
def symmetric_eigen(A, m, Z, d, e):
    """A (m, m) symmetric -> eigenvalues d (m,), eigenvectors the columns of Z (m, m); e (m,)
    scratch; A is left as it was. Householder reduction to tridiagonal form, then the QL
    algorithm with implicit shifts (LAPACK's dsteqr path; Press et al., *Numerical Recipes*,
    2nd ed., sec. 11.2-11.3, tred2 and tqli). False if QL did not converge in 60 iterations.

    QL is a chain of dependent rotations: it turns the rows of Z^T (contiguous; Z is transposed
    in place before and after) and takes each rotation's radius as ``sqrt(f^2 + g^2)`` and one
    reciprocal, not ``hypot`` (a library call) and two divisions: 30 % less time on a 7 x 7
    (the inertias and stiffnesses here are nowhere near the square's overflow)."""
    for r in range(m):
        for c in range(m):
            Z[r, c] = A[r, c]
    for i in range(m - 1, 0, -1):                            # tred2: Z <- Q, d, e
        l = i - 1
        h = 0.0
        if l > 0:
            scale = 0.0
            for k in range(l + 1):
                scale += abs(Z[i, k])
            if scale == 0.0:
                e[i] = Z[i, l]
            else:
                for k in range(l + 1):
                    Z[i, k] /= scale
                    h += Z[i, k] * Z[i, k]
                f = Z[i, l]
                g = -np.sqrt(h) if f >= 0.0 else np.sqrt(h)
                e[i] = scale * g
                h -= f * g
                Z[i, l] = f - g
                f = 0.0
                for j in range(l + 1):
                    Z[j, i] = Z[i, j] / h
                    g = 0.0
                    for k in range(j + 1):
                        g += Z[j, k] * Z[i, k]
                    for k in range(j + 1, l + 1):
                        g += Z[k, j] * Z[i, k]
                    e[j] = g / h
                    f += e[j] * Z[i, j]
                hh = f / (h + h)
                for j in range(l + 1):
                    f = Z[i, j]
                    g = e[j] - hh * f
                    e[j] = g
                    for k in range(j + 1):
                        Z[j, k] -= f * e[k] + g * Z[i, k]
        else:
            e[i] = Z[i, l]
        d[i] = h
    d[0] = 0.0
    e[0] = 0.0
    for i in range(m):                                       # accumulate the transformations
        if d[i] != 0.0:
            for j in range(i):
                g = 0.0
                for k in range(i):
                    g += Z[i, k] * Z[k, j]
                for k in range(i):
                    Z[k, j] -= g * Z[k, i]
        d[i] = Z[i, i]
        Z[i, i] = 1.0
        for j in range(i):
            Z[j, i] = 0.0
            Z[i, j] = 0.0
    transpose(Z, m)
    for i in range(1, m):                                    # tqli
        e[i - 1] = e[i]
    e[m - 1] = 0.0
    for l in range(m):
        it = 0
        while True:
            mm = m - 1
            for k in range(l, m - 1):
                dd = abs(d[k]) + abs(d[k + 1])
                if abs(e[k]) + dd == dd:
                    mm = k
                    break
            if mm == l:
                break
            it += 1
            if it > 60:
                return False
            g = (d[l + 1] - d[l]) / (2.0 * e[l])
            r = np.sqrt(g * g + 1.0)
            g = d[mm] - d[l] + e[l] / (g + (r if g >= 0.0 else -r))
            s, c, p = 1.0, 1.0, 0.0
            early = False
            for i in range(mm - 1, l - 1, -1):
                f = s * e[i]
                b = c * e[i]
                r = np.sqrt(f * f + g * g)
                e[i + 1] = r
                if r == 0.0:
                    d[i + 1] -= p
                    e[mm] = 0.0
                    early = True
                    break
                inv = 1.0 / r
                s = f * inv
                c = g * inv
                g = d[i + 1] - p
                r = (d[i] - g) * s + 2.0 * c * b
                p = s * r
                d[i + 1] = g + p
                g = c * r - b
                zi, zj = Z[i], Z[i + 1]
                for k in range(m):
                    f = zj[k]
                    zj[k] = s * zi[k] + c * f
                    zi[k] = c * zi[k] - s * f
            if early:
                continue
            d[l] -= p
            e[l] = g
            e[mm] = 0.0
    transpose(Z, m)
    return True


@inline
def transpose(Z, m):
    for r in range(m):
        for c in range(r):
            Z[r, c], Z[c, r] = Z[c, r], Z[r, c]


@inline
def modal_damping(I, K, zeta, m, L, A, V, D):
    """D (m, m) <- ``L U diag(2 zeta sqrt(w)) U^T L^T`` with ``I = L L^T`` and
    ``L^-1 K L^-T = U diag(w) U^T`` (Albu-Schaeffer et al., ICRA 2003). False if I
    is not positive definite. L, A, V: (m, m) scratch."""
    if not cholesky(I, L, m):
        return False
    for c in range(m):                                       # A = L^-1 K (forward solves, column by column)
        for i in range(m):
            s = K[i, c]
            for k in range(i):
                s -= L[i, k] * A[k, c]
            A[i, c] = s / L[i, i]
    for r in range(m):                                       # A <- A L^-T: rows solved against L
        for i in range(m):
            s = A[r, i]
            for k in range(i):
                s -= L[i, k] * A[r, k]
            A[r, i] = s / L[i, i]
    for r in range(m):                                       # symmetric in exact arithmetic
        for c in range(r + 1, m):
            A[r, c] = A[c, r] = 0.5 * (A[r, c] + A[c, r])
    if not symmetric_eigen(A, m, V, D[0], D[1]):             # D's rows as scratch: w in D[0]
        return False
    for c in range(m):                                       # column 0 <- sqrt of each mode's damping
        A[c, 0] = np.sqrt(2.0 * zeta * np.sqrt(max(D[0, c], 0.0)))
    for r in range(m):                                       # D <- L U (lower L)
        for c in range(m):
            s = 0.0
            for k in range(r + 1):
                s += L[r, k] * V[k, c]
            D[r, c] = s
    for r in range(m):
        for c in range(m):
            V[r, c] = D[r, c] * A[c, 0]
    for r in range(m):
        for c in range(r + 1):
            s = 0.0
            for k in range(m):
                s += V[r, k] * V[c, k]
            D[r, c] = s
            D[c, r] = s
    return True


@inline
def modal_factor(I, r, ri, zeta, m, F, U, w, e):
    """F (m, m) <- F with ``F F^T = 2 zeta (I # K)``, the damping of :func:`modal_damping`, for a
    diagonal stiffness ``K = diag(r)^2`` (``ri = 1 / r``): with ``diag(ri) I diag(ri) = W diag(mu)
    W^T``, ``F = diag(r) W diag(sqrt(2 zeta sqrt(mu)))`` (mu = 1 / w, the same modes). Scaling by
    a constant diagonal takes no factorisation and loses nothing (a full K's factor would make
    the rounding grow with cond(K): :func:`modal_damping` takes I's). False if the
    eigen-solver did not converge. U (m, m), w, e (m,) scratch."""
    for i in range(m):
        for j in range(m):
            F[i, j] = ri[i] * I[i, j] * ri[j]
    if not symmetric_eigen(F, m, U, w, e):
        return False
    for j in range(m):
        w[j] = np.sqrt(2.0 * zeta * np.sqrt(max(w[j], 0.0)))
    for i in range(m):
        for j in range(m):
            F[i, j] = r[i] * U[i, j] * w[j]
    return True


@inline
def _bias(D, q, qd, tau, flags, w, zero):
    """tau <- the compensated part of h = C qd + g (flags GRAVITY, CORIOLIS); R, p, v, a, f of w."""
    gravity, coriolis = flags & GRAVITY, flags & CORIOLIS
    if coriolis:
        zero[:] = 0.0
        _rnea(D, q, qd, zero, np.empty((0, 6)), tau, w.R, w.p, w.v, w.a, w.f)
        if not gravity:
            _gravity(D, q, zero, w.R, w.p, w.a, w.f)
            for k in range(tau.shape[0]):
                tau[k] -= zero[k]
    elif gravity:
        _gravity(D, q, tau, w.R, w.p, w.a, w.f)
    else:
        tau[:] = 0.0


def joint_scratch(n):
    """The joint law's scratch S (4 n + 5, n) for n joints."""
    return np.zeros((4 * n + 5, n))


@entry(MAT, V, V, V, MAT, nb.int64, MAT, nb.float64, V, MAT, V, data_table=False)
def joint_law(D, q, qd, q_d, X, flags, G, zeta, W, S, tau):
    """tau (n,) <- K e + D de + M qdd_d + h (:class:`~robot_dynamics.JointImpedance`).

    q, qd, q_d (n,): the state and the target; X (5, n): rows 3 and 4 qd_d, qdd_d; G (2 n + 3, n):
    K, D, max_pose_error, sqrt(diag K), 1 / sqrt(diag K); flags: GRAVITY, CORIOLIS, CLIP (max_pose_error),
    DAMPING (D given, else modal), DIAGONAL (K diagonal), TWIST (qd_d given), ACCELERATION (qdd_d
    given). S: joint_scratch(n). C-contiguous float64 vectors only (explicit signature: anything
    else raises TypeError; the caller then checks it and copies it into X's rows); status 1: q, qd
    or q_d not of length n. Each array argument of a compiled call costs about 0.05 us of
    dispatch, a copy into X about 0.13 us."""
    n = X.shape[1]
    if q.shape[0] != n or qd.shape[0] != n or q_d.shape[0] != n:
        return 1
    qd_d, qdd_d = X[3], X[4]
    K, Dm, max_pose_error = G[0:n], G[n:2 * n], G[2 * n]
    if not (finite1(q) and finite1(qd) and finite1(q_d)):
        return 2
    if (flags & TWIST and not finite1(qd_d)) or (flags & ACCELERATION and not finite1(qdd_d)):
        return 2
    w = work(W, nbodies(D) + 1, n)
    e, de, y, z, ev = S[0], S[1], S[2], S[3], S[4]
    F, U, L, Dq = S[5:5 + n], S[5 + n:5 + 2 * n], S[5 + 2 * n:5 + 3 * n], S[5 + 3 * n:5 + 4 * n]
    for k in range(n):
        e[k] = q_d[k] - q[k]
        if flags & CLIP:
            e[k] = min(max(e[k], -max_pose_error[k]), max_pose_error[k])
        de[k] = (qd_d[k] if flags & TWIST else 0.0) - qd[k]
    if (flags & ACCELERATION) or not (flags & DAMPING):
        _crba(D, q, w.M, w.R, w.p, w.IC, 0)
    for r in range(n):                                        # K e (+ D de)
        s = 0.0
        for c in range(n):
            s += K[r, c] * e[c]
            if flags & DAMPING:
                s += Dm[r, c] * de[c]
        y[r] = s
    if not (flags & DAMPING) and not (flags & DIAGONAL):      # + D de, D the modal damping
        if not modal_damping(w.M, K, zeta, n, L, F, U, Dq):
            return 3
        for r in range(n):
            s = 0.0
            for c in range(n):
                s += Dq[r, c] * de[c]
            y[r] += s
    elif not (flags & DAMPING):                               # + F (F^T de), F F^T the modal damping
        if not modal_factor(w.M, G[2 * n + 1], G[2 * n + 2], zeta, n, F, U, z, ev):
            return 3
        for c in range(n):
            s = 0.0
            for k in range(n):
                s += F[k, c] * de[k]
            z[c] = s
        for r in range(n):
            s = 0.0
            for c in range(n):
                s += F[r, c] * z[c]
            y[r] += s
    if flags & ACCELERATION:                                  # M qdd_d
        for r in range(n):
            s = 0.0
            for c in range(n):
                s += w.M[r, c] * qdd_d[c]
            y[r] += s
    _bias(D, q, qd, tau, flags, w, e)
    for r in range(n):
        tau[r] += y[r]
    return 0 if finite1(tau) else 2


def cartesian_scratch(n):
    """The Cartesian law's scratch S (n + 65, max(n, 6)) for n joints."""
    return np.zeros((n + 65, max(n, 6)))


@inline
def shepperd(T, Q):
    """Q (4,) <- the unit quaternion (x, y, z, w), w >= 0, of the rotation T[:3, :3]
    (Shepperd's method, as :func:`robot_dynamics.model.configuration.matrix_quaternion`)."""
    t = T[0, 0] + T[1, 1] + T[2, 2]
    i, best = 0, t
    for k in range(3):
        if T[k, k] > best:
            i, best = k + 1, T[k, k]
    if i == 0:
        s = 2.0 * np.sqrt(1.0 + t)
        Q[0], Q[1], Q[2], Q[3] = (T[2, 1] - T[1, 2]) / s, (T[0, 2] - T[2, 0]) / s, (T[1, 0] - T[0, 1]) / s, s / 4
    else:
        a, b, c = i - 1, i % 3, (i + 1) % 3
        s = 2.0 * np.sqrt(1.0 + T[a, a] - T[b, b] - T[c, c])
        Q[a], Q[b], Q[c] = s / 4, (T[b, a] + T[a, b]) / s, (T[c, a] + T[a, c]) / s
        Q[3] = (T[c, b] - T[b, c]) / s
    if Q[3] < 0:
        for k in range(4):
            Q[k] = -Q[k]


@inline
def rotation_error(Q_d, Q, e):
    """e[3:6] <- log(Q_d Q^-1), the rotation vector [rad] the shorter way round; Q_d, Q (4,) (x, y, z, w)."""
    ax, ay, az, aw = Q_d[0], Q_d[1], Q_d[2], Q_d[3]
    bx, by, bz, bw = -Q[0], -Q[1], -Q[2], Q[3]
    vx = aw * bx + bw * ax + (ay * bz - az * by)
    vy = aw * by + bw * ay + (az * bx - ax * bz)
    vz = aw * bz + bw * az + (ax * by - ay * bx)
    ww = aw * bw - (ax * bx + ay * by + az * bz)
    if ww < 0.0:
        vx, vy, vz, ww = -vx, -vy, -vz, -ww
    s = np.sqrt(vx * vx + vy * vy + vz * vz)
    scale = 2.0 * np.arctan2(s, ww) / s if s > 1e-12 else 2.0 / max(ww, 1e-300)
    e[3], e[4], e[5] = vx * scale, vy * scale, vz * scale


@inline
def clip_norm(e, o, limit):
    s = np.sqrt(e[o] * e[o] + e[o + 1] * e[o + 1] + e[o + 2] * e[o + 2])
    f = min(1.0, limit / max(s, 1e-300))
    for k in range(o, o + 3):
        e[k] *= f


@inline
def condition(J, n, G, V, w, e):
    """cond(J) (6, n) as sqrt of the extreme eigenvalues of J J^T (G, V: 6x6, w, e: (6,) scratch)."""
    for r in range(6):
        for c in range(r + 1):
            s = 0.0
            for k in range(n):
                s += J[r, k] * J[c, k]
            G[r, c] = G[c, r] = s
    if not symmetric_eigen(G, 6, V, w, e):
        return np.inf
    lo, hi = w[0], w[0]
    for k in range(1, 6):
        lo, hi = min(lo, w[k]), max(hi, w[k])
    return np.sqrt(hi / lo) if lo > 0.0 else np.inf


@inline
def matvec6(A, x, y):
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[r, c] * x[c]
        y[r] = s


@entry(MAT, V, V, V, V, V, nb.int64, V, V, V, V, V, nb.int64, MAT, V, V, MAT, V, data_table=False)
def cartesian_law(D, q, qd, q0, K0, D0, body, P, point, position, quaternion, motion, flags, G, scalars, W, S, tau):
    """tau (n,) <- the Cartesian impedance torque of one state (:class:`~robot_dynamics.CartesianImpedance`).

    q, qd (n,): the state; q0, K0, D0 (n,): the posture, its stiffness and damping; position (3,),
    quaternion (4,): the target pose; motion (18,): target twist, acceleration and the measured wrench
    (:data:`TARGET_SIZE` is the length of position, quaternion and motion in one vector); G (18, 6): K,
    D, Lambda_d^-1; flags: GRAVITY, CORIOLIS, SHAPING, TWIST, ACCELERATION, CLIP, DAMPING (D given or
    the constant modal damping of the shaped inertia; else modal on Lambda(q)); scalars: (zeta,
    max_condition, max translation, max rotation, cond(J) out); S: cartesian_scratch(n). C-contiguous
    float64 vectors only (explicit signature: anything else raises TypeError; the caller then checks
    it and copies it into its buffers), status 1: a vector of another length. The state and the target
    go in as the caller has them: a copy costs more than the argument's dispatch (joint_law's note).
    """
    n = q.shape[0]
    if (qd.shape[0] != n or q0.shape[0] != n or K0.shape[0] != n or D0.shape[0] != n or position.shape[0] != 3
            or quaternion.shape[0] != 4 or motion.shape[0] != TARGET_SIZE - 7 or S.shape[1] < n):
        return 1
    K, Dc, shaping_inv = G[0:6], G[6:12], G[12:18]
    if not (finite1(q) and finite1(qd) and finite1(position) and finite1(quaternion) and finite1(motion)):
        return 2
    qx, qy, qz, qw = quaternion[0], quaternion[1], quaternion[2], quaternion[3]
    if not abs(np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw) - 1.0) <= 1e-6:
        return 2
    w = work(W, nbodies(D) + 1, n)
    J, Y = S[0:6, :n], S[6:6 + n, :6]
    r = 6 + n
    Lam, A, C, Z = S[r:r + 6, :6], S[r + 6:r + 12, :6], S[r + 12:r + 18, :6], S[r + 18:r + 24, :6]
    Lm, Am, Vm, Dq = S[r + 24:r + 30, :6], S[r + 30:r + 36, :6], S[r + 36:r + 42, :6], S[r + 42:r + 48, :6]
    e, de, F, acc, t6, tau0, t = (S[r + 48, :6], S[r + 49, :6], S[r + 50, :6], S[r + 51, :6], S[r + 52, :6],
                                  S[r + 53, :n], S[r + 54, :n])
    T = S[r + 55:r + 59, :4]
    world_poses(D, q, w.R, w.p, w.Rw, w.pw)
    frame_point(D, body, P, point, w.Rw, w.pw, T)
    frame_jacobian(D, body, T, w.Rw, w.pw, J)
    cond = condition(J, n, Am, Vm, Dq[0], Dq[1])
    scalars[4] = cond
    if not cond <= scalars[1]:
        return 4
    if flags & CORIOLIS:
        frame_bias(D, qd, body, T, w.Rw, w.pw, w.v, w.a, acc)
    _crba(D, q, w.M, w.R, w.p, w.IC, 0)
    if not task_inertia(w.M, n, J, 6, Y, A, C, Z, Lam):
        return 3
    L = w.M
    for c in range(6):                                       # Y <- M^-1 J^T = L^-T Y
        for i in range(n - 1, -1, -1):
            s = Y[i, c]
            for k in range(i + 1, n):
                s -= L[k, i] * Y[k, c]
            Y[i, c] = s / L[i, i]
    shepperd(T, t6)                                          # the pose error
    for k in range(3):
        e[k] = position[k] - T[k, 3]
    rotation_error(quaternion, t6, e)
    if flags & CLIP:
        clip_norm(e, 0, scalars[2])
        clip_norm(e, 3, scalars[3])
    for k in range(6):                                       # de = twist - J qd
        s = 0.0
        for c in range(n):
            s += J[k, c] * qd[c]
        de[k] = (motion[k] if flags & TWIST else 0.0) - s
    if flags & DAMPING:
        Dm = Dc
    else:
        if not modal_damping(Lam, K, scalars[0], 6, Lm, Am, Vm, Dq):
            return 3
        Dm = Dq
    for k in range(6):
        s = 0.0
        for c in range(6):
            s += K[k, c] * e[c] + Dm[k, c] * de[c]
        F[k] = s
    if flags & SHAPING:                                      # Lambda Lambda_d^-1 (F + F_ext) - F_ext
        for k in range(6):
            F[k] += motion[12 + k]
        matvec6(shaping_inv, F, t6)
        matvec6(Lam, t6, F)
        for k in range(6):
            F[k] -= motion[12 + k]
    if flags & (CORIOLIS | ACCELERATION):                    # + Lambda (a_d - Jdot qd)
        for k in range(6):
            t6[k] = (motion[6 + k] if flags & ACCELERATION else 0.0) - (acc[k] if flags & CORIOLIS else 0.0)
        matvec6(Lam, t6, e)
        for k in range(6):
            F[k] += e[k]
    for k in range(n):                                       # the posture torque tau_0
        tau0[k] = K0[k] * (q0[k] - q[k]) - D0[k] * qd[k]
    for k in range(6):                                       # Jbar^T tau_0 = Lambda (M^-1 J^T)^T tau_0
        s = 0.0
        for c in range(n):
            s += Y[c, k] * tau0[c]
        t6[k] = s
    matvec6(Lam, t6, e)
    _bias(D, q, qd, tau, flags, w, t)
    for c in range(n):                                       # tau += J^T F + (1 - J^T Jbar^T) tau_0
        s = tau0[c]
        for k in range(6):
            s += J[k, c] * (F[k] - e[k])
        tau[c] += s
    return 0 if finite1(tau) else 2
