"""dynamics_node's parameters: the declarative schema (:mod:`.params`) and the checks that take
several of them together."""
import math

from rclpy.parameter import Parameter

from ..control import profiles
from ..control.backend import BACKENDS, LIBRARY
from ..control.compensation import CARTESIAN_IMPEDANCE, COMPUTED_TORQUE, GRAVITY_CORIOLIS, JOINT_IMPEDANCE, MODES
from ..control.watchdog import ON_TIMEOUT
from . import params as P

NODE_PARAMS = (
    P.Param('mode', GRAVITY_CORIOLIS,
            'Torque law. gravity: g(q); gravity_coriolis: g(q) + C(q, qd) qd; '
            'gravity_coriolis_friction: + friction compensation, each joint\'s friction law (the URDF <dynamics> '
            'or actuators_file); '
            'feedforward: M(q_d) qdd_d + C(q_d, qd_d) qd_d + g(q_d) of the reference on '
            '~/trajectory or ~/reference; computed_torque: M(q)(qdd_d + Kd e_d + Kp e) + h(q, qd). '
            'Without a reference the last two command gravity_coriolis compensation. '
            'joint_impedance: K (q_d - q) - D qd + h(q, qd) towards ~/target_joints; cartesian_impedance: '
            'J^T (K e + D de - Lambda Jdot qd) + h(q, qd) + a null-space posture term at impedance_link towards '
            '~/target_pose (rd.JointImpedance, rd.CartesianImpedance; docs/IMPEDANCE.md). Fixed-base trees only.',
            read_only=False, choices=MODES),
    P.Param('backend', LIBRARY,
            'What computes the laws of a fixed-base tree (gravity, Coriolis, feedforward, computed torque). '
            'library: the package\'s compiled kernels; compiled: C generated for the model and compiled with cc '
            '(rd.compile, docs/CODEGEN.md), in a background thread for each new model (description, payload): '
            'the library computes meanwhile, and if it fails. A floating or planar base, closed loops, friction, '
            'the impedance laws and the observer always run on the library.', choices=BACKENDS),
    P.Param('joints', [], 'Joints of the command, in the order of the ros2_control controller\'s '
            '`joints` parameter (it must match it). Empty: every model joint in model order.',
            ptype=Parameter.Type.STRING_ARRAY),
    P.Param('publish_command', False,
            'Publish the command torque as std_msgs/Float64MultiArray on command_topic '
            '(the forward_command_controller convention).'),
    P.Param('command_topic', 'effort_controller/commands',
            'Topic of the Float64MultiArray command (reliable QoS). Relative: in the node\'s namespace.',
            check=lambda v: None if v else 'must not be empty'),
    P.Param('effort_limit_scale', 1.0,
            'Every published torque is clamped to this factor times the URDF effort limit.',
            read_only=False, check=P.in_unit_interval),
    P.Param('joint_state_timeout', 0.1,
            'Seconds without a usable joint_states message (one that gives a torque: dropped messages '
            'do not count) after which on_timeout applies.',
            check=P.positive),
    P.Param('on_timeout', 'zero',
            'What to do when joint states time out. zero: send one all-zero command and stop '
            'publishing until joint states resume; hold: keep sending the last command at the '
            'watchdog rate (warning logged and in diagnostics); stop: publish nothing more '
            '(a forward_command_controller keeps applying its last command!).',
            choices=ON_TIMEOUT),
    P.Param('joint_timeout', 0.0,
            'Per-joint staleness limit [s]: when the latest position of any joint of the torque (every model '
            'joint, or the actuated ones) was received longer ago than this, no torque is computed and '
            'on_timeout applies as for silent joint states, even while other joints keep arriving in their own '
            'messages (a gripper driver that keeps publishing does not hide a dead arm driver). 0: '
            'joint_state_timeout.', check=P.non_negative),
    P.Param('max_state_age', 0.0,
            'Largest age [s] of a joint state when the node takes it, by its header stamp on the node\'s clock '
            '(the system clock, or /clock with use_sim_time): an older state, one stamped further ahead than '
            'this, or an unstamped one gives no torque (counted, warned), so a state that waited in a queue '
            '(a pause of the middleware or of this node) never becomes a command; on_timeout follows when no '
            'state is young enough. Needs the publisher\'s clock synchronised with this host\'s (one host, '
            'or chrony/NTP). 0: off.', check=P.non_negative),
    P.Param('joint_states_reliability', 'best_effort',
            'QoS reliability of the joint_states subscription. best_effort accepts both reliable '
            'and best-effort publishers.', choices=('best_effort', 'reliable')),
    P.Param('diagnostic_torque_rate', 50.0,
            'Most messages per second [Hz] (steady clock) on each diagnostic torque topic: the JointState '
            'topics other than the one of the commanded torque (~/gravity_torque, ~/coriolis_torque; and '
            '~/compensation_torque, ~/feedforward_torque while feedforward or computed_torque commands another '
            'torque). The commanded torque\'s topic and command_topic always go at the input rate. 0: the '
            'diagnostic topics are off; a negative value: every joint state (the input rate), as before '
            'this parameter (publishing them at 1 kHz took about 40 % of the node\'s time).',
            read_only=False, check=lambda v: None if math.isfinite(v) else 'must be finite'),
    P.Param('kp', [], 'Computed-torque position gains [1/s^2]: one value for every joint, or one '
            'per entry of `joints` (model joints not in `joints` get 0).',
            read_only=False, check=P.gains, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('kd', [], 'Computed-torque velocity gains [1/s], as kp.',
            read_only=False, check=P.gains, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('impedance_link', '', 'The link whose origin cartesian_impedance holds at ~/target_pose. Empty: the '
            'model\'s last link (the last of its URDF links: panda_hand_tcp for urdf/panda_arm.urdf).'),
    P.Param('stiffness', [], 'Impedance stiffness. cartesian_impedance: 6 values [N/m x3, N m/rad x3] along and '
            'about the base frame\'s x, y, z; joint_impedance: 1 value for every joint or one per entry of '
            '`joints` [N m/rad or N/m]. Empty: cartesian [500, 500, 500, 30, 30, 30], joint [50].',
            read_only=False, check=P.positive_values, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('damping', [], 'Impedance damping, as stiffness [N s/m, N m s/rad]. Empty: damping ratio 1 in each '
            'mode of the closed loop at the current state (the library\'s damping=None: modal damping with '
            'Lambda(q) or M(q), docs/IMPEDANCE.md).',
            read_only=False, check=P.gains, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('nullspace_stiffness', 0.0, 'cartesian_impedance: stiffness [N m/rad] of the posture torque towards '
            'the joint positions of the first torque, damped with 2 sqrt of it [N m s/rad], in the null space '
            'of the task (a 7-joint arm drifts in its null space without it). 0: none.',
            read_only=False, check=P.non_negative),
    P.Param('max_pose_error', [0.05, 0.3], 'Largest error the impedance law uses: [translation m, rotation rad]; '
            'the error is clipped (not the torque), so a far target pulls like one this near. '
            'joint_impedance clips each joint\'s error at the second (revolute) or the first (prismatic).',
            read_only=False, check=P.positive_values),
    P.Param('max_torque_rate', 1000.0, 'Largest change rate [N m/s] of each impedance torque: between two torques '
            'it changes by at most this times the node-clock time between them (counted at most '
            'joint_state_timeout); 1000 is Franka\'s 1 N m per 1 ms. 0: no limit.',
            read_only=False, check=P.non_negative),
    P.Param('target_timeout', 0.5, 'Largest age [s] of a ~/target_pose or ~/target_joints message by its header '
            'stamp on the node clock (also ahead of it; an unstamped one is refused): an older target is refused '
            'and counted, the last valid one held. 0: not checked.',
            read_only=False, check=P.non_negative),
    P.Param('max_trajectory_bytes', 262144,
            'Largest ~/trajectory or ~/reference message [bytes, serialized] the node converts; a '
            'larger one is dropped before it is deserialized and counted as bad. Converting runs in '
            'the thread of the torque loop, about 0.4 us per byte (256 KiB, some 1,300 points of 7 '
            'joints with positions, velocities and accelerations: about 0.1 s without torques).',
            check=P.positive),
    P.Param('max_request_points', 1000,
            'Most samples an ~/identify_payload request may give: a larger one is refused (success false, the '
            'limit and its size in the message). More samples: give a duration, and the node collects them.',
            check=P.positive),
    P.Param('observer_gains', [], 'Momentum observer of the external joint torques, fed by the efforts (motor '
            'torques) in joint_states: its gain K_O [1/s], the inverse of the time constant with which the '
            'estimate follows the external torque (larger: faster and noisier). One value for every joint, '
            'or one per entry of `joints` (which must then name every model joint). Empty or 0: no observer.',
            check=P.gains, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('collision_thresholds', [], 'Collision thresholds [N m or N] on the estimated external torque, '
            'as observer_gains: ~/collision gets one event when a joint goes over its threshold and one when '
            'every joint is back under. Empty: no collision events. Needs observer_gains.',
            check=P.positive_values, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('external_wrench_link', '', 'Link whose external wrench is estimated from the external torque '
            '(least squares, pinv(J^T) r) and published on ~/external_wrench, at the link origin in link '
            'axes. Empty: none. Needs observer_gains.'),
    P.Param('tracking_friction', False, 'feedforward and computed_torque add the friction laws (with '
            'friction_smoothing): feedforward at the desired velocity qd_d, computed_torque at the measured qd. '
            'Fixed-base trees only (ignored with loops or a moving base). false: no friction in these modes.'),
    P.Param('observer_friction', False, 'Subtract the friction laws (URDF <dynamics> or actuators_file; with '
            'friction_smoothing) from '
            'the measured efforts before the observer, so that joint friction is not taken for external torque.'),
    P.Param('identify_max_duration', 60.0, 'Longest collection [s] ~/identify_payload accepts.',
            check=P.positive),
    P.Param('base_state_topic', '', 'nav_msgs/Odometry topic of the pose and twist of a floating or planar base '
            '(child_frame_id the base link; twist in the base frame; pose in a fixed frame with z up, the frame of '
            '`gravity`). Best-effort QoS: accepts every publisher. Relative: in the node\'s namespace. Needed for '
            'such a robot, which is refused without it; a base state older than joint_state_timeout is stale and '
            'gives no torque. Empty: none (fixed-base robots).'),
    P.Param('identify_rest_velocity', 0.01, '~/identify_payload with static_poses: a sample is at rest, and '
            'used, when every joint is slower than this [rad/s or m/s].', check=P.positive),
    P.Param('robot_compensates_gravity', 'false', 'Does the robot add its own gravity compensation to the effort '
            'command (Franka, UR: true)? true: the command leaves g(q) out (gravity_coriolis then commands the '
            'Coriolis and centrifugal torques only); false: the command is the whole law; unknown: the node does '
            'not start. The torque topics are not affected. config/robots/*.yaml and docs/ROBOTS.md give the '
            'vendor sources.', check=profiles.check_state, dynamic=True),
    P.Param('robot_compensates_friction', 'false', 'Does the robot add its own friction compensation to the effort '
            'command? true: the command leaves the friction compensation of gravity_coriolis_friction out; '
            'false: it includes it; unknown: the node does not start.', check=profiles.check_state, dynamic=True),
    P.Param('joint_state_effort', profiles.JOINT_TORQUE, 'What the effort field of joint_states carries. '
            'joint_torque: the joint torque [N m or N], as the momentum observer, collision_thresholds, '
            'external_wrench_link and ~/identify_payload (collecting joint states) need; motor_current '
            '(a UR arm: ur_robot_driver publishes motor currents there) or unknown: those are refused with the '
            'reason. The vendor profile sets it.', choices=profiles.EFFORT_KINDS),
    P.Param('expected_joint_state_rate', 0.0, 'The rate [Hz] at which the driver publishes joint states (the '
            'controller_manager\'s update rate): joint states that keep arriving at less than half of it '
            '(two diagnostics periods in a row) give one warning and a diagnostics warning, since the node then '
            'listens to a relay or throttled topic, not the driver (a relay that repeats and restamps its last '
            'state also hides a stalled driver from the watchdog). 0: no check. The vendor profile sets it.',
            check=P.non_negative),
    P.Param('controller_manager', '', 'Name of the controller_manager that runs the effort controller (relative: '
            'in the node\'s namespace, e.g. controller_manager). Set, the node owns its controller: on a clean '
            'stop (SIGINT, SIGTERM, lifecycle deactivate or shutdown, an error that ends the node) it sends one '
            'zero command and deactivates controller_name through <controller_manager>/switch_controller, so the '
            'hardware leaves its effort mode as its vendor defines. Empty: the node only sends the zero command.'),
    P.Param('controller_name', 'effort_controller', 'The effort controller that reads command_topic; '
            'deactivated on a clean stop when controller_manager is set.',
            check=lambda v: None if v else 'must not be empty'),
    P.Param('extra_joint_state_topics', [], 'More sensor_msgs/JointState topics (best effort: accepts every '
            'publisher) whose joints are merged by name into the state of joint_states: the joints the main stream '
            'lacks, e.g. a Franka gripper\'s fingers on franka_gripper/joint_states while franka/joint_states '
            'carries the 7 arm joints. Their messages give no torque by themselves (one command per joint_states '
            'message); their joints go stale after extra_joint_state_timeout. Relative: in the node\'s '
            'namespace. Empty: none.', ptype=Parameter.Type.STRING_ARRAY),
    P.Param('extra_joint_state_timeout', 0.5, 'Largest age [s] of the latest position of a joint set by an extra '
            'joint-state topic (by its reception): an older one gives no torque and on_timeout applies, as for '
            'joint_timeout. Longer than joint_timeout because a gripper publishes slowly (franka_gripper: '
            'state_publish_rate 15 Hz in franka_gripper/config/franka_gripper_node.yaml, jazzy).',
            check=P.positive),
    P.Param('held_joints', [], 'Model joints held at fixed positions (held_positions), at rest, for joints no '
            'topic carries (e.g. the fingers of a gripper without a driver); a message naming one does not change '
            'it, and it is never stale. Names the model lacks are warned about and ignored. Empty: none.',
            ptype=Parameter.Type.STRING_ARRAY),
    P.Param('held_positions', [], 'Positions [rad or m] of held_joints, one per entry, in its order.',
            check=P.finite_values, ptype=Parameter.Type.DOUBLE_ARRAY),
    P.Param('services_node', '', 'The dynamics_services node that serves this node\'s read-only services '
            '(the launch files start it beside this node, under this node\'s service names): its payloads are '
            'kept at this node\'s (payload_sync.py). Relative: in this node\'s namespace. Empty: none.'),
)


def observer_on(p):
    """Whether parameters ``p`` ask for the momentum observer (a gain > 0)."""
    return any(g > 0 for g in p.observer_gains)


def validate(p, warn):
    """Check the parameters ``p`` together (ParameterError naming the problem); ``warn(text)`` logs a warning."""
    for name in ('kp', 'kd', 'observer_gains', 'collision_thresholds'):
        gains = getattr(p, name)
        if len(gains) > 1 and p.joints and len(gains) != len(p.joints):
            raise P.ParameterError("parameter %r has %d values; expected 1 or one per entry of "
                                   "'joints' (%d)" % (name, len(gains), len(p.joints)))
        if len(gains) > 1 and not p.joints:
            raise P.ParameterError("parameter %r has %d values: per-joint gains need the "
                                   "'joints' parameter to name their joints (or give 1 value)"
                                   % (name, len(gains)))
    if p.mode == COMPUTED_TORQUE and not p.kp:
        warn('mode computed_torque with no kp/kd gains: pure feedforward plus compensation of the measured '
             'state')
    _impedance(p)
    if len(p.held_joints) != len(p.held_positions) or len(set(p.held_joints)) != len(p.held_joints):
        raise P.ParameterError("parameters 'held_joints' (%d) and 'held_positions' (%d) must name each held joint "
                               "once and give one position per held joint, in its order"
                               % (len(p.held_joints), len(p.held_positions)))
    if len(set(p.joints)) != len(p.joints):
        raise P.ParameterError("parameter 'joints' names a joint more than once: %s" % p.joints)
    # Never command a term the robot compensates itself (profiles.py, docs/ROBOTS.md).
    problem = (profiles.unknown_problem(p.robot_compensates_gravity, p.robot_compensates_friction)
               or profiles.mode_problem(p.mode, p.robot_compensates_gravity, p.publish_command))
    if problem:
        raise P.ParameterError(problem)
    if observer_on(p) and not all(g > 0 for g in p.observer_gains):
        raise P.ParameterError("parameter 'observer_gains' mixes 0 (no observer) and gains > 0: give every "
                               "joint a gain > 0, or [] for no observer")
    if p.joint_state_effort != profiles.JOINT_TORQUE and (observer_on(p) or p.collision_thresholds
                                                           or p.external_wrench_link):
        raise P.ParameterError(
            "parameters 'observer_gains', 'collision_thresholds' and 'external_wrench_link' need joint torques "
            "in the effort field of joint_states, and joint_state_effort is %r (the vendor profile's; a UR arm's "
            "driver publishes motor currents there): the momentum observer would take the difference for an "
            "external torque. Leave them empty, or publish joint torques and set joint_state_effort "
            "joint_torque (docs/ROBOTS.md)" % p.joint_state_effort)
    if not observer_on(p) and (p.collision_thresholds or p.external_wrench_link):
        raise P.ParameterError("parameters 'collision_thresholds' and 'external_wrench_link' need the "
                               "momentum observer: set 'observer_gains'")


def _impedance(p):
    """The sizes of the impedance parameters for the mode (ParameterError)."""
    if len(p.max_pose_error) != 2:
        raise P.ParameterError("parameter 'max_pose_error' must be 2 values [m, rad], got %s" % p.max_pose_error)
    for name in ('stiffness', 'damping'):
        values = getattr(p, name)
        if p.mode == CARTESIAN_IMPEDANCE and values and len(values) != 6:
            raise P.ParameterError("parameter %r of mode cartesian_impedance must be 6 values [N/m x3, N m/rad x3] "
                                   "(or empty), got %d" % (name, len(values)))
        if p.mode == JOINT_IMPEDANCE and len(values) > 1 and len(values) != len(p.joints):
            raise P.ParameterError("parameter %r of mode joint_impedance must be 1 value or one per entry of "
                                   "'joints' (%d), got %d" % (name, len(p.joints), len(values)))


def parameter_changes(parameters):
    """({name: value}, None) of the changes of dynamics_node's own parameters among ``parameters`` (rclpy
    Parameters; arrays as lists), each valid by itself; or (None, the first problem)."""
    changes = {}
    for param in parameters:
        spec = next((s for s in NODE_PARAMS if s.name == param.name), None)
        if spec is None:
            continue
        value = list(param.value) if param.type_ in (Parameter.Type.DOUBLE_ARRAY,
                                                      Parameter.Type.STRING_ARRAY) else param.value
        problem = spec.validate(value)
        if problem:
            return None, '%s %s' % (param.name, problem)
        changes[param.name] = value
    return changes, None
