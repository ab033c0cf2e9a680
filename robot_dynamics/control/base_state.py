"""The base state of a floating or planar robot to and from nav_msgs/Odometry (no ROS needed).

A floating or planar model (``model.root_joint``, docs/FLOATING-BASE.md)
needs the base part of ``q`` and ``v`` besides the joint states. ROS has
them in nav_msgs/Odometry, whose conventions (REP-105, the message's own
comments) are the library's:

- ``pose.pose``: the pose of the frame ``child_frame_id`` (the base) in
  ``header.frame_id`` (a fixed frame such as ``odom``, taken as the world of
  the model: gravity, the ``gravity`` parameter, is expressed in it, so its
  z axis must point up for the default gravity);
- ``twist.twist``: the linear velocity of the base origin and the angular
  velocity, both **in the base frame** (``child_frame_id``), which is the
  base part of ``v`` (Pinocchio's convention, the library's).

So the floating ``q`` root is ``(x, y, z, qx, qy, qz, qw)`` = position and
orientation, ``v`` root ``(vx, vy, vz, wx, wy, wz)`` = linear and angular
twist. A planar root is ``(x, y, theta)`` and ``(vx, vy, wz)``: the pose
must lie in the plane (tilt and offset from it within
:data:`PLANAR_TOLERANCE`), the out-of-plane twist components (``vz``,
``wx``, ``wy``) are dropped, as the model has no such motion. A root
placement of the URDF (a ``world`` link attached through a placed floating
or planar joint) is taken into account both ways: the message has the
base's pose in the fixed frame, ``q`` its pose relative to the placement.

What is refused (:class:`~robot_dynamics.errors.InputError`, naming the
field, what came and what was expected): a ``child_frame_id`` other than the
model's base link (:func:`base_link`; its pose and twist would be those of
another frame, and an empty one says nothing), a non-finite value, an
orientation quaternion whose norm is not within the library's
:data:`~robot_dynamics.model.configuration.QUATERNION_TOLERANCE` (1e-2)
of 1 (a zero quaternion among them; within it, it is normalised), a
non-planar pose for a planar base.

:class:`BaseState` keeps the latest accepted state and its reception time
and says whether it is fresh, the rule dynamics_node applies to the base
as to the joints (``joint_state_timeout``). :func:`odometry_values` is the
other way, for simulator_node.
"""
import math

import numpy as np

from ..errors import InputError
from ..model.configuration import QUATERNION_TOLERANCE, base_pose, matrix_quaternion, quaternion_matrix

#: Largest tilt [rad] of a planar base's pose out of its plane, and largest
#: offset [m] along the plane's normal, accepted (the pose is then projected).
PLANAR_TOLERANCE = 1e-2


def base_link(model):
    """The link the root joint of a floating or planar ``model`` moves: the frame
    of the base's pose and twist (Odometry's ``child_frame_id``).

    ``model.base_link`` is the URDF's root link, which is that link when the
    root joint was added by ``load_urdf(root_joint=...)``, and the ``world``
    link when the URDF has its own floating or planar joint.
    """
    if model.root_joint is None:
        raise InputError('robot %r has a fixed base: it has no base state' % model.name)
    for joint in model.joints.values():
        if joint.type == model.root_joint:        # the only floating or planar joint (load_urdf)
            return joint.child
    return model.base_link


def _finite(name, values):
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise InputError('%s has a non-finite value: %s' % (name, values.tolist()))
    return values


def _unit(quat):
    """(4,) unit quaternion (x, y, z, w) of an orientation within the tolerance of unit norm."""
    quat = _finite('pose.orientation', quat)
    n = math.sqrt(float(quat @ quat))
    if not abs(n - 1.0) <= QUATERNION_TOLERANCE:
        raise InputError('pose.orientation (x, y, z, w) = %s has norm %.6g; expected a unit quaternion '
                         '(norm within %g of 1)' % (np.round(quat, 6).tolist(), n, QUATERNION_TOLERANCE))
    return quat / n


def _relative_to_placement(model, R, p):
    """Pose (R, p) in the fixed frame -> pose relative to the root placement (what q holds)."""
    T = model.root_placement
    if np.array_equal(T, np.eye(4)):
        return R, p
    Rt, pt = T[:3, :3], T[:3, 3]
    return Rt.T @ R, Rt.T @ (p - pt)


def root_state(model, position, orientation, linear, angular):
    """The base part of ``q`` and ``v`` from a base pose and twist (Odometry's conventions).

    Args:
        model: a floating or planar model.
        position: (3,) base origin in the fixed frame [m].
        orientation: (4,) quaternion (x, y, z, w), fixed frame <- base.
        linear, angular: (3,) base twist in the base frame [m/s], [rad/s].

    Returns:
        (q_root (root_nq,), v_root (root_nv,)): floating ``(x, y, z, qx, qy,
        qz, qw)``, ``(vx, vy, vz, wx, wy, wz)``; planar ``(x, y, theta)``,
        ``(vx, vy, wz)``.

    Raises:
        InputError: see the module doc.
    """
    p = _finite('pose.position', position)
    quat = _unit(orientation)
    lin, ang = _finite('twist.linear', linear), _finite('twist.angular', angular)
    if model.root_joint == 'floating':
        q = np.empty(7)
        if np.array_equal(model.root_placement, np.eye(4)):
            q[:3], q[3:] = p, quat
        else:
            R, q[:3] = _relative_to_placement(model, quaternion_matrix(quat), p)
            q[3:] = matrix_quaternion(R)
        return q, np.concatenate([lin, ang])
    if model.root_joint == 'planar':
        R, p = _relative_to_placement(model, quaternion_matrix(quat), p)
        tilt = math.acos(min(1.0, max(-1.0, float(R[2, 2]))))
        if tilt > PLANAR_TOLERANCE or abs(p[2]) > PLANAR_TOLERANCE:
            raise InputError('the pose is not in the plane of the planar base: tilted by %.4g rad and %.4g m off '
                             'it (at most %g each)' % (tilt, abs(p[2]), PLANAR_TOLERANCE))
        theta = math.atan2(R[1, 0], R[0, 0])
        return np.array([p[0], p[1], theta]), np.array([lin[0], lin[1], ang[2]])
    raise InputError('robot %r has a fixed base: it has no base state' % model.name)


def odometry_state(model, msg, frame):
    """:func:`root_state` of a nav_msgs/Odometry-like ``msg`` whose ``child_frame_id`` must be ``frame``
    (:func:`base_link`)."""
    if msg.child_frame_id != frame:
        raise InputError('child_frame_id is %r; expected %r, the base link of the model (the pose and twist '
                         'must be those of the base, the twist in its frame)' % (msg.child_frame_id[:100], frame))
    pose, twist = msg.pose.pose, msg.twist.twist
    o, lin, ang = pose.orientation, twist.linear, twist.angular
    return root_state(model, (pose.position.x, pose.position.y, pose.position.z), (o.x, o.y, o.z, o.w),
                      (lin.x, lin.y, lin.z), (ang.x, ang.y, ang.z))


def odometry_values(model, q, v):
    """Base pose and twist of the state ``(q, v)`` in Odometry's conventions (the inverse of :func:`root_state`).

    Args:
        model: a floating or planar model.
        q: (nq,) configuration; v: (nv,) velocity.

    Returns:
        (position (3,) [m], orientation (4,) (x, y, z, w), linear (3,) [m/s],
        angular (3,) [rad/s]): the base pose in the fixed frame, the twist in
        the base frame.
    """
    if model.root_joint == 'floating' and np.array_equal(model.root_placement, np.eye(4)):
        quat = q[3:7] / np.linalg.norm(q[3:7])
        position = q[:3].copy()
    else:
        R, position = base_pose(model, q)
        quat = matrix_quaternion(R)
    if model.root_joint == 'floating':
        return position, quat, v[:3].copy(), v[3:6].copy()
    return position, quat, np.array([v[0], v[1], 0.0]), np.array([0.0, 0.0, v[2]])


def full_state(model, q_root, v_root, q_joints, v_joints=None):
    """``(q (nq,), v (nv,))`` of the root part and the joints (``v_joints`` None: zeros)."""
    q = np.empty(model.nq)
    q[:model.root_nq], q[model.root_nq:] = q_root, q_joints
    v = np.zeros(model.nv)
    v[:model.root_nv] = v_root
    if v_joints is not None:
        v[model.root_nv:] = v_joints
    return q, v


class BaseState:
    """The latest accepted base state of a floating or planar model, and whether it is fresh.

    Args:
        model: a floating or planar model.
        timeout_ns: a state older than this (since its reception) is stale [ns].

    Attributes:
        q, v: (root_nq,), (root_nv,) the latest accepted root state.
        frame: the base link the messages must name (:func:`base_link`).
        known: a state has been accepted (and not forgotten since).
        received_ns: reception time of the latest accepted state [ns].
        accepted, rejected: message counts; ``problem`` the last rejection.
    """

    def __init__(self, model, timeout_ns):
        self.model = model
        self.frame = base_link(model)
        self.timeout_ns = int(timeout_ns)
        self.q = np.zeros(model.root_nq)
        self.v = np.zeros(model.root_nv)
        self.known = False
        self.received_ns = 0
        self.accepted = self.rejected = 0
        self.problem = ''
        self.fixed_frame = ''

    def update(self, msg, now_ns):
        """Take one Odometry message received at ``now_ns``; None, or the problem (then nothing changed)."""
        try:
            q, v = odometry_state(self.model, msg, self.frame)
        except InputError as exc:
            self.rejected += 1
            self.problem = str(exc)
            return self.problem
        self.q[:], self.v[:] = q, v
        self.known = True
        self.received_ns = now_ns
        self.fixed_frame = msg.header.frame_id
        self.accepted += 1
        return None

    def update_from(self, old):
        """Carry over the state of ``old``, a BaseState of the same base (a payload, a new description)."""
        for name in ('q', 'v', 'known', 'received_ns', 'accepted', 'rejected', 'problem', 'fixed_frame'):
            setattr(self, name, getattr(old, name))

    def fresh(self, now_ns):
        """A state came within the timeout before ``now_ns``."""
        return self.known and now_ns - self.received_ns <= self.timeout_ns

    def age(self, now_ns):
        """Seconds since the latest accepted state (inf if none)."""
        return (now_ns - self.received_ns) * 1e-9 if self.known else math.inf

    def forget(self):
        """Never use the current state again (after a timeout)."""
        self.known = False
