"""Cartesian (operational-space) dynamics of a point on a link.

Handbook of Robotics, sec. 3.3.3 and 3.5.4: for a task Jacobian J (m x n,
m <= n, full rank), the end effector obeys ``Lambda a + mu + rho = F`` with

    Lambda = (J M^-1 J^T)^-1                      (eq. 3.52)
    mu     = Lambda (J M^-1 C qd - Jdot qd)        (eq. 3.53)
    rho    = Lambda J M^-1 g                       (eq. 3.54)
    Jbar   = M^-1 J^T Lambda                       (eq. 3.60, dynamically consistent inverse)

``a = J qdd + Jdot qd`` is the acceleration of the point (linear rows) and
of its link (angular rows), ``F`` the wrench applied at the point, and
``tau = J^T F`` (eq. 3.51) the joint torques that produce it. Lambda^-1 is
computed as the Handbook's sec. 3.5.4 does: ``M = L L^T`` (Cholesky),
``Y = L^-1 J^T``, ``Lambda^-1 = Y^T Y``.

Craig, *Introduction to Robotics*, sec. 6.10, eq. 6.99 writes the same for
a square J (m = n): ``M_x = J^-T M J^-1``, ``V_x = J^-T (V - M J^-1 Jdot qd)``,
``G_x = J^-T G`` (:func:`cartesian_dynamics`).

Frames and rows: J has the rows ``[vx, vy, vz, wx, wy, wz]`` of
:func:`robot_dynamics.jacobian` (linear velocity of the point, angular
velocity of the link), expressed in the base frame or, with ``frame``, in
the axes of a link frame (the moving link itself with ``frame="link"``);
``rows`` keeps a subset (``"linear"``, ``"angular"``, or e.g. ``(0, 1)`` /
``("x", "y")`` for a planar arm). In :func:`operational_space` every
quantity is the base-frame one with its vectors expressed in that frame
(``a_f = R^T a``), so Lambda, mu and rho rotate as tensors. Craig's
:func:`cartesian_dynamics` differentiates the Jacobian written in the
chosen frame, ``Jdot = d/dt (R^T J)`` (Craig eqs. 6.96-6.102); in a moving
frame its V_x therefore differs from mu by ``Lambda R^T (w_f x v)`` terms;
in the base frame the two agree.

Floating and planar bases (:mod:`robot_dynamics.model.configuration`):
n is nv, M, h and g are the whole robot's (the base's rows included), J is
world-aligned (``frame="base"`` is then the world frame) and a task wrench
F acts through ``tau = J^T F`` on the base too. ``Jdot qd`` includes the
base's turning: the root's axes are fixed in the base and turn with its
whole angular velocity, as a 6-DOF joint's do (checked against Pinocchio's
classical frame acceleration in test/test_floating_base.py).

Singularities: near one, Lambda (and Craig's M_x, V_x, G_x) grow without
bound (Craig: "certain quantities in the Cartesian dynamics become
infinite"). Every function here measures ``cond(J M^-1 J^T)``; above
``max_condition`` it raises :class:`SingularityError`, or, with
``on_singular="flag"``, returns ``singular=True`` and a Lambda from the
pseudo-inverse that ignores the directions the arm cannot accelerate in
(finite, exact in the others). It never returns infinities.
"""
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .. import checks
from ..algorithms.crba import mass_matrix
from ..algorithms.kinematics import forward_kinematics
from ..algorithms.task_space import frame_jdot_qd, jacobian
from ..model import PRISMATIC
from ..algorithms.rnea import gravity_torques, nonlinear_effects
from ..errors import SingularityError  # noqa: F401  (raised here, exported by the package)
from ..errors import InputError, old_argument_order
from ..model.configuration import _config, _velocity

MAX_CONDITION = 1e8      # default bound on cond(J M^-1 J^T) before a pose counts as singular
ROW_NAMES = ("x", "y", "z", "wx", "wy", "wz")




@dataclass(frozen=True)
class OperationalSpace:
    """Operational-space terms of one state (arrays get leading batch axes for a batch).

    - ``J`` (m, n) task Jacobian, ``Jdot_qd`` (m,) its bias ``Jdot qd``;
    - ``Lambda`` (m, m) operational-space inertia, ``Lambda_inv`` (m, m) = J M^-1 J^T;
    - ``mu`` (m,) velocity-product and ``rho`` (m,) gravity terms, so that
      ``Lambda a + mu + rho = F``;
    - ``Jbar`` (n, m) dynamically consistent inverse M^-1 J^T Lambda;
    - ``condition``: cond(J M^-1 J^T); ``singular``: above ``max_condition``;
    - ``frame`` ('base' or a link name) and ``rows`` (row names) describe J.

    Units: Lambda in kg (linear rows) / kg m^2 (angular rows), mu and rho in
    N / N m, Jdot_qd in m/s^2 / rad/s^2.
    """
    J: np.ndarray
    Jdot_qd: np.ndarray
    Lambda: np.ndarray
    Lambda_inv: np.ndarray
    mu: np.ndarray
    rho: np.ndarray
    Jbar: np.ndarray
    condition: np.ndarray
    singular: np.ndarray
    frame: str
    rows: Tuple[str, ...]

    def torques(self, F):
        """``tau = J^T F`` (Handbook eq. 3.51): joint torques that exert the task
        wrench F (m,) (rows and frame of J) at the point."""
        F = checks.as_float_array(F, "F")
        if F.shape[-1:] != (self.J.shape[-2],):
            raise InputError("F must have %d values (rows %s), got shape %s"
                             % (self.J.shape[-2], ", ".join(self.rows), F.shape))
        return np.einsum("...ij,...i->...j", self.J, F)


# ---------------------------------------------------------------------------
# Task Jacobian, its frame and rows
# ---------------------------------------------------------------------------

def _rows(rows):
    """Row indices into [vx vy vz wx wy wz] and their names."""
    if isinstance(rows, str):
        named = {"all": range(6), "linear": range(3), "angular": range(3, 6)}
        if rows not in named:
            raise InputError("rows must be 'all', 'linear', 'angular' or a list of row indices 0-5 / names %s, "
                             "got %r" % (", ".join(ROW_NAMES), rows))
        idx = list(named[rows])
    else:
        try:
            idx = [ROW_NAMES.index(r) if isinstance(r, str) else int(r) for r in rows]
        except (TypeError, ValueError):
            raise InputError("rows must be 'all', 'linear', 'angular' or a list of row indices 0-5 / names %s, "
                             "got %r" % (", ".join(ROW_NAMES), rows)) from None
        if not idx or len(set(idx)) != len(idx) or not all(0 <= i < 6 for i in idx):
            raise InputError("rows must be distinct indices 0-5 (or names %s), got %r" % (", ".join(ROW_NAMES), rows))
    return idx, tuple(ROW_NAMES[i] for i in idx)


def _states(model, q, qd):
    """(batch shape, Q (B, nq), QD (B, nv)) broadcast together; qd None: zeros."""
    q = _config(model, q, "q")
    qd = np.zeros(model.nv) if qd is None else _velocity(model, qd, "qd")
    shape = np.broadcast_shapes(q.shape[:-1], qd.shape[:-1])
    Q = np.broadcast_to(q, shape + q.shape[-1:]).reshape(-1, model.nq)
    QD = np.broadcast_to(qd, shape + qd.shape[-1:]).reshape(-1, model.nv)
    checks.check_finite(q=Q, qd=QD)
    return shape, Q, QD


def _frame_link(model, link, frame):
    if frame == "base":
        return None
    name = link if frame == "link" else frame
    model.link_index(name)                      # ValueError listing the links
    return name


def _bias_one(model, q, qd, link, point, frame_link):
    """Base-frame J (6, n), Jdot qd (6,), and the frame's rotation and angular velocity."""
    T = forward_kinematics(model, q)
    J = jacobian(model, q, link, point)
    b = int(model.link_body[model.link_index(link)])
    Tl = T[link]
    x = Tl[:3, :3] @ point + Tl[:3, 3]                      # the point, base frame
    chain = []
    while b >= 0:
        chain.append(b)
        b = int(model.parent[b])
    chain.reverse()
    body_link = [model.link_names[l] for l in model.body_link]
    w, vo, o_prev = np.zeros(3), np.zeros(3), np.zeros(3)
    data = []
    for k in chain:                                         # outward: body velocities, axes
        Tk = T[body_link[k]]
        o, a = Tk[:3, 3], Tk[:3, :3] @ model.axis[k]
        u = model.body_multiplier[k] * qd[model.body_coordinate[k]]
        vo = vo + _cross(w, o - o_prev)                   # origin of body k moves with its parent...
        prismatic = model.joint_type[k] == PRISMATIC
        if prismatic:
            vo = vo + a * u                                 # ...and slides along its axis
        else:
            w = w + a * u
        data.append((o, a, u, prismatic, w.copy(), vo.copy()))
        o_prev = o
    v_x = vo + _cross(w, x - o_prev) if chain else np.zeros(3)
    nr = model.root_nv if chain else 0
    if nr:          # the root's axes are fixed in the base, which turns with the whole root twist
        w_base, vo_base = data[nr - 1][4], data[nr - 1][5]
        data[:nr] = [(o, a, u, prismatic, w_base, vo_base) for o, a, u, prismatic, _, _ in data[:nr]]
    bias = np.zeros(6)
    for o, a, u, prismatic, w_k, vo_k in data:              # d/dt of each Jacobian column, times qd
        a_dot = _cross(w_k, a)
        if prismatic:
            bias[:3] += u * a_dot
        else:
            bias[:3] += u * (_cross(a_dot, x - o) + _cross(a, v_x - vo_k))
            bias[3:] += u * a_dot
    if frame_link is None:
        return J, bias, np.eye(3), np.zeros(3)
    Rf = T[frame_link][:3, :3]
    wf = jacobian(model, q, frame_link)[3:] @ qd
    return J, bias, Rf, wf


def _cross(a, b):
    """a x b of two (3,) vectors (numpy's cross costs 15 us a call on 3-vectors, this 1)."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def _to_frame(Rf, v):
    """Express the 3-blocks of (6, ...) v in the frame with rotation Rf (base <- frame)."""
    return np.concatenate([Rf.T @ v[:3], Rf.T @ v[3:]])


# ---------------------------------------------------------------------------
# Operational space (Handbook 3.52-3.54)
# ---------------------------------------------------------------------------

def _old_order(args, kwargs):
    """(model, q, link, point, qd) -> (model, q, qd, link, point)."""
    model, q, link, rest = args[0], args[1], args[2], args[3:]
    point = rest[0] if rest else kwargs.pop("point", (0.0, 0.0, 0.0))
    qd = rest[1] if len(rest) > 1 else kwargs.pop("qd", None)
    return (model, q, qd, link, point), kwargs


@old_argument_order(2, _old_order, "operational_space(model, q, qd, link, point) (qd None for zero)")
def operational_space(model, q, qd=None, link=None, point=(0.0, 0.0, 0.0), *, frame="base", rows="all",
                      max_condition=MAX_CONDITION, on_singular="raise"):
    """Operational-space inertia Lambda and bias terms mu, rho of a point on a link.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q: (..., nq) configuration (a floating or planar root's coordinates
            first, :mod:`robot_dynamics.model.configuration`).
        qd: (..., nv) velocities; None for zero (mu = 0, Jdot qd = 0).
        link: link carrying the point (e.g. the tool flange).
        point: (3,) the point in the link frame [m].
        frame: ``"base"``, ``"link"`` (the link's own axes) or any link name:
            the axes the rows are expressed in.
        rows: ``"all"`` (6), ``"linear"``, ``"angular"`` or indices/names of
            ``[x, y, z, wx, wy, wz]``; at most nv rows that the robot can move
            independently (m <= n, J of full rank).
        max_condition: bound on ``cond(J M^-1 J^T)``; above it the pose counts
            as singular.
        on_singular: ``"raise"`` (:class:`SingularityError`) or ``"flag"``
            (``singular=True``, Lambda from the pseudo-inverse restricted to
            the directions the arm can accelerate in).

    Returns:
        :class:`OperationalSpace`.
    """
    if not isinstance(link, str):
        raise InputError("operational_space needs link, the name of the link carrying the point "
                         "(operational_space(model, q, qd, link, point)), got %r" % (link,))
    if on_singular not in ("raise", "flag"):
        raise InputError("on_singular must be 'raise' or 'flag', got %r" % (on_singular,))
    if not (np.isfinite(max_condition) and max_condition > 1):
        raise InputError("max_condition must be a finite number > 1, got %r" % (max_condition,))
    idx, names = _rows(rows)
    if len(idx) > model.nv:
        dof = "joints" if model.root_joint is None else "degrees of freedom (base included)"
        raise InputError("%d task rows (%s) for a robot with %d %s: J M^-1 J^T is singular at every pose; "
                         "choose at most %d rows, e.g. rows=%r" % (len(idx), ", ".join(names), model.nv, dof,
                                                                  model.nv, ROW_NAMES[:model.nv]))
    x = checks.point(point)
    frame_link = _frame_link(model, link, frame)
    shape, Q, QD = _states(model, q, qd)
    out = [_operational_one(model, Q[i], QD[i], link, x, frame_link, idx, max_condition, on_singular)
           for i in range(Q.shape[0])]
    fields = {k: np.stack([o[k] for o in out]).reshape(shape + np.shape(out[0][k])) for k in out[0]}
    if not shape:
        fields["condition"], fields["singular"] = float(fields["condition"]), bool(fields["singular"])
    return OperationalSpace(frame="base" if frame_link is None else frame_link, rows=names, **fields)


def _operational_one(model, q, qd, link, point, frame_link, idx, max_condition, on_singular):
    J6, bias6, Rf, _ = _bias_one(model, q, qd, link, point, frame_link)
    J, Jdot_qd = _to_frame(Rf, J6)[idx], _to_frame(Rf, bias6)[idx]
    M = mass_matrix(model, q)
    g = gravity_torques(model, q)
    Cqd = nonlinear_effects(model, q, qd) - g
    L = np.linalg.cholesky(M)
    Y = np.linalg.solve(L, J.T)                              # Y = L^-1 J^T (L lower triangular)
    Lambda_inv = Y.T @ Y                                     # J M^-1 J^T
    condition = _condition(Lambda_inv)
    singular = not condition <= max_condition
    if singular:
        if on_singular == "raise":
            raise SingularityError(
                "link %r is at a singular pose for rows %s: cond(J M^-1 J^T) = %.3g > max_condition %.3g "
                "(the operational-space inertia is unbounded there; choose fewer rows, move away from the "
                "singularity or pass on_singular='flag')"
                % (link, ", ".join(ROW_NAMES[i] for i in idx), condition, max_condition))
        Lambda = np.linalg.pinv(Lambda_inv, rcond=1.0 / max_condition, hermitian=True)
    else:
        Lambda = np.linalg.inv(Lambda_inv)                   # eq. 3.52
    Lambda = 0.5 * (Lambda + Lambda.T)
    Jbar = np.linalg.solve(L.T, Y) @ Lambda                  # eq. 3.60: M^-1 J^T = L^-T Y
    mu = Jbar.T @ Cqd - Lambda @ Jdot_qd                     # eq. 3.53
    rho = Jbar.T @ g                                         # eq. 3.54
    return dict(J=J, Jdot_qd=Jdot_qd, Lambda=Lambda, Lambda_inv=Lambda_inv, mu=mu, rho=rho,
                Jbar=Jbar, condition=np.float64(condition), singular=np.bool_(singular))


def _condition(A):
    s = np.linalg.svd(A, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


def jacobian_derivative_times_qd(model, q, qd, link, point=(0.0, 0.0, 0.0), *, frame="base", rows="all",
                                 data=None, out=None):
    """``Jdot qd``: the acceleration of the point (linear rows) and of its link
    (angular rows) when ``qdd = 0``, expressed in ``frame``; (..., m).

    On a fixed base in the base frame with all rows, the compiled recursion of
    :func:`robot_dynamics.algorithms.task_space.frame_jdot_qd` (``data=``,
    ``out=`` (..., 6): nothing allocated for one state); else the base-frame
    derivative of the Jacobian's columns: ``d/dt a_k = w_k x a_k`` and
    ``d/dt (a_k x (x - o_k)) = d/dt a_k x (x - o_k) + a_k x (v_x - v_ok)``.
    """
    if model.root_joint is None and frame == "base" and isinstance(rows, str) and rows == "all":
        return frame_jdot_qd(model, q, qd, link, point, data=data, out=out)
    idx, _ = _rows(rows)
    x = checks.point(point)
    frame_link = _frame_link(model, link, frame)
    shape, Q, QD = _states(model, q, qd)
    res = np.empty((Q.shape[0], len(idx)))
    for i in range(Q.shape[0]):
        _, bias6, Rf, _ = _bias_one(model, Q[i], QD[i], link, x, frame_link)
        res[i] = _to_frame(Rf, bias6)[idx]
    res = res.reshape(shape + (len(idx),))
    if out is None:
        return res
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == res.shape and out.flags.writeable):
        raise InputError("out must be a writable float64 array of shape %s, got %s"
                         % (res.shape, getattr(out, "shape", type(out).__name__)))
    out[...] = res
    return out


def dynamically_consistent_inverse(model, q, link, point=(0.0, 0.0, 0.0), *, frame="base", rows="all",
                                   max_condition=MAX_CONDITION):
    """``Jbar = M^-1 J^T Lambda`` (Handbook eq. 3.60), (..., nv, m): the
    generalized inverse of J that maps task velocity changes to the joint
    velocity changes of least kinetic energy; ``J Jbar = 1``."""
    return operational_space(model, q, None, link, point, frame=frame, rows=rows,
                             max_condition=max_condition).Jbar


# ---------------------------------------------------------------------------
# Craig's Cartesian form (eq. 6.99)
# ---------------------------------------------------------------------------

def cartesian_dynamics(model, q, qd, link, point=(0.0, 0.0, 0.0), *, frame="base", rows="all",
                       max_condition=MAX_CONDITION):
    """Craig's ``F = M_x(q) xdd + V_x(q, qd) + G_x(q)`` (eq. 6.91, 6.99) for a square J.

    ``M_x = J^-T M J^-1``, ``V_x = J^-T (V - M J^-1 Jdot qd)``, ``G_x = J^-T G``,
    with J written in ``frame`` and ``Jdot = d/dt J`` of that written form
    (Craig eqs. 6.95-6.97; in a moving frame this includes the frame's
    rotation, see the module docstring). The rows must number nv.

    Returns:
        ``(M_x (m, m), V_x (m,), G_x (m,))`` for one state (q (nq,), qd (nv,)).

    Raises:
        SingularityError: cond(J M^-1 J^T) above ``max_condition``.
    """
    idx, names = _rows(rows)
    if len(idx) != model.nv:
        raise InputError("Craig's Cartesian form needs a square Jacobian: %d rows (%s) for %d degrees of freedom; "
                         "use operational_space() for m < n" % (len(idx), ", ".join(names), model.nv))
    shape, Q, QD = _states(model, q, qd)
    if shape != ():
        raise InputError("q and qd must each be one state (%d and %d values), got the batch shape %s"
                         % (model.nq, model.nv, shape))
    q, qd = Q[0], QD[0]
    x = checks.point(point)
    frame_link = _frame_link(model, link, frame)
    J6, bias6, Rf, wf = _bias_one(model, q, qd, link, x, frame_link)
    v6 = J6 @ qd
    # d/dt (R^T J) qd = R^T (Jdot qd - w_f x (J qd)) for each 3-row block (Rdot^T = -R^T [w_f x]).
    Jdot_qd = np.concatenate([Rf.T @ (bias6[:3] - np.cross(wf, v6[:3])),
                              Rf.T @ (bias6[3:] - np.cross(wf, v6[3:]))])[idx]
    J = _to_frame(Rf, J6)[idx]
    M = mass_matrix(model, q)
    G = gravity_torques(model, q)
    V = nonlinear_effects(model, q, qd) - G
    Lambda_inv = J @ np.linalg.solve(M, J.T)
    condition = _condition(Lambda_inv)
    if not condition <= max_condition:
        raise SingularityError(
            "link %r is at a singular pose for rows %s: cond(J M^-1 J^T) = %.3g > max_condition %.3g; "
            "Craig's M_x, V_x, G_x are unbounded there" % (link, ", ".join(names), condition, max_condition))
    JinvT = np.linalg.inv(J).T
    Mx = JinvT @ M @ np.linalg.inv(J)
    Vx = JinvT @ (V - M @ np.linalg.solve(J, Jdot_qd))
    Gx = JinvT @ G
    return 0.5 * (Mx + Mx.T), Vx, Gx


def cartesian_configuration_space_form(model, q, link, point=(0.0, 0.0, 0.0), *, frame="base", rows="all",
                                       max_condition=MAX_CONDITION):
    """Craig's Cartesian configuration-space torque equation (eq. 6.105):

        tau = J^T M_x xdd + B_x [qd qd] + C_x [qd^2] + G

    ``J^T V_x = V - M J^-1 Jdot qd`` is a quadratic form in qd; B_x (n x
    n(n-1)/2, products qd_j qd_k with j < k in Craig's eq. 6.64 order) and
    C_x (n x n, squares) are its coefficients, read off exactly from
    :func:`cartesian_dynamics` at unit velocities (as
    :func:`robot_dynamics.configuration_space_form` does for V). Like Craig
    (example 6.7), B_x and C_x depend on q only; G is the joint-space G.

    Returns:
        ``(M_x (n, n), B_x (n, n(n-1)/2), C_x (n, n), G (n,))`` for one state.
    """
    from .config_space import velocity_pairs
    n = model.nv
    E = np.eye(n)

    J = operational_space(model, q, None, link, point, frame=frame, rows=rows, max_condition=max_condition).J

    def JtVx(qd):
        return J.T @ cartesian_dynamics(model, q, qd, link, point, frame=frame, rows=rows,
                                        max_condition=max_condition)[1]

    Mx = cartesian_dynamics(model, q, np.zeros(n), link, point, frame=frame, rows=rows,
                            max_condition=max_condition)[0]
    columns = [JtVx(E[j]) for j in range(n)]
    C = np.column_stack(columns)
    pairs = velocity_pairs(n)
    B = np.zeros((n, len(pairs)))
    for p, (j, k) in enumerate(pairs):
        B[:, p] = JtVx(E[j] + E[k]) - columns[j] - columns[k]
    return Mx, B, C, gravity_torques(model, q)
