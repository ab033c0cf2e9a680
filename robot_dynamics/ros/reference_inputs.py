"""dynamics_node's desired motion: ``~/trajectory`` (sampled from its start) and ``~/reference`` (a
streamed set-point, its first point held), both trajectory_msgs/JointTrajectory taken serialized, their
size checked before they are converted, and handed to the pipeline as a
:class:`robot_dynamics.control.trajectory.TrajectorySampler`."""
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.serialization import deserialize_message
from trajectory_msgs.msg import JointTrajectory

from ..control.joint_map import JointMapError
from ..control.trajectory import TrajectorySampler


class ReferenceInputs:
    """The two reference subscriptions, made on ``node`` (an rclpy Node).

    Args:
        p: the parameters (``max_trajectory_bytes``); stats: the node's Statistics (references, bad messages).
        pipeline: ``pipeline()`` -> the TorqueLoop that fits the model, or the text of why there is none.
        log: the node's logger; warn: its throttled warning; now_ns: its clock [ns].
    """

    def __init__(self, node, p, stats, pipeline, log, warn, now_ns):
        self.p, self.stats, self.pipeline, self.log, self.warn, self.now_ns = p, stats, pipeline, log, warn, now_ns
        quiet = SubscriptionEventCallbacks(use_default_callbacks=False)
        for topic, stream in (('~/trajectory', False), ('~/reference', True)):
            node.create_subscription(JointTrajectory, topic, lambda data, s=stream: self.take(data, s), 10,
                                     event_callbacks=quiet, raw=True)

    def take(self, data, stream):
        """A ~/trajectory (``stream`` False: sampled from its start) or ~/reference (the first point, held)."""
        topic = '~/reference' if stream else '~/trajectory'
        self.stats.n_references += 1
        if len(data) > self.p.max_trajectory_bytes:
            self.stats.n_bad += 1
            return self.warn('%s ignored: %d bytes, more than max_trajectory_bytes (%d)'
                             % (topic, len(data), self.p.max_trajectory_bytes))
        try:
            msg = deserialize_message(data, JointTrajectory)
        except Exception as exc:        # malformed CDR from a raw DDS writer
            self.stats.n_bad += 1
            return self.warn('%s ignored: cannot deserialize: %s' % (topic, exc))
        pipeline = self.pipeline()
        if isinstance(pipeline, str):
            # Like a joint state then: not malformed, only unusable for now.
            return self.warn('reference ignored: %s' % pipeline)
        if not msg.points:
            pipeline.set_reference(None, 0)
            return self.log.info('reference cleared (empty trajectory)')
        try:
            sampler = TrajectorySampler(pipeline.joint_names, msg, hold_first=stream)
        except JointMapError as exc:
            self.stats.n_bad += 1
            return self.warn('reference ignored: %s' % exc)
        start = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        pipeline.set_reference(sampler, start if (start and not stream) else self.now_ns(), stream)
