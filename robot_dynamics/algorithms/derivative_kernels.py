"""Analytical derivatives of the inverse and forward dynamics: the compiled kernels.

Carpentier and Mansard, "Analytical derivatives of rigid body dynamics
algorithms", RSS 2018, sec. III (the RNEA derivatives) and sec. IV
(the ABA derivatives as ``-M^-1`` times them), recursive and O(n^2); the
spatial algebra and the recursions are Featherstone's, *Rigid Body
Dynamics Algorithms*, ch. 2 (spatial cross products and the
differentiation of spatial vectors) and sec. 5.3 (the RNEA).

Everything is expressed in the base frame. With ``S_j`` the motion
subspace of joint j, ``v_j`` and ``a_j`` the body velocity and acceleration
(gravity enters as ``a_0 = -g``), ``lambda(j)`` the parent:

- ``Sdot_j = v_lambda(j) x S_j`` and ``Sddot_j = a_lambda(j) x S_j + v_lambda(j) x Sdot_j``;
- moving coordinate j moves every body i in its subtree; in the body's
  own frame (mapped to the base frame) ``dv_i/dq_j = Sdot_j``,
  ``da_i/dq_j = Sddot_j - v_i x Sdot_j``, ``dv_i/dqd_j = S_j``,
  ``da_i/dqd_j = 2 Sdot_j - v_i x S_j``;
- so ``df_i/dq_j = I_i Sddot_j + B_i Sdot_j`` and
  ``df_i/dqd_j = 2 I_i Sdot_j + B_i S_j`` with the body's
  ``B_i = (v_i x*) I_i - I_i (v_i x) + (I_i v_i) xbar`` (``(h xbar) m = m x* h``);
- with composites over subtrees ``IC_k``, ``BC_k`` and the subtree force
  ``F_k`` (sums, as all are in the base frame), for j in the subtree of k
  ``dtau_j/dq_k = S_j . (IC_j Sddot_k + BC_j Sdot_k)``,
  ``dtau_j/dqd_k = S_j . (2 IC_j Sdot_k + BC_j S_k)``, and for j a strict
  ancestor of k ``dtau_j/dq_k = S_j . (IC_k Sddot_k + BC_k Sdot_k + S_k x* F_k)``,
  ``dtau_j/dqd_k = S_j . (2 IC_k Sdot_k + BC_k S_k)``; ``M_jk = S_j . IC S_k`` alike.

Mimic joints: the recursion runs over bodies (the free tree), and the
chain rule through ``q_body = multiplier * q[source] + offset`` folds each
body entry into its coordinates: ``dtau/dq = G^T dtau_bodies/dq_bodies G``.
External wrenches are fixed to their links, so they enter only through
``F_k``.
"""
import numba as nb
import numpy as np

from .aba import _aba, forward_states, forward_states_crb, forward_states_fext
from .kernels import (TABLE, V, V_RO, XT_force_add, XT_I_X_add, I_times, all_finite, bad_length, chunks,
                      crf_add, entry, finite1, jit, joint_coordinate, nbodies, parallel, parent_row,
                      set_base_acceleration, work, work_buffer, work_size, world_poses)
from ..model.packed import ARMATURE, AXIS, JTYPE, MASS, PARENT, PRISMATIC, QIDX, QMUL

OUT3 = nb.types.Array(nb.float64, 3, "C")       # (3, nq, nq): three matrices of one state


@jit
def _cross(x, s, y, t, out, o):
    """out[o] = x[s] x y[t], the motion cross product (w x w', w x u' + u x w')."""
    w0, w1, w2, u0, u1, u2 = x[s, 0], x[s, 1], x[s, 2], x[s, 3], x[s, 4], x[s, 5]
    a0, a1, a2, b0, b1, b2 = y[t, 0], y[t, 1], y[t, 2], y[t, 3], y[t, 4], y[t, 5]
    out[o, 0] = w1 * a2 - w2 * a1
    out[o, 1] = w2 * a0 - w0 * a2
    out[o, 2] = w0 * a1 - w1 * a0
    out[o, 3] = w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1
    out[o, 4] = w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2
    out[o, 5] = w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0


@jit
def _dot(x, s, y, t):
    return (x[s, 0] * y[t, 0] + x[s, 1] * y[t, 1] + x[s, 2] * y[t, 2]
            + x[s, 3] * y[t, 3] + x[s, 4] * y[t, 4] + x[s, 5] * y[t, 5])


@jit
def _motion_subspace(D, i, Rw, pw, S):
    """S[i]: joint i's motion subspace in the base frame, (a, p x a) revolute, (0, a) prismatic."""
    a0 = Rw[i, 0, 0] * D[i, AXIS] + Rw[i, 0, 1] * D[i, AXIS + 1] + Rw[i, 0, 2] * D[i, AXIS + 2]
    a1 = Rw[i, 1, 0] * D[i, AXIS] + Rw[i, 1, 1] * D[i, AXIS + 1] + Rw[i, 1, 2] * D[i, AXIS + 2]
    a2 = Rw[i, 2, 0] * D[i, AXIS] + Rw[i, 2, 1] * D[i, AXIS + 1] + Rw[i, 2, 2] * D[i, AXIS + 2]
    if D[i, JTYPE] == PRISMATIC:
        S[i, 0], S[i, 1], S[i, 2], S[i, 3], S[i, 4], S[i, 5] = 0.0, 0.0, 0.0, a0, a1, a2
    else:
        S[i, 0], S[i, 1], S[i, 2] = a0, a1, a2
        S[i, 3] = pw[i, 1] * a2 - pw[i, 2] * a1
        S[i, 4] = pw[i, 2] * a0 - pw[i, 0] * a2
        S[i, 5] = pw[i, 0] * a1 - pw[i, 1] * a0


@jit
def _body_A(D, i, IC, v, A):
    """A[i]: the 6 numbers (00, 01, 02, 11, 12, 22) of the symmetric 3x3
    ``A = [w x] J - J [w x] - [u x][s x] - [s x][u x]`` of body i, with v_i = (w, u)
    and I_i = (m, s = m c, J) in the base frame (IC[i])."""
    w0, w1, w2, u0, u1, u2 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
    s0, s1, s2 = IC[i, 1], IC[i, 2], IC[i, 3]
    j00, j01, j02, j11, j12, j22 = IC[i, 4], IC[i, 5], IC[i, 6], IC[i, 8], IC[i, 9], IC[i, 12]
    # K = [w x] J, rows k0, k1, k2 (J symmetric)
    k00, k01, k02 = w1 * j02 - w2 * j01, w1 * j12 - w2 * j11, w1 * j22 - w2 * j12
    k10, k11, k12 = w2 * j00 - w0 * j02, w2 * j01 - w0 * j12, w2 * j02 - w0 * j22
    k20, k21, k22 = w0 * j01 - w1 * j00, w0 * j11 - w1 * j01, w0 * j12 - w1 * j02
    us = 2.0 * (u0 * s0 + u1 * s1 + u2 * s2)
    # A = K + K^T - s u^T - u s^T + 2 (u . s) 1
    A[i, 0] = 2.0 * (k00 - s0 * u0) + us
    A[i, 1] = k01 + k10 - s0 * u1 - u0 * s1
    A[i, 2] = k02 + k20 - s0 * u2 - u0 * s2
    A[i, 3] = 2.0 * (k11 - s1 * u1) + us
    A[i, 4] = k12 + k21 - s1 * u2 - u1 * s2
    A[i, 5] = 2.0 * (k22 - s2 * u2) + us


@jit
def _B_times(A, h, k, x, s, out, o):
    """out[o] = B_k x[s] = (A xw + xw x n, 2 xw x f) for ``B = [[A - [n x], 0], [-2 [f x], 0]]``, h[k] = (n, f)."""
    x0, x1, x2 = x[s, 0], x[s, 1], x[s, 2]
    n0, n1, n2, f0, f1, f2 = h[k, 0], h[k, 1], h[k, 2], h[k, 3], h[k, 4], h[k, 5]
    out[o, 0] = A[k, 0] * x0 + A[k, 1] * x1 + A[k, 2] * x2 + x1 * n2 - x2 * n1
    out[o, 1] = A[k, 1] * x0 + A[k, 3] * x1 + A[k, 4] * x2 + x2 * n0 - x0 * n2
    out[o, 2] = A[k, 2] * x0 + A[k, 4] * x1 + A[k, 5] * x2 + x0 * n1 - x1 * n0
    out[o, 3] = 2.0 * (x1 * f2 - x2 * f1)
    out[o, 4] = 2.0 * (x2 * f0 - x0 * f2)
    out[o, 5] = 2.0 * (x0 * f1 - x1 * f0)


@jit
def _rnea_derivatives(D, q, qd, qdd, fext, gravity, dq, dqd, M, w):
    """One state: dq = dtau/dq, dqd = dtau/dqd, M = dtau/dqdd (nq, nq), all
    accumulated through the mimic map; gravity False drops a_0 = -g.

    ``B_i = (v_i x*) I_i - I_i (v_i x) + (I_i v_i) xbar`` is, with v = (w, u),
    I = (m, s = m c, J) and I v = (n, f), the matrix ``[[A - [n x], 0], [-2 [f x], 0]]``
    (the terms in u and m cancel), ``A = [w x] J - J [w x] - [u x][s x] - [s x][u x]``:
    12 numbers that add up over subtrees like the inertias (A in U, I v in pA).

    Work: R, p, Rw, pw poses; S, Sd, c = Sddot; v, a; f (then subtree
    forces F_k); IC (13 inertia parameters in the base frame, then
    composites); U (A, then composites); pA (I v, then composites); F, T scratch rows."""
    R, p, Rw, pw, S, Sd, Sdd, v, a, f = w.R, w.p, w.Rw, w.pw, w.S, w.Sd, w.c, w.v, w.a, w.f
    IC, A, h, F, T = w.IC, w.U, w.pA, w.F, w.T
    n = nbodies(D)
    world_poses(D, q, R, p, Rw, pw)
    v[n, :] = 0.0
    if gravity:
        set_base_acceleration(D, a)                       # a_0 = -g
    else:
        a[n, :] = 0.0
    for i in range(n):                                    # forward pass (base frame)
        par = parent_row(D, i)
        qdi, qddi = joint_coordinate(D, i, qd), joint_coordinate(D, i, qdd)
        _motion_subspace(D, i, Rw, pw, S)
        _cross(v, par, S, i, Sd, i)                       # Sdot_i = v_p x S_i
        _cross(v, par, Sd, i, Sdd, i)                     # Sddot_i = a_p x S_i + v_p x Sdot_i
        _cross(a, par, S, i, F, 0)
        for k in range(6):
            Sdd[i, k] += F[0, k]
            v[i, k] = v[par, k] + S[i, k] * qdi            # v_i = v_p + S_i qd_i
            a[i, k] = a[par, k] + S[i, k] * qddi + Sd[i, k] * qdi   # a_i = a_p + S_i qdd_i + Sdot_i qd_i
        IC[i, :] = 0.0                                    # I_i in the base frame
        XT_I_X_add(Rw, pw, i, D, i, MASS, IC, i)
        I_times(IC, i, 0, a, i, f, i)                     # f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
        I_times(IC, i, 0, v, i, h, i)
        crf_add(v, i, h, i, f, i)
        if fext.shape[0]:
            F[2, :] = 0.0
            XT_force_add(Rw, pw, i, fext, i, F, 2)          # the body-frame wrench in the base frame
            for k in range(6):
                f[i, k] -= F[2, k]
        _body_A(D, i, IC, v, A)                           # B_i
    dq[:, :] = 0.0
    dqd[:, :] = 0.0
    M[:, :] = 0.0
    for k in range(n - 1, -1, -1):                        # backward pass: composites of k complete
        I_times(IC, k, 0, S, k, T, 0)                     # IC_k S_k
        I_times(IC, k, 0, Sd, k, T, 1)                    # IC_k Sdot_k
        I_times(IC, k, 0, Sdd, k, T, 2)                   # IC_k Sddot_k
        _B_times(A, h, k, Sd, k, T, 3)                    # BC_k Sdot_k
        _B_times(A, h, k, S, k, T, 5)                     # BC_k S_k
        crf_add(S, k, f, k, T, 3)                         # + S_k x* F_k
        for r in range(6):
            T[3, r] += T[2, r]                            # column k, ancestor rows: IC Sddot + BC Sdot + S x* F
            T[5, r] += 2.0 * T[1, r]                      # column k, ancestor rows: 2 IC Sdot + BC S
        # BC_k^T S_k = (A Sw + n x Sw + 2 f x Su, 0), the row vector of row k
        s0, s1, s2, s3, s4, s5 = S[k, 0], S[k, 1], S[k, 2], S[k, 3], S[k, 4], S[k, 5]
        n0, n1, n2, f0, f1, f2 = h[k, 0], h[k, 1], h[k, 2], h[k, 3], h[k, 4], h[k, 5]
        b0 = A[k, 0] * s0 + A[k, 1] * s1 + A[k, 2] * s2 + n1 * s2 - n2 * s1 + 2.0 * (f1 * s5 - f2 * s4)
        b1 = A[k, 1] * s0 + A[k, 3] * s1 + A[k, 4] * s2 + n2 * s0 - n0 * s2 + 2.0 * (f2 * s3 - f0 * s5)
        b2 = A[k, 2] * s0 + A[k, 4] * s1 + A[k, 5] * s2 + n0 * s1 - n1 * s0 + 2.0 * (f0 * s4 - f1 * s3)
        qk, mk = int(D[k, QIDX]), D[k, QMUL]
        m = k
        while m >= 0:                                     # row k, columns m = k and its ancestors
            qm, c = int(D[m, QIDX]), mk * D[m, QMUL]
            tS = _dot(T, 0, Sd, m)
            dq[qk, qm] += c * (_dot(T, 0, Sdd, m) + b0 * Sd[m, 0] + b1 * Sd[m, 1] + b2 * Sd[m, 2])
            dqd[qk, qm] += c * (2.0 * tS + b0 * S[m, 0] + b1 * S[m, 1] + b2 * S[m, 2])
            M[qk, qm] += c * _dot(T, 0, S, m)
            m = int(D[m, PARENT])
        M[qk, qk] += mk * mk * D[k, ARMATURE]             # the rotor's inertia: dtau/dqdd = M
        j = int(D[k, PARENT])
        while j >= 0:                                     # column k, strict ancestor rows j
            qj, c = int(D[j, QIDX]), mk * D[j, QMUL]
            dq[qj, qk] += c * _dot(S, j, T, 3)
            dqd[qj, qk] += c * _dot(S, j, T, 5)
            M[qj, qk] += c * _dot(S, j, T, 0)
            j = int(D[j, PARENT])
        par = int(D[k, PARENT])
        if par >= 0:                                      # composites: plain sums in the base frame
            for c in range(13):
                IC[par, c] += IC[k, c]
            for r in range(6):
                f[par, r] += f[k, r]
                h[par, r] += h[k, r]
                A[par, r] += A[k, r]


@jit
def _cholesky(M, r):
    """Lower Cholesky factor L of M in place, r[j] = 1 / L[j, j]; False if M is
    not positive definite."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        if not s > 0.0:
            return False
        M[j, j] = np.sqrt(s)
        r[j] = 1.0 / M[j, j]
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s * r[j]
    return True


@jit
def _inverse(L, r, Minv):
    """Minv = M^-1 = L^-T L^-1 from the Cholesky factor L (r: its reciprocal
    diagonal): L^-1 into Minv's lower triangle, then the product, lower
    triangle first and mirrored."""
    n = L.shape[0]
    for j in range(n):                                    # Linv column j: L Linv[:, j] = e_j
        Minv[j, j] = r[j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * Minv[k, j]
            Minv[i, j] = s * r[i]
    for i in range(n):                                    # Minv[i, j] = sum_k Linv[k, i] Linv[k, j], j <= i
        for j in range(i + 1):
            s = 0.0
            for k in range(i, n):
                s += Minv[k, i] * Minv[k, j]
            Minv[i, j] = s                                # Linv[k, *] for k >= i is still needed: k > i rows untouched
    for i in range(n):
        for j in range(i + 1, n):
            Minv[i, j] = Minv[j, i]


@jit
def _times_minus(Minv, X0, X1, Y0, Y1):
    """Y0 = -Minv X0 and Y1 = -Minv X1 (one pass over Minv; rows of X in the
    inner loop, contiguous, so that it vectorises)."""
    n = Minv.shape[0]
    for i in range(n):
        for c in range(n):
            Y0[i, c] = 0.0
            Y1[i, c] = 0.0
        for k in range(n):
            m = -Minv[i, k]
            for c in range(n):
                Y0[i, c] += m * X0[k, c]
                Y1[i, c] += m * X1[k, c]


@jit
def _aba_derivatives(D, q, qd, qdd, fext, out, w, tmp):
    """One state: out[0] = dqdd/dq, out[1] = dqdd/dqd, out[2] = M^-1, given
    qdd = FD(q, qd, tau); tmp (3, nq, nq) scratch. False if M(q) is singular.

    tau = ID(q, qd, FD(q, qd, tau)) for all q, qd gives dqdd/dq = -M^-1 dtau/dq
    and dqdd/dqd = -M^-1 dtau/dqd, the RNEA derivatives taken at that qdd
    (Carpentier and Mansard, sec. IV)."""
    L, r = tmp[2], w.d
    _rnea_derivatives(D, q, qd, qdd, fext, True, tmp[0], tmp[1], L, w)
    if not _cholesky(L, r):
        return False
    _inverse(L, r, out[2])
    _times_minus(out[2], tmp[0], tmp[1], out[0], out[1])  # dqdd/dq = -M^-1 dtau/dq, dqdd/dqd = -M^-1 dtau/dqd
    return True


@jit
def rnea_derivative_states(D, Q, QD, QDD, FEXT, gravity, OUT, W):
    """OUT[b] = (dtau/dq, dtau/dqd, M) for every row of one chunk."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    none = np.empty((0, 6))
    for b in range(Q.shape[0]):
        fext = FEXT[b] if FEXT.shape[0] > 0 else none
        _rnea_derivatives(D, Q[b], QD[b], QDD[b], fext, gravity, OUT[b, 0], OUT[b, 1], OUT[b, 2], w)


@parallel
def rnea_derivatives_batch(D, Q, QD, QDD, FEXT, gravity, OUT):
    """(B, nq) states -> OUT (B, 3, nq, nq) on all threads; FEXT (B, nb, 6) or (0, 0, 6).
    False if a value is not finite."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        rnea_derivative_states(D, Q[lo:hi], QD[lo:hi], QDD[lo:hi], FEXT[lo:hi], gravity, OUT[lo:hi],
                               np.empty(size))
    return all_finite(OUT) and all_finite(Q) and all_finite(QD) and all_finite(QDD)


@jit
def aba_derivative_states(D, Q, QD, TAU, FEXT, OUT, W):
    """OUT[b] = (dqdd/dq, dqdd/dqd, M^-1) for every row of one chunk (NaN where M is singular).

    The accelerations first, for the whole chunk, by the forward-dynamics
    loops of :mod:`.aba` (the ABA, or the CRBA route for coupled trees),
    called with the types :func:`.aba.aba_batch` gives them: their compiled
    code is shared, not compiled again here."""
    B, nq = Q.shape
    QDD = np.empty((B, nq))
    if nbodies(D) != nq:
        forward_states_crb(D, Q, QD, TAU, FEXT, QDD, W)
    elif FEXT.shape[0] > 0:
        forward_states_fext(D, Q, QD, TAU, FEXT, QDD, W)
    else:
        forward_states(D, Q, QD, TAU, QDD, W)
    w = work(W, nbodies(D) + 1, nq)
    tmp = np.empty((3, nq, nq))
    none = np.empty((0, 6))
    for b in range(B):
        fext = FEXT[b] if FEXT.shape[0] > 0 else none
        if not _aba_derivatives(D, Q[b], QD[b], QDD[b], fext, OUT[b], w, tmp):
            OUT[b] = np.nan


@parallel
def aba_derivatives_batch(D, Q, QD, TAU, FEXT, OUT):
    """(B, nq) states -> OUT (B, 3, nq, nq) on all threads; FEXT (B, nb, 6) or (0, 0, 6)."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        aba_derivative_states(D, Q[lo:hi], QD[lo:hi], TAU[lo:hi], FEXT[lo:hi], OUT[lo:hi], np.empty(size))
        ok[k] = all_finite(OUT[lo:hi])                     # each thread checks its own results
    return ok.all() and all_finite(Q) and all_finite(QD) and all_finite(TAU)


@jit
def _bad_out(q, out):
    return out.shape[0] != 3 or out.shape[1] != q.shape[0] or out.shape[2] != q.shape[0]


@jit
def _rows(q, qd, x):
    """The state as three writable rows (3, nq), so that the single-state entry
    points call the kernels with the batch loops' types (compiled once)."""
    X = np.empty((3, q.shape[0]))
    X[0, :] = q
    X[1, :] = qd
    X[2, :] = x
    return X


@jit
def _aba_derivatives_single(D, X, out, W):
    """One state X = (q, qd, tau): the ABA (a coupled tree: M and h from one
    pass of :func:`_rnea_derivatives` at qdd = 0, then qdd = M^-1 (tau - h),
    Featherstone sec. 6.1), then :func:`_aba_derivatives`. False if singular."""
    q, qd, tau = X[0], X[1], X[2]
    nq = q.shape[0]
    w = work(W, nbodies(D) + 1, nq)
    tmp = np.empty((3, nq, nq))
    none = np.empty((0, 6))
    qdd = np.zeros(nq)
    if nbodies(D) == nq:
        _aba(D, q, qd, tau, none, qdd, w)
    else:
        M, Minv, h = tmp[2], tmp[1], tmp[0]
        _rnea_derivatives(D, q, qd, qdd, none, True, tmp[0], tmp[1], M, w)
        if not _cholesky(M, w.d):
            return False
        _inverse(M, w.d, Minv)
        _rnea_bias(D, w, h[0])                            # h = ID(q, qd, 0) from the same pass
        for i in range(nq):
            s = 0.0
            for k in range(nq):
                s += Minv[i, k] * (tau[k] - h[0, k])
            qdd[i] = s
    return _aba_derivatives(D, q, qd, qdd, none, out, w, tmp)


@jit
def _rnea_bias(D, w, h):
    """h[source] += multiplier * S_k . F_k: the torques of the last
    :func:`_rnea_derivatives` pass (its subtree forces F_k are left in w.f)."""
    h[:] = 0.0
    for k in range(nbodies(D)):
        h[int(D[k, QIDX])] += D[k, QMUL] * _dot(w.S, k, w.f, k)


@entry(TABLE, V_RO, V_RO, V_RO, OUT3, V)
def rnea_derivatives_one(D, q, qd, qdd, out, W):
    """Single-state entry point. Status 0, 1 (a size does not fit) or 2 (not finite)."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, qdd) or _bad_out(q, out):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    X = _rows(q, qd, qdd)
    _rnea_derivatives(D, X[0], X[1], X[2], np.empty((0, 6)), True, out[0], out[1], out[2],
                      work(W, nbodies(D) + 1, q.shape[0]))
    return 0 if all_finite(out) and finite1(q) and finite1(qd) and finite1(qdd) else 2


@entry(TABLE, V_RO, V_RO, V_RO, OUT3, V)
def aba_derivatives_one(D, q, qd, tau, out, W):
    """Single-state entry point. Status 0, 1 (a size does not fit) or 2 (not finite or singular)."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau) or _bad_out(q, out):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    if not _aba_derivatives_single(D, _rows(q, qd, tau), out, W):
        return 2
    return 0 if all_finite(out) and finite1(q) and finite1(qd) and finite1(tau) else 2
