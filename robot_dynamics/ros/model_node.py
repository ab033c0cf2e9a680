"""Base node: the robot model from a URDF, the dynamics services, payloads.

:class:`ModelNode` gets the model the modern ROS 2 way, in this order:

1. the ``robot_description`` string parameter, if not empty;
2. the ``urdf_path`` parameter, if not empty (a URDF or an MJCF file);
3. otherwise the ``robot_description_topic`` topic (default
   ``robot_description``, in the node's namespace; std_msgs/String,
   reliable + transient local, as robot_state_publisher publishes it):
   each new description (URDF, or MJCF that references no file) rebuilds the model, re-applies the payloads and
   calls :meth:`ModelNode.on_model` so a subclass checks its joint map again.
   A description is XML text, never opened as a path; an invalid one is
   rejected (counted in diagnostics as ``descriptions_rejected``) and the
   last valid model stays.

It offers the services of ``robot_dynamics_interfaces`` (the read-only ones of
:mod:`.queries` and :mod:`.timing_queries`, unless ``query_services`` is False,
and ``~/set_payload``) and publishes diagnostic_msgs/DiagnosticArray on ``/diagnostics`` (absolute, where
diagnostic_aggregator listens). Every service answers
``success: false`` with a message that says what is wrong instead of
raising. Service results are computations, not commands: they are not
clamped to effort limits.

A floating or planar base (``model.root_joint``) needs a base state:
:meth:`ModelNode.moving_base_problem` refuses such a model unless the node
has one (dynamics_node and dynamics_services with ``base_state_topic``,
simulator_node with its own simulated base). A closed-loop robot
(``loops_file``, docs/LOOPS.md): the URDF is the mechanism's spanning tree
and the YAML file its closure joints, applied with ``rd.load_urdf(...,
loops=...)`` to every description. The file is read once, at start-up; a
file that cannot be read or parsed, or loops that do not fit a description,
leave the node without that model and with an ERROR status naming the file
and the loop (the node keeps running). What the services answer for both:
:mod:`.queries`.
"""
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..model.xml_root import MAX_BYTES as MAX_DESCRIPTION_BYTES
from ..errors import InputError
from ..ros import params as P
from ..control.closed_loop import check_actuated
from ..control.model_holder import ModelHolder
from ..model.model import describe_base
from . import payloads, queries, timing_queries
from .cdr import DiagnosticArrayWriter
# Also model_node's names, where the nodes and tests import them from:
from .spin import DEFAULT_EXECUTOR, EXECUTORS, STOP_WAIT, StopSignals, close, make_executor, run  # noqa: F401
from .warm_up import WARMUP_URDF as _WARMUP_URDF, warm_up, warm_up_model, warm_up_moving_base  # noqa: F401

#: QoS of robot_description, as robot_state_publisher offers it.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)

#: The parameters of every model node, written once in config/params/model.yaml (its header says how the
#: node files include it).
MODEL_PARAMS = P.schema('model.yaml', skip=())

class ModelNode(Node):
    """Robot model, payloads, dynamics services and /diagnostics.

    Two steps, as in ros2/examples: construct (plain state, no parameters,
    no ROS entities), then :meth:`configure` (what may fail or take time).
    :func:`run` does both. Subclasses set their own state in ``__init__``
    after ``super().__init__()``, add parameters (``extra_params``) and
    override the hooks, which :meth:`configure` calls in this order:
    :meth:`validate_params`, :meth:`warm_up`, :meth:`create_outputs`,
    :meth:`on_model` (with each model), :meth:`create_inputs`
    (subscriptions last, so a client that sees them knows the node is
    ready); :meth:`diagnostic_status` runs with each diagnostics period.
    The model, its payloads and its status are the ROS-free ``holder``
    (:class:`robot_dynamics.control.model_holder.ModelHolder`); the services
    are functions of it (:mod:`.queries`, :mod:`.timing_queries`, :mod:`.payloads`).
    """

    extra_params = ()
    #: Serve the read-only dynamics services (gravity, inverse and forward dynamics, mass matrix, trajectory
    #: efforts, retiming and its check). dynamics_node does not: their requests can be large, and a large request
    #: converted in the torque node's process takes its GIL (docs/NODES.md, "Which requests go where").
    query_services = True
    #: Second part of the DiagnosticStatus name: '<node>: <status_name>'.
    status_name = 'dynamics'

    #: Parameters declared without rclpy's read-only flag (the node refuses changes itself), so that they can be
    #: undeclared (a lifecycle cleanup).
    undeclarable_parameters = False

    def __init__(self, node_name, **kwargs):
        super().__init__(node_name, **kwargs)
        self.init_model_state()

    def init_model_state(self):
        """The state before configure: no parameters, no model."""
        self.p = None                 # the parameters, once configured
        self.configured = False
        self.holder = ModelHolder(None, self.get_logger(), self.check_model, self.service_base_state)
        self.now_ns = self.ros_now_ns       # the node clock's time [ns] (dynamics_node may choose a cheaper read)

    @property
    def model(self):
        """The current model (payloads included), or None."""
        return self.holder.model

    @property
    def model_status(self):
        return self.holder.status

    @property
    def model_source(self):
        return self.holder.source

    def configure(self):
        """Declare and validate the parameters, compile the kernels, build the model, and create
        the publishers, services and subscriptions. Once; returns the node.

        Raises:
            ParameterError: a parameter is invalid (all of them are listed), the
                URDF cannot be read or does not fit the node.
        """
        if self.configured:
            raise RuntimeError('%s is configured already' % self.get_name())
        self.p = self.holder.p = P.declare(self, MODEL_PARAMS + tuple(self.extra_params), self.undeclarable_parameters)
        self.validate_params()
        self.warm_up()
        self.diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10,
                                                 event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))
        self.diagnostics_writer = DiagnosticArrayWriter()
        self.status_title = '%s: %s' % (self.get_fully_qualified_name().lstrip('/'), self.status_name)
        self.create_outputs()
        from_topic = self.load_model()
        self.create_timer(self.p.diagnostics_period, self.publish_diagnostics)
        if self.query_services:
            register_queries(self, self.holder)
        payloads.register(self, self.holder)
        self.create_inputs()
        if from_topic:
            self.create_subscription(String, self.p.robot_description_topic,
                                     lambda msg: self.holder.set_description(msg.data, fatal=False), DESCRIPTION_QOS)
        self.configured = True
        return self

    def load_model(self):
        """The model from the parameter or the file (and the loops and actuators from theirs, once); True when
        it comes from the topic instead."""
        p, holder = self.p, self.holder
        from_topic = not (p.robot_description or p.urdf_path)
        holder.source = ('parameter robot_description' if p.robot_description else 'file %s' % p.urdf_path
                         if p.urdf_path else 'topic %s' % self.resolve_topic_name(p.robot_description_topic))
        if holder.read_files():
            return from_topic
        if p.robot_description:
            holder.set_description(p.robot_description, fatal=True)
        elif p.urdf_path:
            try:
                with open(p.urdf_path, 'rb') as f:
                    xml = f.read(MAX_DESCRIPTION_BYTES + 1)     # the loader refuses a longer one
            except OSError as exc:
                raise P.ParameterError("parameter 'urdf_path': cannot read %r: %s"
                                       % (p.urdf_path, exc.strerror or exc)) from None
            holder.set_description(xml, fatal=True, path=p.urdf_path)
        else:
            holder.status = 'waiting for %s' % holder.source[len('topic '):]
        return from_topic

    # --- hooks ---------------------------------------------------------------
    def validate_params(self):
        """Cross-parameter checks of a subclass; raise ParameterError."""

    def warm_up(self):
        """Compile (or load from numba's cache) every kernel the node calls."""
        warm_up()

    def create_outputs(self):
        """Create publishers (called before the model is loaded)."""

    def create_inputs(self):
        """Create subscriptions and timers (called last, when the node is ready)."""

    def on_model(self, model, joints_changed):
        """Called with every new model (description or payload change).

        Return None if the node can use the model, else a text saying why not
        (it is logged as an error and shown in diagnostics).
        """
        return None

    def diagnostic_status(self, status):
        """The subclass's [(key, value)] after the model's (sent as str(value)); it may set status.level, .message."""
        return []

    def final_stop(self, why):
        """What the node sends when it stops cleanly (run() calls it before the executor stops; ``why``: the
        signal or the error). A Future that run() waits for (at most STOP_WAIT), or None: nothing to send."""
        return None

    def report_stop(self, future):
        """Log how ``future`` of :meth:`final_stop` ended (done, or not answered within STOP_WAIT)."""

    # --- model ------------------------------------------------------------------
    def check_model(self, model, joints_changed):
        """The holder's check of each model: None, or the problem of its base, its loops or the node's."""
        return self.moving_base_problem(model) or self.loops_problem(model) or self.on_model(model, joints_changed)

    def actuated(self, model):
        """The actuated joints of ``model``: ``actuated_joints``, or every joint when it is empty."""
        return self.holder.actuated(model)

    def loops_problem(self, model):
        """The problem with ``actuated_joints`` for ``model``, or None (subclasses add theirs)."""
        if not self.p.actuated_joints:
            if model.loops:
                self.get_logger().warning('actuated_joints is empty: every joint of the closed-loop robot %r '
                                          'counts as actuated (its passive joints too); set it to the motors'
                                          % model.name, once=True)
            return None
        return check_actuated(model, list(self.p.actuated_joints))

    def moving_base_problem(self, model):
        """The text that refuses a floating or planar base, else None.

        Here (dynamics_services): always, as the node has no base-state
        input; subclasses that have one (dynamics_node with
        ``base_state_topic``, simulator_node) override it.
        """
        if model.root_joint is None:
            return None
        return ('%s: %s needs a fixed-base robot, as it has no base-state input; run dynamics_node with the '
                "parameter 'base_state_topic' (a nav_msgs/Odometry topic of the base pose and twist) for this "
                'robot, or give a description whose root link is fixed to the world'
                % (describe_base(model), self.get_name()))

    def service_base_state(self, model):
        """(q_root (root_nq,), v_root (root_nv,)): the base state the services use for a floating or
        planar ``model``. Raises InputError (the service then answers with it); subclasses with a base
        state override it."""
        raise InputError('%s and %s has no base state' % (describe_base(model), self.get_name()))

    # --- diagnostics ------------------------------------------------------------
    def ros_now_ns(self):
        """The node clock's time [ns] (simulated time or the system clock)."""
        return self.get_clock().now().nanoseconds

    def publish_diagnostics(self):
        """Publish the node's DiagnosticStatus: the model's values, then the subclass's (diagnostic_status); serialized
        here, no message objects (docs/PERFORMANCE.md, "dynamics_node's diagnostics period")."""
        holder, model = self.holder, self.holder.model
        status = Status(DiagnosticStatus.OK, self.status_title, 'ok', model.name if model is not None else '')
        if model is None:
            status.level = DiagnosticStatus.WARN if holder.status.startswith('waiting') else DiagnosticStatus.ERROR
            status.message = holder.error or holder.status
        elif holder.status != 'ok':
            status.level, status.message = DiagnosticStatus.ERROR, holder.error
        values = holder.status_values() + self.diagnostic_status(status)
        self.diagnostics.publish(self.diagnostics_writer.serialize(self.now_ns(), status, values))


class Status:
    """The node's DiagnosticStatus but its values, as the hooks read and set it: ``level`` (DiagnosticStatus.OK,
    WARN, ERROR or STALE: one byte), ``name``, ``message``, ``hardware_id`` (text). A plain object: a
    DiagnosticStatus message, with rclpy's checks of each field, took some 13 us of a period."""
    __slots__ = ('level', 'name', 'message', 'hardware_id')

    def __init__(self, level, name, message, hardware_id):
        self.level, self.name, self.message, self.hardware_id = level, name, message, hardware_id


def register_queries(node, holder):
    """Create the read-only services of :data:`.query_services.QUERY_SERVICES` on ``node`` (an rclpy Node),
    answered from ``holder`` by the functions of :mod:`.queries` and :mod:`.timing_queries`."""
    from robot_dynamics_interfaces.srv import (CheckTrajectory, ForwardDynamics, GravityCompensation,
                                               InverseDynamics, MassMatrix, RetimeTrajectory, TrajectoryEfforts)
    for kind, name, handler in ((GravityCompensation, 'gravity_compensation', queries.gravity),
                                (InverseDynamics, 'inverse_dynamics', queries.inverse_dynamics),
                                (ForwardDynamics, 'forward_dynamics', queries.forward_dynamics),
                                (MassMatrix, 'mass_matrix', queries.mass_matrix),
                                (TrajectoryEfforts, 'fill_trajectory_efforts', queries.trajectory_efforts),
                                (RetimeTrajectory, 'retime_trajectory', timing_queries.retime),
                                (CheckTrajectory, 'check_trajectory', timing_queries.check_trajectory)):
        node.create_service(kind, '~/' + name, lambda request, response, h=handler: h(holder, request, response))
