"""dynamics_lifecycle_node: dynamics_node as a managed (lifecycle) node.

Run: ``ros2 run robot_dynamics dynamics_lifecycle_node --ros-args -p urdf_path:=arm.urdf`` (its
name is ``dynamics_node`` too, so the parameter files and the SROS2 policy apply), then drive it
with ``ros2 lifecycle set /dynamics_node configure`` / ``activate`` / ``deactivate`` / ``cleanup``
/ ``shutdown`` (the services ``~/change_state``, ``~/get_state``, ``~/get_available_states``,
``~/get_available_transitions``, ``~/get_transition_graph``; events on ``~/transition_event``).

It is :class:`.dynamics_node.DynamicsNode` with rclpy's lifecycle state machine
(``rclpy.lifecycle.LifecycleNodeMixin``), nothing of the laws, publishers or
services duplicated:

- unconfigured (at start): no parameter is declared, nothing is loaded,
  published or served but the lifecycle services;
- configure: :meth:`.model_node.ModelNode.configure`: parameters, kernels
  compiled or loaded (warm-up), the model, publishers, services,
  subscriptions. A problem (a parameter, a URDF that cannot be read or does
  not fit) fails the transition with the problem logged as an error and
  everything it created destroyed: the node stays unconfigured;
- inactive: joint states are not read, no torque and no command goes out,
  the watchdog is idle; the services answer;
- activate: the merged joint state is forgotten (every joint must come again)
  and the watchdog starts afresh; torques and commands go out as in
  dynamics_node;
- deactivate: exactly one zero command (with ``publish_command``), then
  nothing (as ``on_timeout: zero``); with ``controller_manager`` set, the
  effort controller is deactivated too (activate it again yourself);
- cleanup: everything configure created is destroyed (the torque pipeline
  dropped, the publishers, subscriptions, timers, services and clients
  destroyed), the parameters are undeclared and the node's own state is
  what it was at start: it may be configured again (with the values of the
  command line or a params file). So that rclpy can undeclare them, the
  parameters are not flagged read-only in their descriptors; the node
  refuses a change of a read-only one itself, with rclpy's reason;
- shutdown (from any state): a zero command first if it was active (and the
  controller deactivated, as on deactivate), then as cleanup.
"""
from rclpy.lifecycle import LifecycleNodeMixin, TransitionCallbackReturn

from ..errors import ParameterError
from . import params as P
from .dynamics_node import DynamicsNode
from .model_node import MODEL_PARAMS, run


class DynamicsLifecycleNode(LifecycleNodeMixin, DynamicsNode):
    """dynamics_node with the lifecycle of a managed node (see the module doc)."""

    default_name = 'dynamics_node'
    undeclarable_parameters = True

    def __init__(self, node_name=default_name, **kwargs):
        DynamicsNode.__init__(self, node_name, **kwargs)
        LifecycleNodeMixin.__init__(self, enable_communication_interface=True)
        self.active = False
        self._read_only = None                   # the callback that refuses read-only changes while configured
        self._at_start = self._entities()        # the lifecycle services and rclpy's own: never destroyed

    def _entities(self):
        return {id(e) for group in (self.publishers, self.subscriptions, self.timers, self.services, self.clients)
                for e in group}

    # --- transitions ----------------------------------------------------------------
    def on_configure(self, state):
        try:
            self.configure()
        except Exception as exc:                 # a parameter, a URDF; or a bug: fail, stay unconfigured
            text = str(exc) if isinstance(exc, ParameterError) else '%s: %s' % (type(exc).__name__, exc)
            self.get_logger().error('configure failed: %s' % text)
            self._release()
            return TransitionCallbackReturn.FAILURE
        self._read_only = P.refuse_read_only(MODEL_PARAMS + tuple(self.extra_params))
        self.add_on_set_parameters_callback(self._read_only)
        self.get_logger().info('configured (%s): inactive, no command until activated' % self.model_source)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        if self.merger is not None:
            self.merger.reset()                  # positions read before activation are never used
        if self.pipeline is not None:            # deactivation sent a zero command: the next torque ramps from it
            self.pipeline.resume(zeroed=self.command is not None)
        self.watchdog.restart(self.now_ns(), self.stats.n_fresh)
        self.active = True
        self.get_logger().info('active: torques and commands from the next joint states')
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state):
        self.final_stop('deactivated')
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state):
        self._release()
        self.get_logger().info('cleaned up: unconfigured')
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        self.final_stop('shutting down')
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state):
        self.active = False
        self._release()
        return TransitionCallbackReturn.SUCCESS

    # --- what the active state gates ------------------------------------------------
    def on_joint_state(self, msg):
        if self.active:
            DynamicsNode.on_joint_state(self, msg)

    def on_watchdog(self):
        if self.active:
            DynamicsNode.on_watchdog(self)

    def final_stop(self, why):
        """Leave the active state: one zero command (if there is a command) and the controller deactivated (if
        controller_manager is set), then nothing until activated. None if it was not active."""
        if not self.active:
            return None
        self.active = False
        return self.stop_commands(why + ' (no command until activated)')

    def _release(self):
        """Drop the pipeline and destroy what configure created, undeclare the parameters: the state at start."""
        if self.identify is not None:
            self.identify.destroy()
        for group, destroy in ((self.subscriptions, self.destroy_subscription), (self.timers, self.destroy_timer),
                               (self.services, self.destroy_service), (self.clients, self.destroy_client),
                               (self.publishers, self.destroy_publisher)):
            for entity in [e for e in group if id(e) not in self._at_start]:
                destroy(entity)
        for callback in (self._read_only, self.on_set_parameters):
            try:
                self.remove_on_set_parameters_callback(callback)
            except ValueError:                   # not added (configure failed before)
                pass
        self._read_only = None
        P.undeclare(self, MODEL_PARAMS + tuple(self.extra_params))
        self.init_model_state()
        self.init_pipeline()


def main(args=None):
    run(DynamicsLifecycleNode, args, configure=False)


if __name__ == '__main__':
    main()
