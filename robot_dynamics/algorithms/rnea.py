"""Recursive Newton-Euler algorithm: inverse dynamics and its special cases.

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 5.3 (Table 5.1);
Siciliano & Khatib (eds.), *Springer Handbook of Robotics*, sec. 3.5
(Algorithm 3.1). Gravity enters as a fictitious base acceleration
``a_0 = -g`` (Handbook eq. 3.39), so ``gravity_torques(q) == rnea(q, 0, 0)``
and ``nonlinear_effects(q, qd) == rnea(q, qd, 0)``.
"""
import numba as nb
import numpy as np

from . import floating
from .dispatch import Algorithm, chain, public, run_root
from .kernels import (MAT, TABLE, entry, V, V_RO, chunks, work_buffer, parallel, work, work_rnea, work_size, S_add, add_torque, crm_S_add, all_finite,
                   bad_length, crf_add, finite1, XT_force_add, I_times, inline, jit,
                   joint_coordinate, ST_force, jcalc, joint_position, X_motion,
                   nbodies, parent_row, set_base_acceleration)
from ..model.packed import ARMATURE, MASS, NQ, PARENT
from .root_kernels import NO_WRENCH, bad_sizes, root_sizes, root_state

_NO_FEXT = np.empty((0, 0, 6))      # no external forces


@inline
def bad_wrenches(D, fext):
    """True unless fext is one body-frame wrench (6,) per body."""
    return fext.shape[0] != nbodies(D) or fext.shape[1] != 6


@inline
def forward_step(D, i, q, qd, qdd, R, p, v, a):
    """Body i of the RNEA's forward pass (Featherstone Table 5.1): its transform
    (R, p), spatial velocity v_i and acceleration a_i (body frame) from its
    parent's row of v and a (the base row: v = 0, a = -g, Handbook eq. 3.39).
    Shared by :func:`_rnea` and the regressor (algorithms/regressor.py)."""
    par = parent_row(D, i)
    qdi, qddi = joint_coordinate(D, i, qd), joint_coordinate(D, i, qdd)
    jcalc(D, i, joint_position(D, i, q), R, p)
    X_motion(R, p, i, v, par, v)                   # v_i = X_i v_p + S_i qd_i
    S_add(D, i, qdi, v)
    X_motion(R, p, i, a, par, a)                   # a_i = X_i a_p + S_i qdd_i + v_i x S_i qd_i
    S_add(D, i, qddi, a)
    crm_S_add(D, i, v, qdi, a)


@inline
def _rnea(D, q, qd, qdd, fext, tau, R, p, v, a, f):
    """One state. fext (nb, 6) body-frame [n; f] wrenches, or (0, 6) for none.
    Work rows: nb bodies + the base row (v = 0, a = -g)."""
    n = nbodies(D)
    v[n, :] = 0.0
    set_base_acceleration(D, a)
    for i in range(n):                                    # forward pass
        forward_step(D, i, q, qd, qdd, R, p, v, a)
        I_times(D, i, MASS, a, i, f, i)             # f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
        I_times(D, i, MASS, v, i, f, n)             # (base row of f as scratch)
        crf_add(v, i, f, n, f, i)
        if fext.shape[0]:
            for c in range(6):
                f[i, c] -= fext[i, c]
    tau[:] = 0.0
    for i in range(n - 1, -1, -1):                        # backward pass: tau_i = S_i^T f_i + I_a qdd_i
        add_torque(D, i, ST_force(D, i, f, i) + D[i, ARMATURE] * joint_coordinate(D, i, qdd), tau)
        if D[i, PARENT] >= 0:
            XT_force_add(R, p, i, f, i, f, parent_row(D, i))   # f_p += X_i^T f_i


@inline
def _gravity(D, q, tau, R, p, a, f):
    """One state of rnea(q, 0, 0): only the base acceleration -g propagates."""
    set_base_acceleration(D, a)
    _gravity_from_base(D, q, tau, R, p, a, f)


@inline
def _gravity_from_base(D, q, tau, R, p, a, f):
    """rnea(q, 0, 0) with the base row of ``a`` already set: it propagates
    outward (a_i = X_i a_p, f_i = I_i a_i), the forces inward."""
    n = nbodies(D)
    for i in range(n):
        jcalc(D, i, joint_position(D, i, q), R, p)
        X_motion(R, p, i, a, parent_row(D, i), a)
        I_times(D, i, MASS, a, i, f, i)
    tau[:] = 0.0
    for i in range(n - 1, -1, -1):
        add_torque(D, i, ST_force(D, i, f, i), tau)
        if D[i, PARENT] >= 0:
            XT_force_add(R, p, i, f, i, f, parent_row(D, i))


@jit
def rnea_states(D, Q, QD, QDD, TAU, W):
    """TAU[b] = rnea(Q[b], QD[b], QDD[b]) for every row of one chunk (its own
    loop: a branch on external forces in it costs time per state)."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    none = np.empty((0, 6))
    for b in range(Q.shape[0]):
        _rnea(D, Q[b], QD[b], QDD[b], none, TAU[b], w.R, w.p, w.v, w.a, w.f)


@jit
def rnea_states_fext(D, Q, QD, QDD, FEXT, TAU, W):
    """TAU[b] = rnea(Q[b], QD[b], QDD[b], FEXT[b]) for every row of one chunk."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    for b in range(Q.shape[0]):
        _rnea(D, Q[b], QD[b], QDD[b], FEXT[b], TAU[b], w.R, w.p, w.v, w.a, w.f)


@parallel
def rnea_batch(D, Q, QD, QDD, FEXT, TAU):
    """(B, nq) states -> TAU (B, nq) on all threads; FEXT (B, nb, 6), or (0, 0, 6) for none.
    False if a value is not finite."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        if FEXT.shape[0] > 0:
            rnea_states_fext(D, Q[lo:hi], QD[lo:hi], QDD[lo:hi], FEXT[lo:hi], TAU[lo:hi], np.empty(size))
        else:
            rnea_states(D, Q[lo:hi], QD[lo:hi], QDD[lo:hi], TAU[lo:hi], np.empty(size))
    return all_finite(TAU) and all_finite(Q) and all_finite(QD) and all_finite(QDD)


@entry(TABLE, V_RO, V_RO, V_RO, V, V)
def rnea_one(D, q, qd, qdd, tau, W):
    """Single-state entry point without external forces (the hot path).
    Status 0, 1 (a length does not fit the model) or 2 (not finite)."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, qdd) or bad_length(D, tau):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    R, p, v, a, f, _ = work_rnea(W, nbodies(D) + 1, q.shape[0])
    _rnea(D, q, qd, qdd, np.empty((0, 6)), tau, R, p, v, a, f)
    return 0 if finite1(tau) and finite1(q) and finite1(qd) and finite1(qdd) else 2


@entry(TABLE, V_RO, V_RO, V_RO, MAT, V, V)
def rnea_fext_one(D, q, qd, qdd, fext, tau, W):
    """Single-state entry point with external forces fext (nb, 6), body-frame
    [n; f] wrenches (:func:`.wrench.body_wrenches`). Status as :func:`rnea_one`."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, qdd) or bad_length(D, tau) \
            or bad_wrenches(D, fext):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    R, p, v, a, f, _ = work_rnea(W, nbodies(D) + 1, q.shape[0])
    _rnea(D, q, qd, qdd, fext, tau, R, p, v, a, f)
    return 0 if finite1(tau) and finite1(q) and finite1(qd) and finite1(qdd) else 2


@jit
def gravity_states(D, Q, TAU, W):
    w = work(W, nbodies(D) + 1, Q.shape[1])
    for b in range(Q.shape[0]):
        _gravity(D, Q[b], TAU[b], w.R, w.p, w.a, w.f)


@parallel
def gravity_batch(D, Q, TAU):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        gravity_states(D, Q[lo:hi], TAU[lo:hi], np.empty(size))
    return all_finite(TAU) and all_finite(Q)


@entry(TABLE, V_RO, V, V)
def gravity_one(D, q, tau, W):
    if bad_length(D, q) or bad_length(D, tau):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    R, p, _, a, f, _ = work_rnea(W, nbodies(D) + 1, q.shape[0])
    _gravity(D, q, tau, R, p, a, f)
    return 0 if finite1(tau) and finite1(q) else 2


@entry(TABLE, V_RO, V_RO, V, V)
def nle_one(D, q, qd, tau, W):
    """rnea(q, qd, 0) for one state."""
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    R, p, v, a, f, zero = work_rnea(W, nbodies(D) + 1, q.shape[0])
    zero[:] = 0.0
    _rnea(D, q, qd, zero, np.empty((0, 6)), tau, R, p, v, a, f)
    return 0 if finite1(tau) and finite1(q) and finite1(qd) else 2


@parallel
def nle_batch(D, Q, QD, TAU):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        zero = np.zeros((hi - lo, Q.shape[1]))
        rnea_states(D, Q[lo:hi], QD[lo:hi], zero, TAU[lo:hi], np.empty(size))
    return all_finite(TAU) and all_finite(Q) and all_finite(QD)


# --- on a floating or planar base (the root's compiled variants; robot_dynamics.algorithms.root_kernels) ---
# Batches return False when a state's quaternion is not unit or a value is
# not finite (the Python path then says which).
@entry(TABLE, V_RO, V_RO, V_RO, V, V, data_table=False)
def rnea_root_one(D, q, qd, qdd, tau, W):
    nv = int(D[D.shape[0] - 1, NQ])
    if bad_sizes(D, q) or qd.shape[0] != nv or qdd.shape[0] != nv or tau.shape[0] != nv:
        return 1
    W = work_buffer(D, W, nv)
    if W.shape[0] == 0:
        return 1
    if not _rnea_root(D, q, qd, qdd, tau, W):
        return 2
    return 0 if finite1(tau) and finite1(q) and finite1(qd) and finite1(qdd) else 2


@inline
def _rnea_root(D, q, qd, qdd, tau, W):
    nv = qd.shape[0]
    R, p, v, a, f, _ = work_rnea(W, nbodies(D) + 1, nv)
    qk, ak, s = np.empty(nv), qdd.copy(), np.empty(6)
    if not root_state(D, q, qd, qk, s, True):
        return False
    for k in range(root_sizes(D)[1]):
        ak[k] -= s[k]
    _rnea(D, qk, qd, ak, NO_WRENCH, tau, R, p, v, a, f)
    return True


@entry(TABLE, V_RO, V, V, data_table=False)
def gravity_root_one(D, q, tau, W):
    nv = int(D[D.shape[0] - 1, NQ])
    if bad_sizes(D, q) or tau.shape[0] != nv:
        return 1
    W = work_buffer(D, W, nv)
    if W.shape[0] == 0:
        return 1
    if not _gravity_root(D, q, tau, W):
        return 2
    return 0 if finite1(tau) and finite1(q) else 2


@inline
def _gravity_root(D, q, tau, W):
    """rnea(q, 0, 0): the base acceleration -g in the base frame is the
    kernels' base row (the root chain at zero has identity transforms), so
    only it propagates, as in the fixed-base gravity kernel."""
    nv = tau.shape[0]
    R, p, _, a, f, qk = work_rnea(W, nbodies(D) + 1, nv)
    s = np.empty(6)
    if not root_state(D, q, q, qk, s, False):
        return False
    n = nbodies(D)
    for k in range(3):                               # a_0 = (0; -g_base) (Handbook eq. 3.39)
        a[n, k] = 0.0
        a[n, 3 + k] = -s[k]
    if root_sizes(D)[1] == 3:                        # planar: the normal part, as the kernels apply it
        a[n, 5] = -D[n, 2]
    _gravity_from_base(D, qk, tau, R, p, a, f)
    return True


@jit
def rnea_root_states(D, Q, QD, QDD, TAU, W):
    ok = True
    for b in range(Q.shape[0]):
        ok &= _rnea_root(D, Q[b], QD[b], QDD[b], TAU[b], W)
    return ok


@parallel
def rnea_root_batch(D, Q, QD, QDD, TAU):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), QD.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        ok[k] = rnea_root_states(D, Q[lo:hi], QD[lo:hi], QDD[lo:hi], TAU[lo:hi], np.empty(size))
    return ok.all() and all_finite(TAU) and all_finite(Q) and all_finite(QD) and all_finite(QDD)


@jit
def gravity_root_states(D, Q, TAU, W):
    ok = True
    for b in range(Q.shape[0]):
        ok &= _gravity_root(D, Q[b], TAU[b], W)
    return ok


@parallel
def gravity_root_batch(D, Q, TAU):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), TAU.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        ok[k] = gravity_root_states(D, Q[lo:hi], TAU[lo:hi], np.empty(size))
    return ok.all() and all_finite(TAU) and all_finite(Q)


# --- the Python path on a floating or planar base (:mod:`.floating`) -----------------------

def _rnea_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    q, qd, qdd = x
    qk, R, p, (v, a) = floating.states(model, q, qd=qd, qdd=qdd)
    return chain(RNEA, model, (qk, v, a - floating.root_shift(model, R, v)), f_ext, data, out)


def _gravity_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    qk, R, p, _ = floating.states(model, x[0])
    zero = np.zeros_like(qk)
    return chain(RNEA, model, (qk, zero, -floating.root_shift(model, R, None)), None, data, out)


def _nle_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    """rnea(q, qd, 0): the compiled root RNEA with zero accelerations."""
    q, qd = x
    zero = floating.zeros(model.nv) if isinstance(qd, np.ndarray) and qd.ndim == 1 else (
        np.zeros(np.shape(qd)) if isinstance(qd, np.ndarray) else None)
    res = None if zero is None else run_root(RNEA, model, (q, qd, zero), data, out)
    if res is not None:
        return res
    qk, R, p, (v,) = floating.states(model, q, qd=qd)
    return chain(RNEA, model, (qk, v, -floating.root_shift(model, R, v)), None, data, out)


RNEA_FEXT = Algorithm(rnea_fext_one, rnea_batch, ("q", "qd", "qdd"), serial=rnea_states_fext)
RNEA = Algorithm(rnea_one, rnea_batch, ("q", "qd", "qdd"), extra=(_NO_FEXT,), root_one=rnea_root_one,
                 root_batch=rnea_root_batch, on_root=_rnea_on_root, fext=RNEA_FEXT)
GRAVITY = Algorithm(gravity_one, gravity_batch, ("q",), root_one=gravity_root_one, root_batch=gravity_root_batch,
                    on_root=_gravity_on_root)
NONLINEAR_EFFECTS = Algorithm(nle_one, nle_batch, ("q", "qd"), on_root=_nle_on_root)


@public(RNEA)
def rnea(model, q, qd, qdd, f_ext=None, *, data=None, out=None):
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
        data: optional :class:`~robot_dynamics.Data` (no work arrays allocated).
        out: optional (..., nq) float64 array for the result.

    Returns:
        (..., nq) joint torques [N m] or forces [N], in ``model.joint_names``
        order (``out`` when given).

    The states broadcast against each other; a batch (B, nq) runs on all
    cores. See Featherstone sec. 5.3, Handbook Algorithm 3.1. A floating or
    planar base: q (..., nq), the rest (..., nv), the base's wrench first
    (:mod:`robot_dynamics.model.configuration`).
    """


@public(GRAVITY)
def gravity_torques(model, q, *, data=None, out=None):
    """Generalized gravity ``g(q) = rnea(q, 0, 0)``: the torques that hold the
    robot still at ``q`` against ``model.gravity``.

    Args:
        q: (..., nq) joint positions.
        data, out: as in :func:`rnea`.
    Returns:
        (..., nq) torques [N m] / forces [N].
    """


@public(NONLINEAR_EFFECTS)
def nonlinear_effects(model, q, qd, *, data=None, out=None):
    """Coriolis, centrifugal and gravity torques ``h(q, qd) = C(q, qd) qd + g(q)
    = rnea(q, qd, 0)``.

    Args:
        q, qd: (..., nq) joint positions and velocities.
        data, out: as in :func:`rnea`.
    Returns:
        (..., nq) torques [N m] / forces [N].
    """
