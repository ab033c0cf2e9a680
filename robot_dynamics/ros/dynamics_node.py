"""dynamics_node: gravity/Coriolis/friction compensation, feedforward and
computed torque from joint states, with an optional ros2_control bridge.

Run: ``ros2 run robot_dynamics dynamics_node --ros-args -p urdf_path:=arm.urdf``
(or ``python -m robot_dynamics.ros.dynamics_node --ros-args ...``).

Subscribes:
    joint_states (sensor_msgs/JointState, best effort by default: accepts
        reliable and best-effort publishers). Joints are mapped by name;
        partial messages are merged; nothing is published until every model
        joint has a position. One output per input message after that.
    <extra_joint_state_topics> (sensor_msgs/JointState, best effort): the
        joints joint_states lacks (a gripper's), merged by name, no output of
        their own; or ``held_joints`` at ``held_positions``
        (:mod:`robot_dynamics.control.joint_sources`, :mod:`.joint_inputs`).
    ~/trajectory (trajectory_msgs/JointTrajectory): desired motion for the
        feedforward and computed_torque modes, sampled at the current time
        (start: header.stamp, or reception if zero). No points: clears it.
        A message over ``max_trajectory_bytes`` is dropped unread (counted).
    ~/reference (trajectory_msgs/JointTrajectory): a streamed set-point: the
        first point is used at once and held until the next message.
    ~/joint_trajectory (trajectory_msgs/JointTrajectory) and the action
        ~/follow_joint_trajectory (control_msgs/action/FollowJointTrajectory):
        trajectories judged and followed as ros2_controllers'
        joint_trajectory_controller does, with ~/controller_state
        (:mod:`.trajectory_action`, docs/NODES.md, "The FollowJointTrajectory action").
    ~/target_pose (geometry_msgs/PoseStamped), ~/target_joints (sensor_msgs/JointState): the target of
        cartesian_impedance / joint_impedance, judged and held by
        :mod:`robot_dynamics.control.impedance_target` (docs/NODES.md, "Impedance modes").
    robot_description (see :mod:`robot_dynamics.ros.model_node`).
    <base_state_topic> (nav_msgs/Odometry, best effort: accepts every
        publisher), if set: the pose and twist of a floating or planar base
        (:mod:`robot_dynamics.control.base_state`).

A floating or planar robot (docs/FLOATING-BASE.md) is refused unless
``base_state_topic`` is set. With it, each joint state is joined with the
latest base state (pose, twist; the base's acceleration taken as zero),
the laws run on the full state and only the joints' torques are published
(:mod:`robot_dynamics.control.base_compensation`). Odometry's ``child_frame_id`` must name the
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
the laws are computed by :mod:`robot_dynamics.control.closed_loop` with
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
    ~/impedance_torque (sensor_msgs/JointState): the impedance modes' law;
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

The observer (:mod:`robot_dynamics.control.external_torque`) takes a sample from each joint state
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
and the longest wall time between two of them;
bench/watchdog_timing.py times it under a 1 kHz stream (and
test/ros/test_ros_watchdog_timing.py checks its decisions there). These
limits count from when the node takes a message; with
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
import sys
import time

from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import JointState

from .. import control
from ..model.model import describe_base
from ..control.external_torque import warm_up as warm_up_observer
from ..control.payload_fit import parallel_is_exclusive
from ..control.settings import from_params
from ..control.staleness import InputRate
from ..control.statistics import Statistics
from ..control.torque_loop import WAITING, NoTorque, base_state_problem
from ..control.watchdog import Watchdog
from ..errors import InputError
from .cdr import JointStateWriter, header_bytes
from .joint_state_intake import JointStateIntake
from .command_output import CommandOutput
from .dynamics_diagnostics import Snapshot, fill_status
from .dynamics_model import CompiledBackend, moving_base_problem, observer_loops_problem
from .dynamics_params import NODE_PARAMS, apply_changes, observer_on, parameter_changes, validate
from .dynamics_watchdog import on_timeout
from .identify_service import IdentifyService
from .impedance_inputs import TargetInputs
from .joint_inputs import JointInputs
from .model_node import ModelNode, run, warm_up_model, warm_up_moving_base
from .observer_outputs import ObserverOutputs
from .payload_sync import PayloadSync
from .reference_inputs import ReferenceInputs
from .trajectory_action import TrajectoryAction

#: rclpy adds two QoS-event waitables to every publisher and subscription unless told otherwise, and its executor
#: walks all of them for every message: measured, they cost more than the dynamics. The default warnings stay on
#: the topics where a QoS mismatch matters (joint_states, the controller command); the private outputs go without.
QUIET = PublisherEventCallbacks(use_default_callbacks=False)
#: The JointState torque topics, by the names of TorqueLoop.views.
TORQUE_TOPICS = {'gravity': '~/gravity_torque', 'coriolis': '~/coriolis_torque', 'total': '~/compensation_torque',
                 'ff': '~/feedforward_torque', 'ct': '~/computed_torque', 'imp': '~/impedance_torque'}


class DynamicsNode(ModelNode):
    """Compensation / feedforward / computed-torque node (see the module doc): it converts messages, calls
    the torque pipeline (:mod:`robot_dynamics.control`, built by :func:`robot_dynamics.control.build`),
    publishes, and owns the parameters."""

    default_name = 'dynamics_node'
    extra_params = NODE_PARAMS
    query_services = False              # served by dynamics_services, another process (query_services.py)

    def __init__(self, node_name=default_name, **kwargs):
        super().__init__(node_name, **kwargs)
        self.init_pipeline()

    def init_pipeline(self):
        """The state of the torque pipeline before configure (and after a lifecycle cleanup): none."""
        self.ready = False                  # the pipeline fits the current model
        self.pipeline = None                # control.torque_loop.TorqueLoop of the last model that fitted
        self.backend = None                 # dynamics_model.CompiledBackend
        self.command = self.observer_out = self.identify = self.payload_sync = self.joint_inputs = None
        self.stats = Statistics(time.monotonic())
        self.watchdog = Watchdog(1, 1, 'zero')
        self.input_rate = None              # staleness.InputRate: joint states slower than the driver's rate
        self.clamps_reported = 0
        self.intake = JointStateIntake()    # joint_states arrive serialized (cdr.py, joint_state_intake.py)
        self.outputs = {}                   # view name -> (publisher, JointStateWriter)
        self.frame = ''                     # frame_id of the outputs of a joint state without one
        self.sim_time = False
        self.now_ns = self.ros_now_ns       # the node clock's time [ns] (create_outputs may choose a cheaper read)

    @property
    def merger(self):
        """The merged joint state of the pipeline (control.joint_map.JointStateMerger), or None."""
        return self.pipeline.merger if self.pipeline is not None else None

    @property
    def base(self):
        """The base state of a floating or planar robot (control.base_state.BaseState), or None."""
        return self.pipeline.base if self.pipeline is not None else None

    def warm_up(self):
        super().warm_up()
        if observer_on(self.p):
            warm_up_observer(warm_up_model())
        if self.p.base_state_topic:
            warm_up_moving_base()

    def validate_params(self):
        validate(self.p, self.get_logger().warning)

    def create_outputs(self):
        p, log = self.p, self.get_logger()
        self.sim_time = self.get_parameter('use_sim_time').value
        # Without simulated time the ROS clock reads the system clock: time.time_ns, 60x cheaper.
        self.now_ns = self.ros_now_ns if self.sim_time else time.time_ns
        self.torque_pubs = {k: self.create_publisher(JointState, t, 10, event_callbacks=QUIET)
                            for k, t in TORQUE_TOPICS.items()}
        if p.publish_command:
            self.command = CommandOutput(self, p.command_topic, p.controller_manager, p.controller_name)
        self.input_rate = InputRate(p.expected_joint_state_rate)
        self.watchdog = Watchdog(p.joint_state_timeout * 1e9, (p.joint_timeout or p.joint_state_timeout) * 1e9,
                                 p.on_timeout, self.now_ns())
        if observer_on(p):
            self.observer_out = ObserverOutputs(self, wrench=bool(p.external_wrench_link),
                                                collision=bool(p.collision_thresholds), events=QUIET)
        self.joint_inputs = JointInputs(self, p, log, self.warn, self.now_ns, self.stats,
                                        lambda: self.pipeline if self.ready else None)
        self.backend = CompiledBackend(p.backend, self, log, lambda model: self.on_model(model, False),
                                       lambda: (self.model, None if self.pipeline is None
                                                else self.pipeline.laws.dynamics is not None))

    def create_inputs(self):
        p = self.p
        self.add_on_set_parameters_callback(self.on_set_parameters)
        self.watchdog.last_ns = self.now_ns()
        self.create_timer(self.watchdog.period, self.on_watchdog)
        # ~/identify_payload's requests are converted in its thread: the torque loop waits at most a GIL switch.
        sys.setswitchinterval(0.001)       # [s]
        self.identify = IdentifyService(self, self.holder, p, self.now_ns)
        if p.services_node:
            self.payload_sync = PayloadSync(self, self.holder, self.resolve_service_name(p.services_node))
            self.create_timer(0.1, self.payload_sync.tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        ReferenceInputs(self, p, self.stats, lambda: self.pipeline if self.ready else (
            'no robot model yet' if self.model is None else 'the model does not fit the controller'),
            self.get_logger(), self.warn, self.now_ns)      # ~/trajectory, ~/reference
        TargetInputs(self, self.target, self.warn, self.now_ns)  # ~/target_pose, ~/target_joints (impedance modes)
        TrajectoryAction(self, lambda: self.pipeline if self.ready else None, self.now_ns)  # ~/follow_joint_trajectory
        self.joint_inputs.subscribe()       # extra_joint_state_topics
        if p.base_state_topic:
            self.create_subscription(Odometry, p.base_state_topic, self.on_base_state,
                                     QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        reliability = (ReliabilityPolicy.BEST_EFFORT if p.joint_states_reliability == 'best_effort'
                       else ReliabilityPolicy.RELIABLE)
        # Last: its appearance in the graph tells clients that the node is ready. Serialized (raw): the
        # torque loop reads and writes the bytes (cdr.py) instead of rclpy's Python messages.
        self.create_subscription(JointState, 'joint_states', self.on_joint_state,
                                 QoSProfile(depth=100, reliability=reliability), raw=True)
        # The objects of the imports and of the model (some 130,000: numba, scipy, rclpy) live as long as the
        # node: out of the garbage collector's sight, whose full collections walked them all in 20-70 ms of the
        # torque loop (measured at 1 kHz: bursts of about 100 joint states 10-20 ms late). Freed as usual.
        gc.freeze()

    def on_set_parameters(self, parameters):
        """A parameter change: validated, and the pipeline rebuilt with it; undone if it does not fit."""
        if any(param.name == 'use_sim_time' for param in parameters):
            self.now_ns = self.ros_now_ns         # from now on the clock decides, simulated time or not
        changes, problem = parameter_changes(parameters)
        problem = problem or apply_changes(self.p, changes, self.validate_params,
                                           lambda: None if self.model is None else self.on_model(self.model, False))
        return SetParametersResult(successful=not problem, reason=problem or '')

    # --- the model ----------------------------------------------------------------
    def on_model(self, model, joints_changed):
        """(Re)build the torque pipeline of the model (:func:`robot_dynamics.control.build`); None or the problem."""
        self.ready = False
        old, holder = self.pipeline, self.holder
        pipeline = control.build(model, from_params(self.p, self.base_topic()), old, base_model=holder.base_model,
                                 payloads=holder.payloads, dynamics=self.backend.code(model))
        if isinstance(pipeline, str):
            return pipeline
        if old is not None and old.merger is not pipeline.merger and self.identify is not None:
            self.identify.abort('the model\'s joints changed while collecting joint states')
        if pipeline.unclamped_joints():
            self.get_logger().warning('no URDF effort limit for %s: their torques are checked for finiteness but '
                                      'not clamped' % ', '.join(pipeline.unclamped_joints()))
        if pipeline.monitor is not None and (old is None or old.monitor is not pipeline.monitor):
            self.observer_out.set_joints(pipeline.joint_names, self.p.external_wrench_link or None)
        self.joint_inputs.attach(pipeline.merger, pipeline.staleness)     # held_joints
        writer = JointStateWriter(pipeline.joint_names)     # the torques are published serialized (cdr.py)
        self.outputs = {k: (pub, writer) for k, pub in self.torque_pubs.items()}
        if self.command is not None:
            self.command.size(pipeline.command)
        self.pipeline, self.frame, self.ready = pipeline, model.base_link, True
        return None

    def moving_base_problem(self, model):
        return moving_base_problem(model, self.p)

    def loops_problem(self, model):
        """ModelNode's check of ``actuated_joints``; and the observer refuses a closed-loop robot."""
        return observer_loops_problem(model, self.p) or super().loops_problem(model)

    def service_base_state(self, model):
        """The latest base state from ``base_state_topic`` if it is fresh (InputError if not)."""
        base = self.base
        if base is None or base.model.root_joint != model.root_joint:
            raise InputError('%s and no base state has come on %s yet' % (describe_base(model), self.base_topic()))
        if not base.fresh(self.now_ns()):
            raise InputError('%s: %s' % (describe_base(model), self.no_base_text(base)))
        return base.q.copy(), base.v.copy()

    def base_topic(self):
        return self.resolve_topic_name(self.p.base_state_topic) if self.p.base_state_topic else '(none)'

    def no_base_text(self, base):
        return base_state_problem(base, self.now_ns(), self.base_topic(), self.p.joint_state_timeout)

    def target(self):
        """The pipeline's impedance target holder, or why there is none (TargetInputs)."""
        pipeline = self.pipeline
        if pipeline is None or pipeline.target is None:
            return ('no robot model yet' if self.model is None else
                    'the model does not fit or has a moving base or closed loops')
        return pipeline.target

    # --- inputs ---------------------------------------------------------------
    def warn(self, text):
        """A warning, at most once a second."""
        self.get_logger().warning(text, throttle_duration_sec=1.0)

    def on_base_state(self, msg):
        """A nav_msgs/Odometry on base_state_topic: the base state the next joint states use."""
        base = self.base
        if base is None:
            if self.model is not None and self.model.root_joint is None:
                self.get_logger().warning("base_state_topic is set, but robot %r has a fixed base: its base "
                                          "states are ignored" % self.model.name, once=True)
            return
        problem = base.update(msg, self.now_ns())
        if problem:
            self.stats.n_bad += 1
            self.warn('base state rejected: %s' % problem)

    # --- the hot path ---------------------------------------------------------
    def on_joint_state(self, data):
        """One joint state, serialized (bytes of a sensor_msgs/JointState): at most one torque per output."""
        t0 = time.perf_counter()
        stats = self.stats
        stats.n_in += 1
        if not self.ready:
            return
        pipeline = self.pipeline
        try:
            msg, step = self.intake.step(data, pipeline, self.now_ns())
        except Exception as exc:            # malformed bytes from a raw DDS writer (cdr.CdrError, or rclpy's)
            stats.n_bad += 1
            return self.warn('joint_states message ignored: %s' % exc)
        refused = step.refused
        if refused is not None:
            stats.refused(refused)
            if refused is WAITING:
                return self.joint_inputs.waiting(pipeline.merger, self.now_ns())
            return self.warn(refused.reason) if refused.reason else None
        if self.watchdog.resume():
            self.get_logger().info('joint_states resumed: publishing again')
        # The outputs' header: the joint state's, with the model's base link for a missing frame_id (RViz's
        # Effort display drops a JointState without one).
        head = msg.head if msg.frame_id else header_bytes(msg.sec, msg.nanosec, self.frame)
        if not self.sim_time and msg.sec:
            stats.age(time.time() - (msg.sec + msg.nanosec * 1e-9))
        if step.clamped:
            self.warn('command clamped to %g x the URDF effort limit' % self.p.effort_limit_scale)
        # The command first: a publish can wait on a subscriber (Fast DDS shared memory waits up to 1 s on
        # the port of a process stopped while another wrote to it), and no torque topic's subscriber may
        # delay the actuator's command, which would then go out computed from an old state. The torques are
        # serialized before it, so that they follow it at once: a subscriber of both takes them in one wake-up.
        torques, outputs = step.torques, self.outputs
        frames = [(outputs[key][0], outputs[key][1].serialize(head, torques[key])) for key in step.outputs]
        if self.command is not None:
            self.command.send()
        for pub, frame in frames:
            pub.publish(frame)
        stats.n_diagnostic_out += len(step.outputs) > 1
        stats.n_out += 1
        # The watchdog's sign of life: a torque published for a message that set a model joint.
        stats.n_fresh += step.fresh
        if step.fresh and (pipeline.monitor is not None or self.identify.collection is not None):
            self.observe(msg, head)                 # after the command: it never waits for the observer
        self.watchdog.streaming = True
        stats.callback(time.perf_counter() - t0)

    def observe(self, msg, head):
        """Feed the observer and a running payload collection with the joint state just merged (``msg`` a
        cdr.Stamped, ``head`` the outputs' serialized header)."""
        t0 = time.perf_counter()
        pipeline = self.pipeline
        monitor = pipeline.monitor
        got = pipeline.observe(msg.effort, msg.sec * 1_000_000_000 + msg.nanosec or self.now_ns(), monitor,
                               self.identify.collection)
        if type(got) is NoTorque:
            self.stats.refused(got)
            if got.kind == 'no_effort':
                return self.warn('%s (%d such messages)' % (got.reason, self.stats.n_no_effort))
            return self.warn(got.reason)
        if got:
            busy = self.identify.current is not None and parallel_is_exclusive()
            self.observer_out.publish(msg, head, monitor, pipeline.merger.q, busy)
        self.stats.observer(time.perf_counter() - t0)

    # --- watchdog and the end -----------------------------------------------------
    def on_watchdog(self):
        """The watchdog's timer: what it decides is done by :func:`.dynamics_watchdog.on_timeout`."""
        on_timeout(self.watchdog, self.command, self.pipeline if self.ready else None, self.pipeline, self.stats,
                   self.now_ns(), self.p, self.get_logger(), self.warn, self.no_base_text)

    def diagnostic_status(self, status):
        values, self.clamps_reported = fill_status(Snapshot(
            self.p, self.stats, self.pipeline, self.ready, self.model, self.watchdog, self.command, self.input_rate,
            self.payload_sync, self.identify, self.observer_out, self.backend.state(self.model), self.now_ns(),
            self.base_topic(), self.clamps_reported, self.get_logger().warning), status)
        return values

    def final_stop(self, why):
        """The defined end of a clean stop (docs/NODES.md, 'When dynamics_node stops'): one zero command if
        commands go out, then, if ``controller_manager`` is set, the deactivation of ``controller_name``; no
        command after it, though run() goes on spinning while it waits for the answer. Returns the Future of the
        deactivation, or None."""
        future = self.stop_commands(why)
        if self.command is not None:
            self.command.stopped = True     # the publisher lives on: the zero command is delivered (reliable)
        return future

    def stop_commands(self, why):
        """One zero command if commands go out, and ``controller_name`` deactivated if ``controller_manager`` is
        set (the Future of the deactivation, or None); logged with ``why``."""
        if self.command is None:
            self.get_logger().info('%s: no command to zero' % why)
            return None
        return self.command.stop(why)

    def report_stop(self, future):
        self.command.report_stop(future)

    def destroy_node(self):
        if self.identify is not None:
            self.identify.destroy()
            self.identify = None
        super().destroy_node()


def main(args=None):
    run(DynamicsNode, args)


if __name__ == '__main__':
    main()
