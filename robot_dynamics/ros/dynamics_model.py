"""How dynamics_node builds its torque pipeline (:class:`robot_dynamics.control.torque_loop.TorqueLoop`)
for each model, and the problems that refuse a model."""
import math

from ..control import profiles
from ..control.backend import COMPILED, CompiledModels, covers
from ..control.base_state import base_link, describe_base
from ..control.compensation import IMPEDANCE_MODES, TorqueLimiter
from ..control.external_torque import ExternalTorqueMonitor
from ..control.impedance_target import KINDS, build_impedance, carry_target
from ..control.joint_map import JointMapError, JointStateMerger, reorder_indices
from ..control.staleness import JointStaleness
from ..control.torque_loop import DiagnosticThrottle, TorqueLoop, base_state_problem, gains, laws_of, per_joint
from ..errors import InputError
from .cdr import JointStateWriter


#: [s] How often the executor looks whether a model's code is compiled (control/backend.py), while it is not.
COMPILE_POLL = 0.1


class PipelineBuilder:
    """DynamicsNode's part that follows the model (a mixin of the node: its ``p``, ``watchdog``, ``merger``,
    ``staleness``, ``limiter``, ``monitor``, ``pipeline``, ``command``, ``identify``, ``observer_out``,
    ``torque_pubs``)."""

    def on_model(self, model, joints_changed):
        """(Re)build the torque pipeline of the model; None or the problem."""
        self.ready = False
        p, old = self.p, self.pipeline
        loops = bool(model.loops)
        names = tuple(self.actuated(model)) if loops else tuple(model.joint_names)
        if not loops and p.actuated_joints and set(p.actuated_joints) != set(names):
            return ("actuated_joints names %d of the %d joints of %r, which has no loops (loops_file): a tree "
                    "with passive joints cannot be compensated" % (len(p.actuated_joints), len(names), model.name))
        cmd_joints = list(p.joints) or list(names)
        try:
            cmd_idx = reorder_indices(names, cmd_joints, what="parameter 'joints'")
        except JointMapError as exc:
            passive = [j for j in cmd_joints if loops and j in model.joint_names and j not in names]
            if passive:
                return ("the model does not fit the controller: parameter 'joints' names the passive joint(s) "
                        "%s; the command is for the actuated joints (%s)" % (', '.join(passive), ', '.join(names)))
            return 'the model does not fit the controller: %s' % exc
        limiter = TorqueLimiter(model.effort_limit[[model.joint_names.index(n) for n in names]], p.effort_limit_scale)
        if not limiter.bounded:
            free = [n for n, l in zip(names, limiter.limit) if not math.isfinite(l)]
            self.get_logger().warning('no URDF effort limit for %s: their torques are checked for '
                                      'finiteness but not clamped' % ', '.join(free))
        if self.limiter is not None:
            limiter.clamp_events = self.limiter.clamp_events
        if self.merger is None or self.merger.joint_names != names:
            self.merger = JointStateMerger(names)
            self.staleness = JointStaleness(names, self.watchdog.joint_timeout_ns)
            if self.identify is not None:
                self.identify.abort('the model\'s joints changed while collecting joint states')
        if self.joint_inputs is not None:
            self.joint_inputs.attach(self.merger, self.staleness)     # held_joints
        passive = tuple(n for n in model.joint_names if n not in names)
        problem = self._build_monitor(model, names, cmd_joints)
        if problem:
            return problem
        kp, kd = gains(p.kp, names, cmd_joints), gains(p.kd, names, cmd_joints)
        laws, ff, ct, base, loop = laws_of(model, names, p.mode, p.friction_smoothing, kp, kd,
                                           self.watchdog.timeout_ns, old and old.base, old and old.loop,
                                           tracking_friction=p.tracking_friction, dynamics=self._compiled(model))
        terms = self._command_terms(model, names)
        if isinstance(terms, str):
            return terms
        impedance = self._build_impedance(model, names, cmd_joints, base is not None or loop is not None)
        if isinstance(impedance, str):
            return impedance
        keep_passive = old is not None and old.passive is not None and old.passive.joint_names == passive
        self.pipeline = TorqueLoop(
            self.merger, self.staleness, laws, ff, ct, limiter, terms, cmd_idx, p.mode, base=base, loop=loop,
            passive=(old.passive if keep_passive else JointStateMerger(passive)) if passive else None,
            max_age_ns=int(p.max_state_age * 1e9), throttle=DiagnosticThrottle.from_rate(p.diagnostic_torque_rate),
            base_topic=self.base_topic(), timeout_s=p.joint_state_timeout, impedance=impedance,
            target=impedance.target if impedance is not None else self._target)
        if old is not None and old.merger is self.merger:
            self.pipeline.set_reference(old.reference, old.ref_start, old.ref_stream)
        writer = JointStateWriter(names)            # the torques are published serialized (cdr.py)
        self.outputs = {k: (pub, writer) for k, pub in self.torque_pubs.items()}
        if self.command is not None:
            self.command.size(self.pipeline.command)
        self.limiter, self.cmd_joints, self._frame = limiter, cmd_joints, model.base_link
        self.ready = True
        return None

    def _command_terms(self, model, names):
        """The CommandTerms of the profile: with payloads set here on a robot that compensates its own gravity,
        the command keeps their gravity (profiles.RobotGravity); or the problem."""
        p = self.p
        gravity = profiles.parse_state(p.robot_compensates_gravity) == profiles.TRUE
        tree = not model.loops and model.root_joint is None
        problem = profiles.payload_problem(p.robot_compensates_gravity, self.payloads, tree)
        if problem:
            return problem
        robot = profiles.RobotGravity(self.base_model, self.merger.q) if gravity and self.payloads else None
        return profiles.CommandTerms(gravity, profiles.parse_state(p.robot_compensates_friction) == profiles.TRUE,
                                     len(names), robot_gravity=robot)

    # --- the compiled backend (control/backend.py) ----------------------------------------------------
    def _compiled(self, model):
        """The CompiledModel of ``model`` when ``backend`` is compiled and its code is ready, else None (the
        library): its compilation runs in a thread, and :meth:`_on_compiled` (a timer of the executor, every
        COMPILE_POLL s while one runs: EventsExecutor has no guard conditions) rebuilds the pipeline with it."""
        if self.p.backend != COMPILED:
            return None
        if not covers(model):
            self.get_logger().warning('backend compiled covers fixed-base trees; %r (%s) runs on the library'
                                      % (model.name, describe_base(model) if model.root_joint else 'closed loops'),
                                      once=True)
            return None
        if self.compiled_models is None:
            self.compiled_models = CompiledModels(lambda _model: None)
        code = self.compiled_models.get(model)
        if code is None and self.compiled_models.state(model) == 'compiling' and self._compile_poll is None:
            self._compile_poll = self.create_timer(COMPILE_POLL, self._on_compiled)
        return code

    def backend_state(self):
        """What computes the laws now: 'library', 'compiled', or 'library (compiling)' / 'library (failed)'."""
        models, model = self.compiled_models, self.model
        if self.p.backend != COMPILED or models is None or model is None or not covers(model):
            return 'library'
        state = models.state(model)
        return 'compiled' if state == 'compiled' else 'library (%s)' % state

    def _on_compiled(self):
        """While a compilation runs (the executor's thread): when it ends, use the current model's code, or
        say why not."""
        model, models = self.model, self.compiled_models
        if model is None or models is None or models.state(model) == 'compiling':
            return
        self.destroy_timer(self._compile_poll)
        self._compile_poll = None
        error = models.error(model)
        if error is not None:
            self.get_logger().error('backend compiled: the code of %r could not be built, the library computes the '
                                    'torques: %s' % (model.name, error), once=True)
            return
        if models.get(model) is None or self.pipeline is None or getattr(self.pipeline.laws, 'dynamics', None):
            return
        problem = self.on_model(model, False)
        if problem:
            self.get_logger().error('backend compiled: %s' % problem)
        else:
            self.get_logger().info('backend compiled: the torques of %r now come from its generated C' % model.name)

    def _build_impedance(self, model, names, cmd_joints, moving_or_loops):
        """The ImpedanceControl of an impedance mode (None in another mode), or the problem; the target holder
        (``self._target``, of every fixed-base pipeline) keeps its counts, and its target for the same law."""
        p, old = self.p, self.pipeline
        old_imp = old.impedance if old is not None else None
        if moving_or_loops:
            self._target = None
            if p.mode in IMPEDANCE_MODES:
                return 'mode %s needs a fixed-base robot without closed loops; %r is not one' % (p.mode, model.name)
            return None
        same = (old_imp is not None and p.mode in IMPEDANCE_MODES and KINDS[p.mode] == old_imp.target.kind
                and (not old_imp.cartesian or old_imp.law.link == (p.impedance_link or model.link_names[-1])))
        self._target = carry_target(self._target, names, model.base_link,
                                    int(p.target_timeout * 1e9), KINDS.get(p.mode), same)
        if p.mode not in IMPEDANCE_MODES:
            return None
        stiffness, damping = p.stiffness, p.damping
        try:
            if p.mode != 'cartesian_impedance':
                stiffness = per_joint('stiffness', stiffness, names, cmd_joints) if stiffness else []
                damping = per_joint('damping', damping, names, cmd_joints) if damping else []
            return build_impedance(model, p.mode, self._target, link=p.impedance_link, stiffness=stiffness,
                                   damping=damping, nullspace_stiffness=p.nullspace_stiffness,
                                   max_pose_error=p.max_pose_error, max_torque_rate=p.max_torque_rate,
                                   max_gap_ns=self.watchdog.timeout_ns, old=old_imp if same else None)
        except ValueError as exc:
            return 'mode %s does not fit the model: %s' % (p.mode, exc)

    def _build_monitor(self, model, names, cmd_joints):
        """The momentum observer of ``model`` (kept for the same model, so a parameter change does not
        restart it), or None when off; returns None or the problem."""
        p, old = self.p, self.monitor
        if not self.observer_on or (old is not None and old.model is model):
            return None
        self.monitor = None
        link = p.external_wrench_link or None
        try:
            gains_ = per_joint('observer_gains', p.observer_gains, names, cmd_joints)
            thresholds = (per_joint('collision_thresholds', p.collision_thresholds, names, cmd_joints)
                          if p.collision_thresholds else None)
            if link is not None and link not in model.link_names:
                raise InputError("parameter 'external_wrench_link' %r is not a link of the model (its links: %s)"
                                 % (link, ', '.join(model.link_names)))
            monitor = ExternalTorqueMonitor(model, gains_, thresholds, link, max_gap=p.joint_state_timeout,
                                            friction_smoothing=p.friction_smoothing if p.observer_friction else None)
        except ValueError as exc:
            return 'the momentum observer does not fit the model: %s' % exc
        if old is not None:
            monitor.in_collision = old.in_collision      # a collision then clears with an event
            monitor.samples, monitor.skipped, monitor.restarts = old.samples, old.skipped, old.restarts
        self.observer_out.set_joints(names, link)
        self.monitor = monitor
        return None

    def moving_base_problem(self, model):
        """None for a fixed base, or a floating or planar one with ``base_state_topic``; else what to set."""
        if model.root_joint is None:
            return None
        if not self.p.base_state_topic:
            return ("%s: dynamics_node needs its pose and twist; set the parameter 'base_state_topic' to a "
                    "nav_msgs/Odometry topic of the base (child_frame_id %r, twist in the base frame), or give a "
                    "description whose root link is fixed to the world" % (describe_base(model), base_link(model)))
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
            raise InputError('%s and no base state has come on %s yet' % (describe_base(model), self.base_topic()))
        if not base.fresh(self._now_ns()):
            raise InputError('%s: %s' % (describe_base(model), self.no_base_text(base)))
        return base.q.copy(), base.v.copy()

    def base_topic(self):
        return self.resolve_topic_name(self.p.base_state_topic) if self.p.base_state_topic else '(none)'

    def no_base_text(self, base):
        return base_state_problem(base, self._now_ns(), self.base_topic(), self.p.joint_state_timeout)

