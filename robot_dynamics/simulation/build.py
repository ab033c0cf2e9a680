"""A :class:`Simulator` from a simulator node's settings (no ROS needed).

The settings are those of ``simulator_node`` (:class:`SimulationSettings`,
filled from its ROS parameters); the functions here turn them into the
initial state, the servo gains and the simulator of one model, and carry
a simulation over to a new model of the same arm. Errors name the setting
as the node's parameter, since that is what a user sets.
"""
from dataclasses import dataclass, fields

import numpy as np

from ..errors import InputError
from ..model.configuration import QUATERNION_TOLERANCE
from ..model.model import describe_base
from .commands import MODES, JointActuator
from .constraints import VelocityLimits
from .forces import JointFriction, PositionLimits
from .simulator import Simulator


@dataclass
class SimulationSettings:
    """What a simulated arm is run with: simulator_node's parameters of the same names (docs/NODES.md).

    The defaults are the node's. Sequences may be lists or tuples.
    """

    joints: tuple = ()                    # order of the effort commands, initial_positions, kp, kd, kv
    physics_rate: float = 1000.0          # [Hz]; dt = 1 / physics_rate
    integrator: str = 'rk4'
    publish_rate: float = 1000.0          # joint states per simulated second [Hz]
    real_time_factor: float = 1.0         # 0: as fast as possible
    catch_up_limit: float = 0.05          # [s] of wall-clock lag made up for
    start_paused: bool = False
    initial_positions: tuple = ()         # [rad or m], one per entry of joints
    wrench_frame: str = 'link'            # 'link' or 'base'
    command_timeout: float = 0.0          # [s] of simulated time; 0: commands held for ever
    servo_bandwidth: float = 20.0         # [rad/s]
    kp: tuple = ()                        # [1/s^2]
    kd: tuple = ()                        # [1/s]
    kv: tuple = ()                        # [1/s]
    joint_friction: bool = True
    friction_smoothing: float = 0.01      # [rad/s or m/s]
    position_limits: bool = True
    velocity_limits: bool = True
    initial_base_pose: tuple = ()         # the root part of q
    initial_base_twist: tuple = ()        # the root part of v, in the base frame
    robot_compensates_gravity: bool = False

    @classmethod
    def from_params(cls, params):
        """The settings read from ``params`` (any object with an attribute per field: the node's parameters)."""
        return cls(**{f.name: getattr(params, f.name) for f in fields(cls)})

    @property
    def dt(self):
        """Physics step [s]."""
        return 1.0 / self.physics_rate

    @property
    def pub_every(self):
        """Physics steps per joint state: round(physics_rate / publish_rate), at least 1."""
        return max(1, int(round(self.physics_rate / self.publish_rate)))

    def problems(self):
        """The cross-setting problems (a list of texts, empty when the settings fit together)."""
        problems = []
        if self.publish_rate > self.physics_rate:
            problems.append("parameter 'publish_rate' (%g Hz) must be <= physics_rate (%g Hz): joint_states "
                            'are published after physics steps' % (self.publish_rate, self.physics_rate))
        joints = list(self.joints)
        if len(set(joints)) != len(joints):
            problems.append("parameter 'joints' names a joint more than once: %s" % joints)
        n = len(joints)
        gains = (0, 1, n)
        for name, allowed in (('kp', gains), ('kd', gains), ('kv', gains), ('initial_positions', (0, n))):
            values = getattr(self, name)
            if n and len(values) not in allowed:
                problems.append("parameter %r has %d values; expected %sone per entry of 'joints' (%d)"
                                % (name, len(values), '1 or ' if 1 in allowed else '', n))
        return problems


def command_joints(model, settings, actuated):
    """(joints, idx): the joints of the effort commands (the ``joints`` setting, else ``actuated``, the
    joints with motors) and their (n,) model indices.

    Raises:
        InputError: an entry is a passive joint, not a joint of the model, or named twice.
    """
    names = list(model.joint_names)
    joints = list(settings.joints) or list(actuated)
    passive = [j for j in joints if j in names and j not in actuated]
    if passive:
        raise InputError("parameter 'joints' names the passive joint(s) %s; the commands are for the actuated "
                         "joints (%s)" % (', '.join(passive), ', '.join(actuated)))
    index = {name: i for i, name in enumerate(names)}
    unknown = [n for n in joints if n not in index]
    if unknown:                                       # the words of control/joint_map.py's reorder_indices
        raise InputError("parameter 'joints' entry(ies) %s not in the model (its joints: %s)"
                         % (', '.join(repr(u) for u in unknown), ', '.join(names)))
    dup = sorted({n for n in joints if joints.count(n) > 1})
    if dup:
        raise InputError("parameter 'joints' names %s more than once" % ', '.join(dup))
    return joints, np.array([index[n] for n in joints], dtype=np.intp)


def initial_state(model, settings, cmd_joints, cmd_idx, warn):
    """(q0 (nq,), qd0 (nv,)): ``initial_positions`` and, for a floating or planar base,
    ``initial_base_pose`` and ``initial_base_twist`` (joints at rest).

    Args:
        cmd_joints: the joints ``initial_positions`` are for, in order; cmd_idx: their model indices.
        warn: called with a text (and ``once=True``) when the base settings are ignored.
    """
    q0, qd0 = model.neutral().copy(), np.zeros(model.nv)
    if model.root_joint is not None:
        q0[:model.root_nq], qd0[:model.root_nv] = initial_base(model, settings)
    elif settings.initial_base_pose or settings.initial_base_twist:
        warn("initial_base_pose and initial_base_twist are ignored: robot %r has a fixed base" % model.name, once=True)
    values = settings.initial_positions
    if not values:
        return q0, qd0
    if len(values) != len(cmd_joints):
        raise InputError("parameter 'initial_positions' has %d values, expected %d (one per joint: %s)"
                         % (len(values), len(cmd_joints), ', '.join(cmd_joints)))
    q0[model.root_nq + np.asarray(cmd_idx, dtype=int)] = values
    for i, x in zip(cmd_idx, values):
        if not model.lower_limit[i] <= x <= model.upper_limit[i]:
            raise InputError("parameter 'initial_positions': %g for %s is outside its limits [%g, %g]"
                             % (x, model.joint_names[i], model.lower_limit[i], model.upper_limit[i]))
    return q0, qd0


def initial_base(model, settings):
    """(q_root, v_root) from ``initial_base_pose`` and ``initial_base_twist`` (empty: origin, at rest)."""
    q_root, v_root = model.neutral()[:model.root_nq], np.zeros(model.root_nv)
    layout = {'floating': ('(x, y, z, qx, qy, qz, qw)', '(vx, vy, vz, wx, wy, wz)'),
              'planar': ('(x, y, theta)', '(vx, vy, wz)')}[model.root_joint]
    for name, target, what in (('initial_base_pose', q_root, layout[0]), ('initial_base_twist', v_root, layout[1])):
        values = getattr(settings, name)
        if values and len(values) != len(target):
            raise InputError('parameter %r has %d values; %s needs %d: %s'
                             % (name, len(values), describe_base(model), len(target), what))
        if values:
            target[:] = values
    if model.root_joint == 'floating':
        n = float(np.linalg.norm(q_root[3:]))
        if not abs(n - 1.0) <= QUATERNION_TOLERANCE:
            raise InputError("parameter 'initial_base_pose': the quaternion (qx, qy, qz, qw) = %s has norm %.6g; "
                             'expected a unit quaternion (norm within %g of 1)'
                             % (q_root[3:].tolist(), n, QUATERNION_TOLERANCE))
        q_root[3:] /= n
    return q_root, v_root


def servo_gains(model, settings, name, cmd_idx):
    """(nq,) gains of setting ``name`` ('kp', 'kd' or 'kv'), or None (the servo_bandwidth default).

    One value applies to every joint, one per entry of ``joints`` to those (``cmd_idx``), the
    others keeping the servo_bandwidth default (kp = w^2, kd = kv = 2 w).
    """
    values = getattr(settings, name)
    if not values:
        return None
    w = settings.servo_bandwidth
    g = np.full(len(model.joint_names), w * w if name == 'kp' else 2.0 * w)
    if len(values) == 1:
        g[:] = values[0]
    elif len(values) == len(cmd_idx):
        g[cmd_idx] = values
    else:
        raise InputError('parameter %r has %d values, expected 1 or %d' % (name, len(values), len(cmd_idx)))
    return g


def build_simulator(model, settings, q0, qd0, cmd_idx, actuated, warn, contact=None):
    """A Simulator of ``model`` at ``(q0, qd0)`` with the settings' integrator, forces and servo gains.

    Args:
        actuated: the joints with motors (None: every joint).
        warn: called with a text (and ``once=True``) when the velocity limits cannot be enforced.
        contact: a :class:`~robot_dynamics.contact.stepping.ContactStepper` (None: no contact).
    """
    s = settings
    forces = [JointFriction(model, smoothing=s.friction_smoothing)] if s.joint_friction else []
    forces += [PositionLimits(model, dt=s.dt)] if s.position_limits else []
    gains = {k: servo_gains(model, s, k, cmd_idx) for k in ('kp', 'kd', 'kv')}
    limits = s.velocity_limits and model.root_joint is None
    if s.velocity_limits and not limits:
        warn('velocity_limits: not enforced on the %s base of %r (the velocity-limit constraint is for a fixed '
             'base)' % (model.root_joint, model.name), once=True)
    return Simulator(model, dt=s.dt, integrator=s.integrator, forces=forces,
                     constraints=[VelocityLimits(model)] if limits else [],
                     actuator=JointActuator(model, bandwidth=s.servo_bandwidth, **gains), q0=q0, qd0=qd0,
                     actuated=actuated, contact=contact)


def carry_over(old, sim):
    """State, time, commands and wrenches of Simulator ``old`` into ``sim`` (a model of the same joints)."""
    sim.reset(old.q, old.qd, old.time)
    cmd = old.command
    idx = [sim.model.joint_names.index(j) for j in sim.actuated]
    sim.set_command(cmd.value[idx], [MODES[m] for m in cmd.mode[idx]], list(sim.actuated))
    for link, (frame, w) in old.wrenches.wrenches.items():
        if link in sim.model.link_names:
            sim.apply_wrench(link, w, frame)


def warm_up_steps(model):
    """Compile or load (numba cache) the kernels of one simulation step of every kind, on ``model``:
    a fixed-base arm of two revolute joints, l1 and l2, with limits [-3, 3] rad and 1 rad/s."""
    from ..algorithms.kinematics import forward_kinematics
    for integrator in ('rk4', 'semi_implicit_euler'):
        # Faster than the warm-up arm's 1 rad/s limits: the compiled step
        # (fused.py) and the velocity limiter both run.
        sim = Simulator(model, integrator=integrator, q0=[0.1, 2.99], qd0=[1.5, -1.5])
        sim.step(2)
        sim.apply_wrench('l2', [1.0, 0, 0, 0, 0.1, 0], frame='base')
        for mode in ('effort', 'position', 'velocity'):
            sim.set_command([1.0, 0.5], mode)
            sim.step(2)
    forward_kinematics(model, np.zeros(model.nq))
