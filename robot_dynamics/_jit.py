"""Compiled building blocks shared by the algorithms (numba, ``cache=True``).

Spatial vectors inside the kernels follow Featherstone's order: motion
``[w; v]`` (angular, then linear velocity of the point at the frame origin)
and force ``[n; f]`` (moment about the frame origin, then force). The public
API converts wrenches and Jacobians to ``[linear; angular]`` at its boundary.
A body pose is ``(R, p)``: R rotates body coordinates into parent
coordinates, p is the body origin in parent coordinates.
"""
import numba as nb
import numpy as np

from .model import AXIS, POS0, PRISMATIC, QIDX, QMUL, QOFF, ROT0

jit = nb.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")


@jit
def joint_pose(reals, i, jtype, qi, R, p):
    """Pose of body i in its parent body: R = R0 Rot(axis, qi), p = p0 (+ R0 axis qi)."""
    ax, ay, az = reals[i, AXIS], reals[i, AXIS + 1], reals[i, AXIS + 2]
    if jtype == PRISMATIC:
        for r in range(3):
            for c in range(3):
                R[r, c] = reals[i, ROT0 + 3 * r + c]
            p[r] = reals[i, POS0 + r] + qi * (R[r, 0] * ax + R[r, 1] * ay + R[r, 2] * az)
        return
    s, c = np.sin(qi), np.cos(qi)
    t = 1.0 - c
    # Rodrigues: Rot = c 1 + s [a x] + (1 - c) a a^T
    r00, r01, r02 = c + t * ax * ax, t * ax * ay - s * az, t * ax * az + s * ay
    r10, r11, r12 = t * ax * ay + s * az, c + t * ay * ay, t * ay * az - s * ax
    r20, r21, r22 = t * ax * az - s * ay, t * ay * az + s * ax, c + t * az * az
    for r in range(3):
        a0, a1, a2 = reals[i, ROT0 + 3 * r], reals[i, ROT0 + 3 * r + 1], reals[i, ROT0 + 3 * r + 2]
        R[r, 0] = a0 * r00 + a1 * r10 + a2 * r20
        R[r, 1] = a0 * r01 + a1 * r11 + a2 * r21
        R[r, 2] = a0 * r02 + a1 * r12 + a2 * r22
        p[r] = reals[i, POS0 + r]


@jit
def joint_coordinate(ints, reals, i, x):
    """Body i's share of a state vector x (nq,): multiplier * x[source]."""
    return reals[i, QMUL] * x[ints[i, QIDX]]


@jit
def joint_position(ints, reals, i, q):
    """Body i's joint position: multiplier * q[source] + offset."""
    return reals[i, QMUL] * q[ints[i, QIDX]] + reals[i, QOFF]


@jit
def motion_to_child(R, p, m, out):
    """out = X m: motion vector from parent to child coordinates,
    w' = R^T w, v' = R^T (v + w x p)."""
    w0, w1, w2 = m[0], m[1], m[2]
    v0 = m[3] + w1 * p[2] - w2 * p[1]
    v1 = m[4] + w2 * p[0] - w0 * p[2]
    v2 = m[5] + w0 * p[1] - w1 * p[0]
    for k in range(3):
        out[k] = R[0, k] * w0 + R[1, k] * w1 + R[2, k] * w2
        out[3 + k] = R[0, k] * v0 + R[1, k] * v1 + R[2, k] * v2


@jit
def force_to_parent_add(R, p, f, out):
    """out += X^T f: force from child to parent coordinates,
    f' = R f, n' = R n + p x f'."""
    fx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    fy = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    fz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    for k in range(3):
        out[k] += R[k, 0] * f[0] + R[k, 1] * f[1] + R[k, 2] * f[2]
    out[0] += p[1] * fz - p[2] * fy
    out[1] += p[2] * fx - p[0] * fz
    out[2] += p[0] * fy - p[1] * fx
    out[3] += fx
    out[4] += fy
    out[5] += fz


@jit
def inertia_times(P, m, out):
    """out = I m for a spatial inertia given by its 13 parameters
    P = (mass, h = m c (3), I_O row-major (9)): n = I_O w + h x v, f = m v - h x w."""
    mass, h0, h1, h2 = P[0], P[1], P[2], P[3]
    w0, w1, w2, v0, v1, v2 = m[0], m[1], m[2], m[3], m[4], m[5]
    for k in range(3):
        out[k] = P[4 + 3 * k] * w0 + P[5 + 3 * k] * w1 + P[6 + 3 * k] * w2
    out[0] += h1 * v2 - h2 * v1
    out[1] += h2 * v0 - h0 * v2
    out[2] += h0 * v1 - h1 * v0
    out[3] = mass * v0 - (h1 * w2 - h2 * w1)
    out[4] = mass * v1 - (h2 * w0 - h0 * w2)
    out[5] = mass * v2 - (h0 * w1 - h1 * w0)


@jit
def inertia_to_parent_add(R, p, P, out, tmp):
    """out += the 13 inertia parameters P of a child body expressed in its
    parent's frame (body at pose R, p): h' = R h + m p,
    I' = R I R^T + m((p.p) 1 - p p^T) + 2 (p.hh) 1 - p hh^T - hh p^T, hh = R h.
    tmp: scratch of 12 values."""
    m = P[0]
    hh = tmp[0:3]
    for r in range(3):
        hh[r] = R[r, 0] * P[1] + R[r, 1] * P[2] + R[r, 2] * P[3]
    RI = tmp[3:12].reshape((3, 3))
    for r in range(3):
        for c in range(3):
            RI[r, c] = R[r, 0] * P[4 + c] + R[r, 1] * P[7 + c] + R[r, 2] * P[10 + c]
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    ph = p[0] * hh[0] + p[1] * hh[1] + p[2] * hh[2]
    out[0] += m
    for r in range(3):
        out[1 + r] += hh[r] + m * p[r]
        for c in range(3):
            val = RI[r, 0] * R[c, 0] + RI[r, 1] * R[c, 1] + RI[r, 2] * R[c, 2]
            val -= m * p[r] * p[c] + p[r] * hh[c] + hh[r] * p[c]
            if r == c:
                val += m * pp + 2.0 * ph
            out[4 + 3 * r + c] += val


@jit
def inertia_matrix(P, out):
    """out (6, 6) = [[I_O, h x], [-(h x), m 1]] from the 13 inertia parameters
    P = (m, h, I_O) (Featherstone eq. 2.63 with h = m c)."""
    out[:, :] = 0.0
    for r in range(3):
        for c in range(3):
            out[r, c] = P[4 + 3 * r + c]
        out[3 + r, 3 + r] = P[0]
    h0, h1, h2 = P[1], P[2], P[3]
    out[0, 4], out[0, 5], out[1, 3], out[1, 5], out[2, 3], out[2, 4] = -h2, h1, h2, -h0, -h1, h0
    out[4, 0], out[5, 0], out[3, 1], out[5, 1], out[3, 2], out[4, 2] = -h2, h1, h2, -h0, -h1, h0


@jit
def world_poses(ints, reals, q, R, p, Rw, pw):
    """Body poses in the parent body (R, p) and in the base frame (Rw, pw)."""
    for i in range(ints.shape[0]):
        joint_pose(reals, i, ints[i, 1], joint_position(ints, reals, i, q), R[i], p[i])
        par = ints[i, 0]
        if par < 0:
            Rw[i, :, :] = R[i]
            pw[i, :] = p[i]
            continue
        for r in range(3):
            pw[i, r] = pw[par, r]
            for c in range(3):
                Rw[i, r, c] = Rw[par, r, 0] * R[i, 0, c] + Rw[par, r, 1] * R[i, 1, c] + Rw[par, r, 2] * R[i, 2, c]
                pw[i, r] += Rw[par, r, c] * p[i, c]


@jit
def cross_force_add(v, f, out):
    """out += v x* f = (w x n + v x f, w x f)."""
    w0, w1, w2, v0, v1, v2 = v[0], v[1], v[2], v[3], v[4], v[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] += w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[1] += w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[2] += w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[3] += w1 * f2 - w2 * f1
    out[4] += w2 * f0 - w0 * f2
    out[5] += w0 * f1 - w1 * f0


@jit
def all_finite(x):
    """True when every entry of the array is finite."""
    for v in x.ravel():
        if not np.isfinite(v):
            return False
    return True
