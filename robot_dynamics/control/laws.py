"""The laws of one model for the torque loop, as one object: :class:`Laws` (and :func:`laws_of`, which
chooses them: a fixed-base tree, a floating or planar base, a closed-loop robot).

Units: joint torques [N m or N], positions [rad or m], velocities per second, gains [1/s^2] and [1/s].
"""
import numpy as np

from ..errors import InputError
from . import base_compensation
from .base_compensation import FullStateCompensation
from .base_state import BaseState
from .closed_loop import ClosedLoop
from .compensation import Compensation, computed_torque, feedforward
from .joint_map import reorder_indices


class Laws:
    """The compensation, feedforward and computed-torque laws of one model.

    Args:
        compensation: what computes the compensation: ``compute(q, qd)`` fills its ``gravity``,
            ``coriolis``, ``friction`` and ``total`` (n,) arrays (a :class:`.compensation.Compensation`,
            :class:`.base_compensation.FullStateCompensation` or :class:`.closed_loop.ClosedLoop`).
        kind: 'tree', 'base' (a floating or planar base) or 'loop' (a closed-loop robot).
        model: the model; kp, kd: (n,) gains of the computed torque; tracking_smoothing: the friction
            smoothing the tracking laws add the friction with (None: they add none; trees only).
        dynamics: the model's CompiledModel (the compiled backend), or None: the library.
        base: the :class:`.base_state.BaseState` of a moving base (kind 'base'), else None.

    ``loop`` is the ClosedLoop of kind 'loop' (the compensation itself), else None.
    """

    def __init__(self, compensation, kind, model, kp, kd, tracking_smoothing=None, dynamics=None, base=None):
        self.compensation, self.kind, self.model = compensation, kind, model
        self.kp, self.kd, self.smoothing, self.dynamics, self.base = kp, kd, tracking_smoothing, dynamics, base
        self.loop = compensation if kind == 'loop' else None

    def compute(self, q, qd):
        """The compensation at (q, qd) (the full state of a moving base): fills and returns ``total``."""
        return self.compensation.compute(q, qd)

    def state(self, base_q, base_v, q, qd):
        """The full state (q (nq,), v (nv,)) of a moving base's (root_nq,), (root_nv,) and the joints' (n,)."""
        return self.compensation.state(base_q, base_v, q, qd)

    def feedforward(self, q, qd, q_d, qd_d, qdd_d):
        """(n,) torque of the desired motion ``q_d``, ``qd_d``, ``qdd_d`` (n,) at the measured (q, qd)."""
        if self.kind == 'loop':
            return self.loop.feedforward(q, qd, q_d, qd_d, qdd_d)
        if self.kind == 'base':
            return base_compensation.feedforward(self.model, q, qd, q_d, qd_d, qdd_d)
        return feedforward(self.model, q_d, qd_d, qdd_d, self.smoothing, self.dynamics)

    def computed_torque(self, q, qd, q_d, qd_d, qdd_d):
        """(n,) computed torque towards the desired motion (n,) each, from the measured (q, qd)."""
        if self.kind == 'loop':
            return self.loop.computed_torque(q, qd, q_d, qd_d, qdd_d, self.kp, self.kd)
        if self.kind == 'base':
            return base_compensation.computed_torque(self.model, q, qd, q_d, qd_d, qdd_d, self.kp, self.kd)
        return computed_torque(self.model, q, qd, q_d, qd_d, qdd_d, self.kp, self.kd, self.smoothing, self.dynamics)

    # The compensation's outputs, which the torque loop points at its own arrays.
    gravity = property(lambda self: self.compensation.gravity)
    coriolis = property(lambda self: self.compensation.coriolis)
    total = property(lambda self: self.compensation.total)
    friction = property(lambda self: self.compensation.friction)

    def write_into(self, gravity, coriolis, total):
        """From now on :meth:`compute` fills these (n,) arrays (the torque loop's outputs)."""
        c = self.compensation
        c.gravity, c.coriolis, c.total = gravity, coriolis, total


def laws_of(model, actuated, mode, friction_smoothing, kp, kd, timeout_ns, old_base=None, old_loop=None,
            tracking_friction=False, dynamics=None):
    """The :class:`Laws` of ``model`` for the torque loop.

    A closed-loop robot: its :class:`.closed_loop.ClosedLoop` on the ``actuated`` joints (the branch of
    ``old_loop`` carries over for the same joints); a floating or planar base: the laws on the full state
    with a :class:`.base_state.BaseState` (judged stale after ``timeout_ns`` [ns]; ``old_base``'s state
    carries over for the same base); else the laws of :mod:`.compensation`, computed by ``dynamics`` (the
    model's CompiledModel: the compiled backend, :mod:`.backend`) or the library (None). ``kp``, ``kd``: (n,)
    gains of the computed torque; ``tracking_friction``: a fixed-base tree's feedforward and computed torque
    add the friction laws (:func:`.compensation.feedforward`)."""
    if model.loops:
        loop = ClosedLoop(model, actuated, mode, friction_smoothing)
        if old_loop is not None and old_loop.model.joint_names == model.joint_names:
            loop.q = old_loop.q                       # the branch the mechanism is on carries over
        return Laws(loop, 'loop', model, kp, kd)
    if model.root_joint is None:
        return Laws(Compensation(model, mode, friction_smoothing, dynamics), 'tree', model, kp, kd,
                    friction_smoothing if tracking_friction else None, dynamics)
    base = BaseState(model, timeout_ns)
    if old_base is not None and (old_base.frame, old_base.model.root_joint) == (base.frame, model.root_joint):
        base.update_from(old_base)      # same base (a payload, a new description of the robot)
    return Laws(FullStateCompensation(model, mode, friction_smoothing), 'base', model, kp, kd, base=base)


def gains(values, names, cmd_joints):
    """(n,) gains of the ``names`` joints: ``values`` one for all, or one per entry of ``cmd_joints``
    (joints not in it get 0); empty: zeros."""
    g = np.zeros(len(names))
    if len(values) == 1:
        g[:] = values[0]
    elif values:
        index = {n: i for i, n in enumerate(names)}
        for name, value in zip(cmd_joints, values):
            g[index[name]] = value
    return g


def per_joint(name, values, names, cmd_joints):
    """(n,) values of parameter ``name`` in the order of ``names``: one value for every joint, or one per
    entry of ``cmd_joints``, which must then name every joint (InputError naming the missing ones)."""
    if len(values) == 1:
        return np.full(len(names), float(values[0]))
    missing = [n for n in names if n not in cmd_joints]
    if missing:
        raise InputError("parameter %r gives one value per entry of 'joints', which misses the model "
                         "joint(s) %s" % (name, ', '.join(missing)))
    out = np.empty(len(names))
    out[reorder_indices(names, cmd_joints)] = values
    return out
