"""Compiled building blocks of the algorithms on a floating or planar base.

The same arithmetic as :mod:`.floating` (read it first): the root's pose
from q, the kernels' coordinates (the root chain at zero, then the joints)
and the root's acceleration shift ``b(v) + g_root(q)`` (:func:`root_state`).
Each algorithm's compiled root variant sits beside its fixed-base kernel
(``rnea_root_one`` in :mod:`.rnea`, ``crba_root_one`` in :mod:`.crba`,
``aba_root_one`` in :mod:`.aba`) and runs that kernel after
:func:`root_state`. Status as every entry point: 0 done, 1 a length
does not fit, 2 a value is not finite or the quaternion is not unit within
:data:`~robot_dynamics.model.configuration.QUATERNION_TOLERANCE` (the
Python path then says which). Forward dynamics with mimic joints and the
nonlinear effects have no entry of their own (the Python path's CRBA +
Cholesky; rnea with qdd = 0): every compiled entry costs set-up time.
"""
import numpy as np

from .kernels import inline
from ..model.configuration import QUATERNION_TOLERANCE
from ..model.packed import FLOATING_ROOT, NQ, ROOT, ROOT_ROT, WORLD_GRAVITY

NO_WRENCH = np.empty((0, 6))      # no external wrenches, for the kernels on a moving root


@inline
def root_sizes(D):
    """(nv, nv of the root, nq of the root)."""
    n = D.shape[0] - 1
    if int(D[n, ROOT]) == FLOATING_ROOT:
        return int(D[n, NQ]), 6, 7
    return int(D[n, NQ]), 3, 3


@inline
def bad_sizes(D, q):
    """q does not have the model's nq entries."""
    nv, nr, nrq = root_sizes(D)
    return q.shape[0] != nv - nr + nrq


@inline
def root_state(D, q, qd, qk, s, bias):
    """qk (nv,) <- the kernels' coordinates; s (6,) <- the root's shift g_root
    (+ b(v) when ``bias``). False if the quaternion is not unit within tolerance."""
    n = D.shape[0] - 1
    nv, nr, nrq = root_sizes(D)
    R = np.empty((3, 3))
    if nr == 6:
        x, y, z, w = q[3], q[4], q[5], q[6]
        norm = np.sqrt(x * x + y * y + z * z + w * w)
        if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
            return False
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
        R[0, 0], R[0, 1], R[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
        R[1, 0], R[1, 1], R[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
        R[2, 0], R[2, 1], R[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    else:
        c, si = np.cos(q[2]), np.sin(q[2])
        R[0, 0], R[0, 1], R[0, 2] = c, -si, 0.0
        R[1, 0], R[1, 1], R[1, 2] = si, c, 0.0
        R[2, 0], R[2, 1], R[2, 2] = 0.0, 0.0, 1.0
    for k in range(3):                            # g_base = (Rp R)^T g = R^T (Rp^T g)
        s[k] = 0.0
        s[3 + k] = 0.0
    for r in range(3):
        gp = 0.0
        for c in range(3):
            gp += D[n, ROOT_ROT + 3 * c + r] * D[n, WORLD_GRAVITY + c]
        for k in range(3):
            s[k] += R[r, k] * gp
    if nr == 3:
        s[2] = 0.0                                # the normal part: the kernels' own gravity
    for k in range(nr):
        qk[k] = 0.0
    for k in range(nv - nr):
        qk[nr + k] = q[nrq + k]
    if bias:
        if nr == 6:
            u0, u1, u2, w0, w1, w2 = qd[0], qd[1], qd[2], qd[3], qd[4], qd[5]
            s[0] += u1 * w2 - u2 * w1
            s[1] += u2 * w0 - u0 * w2
            s[2] += u0 * w1 - u1 * w0
            s[3] += w1 * w2
            s[4] -= w0 * w2
            s[5] += w0 * w1
        else:
            s[0] += qd[1] * qd[2]
            s[1] -= qd[0] * qd[2]
    return True


@inline
def root_component(nr, k):
    """The spatial component (Featherstone's order: angular, then linear) of
    the root's coordinate k: floating (vx vy vz wx wy wz), planar (vx vy wz)."""
    if k < 2 or (nr == 6 and k == 2):
        return 3 + k
    return k - 3 if nr == 6 else 2


@inline
def cholesky_solve(A, x, i, m):
    """x[i, :m] <- A[i, :m, :m]^-1 x[i, :m] for a symmetric positive definite
    A[i, :m, :m], whose lower triangle becomes its Cholesky factor. False if
    it is not positive definite."""
    for j in range(m):
        s = A[i, j, j]
        for k in range(j):
            s -= A[i, j, k] * A[i, j, k]
        if not s > 0.0:
            return False
        A[i, j, j] = np.sqrt(s)
        for r in range(j + 1, m):
            t = A[i, r, j]
            for k in range(j):
                t -= A[i, r, k] * A[i, j, k]
            A[i, r, j] = t / A[i, j, j]
    for r in range(m):                            # L y = x
        t = x[i, r]
        for k in range(r):
            t -= A[i, r, k] * x[i, k]
        x[i, r] = t / A[i, r, r]
    for r in range(m - 1, -1, -1):                # L^T z = y
        t = x[i, r]
        for k in range(r + 1, m):
            t -= A[i, k, r] * x[i, k]
        x[i, r] = t / A[i, r, r]
    return True
