"""Compiled building blocks of the algorithms (numba, cached), named after
Featherstone's quantities (*Rigid Body Dynamics Algorithms*, ch. 2-5):

- ``jcalc``: the joint transform of body i at its joint position;
- ``X_motion`` (``X_i m``), ``XT_force_add`` (``X_i^T f``),
  ``XT_I_X_add`` (``X_i^T I X_i``): moving vectors and inertias between a
  body and its parent;
- ``I_times`` (``I m``), ``I_matrix`` (the 6x6 ``I``): spatial inertia;
- ``S_add`` (``S qd``), ``ST_force`` (``S^T f``): the joint's motion subspace;
- ``crm_S_add`` (``v x S qd``), ``crf_add`` (``v x* f``): spatial cross products.

Spatial vectors inside the kernels follow Featherstone's order: motion
``[w; v]`` (angular velocity, then linear velocity of the point at the frame
origin) and force ``[n; f]`` (moment about the frame origin, then force). The
public API converts wrenches and Jacobians to ``[linear; angular]`` at its
boundary. A body pose is ``(R, p)``: R rotates body coordinates into parent
coordinates, p is the body origin in parent coordinates.

Work arrays have one row per body plus a last row for the base (index nb),
so a parent index of -1 maps to the base row. They are carved out of one
flat buffer (:func:`work`, owned by :class:`robot_dynamics.Data`), so a
compiled call takes one work argument and allocates nothing. Helpers take
(array, row) pairs and index directly: no per-body array views on the hot path.
"""
from collections import namedtuple

import numba as nb
import numpy as np

from ..model.data import Work, bad_work, work, work_buffer, work_crba, work_rnea, work_size  # noqa: F401  (re-exported for the algorithms)
from ..model.packed import AXIS, GRAVITY, JTYPE, NQ, PARENT, POS0, PRISMATIC, QIDX, QMUL, QOFF, ROT0

jit = nb.njit(cache=True, nogil=True, error_model="numpy")
inline = nb.njit(cache=True, nogil=True, error_model="numpy", inline="always")
parallel = nb.njit(cache=True, nogil=True, error_model="numpy", parallel=True)

# Explicit signatures of the single-state entry points: compiled once at
# import (or loaded from the cache), and anything else (lists, float32,
# strided or 2-D arrays) raises TypeError at once instead of compiling.
V = nb.types.Array(nb.float64, 1, "C")
V_RO = nb.types.Array(nb.float64, 1, "C", readonly=True)
MAT = nb.types.Array(nb.float64, 2, "C")
TABLE = nb.types.Array(nb.float64, 2, "C", readonly=True)     # Model.packed

@inline
def nbodies(D):
    return D.shape[0] - 1


@inline
def parent_row(D, i):
    """Row of body i's parent in the work arrays (the base row nb for -1)."""
    par = int(D[i, PARENT])
    return par if par >= 0 else D.shape[0] - 1


@inline
def bad_length(D, x):
    return x.shape[0] != int(D[D.shape[0] - 1, NQ])


@inline
def joint_coordinate(D, i, x):
    """Body i's share of a state vector x (nq,): multiplier * x[source]."""
    return D[i, QMUL] * x[int(D[i, QIDX])]


@inline
def joint_position(D, i, q):
    """Body i's joint position: multiplier * q[source] + offset."""
    return D[i, QMUL] * q[int(D[i, QIDX])] + D[i, QOFF]


@inline
def set_base_acceleration(D, a):
    """Base row of a: the fictitious acceleration a_0 = (0, -g) (Handbook eq. 3.39)."""
    n = D.shape[0] - 1
    a[n, 0] = a[n, 1] = a[n, 2] = 0.0
    for k in range(3):
        a[n, 3 + k] = -D[n, GRAVITY + k]


@inline
def jcalc(D, i, qi, R, p):
    """Pose of body i in its parent body: R = R0 Rot(axis, qi), p = p0 (+ R0 axis qi).

    A revolute axis along +-x, +-y or +-z (as in most URDFs) takes a short
    path: two columns of R0 turned by the angle, about a fifth of the
    arithmetic of the general Rodrigues product."""
    ax, ay, az = D[i, AXIS], D[i, AXIS + 1], D[i, AXIS + 2]
    if D[i, JTYPE] == PRISMATIC:
        for r in range(3):
            b0, b1, b2 = D[i, ROT0 + 3 * r], D[i, ROT0 + 3 * r + 1], D[i, ROT0 + 3 * r + 2]
            R[i, r, 0], R[i, r, 1], R[i, r, 2] = b0, b1, b2
            p[i, r] = D[i, POS0 + r] + qi * (b0 * ax + b1 * ay + b2 * az)
        return
    s, c = np.sin(qi), np.cos(qi)
    if ax == 0.0 and ay == 0.0:                      # axis +-z (most URDF joints): R = R0 Rot(z, az qi)
        s *= az
        for r in range(3):
            b0, b1 = D[i, ROT0 + 3 * r], D[i, ROT0 + 3 * r + 1]
            R[i, r, 0], R[i, r, 1], R[i, r, 2] = c * b0 + s * b1, c * b1 - s * b0, D[i, ROT0 + 3 * r + 2]
            p[i, r] = D[i, POS0 + r]
        return
    if ay == 0.0 and az == 0.0:                      # axis +-x
        s *= ax
        for r in range(3):
            b1, b2 = D[i, ROT0 + 3 * r + 1], D[i, ROT0 + 3 * r + 2]
            R[i, r, 0], R[i, r, 1], R[i, r, 2] = D[i, ROT0 + 3 * r], c * b1 + s * b2, c * b2 - s * b1
            p[i, r] = D[i, POS0 + r]
        return
    if ax == 0.0 and az == 0.0:                      # axis +-y
        s *= ay
        for r in range(3):
            b0, b2 = D[i, ROT0 + 3 * r], D[i, ROT0 + 3 * r + 2]
            R[i, r, 0], R[i, r, 1], R[i, r, 2] = c * b0 - s * b2, D[i, ROT0 + 3 * r + 1], c * b2 + s * b0
            p[i, r] = D[i, POS0 + r]
        return
    t = 1.0 - c
    # Rodrigues: Rot = c 1 + s [a x] + (1 - c) a a^T
    r00, r01, r02 = c + t * ax * ax, t * ax * ay - s * az, t * ax * az + s * ay
    r10, r11, r12 = t * ax * ay + s * az, c + t * ay * ay, t * ay * az - s * ax
    r20, r21, r22 = t * ax * az - s * ay, t * ay * az + s * ax, c + t * az * az
    for r in range(3):
        b0, b1, b2 = D[i, ROT0 + 3 * r], D[i, ROT0 + 3 * r + 1], D[i, ROT0 + 3 * r + 2]
        R[i, r, 0] = b0 * r00 + b1 * r10 + b2 * r20
        R[i, r, 1] = b0 * r01 + b1 * r11 + b2 * r21
        R[i, r, 2] = b0 * r02 + b1 * r12 + b2 * r22
        p[i, r] = D[i, POS0 + r]


@inline
def X_motion(R, p, i, m, s, out):
    """out[i] = X_i m[s]: motion vector from parent to child coordinates,
    w' = R^T w, v' = R^T (v + w x p)."""
    w0, w1, w2 = m[s, 0], m[s, 1], m[s, 2]
    v0 = m[s, 3] + w1 * p[i, 2] - w2 * p[i, 1]
    v1 = m[s, 4] + w2 * p[i, 0] - w0 * p[i, 2]
    v2 = m[s, 5] + w0 * p[i, 1] - w1 * p[i, 0]
    for k in range(3):
        out[i, k] = R[i, 0, k] * w0 + R[i, 1, k] * w1 + R[i, 2, k] * w2
        out[i, 3 + k] = R[i, 0, k] * v0 + R[i, 1, k] * v1 + R[i, 2, k] * v2


@inline
def XT_force_add(R, p, i, f, s, out, t):
    """out[t] += X_i^T f[s]: force from child to parent coordinates,
    f' = R f, n' = R n + p x f'."""
    fx = R[i, 0, 0] * f[s, 3] + R[i, 0, 1] * f[s, 4] + R[i, 0, 2] * f[s, 5]
    fy = R[i, 1, 0] * f[s, 3] + R[i, 1, 1] * f[s, 4] + R[i, 1, 2] * f[s, 5]
    fz = R[i, 2, 0] * f[s, 3] + R[i, 2, 1] * f[s, 4] + R[i, 2, 2] * f[s, 5]
    px, py, pz = p[i, 0], p[i, 1], p[i, 2]
    for k in range(3):
        out[t, k] += R[i, k, 0] * f[s, 0] + R[i, k, 1] * f[s, 1] + R[i, k, 2] * f[s, 2]
    out[t, 0] += py * fz - pz * fy
    out[t, 1] += pz * fx - px * fz
    out[t, 2] += px * fy - py * fx
    out[t, 3] += fx
    out[t, 4] += fy
    out[t, 5] += fz


@inline
def XT_force(R, p, i, n0, n1, n2, f0, f1, f2):
    """X_i^T f for f = (n, f) held in six numbers: the force in the parent's
    coordinates, returned as six numbers (n' = R n + p x f', f' = R f)."""
    g0 = R[i, 0, 0] * f0 + R[i, 0, 1] * f1 + R[i, 0, 2] * f2
    g1 = R[i, 1, 0] * f0 + R[i, 1, 1] * f1 + R[i, 1, 2] * f2
    g2 = R[i, 2, 0] * f0 + R[i, 2, 1] * f1 + R[i, 2, 2] * f2
    px, py, pz = p[i, 0], p[i, 1], p[i, 2]
    return (R[i, 0, 0] * n0 + R[i, 0, 1] * n1 + R[i, 0, 2] * n2 + py * g2 - pz * g1,
            R[i, 1, 0] * n0 + R[i, 1, 1] * n1 + R[i, 1, 2] * n2 + pz * g0 - px * g2,
            R[i, 2, 0] * n0 + R[i, 2, 1] * n1 + R[i, 2, 2] * n2 + px * g1 - py * g0,
            g0, g1, g2)


@inline
def I_S(D, i, P, r):
    """I S_i as six numbers (n, f), for the inertia whose 13 parameters
    (m, h, I_O) are P[r, 0:13]: revolute S = (a, 0) gives (I_O a, a x h),
    prismatic S = (0, a) gives (h x a, m a)."""
    ax, ay, az = D[i, AXIS], D[i, AXIS + 1], D[i, AXIS + 2]
    m, h0, h1, h2 = P[r, 0], P[r, 1], P[r, 2], P[r, 3]
    if D[i, JTYPE] == PRISMATIC:
        return h1 * az - h2 * ay, h2 * ax - h0 * az, h0 * ay - h1 * ax, m * ax, m * ay, m * az
    return (P[r, 4] * ax + P[r, 5] * ay + P[r, 6] * az,
            P[r, 7] * ax + P[r, 8] * ay + P[r, 9] * az,
            P[r, 10] * ax + P[r, 11] * ay + P[r, 12] * az,
            ay * h2 - az * h1, az * h0 - ax * h2, ax * h1 - ay * h0)


@inline
def ST_force6(D, i, n0, n1, n2, f0, f1, f2):
    """S_i^T f for f = (n, f) held in six numbers."""
    if D[i, JTYPE] == PRISMATIC:
        return D[i, AXIS] * f0 + D[i, AXIS + 1] * f1 + D[i, AXIS + 2] * f2
    return D[i, AXIS] * n0 + D[i, AXIS + 1] * n1 + D[i, AXIS + 2] * n2


@inline
def I_times(P, r, c0, m, s, out, t):
    """out[t] = I m[s] for the spatial inertia whose 13 parameters
    (mass, h = m c, I_O row-major) are P[r, c0:c0 + 13]:
    n = I_O w + h x v, f = m v - h x w."""
    mass, h0, h1, h2 = P[r, c0], P[r, c0 + 1], P[r, c0 + 2], P[r, c0 + 3]
    w0, w1, w2, v0, v1, v2 = m[s, 0], m[s, 1], m[s, 2], m[s, 3], m[s, 4], m[s, 5]
    for k in range(3):
        out[t, k] = P[r, c0 + 4 + 3 * k] * w0 + P[r, c0 + 5 + 3 * k] * w1 + P[r, c0 + 6 + 3 * k] * w2
    out[t, 0] += h1 * v2 - h2 * v1
    out[t, 1] += h2 * v0 - h0 * v2
    out[t, 2] += h0 * v1 - h1 * v0
    out[t, 3] = mass * v0 - (h1 * w2 - h2 * w1)
    out[t, 4] = mass * v1 - (h2 * w0 - h0 * w2)
    out[t, 5] = mass * v2 - (h0 * w1 - h1 * w0)


@inline
def crf_add(v, s, f, o, out, t):
    """out[t] += v[s] x* f[o] = (w x n + v x f, w x f)."""
    w0, w1, w2, v0, v1, v2 = v[s, 0], v[s, 1], v[s, 2], v[s, 3], v[s, 4], v[s, 5]
    n0, n1, n2, f0, f1, f2 = f[o, 0], f[o, 1], f[o, 2], f[o, 3], f[o, 4], f[o, 5]
    out[t, 0] += w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[t, 1] += w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[t, 2] += w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[t, 3] += w1 * f2 - w2 * f1
    out[t, 4] += w2 * f0 - w0 * f2
    out[t, 5] += w0 * f1 - w1 * f0


@inline
def S_add(D, i, x, out):
    """out[i] += S_i x (S = [axis; 0] revolute, [0; axis] prismatic)."""
    k = 3 if D[i, JTYPE] == PRISMATIC else 0
    out[i, k] += D[i, AXIS] * x
    out[i, k + 1] += D[i, AXIS + 1] * x
    out[i, k + 2] += D[i, AXIS + 2] * x


@inline
def ST_force(D, i, f, s):
    """S_i^T f[s]: the joint's share of a force (torque or linear force)."""
    k = 3 if D[i, JTYPE] == PRISMATIC else 0
    return D[i, AXIS] * f[s, k] + D[i, AXIS + 1] * f[s, k + 1] + D[i, AXIS + 2] * f[s, k + 2]


@inline
def crm_S_add(D, i, v, x, out):
    """out[i] += v[i] x (S_i x): the velocity-product acceleration c_i."""
    ax, ay, az = D[i, AXIS] * x, D[i, AXIS + 1] * x, D[i, AXIS + 2] * x
    w0, w1, w2 = v[i, 0], v[i, 1], v[i, 2]
    if D[i, JTYPE] == PRISMATIC:                     # v x (0, s) = (0, w x s)
        out[i, 3] += w1 * az - w2 * ay
        out[i, 4] += w2 * ax - w0 * az
        out[i, 5] += w0 * ay - w1 * ax
    else:                                            # v x (s, 0) = (w x s, v x s)
        out[i, 0] += w1 * az - w2 * ay
        out[i, 1] += w2 * ax - w0 * az
        out[i, 2] += w0 * ay - w1 * ax
        out[i, 3] += v[i, 4] * az - v[i, 5] * ay
        out[i, 4] += v[i, 5] * ax - v[i, 3] * az
        out[i, 5] += v[i, 3] * ay - v[i, 4] * ax


@inline
def add_torque(D, i, value, tau):
    """tau[source] += multiplier * value (tau = G^T tau_bodies for mimic joints)."""
    tau[int(D[i, QIDX])] += D[i, QMUL] * value


@inline
def XT_I_X_add(R, p, i, P, r, c0, out, t):
    """out[t, 0:13] += the 13 inertia parameters P[r, c0:c0 + 13] of body i
    expressed in its parent's frame (body at pose R[i], p[i]): h' = R h + m p,
    I' = R I R^T + m((p.p) 1 - p p^T) + 2 (p.hh) 1 - p hh^T - hh p^T, hh = R h."""
    m = P[r, c0]
    hh0 = R[i, 0, 0] * P[r, c0 + 1] + R[i, 0, 1] * P[r, c0 + 2] + R[i, 0, 2] * P[r, c0 + 3]
    hh1 = R[i, 1, 0] * P[r, c0 + 1] + R[i, 1, 1] * P[r, c0 + 2] + R[i, 1, 2] * P[r, c0 + 3]
    hh2 = R[i, 2, 0] * P[r, c0 + 1] + R[i, 2, 1] * P[r, c0 + 2] + R[i, 2, 2] * P[r, c0 + 3]
    px, py, pz = p[i, 0], p[i, 1], p[i, 2]
    diag = m * (px * px + py * py + pz * pz) + 2.0 * (px * hh0 + py * hh1 + pz * hh2)
    out[t, 0] += m
    out[t, 1] += hh0 + m * px
    out[t, 2] += hh1 + m * py
    out[t, 3] += hh2 + m * pz
    # (R I) rows, then (R I) R^T; I is symmetric
    i00, i01, i02 = P[r, c0 + 4], P[r, c0 + 5], P[r, c0 + 6]
    i11, i12, i22 = P[r, c0 + 8], P[r, c0 + 9], P[r, c0 + 12]
    r00, r01, r02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
    r10, r11, r12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
    r20, r21, r22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
    a00, a01, a02 = r00 * i00 + r01 * i01 + r02 * i02, r00 * i01 + r01 * i11 + r02 * i12, r00 * i02 + r01 * i12 + r02 * i22
    a10, a11, a12 = r10 * i00 + r11 * i01 + r12 * i02, r10 * i01 + r11 * i11 + r12 * i12, r10 * i02 + r11 * i12 + r12 * i22
    a20, a21, a22 = r20 * i00 + r21 * i01 + r22 * i02, r20 * i01 + r21 * i11 + r22 * i12, r20 * i02 + r21 * i12 + r22 * i22
    b00 = a00 * r00 + a01 * r01 + a02 * r02 - m * px * px - 2.0 * px * hh0 + diag
    b11 = a10 * r10 + a11 * r11 + a12 * r12 - m * py * py - 2.0 * py * hh1 + diag
    b22 = a20 * r20 + a21 * r21 + a22 * r22 - m * pz * pz - 2.0 * pz * hh2 + diag
    b01 = a00 * r10 + a01 * r11 + a02 * r12 - m * px * py - px * hh1 - hh0 * py
    b02 = a00 * r20 + a01 * r21 + a02 * r22 - m * px * pz - px * hh2 - hh0 * pz
    b12 = a10 * r20 + a11 * r21 + a12 * r22 - m * py * pz - py * hh2 - hh1 * pz
    out[t, 4] += b00
    out[t, 5] += b01
    out[t, 6] += b02
    out[t, 7] += b01
    out[t, 8] += b11
    out[t, 9] += b12
    out[t, 10] += b02
    out[t, 11] += b12
    out[t, 12] += b22


@inline
def I_matrix(P, r, c0, out, t):
    """out[t] (6, 6) = [[I_O, h x], [-(h x), m 1]] from the 13 parameters
    P[r, c0:c0 + 13] (Featherstone eq. 2.63 with h = m c)."""
    for a in range(6):
        for b in range(6):
            out[t, a, b] = 0.0
    for a in range(3):
        for b in range(3):
            out[t, a, b] = P[r, c0 + 4 + 3 * a + b]
        out[t, 3 + a, 3 + a] = P[r, c0]
    h0, h1, h2 = P[r, c0 + 1], P[r, c0 + 2], P[r, c0 + 3]
    out[t, 0, 4], out[t, 0, 5], out[t, 1, 3], out[t, 1, 5], out[t, 2, 3], out[t, 2, 4] = -h2, h1, h2, -h0, -h1, h0
    out[t, 4, 0], out[t, 5, 0], out[t, 3, 1], out[t, 5, 1], out[t, 3, 2], out[t, 4, 2] = -h2, h1, h2, -h0, -h1, h0


@jit
def world_poses(D, q, R, p, Rw, pw):
    """Body poses in the parent body (R, p) and in the base frame (Rw, pw);
    the base row of Rw, pw is the identity."""
    n = D.shape[0] - 1
    for r in range(3):
        pw[n, r] = 0.0
        for c in range(3):
            Rw[n, r, c] = 1.0 if r == c else 0.0
    for i in range(n):
        jcalc(D, i, joint_position(D, i, q), R, p)
        par = parent_row(D, i)
        for r in range(3):
            acc = pw[par, r]
            for c in range(3):
                Rw[i, r, c] = Rw[par, r, 0] * R[i, 0, c] + Rw[par, r, 1] * R[i, 1, c] + Rw[par, r, 2] * R[i, 2, c]
                acc += Rw[par, r, c] * p[i, c]
            pw[i, r] = acc


@inline
def finite1(x):
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return False
    return True


@jit
def all_finite(x):
    """True when every entry of the C-contiguous array is finite."""
    for v in x.reshape(x.size):
        if not np.isfinite(v):
            return False
    return True


@inline
def finite2(x):
    """True when every entry of the 2-D array is finite (no reshape: a
    run-time call in numba)."""
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            if not np.isfinite(x[r, c]):
                return False
    return True


@inline
def chunks(B):
    """(k, 2) [lo, hi) row ranges that split a batch of B states into at most
    64 chunks of at least 64 states, which the threads share out (each chunk
    allocates one work buffer). The count does not depend on the thread
    count: a kernel that asked numba for it could not be cached."""
    k = min(max(B // 64, 1), 64)
    out = np.empty((k, 2), dtype=np.int64)
    for i in range(k):
        out[i, 0] = (B * i) // k
        out[i, 1] = (B * (i + 1)) // k
    return out


class entry:
    """Decorator of a single-state entry point: compiled with an explicit
    signature (anything else raises TypeError at once instead of compiling
    a new specialisation), but only on its first call, so that ``import
    robot_dynamics`` does not load machine code it may never run.

    The first call replaces the module's global of that name, and the
    ``one`` (``root_one``) of every :class:`~.dispatch.Algorithm` using it, with the
    compiled function, so later calls pay no indirection.

    An entry point keeps the GIL: releasing and taking it back costs about
    40 ns a call (numba 0.68), 5 % of a gravity-torque call, and one state
    is too short a computation for another thread to gain from. Batches
    release it."""

    def __init__(self, *signature, data_table=True):
        # The model's read-only table, or the writable copy a Data keeps
        # (data_table=False: callers always pass the model's, one compile less).
        self.signatures = [nb.int64(*signature)]
        if data_table:
            self.signatures.append(nb.int64(*(MAT if s is TABLE else s for s in signature)))

    def __call__(self, fn):
        signatures, compiled = self.signatures, []

        def first_call(*args):
            if not compiled:
                compiled.append(nb.njit(signatures, cache=True, error_model="numpy")(fn))
                fn.__globals__[fn.__name__] = compiled[0]
                for user, slot in first_call.users:      # (dispatch.Algorithm, "one" or "root_one")
                    setattr(user, slot, compiled[0])
            return compiled[0](*args)

        first_call.__name__, first_call.__doc__, first_call.py_func = fn.__name__, fn.__doc__, fn
        first_call.users = []
        return first_call
