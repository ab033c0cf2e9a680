"""simulator_node: the simulated arm, over :class:`robot_dynamics.simulation.Simulator`.

Run: ``ros2 run robot_dynamics simulator_node --ros-args -p urdf_path:=arm.urdf``
(or ``python -m robot_dynamics.ros.simulator_node --ros-args ...``).

A thin node: it converts messages, calls the simulator core and publishes.
The model comes from the ``robot_description`` parameter, ``urdf_path`` or
the ``robot_description`` topic (see :mod:`.model_node`), which also gives
the dynamics services and ``~/set_payload`` (a payload is simulated too).

Subscribes (each message is checked; a bad one is dropped with a throttled
warning and counted, and the simulation goes on as before):
    <effort_commands_topic> (std_msgs/Float64MultiArray, reliable; default
        effort_controller/commands): one effort [N m or N] per entry of
        ``joints``, in that order (what an effort forward_command_controller
        and dynamics_node's command_topic carry).
    <joint_commands_topic> (sensor_msgs/JointState, reliable; default
        robot_joint_commands): commands by name as ros2_control's
        joint_state_topic_hardware_interface sends them; per joint the first
        of position, velocity, effort that holds a (non-NaN) value sets its
        mode (:func:`.sim_commands.joint_command`).
    ~/wrench (geometry_msgs/WrenchStamped): a wrench on the link named by
        header.frame_id, at its origin, components in that link's frame
        (``wrench_frame: link``) or in the base frame (``base``); held until
        the next message for that link; all zeros removes it.

Publishes:
    <joint_states_topic> (sensor_msgs/JointState, reliable; default
        joint_states): every model joint, model order: position, velocity,
        effort, every ``physics_rate / publish_rate`` physics steps. The
        effort is the torque the simulated motors applied in the physics
        step that led to the state, as a driver reports a measured torque:
        an effort command after the effort limits (zero once a fault or the
        command timeout has zeroed the command), or the servo's torque at
        the state for position and velocity commands. Friction, end stops
        and wrenches are not motor torques and are not in it. While paused,
        the torque the command in force gives at the state.
    odom (nav_msgs/Odometry, reliable), for a floating or planar robot,
        with every joint_states message (same stamp): the base's pose in
        ``odom_frame`` (header.frame_id, the simulator's world) and its
        twist in the base frame (child_frame_id, the base link), as
        REP-105 has it; covariances zero (the simulated state is exact).
    /clock (rosgraph_msgs/Clock) if ``publish_clock``: the simulated time.
    ~/markers (visualization_msgs/MarkerArray), at ``marker_rate`` (wall
        clock), in the base frame (:mod:`.markers`); for a floating or
        planar robot in ``odom_frame``, so that they move with the base.
    /diagnostics (diagnostic_msgs/DiagnosticArray).

Topic names are relative or private, so a namespace moves them all; only
/clock and /diagnostics are absolute, as ROS 2 has them.

Services: ~/reset (std_srvs/Trigger), ~/pause (std_srvs/SetBool),
~/set_state (robot_dynamics_interfaces/SetState), and those of
:mod:`.model_node`.

A floating or planar robot (docs/FLOATING-BASE.md): the base is not
actuated; the commands, joint_states and ~/set_state concern the joints.
It starts at ``initial_base_pose`` with ``initial_base_twist`` (the root
parts of q and v), where ~/reset puts it back. The velocity limits are not
enforced on such a robot (the library's VelocityLimits is for a fixed
base; a warning says so at start if ``velocity_limits`` is on). The model
services compute with the simulated base state. No TF is broadcast (tf2 is
not a dependency of this package): Odometry's pose is the odom -> base
transform, for a relay or RViz's Odometry display.

A closed-loop robot (``loops_file``, docs/LOOPS.md): the simulator
integrates the constrained dynamics and projects the state back onto the
loops after every step (:class:`~robot_dynamics.simulation.LoopClosure`);
joint_states has every joint, the passive ones included (for RViz). The
commands are for ``actuated_joints`` only (``joints`` defaults to them and
may not name a passive joint; a joint command naming one is rejected); the
passive joints get no motor torque and report zero effort. The initial
state closes the loops: ``initial_positions`` (for ``joints``) are kept and
the passive joints assembled from the neutral configuration;
``~/set_state`` keeps the joints it names and assembles the others.

Stamps: with ``publish_clock`` every message is stamped with the simulated
time of its state (the time on /clock); without it, with the node's clock
at publication. docs/SIMULATION.md ("The ROS 2 node") has the details.
"""
import math
import time

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

from robot_dynamics_interfaces.srv import SetState

from ..simulation import (INTEGRATORS, JointActuator, JointFriction, PositionLimits, SimulationError,
                          Simulator, VelocityLimits)
from ..model.configuration import QUATERNION_TOLERANCE
from ..ros import params as P
from ..control.base_state import base_link, odometry_values
from ..control.closed_loop import check_actuated
from ..control.joint_map import JointMapError, reorder_indices
from .markers import MarkerBuilder
from .model_node import ModelNode, describe_base, run
from .pacing import Pacer, tick_period
from .robot_emulation import RobotGravityCompensation
from .sim_commands import CommandError, effort_command, joint_command, joint_state_update, stamp, wrench_values
from ..errors import InputError

#: Wall-clock time [s] one tick may run the physics when real_time_factor is 0,
#: before it hands the executor back to the other callbacks.
FAST_TICK_BUDGET = 0.002

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
#: Command subscriptions keep 100 messages (0.1 s at 1 kHz): while a late tick
#: runs its catch-up steps the commands queue instead of being overwritten, so
#: every one is read and counted (the latest wins; the others are superseded).
COMMAND_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


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


def _view(msg, field, n):
    """Set ``msg.<field>`` to n zeros and return a numpy view writing into it."""
    import array
    setattr(msg, field, array.array('d', bytes(8 * n)))
    return np.frombuffer(getattr(msg, field), dtype=np.float64)


def warm_up_simulation():
    """Compile or load the kernels of one simulation step of every kind (numba cache)."""
    import robot_dynamics as rd
    from .model_node import _WARMUP_URDF
    model = rd.load_urdf(_WARMUP_URDF)
    for integrator in ('rk4', 'semi_implicit_euler'):
        # Faster than the warm-up arm's 1 rad/s limits: the compiled step
        # (simulation/fused.py) and the velocity limiter both run.
        sim = Simulator(model, integrator=integrator, q0=[0.1, 2.99], qd0=[1.5, -1.5])
        sim.step(2)
        sim.apply_wrench('l2', [1.0, 0, 0, 0, 0.1, 0], frame='base')
        for mode in ('effort', 'position', 'velocity'):
            sim.set_command([1.0, 0.5], mode)
            sim.step(2)
    rd.forward_kinematics(model, np.zeros(model.nq))


class SimulatorNode(ModelNode):
    """The simulated arm (see the module doc)."""

    default_name = 'simulator'
    status_name = 'simulator'
    extra_params = NODE_PARAMS

    def __init__(self, node_name=default_name, **kwargs):
        super().__init__(node_name, **kwargs)
        self.sim = None
        self.cmd_joints = []                # the order of the effort commands, set with each model
        self.markers = None
        self.paused = False
        self.steps = 0                      # physics steps done by this node, never reset
        self.since_pub = 0                  # steps since the last joint_states
        # Commands.
        self.commanded = False              # a command is in force (not timed out, not reset)
        self.last_command_time = 0.0        # simulated time of the last command [s]
        self.fresh_command = False          # a command not used by a physics step yet
        self.counts = {'effort_commands': 0, 'joint_commands': 0, 'wrenches': 0, 'rejected': 0,
                       'superseded': 0, 'timeouts': 0, 'simulation_errors': 0, 'joint_states': 0,
                       'non_finite_outputs': 0, 'odometry': 0}
        self.last_rejection = ''
        # Timing.
        self._tick_time = self._tick_max = 0.0
        self._ticks = 0
        self._diag_wall = time.perf_counter()
        self._diag_sim = 0.0
        self._last_paused_pub = 0.0
        self.pacer = None                   # set by create_inputs when real_time_factor > 0
        # A floating or planar base: nav_msgs/Odometry on `odom` (created with the first such model).
        self.pub_odom = self.odom_msg = None
        self.qd0 = None                     # the initial velocity (the base's twist; joints at rest)
        self.robot_gravity = None           # robot_compensates_gravity: the emulated robot controller's g(q)

    # --- parameters -----------------------------------------------------------
    def validate_params(self):
        p = self.p
        problems = []
        if p.publish_rate > p.physics_rate:
            problems.append("parameter 'publish_rate' (%g Hz) must be <= physics_rate (%g Hz): joint_states "
                            'are published after physics steps' % (p.publish_rate, p.physics_rate))
        if len(set(p.joints)) != len(p.joints):
            problems.append("parameter 'joints' names a joint more than once: %s" % p.joints)
        n = len(p.joints)
        gains = (0, 1, n)
        for name, allowed in (('kp', gains), ('kd', gains), ('kv', gains), ('initial_positions', (0, n))):
            values = getattr(p, name)
            if n and len(values) not in allowed:
                problems.append("parameter %r has %d values; expected %sone per entry of 'joints' (%d)"
                                % (name, len(values), '1 or ' if 1 in allowed else '', n))
        if p.effort_commands_topic and p.effort_commands_topic == p.joint_commands_topic:
            problems.append("parameters 'effort_commands_topic' and 'joint_commands_topic' name the same topic "
                            '%r (their message types differ)' % p.effort_commands_topic)
        if problems:
            raise P.ParameterError('invalid parameters:\n  ' + '\n  '.join(problems))
        self.dt = 1.0 / p.physics_rate
        self.pub_every = max(1, int(round(p.physics_rate / p.publish_rate)))
        if abs(self.pub_every * p.publish_rate - p.physics_rate) > 1e-9 * p.physics_rate:
            self.get_logger().warning('publish_rate %g Hz does not divide physics_rate %g Hz: joint_states are '
                                      'published every %d steps, at %g Hz of simulated time'
                                      % (p.publish_rate, p.physics_rate, self.pub_every,
                                         p.physics_rate / self.pub_every))

    # --- set-up ---------------------------------------------------------------
    def warm_up(self):
        super().warm_up()
        warm_up_simulation()

    def create_outputs(self):
        # No QoS-event handlers (rclpy adds two per publisher unless told otherwise, and
        # the executor services them for every message: measured, they cost more than
        # the publish itself at 1 kHz). Reliable publishers match every subscriber.
        quiet = PublisherEventCallbacks(use_default_callbacks=False)
        self.pub_states = self.create_publisher(JointState, self.p.joint_states_topic, RELIABLE,
                                                event_callbacks=quiet)
        self.pub_markers = self.create_publisher(MarkerArray, '~/markers', 1, event_callbacks=quiet)
        self.pub_clock = None
        if self.p.publish_clock:
            # Reliable, depth 1: matches rclpy's and rclcpp's best-effort /clock subscriptions too.
            self.pub_clock = self.create_publisher(
                ClockMsg, '/clock', QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE),
                event_callbacks=quiet)
            self.clock_msg = ClockMsg()
        self.paused = bool(self.p.start_paused)

    def create_inputs(self):
        p = self.p
        # The physics runs on the steady clock: never on /clock, which this node may publish itself.
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.pacer = Pacer(self.dt, p.real_time_factor, p.catch_up_limit) if p.real_time_factor > 0 else None
        if self.pacer is not None:
            self.pacer.anchor(time.perf_counter(), self.steps)
        self.create_timer(tick_period(self.dt, p.real_time_factor), self._tick, clock=steady)
        if p.marker_rate > 0:
            self.create_timer(1.0 / p.marker_rate, self._publish_markers, clock=steady)
        self.create_service(Trigger, '~/reset', self._srv_reset)
        self.create_service(SetBool, '~/pause', self._srv_pause)
        self.create_service(SetState, '~/set_state', self._srv_set_state)
        quiet = SubscriptionEventCallbacks(use_default_callbacks=False)
        self.create_subscription(WrenchStamped, '~/wrench', self._on_wrench, RELIABLE, event_callbacks=quiet)
        if p.joint_commands_topic:
            self.create_subscription(JointState, p.joint_commands_topic, self._on_joint_command, COMMAND_QOS)
        if p.effort_commands_topic:
            self.create_subscription(Float64MultiArray, p.effort_commands_topic, self._on_effort, COMMAND_QOS)
        self._publish_state()
        self._publish_clock()

    # --- model ----------------------------------------------------------------
    def on_model(self, model, joints_changed):
        """Build the simulator for ``model``; None, or the reason it cannot be simulated.

        With the same joints as before (a payload, a new description of the
        same arm) the state, time, commands and wrenches carry over;
        otherwise the arm starts again from the initial positions. If this
        fails, the previous simulation (if any) keeps running.
        """
        names = list(model.joint_names)
        actuated = self.actuated(model)
        cmd_joints = list(self.p.joints) or actuated
        passive = [j for j in cmd_joints if j in names and j not in actuated]
        if passive:
            return ("the model does not fit the simulator: parameter 'joints' names the passive joint(s) %s; the "
                    "commands are for the actuated joints (%s)" % (', '.join(passive), ', '.join(actuated)))
        try:
            cmd_idx = reorder_indices(names, cmd_joints, what="parameter 'joints'")
            q0, qd0 = self._initial_state(model, cmd_joints, cmd_idx)
            sim = self._simulator(model, q0, qd0, cmd_idx, None if actuated == names else actuated)
        except (JointMapError, ValueError) as exc:
            return 'the model does not fit the simulator: %s' % exc
        q0, qd0 = sim.q, sim.qd                        # a closed-loop model's: on its loops
        old = self.sim
        if self.robot_gravity is not None and self.robot_gravity.sim is old:
            self.robot_gravity.restore()               # the user's command carries over, not the robot's sum
        if self.p.robot_compensates_gravity and (model.root_joint is not None or model.loops):
            return ("parameter 'robot_compensates_gravity' emulates a fixed-base arm's controller; robot %r has %s"
                    % (model.name, 'closed loops' if model.loops else 'a %s base' % model.root_joint))
        if old is not None and not joints_changed and old.model.root_joint == model.root_joint:
            self._carry_over(old, sim)
        elif old is not None:
            sim.reset(q0, qd0, old.time)               # the time goes on
            self.commanded = False
        self.q0, self.qd0 = q0, qd0
        self.index = {n: i for i, n in enumerate(names)}
        self.links = frozenset(model.link_names)
        self.cmd_joints = cmd_joints
        self.cmd_joints_arg = None if cmd_joints == names else cmd_joints
        self.state_msg = JointState(name=names)
        self.views = tuple(_view(self.state_msg, f, len(names)) for f in ('position', 'velocity', 'effort'))
        self.markers = self._marker_builder(model)
        self._odometry(model)
        self.sim = sim
        self.robot_gravity = RobotGravityCompensation(sim) if self.p.robot_compensates_gravity else None
        if old is None:
            self._restart_clock()                       # a model from the topic: pace from its arrival
        return None

    def _simulator(self, model, q0, qd0, cmd_idx, actuated=None):
        """A Simulator of ``model`` at ``(q0, qd0)`` with the parameters' integrator, forces and servo gains
        (and ``actuated``, the joints with motors)."""
        p = self.p
        forces = [JointFriction(model, smoothing=p.friction_smoothing)] if p.joint_friction else []
        forces += [PositionLimits(model, dt=self.dt)] if p.position_limits else []
        gains = {k: self._gains(model, k, cmd_idx) for k in ('kp', 'kd', 'kv')}
        limits = p.velocity_limits and model.root_joint is None
        if p.velocity_limits and not limits:
            self.get_logger().warning('velocity_limits: not enforced on the %s base of %r (the velocity-limit '
                                      'constraint is for a fixed base)' % (model.root_joint, model.name), once=True)
        return Simulator(model, dt=self.dt, integrator=p.integrator, forces=forces,
                         constraints=[VelocityLimits(model)] if limits else [],
                         actuator=JointActuator(model, bandwidth=p.servo_bandwidth, **gains), q0=q0, qd0=qd0,
                         actuated=actuated)

    def _initial_state(self, model, cmd_joints, cmd_idx):
        """(q0 (nq,), qd0 (nv,)): ``initial_positions`` and, for a floating or planar base,
        ``initial_base_pose`` and ``initial_base_twist`` (joints at rest)."""
        q0, qd0 = model.neutral().copy(), np.zeros(model.nv)
        if model.root_joint is not None:
            q0[:model.root_nq], qd0[:model.root_nv] = self._initial_base(model)
        elif self.p.initial_base_pose or self.p.initial_base_twist:
            self.get_logger().warning("initial_base_pose and initial_base_twist are ignored: robot %r has a fixed "
                                      "base" % model.name, once=True)
        values = self.p.initial_positions
        if not values:
            return q0, qd0
        if len(values) != len(cmd_joints):
            raise InputError("parameter 'initial_positions' has %d values, expected %d (one per joint: %s)"
                             % (len(values), len(cmd_joints), ', '.join(cmd_joints)))
        q0[model.root_nq + np.asarray(cmd_idx, dtype=int)] = values
        for i, x in zip(cmd_idx, values):
            if not model.lower_limit[i] <= x <= model.upper_limit[i]:
                raise InputError("parameter 'initial_positions': %g for %s is outside its limits [%g, %g]"
                                 % (x, model.joint_names[i], model.lower_limit[i], model.upper_limit[i]))
        return q0, qd0

    def _initial_base(self, model):
        """(q_root, v_root) from ``initial_base_pose`` and ``initial_base_twist`` (empty: origin, at rest)."""
        q_root, v_root = model.neutral()[:model.root_nq], np.zeros(model.root_nv)
        layout = {'floating': ('(x, y, z, qx, qy, qz, qw)', '(vx, vy, vz, wx, wy, wz)'),
                  'planar': ('(x, y, theta)', '(vx, vy, wz)')}[model.root_joint]
        for name, target, what in (('initial_base_pose', q_root, layout[0]), ('initial_base_twist', v_root, layout[1])):
            values = getattr(self.p, name)
            if values and len(values) != len(target):
                raise InputError('parameter %r has %d values; %s needs %d: %s'
                                 % (name, len(values), describe_base(model), len(target), what))
            if values:
                target[:] = values
        if model.root_joint == 'floating':
            n = float(np.linalg.norm(q_root[3:]))
            if not abs(n - 1.0) <= QUATERNION_TOLERANCE:
                raise InputError("parameter 'initial_base_pose': the quaternion (qx, qy, qz, qw) = %s has norm %.6g; "
                                 'expected a unit quaternion (norm within %g of 1)'
                                 % (q_root[3:].tolist(), n, QUATERNION_TOLERANCE))
            q_root[3:] /= n
        return q_root, v_root

    def _marker_builder(self, model):
        """The markers of ``model``: in the base frame, or for a moving base in ``odom_frame`` (where
        forward_kinematics poses the links)."""
        builder = MarkerBuilder(model)
        if model.root_joint is not None:
            for m in list(builder.array.markers) + list(builder.first.markers):
                m.header.frame_id = self.p.odom_frame
        return builder

    def _odometry(self, model):
        """The Odometry message of a floating or planar ``model`` (and its publisher, once), else None."""
        if model.root_joint is None:
            self.odom_msg = None
            return
        if self.pub_odom is None:
            self.pub_odom = self.create_publisher(Odometry, 'odom', RELIABLE,
                                                  event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))
        msg = Odometry()
        msg.header.frame_id = self.p.odom_frame
        msg.child_frame_id = base_link(model)
        self.odom_msg = msg

    def service_base_state(self, model):
        """The simulated base state."""
        sim = self.sim
        if sim is None or sim.model.root_joint != model.root_joint:
            raise InputError('%s and it is not simulated yet' % describe_base(model))
        return sim.q[:model.root_nq], sim.qd[:model.root_nv]

    def moving_base_problem(self, model):
        """None: the simulator has the base state of a floating or planar robot."""
        return None

    def loops_problem(self, model):
        """Unknown or repeated ``actuated_joints``; fewer motors than degrees of freedom simulate (an
        under-actuated mechanism moves as its dynamics say)."""
        if not self.p.actuated_joints:
            return None
        return check_actuated(model, list(self.p.actuated_joints), drive=False)

    def _gains(self, model, name, cmd_idx):
        """(n,) gains from parameter ``name``, or None (the servo_bandwidth default)."""
        values = getattr(self.p, name)
        if not values:
            return None
        w = self.p.servo_bandwidth
        g = np.full(len(model.joint_names), w * w if name == 'kp' else 2.0 * w)
        if len(values) == 1:
            g[:] = values[0]
        elif len(values) == len(cmd_idx):
            g[cmd_idx] = values
        else:
            raise InputError('parameter %r has %d values, expected 1 or %d' % (name, len(values), len(cmd_idx)))
        return g

    @staticmethod
    def _carry_over(old, sim):
        """State, time, commands and wrenches of ``old`` into ``sim`` (same joints)."""
        from ..simulation import MODES
        sim.reset(old.q, old.qd, old.time)
        cmd = old.command
        idx = [sim.model.joint_names.index(j) for j in sim.actuated]
        sim.set_command(cmd.value[idx], [MODES[m] for m in cmd.mode[idx]], list(sim.actuated))
        for link, (frame, w) in old.wrenches.wrenches.items():
            if link in sim.model.link_names:
                sim.apply_wrench(link, w, frame)

    # --- stepping -------------------------------------------------------------
    def _tick(self):
        sim = self.sim
        if sim is None:
            return
        t0 = time.perf_counter()
        if self.paused:
            if t0 - self._last_paused_pub >= self.pub_every * self.dt:
                self._last_paused_pub = t0
                self._publish_state()
                self._publish_clock()
            return
        if self.pacer is not None:
            n = self.pacer.due(t0, self.steps)
            if n:
                self._run(n)
        else:
            while self._run(self.pub_every - self.since_pub) and time.perf_counter() - t0 < FAST_TICK_BUDGET:
                pass
        self._publish_clock()
        dt = time.perf_counter() - t0
        self._tick_time += dt
        self._ticks += 1
        if dt > self._tick_max:
            self._tick_max = dt

    def _run(self, n):
        """Advance ``n`` physics steps, publishing joint_states every ``pub_every`` steps.

        The command timeout is checked after the state is out, so that its effort is the
        torque of the step that led to it, as always (the zero torque starts with the next step).

        Returns False if a step failed (the rest of the batch is skipped).
        """
        while n > 0:
            k = min(n, self.pub_every - self.since_pub)
            done = self._step(k)
            n -= done
            self.since_pub += done
            if self.since_pub >= self.pub_every:
                self.since_pub = 0
                self._publish_state()
            self._check_command_timeout()
            if done < k:
                return False
        return True

    def _step(self, k):
        """Up to ``k`` physics steps; the number done (fewer after a SimulationError)."""
        sim = self.sim
        t_before = sim.time
        try:
            if self.robot_gravity is not None:
                self.robot_gravity.step(k)              # the robot's own g(q) before each step
            else:
                sim.step(k)
            done = k
        except SimulationError as exc:
            done = int(round((sim.time - t_before) / sim.dt))
            self._on_simulation_error(exc)
        self.steps += done
        if done:
            self.fresh_command = False
        return done

    def _check_command_timeout(self):
        timeout = self.p.command_timeout
        if timeout > 0 and self.commanded and self.sim.time - self.last_command_time >= timeout - 1e-9:
            self._command_timed_out()

    def _on_simulation_error(self, exc):
        """Keep the state, zero the commands, remove the wrenches, warn."""
        self.counts['simulation_errors'] += 1
        sim = self.sim
        sim.set_command(np.zeros(len(sim.actuated)), 'effort')
        sim.clear_wrenches()
        self.commanded = False
        self.get_logger().error('%s. Commands set to zero effort and wrenches removed.' % exc,
                                throttle_duration_sec=1.0)

    def _command_timed_out(self):
        sim = self.sim
        sim.set_command(np.zeros(len(sim.actuated)), 'effort')
        self.commanded = False
        self.counts['timeouts'] += 1
        self.get_logger().warning('no command for %.3f s of simulated time (command_timeout): every joint '
                                  'now gets zero effort until the next command' % self.p.command_timeout)

    # --- outputs --------------------------------------------------------------
    def _stamp(self):
        """builtin_interfaces/Time of the current state (see the module doc)."""
        stamp_msg = Time()
        self._set_stamp(stamp_msg)
        return stamp_msg

    def _set_stamp(self, stamp_msg):
        """Write the stamp of the current state into ``stamp_msg`` (a builtin_interfaces/Time):
        the simulated time with publish_clock, else the node's clock now."""
        if self.pub_clock is not None:
            stamp_msg.sec, stamp_msg.nanosec = stamp(self.sim.time)
        elif not self._clock.ros_time_is_active:          # the system clock: skip rclpy's Time objects
            ns = time.time_ns()
            stamp_msg.sec, stamp_msg.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
        else:
            now = self._clock.now().to_msg()
            stamp_msg.sec, stamp_msg.nanosec = now.sec, now.nanosec

    def _publish_state(self):
        sim = self.sim
        if sim is None:
            return
        effort = sim.effort
        if not math.isfinite(effort.sum()):
            self.counts['non_finite_outputs'] += 1
            return
        m = sim.model
        q, qd = sim.q, sim.qd
        q_view, qd_view, effort_view = self.views
        q_view[:] = q[m.root_nq:]
        qd_view[:] = qd[m.root_nv:]
        effort_view[:] = effort
        stamp_msg = self.state_msg.header.stamp
        self._set_stamp(stamp_msg)
        self.pub_states.publish(self.state_msg)
        self.counts['joint_states'] += 1
        if self.odom_msg is not None:
            self._publish_odometry(m, q, qd, stamp_msg)

    def _publish_odometry(self, model, q, qd, stamp_msg):
        """nav_msgs/Odometry of the base state, stamped ``stamp_msg`` (that of the joint states)."""
        msg = self.odom_msg
        msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_msg.sec, stamp_msg.nanosec
        p, quat, lin, ang = odometry_values(model, q, qd)
        pose, twist = msg.pose.pose, msg.twist.twist
        pose.position.x, pose.position.y, pose.position.z = p.tolist()
        o = pose.orientation
        o.x, o.y, o.z, o.w = quat.tolist()
        twist.linear.x, twist.linear.y, twist.linear.z = lin.tolist()
        twist.angular.x, twist.angular.y, twist.angular.z = ang.tolist()
        self.pub_odom.publish(msg)
        self.counts['odometry'] += 1

    def _publish_clock(self):
        if self.pub_clock is None or self.sim is None:
            return
        sec, nanosec = stamp(self.sim.time)
        self.clock_msg.clock.sec = sec
        self.clock_msg.clock.nanosec = nanosec
        self.pub_clock.publish(self.clock_msg)

    def _publish_markers(self):
        if self.sim is None or self.markers is None:
            return
        self.pub_markers.publish(self.markers.update(self.sim.q, self._stamp()))

    # --- inputs ---------------------------------------------------------------
    def _reject(self, what, problem):
        self.counts['rejected'] += 1
        self.last_rejection = '%s: %s' % (what, problem)
        self.get_logger().warning('%s rejected: %s' % (what, problem), throttle_duration_sec=1.0)

    def _accepted(self):
        """Book-keeping of an accepted effort or joint command."""
        if self.fresh_command:
            self.counts['superseded'] += 1             # replaced before any step used it
        self.fresh_command = True
        self.last_command_time = self.sim.time
        if not self.commanded and self.counts['timeouts']:
            self.get_logger().info('commands resumed')
        self.commanded = True

    def _on_effort(self, msg):
        self.counts['effort_commands'] += 1
        if self.sim is None:
            return self._reject('effort command', 'no robot model yet')
        try:
            values = effort_command(msg.data, self.cmd_joints)
            self.sim.set_command(values, 'effort', self.cmd_joints_arg)
        except ValueError as exc:
            return self._reject('effort command', exc)
        self._accepted()

    def _on_joint_command(self, msg):
        self.counts['joint_commands'] += 1
        if self.sim is None:
            return self._reject('joint command', 'no robot model yet')
        try:
            joints, values, modes = joint_command(msg.name, msg.position, msg.velocity, msg.effort, self.index)
            self.sim.set_command(values, modes, joints)
        except ValueError as exc:
            return self._reject('joint command', exc)
        self._accepted()

    def _on_wrench(self, msg):
        self.counts['wrenches'] += 1
        if self.sim is None:
            return self._reject('wrench', 'no robot model yet')
        link = msg.header.frame_id
        if link not in self.links:
            return self._reject('wrench', 'header.frame_id %r is not a link of the model (its links: %s)'
                                % (link[:100], ', '.join(self.sim.model.link_names)))
        try:
            self.sim.apply_wrench(link, wrench_values(msg.wrench.force, msg.wrench.torque), self.p.wrench_frame)
        except ValueError as exc:
            return self._reject('wrench', exc)

    # --- services -------------------------------------------------------------
    def _srv_reset(self, request, response):
        sim = self.sim
        if sim is None:
            return _answer(response, False, 'no robot model yet (%s)' % self.model_status)
        sim.reset(self.q0, self.qd0, sim.time)
        sim.set_command(np.zeros(len(sim.actuated)), 'effort')
        sim.clear_wrenches()
        self.commanded = self.fresh_command = False
        self._restart_clock()
        self._publish_state()
        return _answer(response, True, 'reset to the initial state at t = %.6f s; commands and wrenches cleared'
                       % sim.time)

    def _srv_pause(self, request, response):
        if self.sim is None:
            return _answer(response, False, 'no robot model yet (%s)' % self.model_status)
        pause = bool(request.data)
        was = self.paused
        self.paused = pause
        if was and not pause:
            self._restart_clock()
        self.get_logger().info('%s at t = %.6f s' % ('paused' if pause else 'running', self.sim.time))
        word = 'paused' if pause else 'running'
        return _answer(response, True, ('already %s' if was == pause else '%s') % word
                       + ' at t = %.6f s' % self.sim.time)

    def _srv_set_state(self, request, response):
        sim = self.sim
        if sim is None:
            return _answer(response, False, 'no robot model yet (%s)' % self.model_status)
        js = request.joint_state
        try:
            idx, q_new, qd_new = joint_state_update(js.name, js.position, js.velocity, self.index)
            model = sim.model
            for i, x, v in zip(idx, q_new, qd_new):
                if not model.lower_limit[i] <= x <= model.upper_limit[i]:
                    raise CommandError('position %g for %s is outside its limits [%g, %g]'
                                       % (x, model.joint_names[i], model.lower_limit[i], model.upper_limit[i]))
                if abs(v) > model.velocity_limit[i]:
                    raise CommandError('velocity %g for %s exceeds its limit %g'
                                       % (v, model.joint_names[i], model.velocity_limit[i]))
        except CommandError as exc:
            return _answer(response, False, str(exc))
        q, qd = sim.q, sim.qd
        idx = np.asarray(idx, dtype=int)
        q[model.root_nq + idx], qd[model.root_nv + idx] = q_new, qd_new
        try:                                    # a closed-loop model: the named joints held, the loops closed
            sim.reset(q, qd, sim.time, keep=[model.joint_names[i] for i in idx] if model.loops else None)
        except ValueError as exc:
            return _answer(response, False, 'the loops cannot be closed with these positions: %s' % exc)
        self._restart_clock()
        self._publish_state()
        return _answer(response, True, 'state of %d joint(s) set at t = %.6f s' % (len(idx), sim.time))

    def _restart_clock(self):
        """Pace from now on (no catch-up for the time spent paused or in a service)."""
        if self.pacer is not None:                  # None before create_inputs, or as fast as possible
            self.pacer.anchor(time.perf_counter(), self.steps)

    # --- diagnostics ----------------------------------------------------------
    def diagnostic_status(self, status):
        from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
        now = time.perf_counter()
        wall = max(now - self._diag_wall, 1e-9)
        sim_t = self.sim.time if self.sim is not None else 0.0
        achieved = (sim_t - self._diag_sim) / wall
        self._diag_wall, self._diag_sim = now, sim_t
        pacer = self.pacer
        c = self.counts
        mean_tick = self._tick_time / max(self._ticks, 1)
        values = [
            ('state', self._state()), ('sim_time', '%.6f' % sim_t), ('steps', self.steps),
            ('physics_rate_hz', self.p.physics_rate), ('integrator', self.p.integrator),
            ('real_time_factor', self.p.real_time_factor), ('real_time_factor_achieved', '%.4f' % achieved),
            ('lag_events', pacer.lag_events if pacer else 0),
            ('dropped_time_s', '%.6f' % ((pacer.dropped_steps if pacer else 0) * self.dt)),
            ('tick_time_mean_us', '%.1f' % (mean_tick * 1e6)),
            ('tick_time_max_us', '%.1f' % (self._tick_max * 1e6)),
            ('joint_states_published', c['joint_states']),
            ('effort_commands_in', c['effort_commands']), ('joint_commands_in', c['joint_commands']),
            ('wrenches_in', c['wrenches']), ('commands_rejected', c['rejected']),
            ('commands_superseded', c['superseded']), ('last_rejection', self.last_rejection),
            ('command_timeouts', c['timeouts']), ('simulation_errors', c['simulation_errors']),
            ('non_finite_outputs', c['non_finite_outputs']),
            ('paused', self.paused), ('joints', ', '.join(self.cmd_joints)),
        ] + self._base_values() + self._loop_values()
        status.values.extend(KeyValue(key=k, value=str(v)) for k, v in values)
        self._tick_time = self._tick_max = 0.0
        self._ticks = 0
        if status.level != DiagnosticStatus.OK:
            return
        rtf = self.p.real_time_factor
        if self.sim is None:
            status.level, status.message = DiagnosticStatus.WARN, 'waiting for the robot model'
        elif self.paused:
            status.message = 'paused at t = %.3f s' % sim_t
        elif rtf > 0 and achieved < 0.9 * rtf:
            status.level = DiagnosticStatus.WARN
            status.message = 'running behind: real-time factor %.3f of %.3f' % (achieved, rtf)
        else:
            status.message = 'running (real-time factor %.3f)' % achieved

    def _loop_values(self):
        """Diagnostic values of a closed-loop robot: the last step's drift off the loops (before the projection)."""
        sim = self.sim
        if sim is None or not sim.model.loops:
            return []
        return [('loop_drift_last_step', '%.3g' % sim.loop_closure.last_drift)]

    def _base_values(self):
        """Diagnostic values of a floating or planar base: its kind, link, pose and Odometry count."""
        sim = self.sim
        if sim is None or sim.model.root_joint is None or self.odom_msg is None:
            return []
        m = sim.model
        p, quat, _, _ = odometry_values(m, sim.q, sim.qd)
        return [('base', '%s, base link %s' % (m.root_joint, self.odom_msg.child_frame_id)),
                ('base_position', ', '.join('%.4f' % x for x in p)),
                ('base_orientation_xyzw', ', '.join('%.4f' % x for x in quat)),
                ('odometry_published', self.counts['odometry']), ('odom_frame', self.p.odom_frame)]

    def _state(self):
        if self.sim is None:
            return 'no model'
        return 'paused' if self.paused else 'running'


def _answer(response, success, message):
    response.success = success
    response.message = message
    return response


def main(args=None):
    run(SimulatorNode, args)


if __name__ == '__main__':
    main()
