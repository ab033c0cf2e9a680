"""Task-space kinematics of a point on a link, compiled and allocation-free: its pose,
its Jacobian, ``Jdot qd`` and the operational-space inertia Lambda.

Conventions (Handbook of Robotics, sec. 2.8 and 3.5.4; the generated C's frame
functions follow the same):

- the frame is a link frame of the model (any name of ``model.link_names``,
  fixed-merged links included), moved to ``point`` (3,) [m] in its own axes;
- pose: (4, 4) homogeneous transform base <- frame;
- Jacobian: (6, nv), rows ``[v; w]`` (linear first): the velocity of the point
  and the angular velocity of its link, in base-frame axes (Pinocchio's
  ``getFrameJacobian(..., LOCAL_WORLD_ALIGNED)``); columns in
  ``model.joint_names`` order (a root's coordinates first);
- ``Jdot qd``: (6,) the point's classical acceleration ``[a; alpha]`` at
  ``qdd = 0`` [m/s^2, rad/s^2], base-frame axes (Pinocchio's
  ``getFrameClassicalAcceleration(..., LOCAL_WORLD_ALIGNED)`` with zero
  joint accelerations), by the exact recursion of :mod:`.task_kernels`;
- Lambda: (6, 6) ``(J M^-1 J^T)^-1`` [kg, kg m, kg m^2] through Cholesky factors
  and triangular solves (no inverse of M).

Each function takes one state or a batch (leading axes), and ``data=`` (a
:class:`~robot_dynamics.Data`) and ``out=`` like the joint-space calls: one
C-contiguous float64 state with both given allocates nothing on a fixed base.
Floating and planar roots take the Python path of the existing functions
(world-aligned axes; checked against Pinocchio too).
"""
import weakref

import numpy as np

from .. import checks
from . import kinematics
from .crba import mass_matrix
from .dispatch import Algorithm, route
from .kernels import all_finite, jit, nbodies, work_size
from . import task_kernels as K
from ..errors import InputError, SingularityError

_ORIGIN = np.zeros(3)
_ORIGIN.flags.writeable = False


_FRAMES = weakref.WeakKeyDictionary()      # model -> {link: (body, placement row)}: the link look-up once


def _frame(model, link, point):
    """(body, placement row (12,), point (3,)) of the frame: the kernels' arguments. A point
    given as a float64 (3,) array is passed as it is (the entries check that it is finite;
    on failure the general path's checks.point says what is wrong)."""
    frames = _FRAMES.get(model)
    if frames is None:
        frames = _FRAMES[model] = {}
    try:
        frame = frames.get(link)
    except TypeError:                                           # unhashable: link_index says what came
        frame = None
    if frame is None:
        l = model.link_index(link)                              # ValueError naming the links
        frame = frames[link] = (int(model.link_body[l]), model.link_pose_rows[l])
    if point is None:
        return frame[0], frame[1], _ORIGIN
    if type(point) is np.ndarray and point.dtype == np.float64 and point.shape == (3,):
        return frame[0], frame[1], point
    return frame[0], frame[1], checks.point(point)


def link_pose(model, q, link, point=None, *, data=None, out=None):
    """Pose of a link frame (moved to ``point``) in the base frame.

    Args:
        q: (..., nq) joint positions (a root's coordinates first).
        link: link name; point: (3,) [m] in the link frame, None for its origin.
        data: optional :class:`~robot_dynamics.Data`; out: optional (..., 4, 4) float64 array.

    Returns:
        (..., 4, 4) homogeneous transform base <- frame [m].
    """
    body, P, x = _frame(model, link, point)
    if out is not None and data is not None and data.model is model:         # the control loop
        try:
            if K.pose_one(data.table, q, body, P, x, out, data.work) == 0:
                return out
        except TypeError:
            pass
    return route(POSE, model, (q,), data=data, out=out, tail=(4, 4), extra=(body, P, checks.point(x), link))


def jacobian(model, q, link, point=(0.0, 0.0, 0.0), *, data=None, out=None):
    """Geometric Jacobian of a point on a link (Pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian).

    Args:
        q: (..., nq) joint positions.
        link: link name (any link, fixed-merged links included).
        point: (3,) point in the link frame [m]; the link origin by default.
        data, out: as in :func:`~robot_dynamics.rnea` (out: (..., 6, nv)).

    Returns:
        (..., 6, nv) with rows ``[vx, vy, vz, wx, wy, wz]``: the velocity of the
        point and the angular velocity of the link, base-frame (world-frame on a
        root) axes; columns in ``model.joint_names`` order; all zeros for links
        fixed to the base.
    """
    body, P, x = _frame(model, link, point)
    if out is not None and data is not None and data.model is model:         # the control loop
        try:
            if K.jacobian_one(data.table, q, body, P, x, out, data.work) == 0:
                return out
        except TypeError:
            pass
    return kinematics.jacobian(model, q, link, checks.point(x), data=data, out=out)


def frame_jdot_qd(model, q, qd, link, point=(0.0, 0.0, 0.0), *, data=None, out=None):
    """``Jdot qd`` (..., 6): the classical acceleration ``[a; alpha]`` of the point
    [m/s^2, rad/s^2] at ``qdd = 0``, base-frame axes (Pinocchio's
    ``getFrameClassicalAcceleration`` LOCAL_WORLD_ALIGNED with a = 0); the exact
    recursion of :mod:`.task_kernels`, fixed bases. The public function is
    :func:`robot_dynamics.jacobian_derivative_times_qd` (roots, other frames and rows)."""
    body, P, x = _frame(model, link, point)
    if out is not None and data is not None and data.model is model:         # the control loop
        try:
            if K.jdot_qd_one(data.table, q, qd, body, P, x, out, data.work) == 0:
                return out
        except TypeError:
            pass
    return route(JDOT_QD, model, (q, qd), data=data, out=out, tail=(6,), extra=(body, P, checks.point(x), link))


def operational_space_inertia(model, q, link, point=(0.0, 0.0, 0.0), *, data=None, out=None):
    """Operational-space inertia ``Lambda = (J M^-1 J^T)^-1`` of a point on a link (Handbook eq. 3.52).

    Computed as ``M = L L^T``, ``Y = L^-1 J^T``, ``J M^-1 J^T = Y^T Y = C C^T``,
    ``Lambda = C^-T C^-1`` (Cholesky factors and triangular solves, no inverse of M),
    with J of :func:`jacobian` (rows ``[v; w]``, base-frame axes).

    Args:
        q: (..., nq) joint positions.
        link, point: the point, as in :func:`jacobian`.
        data, out: as in :func:`jacobian` (out: (..., 6, 6)).

    Returns:
        (..., 6, 6) symmetric positive definite [kg (linear rows), kg m^2 (angular rows)].

    Raises:
        SingularityError: ``J M^-1 J^T`` is not positive definite (a singular pose, or
            fewer than 6 degrees of freedom move the link), or so close to it that a
            Cholesky pivot falls below 1e-9 of its diagonal entry (condition number above
            about 1e9); :func:`robot_dynamics.operational_space` takes fewer rows and flags
            near-singular poses.
    """
    body, P, x = _frame(model, link, point)
    if out is not None and data is not None and data.model is model:         # the control loop
        try:
            status = K.inertia_one(data.table, q, body, P, x, out, data.work)
            if status == 0:
                return out
            if status == 3:
                checks.point(x)                                 # a non-finite point, not a singular pose
                _singular(model, link)
        except TypeError:
            pass
    return route(INERTIA, model, (q,), data=data, out=out, tail=(6, 6), extra=(body, P, checks.point(x), link))


def _singular(model, link):
    raise SingularityError("the operational-space inertia of %r is unbounded at this pose: J M^-1 J^T is not "
                           "positive definite (a singular pose, or fewer than 6 degrees of freedom of %r move "
                           "the link); rd.operational_space takes fewer rows" % (link, model.name))


# --- batches (one thread: a state costs microseconds) --------------------------------------
def _pose_kernel(D, Q, body, P, x, link, T):
    return _pose_batch(D, Q, body, P, x, T)


def _pose_serial(D, Q, body, P, x, link, T, W):
    K.pose_states(D, Q, body, P, x, T, W)


@jit
def _pose_batch(D, Q, body, P, x, T):
    K.pose_states(D, Q, body, P, x, T, np.empty(work_size(nbodies(D), Q.shape[1])))
    return all_finite(T) and all_finite(Q)


@jit
def _jdot_batch(D, Q, QD, body, P, x, A):
    K.jdot_qd_states(D, Q, QD, body, P, x, A, np.empty(work_size(nbodies(D), Q.shape[1])))
    return all_finite(A) and all_finite(Q) and all_finite(QD)


@jit
def _inertia_batch(D, Q, body, P, x, Lam):
    """NaN rows where J M^-1 J^T is not positive definite (the caller raises)."""
    K.inertia_states(D, Q, body, P, x, Lam, np.empty(work_size(nbodies(D), Q.shape[1])))
    return all_finite(Q)


def _jdot_serial(D, Q, QD, body, P, x, link, A, W):
    K.jdot_qd_states(D, Q, QD, body, P, x, A, W)


def _jdot_kernel(D, Q, QD, body, P, x, link, A):
    return _jdot_batch(D, Q, QD, body, P, x, A)


def _inertia_kernel(D, Q, body, P, x, link, Lam):
    if not _inertia_batch(D, Q, body, P, x, Lam):
        return False
    if np.isnan(Lam).any():
        raise SingularityError("the operational-space inertia of %r is unbounded at %d of the states: J M^-1 J^T "
                               "is not positive definite there" % (link, int(np.isnan(Lam[:, 0, 0]).sum())))
    return all_finite(Lam)


def _inertia_serial(D, Q, body, P, x, link, Lam, W):
    if not K.inertia_states(D, Q, body, P, x, Lam, W):
        raise SingularityError("the operational-space inertia of %r is unbounded at this pose: J M^-1 J^T is not "
                               "positive definite (a singular pose, or fewer than 6 degrees of freedom move the "
                               "link); rd.operational_space takes fewer rows" % (link,))


# --- on a floating or planar root: the existing Python paths (world-aligned axes) ----------
def _pose_on_root(model, x, f_ext, data, out, tail, extra):
    body, P, point, link = extra
    T = kinematics.link_pose(model, x[0], link).copy()
    T[..., :3, 3] += T[..., :3, :3] @ point
    return _into(out, T)


def _jdot_on_root(model, x, f_ext, data, out, tail, extra):
    raise InputError("frame_jdot_qd serves fixed bases; rd.jacobian_derivative_times_qd takes %r's %s root"
                     % (model.name, model.root_joint))


def _inertia_on_root(model, x, f_ext, data, out, tail, extra):
    body, P, point, link = extra
    J = kinematics.jacobian(model, x[0], link, point)
    L = np.linalg.cholesky(mass_matrix(model, x[0]))
    Y = np.linalg.solve(L, np.swapaxes(J, -1, -2))                # L^-1 J^T (a general solve: numpy has no
    A = np.swapaxes(Y, -1, -2) @ Y                                # batched triangular one)
    try:
        C = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        _singular(model, link)
    if not np.all(np.diagonal(C, axis1=-2, axis2=-1) ** 2 > 1e-9 * np.abs(np.diagonal(A, axis1=-2, axis2=-1))):
        _singular(model, link)                                     # the compiled path's pivot bound
    Z = np.linalg.solve(C, np.broadcast_to(np.eye(6), C.shape))
    return _into(out, np.swapaxes(Z, -1, -2) @ Z)


def _into(out, value):
    if out is None:
        return value
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == value.shape
            and out.flags.writeable):
        raise InputError("out must be a writable float64 array of shape %s, got %s"
                         % (value.shape, getattr(out, "shape", type(out).__name__)))
    out[...] = value
    return out


POSE = Algorithm(None, _pose_kernel, ("q",), serial=_pose_serial, on_root=_pose_on_root)
JDOT_QD = Algorithm(None, _jdot_kernel, ("q", "qd"), serial=_jdot_serial, on_root=_jdot_on_root)
INERTIA = Algorithm(None, _inertia_kernel, ("q",), serial=_inertia_serial, on_root=_inertia_on_root)
