"""Vendor profiles: what a real arm's torque interface expects, and the command that follows (no ROS needed).

A robot's effort (torque) command interface may add terms of its own to the
torque it is sent: Franka's controller adds the gravity torque g(q) and the
friction compensation (libfranka's ``franka::Torques`` are "joint-level
torque commands without gravity and friction"), UR's ``direct_torque`` adds
gravity and a tunable friction compensation. Sending g(q) to such an arm
doubles gravity. The rule of this package: **never command a term the robot
already compensates.**

A profile (``config/robots/<name>.yaml``) says, for one robot and its ROS 2
stack, which terms the robot compensates (``true``, ``false`` or
``unknown``, each with the vendor documentation it comes from), the joints,
the effort controller and its topic. dynamics_node takes the two answers as
the parameters ``robot_compensates_gravity`` and
``robot_compensates_friction`` and refuses to start while one is
``unknown`` (:func:`unknown_problem`). :class:`CommandTerms` removes the
compensated terms from the commanded torque; the published torque topics
(``~/gravity_torque``, ``~/compensation_torque``, ...) keep the full model
torques.
"""
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np
import yaml

from ..errors import ProfileError

TRUE, FALSE, UNKNOWN = 'true', 'false', 'unknown'
STATES = (TRUE, FALSE, UNKNOWN)
#: The compensated terms a profile states, and the dynamics_node parameter of each.
TERMS = {'gravity': 'robot_compensates_gravity', 'friction': 'robot_compensates_friction'}
#: What a driver's JointState.effort carries (dynamics_node's ``joint_state_effort``).
JOINT_TORQUE, MOTOR_CURRENT = 'joint_torque', 'motor_current'
EFFORT_KINDS = (JOINT_TORQUE, MOTOR_CURRENT, UNKNOWN)
#: A profile's ``joint_states`` block when it has none: the generic driver.
DEFAULT_JOINT_STATES = {'topic': 'joint_states', 'rate_hz': 0, 'effort': JOINT_TORQUE}
PROFILE_KEYS = ('name', 'robot', 'joints', 'controller', 'dynamics_node', 'compensated_by_robot', 'effort_interface')


def parse_state(value, name='value'):
    """'true', 'false' or 'unknown' from a bool or a string (any case).

    A parameter file or ``-p name:=true`` gives a bool, a launch file a string;
    both are accepted. Raises ValueError naming ``name`` otherwise.
    """
    if isinstance(value, bool):
        return TRUE if value else FALSE
    if isinstance(value, str) and value.strip().lower() in STATES:
        return value.strip().lower()
    raise ValueError('%s must be true, false or unknown, got %r' % (name, value))


def check_state(value):
    """The check of a ``robot_compensates_*`` parameter (params.Param convention): None or the problem."""
    try:
        parse_state(value)
    except ValueError:
        return 'must be true, false or unknown'
    return None


def unknown_problem(gravity, friction, profile=''):
    """None, or the reason dynamics_node must not start: a term whose compensation by the robot is unknown.

    Args:
        gravity, friction: the values of ``robot_compensates_gravity`` and
            ``robot_compensates_friction`` (bool or 'true' / 'false' / 'unknown').
        profile: the profile's name, for the message.
    """
    states = {'gravity': parse_state(gravity, TERMS['gravity']),
              'friction': parse_state(friction, TERMS['friction'])}
    unknown = [term for term, state in states.items() if state == UNKNOWN]
    if not unknown:
        return None
    where = ' (profile %r found no vendor source for it)' % profile if profile else ''
    lines = ['it is unknown whether the robot compensates %s itself%s. Commanding a term the robot already '
             'compensates doubles it on the real arm, so the node does not start until you state it:'
             % (' and '.join(unknown), where)]
    for term in unknown:
        lines.append('  set the parameter %r to true (the robot adds its own %s compensation: the command leaves '
                     'it out) or false (the command includes it), e.g. -p %s:=false'
                     % (TERMS[term], term, TERMS[term]))
    lines.append('  (docs/ROBOTS.md lists what each vendor documents)')
    return '\n'.join(lines)


def mode_problem(mode, gravity, publish_command):
    """None, or why ``mode`` makes no sense with the robot compensating gravity: mode ``gravity`` would
    then command zero (allowed when the command is not published, for the torque topics)."""
    if mode == 'gravity' and parse_state(gravity) == TRUE and publish_command:
        return ("mode 'gravity' with robot_compensates_gravity true commands nothing (the robot holds itself "
                "against gravity); use gravity_coriolis (Coriolis and centrifugal torques only), feedforward or "
                "computed_torque, or publish_command false")
    return None


def tracking_friction_problem(mode, tracking_friction, friction, publish_command):
    """None, or why ``tracking_friction`` must not be on: in mode ``feedforward`` or ``computed_torque`` it adds
    the friction laws to the law, and a robot that compensates friction itself (``friction`` 'true') would get
    them twice; :class:`CommandTerms` removes only the compensation's friction (gravity_coriolis_friction).
    Allowed when the command is not published (the torque topics)."""
    if (mode in ('feedforward', 'computed_torque') and tracking_friction and parse_state(friction) == TRUE
            and publish_command):
        return ("tracking_friction true adds the friction laws to the %s torque, and the robot compensates "
                "friction itself (robot_compensates_friction true): the command would hold it twice. Set "
                "tracking_friction false (the robot's own friction compensation acts), or publish_command false"
                % mode)
    return None


class CommandTerms:
    """The command torque without the terms the robot compensates itself.

    ``tau_cmd = tau_law - g(q) [if the robot compensates gravity] - tau_f(qd) [if it compensates friction]``,
    where ``tau_law`` is the torque of the mode (``~/compensation_torque``,
    ``~/feedforward_torque`` or ``~/computed_torque``), ``g(q)`` the
    gravity torque at the measured state (what the robot adds, as its model
    has it) and ``tau_f`` the friction compensation of the mode (nonzero in
    ``gravity_coriolis_friction`` only). So the robot's total is the law:
    in ``gravity_coriolis`` the command is ``C(q, qd) qd``, in
    ``feedforward`` ``M(q_d) qdd_d + C(q_d, qd_d) qd_d + g(q_d) - g(q)``.
    All torques in [N m] (or [N] for prismatic joints), in the order of the
    arrays given (model order in dynamics_node).

    A payload that only dynamics_node knows of (``~/set_payload``,
    ``~/identify_payload`` with apply) is not in the robot's own model, so
    the robot does not hold it: with ``robot_gravity`` the command leaves out
    the robot's gravity ``g_robot(q)`` (the model without those payloads)
    instead of the model's, i.e. it keeps the payloads' gravity torque
    ``g(q) - g_robot(q)``. The robot must then not be told of the payload as
    well (Franka's set_load, UR's set_payload), or it is held twice.

    Args:
        gravity, friction: True if the robot compensates that term itself.
        n: number of joints.
        robot_gravity: None (no payload), or a callable () -> (n,) g_robot at the measured state
            (:class:`RobotGravity`).
    """

    def __init__(self, gravity, friction, n, robot_gravity=None):
        self.gravity = bool(gravity)
        self.friction = bool(friction)
        self.active = self.gravity or self.friction
        self.robot_gravity = robot_gravity if self.gravity else None
        self._out = np.zeros(n)

    def command(self, total, gravity, friction=None):
        """The command torque (n,): ``total`` itself when nothing is removed, else a reused buffer.

        Args:
            total: (n,) the law's torque.
            gravity: (n,) g(q) at the measured state.
            friction: (n,) the friction compensation in ``total`` (None: none).
        """
        if not self.active:
            return total
        out = self._out
        if self.gravity:
            np.subtract(total, gravity if self.robot_gravity is None else self.robot_gravity(), out=out)
        else:
            out[:] = total
        if self.friction and friction is not None:
            out -= friction
        return out

    def describe(self):
        """What the command leaves out, for logs and diagnostics."""
        left = [t for t, on in (('gravity', self.gravity), ('friction', self.friction)) if on]
        if not left:
            return 'the whole law (the robot compensates nothing itself)'
        text = 'the law minus %s (the robot compensates it itself)' % ' and '.join(left)
        if self.robot_gravity is not None:
            text += "; the gravity of the payloads set in this node stays in (the robot's model lacks them)"
        return text


class RobotGravity:
    """``g_robot(q)``: the gravity torque of the robot's own model (without the payloads only dynamics_node
    knows of) at the state the laws read.

    Args:
        model: the model without those payloads (ModelNode.base_model), a fixed-base tree.
        q: (n,) the joint positions the laws read, updated in place (JointStateMerger.q) [rad or m].
    """

    def __init__(self, model, q):
        from ..algorithms.rnea import gravity_torques
        self.model, self.q, self._gravity = model, q, gravity_torques

    def __call__(self):
        """(n,) g_robot(q) [N m or N] at the current ``q``."""
        return self._gravity(self.model, self.q)


def payload_problem(gravity, payloads, tree):
    """None, or why the payloads cannot go into the command: the robot compensates gravity (``gravity``
    'true'), ``payloads`` is not empty, and the model is not a fixed-base tree (``tree`` False), whose
    payload gravity :class:`RobotGravity` gives."""
    if payloads and parse_state(gravity) == TRUE and not tree:
        return ('payloads on %s: the robot compensates its own gravity (robot_compensates_gravity true) and not '
                'theirs, and their gravity torque is added to the command only on a fixed-base tree; clear the '
                'payloads or tell the robot of them' % ', '.join(sorted(payloads)))
    return None


# --- profile files -------------------------------------------------------------------------------

@dataclass
class Profile:
    """A vendor profile (``config/robots/<name>.yaml``), validated.

    Attributes:
        name, robot: short name and description.
        joints: the effort controller's joints in its order ([]: the params file's / every model joint).
        controller: name, command_topic, recipe (a file under config/), vendor_runs_broadcaster (and
            type, the controller's plugin).
        joint_states: where the driver's own joint states come: ``topic`` (relative, the broadcaster's, not a
            relay's), ``rate_hz`` (the controller_manager's update rate; 0 unknown) and ``effort`` (what the
            effort field carries: joint_torque, motor_current or unknown).
        node: further dynamics_node parameters of the profile (its ``dynamics_node`` block, e.g. ``mode``).
        names: the joint-name arguments its ``joints`` were made with (``robot_type``, ``arm_prefix``).
        gravity, friction: 'true' / 'false' / 'unknown': does the robot compensate it.
        data: the whole file (sources, effort_interface).
    """
    name: str
    robot: str
    joints: list
    controller: dict
    node: dict
    gravity: str
    friction: str
    data: dict
    path: Optional[str] = None
    joint_states: dict = None
    names: dict = None          # the joint-name arguments used (robot_type, arm_prefix), if it takes any

    def node_parameters(self):
        """dynamics_node parameters of the profile: the two ``robot_compensates_*``, its ``dynamics_node``
        block, and, if it names joints, ``joints`` and ``command_topic`` (a profile without joints, the
        generic one, leaves both to the parameter file)."""
        params = {TERMS['gravity']: self.gravity, TERMS['friction']: self.friction,
                  'joint_state_effort': self.joint_states['effort'],
                  'expected_joint_state_rate': float(self.joint_states['rate_hz']),
                  'controller_name': self.controller['name']}
        params.update(self.node)
        if self.joints:
            params['joints'] = list(self.joints)
            params['command_topic'] = self.controller['command_topic']
        return params


def known_profiles(directory):
    """Sorted names of the profiles in ``directory`` (``<name>.yaml``)."""
    if not os.path.isdir(directory):
        return []
    return sorted(f[:-5] for f in os.listdir(directory) if f.endswith('.yaml'))


def profile_path(name, directory):
    """The file of profile ``name`` in ``directory``; ProfileError listing the known ones if there is none."""
    known = known_profiles(directory)
    if name not in known:
        raise ProfileError('unknown robot profile %r; known profiles (in %s): %s'
                           % (name, directory, ', '.join(known) or 'none'))
    return os.path.join(directory, name + '.yaml')


#: The joint-name arguments a profile may take in its ``joint_names`` block (launch arguments of the same names):
#: the placeholders ``{robot_type}``, ``{arm_prefix}`` (Franka) and ``{tf_prefix}`` (UR) of its ``joints``.
NAME_ARGUMENTS = ('robot_type', 'arm_prefix', 'tf_prefix')


def resolve_joints(path, joints, block, values):
    """The profile's joints with their name arguments filled in.

    Args:
        path: the profile's file, for errors.
        joints: its ``joints``, with placeholders of :data:`NAME_ARGUMENTS`.
        block: its ``joint_names`` block: argument -> {default, choices (optional), separator (optional: appended
            to a non-empty value, as franka_description's <robot_type>.urdf.xacro appends '_' to arm_prefix)}.
        values: argument -> the value given ('' or None: the default).

    Returns:
        (joints, {argument: value used}).
    """
    block = block or {}
    if not isinstance(block, dict) or any(k not in NAME_ARGUMENTS + ('source',) for k in block):
        raise ProfileError('robot profile %s: joint_names may name %s (and a source), got %r'
                           % (path, ', '.join(NAME_ARGUMENTS), block))
    given = {k: v for k, v in (values or {}).items() if v not in (None, '')}
    refused = sorted(set(given) - set(block))
    if refused:
        raise ProfileError('robot profile %s takes no %s (its joint names have no such part; it takes: %s)'
                           % (path, ', '.join(refused), ', '.join(k for k in block if k != 'source') or 'none'))
    used, out = {}, list(joints)
    for name, spec in block.items():
        if name == 'source':
            continue
        value = str(given.get(name, spec.get('default', '')))
        if not all(c.isalnum() or c == '_' for c in value):
            raise ProfileError('%s must be letters, digits and _, got %r' % (name, value))
        choices = spec.get('choices')
        if choices and value not in choices:
            raise ProfileError('robot profile %s: %s must be one of %s, got %r'
                               % (path, name, ', '.join(choices), value))
        used[name] = value
        text = value + spec.get('separator', '') if value else ''
        out = [j.replace('{%s}' % name, text) for j in out]
    left = [j for j in out if '{' in j or '}' in j]
    if left:
        raise ProfileError('robot profile %s: joints %s have placeholders that joint_names does not declare'
                           % (path, ', '.join(left)))
    return out, used


def load_profile(path, names=None):
    """Read and validate the profile file ``path``; ProfileError saying what is wrong. ``names``: the joint-name
    arguments (``robot_type``, ``arm_prefix``; :func:`resolve_joints`), '' or None for the profile's default."""
    try:
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError('cannot read robot profile %s: %s' % (path, exc)) from None
    if not isinstance(data, dict):
        raise ProfileError('robot profile %s: expected a mapping, got %s' % (path, type(data).__name__))
    missing = [k for k in PROFILE_KEYS if k not in data]
    if missing:
        raise ProfileError('robot profile %s misses %s' % (path, ', '.join(missing)))
    controller = data['controller']
    for key in ('name', 'command_topic', 'recipe', 'vendor_runs_broadcaster'):
        if key not in controller:
            raise ProfileError('robot profile %s: controller misses %r' % (path, key))
    states = {term: _term(path, data['compensated_by_robot'], term) for term in TERMS}
    node = dict(data['dynamics_node'] or {})
    clash = sorted(set(node) & (set(TERMS.values()) | {'joints', 'command_topic', 'joint_state_effort',
                                                       'expected_joint_state_rate', 'controller_name'}))
    if clash:
        raise ProfileError('robot profile %s: dynamics_node sets %s, which the profile gives elsewhere '
                           '(compensated_by_robot, joints, controller, joint_states)' % (path, ', '.join(clash)))
    joints, used = resolve_joints(path, list(data['joints'] or []), data.get('joint_names'), names)
    return Profile(name=str(data['name']), robot=str(data['robot']), joints=joints,
                   controller=dict(controller), node=node, gravity=states['gravity'],
                   friction=states['friction'], data=data, path=str(path),
                   joint_states=_joint_states(path, data.get('joint_states')), names=used)


def _joint_states(path, block):
    """The profile's ``joint_states`` block, checked, with the generic driver's values where it has none."""
    if block is None:
        return dict(DEFAULT_JOINT_STATES)
    if not isinstance(block, dict):
        raise ProfileError('robot profile %s: joint_states must be a mapping, got %r' % (path, block))
    out = dict(DEFAULT_JOINT_STATES)
    out.update({k: block[k] for k in DEFAULT_JOINT_STATES if k in block})
    if not isinstance(out['topic'], str) or not out['topic']:
        raise ProfileError('robot profile %s: joint_states.topic must be a topic name, got %r' % (path, out['topic']))
    rate = out['rate_hz']
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate >= 0:
        raise ProfileError('robot profile %s: joint_states.rate_hz must be a rate >= 0 [Hz] (0: unknown), got %r'
                           % (path, rate))
    if out['effort'] not in EFFORT_KINDS:
        raise ProfileError('robot profile %s: joint_states.effort must be one of %s, got %r'
                           % (path, ', '.join(EFFORT_KINDS), out['effort']))
    return out


def _term(path, block, term):
    """The state of one compensated term; every state needs a ``source`` (for unknown: why none was found)."""
    entry = (block or {}).get(term)
    if not isinstance(entry, dict) or 'value' not in entry:
        raise ProfileError('robot profile %s: compensated_by_robot.%s needs a value (true, false or unknown)'
                           % (path, term))
    try:
        state = parse_state(entry['value'], 'compensated_by_robot.%s.value' % term)
    except ValueError as exc:
        raise ProfileError('robot profile %s: %s' % (path, exc)) from None
    if not entry.get('source'):
        raise ProfileError('robot profile %s: compensated_by_robot.%s has no source (the vendor documentation it '
                           'follows, or for unknown why none was found)' % (path, term))
    return state
