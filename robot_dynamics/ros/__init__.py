"""ROS 2 nodes of robot_dynamics (rclpy, Jazzy).

Nodes (``ros2 run robot_dynamics <name>``, or ``python -m robot_dynamics.ros.<module>``):

- ``dynamics_node`` (:mod:`.dynamics_node`): gravity / Coriolis / friction
  compensation from ``joint_states``, feedforward and computed torque from a
  desired trajectory, a ros2_control bridge (std_msgs/Float64MultiArray for
  a forward_command_controller), timeouts, clamping, diagnostics, payloads.
- ``dynamics_lifecycle_node`` (:mod:`.lifecycle_node`): dynamics_node as a
  managed (lifecycle) node: configure, activate, deactivate, cleanup, shutdown.
- ``dynamics_services`` (:mod:`.dynamics_services`): the dynamics services
  alone (gravity, inverse and forward dynamics, mass matrix, trajectory
  efforts, payload).
- ``simulator_node`` (:mod:`.simulator_node`): the simulated arm over
  :class:`robot_dynamics.simulation.Simulator`: effort commands
  (Float64MultiArray), JointState commands (ros2_control topic-based
  hardware), wrenches in, joint_states, /clock and RViz markers out; reset,
  pause and set_state services.
- ``command_watchdog`` (:mod:`.command_watchdog`): deactivates the effort
  controller when the torque commands stop (a node killed or hung).

The torque pipeline without ROS (the laws, joint maps, staleness, the
watchdog's decision, the observer, payload identification) is
:mod:`robot_dynamics.control`; these nodes convert messages, call it and
publish. Pure helpers of the simulator node, usable and tested without DDS:

- :mod:`.markers`: the simulator node's RViz markers (the simulation
  itself, its message checks and pacing are ROS-free:
  :mod:`robot_dynamics.simulation.session`).

A node is constructed, then configured (:meth:`.model_node.ModelNode.configure`:
parameters, kernels, model, publishers, services, subscriptions), then spun
(:func:`.model_node.run` does all three). Default topic names are relative
or private, so a namespace moves them all.

Importing this package does not import rclpy; the node modules do.
"""
