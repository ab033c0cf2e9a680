"""Deactivate a ros2_control controller through its controller_manager's ``switch_controller`` service.

The effort controller a torque node feeds re-applies its last command for
as long as it is active (``forward_command_controller``), or until it is
deactivated (``effort_controllers/JointGroupEffortController`` then writes
zero and the hardware leaves its effort mode, as the vendor stack defines).
:class:`ControllerSwitch` asks ``<manager>/switch_controller``
(``controller_manager_msgs/srv/SwitchController``, ROS 2 Jazzy) to deactivate
one controller with strictness ``BEST_EFFORT``, so a controller that is
already inactive is no error. Used by dynamics_node on a clean stop and by
the ``command_watchdog`` node when commands stop.

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
