"""command_watchdog: deactivates the effort controller when the torque commands stop.

A ``forward_command_controller`` re-applies its last command for as long as
it is active. dynamics_node, on a clean stop, sends a zero command and can
deactivate its controller itself (its ``controller_manager`` parameter); a
node that dies without cleaning up (SIGKILL, a segfault, a hang) cannot.
This small node, started beside it by ``gravity_compensation.launch.py``,
watches the command topic and, when no command came for
``command_timeout``, asks ``<controller_manager>/switch_controller`` to
deactivate the controller (strictness BEST_EFFORT: one already inactive is
no error) and logs why and what the manager answered.

    ros2 run robot_dynamics command_watchdog --ros-args \\
        -p command_topic:=effort_controller/commands -p controller_name:=effort_controller
    python -m robot_dynamics.ros.command_watchdog --ros-args -p command_timeout:=0.1

Parameters (read once at start):

- ``command_topic`` (``effort_controller/commands``): the std_msgs/Float64MultiArray
  topic dynamics_node publishes and the controller reads (reliable, as a
  forward_command_controller subscribes); relative: in this node's namespace.
- ``controller_manager`` (``controller_manager``): the manager's node name;
  relative: in this node's namespace.
- ``controller_name`` (``effort_controller``): the controller to deactivate.
- ``command_timeout`` (0.1 s, > 0): the longest gap between two commands.

Behaviour: the watchdog arms at the first command (before it nothing is
applied, so nothing is done). When the commands stop for ``command_timeout``
it sends one deactivation and logs an error naming the topic, the gap and
the reason (dynamics_node stopped, crashed or hung), then the manager's
answer. If the service is not available it says so and tries again every
``command_timeout`` while the commands stay away; a request left unanswered
for :data:`ANSWER_WAIT` is sent again. When commands come again it re-arms
and warns that the controller stays inactive until someone activates it
(``ros2 control switch_controllers --activate ...``). The gap is checked
after every message and at least every :data:`POLL_PERIOD` (or a tenth of
the timeout, if shorter), on the monotonic clock, so a deactivation follows
the last command after ``command_timeout`` plus at most that period plus
the service round trip. docs/NODES.md gives the figures measured.

Light on purpose: rclpy, std_msgs and :mod:`.controller_switch` only; no
model, no dynamics. SIGINT or SIGTERM end it cleanly (exit 0); a bad
parameter ends it with status 2 and the reason.
"""
import math
import time

import rclpy
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from ..errors import ParameterError
from .controller_switch import ControllerSwitch, SwitchUnavailable

#: Parameter defaults.
DEFAULTS = {
    'command_topic': 'effort_controller/commands',
    'controller_manager': 'controller_manager',
    'controller_name': 'effort_controller',
    'command_timeout': 0.1,
}

#: [s] longest time between two checks of the gap when no message comes.
POLL_PERIOD = 0.005

#: [s] a deactivation request unanswered this long is sent again (Fast DDS can drop a response).
ANSWER_WAIT = 1.0

#: QoS of the command subscription: reliable and volatile, as forward_command_controller subscribes.
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


def check_timeout(value):
    """``command_timeout`` as a float [s]; ParameterError unless a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError('command_timeout is %r (%s); expected seconds, a number > 0, e.g. 0.1'
                             % (value, type(value).__name__))
    if not math.isfinite(value) or value <= 0:
        raise ParameterError('command_timeout is %r; expected seconds > 0, e.g. 0.1 (10 periods at '
                             '100 Hz, 100 at 1 kHz)' % (value,))
    return float(value)


class CommandWatchdog(Node):
    """The watchdog node; :func:`main` spins it and calls :meth:`check` after every event."""

    def __init__(self, **kwargs):
        super().__init__('command_watchdog', **kwargs)
        values = {}
        for name, default in DEFAULTS.items():
            descriptor = ParameterDescriptor(dynamic_typing=isinstance(default, float),
                                             description=_DESCRIPTIONS[name])
            try:
                values[name] = self.declare_parameter(name, default, descriptor).value
            except InvalidParameterTypeException as exc:
                raise ParameterError('%s: %s' % (name, exc)) from None
        for name in ('command_topic', 'controller_manager', 'controller_name'):
            if not isinstance(values[name], str) or not values[name].strip():
                raise ParameterError('%s is %r; expected a non-empty name' % (name, values[name]))
        self.timeout = check_timeout(values['command_timeout'])
        self.poll_period = min(POLL_PERIOD, self.timeout / 10.0)
        try:
            self.switch = ControllerSwitch(self, values['controller_manager'], values['controller_name'])
        except SwitchUnavailable as exc:
            raise ParameterError(str(exc)) from None
        self.controller = values['controller_name']
        self.service = self.resolve_service_name(self.switch.service_name)
        self.subscription = self.create_subscription(Float64MultiArray, values['command_topic'],
                                                     self._on_command, COMMAND_QOS)
        self.topic = self.subscription.topic_name
        self.last_command = None      # time.monotonic() of the last command; None before the first
        self.commands = 0
        self.tripped = False          # the commands stopped and the deactivation was asked for
        self.pending = None           # the Future of the deactivation request in flight
        self.sent_at = None           # when it was sent
        self.next_try = None          # when to try again, the service being unavailable
        self.deactivations = 0        # answers received

    # --- commands ---------------------------------------------------------------------
    def _on_command(self, msg):
        now = time.monotonic()
        first = self.last_command is None
        self.last_command = now
        self.commands += 1
        if first:
            self.get_logger().info('first command on %s: armed; %s is deactivated through %s when no command '
                                   'comes for %.3f s' % (self.topic, self.controller, self.service, self.timeout))
            if not self.switch.ready():
                self.get_logger().warn('%s is not available yet: a deactivation would wait for it'
                                       % self.service)
        elif self.tripped:
            self.tripped = False
            self.next_try = None
            self.get_logger().warn('commands on %s again: watching again; %s stays inactive until someone '
                                   'activates it (ros2 control switch_controllers --activate %s)'
                                   % (self.topic, self.controller, self.controller))

    # --- the gap ---------------------------------------------------------------------------
    def check(self, now=None):
        """Act on the gap since the last command and on the manager's answer; called by :func:`main`."""
        now = time.monotonic() if now is None else now
        if self.pending is not None:
            self._check_answer(now)
        if self.last_command is None:
            return
        gap = now - self.last_command
        if gap < self.timeout:
            return
        if not self.tripped:
            self.tripped = True
            self.get_logger().error('no command on %s for %.3f s (timeout %.3f s): dynamics_node stopped, '
                                    'crashed or hung; deactivating %s through %s'
                                    % (self.topic, gap, self.timeout, self.controller, self.service))
            self._request(now, gap)
        elif self.pending is None and self.next_try is not None and now >= self.next_try:
            self._request(now, gap)

    def _request(self, now, gap):
        if not self.switch.ready():
            self.next_try = now + self.timeout
            self.get_logger().error('%s is not available (no controller_manager?): %s NOT deactivated; trying '
                                    'again every %.3f s while no command comes (none for %.3f s)'
                                    % (self.service, self.controller, self.timeout, gap))
            return
        self.next_try = None
        self.pending = self.switch.deactivate()
        self.sent_at = now

    def _check_answer(self, now):
        future = self.pending
        if future.done():
            self.pending = None
            self.deactivations += 1
            line = self.switch.describe(future)
            if self.switch.ok(future):
                self.get_logger().error('%s, %.3f s after the last command on %s'
                                        % (line, now - self.last_command, self.topic))
            else:
                self.get_logger().error('%s: the controller may still apply the last command' % line)
        elif now - self.sent_at > ANSWER_WAIT:
            self.switch.client.remove_pending_request(future)
            self.pending = None
            self.get_logger().error('%s did not answer within %.1f s: asking again' % (self.service, ANSWER_WAIT))
            if self.tripped:
                self._request(now, now - self.last_command)


_DESCRIPTIONS = {
    'command_topic': 'std_msgs/Float64MultiArray topic of the effort commands (relative: in the namespace)',
    'controller_manager': 'name of the controller_manager node (relative: in the namespace)',
    'controller_name': 'the controller deactivated when the commands stop',
    'command_timeout': '[s] > 0: longest gap between two commands before the controller is deactivated',
}


def main(args=None):
    """Run the watchdog until SIGINT or SIGTERM (exit 0); a bad parameter exits with status 2."""
    import os
    import signal
    import sys

    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions

    from .spin import close, make_executor, spin_until_stopped

    signal.signal(signal.SIGTERM, signal.default_int_handler)     # KeyboardInterrupt until it spins
    # Fast DDS over UDP only (unless the user chose the transports): a process killed while it writes into
    # the controller_manager's shared-memory port keeps that port's lock, and a request sent through that port
    # then waits for the port's health check (up to 1 s; NODES.md, 'A stopped process on the same host'). The
    # watchdog's deactivation is sent exactly then: measured 0.395 s after the last command once in a test run
    # of SIGKILL, against 0.10 s otherwise.
    os.environ.setdefault('FASTDDS_BUILTIN_TRANSPORTS', 'UDPv4')
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = None
    try:
        try:
            node = CommandWatchdog()
        except ParameterError as exc:
            rclpy.logging.get_logger('command_watchdog').fatal(str(exc))
            rclpy.try_shutdown()
            sys.exit(2)
        executor = make_executor()
        executor.add_node(node)
        node.get_logger().info('watching %s (timeout %.3f s, controller %s, %s); spinning in %s'
                               % (node.topic, node.timeout, node.controller, node.service,
                                  type(executor).__name__))
        stopped_by = spin_until_stopped(node, executor, node.poll_period, node.check)
        if stopped_by:
            node.get_logger().info('%s: stopping' % stopped_by)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        close(node, executor)


if __name__ == '__main__':
    main()
