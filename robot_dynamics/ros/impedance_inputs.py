"""dynamics_node's impedance targets: ``~/target_pose`` (geometry_msgs/PoseStamped) and ``~/target_joints``
(sensor_msgs/JointState, by name) converted to arrays for the pipeline's
:class:`robot_dynamics.control.impedance_target.ImpedanceTarget`, which judges and holds them."""
from geometry_msgs.msg import PoseStamped
from rclpy.event_handler import SubscriptionEventCallbacks
from sensor_msgs.msg import JointState


class TargetInputs:
    """The two target subscriptions, made on ``node`` (an rclpy Node). ``target()``: the pipeline's
    ImpedanceTarget, or the text saying why there is none; ``warn(text)``: the node's throttled warning;
    ``now_ns()``: its clock [ns]."""

    def __init__(self, node, target, warn, now_ns):
        self.target, self.warn, self.now_ns = target, warn, now_ns
        quiet = SubscriptionEventCallbacks(use_default_callbacks=False)
        node.create_subscription(PoseStamped, '~/target_pose', self._on_pose, 10, event_callbacks=quiet)
        node.create_subscription(JointState, '~/target_joints', self._on_joints, 10, event_callbacks=quiet)

    def _target(self):
        target = self.target()
        if isinstance(target, str):
            self.warn('impedance target ignored: %s' % target)
            return None
        return target

    def _on_pose(self, msg):
        target = self._target()
        if target is None:
            return
        p, o = msg.pose.position, msg.pose.orientation
        problem = target.offer_pose(msg.header.frame_id, (p.x, p.y, p.z), (o.x, o.y, o.z, o.w), _stamp_ns(msg),
                                    self.now_ns())
        if problem:
            self.warn(problem)

    def _on_joints(self, msg):
        target = self._target()
        if target is None:
            return
        problem = target.offer_joints(list(msg.name), list(msg.position), _stamp_ns(msg), self.now_ns())
        if problem:
            self.warn(problem)


def _stamp_ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
