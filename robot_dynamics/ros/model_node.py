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
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import (CheckTrajectory, ForwardDynamics, GravityCompensation, InverseDynamics,
                                           MassMatrix, RetimeTrajectory, SetPayload, TrajectoryEfforts)

from ..constraints.load import load_description
from ..model.xml_root import MAX_BYTES as MAX_DESCRIPTION_BYTES
from ..errors import InputError
from ..ros import params as P
from ..control.closed_loop import check_actuated
from .payloads import Payloads
from .queries import Queries, describe_base  # noqa: F401  (describe_base: also here)
from .timing_queries import TimingQueries
# Also model_node's names, where the nodes and tests import them from:
from .spin import DEFAULT_EXECUTOR, EXECUTORS, STOP_WAIT, StopSignals, close, make_executor, run  # noqa: F401
from .warm_up import WARMUP_URDF as _WARMUP_URDF, warm_up, warm_up_model, warm_up_moving_base  # noqa: F401

#: QoS of robot_description, as robot_state_publisher offers it.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)

#: The parameters of every model node, written once in config/params/model.yaml (its header says how the
#: node files include it).
MODEL_PARAMS = P.schema('model.yaml', skip=())

class ModelNode(Payloads, Queries, TimingQueries, Node):
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
        self.base_model = None        # from the description, no payloads
        self.model = None             # base_model with the payloads
        self.model_source = ''
        self.model_status = 'waiting'
        self.model_error = ''
        self.model_updates = 0
        self.descriptions_rejected = 0
        self.description_seconds = None  # (wall, CPU) [s] the last description took to load or be refused
        self.payloads = {}            # link -> (mass, com (3,), inertia (3, 3))
        self.loops = None             # the parsed loops_file (a tuple of rd.Loop), or None
        self.loops_error = ''         # why loops_file could not be read, or ''
        self.actuators = None         # the parsed actuators_file ({joint: {...}}), or None
        self.actuators_error = ''     # why actuators_file could not be read, or ''
        self._service_loop = None     # the services' ClosedLoop of the current model
        self._clock = self.get_clock()

    def configure(self):
        """Declare and validate the parameters, compile the kernels, build the model, and create
        the publishers, services and subscriptions. Once; returns the node.

        Raises:
            ParameterError: a parameter is invalid (all of them are listed), the
                URDF cannot be read or does not fit the node.
        """
        if self.configured:
            raise RuntimeError('%s is configured already' % self.get_name())
        self.p = P.declare(self, MODEL_PARAMS + tuple(self.extra_params), self.undeclarable_parameters)
        self.validate_params()
        t0 = time.perf_counter()
        self.warm_up()
        self.get_logger().debug('kernels ready in %.2f s' % (time.perf_counter() - t0))
        self._diag_pub = self.create_publisher(
            DiagnosticArray, '/diagnostics', 10,
            event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))
        self.create_outputs()

        # The model: parameter, file, or topic; the loops from their file, once.
        from_topic = not (self.p.robot_description or self.p.urdf_path)
        if self.p.loops_file:
            from ..model.loops import parse_loops
            self.loops, self.loops_error = self._read_file('loops_file', parse_loops)
        if self.p.actuators_file:
            from ..model.actuators import parse_actuators
            self.actuators, self.actuators_error = self._read_file('actuators_file',
                                                                   lambda text: parse_actuators(text + '\n'))
        if self.loops_error or self.actuators_error:
            self.model_source = 'parameter robot_description' if self.p.robot_description else (
                'file %s' % self.p.urdf_path if self.p.urdf_path else 'topic %s' % self.resolve_topic_name(
                    self.p.robot_description_topic))
        elif self.p.robot_description:
            self.model_source = 'parameter robot_description'
            self._set_description(self.p.robot_description, fatal=True)
        elif self.p.urdf_path:
            self.model_source = 'file %s' % self.p.urdf_path
            try:
                with open(self.p.urdf_path, 'rb') as f:
                    xml = f.read(MAX_DESCRIPTION_BYTES + 1)     # the loader refuses a longer one
            except OSError as exc:
                raise P.ParameterError("parameter 'urdf_path': cannot read %r: %s"
                                       % (self.p.urdf_path, exc.strerror or exc)) from None
            self._set_description(xml, fatal=True, path=self.p.urdf_path)
        else:
            topic = self.resolve_topic_name(self.p.robot_description_topic)
            self.model_source = 'topic %s' % topic
            self.model_status = 'waiting for %s' % topic

        self._diag_timer = self.create_timer(self.p.diagnostics_period, self._publish_diagnostics)
        if self.query_services:
            self.create_service(GravityCompensation, '~/gravity_compensation', self._srv_gravity)
            self.create_service(InverseDynamics, '~/inverse_dynamics', self._srv_inverse_dynamics)
            self.create_service(ForwardDynamics, '~/forward_dynamics', self._srv_forward_dynamics)
            self.create_service(MassMatrix, '~/mass_matrix', self._srv_mass_matrix)
            self.create_service(TrajectoryEfforts, '~/fill_trajectory_efforts', self._srv_trajectory)
            self.create_service(RetimeTrajectory, '~/retime_trajectory', self._srv_retime)
            self.create_service(CheckTrajectory, '~/check_trajectory', self._srv_check_trajectory)
        self.create_service(SetPayload, '~/set_payload', self._srv_set_payload)
        self.create_inputs()
        if from_topic:
            self.create_subscription(String, self.p.robot_description_topic, self._on_description,
                                     DESCRIPTION_QOS)
        self.configured = True
        return self

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
        """Add values to the node's DiagnosticStatus and set its level/message."""

    def final_stop(self, why):
        """What the node sends when it stops cleanly (run() calls it before the executor stops; ``why``: the
        signal or the error). A Future that run() waits for (at most STOP_WAIT), or None: nothing to send."""
        return None

    def report_stop(self, future):
        """Log how ``future`` of :meth:`final_stop` ended (done, or not answered within STOP_WAIT)."""

    # --- model ------------------------------------------------------------------
    def _read_file(self, parameter, parse):
        """``parse`` of the file the parameter ``parameter`` names, and '' (or None and why not: then
        the error status, and the node stays up without a model)."""
        value, error = read_model_file(parameter, getattr(self.p, parameter), parse)
        if error:
            self.model_status, self.model_error = 'error', error
            self.get_logger().error(error + '; no model until the node is restarted with a usable file')
        return value, error

    def _on_description(self, msg):
        self._set_description(msg.data, fatal=False)

    def _set_description(self, xml, fatal, path=None):
        # Always XML text, never a path: rd.load_urdf would open a str that
        # does not start with '<' as a file, and a description comes from the
        # network (a FIFO path would block the node, any other path would
        # probe the file system). ``path``: the urdf_path file the text was read
        # from (an MJCF is compiled from it, for its <include> and asset files).
        started = time.perf_counter(), time.thread_time()
        try:
            self._take_description(xml, fatal, path, started)
        finally:
            self.description_seconds = _since(started)

    def _take_description(self, xml, fatal, path, started):
        if self.loops_error or self.actuators_error:
            self.descriptions_rejected += 1
            return
        try:
            base = load_description(xml, gravity=tuple(self.p.gravity), loops=self.loops, path=path,
                                    actuators=self.actuators, skip_missing_meshes=self.p.skip_missing_meshes)
        except (ValueError, OSError) as exc:
            text = 'robot description rejected (%s): %s' % (self.model_source, exc)
            if self.loops and self._tree_loads(xml, path):           # the loops' fault: an error status, no exit
                text = ("robot description rejected (%s): the loops of loops_file %r do not fit it: %s"
                        % (self.model_source, self.p.loops_file, exc))
                fatal = False
            if fatal:
                raise P.ParameterError(text + ' (decided in %.3f s, %.3f s of CPU)' % _since(started)) from None
            self.descriptions_rejected += 1
            self.model_error = text
            self.model_status = 'error' if self.model is None else 'error (previous model kept)'
            self.get_logger().error(text + (' Keeping the previous model.' if self.model else '')
                                    + ' (decided in %.3f s, %.3f s of CPU)' % _since(started))
            return
        dropped = [link for link in self.payloads if link not in base.link_names]
        for link in dropped:
            del self.payloads[link]
            self.get_logger().warning('payload on %r dropped: the new description has no such link' % link)
        old = self.model
        self.base_model = base
        problem = self._rebuild(joints_changed=old is None or old.joint_names != base.joint_names)
        self.model_updates += 1
        if problem and fatal:
            raise P.ParameterError(problem)
        if not problem:
            self.get_logger().info('model %r from %s in %.3f s: %d joints (%s), %.2f kg%s%s'
                                   % (base.name, self.model_source, _since(started)[0], len(base.joint_names),
                                      ', '.join(base.joint_names), base.total_mass,
                                      '' if base.root_joint is None else ', %s base' % base.root_joint,
                                      '' if not base.loops else ', %d loop(s) from %s (actuated: %s)' % (
                                          len(base.loops), self.p.loops_file, ', '.join(self.actuated(base)))))

    def _tree_loads(self, xml, path):
        """True if the description loads without the loops (then they are what does not fit)."""
        try:
            load_description(xml, gravity=tuple(self.p.gravity), path=path,
                             skip_missing_meshes=self.p.skip_missing_meshes)
            return True
        except (ValueError, OSError):
            return False

    def actuated(self, model):
        """The actuated joints of ``model``: ``actuated_joints``, or every joint when it is empty."""
        return list(self.p.actuated_joints) or list(model.joint_names)

    def loops_problem(self, model):
        """The problem with ``actuated_joints`` for ``model``, or None (subclasses add theirs)."""
        if not self.p.actuated_joints:
            if model.loops:
                self.get_logger().warning('actuated_joints is empty: every joint of the closed-loop robot %r '
                                          'counts as actuated (its passive joints too); set it to the motors'
                                          % model.name, once=True)
            return None
        return check_actuated(model, list(self.p.actuated_joints))

    def _rebuild(self, joints_changed):
        model = self.base_model
        for link, (m, com, inertia) in self.payloads.items():
            model = model.with_payload(link, m, com, inertia)
        self.model = model
        self._service_loop = None
        problem = (self.moving_base_problem(model) or self.loops_problem(model)
                   or self.on_model(model, joints_changed))
        if problem:
            self.model_status = 'error'
            self.model_error = problem
            self.get_logger().error(problem)
        else:
            self.model_status = 'ok'
            self.model_error = ''
        return problem

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
    def _publish_diagnostics(self):
        status = DiagnosticStatus()
        status.name = '%s: %s' % (self.get_fully_qualified_name().lstrip('/'), self.status_name)
        status.hardware_id = self.model.name if self.model is not None else ''
        status.level = DiagnosticStatus.OK
        status.message = 'ok'
        if self.model is None:
            status.level = DiagnosticStatus.WARN if self.model_status.startswith('waiting') else DiagnosticStatus.ERROR
            status.message = self.model_error or self.model_status
        elif self.model_status != 'ok':
            status.level = DiagnosticStatus.ERROR
            status.message = self.model_error
        values = [('model_source', self.model_source), ('model_status', self.model_status),
                  ('model_updates', self.model_updates),
                  ('descriptions_rejected', self.descriptions_rejected)]
        if self.description_seconds is not None:
            values += [('last_description_seconds', '%.4f' % self.description_seconds[0]),
                       ('last_description_cpu_seconds', '%.4f' % self.description_seconds[1])]
        if self.p.loops_file:
            values.append(('loops_file', self.p.loops_file))
        if self.p.actuators_file:
            values.append(('actuators_file', self.p.actuators_file))
        if self.model is not None and self.model.loops:
            values += [('loops', ', '.join(l.name for l in self.model.loops)),
                       ('actuated_joints', ', '.join(self.actuated(self.model)))]
        if self.model is not None:
            values += [('robot', self.model.name), ('joints', ', '.join(self.model.joint_names)),
                       ('payload_mass_kg', '%.4g' % self.payload_mass()),
                       ('payload_links', ', '.join(sorted(self.payloads)))]
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values]
        self.diagnostic_status(status)
        array = DiagnosticArray()
        array.header.stamp = self._clock.now().to_msg()
        array.status = [status]
        self._diag_pub.publish(array)


def _since(started):
    """(wall, CPU of this thread) [s] since ``started`` = (time.perf_counter(), time.thread_time())."""
    return time.perf_counter() - started[0], time.thread_time() - started[1]


def read_model_file(parameter, path, parse):
    """(``parse`` of the text of ``path``, '') or (None, why not, naming ``parameter``): a path or
    package://pkg/path, at most 1 MiB read."""
    try:
        with open(resolve_path(path), 'rb') as f:
            text = f.read(1 << 20).decode('utf-8', 'replace')
        return parse(text), ''
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return None, 'parameter %r %r: %s' % (parameter, path, reason)


def resolve_path(path):
    """A file path of ``path``: as it is, or ``package://<package>/<rest>`` in that package's share
    directory (ament index; OSError if the package is not found)."""
    prefix = 'package://'
    if not path.startswith(prefix):
        return path
    package, _, rest = path[len(prefix):].partition('/')
    try:
        from ament_index_python.packages import get_package_share_directory
        share = get_package_share_directory(package)
    except Exception as exc:          # PackageNotFoundError, or no ament index at all
        raise OSError(0, 'package %r not found (%s)' % (package, exc)) from None
    import os
    return os.path.join(share, rest)
