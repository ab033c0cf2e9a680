"""Loop-closure kinematics: the residual, Jacobian and bias of the closure joints.

Handbook of Robotics (Siciliano and Khatib eds., 2nd ed. 2016), sec. 3.6.2
"Loop constraints": a closure joint k between a predecessor p(k) (our
``parent`` link, closure frame A) and a successor s(k) (``child`` link,
frame B) constrains the relative motion of B with respect to A:

    velocity       Psi^T (v_s - v_p) = 0                   (eq. 3.100)
    Jacobian       v_s - v_p = J_k qd                      (eq. 3.104)
    acceleration   J_k qdd = a_p^vp - a_s^vp = -Jdot_k qd  (eqs. 3.106, 3.109)

with ``a^vp`` the velocity-product acceleration (the acceleration when
``qdd = 0``). The rows of one loop, in this order (``loop.rows`` of them):

- rows 0-2, all kinds: ``p_B - p_A`` [m], the closure frames' origins, in
  the base frame;
- revolute: rows 3, 4 ``[-y_A . z_B, x_A . z_B]`` (dimensionless, the sine
  of the tilt of z_B about x_A and about y_A); weld: those and row 5
  ``-x_A . y_B`` (the sine of the turn about z_A).

Each orientation row is ``s (a . b)`` with ``a`` an axis of frame A and
``b`` one of frame B, so its time derivative is exactly
``s (b x a) . (w_B - w_A)``: the Jacobian rows ``s (b x a)^T (Jw_B -
Jw_A)`` are the exact derivative of the residual at every q, and on the
closed loop ``s (b x a)`` is ``x_A``, ``y_A`` (and ``z_A``), so the rows
are the relative angular velocity of B about A's axes (the Handbook's
``Psi``). Its residual is the Handbook's position error p_e (eq. 3.111)
to first order. ``x_to_vec`` (eq. 3.112) is not used: its antisymmetric
part vanishes at every half turn, these rows only at isolated flips, which
:func:`robot_dynamics.assemble` refuses.

The constraint forces ``lam`` that go with these rows (``tau_c = J^T lam``,
eq. 3.96): rows 0-2 are the force [N] the parent exerts on the child at
the closure point, in the base frame; the orientation rows are the moments
[N m] about A's axes (x_A, y_A, z_A on the closed loop) that the parent
exerts on the child. The parent feels the opposite. :func:`loop_wrenches`
turns ``lam`` into one base-frame wrench per loop.
"""
import functools
import weakref
from typing import NamedTuple

import numpy as np

from .. import checks
from ..algorithms.dispatch import get_num_threads, set_num_threads
from ..algorithms.floating import require_fixed
from ..algorithms.kinematics import forward_kinematics
from ..errors import InputError
from ..model import PRISMATIC

# (sign s, axis index of A, axis index of B) of the orientation rows: s * (a . b).
ORIENTATION_ROWS = {"point": (), "revolute": ((-1.0, 1, 2), (1.0, 0, 2)),
                    "weld": ((-1.0, 1, 2), (1.0, 0, 2), (-1.0, 0, 1))}


def one_thread(f):
    """Run ``f`` with the kernels on one thread (restored after; numba's count is per calling thread).

    This layer calls the tree algorithms one state or a few at a time,
    where the thread pool's start-up would dominate (2.2-8 ms a call on two
    threads of a loaded 2-core machine against 0.012 ms on one, measured
    when a batch of one state still went through the pool; the dispatcher
    now runs such a batch on the calling thread, but not every algorithm
    has that path).
    """
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        old = get_num_threads()
        if old == 1:
            return f(*args, **kwargs)
        set_num_threads(1)
        try:
            return f(*args, **kwargs)
        finally:
            set_num_threads(old)
    return wrapper


def loop_rows(model):
    """Number of loop constraint rows m, the sum of ``loop.rows`` over ``model.loops``."""
    return sum(loop.rows for loop in model.loops)


def loop_slices(model):
    """dict loop name -> slice of that loop's rows in the stacked residual, Jacobian and lam."""
    out, k = {}, 0
    for loop in model.loops:
        out[loop.name] = slice(k, k + loop.rows)
        k += loop.rows
    return out


@one_thread
def loop_residual(model, q):
    """Loop-closure residual phi(q): zero when every loop is closed.

    Args:
        model: a fixed-base model with loops (``model.loops``).
        q: (..., nq) joint positions [rad, m].

    Returns:
        (..., m) with m = sum of the loops' rows, loop by loop in
        ``model.loops`` order: ``p_B - p_A`` [m, base frame] then the
        orientation rows (dimensionless; see the module docstring).
    """
    shape, Q = _states(model, q)
    out = np.array([_residual(model, frames(model, x)) for x in Q]).reshape(shape + (loop_rows(model),))
    return out


@one_thread
def loop_jacobian(model, q):
    """Loop-constraint Jacobian J(q) = d phi / dq (Handbook eq. 3.104, the matrix L of eq. 3.93).

    Args:
        model: a fixed-base model with loops.
        q: (..., nq) joint positions.

    Returns:
        (..., m, nq): ``J qd`` is the velocity of each loop's frame B
        relative to frame A (rows as :func:`loop_residual`, columns in
        ``model.joint_names`` order). Exactly the derivative of the
        residual at every q, closed or not. Redundant rows are kept (a
        planar loop written in 3-D has rank 2 of 3 or 5 rows).
    """
    shape, Q = _states(model, q)
    m = loop_rows(model)
    return np.array([_jacobian(model, frames(model, x)) for x in Q]).reshape(shape + (m, model.nq))


@one_thread
def loop_bias(model, q, qd):
    """``Jdot qd``: the loops' relative acceleration when qdd = 0 (Handbook eq. 3.106).

    The acceleration constraint is ``J qdd = -Jdot qd`` (eq. 3.109's ``l``).

    Args:
        q, qd: (..., nq) joint positions and velocities [rad, m, rad/s, m/s].

    Returns:
        (..., m) [m/s^2 for the position rows, 1/s^2 for the orientation rows].
    """
    shape, (Q, QD) = _states(model, q, qd)
    m = loop_rows(model)
    out = np.empty((Q.shape[0], m))
    for i in range(Q.shape[0]):
        out[i] = _bias(model, frames(model, Q[i]), QD[i])
    return out.reshape(shape + (m,))


@one_thread
def loop_wrenches(model, q, lam):
    """The constraint forces ``lam`` as one wrench per loop, in the base frame.

    Args:
        q: (..., nq) the state the forces belong to.
        lam: (..., m) loop constraint forces (rows as :func:`loop_residual`),
            e.g. from :func:`~robot_dynamics.constrained_forward_dynamics`.

    Returns:
        dict loop name -> (..., 6) ``[fx, fy, fz, nx, ny, nz]`` [N, N m]:
        the wrench the parent link exerts on the child link, with the moment
        about the child's closure point (frame B's origin), in base-frame
        coordinates. The parent feels the opposite wrench at frame A.
    """
    shape, Q = _states(model, q)
    m = loop_rows(model)
    lam = checks.as_float_array(lam, "lam")
    if lam.shape[-1:] != (m,):
        raise InputError("lam has shape %s, expected (..., %d): one value per loop constraint row" % (lam.shape, m))
    L = np.broadcast_to(lam, shape + (m,)).reshape(-1, m)
    out = {loop.name: np.zeros((Q.shape[0], 6)) for loop in model.loops}
    for i in range(Q.shape[0]):
        T = frames(model, Q[i]).closure
        for loop, (TA, TB), rows in zip(model.loops, T, loop_slices(model).values()):
            l = L[i, rows]
            out[loop.name][i, :3] = l[:3]
            for k, (s, a, b) in enumerate(ORIENTATION_ROWS[loop.kind]):
                out[loop.name][i, 3:] += l[3 + k] * s * np.cross(TB[:3, b], TA[:3, a])
    return {name: w.reshape(shape + (6,)) for name, w in out.items()}


# ---------------------------------------------------------------------------
# One state (the constraints layer's building blocks)
# ---------------------------------------------------------------------------
#
# One forward-kinematics call per state gives every body's pose; the loop
# rows then come from the bodies' motion axes in base-frame Plucker
# coordinates, s_k = [a_k; o_k x a_k] (revolute) or [0; a_k] (prismatic),
# summed along the two branches of each loop (Featherstone, *Rigid Body
# Dynamics Algorithms*, sec. 2.9 and 4.1): a body's velocity is
# V_k = sum_{j <= k} s_j u_j with u = G qd the bodies' joint rates (G the
# mimic coupling), and its velocity-product acceleration (qdd = 0) is
# A_k = sum_{j <= k} V_j x s_j u_j, since d/dt s_j = V_j x s_j (eq. 2.31).
# A point x of body k moves at v = v_O + w x x and accelerates (classically)
# at a = a_O + alpha x x + w x v, with (w, v_O) = V_k and (alpha, a_O) = A_k.
# Same results as ``jacobian`` and ``jacobian_derivative_times_qd`` at the
# closure points (tested), one FK call instead of four kernel calls and no
# per-call np.cross: 0.03 ms a state instead of 0.5 ms.

_TREES = weakref.WeakKeyDictionary()
# Levi-Civita symbol as a (9, 3) matrix: a x b = (a outer b).reshape(9) @ _EPS (one matmul for many pairs).
_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0
_EPS = _EPS.transpose(1, 2, 0).reshape(9, 3)


def _cross(a, b):
    """a x b row by row, (n, 3) x (n, 3) -> (n, 3); np.cross's checks cost more than the products here."""
    return (a[:, :, None] * b[:, None, :]).reshape(-1, 9) @ _EPS


class _Tree(NamedTuple):
    """Per-model constants of the loop kinematics (built once, :func:`_tree`). The loops' closure
    frames are numbered e = 2 k (A of loop k) and 2 k + 1 (B); their orientation rows r = 0.. in
    ``model.loops`` order."""
    body_links: tuple            # link name of each body's own frame
    axis: np.ndarray             # (nb, 3, 1) joint axes in the body frames
    prismatic: np.ndarray        # (nb, 1) bool, or None when there is no prismatic joint
    G: np.ndarray                # (nb, nv) the bodies' joint rates: u = G qd (mimic multipliers)
    path: np.ndarray             # (nb + 1, nb): path[k, j] = 1 if body j is on the path root..k; row -1: none
    end_links: tuple             # link of each closure frame e
    placement: np.ndarray        # (E, 4, 4) closure frame e in its link's frame
    ends: np.ndarray             # (E,) body of closure frame e (-1: a link fixed to the base)
    end_path: np.ndarray         # (E, nb) path[ends]
    position_rows: np.ndarray    # (L, 3) indices of each loop's rows 0-2 in the stacked rows
    orientation_rows: np.ndarray # (R,) indices of the orientation rows in the stacked rows
    row_loop: np.ndarray         # (R,) loop of each orientation row
    row_sign: np.ndarray         # (R, 1) s of the row s (a . b)
    row_a: np.ndarray            # (R,) axis index of a (frame A)
    row_b: np.ndarray            # (R,) axis index of b (frame B)
    m: int                       # rows in all (loop_rows)


def _tree(model):
    tree = _TREES.get(model)
    if tree is not None:
        return tree
    nb = model.nb
    path = np.zeros((nb + 1, nb))
    for k in range(nb):
        j = k
        while j >= 0:
            path[k, j] = 1.0
            j = int(model.parent[j])
    end_links = tuple(name for loop in model.loops for name in (loop.parent, loop.child))
    ends = np.array([model.link_body[model.link_index(name)] for name in end_links], dtype=np.int64)
    placement = np.array([P for loop in model.loops for P in (loop.parent_placement, loop.child_placement)])
    position, orientation, loop_of, sign, ia, ib = [], [], [], [], [], []
    row = 0
    for k, loop in enumerate(model.loops):
        position.append([row, row + 1, row + 2])
        row += 3
        for s, a, b in ORIENTATION_ROWS[loop.kind]:
            orientation.append(row)
            loop_of.append(k)
            sign.append(s)
            ia.append(a)
            ib.append(b)
            row += 1
    prismatic = (model.joint_type == PRISMATIC)[:, None]
    tree = _TREES[model] = _Tree(
        tuple(model.link_names[l] for l in model.body_link), np.array(model.axis, dtype=float)[:, :, None],
        prismatic if prismatic.any() else None, np.array(model.coupling, dtype=float), path, end_links,
        placement.reshape(-1, 4, 4), ends, path[ends], np.array(position, dtype=np.int64).reshape(-1, 3),
        np.array(orientation, dtype=np.int64), np.array(loop_of, dtype=np.int64),
        np.array(sign).reshape(-1, 1), np.array(ia, dtype=np.int64), np.array(ib, dtype=np.int64), row)
    return tree


class LoopKinematics:
    """The loops' kinematics at one configuration q, from one forward-kinematics pass.

    Built by :func:`loop_kinematics` (checked) or :func:`frames` (not). The
    rows are those of :func:`loop_residual`; each result is computed once and
    kept (the arrays are shared: copy them to change them).

    Attributes:
        q: (nq,) the configuration.
        C: (E, 4, 4) base-frame poses of the closure frames, A and B of each
            loop in turn (:attr:`closure` pairs them).
        S: (nb, 6) the bodies' motion axes ``[a; o x a]`` (prismatic
            ``[0; a]``), base frame.
    """
    __slots__ = ("model", "q", "C", "S", "_phi", "_J", "_parts")

    def __init__(self, model, q, C, S):
        self.model, self.q, self.C, self.S = model, q, C, S
        self._phi = self._J = self._parts = None

    @property
    def closure(self):
        """[(T_A, T_B)] of each loop, (4, 4) each."""
        return list(zip(self.C[0::2], self.C[1::2]))

    def residual(self):
        """(m,) phi(q), as :func:`loop_residual`."""
        if self._phi is None:
            self._phi = _residual(self.model, self)
        return self._phi

    def jacobian(self):
        """(m, nq) J(q), as :func:`loop_jacobian`."""
        if self._J is None:
            self._J, self._parts = _jacobian_parts(self.model, self)
        return self._J

    def bias(self, qd):
        """(m,) ``Jdot qd`` for the velocities qd (nq,), as :func:`loop_bias`."""
        self.jacobian()
        return _bias_of(self.model, self, self._parts, qd)


@one_thread
def loop_kinematics(model, q):
    """The loop residual, Jacobian and bias at one configuration from one kinematics pass.

    Args:
        model: a fixed-base model with loops.
        q: (nq,) one configuration [rad, m].

    Returns:
        :class:`LoopKinematics`: ``residual()``, ``jacobian()`` and
        ``bias(qd)`` equal :func:`loop_residual`, :func:`loop_jacobian` and
        :func:`loop_bias` at q, for the cost of one of them (what a control
        loop that needs several at each state calls).
    """
    shape, Q = _states(model, q)
    if shape:
        raise InputError("loop_kinematics takes one configuration (%d,), got q of shape %s" % (model.nq, np.shape(q)))
    return frames(model, Q[0].copy())


def frames(model, q):
    """:class:`LoopKinematics` of one state q (nq,), unchecked: closure frames and the bodies' motion axes."""
    tree = _tree(model)
    T = forward_kinematics(model, q)
    R = np.array([T[name] for name in tree.body_links])                     # (nb, 4, 4) body poses
    a = (R[:, :3, :3] @ tree.axis)[:, :, 0]
    S = np.empty((model.nb, 6))
    S[:, :3] = a
    S[:, 3:] = _cross(R[:, :3, 3], a)                                         # o x a
    if tree.prismatic is not None:
        S[:, 3:] = np.where(tree.prismatic, a, S[:, 3:])
        S[:, :3] = np.where(tree.prismatic, 0.0, a)
    C = np.array([T[name] for name in tree.end_links]).reshape(-1, 4, 4) @ tree.placement
    return LoopKinematics(model, q, C, S)


def _orientation_axes(tree, C):
    """(a, b) (R, 3): the axes of frames A and B that each orientation row s (a . b) takes."""
    return C[2 * tree.row_loop, :3, tree.row_a], C[2 * tree.row_loop + 1, :3, tree.row_b]


def _residual(model, F):
    tree = _tree(model)
    out = np.empty(tree.m)
    x = F.C[:, :3, 3]
    out[tree.position_rows] = x[1::2] - x[0::2]                              # p_B - p_A
    if tree.orientation_rows.size:
        a, b = _orientation_axes(tree, F.C)
        out[tree.orientation_rows] = tree.row_sign[:, 0] * np.sum(a * b, axis=1)      # s (a . b)
    return out


def _jacobian(model, F):
    return F.jacobian()


def _bias(model, F, qd):
    """Jdot qd at one state: the second derivative of the residual with qdd = 0."""
    return F.bias(qd)


def _jacobian_and_bias(model, F, qd):
    """(J (m, nv), Jdot qd (m,)) at one state."""
    return F.jacobian(), F.bias(qd)


def _jacobian_parts(model, F):
    """(J (m, nv), what the bias reuses: the closure frames' spatial Jacobians and axes)."""
    tree = _tree(model)
    nv = model.nv
    J = np.empty((tree.m, nv))
    if tree.m == 0:
        return J, None
    Js = (tree.end_path[:, :, None] * F.S).transpose(0, 2, 1) @ tree.G      # (E, 6, nv): [w; v_O] per frame
    x = F.C[:, :3, 3]
    Jw = Js[:, :3]
    Jv = Js[:, 3:] + _cross(np.repeat(-x, nv, axis=0),                      # v = v_O + w x x
                            Jw.transpose(0, 2, 1).reshape(-1, 3)).reshape(-1, nv, 3).transpose(0, 2, 1)
    J[tree.position_rows] = Jv[1::2] - Jv[0::2]                             # d/dt (p_B - p_A)
    a = b = n = None
    if tree.orientation_rows.size:                                           # d/dt s (a . b) = s (b x a) . (w_B - w_A)
        a, b = _orientation_axes(tree, F.C)
        n = tree.row_sign * _cross(b, a)
        J[tree.orientation_rows] = (n[:, None, :] @ (Jw[1::2] - Jw[0::2])[tree.row_loop])[:, 0]
    return J, (Js, x, a, b, n)


def _bias_of(model, F, parts, qd):
    """Jdot qd from the Jacobian's parts: the closure points' velocity-product accelerations."""
    tree = _tree(model)
    bias = np.empty(tree.m)
    if tree.m == 0:
        return bias
    Js, x, a, b, n = parts
    nb = model.nb
    su = F.S * (tree.G @ qd)[:, None]                                        # s_k u_k
    V = tree.path[:nb] @ su                                                  # (nb, 6) body velocities
    w, v = V[:, :3], V[:, 3:]
    c = _cross(np.concatenate([w, w, v]), np.concatenate([su[:, :3], su[:, 3:], su[:, :3]]))
    Ae = tree.end_path @ np.concatenate([c[:nb], c[nb:2 * nb] + c[2 * nb:]], axis=1)   # sum of V_k x s_k u_k
    Ve = Js @ qd                                                             # (E, 6) at the closure frames
    we, alpha = Ve[:, :3], Ae[:, :3]
    E = x.shape[0]
    wx = _cross(np.concatenate([we, alpha]), np.concatenate([x, x]))        # w x x, alpha x x
    acc = Ae[:, 3:] + wx[E:] + _cross(we, Ve[:, 3:] + wx[:E])               # a_O + alpha x x + w x v
    bias[tree.position_rows] = acc[1::2] - acc[0::2]                         # a_s^vp - a_p^vp (eq. 3.106)
    if tree.orientation_rows.size:
        # d/dt (b x a) . dw with b x a's derivative (w_B x b) x a + b x (w_A x a), expanded:
        # (w_B . a)(b . dw) - (w_A . b)(a . dw) - (a . b)(dw . dw), dw = w_B - w_A; from the Gram matrix.
        k = tree.row_loop
        X = np.stack([a, b, we[2 * k], we[2 * k + 1]], axis=1)              # (R, 4, 3): a, b, w_A, w_B
        g = X @ X.transpose(0, 2, 1)
        a_dw, b_dw = g[:, 0, 3] - g[:, 0, 2], g[:, 1, 3] - g[:, 1, 2]
        dw_dw = g[:, 3, 3] - 2.0 * g[:, 2, 3] + g[:, 2, 2]
        d_axis_dw = g[:, 3, 0] * b_dw - g[:, 2, 1] * a_dw - g[:, 0, 1] * dw_dw
        bias[tree.orientation_rows] = (tree.row_sign[:, 0] * d_axis_dw
                                       + np.sum(n * (alpha[2 * k + 1] - alpha[2 * k]), axis=1))
    return bias


def _states(model, *states):
    """Check the model (fixed base) and broadcast states to (B, nq) blocks."""
    require_fixed(model, "closed-loop (constrained) dynamics")
    names = ("q", "qd", "qdd", "tau")[:len(states)]
    shape, blocks = checks.batch(model, **dict(zip(names, states)))
    checks.check_finite(**dict(zip(names, blocks)))
    return shape, (blocks[0] if len(blocks) == 1 else blocks)
