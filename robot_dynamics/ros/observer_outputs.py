"""dynamics_node's outputs of the momentum observer: ~/external_torque, ~/external_wrench and ~/collision."""
import math

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from robot_dynamics_interfaces.msg import Collision

from .cdr import JointStateWriter

#: QoS of ~/collision: reliable, and the latest event kept for late subscribers (the current state).
COLLISION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ObserverOutputs:
    """The publishers of the observer's outputs on ``node`` (``wrench``: ~/external_wrench too; ``collision``:
    ~/collision too); ``events``: publisher keyword arguments (the QoS-event callbacks)."""

    def __init__(self, node, *, wrench, collision, events):
        self.node = node
        self.pub_ext = node.create_publisher(JointState, '~/external_torque', 10, event_callbacks=events)
        self.pub_wrench = (node.create_publisher(WrenchStamped, '~/external_wrench', 10, event_callbacks=events)
                           if wrench else None)
        self.pub_collision = (node.create_publisher(Collision, '~/collision', COLLISION_QOS, event_callbacks=events)
                              if collision else None)
        self.n_collisions = 0
        self.writer = self.view = None

    def set_joints(self, names, link):
        """The joints of ~/external_torque and the link of ~/external_wrench (or None)."""
        self.names = tuple(names)
        self.writer, self.view = JointStateWriter(names), np.zeros(len(names))
        self.wrench_msg = WrenchStamped()
        self.wrench_msg.header.frame_id = link or ''

    def publish(self, stamped, head, monitor, q, busy):
        """The outputs of ``monitor``'s latest (finite) residual at the joint state ``stamped`` (its
        serialized header ``head``), at positions ``q``; ``busy``: no wrench now (a payload fit runs batch
        kernels and numba forbids two at once)."""
        self.view[:] = monitor.residual
        self.pub_ext.publish(self.writer.serialize(head, self.view))
        # The wrench costs about 0.1 ms (Jacobian, link pose, pseudo-inverse): only for a listener.
        if self.pub_wrench is not None and self.pub_wrench.get_subscription_count() and not busy:
            w = monitor.wrench(q)
            if math.isfinite(w.sum()):
                msg = self.wrench_msg
                msg.header.stamp.sec, msg.header.stamp.nanosec = stamped.sec, stamped.nanosec
                f, n = msg.wrench.force, msg.wrench.torque
                f.x, f.y, f.z, n.x, n.y, n.z = w.tolist()
                self.pub_wrench.publish(msg)
        if monitor.event is not None and self.pub_collision is not None:
            self._collision(stamped, monitor)

    def _collision(self, stamped, monitor):
        names = self.names
        over = [names[i] for i in monitor.over()]
        event = Collision(collision=bool(monitor.event), name=list(names),
                          external_torque=monitor.residual.tolist(), threshold=monitor.thresholds.tolist(),
                          joints_over=over)
        event.header.stamp.sec, event.header.stamp.nanosec = stamped.sec, stamped.nanosec
        self.pub_collision.publish(event)
        log = self.node.get_logger()
        if monitor.event:
            self.n_collisions += 1
            log.warning('collision: external torque over the threshold at %s (%s)' % (
                ', '.join(over), ', '.join('%.3g' % monitor.residual[names.index(j)] for j in over)))
        else:
            log.info('collision cleared')

