"""dynamics_node's parameters: its schema file (``config/params/dynamics_node.yaml``, with state.yaml; model.yaml
is :data:`.model_node.MODEL_PARAMS`) and the named validators that take several parameters together.

Each cross validator is a function of the parameters (any object with their attributes) returning its
problems; the schema file names it under one of the parameters it reads (``robot_dynamics::<name>``).
:func:`validate` runs them all and reports every problem in one ParameterError, at start-up and for
each run-time change.
"""
from rclpy.parameter import Parameter

from ..control import profiles
from ..control.compensation import CARTESIAN_IMPEDANCE, COMPUTED_TORQUE, JOINT_IMPEDANCE
from . import params as P
from .param_files import validator

#: The values of the robot_compensates_* parameters: true, false, unknown (a bool or a string).
validator('true_false_or_unknown')(lambda value: profiles.check_state(value))


def observer_on(p):
    """Whether parameters ``p`` ask for the momentum observer (a gain > 0)."""
    return any(g > 0 for g in p.observer_gains)


@validator('per_joint_gains', cross=True)
def per_joint_gains(p):
    """kp, kd, observer_gains, collision_thresholds: 1 value, or one per entry of joints."""
    problems = []
    for name in ('kp', 'kd', 'observer_gains', 'collision_thresholds'):
        gains = getattr(p, name)
        if len(gains) > 1 and p.joints and len(gains) != len(p.joints):
            problems.append("parameter %r has %d values; expected 1 or one per entry of 'joints' (%d)"
                            % (name, len(gains), len(p.joints)))
        if len(gains) > 1 and not p.joints:
            problems.append("parameter %r has %d values: per-joint gains need the 'joints' parameter to name "
                            "their joints (or give 1 value)" % (name, len(gains)))
    return problems


@validator('unique_joints', cross=True)
def unique_joints(p):
    if len(set(p.joints)) != len(p.joints):
        return "parameter 'joints' names a joint more than once: %s" % p.joints
    return None


@validator('impedance_sizes', cross=True)
def impedance_sizes(p):
    """max_pose_error: 2 values; stiffness and damping: sized for the impedance mode."""
    problems = []
    if len(p.max_pose_error) != 2:
        problems.append("parameter 'max_pose_error' must be 2 values [m, rad], got %s" % p.max_pose_error)
    for name in ('stiffness', 'damping'):
        values = getattr(p, name)
        if p.mode == CARTESIAN_IMPEDANCE and values and len(values) != 6:
            problems.append("parameter %r of mode cartesian_impedance must be 6 values [N/m x3, N m/rad x3] "
                            "(or empty), got %d" % (name, len(values)))
        if p.mode == JOINT_IMPEDANCE and len(values) > 1 and len(values) != len(p.joints):
            problems.append("parameter %r of mode joint_impedance must be 1 value or one per entry of "
                            "'joints' (%d), got %d" % (name, len(p.joints), len(values)))
    return problems


@validator('one_position_per_held_joint', cross=True)
def one_position_per_held_joint(p):
    if len(p.held_joints) != len(p.held_positions) or len(set(p.held_joints)) != len(p.held_joints):
        return ("parameters 'held_joints' (%d) and 'held_positions' (%d) must name each held joint once and give "
                "one position per held joint, in its order" % (len(p.held_joints), len(p.held_positions)))
    return None


@validator('no_term_the_robot_compensates', cross=True)
def no_term_the_robot_compensates(p):
    """Never command a term the robot compensates itself (profiles.py, docs/ROBOTS.md)."""
    return (profiles.unknown_problem(p.robot_compensates_gravity, p.robot_compensates_friction)
            or profiles.mode_problem(p.mode, p.robot_compensates_gravity, p.publish_command)
            or profiles.tracking_friction_problem(p.mode, p.tracking_friction, p.robot_compensates_friction,
                                                  p.publish_command))


@validator('observer_all_or_none', cross=True)
def observer_all_or_none(p):
    if observer_on(p) and not all(g > 0 for g in p.observer_gains):
        return ("parameter 'observer_gains' mixes 0 (no observer) and gains > 0: give every joint a gain > 0, "
                "or [] for no observer")
    return None


@validator('observer_needs_joint_torques', cross=True)
def observer_needs_joint_torques(p):
    if p.joint_state_effort != profiles.JOINT_TORQUE and (observer_on(p) or p.collision_thresholds
                                                           or p.external_wrench_link):
        return ("parameters 'observer_gains', 'collision_thresholds' and 'external_wrench_link' need joint "
                "torques in the effort field of joint_states, and joint_state_effort is %r (the vendor profile's; "
                "a UR arm's driver publishes motor currents there): the momentum observer would take the "
                "difference for an external torque. Leave them empty, or publish joint torques and set "
                "joint_state_effort joint_torque (docs/ROBOTS.md)" % p.joint_state_effort)
    return None


@validator('observer_outputs_need_observer', cross=True)
def observer_outputs_need_observer(p):
    if not observer_on(p) and (p.collision_thresholds or p.external_wrench_link):
        return ("parameters 'collision_thresholds' and 'external_wrench_link' need the momentum observer: set "
                "'observer_gains'")
    return None


NODE_PARAMS = P.schema('dynamics_node.yaml')

#: The class of dynamics_node's parameter object (what :func:`.params.declare` returns for it): one typed
#: attribute per parameter, model.yaml's first.
Parameters = P.parameters_class(P.names_and_types(P.schema('model.yaml', skip=()) + NODE_PARAMS))


def validate(p, warn):
    """Run every cross validator on the parameters ``p`` (one ParameterError listing all their problems);
    ``warn(text)`` logs a warning."""
    if p.mode == COMPUTED_TORQUE and not p.kp:
        warn('mode computed_torque with no kp/kd gains: pure feedforward plus compensation of the measured '
             'state')
    P.check_all(NODE_PARAMS, p)


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


def apply_changes(p, changes, validate, rebuild):
    """Set ``changes`` ({name: value}, from :func:`parameter_changes`) on the parameters ``p``, checked by
    ``validate()`` (raises ParameterError) and taken up by ``rebuild()`` (None, or the problem); if either
    refuses, the old values come back and ``rebuild()`` runs again with them. Returns None or the problem."""
    old = {k: getattr(p, k) for k in changes}
    for k, v in changes.items():
        setattr(p, k, v)
    try:
        problem = None if not changes else validate()
    except P.ParameterError as exc:
        problem = str(exc)
    if changes and problem is None:
        problem = rebuild()
    if problem:
        for k, v in old.items():
            setattr(p, k, v)
        rebuild()
    return problem
