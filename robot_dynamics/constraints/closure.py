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

import numpy as np

from ..algorithms import checks
from ..algorithms.dispatch import get_num_threads, set_num_threads
from ..algorithms.floating import require_fixed
from ..algorithms.kinematics import forward_kinematics, jacobian
from ..analysis.operational import jacobian_derivative_times_qd
from ..errors import InputError

# (sign s, axis index of A, axis index of B) of the orientation rows: s * (a . b).
ORIENTATION_ROWS = {"point": (), "revolute": ((-1.0, 1, 2), (1.0, 0, 2)),
                    "weld": ((-1.0, 1, 2), (1.0, 0, 2), (-1.0, 0, 1))}


def one_thread(f):
    """Run ``f`` with the kernels on one thread (restored after; numba's count is per calling thread).

    This layer calls the tree algorithms one state at a time; ``jacobian``
    and ``forward_kinematics`` run even one state through their
    multi-threaded batch kernel, whose start-up dominates: 2.2-8 ms per
    ``jacobian`` call on two threads of this loaded 2-core machine, 0.012 ms
    on one (the four-bar).
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
    return np.array([_jacobian(model, x, frames(model, x)) for x in Q]).reshape(shape + (m, model.nq))


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
        T = frames(model, Q[i])
        out[i] = _bias(model, Q[i], QD[i], T, _jacobian(model, Q[i], T))
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
        T = frames(model, Q[i])
        for loop, (TA, TB), rows in zip(model.loops, T, loop_slices(model).values()):
            l = L[i, rows]
            out[loop.name][i, :3] = l[:3]
            for k, (s, a, b) in enumerate(ORIENTATION_ROWS[loop.kind]):
                out[loop.name][i, 3:] += l[3 + k] * s * np.cross(TB[:3, b], TA[:3, a])
    return {name: w.reshape(shape + (6,)) for name, w in out.items()}


# ---------------------------------------------------------------------------
# One state (the constraints layer's building blocks)
# ---------------------------------------------------------------------------

def frames(model, q):
    """[(T_A, T_B)] (4, 4) base-frame poses of each loop's closure frames at one state q (nq,)."""
    T = forward_kinematics(model, q)
    return [(T[loop.parent] @ loop.parent_placement, T[loop.child] @ loop.child_placement) for loop in model.loops]


def _residual(model, T):
    out = []
    for loop, (TA, TB) in zip(model.loops, T):
        out.extend(TB[:3, 3] - TA[:3, 3])
        out.extend(s * (TA[:3, a] @ TB[:3, b]) for s, a, b in ORIENTATION_ROWS[loop.kind])
    return np.array(out)


def _jacobian(model, q, T):
    rows = []
    for loop, (TA, TB) in zip(model.loops, T):
        JA = jacobian(model, q, loop.parent, loop.parent_placement[:3, 3])
        JB = jacobian(model, q, loop.child, loop.child_placement[:3, 3])
        rows.append(JB[:3] - JA[:3])                                         # d/dt (p_B - p_A)
        for s, a, b in ORIENTATION_ROWS[loop.kind]:                          # d/dt s (a . b)
            rows.append((s * np.cross(TB[:3, b], TA[:3, a]) @ (JB[3:] - JA[3:]))[None])
    return np.concatenate(rows) if rows else np.zeros((0, model.nq))


def _bias(model, q, qd, T, J):
    """Jdot qd at one state: the second derivative of the residual with qdd = 0."""
    out = []
    for loop, (TA, TB) in zip(model.loops, T):
        aA = jacobian_derivative_times_qd(model, q, qd, loop.parent, loop.parent_placement[:3, 3])
        aB = jacobian_derivative_times_qd(model, q, qd, loop.child, loop.child_placement[:3, 3])
        out.extend(aB[:3] - aA[:3])                                          # a_s^vp - a_p^vp (eq. 3.106)
        if not ORIENTATION_ROWS[loop.kind]:
            continue
        wA = jacobian(model, q, loop.parent)[3:] @ qd
        wB = jacobian(model, q, loop.child)[3:] @ qd
        for s, a, b in ORIENTATION_ROWS[loop.kind]:
            ea, eb = TA[:3, a], TB[:3, b]
            d_axis = np.cross(np.cross(wB, eb), ea) + np.cross(eb, np.cross(wA, ea))   # d/dt (b x a)
            out.append(s * (d_axis @ (wB - wA) + np.cross(eb, ea) @ (aB[3:] - aA[3:])))
    return np.array(out)


def _states(model, *states):
    """Check the model (fixed base) and broadcast states to (B, nq) blocks."""
    require_fixed(model, "closed-loop (constrained) dynamics")
    names = ("q", "qd", "qdd", "tau")[:len(states)]
    shape, blocks = checks.batch(model, **dict(zip(names, states)))
    checks.check_finite(**dict(zip(names, blocks)))
    return shape, (blocks[0] if len(blocks) == 1 else blocks)
