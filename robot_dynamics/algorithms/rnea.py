"""Recursive Newton-Euler algorithm: inverse dynamics and its special cases.

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 5.3 (Table 5.1);
Siciliano & Khatib (eds.), *Springer Handbook of Robotics*, sec. 3.5
(Algorithm 3.1). Gravity enters as a fictitious base acceleration
``a_0 = -g`` (Handbook eq. 3.39), so ``gravity_torques(q) == rnea(q, 0, 0)``
and ``nonlinear_effects(q, qd) == rnea(q, qd, 0)``.
"""
import numba as nb
import numpy as np

from . import checks
from .kernels import (MAT, V, V_RO, add_joint_motion, add_torque, add_velocity_product, all_finite,
                   bad_length, cross_force_add, finite1, force_to_parent_add, inertia_times, jit,
                   joint_coordinate, joint_force, joint_pose, joint_position, motion_to_child,
                   nbodies, parent_row, set_base_acceleration)
from ..model.model import MASS, PARENT
from .wrench import body_wrenches


@jit
def _rnea(D, q, qd, qdd, fext, tau, R, p, v, a, f):
    """One state. fext (nb, 6) body-frame [n; f] wrenches, or (0, 6) for none.
    Work rows: nb bodies + the base row (v = 0, a = -g)."""
    n = nbodies(D)
    v[n, :] = 0.0
    set_base_acceleration(D, a)
    for i in range(n):                                    # forward pass
        par = parent_row(D, i)
        qdi, qddi = joint_coordinate(D, i, qd), joint_coordinate(D, i, qdd)
        joint_pose(D, i, joint_position(D, i, q), R, p)
        motion_to_child(R, p, i, v, par, v)               # v_i = X_i v_p + S_i qd_i
        add_joint_motion(D, i, qdi, v)
        motion_to_child(R, p, i, a, par, a)               # a_i = X_i a_p + S_i qdd_i + v_i x S_i qd_i
        add_joint_motion(D, i, qddi, a)
        add_velocity_product(D, i, v, qdi, a)
        inertia_times(D, i, MASS, a, i, f, i)             # f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
        inertia_times(D, i, MASS, v, i, f, n)             # (base row of f as scratch)
        cross_force_add(v, i, f, n, f, i)
        if fext.shape[0]:
            for c in range(6):
                f[i, c] -= fext[i, c]
    tau[:] = 0.0
    for i in range(n - 1, -1, -1):                        # backward pass
        add_torque(D, i, joint_force(D, i, f, i), tau)    # tau_i = S_i^T f_i
        if D[i, PARENT] >= 0:
            force_to_parent_add(R, p, i, f, i, f, parent_row(D, i))   # f_p += X_i^T f_i


@jit
def _gravity(D, q, tau, R, p, a, f):
    """One state of rnea(q, 0, 0): only the base acceleration -g propagates."""
    n = nbodies(D)
    set_base_acceleration(D, a)
    for i in range(n):
        joint_pose(D, i, joint_position(D, i, q), R, p)
        motion_to_child(R, p, i, a, parent_row(D, i), a)
        inertia_times(D, i, MASS, a, i, f, i)
    tau[:] = 0.0
    for i in range(n - 1, -1, -1):
        add_torque(D, i, joint_force(D, i, f, i), tau)
        if D[i, PARENT] >= 0:
            force_to_parent_add(R, p, i, f, i, f, parent_row(D, i))


@jit
def rnea_kernel(D, Q, QD, QDD, FEXT, TAU):
    """(B, nq) states -> TAU (B, nq); FEXT (B, nb, 6) or (B, 0, 6). False if not finite."""
    n = nbodies(D) + 1
    R, p, v, a, f = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    for b in range(Q.shape[0]):
        _rnea(D, Q[b], QD[b], QDD[b], FEXT[b], TAU[b], R, p, v, a, f)
    return all_finite(TAU) and all_finite(Q) and all_finite(QD) and all_finite(QDD)


@nb.njit(nb.int64(MAT, V_RO, V_RO, V_RO, V), cache=True, nogil=True)
def rnea_one(D, q, qd, qdd, tau):
    """Single-state entry point without external forces (the hot path).
    Returns 0, 1 (a vector has the wrong length) or 2 (not finite)."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, qdd):
        return 1
    n = nbodies(D) + 1
    R, p, v, a, f = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    _rnea(D, q, qd, qdd, np.empty((0, 6)), tau, R, p, v, a, f)
    return 0 if finite1(tau) and finite1(q) and finite1(qd) and finite1(qdd) else 2


@jit
def gravity_kernel(D, Q, TAU):
    n = nbodies(D) + 1
    R, p, a, f = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6))
    for b in range(Q.shape[0]):
        _gravity(D, Q[b], TAU[b], R, p, a, f)
    return all_finite(TAU) and all_finite(Q)


@nb.njit(nb.int64(MAT, V_RO, V), cache=True, nogil=True)
def gravity_one(D, q, tau):
    if bad_length(D, q):
        return 1
    n = nbodies(D) + 1
    R, p, a, f = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6))
    _gravity(D, q, tau, R, p, a, f)
    return 0 if finite1(tau) and finite1(q) else 2


def rnea(model, q, qd, qdd, f_ext=None):
    """Inverse dynamics: the joint torques that produce ``qdd`` at ``(q, qd)``.

    ``tau = M(q) qdd + C(q, qd) qd + g(q) - sum_k J_k(q)^T f_ext_k``.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q: (..., nq) joint positions [rad or m].
        qd: (..., nq) joint velocities [rad/s or m/s].
        qdd: (..., nq) joint accelerations [rad/s^2 or m/s^2].
        f_ext: optional external wrenches acting on links: a dict
            ``{link: (6,)}`` or an array (..., len(model.link_names), 6) in
            ``model.link_names`` order; each ``[fx, fy, fz, nx, ny, nz]`` in
            the link's frame, moment about the link origin [N, N m].

    Returns:
        (..., nq) joint torques [N m] or forces [N], in ``model.joint_names`` order.

    The states broadcast against each other; a batch (B, nq) is computed in
    one compiled loop. See Featherstone sec. 5.3, Handbook Algorithm 3.1.
    """
    if f_ext is None and checks.single(q):
        tau = np.empty(model.nq)
        try:
            if rnea_one(model._data, q, qd, qdd, tau) == 0:
                return tau
        except TypeError:            # not three C-contiguous float64 vectors: general path
            pass
    shape, (Q, QD, QDD) = checks.batch(model, q=q, qd=qd, qdd=qdd)
    FEXT = body_wrenches(model, f_ext, shape, Q.shape[0])
    TAU = np.empty_like(Q)
    if not rnea_kernel(model._data, Q, QD, QDD, FEXT, TAU):
        checks.raise_not_finite(q=q, qd=qd, qdd=qdd, f_ext=None if f_ext is None else FEXT)
    return TAU.reshape(shape + (model.nq,))


def gravity_torques(model, q):
    """Generalized gravity ``g(q) = rnea(q, 0, 0)``: the torques that hold the
    robot still at ``q`` against ``model.gravity``.

    Args:
        q: (..., nq) joint positions.
    Returns:
        (..., nq) torques [N m] / forces [N].
    """
    if checks.single(q):
        tau = np.empty(model.nq)
        try:
            if gravity_one(model._data, q, tau) == 0:
                return tau
        except TypeError:
            pass
    shape, (Q,) = checks.batch(model, q=q)
    TAU = np.empty_like(Q)
    if not gravity_kernel(model._data, Q, TAU):
        checks.raise_not_finite(q=q)
    return TAU.reshape(shape + (model.nq,))


def nonlinear_effects(model, q, qd):
    """Coriolis, centrifugal and gravity torques ``h(q, qd) = C(q, qd) qd + g(q)
    = rnea(q, qd, 0)``.

    Args:
        q, qd: (..., nq) joint positions and velocities.
    Returns:
        (..., nq) torques [N m] / forces [N].
    """
    if checks.single(q):
        tau = np.empty(model.nq)
        try:
            if rnea_one(model._data, q, qd, model._zeros, tau) == 0:
                return tau
        except TypeError:
            pass
    shape, (Q, QD) = checks.batch(model, q=q, qd=qd)
    TAU = np.empty_like(Q)
    if not rnea_kernel(model._data, Q, QD, np.zeros_like(Q), np.empty((Q.shape[0], 0, 6)), TAU):
        checks.raise_not_finite(q=q, qd=qd)
    return TAU.reshape(shape + (model.nq,))
