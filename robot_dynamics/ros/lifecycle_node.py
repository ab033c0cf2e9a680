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
- cleanup: everything configure created is destroyed, the parameters are
  undeclared and the node's own state is what it was at start: it may be
  configured again (with the values of the command line or a params file);
- shutdown (from any state): a zero command first if it was active (and the
  controller deactivated, as on deactivate), then as cleanup.
"""
from rclpy.lifecycle import LifecycleNodeMixin, TransitionCallbackReturn

from ..errors import ParameterError
from .dynamics_node import DynamicsNode
from .model_node import MODEL_PARAMS, run


#: Prefixes of the name-mangled private attributes of rclpy's Node and LifecycleNodeMixin.
_RCLPY_PRIVATE = ('_Node__', '_LifecycleNodeMixin__')
#: What cleanup keeps: the record of the start.
_KEEP = ('_fresh_state', '_fresh_entities')


class DynamicsLifecycleNode(LifecycleNodeMixin, DynamicsNode):
    """dynamics_node with the lifecycle of a managed node (see the module doc)."""

    default_name = 'dynamics_node'

    def __init__(self, node_name=default_name, **kwargs):
        DynamicsNode.__init__(self, node_name, **kwargs)
        LifecycleNodeMixin.__init__(self, enable_communication_interface=True)
        self.active = False
        self._fresh_state = dict(self.__dict__)  # the attributes at start (cleanup restores them)
        self._fresh_entities = self._entities()

    def _entities(self):
        return {id(e) for group in (self.publishers, self.subscriptions, self.timers, self.services, self.clients)
                for e in group}

    # --- transitions ----------------------------------------------------------------
    def on_configure(self, state):
        try:
            self.configure()
        except ParameterError as exc:
            self.get_logger().error('configure failed: %s' % exc)
            self._release()
            return TransitionCallbackReturn.FAILURE
        except Exception as exc:                 # a bug: fail the transition, stay unconfigured
            self.get_logger().error('configure failed: %s: %s' % (type(exc).__name__, exc))
            self._release()
            return TransitionCallbackReturn.FAILURE
        self.get_logger().info('configured (%s): inactive, no command until activated' % self.model_source)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        if self.merger is not None:
            self.merger.reset()                  # positions read before activation are never used
        self.timed_out = self.streaming = False
        self._wd_count = self.n_fresh
        self._wd_last = self._now_ns()
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
    def _on_joint_state(self, msg):
        if self.active:
            DynamicsNode._on_joint_state(self, msg)

    def _watchdog(self):
        if self.active:
            DynamicsNode._watchdog(self)

    def final_stop(self, why):
        """Leave the active state: one zero command (if there is a command) and the controller deactivated (if
        controller_manager is set), then nothing until activated. None if it was not active."""
        if not self.active:
            return None
        self.active = False
        return self.stop_commands(why + ' (no command until activated)')

    def _release(self):
        """Destroy what configure created, undeclare its parameters, restore the state at start."""
        if self._service_thread is not None:
            self._service_thread.destroy()
        for group, destroy in ((self.subscriptions, self.destroy_subscription), (self.timers, self.destroy_timer),
                               (self.services, self.destroy_service), (self.clients, self.destroy_client),
                               (self.publishers, self.destroy_publisher)):
            for entity in [e for e in group if id(e) not in self._fresh_entities]:
                destroy(entity)
        for param in MODEL_PARAMS + tuple(self.extra_params):
            # Most are read-only, which undeclare_parameter refuses: the node's own tables.
            self._parameters.pop(param.name, None)
            self._descriptors.pop(param.name, None)
        self._on_set_parameters_callbacks_clear()
        # rclpy's own attributes stay as they are (the executor the node is in, above all: restoring its
        # start value, none, would keep the executor from learning of the next configure's entities).
        fresh = {k: v for k, v in self._fresh_state.items()
                 if not k.startswith(_RCLPY_PRIVATE) and k not in _KEEP}
        for key in [k for k in self.__dict__ if k not in self._fresh_state and k not in _KEEP]:
            del self.__dict__[key]
        self.__dict__.update(fresh)
        self.payloads = {}                       # the one container configure fills in place

    def _on_set_parameters_callbacks_clear(self):
        """Remove the parameter callback configure added (create_inputs)."""
        callback = getattr(self, '_on_set_parameters', None)
        try:
            self.remove_on_set_parameters_callback(callback)
        except ValueError:                       # not added (configure failed before create_inputs)
            pass


def main(args=None):
    run(DynamicsLifecycleNode, args, configure=False)


if __name__ == '__main__':
    main()
