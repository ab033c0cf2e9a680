"""dynamics_node's joint-state inputs beside ``joint_states``: the extra topics and the held joints
(:mod:`robot_dynamics.control.joint_sources` decides; this module subscribes and logs)."""
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from ..control.joint_sources import JointSources, held_positions
from .cdr import JointStateReader


class JointInputs:
    """The ``extra_joint_state_topics`` subscriptions of ``node`` (a DynamicsNode) and its held joints;
    ``warn(text)``: the node's throttled warning, ``now_ns()``: its clock [ns]."""

    def __init__(self, node, warn, now_ns):
        self.node, self.warn, self.now_ns = node, warn, now_ns
        p = node.p
        self.sources = JointSources(held_positions(p.held_joints, p.held_positions), p.extra_joint_state_topics,
                                    p.extra_joint_state_timeout * 1e9)
        self.reader = JointStateReader()
        self.topic = node.resolve_topic_name('joint_states')
        self.extra_messages = 0

    def subscribe(self):
        """One best-effort subscription (accepts every publisher) per extra topic, serialized like joint_states."""
        quiet = SubscriptionEventCallbacks(use_default_callbacks=False)
        for topic in self.node.p.extra_joint_state_topics:
            self.node.create_subscription(JointState, topic, lambda data, t=topic: self._on_extra(data, t),
                                          QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT),
                                          raw=True, event_callbacks=quiet)

    def attach(self, merger, staleness):
        """A new merger: hold its held joints; warn of the held names the model lacks."""
        unknown = self.sources.attach(merger, staleness)
        if unknown:
            self.node.get_logger().warning('held_joints names %s, which the model does not have (its joints: %s): '
                                           'ignored' % (', '.join(unknown), ', '.join(merger.joint_names)))

    def waiting(self, now_ns):
        """A joint state of the main stream waits for joints that have no position: warn once."""
        text = self.sources.waiting(self.node.merger, now_ns, self.topic)
        if text:
            self.node.get_logger().warning(text)

    def _on_extra(self, data, topic):
        node = self.node
        self.extra_messages += 1
        if not node.ready:
            return
        try:
            msg = self.reader.read(data)
        except Exception as exc:            # malformed bytes (cdr.CdrError, or rclpy's)
            node.stats.n_bad += 1
            return self.warn('%s message ignored: %s' % (topic, exc))
        problem = self.sources.merge(node.merger, node.staleness, msg.name, msg.position, msg.velocity, msg.effort,
                                     self.now_ns())
        if problem:
            node.stats.n_bad += 1
            self.warn('%s %s' % (topic, problem))
