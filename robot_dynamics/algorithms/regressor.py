"""Inertial-parameter regressor: inverse dynamics linear in the inertial parameters.

The equations of motion are linear in each body's ten inertial parameters
``pi_i = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)``
(mass, first moment, rotational inertia about the body frame origin; the
order of Pinocchio's ``Inertia.toDynamicParameters``), so that
``rnea(q, qd, qdd) == Y(q, qd, qdd) @ pi`` (Atkeson, An and Hollerbach,
*Estimation of inertial parameters of manipulator loads and links*, IJRR
1986; Siciliano and Khatib (eds.), *Springer Handbook of Robotics*, ch. 6,
*Model identification*, the inertial-parameter section; Khalil and Dombre,
*Modeling, Identification and Control of Robots*, ch. 9, the dynamic model
linear in the inertial parameters).

A "body" is what the model calls one: the rigid union of a moving joint's
child link and every link fixed to it (``model.nb`` bodies, in the order
of ``model.body_joint``), with its frame the joint's child-link frame (the
URDF joint frame), which is also Pinocchio's joint frame. The parameters
are ``model.body_parameters`` (payloads included).

Recursion (one state, O(nb * depth)): the forward pass of the recursive
Newton-Euler algorithm gives each body's spatial velocity ``v_i`` and
acceleration ``a_i`` (gravity as the fictitious base acceleration); the
body's own force is ``f_i = I_i a_i + v_i x* I_i v_i = A_i(v_i, a_i) pi_i``
with A_i a 6x10 matrix; each of its ten columns is carried towards the root
by ``X^T`` (Featherstone, *Rigid Body Dynamics Algorithms*, sec. 5.3) and
projected on every joint it passes, ``Y[j, 10 i + k] = S_j^T X_{j<-i}^T
A_i[:, k]``. Mimic joints add their share onto their source coordinate
(``tau = G^T tau_bodies``), as :func:`~robot_dynamics.rnea` does.

The rotors' armature (``model.armature``, docs/ACTUATORS.md) is not a
parameter of a body: with it, ``rnea == Y @ pi + model.armature * qdd``.
"""
import numba as nb
import numpy as np

from .. import checks
from .dispatch import Algorithm, run
from .kernels import (MAT, TABLE, V_RO, ST_force, XT_force_add, all_finite, bad_length, chunks, entry, finite1,
                      inline, jit, nbodies, parallel, set_base_acceleration, work, work_buffer, work_size)
from ..errors import InputError
from ..model.packed import PARENT, QIDX, QMUL
from .floating import require_fixed
from .rnea import forward_step

NPARAM = 10                  # inertial parameters per body
PARAMETER_NAMES = ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_yy", "I_xz", "I_yz", "I_zz")
# (row, column) of the unit symmetric matrix of each rotational-inertia parameter I_xx .. I_zz
_IROW = (0, 0, 1, 0, 1, 2)
_ICOL = (0, 1, 1, 2, 2, 2)


@inline
def body_regressor_column(v, a, i, k, out, t):
    """out[t] = column k of body i's 6x10 regressor A_i, f_i = A_i pi_i
    (Featherstone order [n; f], body frame). With w, wd the angular velocity
    and acceleration and ac = a_lin + w x v_lin the classical acceleration of
    the body origin:

        n = I_O wd + w x I_O w + h x ac,    f = m ac + wd x h + w x (w x h).
    """
    w0, w1, w2 = v[i, 0], v[i, 1], v[i, 2]
    d0, d1, d2 = a[i, 0], a[i, 1], a[i, 2]
    c0 = a[i, 3] + w1 * v[i, 5] - w2 * v[i, 4]
    c1 = a[i, 4] + w2 * v[i, 3] - w0 * v[i, 5]
    c2 = a[i, 5] + w0 * v[i, 4] - w1 * v[i, 3]
    for r in range(6):
        out[t, r] = 0.0
    if k == 0:                                   # m: f = ac
        out[t, 3], out[t, 4], out[t, 5] = c0, c1, c2
    elif k <= 3:                                 # h = e_{k-1}: n = e x ac, f = wd x e + w x (w x e)
        e0 = 1.0 if k == 1 else 0.0
        e1 = 1.0 if k == 2 else 0.0
        e2 = 1.0 if k == 3 else 0.0
        out[t, 0] = e1 * c2 - e2 * c1
        out[t, 1] = e2 * c0 - e0 * c2
        out[t, 2] = e0 * c1 - e1 * c0
        x0, x1, x2 = w1 * e2 - w2 * e1, w2 * e0 - w0 * e2, w0 * e1 - w1 * e0       # w x e
        out[t, 3] = d1 * e2 - d2 * e1 + w1 * x2 - w2 * x1
        out[t, 4] = d2 * e0 - d0 * e2 + w2 * x0 - w0 * x2
        out[t, 5] = d0 * e1 - d1 * e0 + w0 * x1 - w1 * x0
    else:                                        # I_O = E (unit symmetric): n = E wd + w x E w
        r, s = _IROW[k - 4], _ICOL[k - 4]
        Ew0, Ew1, Ew2, Ed0, Ed1, Ed2 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        ws = w0 if s == 0 else w1 if s == 1 else w2
        wr = w0 if r == 0 else w1 if r == 1 else w2
        ds = d0 if s == 0 else d1 if s == 1 else d2
        dr = d0 if r == 0 else d1 if r == 1 else d2
        # E x = e_r x_s + e_s x_r (r != s), e_r x_r (r == s)
        if r == 0:
            Ew0 += ws
            Ed0 += ds
        elif r == 1:
            Ew1 += ws
            Ed1 += ds
        else:
            Ew2 += ws
            Ed2 += ds
        if r != s:
            if s == 0:
                Ew0 += wr
                Ed0 += dr
            elif s == 1:
                Ew1 += wr
                Ed1 += dr
            else:
                Ew2 += wr
                Ed2 += dr
        out[t, 0] = Ed0 + w1 * Ew2 - w2 * Ew1
        out[t, 1] = Ed1 + w2 * Ew0 - w0 * Ew2
        out[t, 2] = Ed2 + w0 * Ew1 - w1 * Ew0


@inline
def add_regressor(D, j, column, value, Y):
    """Y[source, column] += multiplier * value: joint j's share of a force on
    its coordinate (a mimic joint's onto the joint it follows)."""
    Y[int(D[j, QIDX]), column] += D[j, QMUL] * value


@jit
def _regressor(D, q, qd, qdd, Y, R, p, v, a, F):
    """One state: Y (nq, 10 nb). Work rows: nb bodies + the base row; F (>= 2, 6) scratch."""
    n = nbodies(D)
    v[n, :] = 0.0
    set_base_acceleration(D, a)
    for i in range(n):                                    # forward pass (rnea's): v_i, a_i
        forward_step(D, i, q, qd, qdd, R, p, v, a)
    Y[:, :] = 0.0
    for i in range(n):                                    # columns of body i
        for k in range(10):
            col = 10 * i + k
            body_regressor_column(v, a, i, k, F, 0)       # f = A_i[:, k] in body i's frame
            j, s = i, 0
            while True:
                add_regressor(D, j, col, ST_force(D, j, F, s), Y)   # Y[j, col] = S_j^T X_{j<-i}^T A_i[:, k]
                if D[j, PARENT] < 0:
                    break
                F[1 - s, :] = 0.0
                XT_force_add(R, p, j, F, s, F, 1 - s)       # into the parent's frame
                s = 1 - s
                j = int(D[j, PARENT])


@jit
def regressor_states(D, Q, QD, QDD, Y, W):
    """Y[b] = regressor(Q[b], QD[b], QDD[b]) for every row of one chunk."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    for b in range(Q.shape[0]):
        _regressor(D, Q[b], QD[b], QDD[b], Y[b], w.R, w.p, w.v, w.a, w.F)


@parallel
def regressor_batch(D, Q, QD, QDD, Y):
    """(B, nq) states -> Y (B, nq, 10 nb) on all threads; False if a value is not finite."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        regressor_states(D, Q[lo:hi], QD[lo:hi], QDD[lo:hi], Y[lo:hi], np.empty(size))
    return all_finite(Y) and all_finite(Q) and all_finite(QD) and all_finite(QDD)


@entry(TABLE, V_RO, V_RO, V_RO, MAT, nb.types.Array(nb.float64, 1, "C"))
def regressor_one(D, q, qd, qdd, Y, W):
    """Single-state entry point. Status 0, 1 (a size does not fit the model) or 2 (not finite)."""
    n = nbodies(D)
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, qdd) or bad_length(D, Y) \
            or Y.shape[1] != 10 * n:
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    w = work(W, n + 1, q.shape[0])
    _regressor(D, q, qd, qdd, Y, w.R, w.p, w.v, w.a, w.F)
    for r in range(Y.shape[0]):
        if not finite1(Y[r]):
            return 2
    return 0 if finite1(q) and finite1(qd) and finite1(qdd) else 2


REGRESSOR = Algorithm(regressor_one, regressor_batch, ("q", "qd", "qdd"), shape=None)


def regressor(model, q, qd, qdd, *, data=None, out=None):
    """Joint-torque regressor Y: ``rnea(model, q, qd, qdd) == Y @ inertial_parameters(model)``.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q, qd, qdd: (..., nq) joint positions [rad or m], velocities [/s],
            accelerations [/s^2]; they broadcast against each other.
        data: optional :class:`~robot_dynamics.Data` (no work arrays allocated).
        out: optional (..., nq, 10 nb) float64 array for the result.

    Returns:
        (..., nq, 10 nb): row j is the torque [N m] or force [N] of
        coordinate j (``model.joint_names`` order) per unit of each body's
        ten inertial parameters; column ``10 i + k`` is body i's parameter k
        in the order of :data:`PARAMETER_NAMES` (body frame, about the body
        origin; see :func:`inertial_parameters`). Gravity (``model.gravity``)
        is included, friction is not (:func:`friction_regressor`).

    Equal to Pinocchio's ``computeJointTorqueRegressor`` with the same
    parameter order (columns per joint of a Pinocchio model built from the
    same URDF, mimic joints mapped onto their source). Recursive, as in the
    module text.
    """
    require_fixed(model, "regressor")
    return run(REGRESSOR, model, (q, qd, qdd), data, out, tail=(model.nq, 10 * model.nb))


def inertial_parameters(model):
    """The model's inertial parameters, 10 per body: ``(10 * nb,)``.

    Body i (``model.body_joint[i]`` moves it; ``model.body_link[i]`` is its
    link) contributes ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz,
    I_yz, I_zz)`` at ``10 i .. 10 i + 9`` [kg, kg m, kg m^2]: mass, first
    moment and rotational inertia about the body frame origin, in the body
    frame (the child-link frame of its joint, as Pinocchio's joint frames),
    everything fixed to the body included (links merged by fixed joints,
    payloads). The same numbers as ``model.body_parameters.ravel()``.
    """
    return np.array(model.body_parameters, dtype=float).reshape(10 * model.nb)


def parameter_names(model):
    """``(10 * nb,)`` names of the inertial parameters, ``"I_zz(link3)"``: the
    parameter name, then the link that moves the body (``model.body_link``)."""
    links = [model.link_names[l] for l in model.body_link]
    return tuple("%s(%s)" % (p, link) for link in links for p in PARAMETER_NAMES)


FRICTION_NAMES = ("fv", "fc", "fo")


def friction_regressor(model, qd):
    """Friction regressor: ``tau_f = friction_regressor(model, qd) @ phi``.

    Per independent joint j, three parameters ``phi[3 j : 3 j + 3] = (fv_j,
    fc_j, fo_j)``: viscous [N m s/rad or N s/m], Coulomb [N m or N] and a
    constant offset [N m or N], in the model ``tau_f,j = fv_j qd_j + fc_j
    sgn(qd_j) + fo_j`` (Khalil and Dombre, *Modeling, Identification and
    Control of Robots*, ch. 9, friction model, with an offset for the bias
    of the torque measurement). A mimic joint's friction is lumped into the joint it
    follows (the actuator sees one friction per coordinate).

    Args:
        qd: (..., nq) joint velocities [rad/s or m/s].

    Returns:
        (..., nq, 3 nq): row j has ``qd_j``, ``sgn(qd_j)`` and 1 in columns
        ``3 j``, ``3 j + 1``, ``3 j + 2`` and zeros elsewhere (names:
        :func:`friction_parameter_names`).
    """
    require_fixed(model, "friction_regressor")
    shape, (QD,) = checks.batch(model, qd=qd)
    if not np.all(np.isfinite(QD)):
        checks.raise_not_finite(qd=qd)
    nq, B = model.nq, QD.shape[0]
    Y = np.zeros((B, nq, 3 * nq))
    j = np.arange(nq)
    Y[:, j, 3 * j] = QD
    Y[:, j, 3 * j + 1] = np.sign(QD)
    Y[:, j, 3 * j + 2] = 1.0
    return Y.reshape(shape + (nq, 3 * nq))


def friction_parameter_names(model):
    """``(3 * nq,)`` names ``"fv(joint1)", "fc(joint1)", "fo(joint1)", ...``."""
    return tuple("%s(%s)" % (p, name) for name in model.joint_names for p in FRICTION_NAMES)


def check_parameters(model, pi, name="parameters"):
    """pi as a (10 nb,) float array; InputError naming the expected size."""
    a = checks.as_float_array(pi, name)
    if a.shape != (10 * model.nb,):
        raise InputError("%s has shape %s, expected (%d,) (10 per body, model nb is %d)"
                         % (name, a.shape, 10 * model.nb, model.nb))
    if not np.all(np.isfinite(a)):
        checks.raise_not_finite(**{name: a})
    return a
