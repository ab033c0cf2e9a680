"""Impulsive dynamics of a point contact: the velocity jump of an impact.

Handbook of Robotics (2nd ed., 2016), sec. 3.3.4 "Impact model": an
impulse f' on the robot changes its velocity by a step,

    M (qd+ - qd-) = J^T f'                    (eqs. 3.56, 3.57)

Contact model (a stated rule, not a full contact law):

- frictionless point contact: the impulse on the link is ``p n`` along the
  contact normal n, at the contact point, with ``p >= 0`` (a push, never a
  pull); no tangential impulse;
- Newton's kinematic restitution on the normal velocity of the contact
  point: ``v_n+ = -e v_n-`` with ``v_n = n . J_p qd`` and e in [0, 1]
  (e = 0: plastic, the point stops along n; e = 1: elastic, kinetic energy
  is kept);
- no impulse when the point already separates (``v_n- >= 0``);
- loops are kept at the velocity level: ``J_c qd+ = 0`` (:func:`loop_jacobian`),
  their impulsive forces ``J_c^T Lambda`` join the contact's.

With K the mechanism's free directions (``J_c K = 0``, the split of
:mod:`robot_dynamics.constraints.dynamics`; K = identity without loops),
``qd+ = K y`` and projecting the impulse equation on K eliminates the
loop impulses (Handbook eq. 3.99 at the velocity level):

    K^T M K y = K^T (M qd- + j^T p)          (j = n^T J_p, 1 x n)
    p = -(1 + e) v_n- / (j K (K^T M K)^-1 K^T j^T)

which, without loops, is eqs. 3.55-3.60: ``Lambda Delta v = f'`` along n
with ``Lambda = 1 / (j M^-1 j^T)``, ``Delta qd = Jbar Delta v``. A velocity
``qd-`` that breaks the loops is first projected onto them (the plastic
loop impulse that an exact integrator would not need).
"""
import numpy as np

from .. import checks
from ..algorithms.crba import mass_matrix
from ..algorithms.task_space import jacobian
from ..errors import InputError, old_argument_order
from . import closure
from .closure import one_thread
from .assembly import mechanism_rank
from .dynamics import MAX_CONDITION, _solve_reduced, split


def _old_order(args, kwargs):
    """(model, q, qd, link, point, normal, e) -> (model, q, qd, normal, link, point, e)."""
    model, q, qd, link, rest = args[0], args[1], args[2], args[3], args[4:]
    point = rest[0] if rest else kwargs.pop("point")
    normal = rest[1] if len(rest) > 1 else kwargs.pop("normal")
    if len(rest) > 2:
        kwargs["restitution"] = rest[2]
    return (model, q, qd, normal, link, point), kwargs


@old_argument_order(3, _old_order, "impact(model, q, qd_minus, normal, link, point, restitution)")
@one_thread
def impact(model, q, qd_minus, normal, link, point, restitution=0.0, *, max_condition=MAX_CONDITION):
    """Velocity jump of a frictionless point impact on a link (Handbook sec. 3.3.4).

    Args:
        model: a model with or without loops; without loops a floating or
            planar base is accepted (qd then has ``nv`` values).
        q: (..., nq) configuration at the impact.
        qd_minus: (..., nv) velocity just before [rad/s, m/s].
        normal: (3,) contact normal in the base (world) frame, pointing from
            the obstacle into the link: the direction the impulse pushes the
            link. Normalised here.
        link: the link that is hit; point: (3,) contact point in the link's
            frame [m].
        restitution: e in [0, 1], Newton's coefficient on the normal velocity.
        max_condition: as in :func:`constrained_forward_dynamics`.

    Returns:
        ``(qd_plus, impulse)``: (..., nv) velocity just after and (..., 3)
        impulse on the link at the point [N s], base frame (``p n``, zero
        when the point separates).

    Raises:
        SingularityError: a singular loop configuration.
        InputError: bad shapes, restitution outside [0, 1], a zero normal.
    """
    e = float(restitution)
    if not 0.0 <= e <= 1.0:
        raise InputError("restitution must be in [0, 1], got %r" % (restitution,))
    x = checks.point(point)
    n = checks.point(normal, "normal")
    if not np.linalg.norm(n) > 0:
        raise InputError("normal must be a non-zero vector, got %r" % (normal,))
    n = n / np.linalg.norm(n)
    model.link_index(link)
    if model.loops:
        shape, (Q, QD) = closure._states(model, q, qd_minus)
        r = mechanism_rank(model)
    else:
        shape, (Q, QD) = _tree_states(model, q, qd_minus)
        r = 0
    QP, P = np.empty_like(QD), np.zeros((QD.shape[0], 3))
    for i in range(Q.shape[0]):
        M = mass_matrix(model, Q[i])
        j = n @ jacobian(model, Q[i], link, x)[:3]                         # v_n = j qd
        if model.loops:
            _, _, _, K = split(closure._jacobian(model, closure.frames(model, Q[i])), r, max_condition)
            Mr = K.T @ M @ K
            y = _solve_reduced(Mr, K.T @ M @ QD[i])                        # qd- projected on the loops
        else:
            K, Mr, y = np.eye(model.nv), M, QD[i].copy()
        jk = j @ K
        v_n = jk @ y
        inv_mass = jk @ _solve_reduced(Mr, jk)                             # 1 / Lambda along n
        p = 0.0
        if v_n < 0.0 and inv_mass > 0.0:
            p = -(1.0 + e) * v_n / inv_mass                                # v_n+ = -e v_n-
            y = y + _solve_reduced(Mr, jk * p)
        QP[i] = K @ y if model.loops else y
        P[i] = p * n
    return QP.reshape(shape + (model.nv,)), P.reshape(shape + (3,))


def _tree_states(model, q, qd):
    shape, (Q,) = _batch_q(model, q)
    V = checks.as_float_array(qd, "qd_minus")
    if V.shape[-1:] != (model.nv,):
        raise InputError("qd_minus has shape %s, expected (..., %d) (model nv)" % (V.shape, model.nv))
    try:
        V = np.broadcast_to(V, shape + (model.nv,)).reshape(-1, model.nv)
    except ValueError:
        raise InputError("qd_minus %s does not broadcast with q %s" % (V.shape, shape + (model.nq,))) from None
    checks.check_finite(q=Q, qd_minus=V)
    return shape, (Q, np.ascontiguousarray(V))


def _batch_q(model, q):
    a = checks.as_float_array(q, "q")
    if a.ndim == 0 or a.shape[-1] != model.nq:
        raise InputError("q has shape %s, expected (%d,) or (..., %d) (model nq)" % (a.shape, model.nq, model.nq))
    return a.shape[:-1], (np.ascontiguousarray(a.reshape(-1, model.nq)),)
