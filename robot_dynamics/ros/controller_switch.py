"""Deactivate a ros2_control controller through its controller_manager's ``switch_controller`` service,
and read the controllers' states from its ``activity`` topic.

The effort controller a torque node feeds re-applies its last command for
as long as it is active (``forward_command_controller``), or until it is
deactivated. :class:`ControllerSwitch` asks ``<manager>/switch_controller``
(``controller_manager_msgs/srv/SwitchController``, ROS 2 Jazzy) to deactivate
one controller with strictness ``BEST_EFFORT``, so a controller that is
already inactive is no error. Used by dynamics_node on a clean stop and by
the ``command_watchdog`` node when commands stop.

What a deactivation does, in Jazzy's order (ros-controls/ros2_control, branch
jazzy, controller_manager/src/controller_manager.cpp): ``switch_controller_cb``
first asks the hardware to ``prepare_command_mode_switch`` (a hardware that
refuses makes the answer ``ok = false``, "Could not switch controllers since
prepare command mode switch was rejected."); the control loop's next
``update`` skips the controllers being switched and marks the switch ready;
then ``manage_switch`` (in the service's thread; with ``activate_asap``, in
the control loop) calls the hardware's ``perform_command_mode_switch`` FIRST
and only then deactivates the controllers. So on Franka and UR the robot has left its
torque mode before ``effort_controllers/JointGroupEffortController``'s
``on_deactivate`` writes 0 to the effort command interfaces
(ros-controls/ros2_controllers, branch jazzy,
effort_controllers/src/joint_group_effort_controller.cpp); that 0 matters to
a hardware that keeps reading the interface after the switch. A switch not
done within the request's ``timeout`` (0: the manager's default, 1 s) is
answered ``ok = false`` ("Switch controller timed out ...") and the
controller stays active.

:func:`activity_type` and :func:`controller_state` read
``<manager>/activity`` (``controller_manager_msgs/msg/ControllerManagerActivity``,
ros2_control 4.28.0 and later on Jazzy), which the manager publishes
reliable and transient-local (depth 1) after every switch, with every
controller's lifecycle state.

Light on purpose: rclpy only, no numba, no dynamics, so a watchdog process
that imports it starts in a fraction of a second. ``controller_manager_msgs``
is imported when a ControllerSwitch is made: with ROS 2 installed rosdep
installs it (package.xml), in the PyPI-wheel venv scripts/setup-venv.sh
builds it (wheel_interfaces/).
"""
from ..errors import SwitchUnavailable  # noqa: F401  (raised here; importers catch it from this module)


def switch_controller_type():
    """The ``controller_manager_msgs/srv/SwitchController`` class; SwitchUnavailable if it is not installed."""
    try:
        from controller_manager_msgs.srv import SwitchController
    except ImportError as exc:
        raise SwitchUnavailable(
            'controller_manager_msgs is not installed (%s): install ros-jazzy-controller-manager-msgs '
            '(rosdep install, package.xml), or in the PyPI-wheel venv run scripts/setup-venv.sh' % exc) from None
    return SwitchController


class ControllerSwitch:
    """A client of ``<manager>/switch_controller`` that deactivates ``controller``.

    Args:
        node: the rclpy Node that owns the client.
        manager: the controller_manager's name, resolved as a node name is
            (relative: in the node's namespace), e.g. ``controller_manager``.
        controller: the name of the controller to deactivate.
    """

    def __init__(self, node, manager, controller):
        if not manager or not controller:
            raise ValueError('ControllerSwitch needs a controller_manager and a controller name, got %r and %r'
                             % (manager, controller))
        self.srv_type = switch_controller_type()
        self.controller = controller
        self.service_name = manager.rstrip('/') + '/switch_controller'
        self.activity_topic = manager.rstrip('/') + '/activity'
        self.client = node.create_client(self.srv_type, self.service_name)

    def ready(self):
        """Whether the manager's service is up (matched)."""
        return self.client.service_is_ready()

    def deactivate(self):
        """Send the request; the rclpy Future of its SwitchController.Response (``ok``, ``message``)."""
        request = self.srv_type.Request()
        request.deactivate_controllers = [self.controller]
        request.strictness = self.srv_type.Request.BEST_EFFORT
        return self.client.call_async(request)

    @staticmethod
    def ok(future):
        """Whether ``future`` (of :meth:`deactivate`) is done and the manager answered ok."""
        return future.done() and future.exception() is None and future.result().ok

    def describe(self, future):
        """One line for the log: what the manager answered to a deactivation (or that it did not)."""
        if not future.done():
            return '%s: no answer from %s' % (self.controller, self.service_name)
        if future.exception() is not None:
            return '%s: %s failed: %s' % (self.controller, self.service_name, future.exception())
        answer = future.result()
        message = getattr(answer, 'message', '')
        return '%s %s by %s%s' % (self.controller, 'deactivated' if answer.ok else 'NOT deactivated',
                                  self.service_name, ' (%s)' % message if message else '')


#: Depth of the subscription to ``~/activity`` (the manager publishes reliable, transient local, depth 1).
ACTIVITY_DEPTH = 10

#: lifecycle_msgs/State primary state ids -> labels (the id decides; the label is rclcpp_lifecycle's).
STATE_LABELS = {1: 'unconfigured', 2: 'inactive', 3: 'active', 4: 'finalized'}


def activity_type():
    """The ``controller_manager_msgs/msg/ControllerManagerActivity`` class, or None where the installed
    controller_manager_msgs predates it (ros2_control before 4.28.0)."""
    try:
        from controller_manager_msgs.msg import ControllerManagerActivity
    except ImportError:
        return None
    return ControllerManagerActivity


def activity_qos():
    """The QoS that matches the manager's ``~/activity`` publisher."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=ACTIVITY_DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def controller_state(activity, controller):
    """The lifecycle state label (``active``, ``inactive``, ``unconfigured``, ``finalized``) of
    ``controller`` in a ControllerManagerActivity message; None if the manager does not list it."""
    for named in activity.controllers:
        if named.name == controller:
            return STATE_LABELS.get(named.state.id, named.state.label)
    return None
