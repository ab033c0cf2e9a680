"""dynamics_node's joint-state inputs beside ``joint_states``: the extra topics and the held joints
(:mod:`robot_dynamics.control.joint_sources` decides; this module subscribes and logs)."""
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from ..control.joint_sources import JointSources, held_positions
from .cdr import JointStateReader


class JointInputs:
    """The ``extra_joint_state_topics`` subscriptions and the held joints of dynamics_node.

    Args:
        node: the rclpy Node the subscriptions are made on (``create_subscription``, ``resolve_topic_name``).
        p: the parameters (``held_joints``, ``held_positions``, ``extra_joint_state_topics``,
            ``extra_joint_state_timeout``).
        log: the node's logger; ``warn(text)``: its throttled warning; ``now_ns()``: its clock [ns].
        stats: the node's Statistics (bad messages counted); ``pipeline()``: the TorqueLoop that fits the
            current model, or None.
    """

    def __init__(self, node, p, log, warn, now_ns, stats, pipeline):
        self.node, self.p, self.log, self.warn, self.now_ns = node, p, log, warn, now_ns
        self.stats, self.pipeline = stats, pipeline
        self.sources = JointSources(held_positions(p.held_joints, p.held_positions), p.extra_joint_state_topics,
                                    p.extra_joint_state_timeout * 1e9)
        self.reader = JointStateReader()
        self.topic = node.resolve_topic_name('joint_states')
        self.extra_messages = 0

    def subscribe(self):
        """One best-effort subscription (accepts every publisher) per extra topic, serialized like joint_states."""
        quiet = SubscriptionEventCallbacks(use_default_callbacks=False)
        for topic in self.p.extra_joint_state_topics:
            self.node.create_subscription(JointState, topic, lambda data, t=topic: self._on_extra(data, t),
                                          QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT),
                                          raw=True, event_callbacks=quiet)

    def attach(self, merger, staleness):
        """A new merger: hold its held joints; warn of the held names the model lacks."""
        unknown = self.sources.attach(merger, staleness)
        if unknown:
            self.log.warning('held_joints names %s, which the model does not have (its joints: %s): '
                                           'ignored' % (', '.join(unknown), ', '.join(merger.joint_names)))

    def waiting(self, merger, now_ns):
        """A joint state of the main stream waits for joints of ``merger`` that have no position: warn once."""
        text = self.sources.waiting(merger, now_ns, self.topic)
        if text:
            self.log.warning(text)

    def _on_extra(self, data, topic):
        self.extra_messages += 1
        pipeline = self.pipeline()
        if pipeline is None:
            return
        try:
            msg = self.reader.read(data)
        except Exception as exc:            # malformed bytes (cdr.CdrError, or rclpy's)
            self.stats.n_bad += 1
            return self.warn('%s message ignored: %s' % (topic, exc))
        problem = self.sources.merge(pipeline.merger, pipeline.staleness, msg.name, msg.position, msg.velocity,
                                     msg.effort, self.now_ns())
        if problem:
            self.stats.n_bad += 1
            self.warn('%s %s' % (topic, problem))
