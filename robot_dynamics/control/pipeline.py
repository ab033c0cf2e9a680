"""The torque pipeline of one model, built: :func:`build` (``robot_dynamics.control.build``).

From a model (payloads included) and the :class:`.settings.PipelineSettings`, :func:`build` gives the
:class:`.torque_loop.TorqueLoop` that turns a joint state into the command, or the text of the problem
that refuses the model (the codebase's convention: None-or-the-problem; here the loop or the problem).
What a previous pipeline of the same node holds carries over when it still fits (``previous``): the
merged joint state and its staleness for the same joints, the clamp count, the impedance target and
its law, the reference, the momentum observer of the same model, the base state and a loop's branch.
"""
from . import profiles
from .compensation import IMPEDANCE_MODES, TorqueLimiter
from .external_torque import ExternalTorqueMonitor
from .impedance_target import KINDS, build_impedance, carry_target
from .joint_map import JointMapError, JointStateMerger, reorder_indices
from .laws import gains, laws_of, per_joint
from .staleness import JointStaleness
from .torque_loop import TorqueLoop
from ..errors import InputError


def build(model, settings, previous=None, *, base_model=None, payloads=None, dynamics=None):
    """The TorqueLoop of ``model`` with ``settings``, or the problem (a str) that refuses the model.

    Args:
        model: :class:`robot_dynamics.Model`, payloads included.
        settings: :class:`.settings.PipelineSettings`.
        previous: the node's TorqueLoop before this one, or None (see the module doc: what carries over).
        base_model: ``model`` without the payloads (a robot that compensates its own gravity gets the
            payloads' gravity in the command, :class:`.profiles.RobotGravity`); None: ``model``.
        payloads: link -> (mass, com, inertia) set on ``base_model`` (``{}``: none).
        dynamics: the model's CompiledModel (the compiled backend, :mod:`.backend`), or None: the library.

    Returns:
        TorqueLoop, or a str: what does not fit (``joints``, ``actuated_joints``, the observer, an
        impedance mode, payloads on a robot that compensates its own gravity).
    """
    s, old = settings, previous
    payloads = payloads or {}
    loops = bool(model.loops)
    names = tuple(s.actuated_joints or model.joint_names) if loops else tuple(model.joint_names)
    if not loops and s.actuated_joints and set(s.actuated_joints) != set(names):
        return ("actuated_joints names %d of the %d joints of %r, which has no loops (loops_file): a tree "
                "with passive joints cannot be compensated" % (len(s.actuated_joints), len(names), model.name))
    cmd_joints = list(s.joints) or list(names)
    try:
        cmd_idx = reorder_indices(names, cmd_joints, what="parameter 'joints'")
    except JointMapError as exc:
        passive = [j for j in cmd_joints if loops and j in model.joint_names and j not in names]
        if passive:
            return ("the model does not fit the controller: parameter 'joints' names the passive joint(s) "
                    "%s; the command is for the actuated joints (%s)" % (', '.join(passive), ', '.join(names)))
        return 'the model does not fit the controller: %s' % exc
    for gain in ('kp', 'kd'):
        values = getattr(s, gain)
        if len(values) not in (0, 1, len(cmd_joints)):
            return ("parameter %r has %d values; expected 1 (every joint) or one per entry of 'joints' (%d)"
                    % (gain, len(values), len(cmd_joints)))
    try:
        limiter = TorqueLimiter(model.effort_limit[[model.joint_names.index(n) for n in names]],
                                s.effort_limit_scale)
    except InputError as exc:
        return 'parameter effort_limit_scale: %s' % exc
    if old is not None:
        limiter.clamp_events = old.limiter.clamp_events
    if old is not None and old.merger.joint_names == names:
        merger, staleness = old.merger, old.staleness
    else:
        merger, staleness = JointStateMerger(names), JointStaleness(names, s.joint_timeout_ns)
    monitor = _monitor(model, s, names, cmd_joints, old and old.monitor)
    if isinstance(monitor, str):
        return monitor
    laws = laws_of(model, names, s.mode, s.friction_smoothing, gains(s.kp, names, cmd_joints),
                   gains(s.kd, names, cmd_joints), s.timeout_ns, old and old.base, old and old.loop,
                   tracking_friction=s.tracking_friction, dynamics=dynamics)
    terms = _command_terms(model, s, len(names), base_model or model, payloads, merger)
    if isinstance(terms, str):
        return terms
    fixed_tree = laws.kind == 'tree'
    target, impedance = _impedance(model, s, names, cmd_joints, fixed_tree, old)
    if isinstance(impedance, str):
        return impedance
    passive = tuple(n for n in model.joint_names if n not in names)
    keep_passive = old is not None and old.passive is not None and old.passive.joint_names == passive
    pipeline = TorqueLoop(s, merger, staleness, laws, limiter, terms, cmd_idx,
                          passive=(old.passive if keep_passive else JointStateMerger(passive)) if passive else None,
                          impedance=impedance, target=target, monitor=monitor)
    if old is not None and old.merger is merger:
        pipeline.set_reference(old.reference, old.ref_start, old.ref_stream)
    return pipeline


def _command_terms(model, s, n, base_model, payloads, merger):
    """The CommandTerms of the profile: with payloads on a robot that compensates its own gravity, the
    command keeps their gravity (profiles.RobotGravity); or the problem."""
    gravity = profiles.parse_state(s.robot_compensates_gravity) == profiles.TRUE
    tree = not model.loops and model.root_joint is None
    problem = profiles.payload_problem(s.robot_compensates_gravity, payloads, tree)
    if problem:
        return problem
    robot = profiles.RobotGravity(base_model, merger.q) if gravity and payloads else None
    return profiles.CommandTerms(gravity, profiles.parse_state(s.robot_compensates_friction) == profiles.TRUE,
                                 n, robot_gravity=robot)


def _impedance(model, s, names, cmd_joints, fixed_tree, old):
    """(the target holder, the ImpedanceControl of an impedance mode (None in another mode) or the
    problem). Every fixed-base tree has a holder (the others refuse targets); it keeps the old one's
    counts, and its target for the same law."""
    old_imp = old.impedance if old is not None else None
    if not fixed_tree:
        if s.mode in IMPEDANCE_MODES:
            return None, 'mode %s needs a fixed-base robot without closed loops; %r is not one' % (s.mode, model.name)
        return None, None
    same = (old_imp is not None and s.mode in IMPEDANCE_MODES and KINDS[s.mode] == old_imp.target.kind
            and old_imp.law.model.joint_names == model.joint_names
            and (not old_imp.cartesian or old_imp.law.link == (s.impedance_link or model.link_names[-1])))
    target = carry_target(old.target if old is not None else None, names, model.base_link,
                          int(s.target_timeout * 1e9), KINDS.get(s.mode), same)
    if s.mode not in IMPEDANCE_MODES:
        return target, None
    stiffness, damping = list(s.stiffness), list(s.damping)
    try:
        if s.mode != 'cartesian_impedance':
            stiffness = per_joint('stiffness', stiffness, names, cmd_joints) if stiffness else []
            damping = per_joint('damping', damping, names, cmd_joints) if damping else []
        return target, build_impedance(model, s.mode, target, link=s.impedance_link, stiffness=stiffness,
                                       damping=damping, nullspace_stiffness=s.nullspace_stiffness,
                                       max_pose_error=list(s.max_pose_error), max_torque_rate=s.max_torque_rate,
                                       max_gap_ns=s.timeout_ns, old=old_imp if same else None)
    except ValueError as exc:
        return target, 'mode %s does not fit the model: %s' % (s.mode, exc)


def _monitor(model, s, names, cmd_joints, old):
    """The momentum observer of ``model`` (``old`` itself for the same model, so a parameter change does
    not restart it; its counts carry over to a new model), None when off, or the problem."""
    if not s.observer_on:
        return None
    if old is not None and old.model is model:
        return old
    link = s.external_wrench_link or None
    try:
        gains_ = per_joint('observer_gains', list(s.observer_gains), names, cmd_joints)
        thresholds = (per_joint('collision_thresholds', list(s.collision_thresholds), names, cmd_joints)
                      if s.collision_thresholds else None)
        if link is not None and link not in model.link_names:
            raise InputError("parameter 'external_wrench_link' %r is not a link of the model (its links: %s)"
                             % (link, ', '.join(model.link_names)))
        monitor = ExternalTorqueMonitor(model, gains_, thresholds, link, max_gap=s.joint_state_timeout,
                                        friction_smoothing=s.friction_smoothing if s.observer_friction else None)
    except ValueError as exc:
        return 'the momentum observer does not fit the model: %s' % exc
    if old is not None:
        monitor.in_collision = old.in_collision      # a collision then clears with an event
        monitor.samples, monitor.skipped, monitor.restarts = old.samples, old.skipped, old.restarts
    return monitor
