"""simulator_node's world bodies on TF (``world_file``; issue 35, point 3).

Each body of the world file is a frame named as in the file, child of the
simulator's world frame, which is the robot's base link (the frame of the
world file's poses, of ``~/markers`` and ``~/contact_markers``; a fixed-base
arm's base link is fixed in the world, REP 105). A body's frame is its
shape's frame (a free body's centre of mass at its origin; a box centred, a
cylinder and a capsule along z, the ground's x-y plane at its height):

    /tf_static (tf2_msgs/TFMessage; reliable, transient local, depth 1, as
        tf2_ros's StaticTransformBroadcaster and robot_state_publisher have
        it): the ground and the static bodies, one message with all of them,
        sent once for each model the node simulates.
    /tf (tf2_msgs/TFMessage; reliable, depth 100, as tf2_ros's
        TransformBroadcaster): the free bodies at the committed state, one
        message with all of them, at ``contact_rate`` with the other contact
        outputs and their stamp.

Absolute topics, as tf2_ros has them (a namespace does not move them; remap
them for a robot whose TF tree is namespaced). A world body may not be named
like a link of the robot (refused when the world is read: the tree would
have two parents for one frame).
"""
import numpy as np
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

from ..model.configuration import matrix_quaternion

TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)


class WorldFrames:
    """The /tf and /tf_static publishers of the world bodies (made when a world first has such bodies).

    Args:
        node: the rclpy node that owns the publishers.
    """

    def __init__(self, node):
        self.node = node
        self.pub = self.pub_static = None
        self.bodies, self.msg = None, None

    def bind(self, frame, world, bodies, stamp):
        """From now on the frames of ``world`` (a :class:`~robot_dynamics.contact.world.World`) and of the
        free bodies' state ``bodies`` (:class:`~robot_dynamics.contact.free_bodies.FreeBodies`), children
        of ``frame``; the static ones are published now, stamped ``stamp``."""
        static = list(world.static_shapes)
        if static:
            if self.pub_static is None:
                self.pub_static = self.node.create_publisher(TFMessage, "/tf_static", TF_STATIC_QOS)
            poses = np.array([s.placement for s in static])
            self.pub_static.publish(_message(frame, [s.name for s in static], poses[:, :3, 3],
                                             matrix_quaternion(poses[:, :3, :3]), stamp))
        self.bodies = bodies if len(bodies) else None
        if self.bodies is not None and self.pub is None:
            self.pub = self.node.create_publisher(TFMessage, "/tf", TF_QOS)
        self.msg = None if self.bodies is None else _message(frame, list(bodies.names), bodies.p,
                                                             bodies.quaternions(), stamp)

    def publish(self, stamp):
        """The free bodies' transforms at their current state, stamped ``stamp``."""
        if self.bodies is None:
            return
        for t, p, quat in zip(self.msg.transforms, self.bodies.p, self.bodies.quaternions()):
            _fill(t, p, quat, stamp)
        self.pub.publish(self.msg)


def _message(frame, names, positions, quaternions, stamp):
    """TFMessage of the frames ``names`` in ``frame``: positions (n, 3) [m], quaternions (n, 4) (x, y, z, w)."""
    msg = TFMessage()
    for name, p, quat in zip(names, positions, quaternions):
        t = TransformStamped(child_frame_id=name)
        t.header.frame_id = frame
        _fill(t, p, quat, stamp)
        msg.transforms.append(t)
    return msg


def _fill(t, p, quat, stamp):
    t.header.stamp = stamp
    v, r = t.transform.translation, t.transform.rotation
    v.x, v.y, v.z = (float(x) for x in p)
    r.x, r.y, r.z, r.w = (float(x) for x in quat)
