"""Articulated-body algorithm: forward dynamics qdd = FD(q, qd, tau).

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 7.3 (Table 7.1);
Handbook of Robotics, sec. 3.7 (Algorithm 3.4). O(n) in three passes:
velocities and bias forces outward, articulated inertias ``IA`` and bias
forces ``pA`` inward, accelerations outward. Models with mimic joints are
coupled trees that the ABA does not cover; for them ``aba`` solves
``M(q) qdd = tau - h(q, qd)`` with the CRBA, the RNEA and a Cholesky
factorisation (Featherstone sec. 6.1, "FDcrb"), compiled as well.
"""
import numba as nb
import numpy as np

from . import floating
from ..errors import SingularityError
from .dispatch import Algorithm, chain, public
from .kernels import (MAT, TABLE, entry, V, V_RO, chunks, work_buffer, parallel, work, work_size, S_add, crm_S_add, all_finite, bad_length,
                   crf_add, finite1, XT_force_add, I_matrix, I_times, inline, jit,
                   joint_coordinate, ST_force, jcalc, joint_position, X_motion, nbodies,
                   parent_row, set_base_acceleration)
from .crba import _crba
from ..model.packed import ARMATURE, AXIS, JTYPE, MASS, NQ, PARENT, PRISMATIC
from .root_kernels import NO_WRENCH, bad_sizes, cholesky_solve, root_component, root_sizes, root_state
from .rnea import _NO_FEXT, _rnea, bad_wrenches


@inline
def rotate_symmetric(R, i, s00, s01, s02, s11, s12, s22):
    """The 6 distinct entries of R_i S R_i^T for a symmetric 3x3 S."""
    t00 = s00 * R[i, 0, 0] + s01 * R[i, 0, 1] + s02 * R[i, 0, 2]     # T = S R^T (columns 0..2 of T are S times rows of R)
    t10 = s01 * R[i, 0, 0] + s11 * R[i, 0, 1] + s12 * R[i, 0, 2]
    t20 = s02 * R[i, 0, 0] + s12 * R[i, 0, 1] + s22 * R[i, 0, 2]
    t01 = s00 * R[i, 1, 0] + s01 * R[i, 1, 1] + s02 * R[i, 1, 2]
    t11 = s01 * R[i, 1, 0] + s11 * R[i, 1, 1] + s12 * R[i, 1, 2]
    t21 = s02 * R[i, 1, 0] + s12 * R[i, 1, 1] + s22 * R[i, 1, 2]
    t02 = s00 * R[i, 2, 0] + s01 * R[i, 2, 1] + s02 * R[i, 2, 2]
    t12 = s01 * R[i, 2, 0] + s11 * R[i, 2, 1] + s12 * R[i, 2, 2]
    t22 = s02 * R[i, 2, 0] + s12 * R[i, 2, 1] + s22 * R[i, 2, 2]
    return (R[i, 0, 0] * t00 + R[i, 0, 1] * t10 + R[i, 0, 2] * t20,
            R[i, 0, 0] * t01 + R[i, 0, 1] * t11 + R[i, 0, 2] * t21,
            R[i, 0, 0] * t02 + R[i, 0, 1] * t12 + R[i, 0, 2] * t22,
            R[i, 1, 0] * t01 + R[i, 1, 1] * t11 + R[i, 1, 2] * t21,
            R[i, 1, 0] * t02 + R[i, 1, 1] * t12 + R[i, 1, 2] * t22,
            R[i, 2, 0] * t02 + R[i, 2, 1] * t12 + R[i, 2, 2] * t22)


@inline
def articulated_to_parent_add(R, p, i, IA, U, dinv, t):
    """IA[t] += X_i^T Ia X_i, Ia = IA_i - U_i U_i^T / D_i (Featherstone Table 7.1).

    With Ia = [[A, B], [B^T, C]] (angular block first) in body coordinates and
    X_i = [[R^T, 0], [-R^T (p x), R^T]], the rotated blocks A' = R A R^T,
    B' = R B R^T, C' = R C R^T are then shifted by p:
    X_i^T Ia X_i = [[A' + (p x) B'^T - B'' (p x), B''], [B''^T, C']] with
    B'' = B' + (p x) C'. Structured, about a third of the arithmetic of the
    dense 6x6 products (Featherstone sec. 2.8 on the cost of spatial
    arithmetic)."""
    u0, u1, u2, u3, u4, u5 = U[i, 0], U[i, 1], U[i, 2], U[i, 3], U[i, 4], U[i, 5]
    w0, w1, w2, w3, w4, w5 = u0 * dinv, u1 * dinv, u2 * dinv, u3 * dinv, u4 * dinv, u5 * dinv
    a00, a01, a02, a11, a12, a22 = rotate_symmetric(
        R, i, IA[i, 0, 0] - u0 * w0, IA[i, 0, 1] - u0 * w1, IA[i, 0, 2] - u0 * w2,
        IA[i, 1, 1] - u1 * w1, IA[i, 1, 2] - u1 * w2, IA[i, 2, 2] - u2 * w2)
    c00, c01, c02, c11, c12, c22 = rotate_symmetric(
        R, i, IA[i, 3, 3] - u3 * w3, IA[i, 3, 4] - u3 * w4, IA[i, 3, 5] - u3 * w5,
        IA[i, 4, 4] - u4 * w4, IA[i, 4, 5] - u4 * w5, IA[i, 5, 5] - u5 * w5)
    b00, b01, b02 = IA[i, 0, 3] - u0 * w3, IA[i, 0, 4] - u0 * w4, IA[i, 0, 5] - u0 * w5
    b10, b11, b12 = IA[i, 1, 3] - u1 * w3, IA[i, 1, 4] - u1 * w4, IA[i, 1, 5] - u1 * w5
    b20, b21, b22 = IA[i, 2, 3] - u2 * w3, IA[i, 2, 4] - u2 * w4, IA[i, 2, 5] - u2 * w5
    r00, r01, r02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
    r10, r11, r12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
    r20, r21, r22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
    e00, e01, e02 = r00 * b00 + r01 * b10 + r02 * b20, r00 * b01 + r01 * b11 + r02 * b21, r00 * b02 + r01 * b12 + r02 * b22
    e10, e11, e12 = r10 * b00 + r11 * b10 + r12 * b20, r10 * b01 + r11 * b11 + r12 * b21, r10 * b02 + r11 * b12 + r12 * b22
    e20, e21, e22 = r20 * b00 + r21 * b10 + r22 * b20, r20 * b01 + r21 * b11 + r22 * b21, r20 * b02 + r21 * b12 + r22 * b22
    # B' = (R B) R^T
    g00, g01, g02 = e00 * r00 + e01 * r01 + e02 * r02, e00 * r10 + e01 * r11 + e02 * r12, e00 * r20 + e01 * r21 + e02 * r22
    g10, g11, g12 = e10 * r00 + e11 * r01 + e12 * r02, e10 * r10 + e11 * r11 + e12 * r12, e10 * r20 + e11 * r21 + e12 * r22
    g20, g21, g22 = e20 * r00 + e21 * r01 + e22 * r02, e20 * r10 + e21 * r11 + e22 * r12, e20 * r20 + e21 * r21 + e22 * r22
    px, py, pz = p[i, 0], p[i, 1], p[i, 2]
    # B'' = B' + (p x) C': column j gains p x (column j of C')
    h00, h10, h20 = g00 + py * c02 - pz * c01, g10 + pz * c00 - px * c02, g20 + px * c01 - py * c00
    h01, h11, h21 = g01 + py * c12 - pz * c11, g11 + pz * c01 - px * c12, g21 + px * c11 - py * c01
    h02, h12, h22 = g02 + py * c22 - pz * c12, g12 + pz * c02 - px * c22, g22 + px * c12 - py * c02
    # k_j = p x (row j of B'), l_r = p x (row r of B''): A''[r, j] = A'[r, j] + k_j[r] + l_r[j]
    k00, k01, k02 = py * g02 - pz * g01, pz * g00 - px * g02, px * g01 - py * g00
    k10, k11, k12 = py * g12 - pz * g11, pz * g10 - px * g12, px * g11 - py * g10
    k20, k21, k22 = py * g22 - pz * g21, pz * g20 - px * g22, px * g21 - py * g20
    l00, l01, l02 = py * h02 - pz * h01, pz * h00 - px * h02, px * h01 - py * h00
    l10, l11, l12 = py * h12 - pz * h11, pz * h10 - px * h12, px * h11 - py * h10
    l20, l21, l22 = py * h22 - pz * h21, pz * h20 - px * h22, px * h21 - py * h20
    s00, s11, s22 = a00 + k00 + l00, a11 + k11 + l11, a22 + k22 + l22
    s01, s02, s12 = a01 + k10 + l01, a02 + k20 + l02, a12 + k21 + l12
    IA[t, 0, 0] += s00
    IA[t, 0, 1] += s01
    IA[t, 0, 2] += s02
    IA[t, 1, 0] += s01
    IA[t, 1, 1] += s11
    IA[t, 1, 2] += s12
    IA[t, 2, 0] += s02
    IA[t, 2, 1] += s12
    IA[t, 2, 2] += s22
    IA[t, 0, 3] += h00
    IA[t, 0, 4] += h01
    IA[t, 0, 5] += h02
    IA[t, 1, 3] += h10
    IA[t, 1, 4] += h11
    IA[t, 1, 5] += h12
    IA[t, 2, 3] += h20
    IA[t, 2, 4] += h21
    IA[t, 2, 5] += h22
    IA[t, 3, 0] += h00
    IA[t, 4, 0] += h01
    IA[t, 5, 0] += h02
    IA[t, 3, 1] += h10
    IA[t, 4, 1] += h11
    IA[t, 5, 1] += h12
    IA[t, 3, 2] += h20
    IA[t, 4, 2] += h21
    IA[t, 5, 2] += h22
    IA[t, 3, 3] += c00
    IA[t, 3, 4] += c01
    IA[t, 3, 5] += c02
    IA[t, 4, 3] += c01
    IA[t, 4, 4] += c11
    IA[t, 4, 5] += c12
    IA[t, 5, 3] += c02
    IA[t, 5, 4] += c12
    IA[t, 5, 5] += c22


@inline
def _aba(D, q, qd, tau, fext, qdd, w):
    """One state (Featherstone Table 7.1); w: the Work arrays (nb bodies +
    the base row). The base rows of pA and c hold pa and I v as scratch."""
    _aba_velocities(D, q, qd, fext, w)
    _aba_inertias(D, tau, w, 0)
    set_base_acceleration(D, w.a)
    _aba_accelerations(D, qdd, w, 0)


@inline
def _aba_velocities(D, q, qd, fext, w):
    """Pass 1, outward: v_i, c_i, IA_i = I_i and pA_i of every body."""
    R, p, v, c, IA, pA = w.R, w.p, w.v, w.c, w.IA, w.pA
    n = nbodies(D)
    v[n, :] = 0.0
    for i in range(n):
        par = parent_row(D, i)
        qdi = joint_coordinate(D, i, qd)
        jcalc(D, i, joint_position(D, i, q), R, p)
        X_motion(R, p, i, v, par, v)               # v_i = X_i v_p + S_i qd_i
        S_add(D, i, qdi, v)
        c[i, :] = 0.0                                     # c_i = v_i x S_i qd_i
        crm_S_add(D, i, v, qdi, c)
        I_matrix(D, i, MASS, IA, i)                 # IA_i = I_i
        I_times(D, i, MASS, v, i, c, n)             # pA_i = v_i x* I_i v_i - f_ext_i
        pA[i, :] = 0.0
        crf_add(v, i, c, n, pA, i)
        if fext.shape[0]:
            for r in range(6):
                pA[i, r] -= fext[i, r]


@inline
def _aba_inertias(D, tau, w, first):
    """Pass 2, inward over the bodies from ``first`` on: articulated inertias
    and bias forces, each added to its parent's."""
    R, p, c, IA, pA, U, d, u = w.R, w.p, w.c, w.IA, w.pA, w.U, w.d, w.u
    n = nbodies(D)
    for i in range(n - 1, first - 1, -1):
        k = 3 if D[i, JTYPE] == PRISMATIC else 0
        ax, ay, az = D[i, AXIS], D[i, AXIS + 1], D[i, AXIS + 2]
        for r in range(6):                                # U_i = IA_i S_i
            U[i, r] = IA[i, r, k] * ax + IA[i, r, k + 1] * ay + IA[i, r, k + 2] * az
        d[i] = ST_force(D, i, U, i) + D[i, ARMATURE]   # D_i = S_i^T U_i + I_a (the rotor's inertia)
        u[i] = tau[i] - ST_force(D, i, pA, i)          # u_i = tau_i - S_i^T pA_i
        if D[i, PARENT] < 0:
            continue
        dinv = 1.0 / d[i]
        Uc = 0.0
        for r in range(6):
            Uc += U[i, r] * c[i, r]
        g = (u[i] - Uc) * dinv
        for r in range(6):                                # pa = pA_i + Ia c_i + U_i u_i / D_i, Ia c = IA c - U (U^T c) / D
            s = pA[i, r] + U[i, r] * g
            for kk in range(6):
                s += IA[i, r, kk] * c[i, kk]
            pA[n, r] = s
        par = parent_row(D, i)
        articulated_to_parent_add(R, p, i, IA, U, dinv, par)     # IA_p += X_i^T Ia X_i
        XT_force_add(R, p, i, pA, n, pA, par)             # pA_p += X_i^T pa


@inline
def _aba_accelerations(D, qdd, w, first):
    """Pass 3, outward over the bodies from ``first`` on (their parents'
    accelerations known): a_i and qdd_i."""
    R, p, c, U, d, u, a = w.R, w.p, w.c, w.U, w.d, w.u, w.a
    for i in range(first, nbodies(D)):
        X_motion(R, p, i, a, parent_row(D, i), a)  # a' = X_i a_p + c_i
        for r in range(6):
            a[i, r] += c[i, r]
        s = 0.0
        for r in range(6):
            s += U[i, r] * a[i, r]
        qdd[i] = (u[i] - s) / d[i]                        # qdd_i = (u_i - U_i^T a') / D_i
        S_add(D, i, qdd[i], a)                 # a_i = a' + S_i qdd_i


@jit
def _cholesky_solve(M, x):
    """Solve M y = x in place (x <- y) for symmetric positive definite M,
    overwriting M's lower triangle with its Cholesky factor. False if M is
    not positive definite."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        if not s > 0.0:
            return False
        M[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s / M[j, j]
    for i in range(n):                                    # L y = x
        s = x[i]
        for k in range(i):
            s -= M[i, k] * x[k]
        x[i] = s / M[i, i]
    for i in range(n - 1, -1, -1):                        # L^T z = y
        s = x[i]
        for k in range(i + 1, n):
            s -= M[k, i] * x[k]
        x[i] = s / M[i, i]
    return True


@inline
def _fd_crb(D, q, qd, tau, fext, qdd, w):
    """qdd = M^-1 (tau - h): CRBA, RNEA with qdd = 0, Cholesky. False if singular."""
    _crba(D, q, w.M, w.R, w.p, w.IC, 0)
    w.zero[:] = 0.0
    _rnea(D, q, qd, w.zero, fext, qdd, w.R, w.p, w.v, w.a, w.f)      # qdd <- h (with f_ext)
    for k in range(qdd.shape[0]):
        qdd[k] = tau[k] - qdd[k]
    return _cholesky_solve(w.M, qdd)


@jit
def forward_states(D, Q, QD, TAU, QDD, W):
    """QDD[b] for every row of one chunk by the ABA, no external forces.
    Its own loop: sharing one with the branches below costs a third more
    time per state (numba 0.68, bundled Panda)."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    none = np.empty((0, 6))
    for b in range(Q.shape[0]):
        _aba(D, Q[b], QD[b], TAU[b], none, QDD[b], w)


@jit
def forward_states_fext(D, Q, QD, TAU, FEXT, QDD, W):
    """As :func:`forward_states`, with external forces FEXT (B, nb, 6)."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    for b in range(Q.shape[0]):
        _aba(D, Q[b], QD[b], TAU[b], FEXT[b], QDD[b], w)


@jit
def forward_states_crb(D, Q, QD, TAU, FEXT, QDD, W):
    """QDD[b] by the CRBA route, for coupled (mimic) trees; NaN where M is singular."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    none = np.empty((0, 6))
    for b in range(Q.shape[0]):
        fext = FEXT[b] if FEXT.shape[0] > 0 else none
        if not _fd_crb(D, Q[b], QD[b], TAU[b], fext, QDD[b], w):
            QDD[b, :] = np.nan


@jit
def aba_states(D, Q, QD, TAU, FEXT, mimic, QDD, W):
    """:func:`aba_batch` on the calling thread, its arguments and a work
    buffer: a batch of one state without the thread pool."""
    if mimic:
        forward_states_crb(D, Q, QD, TAU, FEXT, QDD, W)
    elif FEXT.shape[0] > 0:
        forward_states_fext(D, Q, QD, TAU, FEXT, QDD, W)
    else:
        forward_states(D, Q, QD, TAU, QDD, W)


@parallel
def aba_batch(D, Q, QD, TAU, FEXT, mimic, QDD):
    """(B, nq) forward dynamics on all threads; FEXT (B, nb, 6), or (0, 0, 6) for none."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        if mimic:
            forward_states_crb(D, Q[lo:hi], QD[lo:hi], TAU[lo:hi], FEXT[lo:hi], QDD[lo:hi], np.empty(size))
        elif FEXT.shape[0] > 0:
            forward_states_fext(D, Q[lo:hi], QD[lo:hi], TAU[lo:hi], FEXT[lo:hi], QDD[lo:hi], np.empty(size))
        else:
            forward_states(D, Q[lo:hi], QD[lo:hi], TAU[lo:hi], QDD[lo:hi], np.empty(size))
    return all_finite(QDD) and all_finite(Q) and all_finite(QD) and all_finite(TAU)


@entry(TABLE, V_RO, V_RO, V_RO, V, V)
def aba_one(D, q, qd, tau, qdd, W):
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau) or bad_length(D, qdd):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    _aba(D, q, qd, tau, np.empty((0, 6)), qdd, work(W, nbodies(D) + 1, q.shape[0]))
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


@entry(TABLE, V_RO, V_RO, V_RO, V, V)
def fd_crb_one(D, q, qd, tau, qdd, W):
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau) or bad_length(D, qdd):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    if not _fd_crb(D, q, qd, tau, np.empty((0, 6)), qdd, work(W, nbodies(D) + 1, q.shape[0])):
        return 2
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


@entry(TABLE, V_RO, V_RO, V_RO, MAT, V, V)
def aba_fext_one(D, q, qd, tau, fext, qdd, W):
    """Single-state entry point with external forces fext (nb, 6), body-frame
    [n; f] wrenches (:func:`.wrench.body_wrenches`)."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau) or bad_length(D, qdd) \
            or bad_wrenches(D, fext):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    _aba(D, q, qd, tau, fext, qdd, work(W, nbodies(D) + 1, q.shape[0]))
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


@entry(TABLE, V_RO, V_RO, V_RO, MAT, V, V)
def fd_crb_fext_one(D, q, qd, tau, fext, qdd, W):
    """:func:`fd_crb_one` with external forces fext (nb, 6), as :func:`aba_fext_one`."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau) or bad_length(D, qdd) \
            or bad_wrenches(D, fext):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    if not _fd_crb(D, q, qd, tau, fext, qdd, work(W, nbodies(D) + 1, q.shape[0])):
        return 2
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


# --- on a floating or planar base (the root's compiled variants; robot_dynamics.algorithms.root_kernels) ---
# Batches return False when a state's quaternion is not unit or a value is
# not finite (the Python path then says which).
@entry(TABLE, V_RO, V_RO, V_RO, V, V, data_table=False)
def aba_root_one(D, q, qd, tau, qdd, W):
    nv = int(D[D.shape[0] - 1, NQ])
    if bad_sizes(D, q) or qd.shape[0] != nv or tau.shape[0] != nv or qdd.shape[0] != nv:
        return 1
    W = work_buffer(D, W, nv)
    if W.shape[0] == 0:
        return 1
    if not _aba_root(D, q, qd, tau, qdd, W):
        return 2
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


@inline
def _aba_root(D, q, qd, tau, qdd, W):
    return _aba_root_w(D, q, qd, tau, qdd, work(W, nbodies(D) + 1, qd.shape[0]), np.empty(6))


@inline
def _aba_root_w(D, q, qd, tau, qdd, w, s):
    """With the work arrays w (the ABA leaves w.zero alone: it holds the
    kernels' coordinates) and s (6,) scratch: :func:`_aba_root_joint`, then
    the root's share of gravity g_root added."""
    nv = qd.shape[0]
    nr = root_sizes(D)[1]
    qk = w.zero
    if not root_state(D, q, qd, qk, s, False):
        return False
    if nbodies(D) != nv:            # mimic joints: the Python path (CRBA + Cholesky, aba.FD_CRB)
        return False
    if not _aba_root_joint(D, qk, qd, tau, qdd, w, nr):
        return False
    for k in range(nr):
        qdd[k] += s[k]
    return True


@inline
def _aba_root_joint(D, qk, qd, tau, qdd, w, nr):
    """The ABA with the root as one multi-DOF joint (Featherstone, *Rigid
    Body Dynamics Algorithms*, ch. 9 for the 6-DOF joint; the Handbook's
    joint models, sec. 2.3.4, 3.4.4, and its ABA, sec. 3.5.2), gravity-free
    in the root's plane. The base body b = nr - 1 (the last of the root
    chain, whose transforms are the identity) moves with a_b = a_0 + S qdd_r,
    S the root's nr columns of the identity (no velocity-product term: S is
    constant and the world does not move), so the inward pass stops at the
    joints and ``S^T IA_b S qdd_r = tau_r - S^T (pA_b + IA_b a_0)`` gives
    the root's accelerations (an nr x nr Cholesky solve). False if that
    matrix is not positive definite (the Python path says why)."""
    b, n = nr - 1, nbodies(D)
    _aba_velocities(D, qk, qd, NO_WRENCH, w)
    w.c[b, :] = 0.0
    _aba_inertias(D, tau, w, nr)
    IA, pA, a = w.IA, w.pA, w.a
    set_base_acceleration(D, a)
    for k in range(nr):                           # IA[n], pA[n] (scratch): S^T IA_b S and the right side
        ck = root_component(nr, k)
        r = tau[k] - pA[b, ck]
        for c in range(6):
            r -= IA[b, ck, c] * a[n, c]
        pA[n, k] = r
        for j in range(nr):
            IA[n, k, j] = IA[b, ck, root_component(nr, j)]
    if not cholesky_solve(IA, pA, n, nr):
        return False
    for c in range(6):
        a[b, c] = a[n, c]
    for k in range(nr):
        a[b, root_component(nr, k)] += pA[n, k]
        qdd[k] = pA[n, k]
    _aba_accelerations(D, qdd, w, nr)
    return True


@jit
def aba_root_states(D, Q, QD, TAU, QDD, W):
    ok = True
    w, s = work(W, nbodies(D) + 1, QD.shape[1]), np.empty(6)
    for b in range(Q.shape[0]):
        ok &= _aba_root_w(D, Q[b], QD[b], TAU[b], QDD[b], w, s)
    return ok


@parallel
def aba_root_batch(D, Q, QD, TAU, QDD):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), QD.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        ok[k] = aba_root_states(D, Q[lo:hi], QD[lo:hi], TAU[lo:hi], QDD[lo:hi], np.empty(size))
    return ok.all() and all_finite(QDD) and all_finite(Q) and all_finite(QD) and all_finite(TAU)


def _singular(model):
    raise SingularityError("forward dynamics is singular: a moving joint of %r carries no mass or inertia "
                           "(M(q) is not invertible)" % model.name)


def _aba_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    """The Python path on a floating or planar base (:mod:`.floating`): the
    chain's accelerations plus the root's shift."""
    qk, R, p, (v, t) = floating.states(model, x[0], qd=x[1], tau=x[2])
    qdd = chain(ABA, model, (qk, v, t), f_ext, data, out)
    qdd += floating.root_shift(model, R, v)
    return qdd


# The batch kernel's arguments after the states: FEXT, then mimic (CRBA + Cholesky).
FD_CRB = Algorithm(fd_crb_one, aba_batch, ("q", "qd", "tau"), extra=(_NO_FEXT, True), on_error=_singular,
                   fext=Algorithm(fd_crb_fext_one, aba_batch, ("q", "qd", "tau"), extra=(True,), serial=aba_states))
ABA = Algorithm(aba_one, aba_batch, ("q", "qd", "tau"), extra=(_NO_FEXT, False), root_one=aba_root_one,
                root_batch=aba_root_batch, on_root=_aba_on_root, mimic=FD_CRB, on_error=_singular,
                fext=Algorithm(aba_fext_one, aba_batch, ("q", "qd", "tau"), extra=(False,), serial=aba_states))


@public(ABA)
def aba(model, q, qd, tau, f_ext=None, *, data=None, out=None):
    """Forward dynamics: the joint accelerations that ``tau`` produces at ``(q, qd)``.

    ``qdd = M(q)^-1 (tau - h(q, qd) + sum_k J_k^T f_ext_k)``, so
    ``aba(q, qd, rnea(q, qd, qdd)) == qdd``.

    Args:
        q, qd: (..., nq) joint positions and velocities.
        tau: (..., nq) applied joint torques [N m] / forces [N].
        f_ext: optional external wrenches on links, as in :func:`rnea`.
        data, out: as in :func:`rnea`.

    Returns:
        (..., nq) joint accelerations [rad/s^2 or m/s^2].

    Raises:
        ValueError: bad shapes or non-finite values; a singular mass matrix
            (a moving joint that carries no mass) is reported as such.
    """
