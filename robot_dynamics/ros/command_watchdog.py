"""command_watchdog: keeps the effort controller inactive while the torque commands are absent.

A ``forward_command_controller`` re-applies its last command for as long as
it is active. dynamics_node, on a clean stop, sends a zero command and can
deactivate its controller itself (its ``controller_manager`` parameter); a
node that dies without cleaning up (SIGKILL, a segfault, a hang) cannot.
This small node, started beside it by ``gravity_compensation.launch.py``,
watches the command topic and, when no command came for
``command_timeout``, asks ``<controller_manager>/switch_controller`` to
deactivate the controller (strictness BEST_EFFORT: one already inactive is
no error) and logs why and what the manager answered. While the commands
stay away it holds the line: it reads the controllers' states from
``<controller_manager>/activity`` and deactivates the controller again as
soon as someone activates it (UR's ``controller_stopper`` does when the
robot program runs again), and it retries a refused or failed deactivation
until the manager reports the controller inactive.

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

Behaviour (the decisions are :class:`robot_dynamics.control.controller_guard.ControllerGuard`'s): the
watchdog arms at the first command (before it nothing is applied, so nothing is done). When the commands
stop for ``command_timeout`` it sends one deactivation and logs an error naming the topic, the gap and
the reason (dynamics_node stopped, crashed or hung), then the manager's answer. A refusal (``ok =
false``), a failed call or no answer within 1 s is retried after 50 ms, doubling up to 1 s, until the
manager answers ok or reports the controller inactive; the third failure in a row is logged as FATAL and
turns the /diagnostics status to ERROR. If the service is not available it says so and tries again
every ``command_timeout``. While the commands stay away, a report of the controller becoming active
sends the deactivation at once, and the log says that the manager does not say who activated it. When
commands come again it re-arms and warns that the controller stays inactive until someone activates it
(``ros2 control switch_controllers --activate ...``). The gap is checked after every message and at
least every :data:`POLL_PERIOD` (or a tenth of the timeout, if shorter), on the monotonic clock.
docs/NODES.md gives the figures measured.

Publishes diagnostic_msgs/DiagnosticArray on ``/diagnostics`` every :data:`DIAGNOSTICS_PERIOD` and at
every change, status ``<node>: <controller_name>``: OK while not armed or while commands flow, WARN while
they are absent (the controller inactive, or being deactivated), ERROR once the deactivation failed three
times in a row and the controller is not known inactive.

Light on purpose: rclpy, std_msgs, diagnostic_msgs and :mod:`.controller_switch` only; no
model, no dynamics. SIGINT or SIGTERM end it cleanly (exit 0); a bad
parameter ends it with status 2 and the reason.
"""
import math
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from ..control.controller_guard import ANSWER_WAIT, ESCALATE_AFTER, ControllerGuard, describe_state
from ..errors import ParameterError
from .param_files import read as read_schema
from .controller_switch import (ControllerSwitch, SwitchUnavailable, activity_qos, activity_type,
                                controller_state)

#: The parameters (config/params/command_watchdog.yaml): defaults, and the descriptions `ros2 param describe` shows.
_SCHEMA = read_schema('command_watchdog.yaml')[1]
DEFAULTS = {e['name']: e['default_value'] for e in _SCHEMA}
_DESCRIPTIONS = {e['name']: ' '.join(e['description'].split()) for e in _SCHEMA}

#: [s] longest time between two checks of the gap when no message comes.
POLL_PERIOD = 0.005

#: [s] period of the /diagnostics status (also published at every change of its level or message).
DIAGNOSTICS_PERIOD = 1.0

#: QoS of the command subscription: reliable and volatile, as forward_command_controller subscribes.
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

#: DiagnosticStatus levels by ControllerGuard.summary's level (0, 1, 2).
_LEVELS = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)


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
            descriptor = ParameterDescriptor(dynamic_typing=isinstance(default, float), read_only=True,
                                             description=_DESCRIPTIONS[name])   # read once, here
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
        self.guard = ControllerGuard(self.timeout)
        self.pending = None           # the Future of the deactivation request in flight
        self.subscription = self.create_subscription(Float64MultiArray, values['command_topic'],
                                                     self._on_command, COMMAND_QOS)
        self.topic = self.subscription.topic_name
        self.activity = None
        activity = activity_type()
        if activity is not None:
            self.activity = self.create_subscription(activity, self.switch.activity_topic, self._on_activity,
                                                     activity_qos())
        self.activity_name = self.activity.topic_name if self.activity else None
        self.diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.status_name = '%s: %s' % (self.get_fully_qualified_name().lstrip('/'), self.controller)
        self.create_timer(DIAGNOSTICS_PERIOD, self.publish_diagnostics)

    @property
    def commands(self):
        return self.guard.commands

    # --- events --------------------------------------------------------------------------------------
    def _on_command(self, msg):
        note = self.guard.command(time.monotonic())
        if note == 'armed':
            self.get_logger().info('first command on %s: armed; %s is deactivated through %s when no command '
                                   'comes for %.3f s, and kept inactive while none comes (states from %s)'
                                   % (self.topic, self.controller, self.service, self.timeout,
                                      self.activity_name or 'nowhere: this controller_manager_msgs has no '
                                      'ControllerManagerActivity'))
            if not self.switch.ready():
                self.get_logger().warn('%s is not available yet: a deactivation would wait for it'
                                       % self.service)
        elif note == 'resumed':
            self.get_logger().warn('commands on %s again: watching again; %s stays inactive until someone '
                                   'activates it (ros2 control switch_controllers --activate %s)'
                                   % (self.topic, self.controller, self.controller))
            self.publish_diagnostics()

    def _on_activity(self, msg):
        state = controller_state(msg, self.controller)
        if state is None:
            return
        now = time.monotonic()
        note = self.guard.activity(state, now)
        if note == 'reactivated':
            self.get_logger().error(
                '%s became active at %s while no command comes (none on %s for %.3f s): deactivating it again '
                'through %s. The manager does not say who activated it (UR: the driver\'s controller_stopper '
                'activates the controllers it stopped when the robot program runs again; else a spawner or a '
                'user); activation number %d while the commands are absent'
                % (self.controller, self.activity_name, self.topic, now - self.guard.last_command, self.service,
                   self.guard.reactivations))
            self.check(now)
        elif note == 'confirmed':
            self.get_logger().info('%s reports %s %s' % (self.activity_name, self.controller, state))
            self.publish_diagnostics()

    # --- the gap and the answers -----------------------------------------------------------------------
    def check(self, now=None):
        """Act on the gap since the last command, the manager's answer and the schedule of retries;
        called by :func:`main` after every event and at least every poll period."""
        now = time.monotonic() if now is None else now
        if self.pending is not None:
            self._check_answer(now)
        reason = self.guard.due(now)
        if reason is None:
            return
        gap = now - self.guard.last_command
        if reason == 'timeout':
            self.get_logger().error('no command on %s for %.3f s (timeout %.3f s): dynamics_node stopped, '
                                    'crashed or hung; deactivating %s through %s'
                                    % (self.topic, gap, self.timeout, self.controller, self.service))
            if self.guard.state is None:
                self.get_logger().warn('no state of %s heard from %s: an activation while no command comes '
                                       'would go unseen (the manager publishes it from ros2_control 4.28.0)'
                                       % (self.controller, self.activity_name or '<manager>/activity'))
        elif reason == 'retry':
            self.get_logger().warn('deactivating %s again through %s (after %d failures in a row; no command '
                                   'for %.3f s)' % (self.controller, self.service, self.guard.failures, gap))
        elif reason == 'still active':
            self.get_logger().error('%s still reports %s active after the manager answered ok: deactivating it '
                                    'again' % (self.activity_name, self.controller))
        self._request(now, gap)
        if reason == 'timeout':
            self.publish_diagnostics()

    def _request(self, now, gap):
        if not self.switch.ready():
            self.guard.unavailable(now)
            self.get_logger().error('%s is not available (no controller_manager?): %s NOT deactivated; trying '
                                    'again every %.3f s while no command comes (none for %.3f s)'
                                    % (self.service, self.controller, self.timeout, gap))
            self._escalate_if_due()
            return
        self.pending = self.switch.deactivate()
        self.guard.sent(now)

    def _check_answer(self, now):
        future = self.pending
        if future.done():
            self.pending = None
            line = self.switch.describe(future)
            ok = self.switch.ok(future)
            wait = self.guard.answered(ok, now)
            if ok:
                self.get_logger().error('%s, %.3f s after the last command on %s'
                                        % (line, now - self.guard.last_command, self.topic))
            else:
                self.get_logger().error('%s: the controller may still apply the last command%s'
                                        % (line, '' if wait is None else '; trying again in %.3f s' % wait))
                self._escalate_if_due()
            self.publish_diagnostics()
        elif self.guard.overdue(now):
            self.switch.client.remove_pending_request(future)
            self.pending = None
            wait = self.guard.answered(False, now)
            self.get_logger().error('%s did not answer within %.1f s: asking again%s'
                                    % (self.service, ANSWER_WAIT, '' if wait is None else ' in %.3f s' % wait))
            self._escalate_if_due()

    def _escalate_if_due(self):
        if self.guard.tripped and self.guard.failures == ESCALATE_AFTER:
            self.get_logger().fatal(
                '%s could NOT be deactivated: %d failures in a row (state %s). The arm may still get the last '
                'command: stop it (protective or emergency stop) and look at the controller_manager. Trying '
                'again, at most every second, until the manager reports it inactive'
                % (self.controller, self.guard.failures, describe_state(self.guard.state)))
            self.publish_diagnostics()

    # --- diagnostics ---------------------------------------------------------------------------------
    def publish_diagnostics(self):
        """Publish the guard's status on /diagnostics (by the timer, and at every change)."""
        now = time.monotonic()
        level, message = self.guard.summary(now)
        guard = self.guard
        values = [('controller', self.controller), ('command_topic', self.topic),
                  ('controller_state', describe_state(guard.state)), ('command_timeout_s', '%.3f' % self.timeout),
                  ('commands', guard.commands), ('deactivation_requests', guard.requests),
                  ('failures_in_a_row', guard.failures), ('refused_or_failed', guard.refusals),
                  ('reactivations_while_absent', guard.reactivations),
                  ('last_command_age_s', '' if guard.last_command is None else '%.3f' % (now - guard.last_command))]
        status = DiagnosticStatus(level=_LEVELS[level], name=self.status_name, message=message,
                                  hardware_id=self.service,
                                  values=[KeyValue(key=k, value=str(v)) for k, v in values])
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics.publish(array)


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
