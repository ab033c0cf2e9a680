"""dynamics_node: gravity/Coriolis/friction compensation, feedforward and
computed torque from joint states, with an optional ros2_control bridge.

Run: ``ros2 run robot_dynamics dynamics_node --ros-args -p urdf_path:=arm.urdf``
(or ``python -m robot_dynamics.ros.dynamics_node --ros-args ...``).

Subscribes:
    joint_states (sensor_msgs/JointState, best effort by default: accepts
        reliable and best-effort publishers). Joints are mapped by name;
        partial messages are merged; nothing is published until every model
        joint has a position. One output per input message after that.
    ~/trajectory (trajectory_msgs/JointTrajectory): desired motion for the
        feedforward and computed_torque modes, sampled at the current time
        (start: header.stamp, or reception if zero). No points: clears it.
        A message over ``max_trajectory_bytes`` is dropped unread (counted).
    ~/reference (trajectory_msgs/JointTrajectory): a streamed set-point: the
        first point is used at once and held until the next message.
    robot_description (see :mod:`robot_dynamics.ros.model_node`).
    <base_state_topic> (nav_msgs/Odometry, best effort: accepts every
        publisher), if set: the pose and twist of a floating or planar base
        (:mod:`.base_state`).

A floating or planar robot (docs/FLOATING-BASE.md) is refused unless
``base_state_topic`` is set. With it, each joint state is joined with the
latest base state (pose, twist; the base's acceleration taken as zero),
the laws run on the full state and only the joints' torques are published
(:mod:`.base_compensation`). Odometry's ``child_frame_id`` must name the
model's base link (another frame or none: the message is rejected), its
twist is in that frame (the library's convention) and its pose in a fixed
frame whose z is up (the frame of ``gravity``). A bad base state
(non-finite, a quaternion norm off 1 by more than 1e-2, a pose out of the
plane of a planar base, another child frame) is rejected and counted with
the bad messages. The base state follows the joint states' rule: older
than ``joint_state_timeout`` (since its reception) it is stale, and a joint
state then gives no torque (counted), so the watchdog's ``on_timeout``
follows as for silent joint states. The momentum observer and
``~/identify_payload`` need a fixed base and refuse such a robot.

A closed-loop robot (``loops_file`` with ``actuated_joints``, docs/LOOPS.md):
the laws are computed by :mod:`.closed_loop` with
``rd.constrained_inverse_dynamics`` and every torque output (the JointState
topics and the command) is for the actuated joints only (``joints``
defaults to them and may not name a passive joint). Joint states need only
the actuated joints: the passive positions are assembled from them (the
message's passive positions, if any, only start the assembly), the
velocities follow from the loops. A singular pose (``SingularityError``)
gives no torque, counted in diagnostics (``singular_states``) like the
states whose loops cannot be closed (``bad_messages``); the watchdog then
acts as for silent joint states. The momentum observer and
``~/identify_payload`` refuse such a robot.

Topic names are relative (``joint_states``, ``robot_description``,
``effort_controller/commands``) or private (``~/...``): a namespace moves
them all; only /diagnostics and /clock are absolute, as ROS 2 has them.

Publishes (with the input joint state's header, so its stamp; names + effort):
    ~/gravity_torque, ~/coriolis_torque, ~/compensation_torque
        (sensor_msgs/JointState; compensation = gravity + Coriolis
        [+ friction], by ``mode``; Coriolis is zero in ``gravity`` mode);
    ~/feedforward_torque, ~/computed_torque (sensor_msgs/JointState), in the
        feedforward / computed_torque modes while a reference is active;
        the topic of the commanded torque (compensation, or feedforward /
        computed torque while that mode has a reference) goes with every
        joint state, the others are diagnostic: at most
        ``diagnostic_torque_rate`` [Hz] each (default 50; 0 off, < 0 every
        joint state). A joint state without header.frame_id gets the
        model's root link there (RViz's Effort display needs a frame);
    <command_topic> (std_msgs/Float64MultiArray, reliable) if
        ``publish_command``: the command torque in the order of ``joints``;
    ~/external_torque (sensor_msgs/JointState, effort = the external joint
        torque the momentum observer estimates) if ``observer_gains``;
    ~/external_wrench (geometry_msgs/WrenchStamped, frame_id the link) if
        ``external_wrench_link``, while it has a subscriber;
    ~/collision (robot_dynamics_interfaces/Collision, reliable, latest kept)
        if ``collision_thresholds``: one event when a joint goes over its
        threshold and one when all are back under;
    /diagnostics (diagnostic_msgs/DiagnosticArray).

The observer (:mod:`.external_torque`) takes a sample from each joint state
that gives every model joint an effort (the motor torque), at the time of
its stamp; a message without efforts is counted and warned about (throttled)
and skipped. It starts again from zero with each new model (description or
payload) and after a gap of more than ``joint_state_timeout``.

Every published torque is finite and clamped to effort_limit_scale times the
URDF effort limit. If no joint state that gives a torque comes for
``joint_state_timeout`` seconds (dropped messages do not count, so a
publisher of NaN times out like a dead one) the node does what
``on_timeout`` says (zero / hold / stop), logs it and reports it in
diagnostics; the zero command also goes out when a new description no
longer fits ``joints``. The watchdog is a timer of period
``joint_state_timeout / 10`` (1 to 50 ms); /diagnostics reports its calls
and the longest wall time between two of them, and
test/ros/test_ros_watchdog_timing.py checks it keeps time under a 1 kHz
stream. These limits count from when the node takes a message; with
``max_state_age`` (off by default: it needs synchronised clocks) a state is
also judged by its header stamp, so one that waited in a queue (a pause of
the middleware or of the node) gives no torque.

Services: ``~/set_payload`` (see ``model_node``) and ``~/identify_payload``
(robot_dynamics_interfaces/IdentifyPayload): a payload on a link from this
node's joint states over a duration, or from given samples; the collection
runs in the torque loop (one copy per message), the fit in a thread of its
own, and the request waits for its answer in a thread of its own
(:mod:`.service_thread`), so the torques never wait for it. The read-only
dynamics services (gravity, inverse and forward dynamics, mass matrix,
trajectory efforts), whose requests can be large, are not served here: the
launch files start ``dynamics_services`` beside this node, under this node's
service names (docs/NODES.md, "Which requests go where"); with
``services_node`` set, a payload set here is set there too.
"""
import gc
import math
import sys
import time
from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import Point, Vector3, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics_interfaces.msg import Collision
from robot_dynamics_interfaces.srv import IdentifyPayload

from ..errors import InputError, SingularityError
from ..ros import params as P
from ..control import base_compensation
from ..control.base_state import BaseState, base_link
from .cdr import Float64ArrayWriter, JointStateReader, JointStateWriter, header_bytes
from ..control.closed_loop import ClosedLoop
from ..control.compensation import (COMPUTED_TORQUE, FEEDFORWARD, GRAVITY_CORIOLIS, MODES, Compensation,
                           TorqueLimiter, computed_torque, feedforward)
from ..control import profiles
from ..control.external_torque import ExternalTorqueMonitor, warm_up as warm_up_observer
from ..control.joint_map import JointMapError, JointStateMerger, reorder_indices
from .model_node import ModelNode, describe_base, run, warm_up_model, warm_up_moving_base
from ..control.payload_fit import PayloadJob, SampleBuffer, parallel_is_exclusive, payload_entry
from .payload_sync import PayloadSync
from .service_thread import ServiceThread
from .controller_switch import ControllerSwitch, SwitchUnavailable
from ..control.staleness import InputRate, JointStaleness, state_age_problem
from ..control.trajectory import TrajectorySampler

ON_TIMEOUT = ('zero', 'hold', 'stop')

NODE_PARAMS = (
    P.Param('mode', GRAVITY_CORIOLIS,
            'Torque law. gravity: g(q); gravity_coriolis: g(q) + C(q, qd) qd; '
            'gravity_coriolis_friction: + friction compensation from the URDF <dynamics>; '
            'feedforward: M(q_d) qdd_d + C(q_d, qd_d) qd_d + g(q_d) of the reference on '
            '~/trajectory or ~/reference; computed_torque: M(q)(qdd_d + Kd e_d + Kp e) + h(q, qd). '
            'Without a reference the last two command gravity_coriolis compensation.',
            read_only=False, choices=MODES),
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
    P.Param('observer_friction', False, 'Subtract the URDF <dynamics> friction (with friction_smoothing) from '
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
    P.Param('services_node', '', 'The dynamics_services node that serves this node\'s read-only services '
            '(the launch files start it beside this node, under this node\'s service names): its payloads are '
            'kept at this node\'s (payload_sync.py). Relative: in this node\'s namespace. Empty: none.'),
)

#: QoS of ~/collision: reliable, and the latest event kept for late subscribers (the current state).
COLLISION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)


@dataclass
class _Identification:
    """A ~/identify_payload request in progress: the fit, whom to answer, what to do with the result."""
    job: PayloadJob
    ticket: object                  # service_thread.Ticket
    apply: bool
    base: object                    # the base model at the request (applied only if it is still the same)
    end_ns: int = 0                 # node clock time the collection ends [ns]


def _per_joint(name, values, names, cmd_joints):
    """(nq,) model-order values of parameter ``name``: one value for every joint, or one per
    entry of ``cmd_joints``, which must then name every model joint."""
    if len(values) == 1:
        return np.full(len(names), float(values[0]))
    missing = [n for n in names if n not in cmd_joints]
    if missing:
        raise InputError("parameter %r gives one value per entry of 'joints', which misses the model "
                         "joint(s) %s" % (name, ', '.join(missing)))
    out = np.empty(len(names))
    out[reorder_indices(names, cmd_joints)] = values
    return out


class DynamicsNode(ModelNode):
    """Compensation / feedforward / computed-torque node (see the module doc)."""

    default_name = 'dynamics_node'
    extra_params = NODE_PARAMS
    query_services = False              # served by dynamics_services, another process (query_services.py)

    def __init__(self, node_name=default_name, **kwargs):
        super().__init__(node_name, **kwargs)
        self.ready = False                  # outputs prepared for the current model
        self.comp = self.limiter = self.merger = self.pub_cmd = None
        self.reference = None
        self.cmd_joints = []
        # Statistics for /diagnostics (totals; the rest are per period).
        self.n_in = self.n_out = self.n_bad = self.n_nonfinite = self.n_timeouts = 0
        self.n_commands = 0
        self.n_fresh = 0                    # see _on_joint_state
        self.n_references = 0               # messages on ~/trajectory and ~/reference
        self._period_in = 0
        self._cb_time = self._cb_max = 0.0
        self._age_sum = self._age_max = 0.0
        self._age_n = 0
        self._last_clamp_events = 0
        self._last_diag = time.monotonic()
        # Watchdog.
        self.timed_out = False
        self.streaming = False              # published since the last timeout
        self._wd_count = 0
        self._wd_period = 0.0               # [s], set by create_inputs
        self._wd_calls = 0                  # watchdog calls in this diagnostics period
        self._wd_prev = None                # time.monotonic() of the previous call
        self._wd_gap_max = 0.0              # longest wall time between two calls this period [s]
        self._ref_start = 0
        self._ref_stream = False
        # Momentum observer (None: off) and its outputs.
        self.monitor = None
        self.pub_ext = self.pub_wrench = self.pub_collision = None
        self.n_no_effort = self.n_bad_effort = self.n_collisions = 0
        self._obs_time = self._obs_max = 0.0
        self._obs_n = 0
        # ~/identify_payload: the running job, and the samples it collects.
        self.job = None
        self.collection = None
        # Floating or planar base: the latest base state (None: a fixed base, or no model yet).
        self.base = None
        self.n_no_base = 0                  # joint states that gave no torque for want of a fresh base state
        self._ff = self._ct = None          # the feedforward / computed-torque laws of the model
        # Closed loops: the laws (None for a tree), the passive joints' positions of the messages.
        self.loop = self.passive = None
        self.n_singular = 0                 # joint states at a singular pose (no torque)
        # Per-joint staleness (staleness.py): the reception time of each joint's latest position.
        self.staleness = None
        self.n_stale = 0                    # joint states that gave no torque for a stale joint
        self.n_too_old = 0                  # joint states older than max_state_age when taken (no torque)
        self.timeout_cause = ''             # why the last timeout came (a stale joint), or ''
        # ~/identify_payload's thread (service_thread.py); the payloads of services_node (payload_sync.py).
        self.payload_sync = None
        self._service_thread = None         # (rclpy's Node has self._services: its list of services)
        self.last_singularity = ''
        self.out_names = ()                 # joints of the torque outputs: the model's, or the actuated ones
        # Diagnostic torque topics (diagnostic_torque_rate): None off, 0 every message, else the period [ns].
        self._diag_period_ns = 0
        self._diag_due = 0                  # time.monotonic_ns() from which the next one may go
        self.n_diagnostic_out = 0           # joint states whose diagnostic torques were published
        self._frame = ''                    # frame_id of the outputs of a joint state without one
        self.reader = JointStateReader()    # joint_states arrive serialized (cdr.py)
        # The end (final_stop) and the command's listeners.
        self.switch = None                  # ControllerSwitch of the owned controller (controller_manager set)
        self.input_rate = None              # staleness.InputRate: joint states slower than the driver's rate
        self.cmd_subscribers = -1           # subscribers of command_topic at the latest check (-1: none yet)
        self._unheard_since = None          # time.monotonic() since which commands went to no subscriber
        self._unheard_warned = False
        self._listener_due = 0.0
        self._listener_commands = 0
        self._now_ns = self._ros_now_ns     # the node clock's time [ns] (create_outputs may choose a cheaper read)
        self.cmd_writer = None

    def warm_up(self):
        super().warm_up()
        if self.observer_on:
            warm_up_observer(warm_up_model())
        if self.p.base_state_topic:
            warm_up_moving_base()

    def create_outputs(self):
        p = self.p
        self._sim_time = self.get_parameter('use_sim_time').value
        # Without simulated time the ROS clock reads the system clock: time.time_ns, 60x cheaper.
        self._now_ns = self._ros_now_ns if self._sim_time else time.time_ns
        self._timeout_ns = int(p.joint_state_timeout * 1e9)
        self._joint_timeout_ns = int((p.joint_timeout or p.joint_state_timeout) * 1e9)
        self._max_age_ns = int(p.max_state_age * 1e9)
        # rclpy adds two QoS-event waitables to every publisher and subscription
        # unless told otherwise, and its executor walks all of them for every
        # message: measured, they cost more than the dynamics. The default
        # warnings stay on the topics where a QoS mismatch matters (joint_states,
        # the controller command); the private outputs go without.
        quiet = PublisherEventCallbacks(use_default_callbacks=False)
        self.pub_gravity = self.create_publisher(JointState, '~/gravity_torque', 10, event_callbacks=quiet)
        self.pub_coriolis = self.create_publisher(JointState, '~/coriolis_torque', 10, event_callbacks=quiet)
        self.pub_total = self.create_publisher(JointState, '~/compensation_torque', 10, event_callbacks=quiet)
        self.pub_ff = self.create_publisher(JointState, '~/feedforward_torque', 10, event_callbacks=quiet)
        self.pub_ct = self.create_publisher(JointState, '~/computed_torque', 10, event_callbacks=quiet)
        if p.publish_command:
            # Reliable, volatile: what a forward_command_controller subscribes with.
            self.pub_cmd = self.create_publisher(Float64MultiArray, p.command_topic,
                                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
            if p.controller_manager:
                # Made now, so its service is matched long before the stop that needs it.
                try:
                    self.switch = ControllerSwitch(self, p.controller_manager, p.controller_name)
                except SwitchUnavailable as exc:
                    raise P.ParameterError("parameter 'controller_manager' is set: %s" % exc) from None
        self.input_rate = InputRate(p.expected_joint_state_rate)
        if self.observer_on:
            self.pub_ext = self.create_publisher(JointState, '~/external_torque', 10, event_callbacks=quiet)
        if p.external_wrench_link:
            self.pub_wrench = self.create_publisher(WrenchStamped, '~/external_wrench', 10, event_callbacks=quiet)
        if p.collision_thresholds:
            self.pub_collision = self.create_publisher(Collision, '~/collision', COLLISION_QOS,
                                                       event_callbacks=quiet)

    @property
    def observer_on(self):
        return any(g > 0 for g in self.p.observer_gains)

    def create_inputs(self):
        p = self.p
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._wd_last = self._now_ns()
        self._wd_period = min(max(min(p.joint_state_timeout, self._joint_timeout_ns * 1e-9) / 10.0, 0.001), 0.05)
        self.create_timer(self._wd_period, self._watchdog)
        # ~/identify_payload's requests are converted in its thread: the torque loop waits at most a GIL switch.
        sys.setswitchinterval(0.001)       # [s]
        self._service_thread = ServiceThread(self)
        self._service_thread.create_deferred_service(IdentifyPayload, '~/identify_payload', _stopped_answer)
        if p.services_node:
            self.payload_sync = PayloadSync(self, self.resolve_service_name(p.services_node))
            self.create_timer(0.1, self.payload_sync.tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        # Steady clock: the answer must come even while simulated time stands still.
        self.create_timer(0.05, self._identify_tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        quiet = SubscriptionEventCallbacks(use_default_callbacks=False)
        # Raw (serialized) messages: the size is checked before the costly
        # conversion to Python objects.
        self.create_subscription(JointTrajectory, '~/trajectory', self._on_trajectory, 10,
                                 event_callbacks=quiet, raw=True)
        self.create_subscription(JointTrajectory, '~/reference', self._on_reference, 10,
                                 event_callbacks=quiet, raw=True)
        if p.base_state_topic:
            self.create_subscription(Odometry, p.base_state_topic, self._on_base_state,
                                     QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        reliability = (ReliabilityPolicy.BEST_EFFORT if p.joint_states_reliability == 'best_effort'
                       else ReliabilityPolicy.RELIABLE)
        # Last: its appearance in the graph tells clients that the node is ready. Serialized (raw): the
        # torque loop reads and writes the bytes (cdr.py) instead of rclpy's Python messages.
        self.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                 QoSProfile(depth=100, reliability=reliability), raw=True)
        # The objects of the imports and of the model (some 130,000: numba, scipy, rclpy) live as long as the
        # node: out of the garbage collector's sight, whose full collections walked them all in 20-70 ms of the
        # torque loop (measured at 1 kHz: bursts of about 100 joint states 10-20 ms late). Freed as usual.
        gc.freeze()

    # --- parameters -----------------------------------------------------------
    def validate_params(self):
        p = self.p
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
            self.get_logger().warning('mode computed_torque with no kp/kd gains: pure feedforward '
                                      'plus compensation of the measured state')
        if len(set(p.joints)) != len(p.joints):
            raise P.ParameterError("parameter 'joints' names a joint more than once: %s" % p.joints)
        # Never command a term the robot compensates itself (profiles.py, docs/ROBOTS.md).
        problem = (profiles.unknown_problem(p.robot_compensates_gravity, p.robot_compensates_friction)
                   or profiles.mode_problem(p.mode, p.robot_compensates_gravity, p.publish_command))
        if problem:
            raise P.ParameterError(problem)
        if self.observer_on and not all(g > 0 for g in p.observer_gains):
            raise P.ParameterError("parameter 'observer_gains' mixes 0 (no observer) and gains > 0: give every "
                                   "joint a gain > 0, or [] for no observer")
        if p.joint_state_effort != profiles.JOINT_TORQUE and (self.observer_on or p.collision_thresholds
                                                               or p.external_wrench_link):
            raise P.ParameterError(
                "parameters 'observer_gains', 'collision_thresholds' and 'external_wrench_link' need joint torques "
                "in the effort field of joint_states, and joint_state_effort is %r (the vendor profile's; a UR arm's "
                "driver publishes motor currents there): the momentum observer would take the difference for an "
                "external torque. Leave them empty, or publish joint torques and set joint_state_effort "
                "joint_torque (docs/ROBOTS.md)" % p.joint_state_effort)
        if not self.observer_on and (p.collision_thresholds or p.external_wrench_link):
            raise P.ParameterError("parameters 'collision_thresholds' and 'external_wrench_link' need the "
                                   "momentum observer: set 'observer_gains'")

    def _ros_now_ns(self):
        return self._clock.now().nanoseconds

    def _on_set_parameters(self, parameters):
        changes = {}
        for param in parameters:
            if param.name == 'use_sim_time':
                self._now_ns = self._ros_now_ns     # from now on the clock decides, simulated time or not
            spec = next((s for s in NODE_PARAMS if s.name == param.name), None)
            if spec is None:
                continue
            value = list(param.value) if param.type_ in (Parameter.Type.DOUBLE_ARRAY,
                                                          Parameter.Type.STRING_ARRAY) else param.value
            problem = spec.validate(value)
            if problem:
                return SetParametersResult(successful=False, reason='%s %s' % (param.name, problem))
            changes[param.name] = value
        if not changes:
            return SetParametersResult(successful=True)
        old = {k: getattr(self.p, k) for k in changes}
        for k, v in changes.items():
            setattr(self.p, k, v)
        problem = None
        try:
            self.validate_params()
        except P.ParameterError as exc:
            problem = str(exc)
        if problem is None and self.model is not None:
            problem = self.on_model(self.model, False)
        if problem:
            for k, v in old.items():
                setattr(self.p, k, v)
            if self.model is not None:
                self.on_model(self.model, False)
            return SetParametersResult(successful=False, reason=problem)
        return SetParametersResult(successful=True)

    # --- model ----------------------------------------------------------------
    def on_model(self, model, joints_changed):
        """(Re)build everything that depends on the model; None or the problem."""
        self.ready = False
        p = self.p
        loops = bool(model.loops)
        names = tuple(self.actuated(model)) if loops else tuple(model.joint_names)
        if not loops and p.actuated_joints and set(p.actuated_joints) != set(names):
            return ("actuated_joints names %d of the %d joints of %r, which has no loops (loops_file): a tree "
                    "with passive joints cannot be compensated" % (len(p.actuated_joints), len(names), model.name))
        cmd_joints = list(p.joints) or list(names)
        try:
            cmd_idx = reorder_indices(names, cmd_joints, what="parameter 'joints'")
        except JointMapError as exc:
            if loops:
                passive = [j for j in cmd_joints if j in model.joint_names and j not in names]
                if passive:
                    return ("the model does not fit the controller: parameter 'joints' names the passive joint(s) "
                            "%s; the command is for the actuated joints (%s)" % (', '.join(passive), ', '.join(names)))
            return 'the model does not fit the controller: %s' % exc
        index = [model.joint_names.index(n) for n in names]
        limiter = TorqueLimiter(model.effort_limit[index], p.effort_limit_scale)
        if not limiter.bounded:
            free = [n for n, l in zip(names, limiter.limit) if not math.isfinite(l)]
            self.get_logger().warning('no URDF effort limit for %s: their torques are checked for '
                                      'finiteness but not clamped' % ', '.join(free))
        if self.limiter is not None:
            limiter.clamp_events = self.limiter.clamp_events
        if self.merger is None or self.merger.joint_names != names:
            self.merger = JointStateMerger(names)
            self.staleness = JointStaleness(names, self._joint_timeout_ns)
            self.reference = None
            self._abort_identification('the model\'s joints changed while collecting joint states')
        passive = tuple(n for n in model.joint_names if n not in names)
        if not passive:
            self.passive = None
        elif self.passive is None or self.passive.joint_names != passive:
            self.passive = JointStateMerger(passive)
        problem = self._build_monitor(model, names, cmd_joints)
        if problem:
            return problem
        # The torques are computed into these arrays and published serialized (cdr.py).
        views = {}
        outputs = {}
        writer = JointStateWriter(names)
        for key, pub in (('gravity', self.pub_gravity), ('coriolis', self.pub_coriolis),
                         ('total', self.pub_total), ('ff', self.pub_ff), ('ct', self.pub_ct)):
            views[key] = np.zeros(len(names))
            outputs[key] = (pub, writer, views[key])
        comp = self._laws(model)
        comp.gravity, comp.coriolis, comp.total = views['gravity'], views['coriolis'], views['total']
        self.views = views
        # What is published in each case, the command torque first.
        self.out_comp = (outputs['total'], outputs['gravity'], outputs['coriolis'])
        self.out_ff = (outputs['ff'],) + self.out_comp
        self.out_ct = (outputs['ct'], outputs['ff']) + self.out_comp
        self.cmd_writer, self.cmd_view = Float64ArrayWriter(len(cmd_joints)), np.zeros(len(cmd_joints))
        self.comp, self.limiter = comp, limiter
        self.cmd_idx, self.cmd_joints = cmd_idx, cmd_joints
        self.kp = self._gains(p.kp, names, cmd_joints)
        self.kd = self._gains(p.kd, names, cmd_joints)
        self.out_names = names
        self.mode = p.mode
        rate = p.diagnostic_torque_rate
        self._diag_period_ns = None if rate == 0 else (0 if rate < 0 else max(int(1e9 / rate), 1))
        self._frame = model.base_link
        self.robot_terms = profiles.CommandTerms(profiles.parse_state(p.robot_compensates_gravity) == profiles.TRUE,
                                                 profiles.parse_state(p.robot_compensates_friction) == profiles.TRUE,
                                                 len(names))
        self.ready = True
        return None

    def _laws(self, model):
        """The compensation of ``model`` (set ``self._ff``, ``self._ct``, ``self.base`` and ``self.loop`` to go
        with it)."""
        p = self.p
        if model.loops:
            self.base = None
            old, loop = self.loop, ClosedLoop(model, self.actuated(model), p.mode, p.friction_smoothing)
            if old is not None and old.model.joint_names == model.joint_names:
                loop.q = old.q                        # the branch the mechanism is on carries over
            self.loop = loop
            self._ff = loop.feedforward
            self._ct = lambda q, qd, *desired: loop.computed_torque(q, qd, *desired, self.kp, self.kd)
            return loop
        self.loop = None
        if model.root_joint is None:
            self.base = None
            self._ff = lambda q, qd, q_d, qd_d, qdd_d: feedforward(model, q_d, qd_d, qdd_d)
            self._ct = lambda q, qd, *desired: computed_torque(model, q, qd, *desired, self.kp, self.kd)
            return Compensation(model, p.mode, p.friction_smoothing)
        old, base = self.base, BaseState(model, self._timeout_ns)
        if old is not None and (old.frame, old.model.root_joint) == (base.frame, model.root_joint):
            base.update_from(old)       # same base (a payload, a new description of the robot)
        self.base = base
        self._ff = lambda q, qd, *desired: base_compensation.feedforward(model, q, qd, *desired)
        self._ct = lambda q, qd, *desired: base_compensation.computed_torque(model, q, qd, *desired,
                                                                            self.kp, self.kd)
        return base_compensation.FullStateCompensation(model, p.mode, p.friction_smoothing)

    def moving_base_problem(self, model):
        """None for a fixed base, or a floating or planar one with ``base_state_topic``; else what to set."""
        if model.root_joint is None:
            return None
        if not self.p.base_state_topic:
            return ("%s: dynamics_node needs its pose and twist; set the parameter 'base_state_topic' to a "
                    "nav_msgs/Odometry topic of the base (child_frame_id %r, twist in the base frame), or give a "
                    "description whose root link is fixed to the world"
                    % (describe_base(model), base_link(model)))
        if self.observer_on:
            return ("%s: the momentum observer (parameter 'observer_gains') needs a fixed base: the measured "
                    "joint torques of a moving base do not give its momentum without the wrenches on the base "
                    "(contacts, wheels); set 'observer_gains' to [] for this robot" % describe_base(model))
        return None

    def loops_problem(self, model):
        """ModelNode's check of ``actuated_joints``; and the observer refuses a closed-loop robot."""
        if model.loops and self.observer_on:
            return ("robot %r has closed loops (loops_file): the momentum observer (parameter 'observer_gains') "
                    "needs a tree, whose joint torques give its momentum; set 'observer_gains' to [] for this robot"
                    % model.name)
        return super().loops_problem(model)

    def service_base_state(self, model):
        """The latest base state from ``base_state_topic`` if it is fresh (InputError if not)."""
        base = self.base
        if base is None or base.model.root_joint != model.root_joint:
            raise InputError('%s and no base state has come on %s yet' % (describe_base(model), self._base_topic()))
        now = self._now_ns()
        if not base.fresh(now):
            raise InputError('%s: %s' % (describe_base(model), self._no_base_text(base, now)))
        return base.q.copy(), base.v.copy()

    def _base_topic(self):
        return self.resolve_topic_name(self.p.base_state_topic) if self.p.base_state_topic else '(none)'

    def _no_base_text(self, base, now):
        if not base.known:
            return 'no base state on %s yet' % self._base_topic()
        return ('the base state on %s is stale: %.3f s old, more than joint_state_timeout (%.3f s)'
                % (self._base_topic(), base.age(now), self.p.joint_state_timeout))

    def _build_monitor(self, model, names, cmd_joints):
        """The momentum observer of ``model`` (kept for the same model, so a parameter change does not
        restart it), or None when off; returns None or the problem."""
        p = self.p
        old = self.monitor
        if not self.observer_on or (old is not None and old.model is model):
            return None
        self.monitor = None
        link = p.external_wrench_link or None
        try:
            gains = _per_joint('observer_gains', p.observer_gains, names, cmd_joints)
            thresholds = (_per_joint('collision_thresholds', p.collision_thresholds, names, cmd_joints)
                          if p.collision_thresholds else None)
            if link is not None and link not in model.link_names:
                raise InputError("parameter 'external_wrench_link' %r is not a link of the model (its links: %s)"
                                 % (link, ', '.join(model.link_names)))
            monitor = ExternalTorqueMonitor(model, gains, thresholds, link, max_gap=p.joint_state_timeout,
                                            friction_smoothing=p.friction_smoothing if p.observer_friction else None)
        except ValueError as exc:
            return 'the momentum observer does not fit the model: %s' % exc
        if old is not None:
            monitor.in_collision = old.in_collision      # a collision then clears with an event
            monitor.samples, monitor.skipped, monitor.restarts = old.samples, old.skipped, old.restarts
        self.ext_writer, self.ext_view = JointStateWriter(names), np.zeros(len(names))
        self.wrench_msg = WrenchStamped()
        self.wrench_msg.header.frame_id = link or ''
        self.monitor = monitor
        return None

    @staticmethod
    def _gains(values, names, cmd_joints):
        g = np.zeros(len(names))
        if len(values) == 1:
            g[:] = values[0]
        elif values:
            index = {n: i for i, n in enumerate(names)}
            for name, value in zip(cmd_joints, values):
                g[index[name]] = value
        return g

    # --- references -----------------------------------------------------------
    def _set_reference(self, msg, stream):
        if self.model is None or not self.ready:
            # Like a joint state then: not malformed, only unusable for now.
            self._warn('reference ignored: %s' % ('no robot model yet' if self.model is None
                                                   else 'the model does not fit the controller'))
            return
        if not msg.points:
            self.reference = None
            self.get_logger().info('reference cleared (empty trajectory)')
            return
        try:
            sampler = TrajectorySampler(self.out_names, msg, hold_first=stream)
        except JointMapError as exc:
            self.n_bad += 1
            self._warn('reference ignored: %s' % exc)
            return
        stamp = msg.header.stamp
        start = stamp.sec * 1_000_000_000 + stamp.nanosec
        self._ref_start = start if (start and not stream) else self._now_ns()
        self._ref_stream = stream
        self.reference = sampler

    def _deserialize_trajectory(self, data, topic):
        self.n_references += 1
        if len(data) > self.p.max_trajectory_bytes:
            self.n_bad += 1
            self._warn('%s ignored: %d bytes, more than max_trajectory_bytes (%d)'
                       % (topic, len(data), self.p.max_trajectory_bytes))
            return None
        try:
            return deserialize_message(data, JointTrajectory)
        except Exception as exc:        # malformed CDR from a raw DDS writer
            self.n_bad += 1
            self._warn('%s ignored: cannot deserialize: %s' % (topic, exc))
            return None

    def _on_trajectory(self, data):
        msg = self._deserialize_trajectory(data, '~/trajectory')
        if msg is not None:
            self._set_reference(msg, stream=False)

    def _on_reference(self, data):
        msg = self._deserialize_trajectory(data, '~/reference')
        if msg is None:
            return
        if msg.points:
            msg.points = msg.points[:1]
        self._set_reference(msg, stream=True)

    # --- the hot path ---------------------------------------------------------
    def _warn(self, text):
        self.get_logger().warning(text, throttle_duration_sec=1.0)

    def _on_joint_state(self, data):
        """One joint state, serialized (bytes of a sensor_msgs/JointState): at most one torque per output."""
        t0 = time.perf_counter()
        self.n_in += 1
        if not self.ready:
            return
        try:
            msg = self.reader.read(data)
        except Exception as exc:            # malformed bytes from a raw DDS writer (cdr.CdrError, or rclpy's)
            self.n_bad += 1
            self._warn('joint_states message ignored: %s' % exc)
            return
        if self._max_age_ns and not self._young_enough(msg):
            return
        merger = self.merger
        updates = merger.updates
        try:
            ready = merger.update(msg.name, msg.position, msg.velocity)
        except JointMapError as exc:
            self.n_bad += 1
            self._warn('joint_states message ignored: %s' % exc)
            return
        # The joints this message set were received now; no torque while any joint is too old
        # (joint_timeout): the watchdog then applies on_timeout (staleness.py).
        now = self._now_ns()
        staleness = self.staleness
        every_joint = staleness.touch_merged(merger, now)
        if not ready:
            return
        stale = None if every_joint else staleness.stale(now)
        if stale is not None:
            self.n_stale += 1
            self._warn('no torque for this joint state: %s' % stale)
            return
        q, qd = merger.q, merger.qd
        comp = self.comp
        base = self.base
        loop = self.loop
        if loop is not None:
            # The passive joints come from the actuated ones; a message's passive positions start the assembly.
            guess = None
            if self.passive is not None:
                try:
                    self.passive.update(msg.name, msg.position, ())
                    guess = self.passive.q if self.passive.ready else None
                except JointMapError:
                    pass
            try:
                q, qd = loop.complete(q, qd, guess)
            except SingularityError as exc:
                return self._singular(exc)
            except ValueError as exc:
                self.n_bad += 1
                self._warn('no torque for this joint state: %s' % exc)
                return
        if base is not None:
            now = self._now_ns()
            if not base.fresh(now):
                # Never a torque of a stale or missing base state: like a joint state that gives none.
                self.n_no_base += 1
                self._warn('no torque for this joint state: %s' % self._no_base_text(base, now))
                return
            q, qd = comp.state(base.q, base.v, q, qd)
        # The outputs' header: the joint state's, with the model's base link for a missing frame_id (RViz's
        # Effort display drops a JointState without one).
        head = msg.head if msg.frame_id else header_bytes(msg.sec, msg.nanosec, self._frame)
        if not self._sim_time and msg.sec:
            age = time.time() - (msg.sec + msg.nanosec * 1e-9)
            self._age_sum += age
            self._age_n += 1
            if age > self._age_max:
                self._age_max = age
        if self.timed_out:
            self.timed_out = False
            self.timeout_cause = ''
            self.get_logger().info('joint_states resumed: publishing again')
        try:
            comp.compute(q, qd)                              # -> views gravity, coriolis, total
            outputs = self.out_comp
            if self.reference is not None and self.mode in (FEEDFORWARD, COMPUTED_TORQUE):
                t = (self._now_ns() - self._ref_start) * 1e-9
                q_d, qd_d, qdd_d = self.reference.sample(t)
                self.views['ff'][:] = self._ff(q, qd, q_d, qd_d, qdd_d)
                outputs = self.out_ff
                if self.mode == COMPUTED_TORQUE:
                    self.views['ct'][:] = self._ct(q, qd, q_d, qd_d, qdd_d)
                    outputs = self.out_ct
        except SingularityError as exc:
            return self._singular(exc)
        except ValueError as exc:
            self.n_bad += 1
            self._warn('no torque for this joint state: %s' % exc)
            return
        # The commanded torque (first output) goes with every joint state, the diagnostic ones at most at
        # diagnostic_torque_rate (steady clock; None: off, 0: every joint state).
        period = self._diag_period_ns
        if period is None:
            outputs = outputs[:1]
        elif period:
            t = time.monotonic_ns()
            due = self._diag_due
            if t < due:
                outputs = outputs[:1]
            else:
                self._diag_due = due + period if t - due < period else t + period
        # Nothing non-finite or over the limit is published; the command
        # torque (first output) counts the clamp events.
        limiter = self.limiter
        command = outputs[0][2]
        if self.robot_terms.active:
            # The robot adds these terms itself: they are left out of the command (profiles.CommandTerms).
            command = self.robot_terms.command(command, comp.gravity, comp.friction)
            if not limiter.apply(command):
                self.n_nonfinite += 1
                self._warn('non-finite torque at q=%s, qd=%s: nothing published' % (q, qd))
                return
        for k, (_, _, view) in enumerate(outputs):
            if not limiter.apply(view, count=k == 0 and not self.robot_terms.active):
                self.n_nonfinite += 1
                self._warn('non-finite torque at q=%s, qd=%s: nothing published' % (q, qd))
                return
        if limiter.clamped:
            self._warn('command clamped to %g x the URDF effort limit' % self.p.effort_limit_scale)
        # The command first: a publish can wait on a subscriber (Fast DDS shared memory waits up to 1 s on
        # the port of a process stopped while another wrote to it), and no torque topic's subscriber may
        # delay the actuator's command, which would then go out computed from an old state.
        if self.pub_cmd is not None:
            np.take(command, self.cmd_idx, out=self.cmd_view)
            self._send_command()
        for pub, writer, view in outputs:
            pub.publish(writer.serialize(head, view))
        self.n_diagnostic_out += len(outputs) > 1
        self.n_out += 1
        # The watchdog's sign of life: a torque published for a message that
        # set a model joint (not a rejected one, nor one naming no model joint).
        fresh = merger.updates != updates
        self.n_fresh += fresh
        if fresh and (self.monitor is not None or self.collection is not None):
            self._observe(msg, head)                # after the command: it never waits for the observer
        self.streaming = True
        dt = time.perf_counter() - t0
        self._cb_time += dt
        if dt > self._cb_max:
            self._cb_max = dt

    def _young_enough(self, msg):
        """Whether joint state ``msg`` is young enough for max_state_age (staleness.state_age_problem);
        if not, it is counted and a warning says why."""
        why = state_age_problem(msg.sec * 1_000_000_000 + msg.nanosec, self._now_ns(), self._max_age_ns)
        if why is None:
            return True
        self.n_too_old += 1
        self._warn('no torque for this joint state: %s' % why)
        return False

    def _send_command(self):
        """Publish ``cmd_view`` (the command joints' torques [N m or N]) as the controller's command."""
        self.pub_cmd.publish(self.cmd_writer.serialize(self.cmd_view))
        self.n_commands += 1

    def _singular(self, exc):
        """A joint state at a singular pose of the closed loops: no torque, counted."""
        self.n_singular += 1
        self.last_singularity = str(exc)
        self._warn('no torque for this joint state: %s' % exc)

    def _on_base_state(self, msg):
        """A nav_msgs/Odometry on base_state_topic: the base state the next joint states use."""
        base = self.base
        if base is None:
            if self.model is not None and self.model.root_joint is None:
                self.get_logger().warning("base_state_topic is set, but robot %r has a fixed base: its base "
                                          "states are ignored" % self.model.name, once=True)
            return
        problem = base.update(msg, self._now_ns())
        if problem:
            self.n_bad += 1
            self._warn('base state rejected: %s' % problem)

    # --- momentum observer and payload samples ----------------------------------
    def _observe(self, msg, head):
        """Feed the observer and a running payload collection with the joint state just merged (``msg`` a
        cdr.Stamped, ``head`` the outputs' serialized header)."""
        t0 = time.perf_counter()
        merger = self.merger
        effort = msg.effort
        if not len(effort):
            self.n_no_effort += 1
            self._warn('joint_states without efforts: the momentum observer and ~/identify_payload need '
                       'the motor torques (%d such messages)' % self.n_no_effort)
            return
        try:
            if not merger.update_effort(effort):
                return
        except JointMapError as exc:
            self.n_bad_effort += 1
            self._warn('efforts of a joint state ignored: %s' % exc)
            return
        t_ns = msg.sec * 1_000_000_000 + msg.nanosec or self._now_ns()
        if self.collection is not None:
            self.collection.add(t_ns, merger.q, merger.qd, merger.effort)
        monitor = self.monitor
        if monitor is not None and monitor.update(t_ns, merger.q, merger.qd, merger.effort):
            self._publish_observer(msg, head, monitor)
        dt = time.perf_counter() - t0
        self._obs_time += dt
        self._obs_n += 1
        if dt > self._obs_max:
            self._obs_max = dt

    def _publish_observer(self, stamped, head, monitor):
        """~/external_torque, ~/external_wrench and a ~/collision event of the latest (finite) residual."""
        self.ext_view[:] = monitor.residual
        self.pub_ext.publish(self.ext_writer.serialize(head, self.ext_view))
        # The wrench costs about 0.1 ms (Jacobian, link pose, pseudo-inverse): only for a listener,
        # and not while a payload fit runs batch kernels in its thread if numba forbids two at once.
        if (self.pub_wrench is not None and self.pub_wrench.get_subscription_count()
                and not (self.job is not None and parallel_is_exclusive())):
            w = monitor.wrench(self.merger.q)
            if math.isfinite(w.sum()):
                msg = self.wrench_msg
                msg.header.stamp.sec, msg.header.stamp.nanosec = stamped.sec, stamped.nanosec
                f, n = msg.wrench.force, msg.wrench.torque
                f.x, f.y, f.z, n.x, n.y, n.z = w.tolist()
                self.pub_wrench.publish(msg)
        if monitor.event is not None and self.pub_collision is not None:
            self._publish_collision(stamped, monitor)

    def _publish_collision(self, stamped, monitor):
        names = self.merger.joint_names
        over = [names[i] for i in monitor.over()]
        event = Collision(collision=bool(monitor.event), name=list(names),
                          external_torque=monitor.residual.tolist(), threshold=monitor.thresholds.tolist(),
                          joints_over=over)
        event.header.stamp.sec, event.header.stamp.nanosec = stamped.sec, stamped.nanosec
        self.pub_collision.publish(event)
        if monitor.event:
            self.n_collisions += 1
            self.get_logger().warning('collision: external torque over the threshold at %s (%s)' % (
                ', '.join(over), ', '.join('%.3g' % monitor.residual[names.index(j)] for j in over)))
        else:
            self.get_logger().info('collision cleared')

    # --- ~/identify_payload ---------------------------------------------------------
    def _srv_identify(self, request, response, ticket):
        """Start an identification; None: answered later by :meth:`_identify_tick`."""
        if self.base_model is None:
            return self._no_model(response)
        problem = self._identify_problem(request)
        if problem:
            response.success, response.message = False, problem
            return response
        job = PayloadJob(self.model_without_payload(request.link), request.link,
                         static=request.static_poses, rest_velocity=self.p.identify_rest_velocity)
        self.job = _Identification(job, ticket, request.apply, self.base_model)
        if request.duration > 0:
            self.job.end_ns = self._now_ns() + int(request.duration * 1e9)
            self.collection = SampleBuffer()
            self.get_logger().info('identify_payload: collecting joint states for %.3g s' % request.duration)
        else:
            job.start(messages=list(request.samples))
        return None

    def final_stop(self, why):
        """The defined end of a clean stop (docs/NODES.md, 'When dynamics_node stops'): one zero command if
        commands go out, then, if ``controller_manager`` is set, the deactivation of ``controller_name``; no
        command after it, though run() goes on spinning while it waits for the answer. Returns the Future of the
        deactivation, or None."""
        future = self.stop_commands(why)
        # Every command goes through pub_cmd (torque loop, watchdog); the publisher itself lives on, so the
        # zero command is delivered (reliable) before the node is destroyed.
        self._last_pub_cmd, self.pub_cmd = self.pub_cmd, None
        return future

    def stop_commands(self, why):
        """One zero command if commands go out, and ``controller_name`` deactivated if ``controller_manager`` is
        set (the Future of the deactivation, or None); logged with ``why``."""
        sent = self.pub_cmd is not None and self.cmd_writer is not None
        if sent:
            self.cmd_view[:] = 0.0
            self._send_command()
        future = self.switch.deactivate() if self.switch is not None else None
        self.get_logger().info('%s: %s%s' % (
            why, 'sent one zero command' if sent else 'no command to zero',
            ', deactivating %s through %s' % (self.switch.controller, self.switch.service_name) if future else ''))
        return future

    def report_stop(self, future):
        log = self.get_logger().info if self.switch.ok(future) else self.get_logger().error
        log(self.switch.describe(future))

    def destroy_node(self):
        if self._service_thread is not None:
            self._service_thread.destroy()
            self._service_thread = None
        super().destroy_node()

    def _identify_problem(self, request):
        link, d = request.link, request.duration
        if len(request.samples) > self.p.max_request_points:
            return ('samples has %d joint states, more than max_request_points (%d); give a duration to collect '
                    'them from joint_states instead' % (len(request.samples), self.p.max_request_points))
        if self.job is not None:
            return 'an identification is running already; call again when it has answered'
        if self.base_model.root_joint is not None:
            return ('%s: payload identification needs a fixed base (the base wrench that a moving base\'s '
                    'contacts give is not measured)' % describe_base(self.base_model))
        if self.base_model.loops:
            return ('robot %r has closed loops (loops_file): payload identification needs a tree (the loop forces '
                    'are not measured)' % self.base_model.name)
        if link not in self.base_model.link_names:
            return 'unknown link %r; the model\'s links are: %s' % (link, ', '.join(self.base_model.link_names))
        if self.base_model.link_body[self.base_model.link_index(link)] < 0:
            return 'link %r is fixed to the base: a payload on it exerts no joint torque' % link
        if not (math.isfinite(d) and 0 <= d <= self.p.identify_max_duration):
            return ('duration must be 0 (use samples) or up to identify_max_duration (%g s), got %r'
                    % (self.p.identify_max_duration, d))
        if d == 0 and not request.samples:
            return 'no data: give a duration > 0 to collect joint states, or samples'
        if d > 0 and self.p.joint_state_effort != profiles.JOINT_TORQUE:
            return ('collecting joint states needs joint torques in their effort field, and joint_state_effort is '
                    '%r (the vendor profile\'s; a UR arm\'s driver publishes motor currents there): give samples '
                    'with joint torques instead (duration 0)' % self.p.joint_state_effort)
        return None

    def _identify_tick(self):
        """Timer: start the requests that came, end a collection when its time is up, answer when the fit
        is done."""
        for ticket in self._service_thread.pending():
            answer = self._srv_identify(ticket.request, ticket.response, ticket)
            if answer is not None:
                ticket.reply(answer)
        ident = self.job
        if ident is None:
            return
        if self.collection is not None:
            if self._now_ns() < ident.end_ns:
                return
            samples, self.collection = self.collection, None
            ident.job.start(samples=samples.arrays())
            return
        if not ident.job.done.is_set():
            return
        self.job = None
        ident.ticket.reply(self._identify_answer(ident))

    def _identify_answer(self, ident):
        response = IdentifyPayload.Response()
        job = ident.job
        if job.error is not None:
            response.success, response.message = False, job.error
            self.get_logger().warning('identify_payload failed: %s' % job.error)
            return response
        est = job.estimate
        _fill_estimate(response, est, job.used, job.model.joint_names)
        text = 'payload on %r: %.4g kg (std %.2g), com [%s] m, from %d samples' % (
            est.link, est.mass, est.mass_std, ', '.join('%.4g' % c for c in est.com), job.used)
        if ident.apply:
            if self.base_model is not ident.base:
                problem = 'the robot description changed during the identification'
            else:
                problem = self.set_payload(est.link, payload_entry(est))
            response.applied = problem is None
            text += '; applied' if problem is None else '; not applied: %s' % problem
        response.success, response.message = True, text
        self.get_logger().info('identify_payload: ' + text)
        return response

    def _abort_identification(self, problem):
        """Answer a collecting identification with ``problem`` (a fit already running finishes)."""
        ident = self.job
        if ident is None or self.collection is None:
            return
        self.job = self.collection = None
        ident.ticket.reply(IdentifyPayload.Response(success=False, message=problem))

    # --- watchdog -------------------------------------------------------------
    def _watchdog(self):
        t = time.monotonic()                # its own timing, for diagnostics
        if self._wd_prev is not None and t - self._wd_prev > self._wd_gap_max:
            self._wd_gap_max = t - self._wd_prev
        self._wd_prev = t
        self._wd_calls += 1
        if self.pub_cmd is not None and t >= self._listener_due:
            self._check_listeners(t)
        now = self._now_ns()
        # A joint whose latest position is older than joint_timeout counts as silent joint states, even
        # while other joints' messages keep coming.
        stale = (self.staleness.stale(now) if self.streaming and not self.timed_out and self.ready
                 and self.merger.ready else None)
        if stale is not None and self._joint_timeout_ns >= self._timeout_ns and self.staleness.all_stale(now):
            stale = None        # no joint comes at all: silent joint states, the whole-message watchdog's case
        if self.n_fresh != self._wd_count and stale is None:
            self._wd_count = self.n_fresh
            self._wd_last = now
            return
        if self.timed_out:
            if self.p.on_timeout == 'hold' and self.pub_cmd is not None and self.ready:
                self._send_command()
                self._warn('joint_states timed out: holding the last command (on_timeout=hold)')
            return
        if not self.streaming or (stale is None and now - self._wd_last < self._timeout_ns):
            return
        self.timeout_cause = stale or ''
        self.timed_out = True
        self.streaming = False
        self.n_timeouts += 1
        action = self.p.on_timeout
        if action == 'zero':
            # Also when the model no longer fits (not ready): the command
            # message is sized for the read-only `joints`, so zero is valid.
            if self.pub_cmd is not None and self.cmd_writer is not None:
                self.cmd_view[:] = 0.0
                self._send_command()
            what = 'sent a zero command, publishing stops until joint_states resume'
        elif action == 'hold':
            what = 'holding the last command until joint_states resume (on_timeout=hold)'
        else:
            what = 'publishing stops; a forward_command_controller keeps its last command'
        if action != 'hold' and self.merger is not None:
            self.merger.reset()          # a stale position is never used again
            if self.base is not None:
                self.base.forget()       # nor a stale base state
        if stale is not None:
            self.get_logger().error('stale joint state: %s (on_timeout=%s): %s' % (stale, action, what))
            return
        cause = ''
        if self.base is not None and self.n_no_base and not self.base.fresh(now):
            cause = ' (joint states that came gave no torque: %s)' % self._no_base_text(self.base, now)
        self.get_logger().error('no joint_states for %.3f s (joint_state_timeout %.3f s; rejected '
                                'messages and messages that gave no torque do not count)%s: %s'
                                % ((now - self._wd_last) * 1e-9, self.p.joint_state_timeout, cause, what))

    def _check_listeners(self, t):
        """Every 0.1 s: commands that went to a topic without a subscriber for 1 s (no controller loaded, another
        namespace) give one warning; diagnostics say so while it lasts."""
        self._listener_due = t + 0.1
        self.cmd_subscribers = self.pub_cmd.get_subscription_count()
        sending = self.n_commands != self._listener_commands
        self._listener_commands = self.n_commands
        if self.cmd_subscribers:
            self._unheard_since, self._unheard_warned = None, False
        elif sending and self._unheard_since is None:
            self._unheard_since = t
        elif self._unheard_since is not None and t - self._unheard_since >= 1.0 and not self._unheard_warned:
            self._unheard_warned = True
            self.get_logger().warning(
                'commands have gone to %s for %.1f s and nothing subscribes to it: no controller reads them (is '
                'the effort controller loaded, in this namespace: %s?)'
                % (self.pub_cmd.topic_name, t - self._unheard_since, self.get_namespace()))

    def _unheard(self):
        """Whether commands have gone to no subscriber for 1 s (see _check_listeners)."""
        return self._unheard_since is not None and time.monotonic() - self._unheard_since >= 1.0

    # --- diagnostics ----------------------------------------------------------
    def diagnostic_status(self, status):
        from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
        now = time.monotonic()
        period = max(now - self._last_diag, 1e-9)
        self._last_diag = now
        rate = (self.n_in - self._period_in) / period
        n_period = self.n_in - self._period_in
        self._period_in = self.n_in
        slow = self.input_rate.judge(n_period, period) if self.input_rate is not None else None
        if slow:
            self.get_logger().warning(slow)
        limiter = self.limiter
        clamps = limiter.clamp_events if limiter is not None else 0
        new_clamps = clamps - self._last_clamp_events
        self._last_clamp_events = clamps
        mean_cb = self._cb_time / max(n_period, 1)
        age = self._age_sum / self._age_n if self._age_n else float('nan')
        values = [
            ('mode', self.p.mode), ('state', self._state()),
            ('input_rate_hz', '%.1f' % rate), ('messages_in', self.n_in), ('messages_out', self.n_out),
            ('commands_out', self.n_commands), ('references_in', self.n_references),
            ('diagnostic_torque_rate_hz', 'off' if self._diag_period_ns is None else
             ('every joint state' if not self._diag_period_ns else '%g' % self.p.diagnostic_torque_rate)),
            ('diagnostic_torques_out', self.n_diagnostic_out),
            ('bad_messages', self.n_bad),
            ('non_finite_torques', self.n_nonfinite),
            ('callback_time_mean_us', '%.1f' % (mean_cb * 1e6)),
            ('callback_time_max_us', '%.1f' % (self._cb_max * 1e6)),
            ('input_latency_mean_ms', '%.3f' % (age * 1e3)),
            ('input_latency_max_ms', '%.3f' % (self._age_max * 1e3)),
            ('clamp_events', clamps), ('clamp_events_last_period', new_clamps),
            ('timeouts', self.n_timeouts), ('on_timeout', self.p.on_timeout),
            ('joint_timeout_ms', '%.1f' % (self._joint_timeout_ns * 1e-6)),
            ('stale_joint_states', self.n_stale),
            ('max_state_age_ms', '%.1f' % (self._max_age_ns * 1e-6) if self._max_age_ns else 'off'),
            ('joint_states_too_old', self.n_too_old),
            ('watchdog_period_ms', '%.1f' % (self._wd_period * 1e3)),
            ('watchdog_calls_last_period', self._wd_calls),
            ('watchdog_interval_max_ms', '%.1f' % (self._wd_gap_max * 1e3)),
            ('effort_limit_scale', self.p.effort_limit_scale),
            ('command_topic', self.p.command_topic if self.pub_cmd is not None else '(off)'),
            ('command_subscribers', self.cmd_subscribers if self.pub_cmd is not None else '(off)'),
            ('controller', '%s (deactivated on stop through %s)' % (self.switch.controller, self.switch.service_name)
             if self.switch is not None else '(not owned)'),
            ('expected_joint_state_rate_hz', '%g' % self.p.expected_joint_state_rate
             if self.p.expected_joint_state_rate else 'off'),
            ('joint_state_rate_low', self.input_rate is not None and self.input_rate.low),
            ('joint_state_effort', self.p.joint_state_effort),
            ('services_payloads', self.payload_sync.state if self.payload_sync is not None else '(no services_node)'),
            ('command_joints', ', '.join(self.cmd_joints)),
            ('command_contains', self.robot_terms.describe() if self.ready else '(no model)'),
            ('reference', 'none' if self.reference is None else
             ('set-point' if self._ref_stream else '%d points, %.3f s' % (len(self.reference.t), self.reference.duration))),
        ] + self._observer_values() + self._base_values() + self._loop_values() + [
            ('payload_identification', self._identification_state())]
        if self.ready and not self.merger.ready:
            values.append(('missing_joints', ', '.join(self.merger.missing())))
        status.values.extend(KeyValue(key=k, value=str(v)) for k, v in values)
        self._cb_time = self._cb_max = 0.0
        self._age_sum, self._age_n, self._age_max = 0.0, 0, 0.0
        self._wd_calls, self._wd_gap_max = 0, 0.0
        if status.level != DiagnosticStatus.OK:
            return
        monitor = self.monitor
        if self.ready and monitor is not None and monitor.in_collision:
            status.level = DiagnosticStatus.WARN
            status.message = 'collision: %s over the threshold' % ', '.join(
                self.merger.joint_names[i] for i in monitor.over())
            return
        if self.timed_out:
            status.level = DiagnosticStatus.ERROR if self.p.on_timeout != 'hold' else DiagnosticStatus.WARN
            status.message = 'joint_states timed out (on_timeout=%s)%s' % (
                self.p.on_timeout, ': stale ' + self.timeout_cause if self.timeout_cause else '')
        elif self._unheard():
            status.level = DiagnosticStatus.WARN
            status.message = 'commands go to %s and nothing subscribes to it' % self.pub_cmd.topic_name
        elif not self.merger.ready:
            status.level = DiagnosticStatus.WARN
            status.message = 'waiting for joint_states of: %s' % ', '.join(self.merger.missing())
        elif self.input_rate is not None and self.input_rate.low:
            status.level = DiagnosticStatus.WARN
            status.message = ('joint states at %.1f Hz, expected %g Hz: a relay or a throttled topic?'
                              % (self.input_rate.rate_hz, self.input_rate.expected_hz))
        elif self.base is not None and not self.base.fresh(self._now_ns()):
            status.level = DiagnosticStatus.WARN
            status.message = self._no_base_text(self.base, self._now_ns())
        elif new_clamps:
            status.level = DiagnosticStatus.WARN
            status.message = 'command clamped to the effort limits %d times' % new_clamps
        else:
            status.message = 'publishing (%s)' % self.p.mode

    def _observer_values(self):
        """Diagnostic values of the momentum observer (the per-sample time is part of the callback time)."""
        monitor = self.monitor
        values = [('observer', 'off' if monitor is None else 'on'),
                  ('joint_states_without_effort', self.n_no_effort), ('bad_efforts', self.n_bad_effort)]
        if monitor is not None:
            r = monitor.residual
            values += [('observer_samples', monitor.samples), ('observer_skipped', monitor.skipped),
                       ('observer_restarts', monitor.restarts),
                       ('observer_time_mean_us', '%.1f' % (self._obs_time / max(self._obs_n, 1) * 1e6)),
                       ('observer_time_max_us', '%.1f' % (self._obs_max * 1e6)),
                       ('external_torque_max', '%.4g' % float(np.abs(r).max()) if r.size else '0'),
                       ('collision', monitor.in_collision), ('collision_events', self.n_collisions)]
        self._obs_time = self._obs_max = 0.0
        self._obs_n = 0
        return values

    def _base_values(self):
        """Diagnostic values of the base state (a floating or planar robot, or base_state_topic set)."""
        base = self.base
        if base is None:
            return [('base_state_topic', self._base_topic())] if self.p.base_state_topic else []
        age = base.age(self._now_ns())
        return [('base', '%s, base link %s' % (base.model.root_joint, base.frame)),
                ('base_state_topic', self._base_topic()),
                ('base_states_in', base.accepted + base.rejected), ('base_states_rejected', base.rejected),
                ('base_state_age_ms', '%.1f' % (age * 1e3) if math.isfinite(age) else 'none'),
                ('base_state_frame', base.fixed_frame),
                ('last_base_state_problem', base.problem),
                ('joint_states_without_base_state', self.n_no_base)]

    def _loop_values(self):
        """Diagnostic values of a closed-loop robot: its singular states (no torque) and the last one."""
        if self.loop is None:
            return []
        return [('singular_states', self.n_singular), ('last_singularity', self.last_singularity)]

    def _identification_state(self):
        if self.job is None:
            return 'idle'
        if self.collection is not None:
            return 'collecting (%d samples)' % len(self.collection)
        return 'fitting'

    def _state(self):
        if not self.ready:
            return 'no model' if self.model is None else 'model error'
        if self.timed_out:
            return 'timed out'
        if not self.merger.ready:
            return 'waiting for joint states'
        if self.base is not None and not self.base.fresh(self._now_ns()):
            return 'waiting for the base state'
        return 'running'


def _stopped_answer(response):
    """The answer of an ~/identify_payload request still waiting when the node stops."""
    response.success, response.message = False, 'dynamics_node stopped before the identification answered'
    return response


def _fill_estimate(response, est, used, names):
    """IdentifyPayload response fields of a PayloadEstimate."""
    response.mass, response.mass_std = float(est.mass), float(est.mass_std)
    response.com = Point(x=float(est.com[0]), y=float(est.com[1]), z=float(est.com[2]))
    response.com_std = Vector3(x=float(est.com_std[0]), y=float(est.com_std[1]), z=float(est.com_std[2]))
    if est.inertia is not None:
        response.inertia = est.inertia.ravel().tolist()
        response.inertia_std = est.inertia_std.ravel().tolist()
    response.samples_used = int(used)
    response.name = list(names)
    response.residual_rms = est.residual_rms.tolist()


def main(args=None):
    run(DynamicsNode, args)


if __name__ == '__main__':
    main()
