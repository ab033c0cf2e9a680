"""dynamics_node's ros2_control command: the std_msgs/Float64MultiArray of the command torques on
``command_topic`` (reliable, volatile: what a forward_command_controller subscribes with), whether anyone
listens (:class:`robot_dynamics.control.statistics.Listeners`), and the defined end: one zero command and
the effort controller deactivated (:mod:`.controller_switch`)."""
import time

from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from ..control.statistics import Listeners
from ..errors import ParameterError
from .cdr import Float64ArrayWriter
from .controller_switch import ControllerSwitch, SwitchUnavailable


class CommandOutput:
    """The command of ``node`` on ``topic``; with ``controller_manager`` set, it owns ``controller_name``
    (deactivated on :meth:`stop`). ``view``: the (m,) command torques [N m or N] that :meth:`send` sends."""

    def __init__(self, node, topic, controller_manager='', controller_name=''):
        self.node = node
        self.pub = node.create_publisher(Float64MultiArray, topic,
                                         QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.switch = None
        if controller_manager:
            # Made now, so its service is matched long before the stop that needs it.
            try:
                self.switch = ControllerSwitch(node, controller_manager, controller_name)
            except SwitchUnavailable as exc:
                raise ParameterError("parameter 'controller_manager' is set: %s" % exc) from None
        self.listeners = Listeners()
        self.writer = self.view = None
        self.sent = 0
        self.stopped = False                # after the defined end: no command any more

    def size(self, view):
        """Send ``view`` (the pipeline's (m,) command array) from now on."""
        if self.writer is None or len(self.view) != len(view):
            self.writer = Float64ArrayWriter(len(view))
        self.view = view

    def send(self):
        """Publish the command (nothing after the end)."""
        if self.stopped or self.view is None:
            return
        self.pub.publish(self.writer.serialize(self.view))
        self.sent += 1

    def zero(self):
        """Send one all-zero command; False if there is none to send."""
        if self.stopped or self.view is None:
            return False
        self.view[:] = 0.0
        self.send()
        return True

    def check_listeners(self, t):
        """At wall time ``t`` [s] (every 0.1 s): warn once when commands went to no subscriber for 1 s."""
        if t < self.listeners.due:
            return
        silence = self.listeners.check(t, self.pub.get_subscription_count(), self.sent)
        if silence is not None:
            self.node.get_logger().warning(
                'commands have gone to %s for %.1f s and nothing subscribes to it: no controller reads them (is the '
                'effort controller loaded, in this namespace: %s?)' % (self.pub.topic_name, silence,
                                                                       self.node.get_namespace()))

    def unheard(self):
        return self.listeners.unheard(time.monotonic())

    def stop(self, why):
        """One zero command, and ``controller_name`` deactivated if owned (the Future of the deactivation, or
        None); logged with ``why``."""
        sent = self.zero()
        future = self.switch.deactivate() if self.switch is not None else None
        self.node.get_logger().info('%s: %s%s' % (
            why, 'sent one zero command' if sent else 'no command to zero',
            ', deactivating %s through %s' % (self.switch.controller, self.switch.service_name) if future else ''))
        return future

    def report_stop(self, future):
        log = self.node.get_logger().info if self.switch.ok(future) else self.node.get_logger().error
        log(self.switch.describe(future))
