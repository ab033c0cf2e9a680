"""What the torque pipeline is built from besides the model: :class:`PipelineSettings`, one frozen value.

dynamics_node builds it from its parameter object with :func:`from_params` (its attribute names are the
parameters' names, docs/NODES.md); a test builds it by hand. The defaults are the node's parameter
defaults. Units: seconds, N m (or N) and their rates, as the parameters.
"""
from dataclasses import dataclass, fields

from .compensation import GRAVITY_CORIOLIS


@dataclass(frozen=True)
class PipelineSettings:
    """The parameters the torque pipeline (:class:`.torque_loop.TorqueLoop`) is built with.

    Attributes (tuples where the parameter is a list):
        mode: the law (:data:`.compensation.MODES`).
        joints: the command's joints, in its order (empty: the model's, or the actuated ones).
        actuated_joints: the motors of a closed-loop robot (empty: every joint).
        friction_smoothing: [rad/s or m/s] of tanh(qd / s) for sign(qd); tracking_friction: feedforward
            and computed torque add the friction laws.
        kp, kd: gains of the computed torque (one for all, or one per entry of ``joints``).
        effort_limit_scale: the clamp, times the URDF effort limit.
        joint_state_timeout: [s] a base state (and the impedance target's gap) older is stale.
        joint_timeout: [s] a joint's position older is stale (0: joint_state_timeout).
        max_state_age: [s] largest age of a state by its header stamp (0: not checked).
        diagnostic_torque_rate: [Hz] of the diagnostic torque outputs (0 off, < 0 every joint state).
        robot_compensates_gravity, robot_compensates_friction: 'true' / 'false' / 'unknown' (:mod:`.profiles`).
        impedance_link, stiffness, damping, nullspace_stiffness, max_pose_error, max_torque_rate,
            target_timeout: the impedance modes (docs/NODES.md, "Impedance modes").
        observer_gains, collision_thresholds, external_wrench_link, observer_friction: the momentum
            observer (:mod:`.external_torque`); no gains: off.
        base_topic: the (resolved) base state topic, named in the reasons of a missing base state.
    """
    mode: str = GRAVITY_CORIOLIS
    joints: tuple = ()
    actuated_joints: tuple = ()
    friction_smoothing: float = 0.01
    tracking_friction: bool = False
    kp: tuple = ()
    kd: tuple = ()
    effort_limit_scale: float = 1.0
    joint_state_timeout: float = 0.1
    joint_timeout: float = 0.0
    max_state_age: float = 0.0
    diagnostic_torque_rate: float = 50.0
    robot_compensates_gravity: str = 'false'
    robot_compensates_friction: str = 'false'
    impedance_link: str = ''
    stiffness: tuple = ()
    damping: tuple = ()
    nullspace_stiffness: float = 0.0
    max_pose_error: tuple = (0.05, 0.3)
    max_torque_rate: float = 1000.0
    target_timeout: float = 0.5
    observer_gains: tuple = ()
    collision_thresholds: tuple = ()
    external_wrench_link: str = ''
    observer_friction: bool = False
    base_topic: str = ''

    @property
    def timeout_ns(self):
        """joint_state_timeout [ns]."""
        return int(self.joint_state_timeout * 1e9)

    @property
    def joint_timeout_ns(self):
        """joint_timeout [ns], or joint_state_timeout's when it is 0."""
        return int((self.joint_timeout or self.joint_state_timeout) * 1e9)

    @property
    def observer_on(self):
        """Whether the momentum observer runs (it has gains)."""
        return bool(self.observer_gains)


def from_params(p, base_topic=''):
    """The PipelineSettings of a parameter object ``p`` (one attribute per parameter, lists as lists; the
    node's ``p``), with ``base_topic`` the resolved name of ``base_state_topic`` (or '')."""
    values = {}
    for f in fields(PipelineSettings):
        if f.name == 'base_topic':
            continue
        value = getattr(p, f.name)
        values[f.name] = tuple(value) if isinstance(value, (list, tuple)) else value
    return PipelineSettings(base_topic=base_topic, **values)
