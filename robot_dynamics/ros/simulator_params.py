"""simulator_node's parameters: the declarative schema (:mod:`.params`) of what the node adds to
:data:`.model_node.MODEL_PARAMS`.

The simulation reads them as a :class:`robot_dynamics.simulation.build.SimulationSettings` (same names
and defaults; test/ros/test_ros_sim_units.py checks them); the node reads the topics, publish_clock,
odom_frame and marker_rate. docs/SIMULATION.md ("Parameters") and config/simulator.yaml describe them.
"""
import math

from rclpy.parameter import Parameter

from ..simulation import INTEGRATORS
from . import params as P


def _finite_list(value):
    return None if all(math.isfinite(x) for x in value) else 'must hold finite numbers'


NODE_PARAMS = (
    P.Param('joints', [], "Joints of the Float64MultiArray effort commands, in their order (an effort "
            "forward_command_controller's `joints`), and of initial_positions, kp, kd, kv. Empty: every "
            'model joint in model order.', ptype=Parameter.Type.STRING_ARRAY),
    P.Param('physics_rate', 1000.0, 'Physics steps per simulated second [Hz]; the step is dt = 1 / physics_rate.',
            check=P.positive),
    P.Param('integrator', 'rk4', 'Integration scheme (docs/SIMULATION.md): rk4 (4th order, energy-accurate), '
            'semi_implicit_euler (1 evaluation per step, for damped controlled arms), '
            'implicit_euler (linearly implicit: stiff servos, high damping, stiff stops), '
            'explicit_euler (comparison only).',
            choices=tuple(sorted(INTEGRATORS))),
    P.Param('publish_rate', 1000.0, 'joint_states messages per simulated second [Hz], <= physics_rate. '
            'They are published every n = round(physics_rate / publish_rate) physics steps, so a rate that '
            'does not divide physics_rate becomes physics_rate / n (a warning says so at start).',
            check=P.positive),
    P.Param('real_time_factor', 1.0, 'Simulated seconds per wall-clock second: 1 follows the wall clock, '
            '0.5 runs at half speed, 0 runs as fast as possible (still serving callbacks).',
            check=P.non_negative),
    P.Param('catch_up_limit', 0.05, 'Longest wall-clock lag [s] made up for by running missed physics steps in '
            'one batch; beyond it the missed time is dropped (counted in /diagnostics) and the simulation '
            'falls behind the wall clock instead of racing to catch up.', check=P.positive),
    P.Param('publish_clock', False, 'Publish the simulated time on /clock (rosgraph_msgs/Clock) and stamp '
            'every message with it; other nodes then run with use_sim_time:=true.'),
    P.Param('start_paused', False, 'Start with the physics paused (joint_states of the initial state are '
            'still published); resume with the ~/pause service (data: false).'),
    P.Param('initial_positions', [], 'Initial joint positions [rad or m], one per entry of `joints`. Empty: '
            'every joint at 0 moved into its position limits. Also the state ~/reset returns to.',
            check=_finite_list, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('effort_commands_topic', 'effort_controller/commands',
            'std_msgs/Float64MultiArray effort commands [N m or N] in the order of `joints` (reliable QoS). '
            'Empty: no such input.'),
    P.Param('joint_commands_topic', 'robot_joint_commands',
            'sensor_msgs/JointState commands by name (reliable QoS), as ros2_control\'s '
            'joint_state_topic_hardware_interface/JointStateTopicSystem publishes them (its default topic '
            '/robot_joint_commands is this one in the root namespace). '
            'Per joint the first of position, velocity, effort with a non-NaN value sets the mode. '
            'Empty: no such input.'),
    P.Param('joint_states_topic', 'joint_states', 'sensor_msgs/JointState output topic (reliable QoS).',
            check=lambda v: None if v else 'must not be empty'),
    P.Param('wrench_frame', 'link', 'Frame of the components of ~/wrench (WrenchStamped): link = the frame of '
            'the link named by header.frame_id (the wrench turns with the link), base = the base frame '
            '(a fixed direction in space). It acts at the link origin either way.', choices=('link', 'base')),
    P.Param('command_timeout', 0.0, 'Simulated seconds without any effort or joint command after which every '
            'joint gets zero effort (the arm goes limp) until the next command. 0: commands are held for ever.',
            check=P.non_negative),
    P.Param('servo_bandwidth', 20.0, 'w [rad/s] of the default servo gains of position and velocity commands: '
            'kp = w^2, kd = kv = 2 w (critically damped).', check=P.positive),
    P.Param('kp', [], 'Position servo gains per unit inertia [1/s^2]: one value, or one per entry of `joints`. '
            'Empty: servo_bandwidth^2.', check=P.gains, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('kd', [], 'Position servo damping gains [1/s], as kp. Empty: 2 servo_bandwidth.',
            check=P.gains, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('kv', [], 'Velocity servo gains [1/s], as kp. Empty: 2 servo_bandwidth.',
            check=P.gains, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('joint_friction', True, 'Simulate the URDF <dynamics damping friction> (Coulomb friction with '
            'tanh(qd / friction_smoothing)).'),
    P.Param('position_limits', True, 'Simulate the URDF position limits as stiff, damped end stops.'),
    P.Param('velocity_limits', True, 'Enforce the URDF velocity limits after each step.'),
    P.Param('odom_frame', 'odom', 'Fixed frame of the nav_msgs/Odometry on `odom` (its header.frame_id: the '
            'simulator\'s world, REP-105\'s odom) and of ~/markers, for a floating or planar robot.',
            check=lambda v: None if v else 'must not be empty'),
    P.Param('initial_base_pose', [], 'Initial pose of a floating or planar base, the root part of q: floating '
            '(x, y, z [m], qx, qy, qz, qw), planar (x, y [m], theta [rad]), relative to the URDF\'s placement of '
            'the root joint (the world when it has none). Empty: the origin. Also the pose ~/reset returns to.',
            check=_finite_list, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('initial_base_twist', [], 'Initial twist of a floating or planar base, the root part of v, in the base '
            'frame: floating (vx, vy, vz [m/s], wx, wy, wz [rad/s]), planar (vx, vy [m/s], wz [rad/s]). Empty: at '
            'rest. Also the twist ~/reset returns to.', check=_finite_list, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('marker_rate', 30.0, 'Rate [Hz, wall clock] of ~/markers (visualization_msgs/MarkerArray); 0: none.',
            check=P.non_negative),
    P.Param('robot_compensates_gravity', False, 'Emulate a robot whose controller adds its own gravity compensation '
            'to the effort command, as Franka\'s and UR\'s do: before each physics step the effort-commanded '
            'joints get g(q) of the model at the current state on top of the command (zero-order hold at '
            'physics_rate), within the effort limits; joint_states reports the sum as the effort. A fixed-base '
            'tree only. dynamics_node must then run with robot_compensates_gravity true (docs/ROBOTS.md).'),
)
