"""simulator_node: the simulated arm, over :class:`robot_dynamics.simulation.Simulator`.

Run: ``ros2 run robot_dynamics simulator_node --ros-args -p urdf_path:=arm.urdf``
(or ``python -m robot_dynamics.ros.simulator_node --ros-args ...``).

A thin node: it owns the parameters, converts messages, calls the ROS-free
:class:`robot_dynamics.simulation.session.SimulationSession` (stepping, commands,
timeout, model changes, reset/pause/set_state, diagnostic values) and publishes.
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
        mode (:func:`robot_dynamics.simulation.inputs.joint_command`).
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
    With ``world_file`` or ``collision_geometry`` (contact, docs/CONTACT.md):
        ~/contact_markers, ~/contacts/<link>, with ``ft_sensor_link``
        ~/ft_sensor, and the world bodies on /tf at ``contact_rate``, on
        /tf_static once (:mod:`.contact_outputs` says what each holds).

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
services compute with the simulated base state. The base's pose is not
broadcast on /tf: Odometry's pose is the odom -> base transform, for a relay
or RViz's Odometry display.

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
time of its state (the time on /clock). Without it, paced (real_time_factor
> 0) and running, with the wall time its state stands for, on the system
clock: the time the pacer made its steps due at, so that a late tick's
catch-up batch is stamped ``dt / real_time_factor`` apart, in the past, not
all at once (:class:`~robot_dynamics.simulation.pacing.StateStamps`; dropped
steps, a resume or a reset go on from the new anchor; never decreasing).
Paused, or as fast as possible (real_time_factor 0), with the system clock
at publication; on simulated time from another source (``use_sim_time``
without ``publish_clock``), with the node's clock at publication. The
joint state and its odometry share a stamp; the markers and contacts carry
that of the state they show. docs/SIMULATION.md ("The ROS 2 node") has the
details.
"""
import math
import time

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
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

from ..simulation.build import SimulationSettings, warm_up_steps
from ..simulation.inputs import stamp
from ..simulation.pacing import tick_period
from ..simulation.session import SimulationSession, diagnostic_values, loop_values, summary
from ..ros import params as P
from .simulator_params import NODE_PARAMS
from ..control.base_state import base_link, odometry_values
from ..control.closed_loop import check_actuated
from .markers import MarkerBuilder
from .contact_outputs import ContactOutputs, ft_sensor_problem, stepper_factory
from ..model.model import describe_base
from .model_node import ModelNode, run
from ..control.model_holder import since
from ..errors import InputError

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
#: Command subscriptions keep 100 messages (0.1 s at 1 kHz): while a late tick
#: runs its catch-up steps the commands queue instead of being overwritten, so
#: every one is read and counted (the latest wins; the others are superseded).
COMMAND_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def _view(msg, field, n):
    """Set ``msg.<field>`` to n zeros and return a numpy view writing into it."""
    import array
    setattr(msg, field, array.array('d', bytes(8 * n)))
    return np.frombuffer(getattr(msg, field), dtype=np.float64)


_BASE_INERTIAL = ('<inertial><mass value="5"/><inertia ixx="0.5" iyy="0.5" izz="0.5" ixy="0" ixz="0" iyz="0"/>'
                  '</inertial>')


def warm_up_simulation():
    """Compile or load the kernels of one simulation step of every kind (numba cache)."""
    import robot_dynamics as rd
    from .model_node import _WARMUP_URDF
    warm_up_steps(rd.load_urdf(_WARMUP_URDF))
    heavy_base = _WARMUP_URDF.replace('<link name="base"/>', '<link name="base">%s</link>' % _BASE_INERTIAL)
    for root in ('floating', 'planar'):      # a mobile base's step (before this, its first unpause compiled for 30 s)
        sim = rd.Simulator(rd.load_urdf(heavy_base, root_joint=root))
        sim.set_command([1.0, 0.5], 'effort')
        sim.step(2)


class SimulatorNode(ModelNode):
    """The simulated arm (see the module doc): parameters, messages and publishers around a
    :class:`~robot_dynamics.simulation.session.SimulationSession`, which does the simulation."""

    default_name = 'simulator'
    status_name = 'simulator'
    extra_params = NODE_PARAMS

    def __init__(self, node_name=default_name, **kwargs):
        super().__init__(node_name, **kwargs)
        self.session = None                 # made by validate_params, from the parameters
        self.markers = None
        self.scene = None                   # with contact: contact_outputs.ContactScene
        self.contact_outputs = None         # with contact: contact_outputs.ContactOutputs
        # A floating or planar base: nav_msgs/Odometry on `odom` (created with the first such model).
        self.pub_odom = self.odom_msg = None

    @property
    def sim(self):
        """The :class:`~robot_dynamics.simulation.Simulator` of the current model, or None."""
        return self.session.sim if self.session is not None else None

    # --- parameters -----------------------------------------------------------
    def validate_params(self):
        p = self.p
        settings = SimulationSettings.from_params(p)
        problems = settings.problems()
        if p.effort_commands_topic and p.effort_commands_topic == p.joint_commands_topic:
            problems.append("parameters 'effort_commands_topic' and 'joint_commands_topic' name the same topic "
                            '%r (their message types differ)' % p.effort_commands_topic)
        if problems:
            raise P.ParameterError('invalid parameters:\n  ' + '\n  '.join(problems))
        self.scene = stepper_factory(p, settings.dt)
        self.session = SimulationSession(settings, publish=self._publish_state, log=self.get_logger(),
                                         contact=self.scene)
        n = self.session.pub_every
        if abs(n * p.publish_rate - p.physics_rate) > 1e-9 * p.physics_rate:
            self.get_logger().warning('publish_rate %g Hz does not divide physics_rate %g Hz: joint_states are '
                                      'published every %d steps, at %g Hz of simulated time'
                                      % (p.publish_rate, p.physics_rate, n, p.physics_rate / n))

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

    def create_inputs(self):
        p = self.p
        # The physics runs on the steady clock: never on /clock, which this node may publish itself.
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.session.start()
        self.create_timer(tick_period(self.session.dt, p.real_time_factor), self._tick, clock=steady)
        if p.marker_rate > 0:
            self.create_timer(1.0 / p.marker_rate, self._publish_markers, clock=steady)
        if self.scene is not None and p.contact_rate > 0:
            self.create_timer(1.0 / p.contact_rate, self._publish_contacts, clock=steady)
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
        """Simulate ``model`` (:meth:`.SimulationSession.set_model`); None, or the reason it cannot be
        simulated (the previous simulation, if any, then keeps running)."""
        started, problem = (time.perf_counter(), time.thread_time()), None
        if self.scene is not None and self.p.ft_sensor_link:
            problem = ft_sensor_problem(model, self.p.ft_sensor_link)
        problem = problem or self.session.set_model(model, joints_changed, self.actuated(model))
        if problem:
            return problem + ' (decided in %.3f s, %.3f s of CPU)' % since(started)
        if self.scene is not None:
            if self.contact_outputs is None:
                self.contact_outputs = ContactOutputs(self, self.p.ft_sensor_link)
            self.contact_outputs.bind(model, self.sim.contact, self.scene.world, self._stamp())
        names = list(model.joint_names)
        self.state_msg = JointState(name=names)
        self.views = tuple(_view(self.state_msg, f, len(names)) for f in ('position', 'velocity', 'effort'))
        self.markers = MarkerBuilder(model, None if model.root_joint is None else self.p.odom_frame)
        self._odometry(model)
        return None

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

    # --- stepping -------------------------------------------------------------
    def _tick(self):
        session = self.session
        if session.sim is None:
            return
        t0 = time.perf_counter()
        if session.paused:
            if session.paused_publish_due(t0):
                self._publish_state()
                self._publish_clock()
            return
        session.advance(t0)
        self._publish_clock()
        session.ticks.add(time.perf_counter() - t0)

    # --- outputs --------------------------------------------------------------
    def _stamp(self):
        """builtin_interfaces/Time of the current state (see the module doc)."""
        stamp_msg = Time()
        self._set_stamp(stamp_msg)
        return stamp_msg

    def _set_stamp(self, stamp_msg):
        """Write the stamp of the current state into ``stamp_msg`` (a builtin_interfaces/Time):
        the simulated time with publish_clock; on the system clock, the wall time the state stands
        for (:meth:`.SimulationSession.state_stamp_ns`); else (simulated time from another source)
        the node's clock now."""
        if self.pub_clock is not None:
            stamp_msg.sec, stamp_msg.nanosec = stamp(self.sim.time)
        elif not self._clock.ros_time_is_active:          # the system clock: skip rclpy's Time objects
            ns = self.session.state_stamp_ns()
            stamp_msg.sec, stamp_msg.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
        else:
            now = self._clock.now().to_msg()
            stamp_msg.sec, stamp_msg.nanosec = now.sec, now.nanosec

    def _publish_state(self):
        sim = self.sim
        if sim is None:
            return
        effort = sim.effort
        counts = self.session.counts
        if not math.isfinite(effort.sum()):
            counts['non_finite_outputs'] += 1
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
        counts['joint_states'] += 1
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
        self.session.counts['odometry'] += 1

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

    def _publish_contacts(self):
        if self.sim is not None and self.contact_outputs is not None:
            self.contact_outputs.publish(self.sim.q, self._stamp())

    # --- inputs ---------------------------------------------------------------
    def _on_effort(self, msg):
        self.session.effort(msg.data)

    def _on_joint_command(self, msg):
        self.session.joint_command(msg.name, msg.position, msg.velocity, msg.effort)

    def _on_wrench(self, msg):
        self.session.wrench(msg.header.frame_id, msg.wrench.force, msg.wrench.torque, self.p.wrench_frame)

    # --- services -------------------------------------------------------------
    def _srv_reset(self, request, response):
        if self.sim is None:
            return _answer(response, False, 'no robot model yet (%s)' % self.model_status)
        message = self.session.reset()
        self._publish_state()
        return _answer(response, True, message)

    def _srv_pause(self, request, response):
        if self.sim is None:
            return _answer(response, False, 'no robot model yet (%s)' % self.model_status)
        return _answer(response, True, self.session.pause(bool(request.data)))

    def _srv_set_state(self, request, response):
        if self.sim is None:
            return _answer(response, False, 'no robot model yet (%s)' % self.model_status)
        js = request.joint_state
        success, message = self.session.set_state(js.name, js.position, js.velocity)
        if success:
            self._publish_state()
        return _answer(response, success, message)

    # --- diagnostics ----------------------------------------------------------
    def diagnostic_status(self, status):
        from diagnostic_msgs.msg import DiagnosticStatus
        session = self.session
        values, achieved = diagnostic_values(session)
        values += self._base_values() + loop_values(session)
        if status.level == DiagnosticStatus.OK:
            warn, status.message = summary(session, achieved)
            if warn:
                status.level = DiagnosticStatus.WARN
        return values

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
                ('odometry_published', self.session.counts['odometry']), ('odom_frame', self.p.odom_frame)]


def _answer(response, success, message):
    response.success = success
    response.message = message
    return response


def main(args=None):
    run(SimulatorNode, args)


if __name__ == '__main__':
    main()
