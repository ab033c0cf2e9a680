"""Centre of mass, its Jacobian and the centroidal momentum matrix.

Orin and Goswami, *Centroidal momentum matrix of a humanoid robot:
structure and properties* (IROS 2008); Orin, Goswami and Lee, *Centroidal
dynamics of a humanoid robot* (Autonomous Robots 35, 2013). The spatial
momentum of the robot about a point is ``h = A(q) v``; with every body's
inertia expressed in one frame the composite inertia of a subtree is a
plain sum, and column k of A is ``IC_j S_j`` (j the body driven by
coordinate k, IC_j its subtree's composite inertia, S_j its joint's motion
in that frame: Featherstone, *Rigid Body Dynamics Algorithms*, sec. 6.2,
in a fixed frame). The centroidal momentum matrix A_G is A moved to the
centre of mass: linear momentum ``l = m c_dot = A_lin v``, angular
momentum about the centre of mass ``k_G = A_ang,O v - c x l``; so the
centre-of-mass Jacobian is ``J_com = A_lin / m``.

Frames: the world frame for a floating or planar base (rows rotated
from the base frame, the composites computed in the base frame where the
kernels work), the base frame for a fixed base; A_G's rows are ``[l; k_G]``
(linear first, as every public spatial vector of the package).
"""
import numba as nb
import numpy as np

from .dispatch import Algorithm, run
from .kernels import all_finite, chunks, jit, nbodies, parallel, work, work_size, world_poses
from ..model import configuration as C
from ..model.packed import AXIS, INERTIA, JTYPE, MASS, MCOM, PARENT, PRISMATIC, QIDX, QMUL


@jit
def _momentum_matrix(D, q, o, R, p, Rw, pw, IC):
    """One state -> o (6 nv + 4,): A (6, nv) row-major, rows [angular about the
    origin; linear] of the spatial momentum in the kernels' root frame, then
    (m, m c) of all moving bodies."""
    nv = q.shape[0]
    n = nbodies(D)
    world_poses(D, q, R, p, Rw, pw)
    for i in range(n):                       # every body's inertia in the root frame: (m, h, I_O)
        m = D[i, MASS]
        h = np.empty(3)
        for r in range(3):
            h[r] = m * pw[i, r] + Rw[i, r, 0] * D[i, MCOM] + Rw[i, r, 1] * D[i, MCOM + 1] \
                + Rw[i, r, 2] * D[i, MCOM + 2]
        hb = np.empty(3)                     # R h_body
        for r in range(3):
            hb[r] = h[r] - m * pw[i, r]
        pp = pw[i, 0] ** 2 + pw[i, 1] ** 2 + pw[i, 2] ** 2
        ph = pw[i, 0] * hb[0] + pw[i, 1] * hb[1] + pw[i, 2] * hb[2]
        IC[i, 0] = m
        IC[i, 1:4] = h
        for r in range(3):
            for c in range(3):
                s = 0.0                      # R I_O R^T
                for k in range(3):
                    for l in range(3):
                        s += Rw[i, r, k] * D[i, INERTIA + 3 * k + l] * Rw[i, c, l]
                # parallel axis with the first moment: m (p.p 1 - p p^T) + 2 (p.Rh) 1 - Rh p^T - p Rh^T
                s += m * ((pp if r == c else 0.0) - pw[i, r] * pw[i, c])
                s += (2.0 * ph if r == c else 0.0) - hb[r] * pw[i, c] - pw[i, r] * hb[c]
                IC[i, 4 + 3 * r + c] = s
    for i in range(n - 1, -1, -1):           # composites: plain sums in one frame
        par = int(D[i, PARENT])
        if par >= 0:
            for c in range(13):
                IC[par, c] += IC[i, c]
    o[:] = 0.0
    for i in range(n):
        if D[i, PARENT] < 0:
            for c in range(4):
                o[6 * nv + c] += IC[i, c]
        a = np.empty(3)
        for r in range(3):
            a[r] = Rw[i, r, 0] * D[i, AXIS] + Rw[i, r, 1] * D[i, AXIS + 1] + Rw[i, r, 2] * D[i, AXIS + 2]
        if D[i, JTYPE] == PRISMATIC:         # S = (0; a)
            w0 = w1 = w2 = 0.0
            u0, u1, u2 = a[0], a[1], a[2]
        else:                                # S = (a; o x a)
            w0, w1, w2 = a[0], a[1], a[2]
            x, y, z = pw[i, 0], pw[i, 1], pw[i, 2]          # the joint's origin
            u0, u1, u2 = y * a[2] - z * a[1], z * a[0] - x * a[2], x * a[1] - y * a[0]
        m, h0, h1, h2 = IC[i, 0], IC[i, 1], IC[i, 2], IC[i, 3]
        k, s = int(D[i, QIDX]), D[i, QMUL]
        for r in range(3):                   # angular: I_O w + h x u
            o[r * nv + k] += s * (IC[i, 4 + 3 * r] * w0 + IC[i, 5 + 3 * r] * w1 + IC[i, 6 + 3 * r] * w2)
        o[k] += s * (h1 * u2 - h2 * u1)
        o[nv + k] += s * (h2 * u0 - h0 * u2)
        o[2 * nv + k] += s * (h0 * u1 - h1 * u0)
        o[3 * nv + k] += s * (m * u0 - (h1 * w2 - h2 * w1))   # linear: m u - h x w
        o[4 * nv + k] += s * (m * u1 - (h2 * w0 - h0 * w2))
        o[5 * nv + k] += s * (m * u2 - (h0 * w1 - h1 * w0))


@jit
def momentum_states(D, Q, OUT, W):
    w = work(W, nbodies(D) + 1, Q.shape[1])
    IC = np.empty((nbodies(D) + 1, 13))
    for b in range(Q.shape[0]):
        _momentum_matrix(D, Q[b], OUT[b], w.R, w.p, w.Rw, w.pw, IC)


@parallel
def momentum_batch(D, Q, OUT):
    """Q (B, nv) -> OUT (B, 6 * nv + 4): A (6, nv) then (m, m c) per state, on all threads."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        momentum_states(D, Q[lo:hi], OUT[lo:hi], np.empty(size))
    return all_finite(OUT) and all_finite(Q)


MOMENTUM = Algorithm(None, momentum_batch, ("q",), serial=momentum_states)


def composite_inertia(model, q):
    """(A_G (..., 6, nv) rows [l; k_G], c (..., 3), m) in the world (fixed base: base) frame."""
    qk, R, p = C.kernel_positions(model, q)
    nv = model.nv
    out = run(MOMENTUM, model, (qk,), tail=(6 * nv + 4,))
    A = out[..., :6 * nv].reshape(out.shape[:-1] + (6, nv))
    m = out[..., 6 * nv]
    if not np.all(m > 0):
        from ..errors import InputError
        raise InputError("the moving bodies of %r have no mass: no centre of mass" % model.name)
    c = out[..., 6 * nv + 1:] / m[..., None]
    lin, ang = A[..., 3:, :], A[..., :3, :] - np.cross(c[..., None, :], np.swapaxes(A[..., 3:, :], -1, -2)).swapaxes(-1, -2)
    AG = np.concatenate([R @ lin, R @ ang], axis=-2)
    return AG, np.einsum("...ij,...j->...i", R, c) + p, m


def center_of_mass(model, q):
    """(..., 3) centre of mass of the moving bodies [m]: world frame for a
    floating or planar base, base frame for a fixed one."""
    return composite_inertia(model, q)[1]


def com_jacobian(model, q):
    """(..., 3, nv) Jacobian of the centre of mass: ``c_dot = J_com v``."""
    AG, _, m = composite_inertia(model, q)
    return AG[..., :3, :] / np.asarray(m)[..., None, None]


def centroidal_momentum_matrix(model, q):
    """(..., 6, nv) A_G (Orin and Goswami): ``h_G = A_G v``, rows ``[l; k_G]``,
    linear momentum [kg m/s] and angular momentum about the centre of mass
    [kg m^2/s], world-aligned (fixed base: base-aligned)."""
    return composite_inertia(model, q)[0]


def centroidal_momentum(model, q, v):
    """(..., 6) ``h_G = A_G(q) v``: linear momentum and angular momentum
    about the centre of mass (see :func:`centroidal_momentum_matrix`)."""
    v = C._velocity(model, v, "v")
    return np.einsum("...ij,...j->...i", centroidal_momentum_matrix(model, q), v)
