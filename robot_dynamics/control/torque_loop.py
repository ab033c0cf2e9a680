"""One joint state to the command torque, or the reason there is none: dynamics_node's torque loop
without ROS.

Per message (:meth:`TorqueLoop.step`): the age of the state by its stamp (``max_state_age``), the
merge by joint name (:mod:`.joint_map`), the per-joint staleness (:mod:`.staleness`), the passive
joints of a closed loop (:mod:`.closed_loop`) or the join with the base state of a floating or
planar base (:mod:`.base_state`), the laws (:mod:`.compensation`, :mod:`.impedance_target`), the
terms the robot adds itself (:mod:`.profiles`), the effort limits, and the command in the order of
the controller's joints.
Every torque is computed into preallocated (n,) arrays (``views``; the command: ``command``), so a
message allocates nothing but what the laws do.

:meth:`TorqueLoop.observe` feeds the momentum observer (:mod:`.external_torque`) and a payload
collection (:mod:`.payload_fit`) with the efforts of the joint state just merged.

Units: joint torques [N m or N], times [ns] of the node's clock, positions [rad or m].
"""
import time
from typing import NamedTuple

import numpy as np

from ..errors import SingularityError
from .compensation import COMPUTED_TORQUE, FEEDFORWARD
from .joint_map import JointMapError
from .staleness import state_age_problem

#: The outputs of each case, the commanded torque's first: names of :attr:`TorqueLoop.views`.
COMPENSATION = ('total', 'gravity', 'coriolis')
FEEDFORWARD_OUT = ('ff',) + COMPENSATION
COMPUTED_TORQUE_OUT = ('ct', 'ff') + COMPENSATION
IMPEDANCE_OUT = ('imp',) + COMPENSATION
OUTPUTS = ('gravity', 'coriolis', 'total', 'ff', 'ct', 'imp')


class NoTorque(NamedTuple):
    """Why a joint state gave no torque. ``kind`` names its counter (:class:`.statistics.Statistics`):
    waiting (the merged state misses a joint: nothing to say), bad, too_old, stale, no_base, singular,
    non_finite."""
    kind: str
    reason: str


#: The start of the reasons of a joint state that gave no torque (but for a malformed one).
NO_TORQUE = 'no torque for this joint state: '

#: The merged state misses a joint still: no torque, and nothing wrong.
WAITING = NoTorque('waiting', '')


class DiagnosticThrottle:
    """The diagnostic torque topics at most every ``period_ns`` [ns] of ``time.monotonic_ns``
    (None: never; 0: every joint state)."""

    def __init__(self, period_ns):
        self.period_ns = period_ns
        self.due = 0                    # time.monotonic_ns() from which the next one may go

    @classmethod
    def from_rate(cls, rate_hz):
        """0 Hz: off; < 0: every joint state; else at most ``rate_hz``."""
        return cls(None if rate_hz == 0 else (0 if rate_hz < 0 else max(int(1e9 / rate_hz), 1)))

    def go(self, t_ns):
        """Whether the diagnostic torques go with the joint state of steady time ``t_ns`` [ns]."""
        period = self.period_ns
        if period is None:
            return False
        if not period:
            return True
        due = self.due
        if t_ns < due:
            return False
        self.due = due + period if t_ns - due < period else t_ns + period
        return True


class TorqueLoop:
    """The torque pipeline of one model (see the module doc).

    Args:
        merger: :class:`.joint_map.JointStateMerger` of the torque's joints (n of them).
        staleness: :class:`.staleness.JointStaleness` of the same joints.
        laws: the compensation (``compute(q, qd)`` into its ``gravity``, ``coriolis``, ``total``, and
            ``friction``; ``state(base_q, base_v, q, qd)`` for a moving base).
        feedforward, computed_torque: ``f(q, qd, q_d, qd_d, qdd_d)`` -> (n,) torques.
        impedance: :class:`.impedance_target.ImpedanceControl` of an impedance mode (its torque is the
            command, view ``imp``), or None.
        target: :class:`.impedance_target.ImpedanceTarget` that takes the targets (in every mode of a fixed
            base: the others refuse them), or None.
        limiter: :class:`.compensation.TorqueLimiter` of the n joints.
        terms: :class:`.profiles.CommandTerms`: what the robot adds to the command itself.
        cmd_idx: (m,) indices of the command's joints in the n joints.
        mode: the law (:data:`.compensation.MODES`).
        base: :class:`.base_state.BaseState` of a moving base, or None.
        loop: :class:`.closed_loop.ClosedLoop` of a closed-loop robot, or None; ``passive``: the
            merger of its passive joints (None when it has none).
        base_topic, timeout_s: the base state's topic and joint_state_timeout [s], for the reasons.
        max_age_ns: largest age of a state by its stamp [ns]; 0: not checked.
        throttle: :class:`DiagnosticThrottle` of the diagnostic outputs.
    """

    def __init__(self, merger, staleness, laws, feedforward, computed_torque, limiter, terms, cmd_idx, mode, *,
                 base=None, loop=None, passive=None, max_age_ns=0, throttle=None, base_topic='', timeout_s=0.0,
                 impedance=None, target=None):
        n = len(merger.joint_names)
        self.merger, self.staleness, self.laws, self.limiter, self.terms = merger, staleness, laws, limiter, terms
        self._ff, self._ct = feedforward, computed_torque
        self.cmd_idx, self.mode = cmd_idx, mode
        self.base, self.loop, self.passive = base, loop, passive
        self.impedance, self.target = impedance, target
        self.max_age_ns = max_age_ns
        self.base_topic, self.timeout_s = base_topic, timeout_s
        self.throttle = throttle if throttle is not None else DiagnosticThrottle(0)
        self.views = {key: np.zeros(n) for key in OUTPUTS}
        laws.gravity, laws.coriolis, laws.total = self.views['gravity'], self.views['coriolis'], self.views['total']
        self.command = np.zeros(len(cmd_idx))       # the command joints' torques
        self.reference = None                       # .trajectory.TrajectorySampler, or None
        self.ref_start = 0                          # node clock time of the reference's t = 0 [ns]
        self.ref_stream = False                     # a streamed set-point (~/reference)
        self.fresh = False                          # the last message set a joint (the watchdog's sign of life)
        self.q = self.qd = None                     # the state of the last torque

    def set_reference(self, sampler, start_ns, stream=False):
        """Follow ``sampler`` (None: none) from node clock time ``start_ns`` [ns]."""
        self.reference, self.ref_start, self.ref_stream = sampler, start_ns, stream

    def step(self, names, position, velocity, stamp_ns, now_ns):
        """One joint state: its joint ``names``, ``position`` and ``velocity`` (by name; velocity may be
        empty), its header stamp ``stamp_ns`` and the node clock ``now_ns`` [ns] when it was taken.

        Returns the names of the outputs to publish, the commanded torque's first (names of
        :attr:`views`; :attr:`command` holds the command), or a :class:`NoTorque` with the reason."""
        if self.max_age_ns:
            why = state_age_problem(stamp_ns, now_ns, self.max_age_ns)
            if why is not None:
                return NoTorque('too_old', NO_TORQUE + why)
        merger = self.merger
        updates = merger.updates
        try:
            ready = merger.update(names, position, velocity)
        except JointMapError as exc:
            self.fresh = False
            return NoTorque('bad', 'joint_states message ignored: %s' % exc)
        self.fresh = merger.updates != updates
        # The joints this message set were received now; no torque while any joint is too old.
        every_joint = self.staleness.touch_merged(merger, now_ns)
        if not ready:
            return WAITING
        stale = None if every_joint else self.staleness.stale(now_ns)
        if stale is not None:
            return NoTorque('stale', NO_TORQUE + stale)
        try:
            state = self._state(names, position, now_ns)
            if state is None:
                # Never a torque of a stale or missing base state: like a joint state that gives none.
                return NoTorque('no_base', NO_TORQUE + base_state_problem(self.base, now_ns, self.base_topic,
                                                                          self.timeout_s))
            return self._torques(state[0], state[1], now_ns)
        except SingularityError as exc:
            return NoTorque('singular', NO_TORQUE + str(exc))
        except ValueError as exc:
            return NoTorque('bad', NO_TORQUE + str(exc))

    def _state(self, names, position, now_ns):
        """(q, qd) of the laws: the merged joints, completed by the loops or joined with the base state (None
        without a fresh base state)."""
        q, qd = self.merger.q, self.merger.qd
        if self.loop is not None:
            # The passive joints come from the actuated ones; a message's passive positions start the assembly.
            guess = None
            if self.passive is not None:
                try:
                    self.passive.update(names, position, ())
                    guess = self.passive.q if self.passive.ready else None
                except JointMapError:
                    pass
            return self.loop.complete(q, qd, guess)
        base = self.base
        if base is not None:
            if not base.fresh(now_ns):
                return None
            return self.laws.state(base.q, base.v, q, qd)
        return q, qd

    def _torques(self, q, qd, now_ns):
        laws = self.laws
        laws.compute(q, qd)                                 # -> views gravity, coriolis, total
        outputs = COMPENSATION
        if self.reference is not None and self.mode in (FEEDFORWARD, COMPUTED_TORQUE):
            q_d, qd_d, qdd_d = self.reference.sample((now_ns - self.ref_start) * 1e-9)
            self.views['ff'][:] = self._ff(q, qd, q_d, qd_d, qdd_d)
            outputs = FEEDFORWARD_OUT
            if self.mode == COMPUTED_TORQUE:
                self.views['ct'][:] = self._ct(q, qd, q_d, qd_d, qdd_d)
                outputs = COMPUTED_TORQUE_OUT
        elif self.impedance is not None:
            self.views['imp'][:] = self.impedance.torque(q, qd, now_ns)
            outputs = IMPEDANCE_OUT
        if not self.throttle.go(time.monotonic_ns()):
            outputs = outputs[:1]
        # Nothing non-finite or over the limit is published; the command torque (first output) counts the
        # clamp events.
        limiter, terms = self.limiter, self.terms
        command = self.views[outputs[0]]
        if terms.active:
            # The robot adds these terms itself: they are left out of the command (profiles.CommandTerms).
            command = terms.command(command, laws.gravity, laws.friction)
            if not limiter.apply(command):
                return self._non_finite(q, qd)
        for k, key in enumerate(outputs):
            if not limiter.apply(self.views[key], count=k == 0 and not terms.active):
                return self._non_finite(q, qd)
        np.take(command, self.cmd_idx, out=self.command)
        self.q, self.qd = q, qd
        return outputs

    @staticmethod
    def _non_finite(q, qd):
        return NoTorque('non_finite', 'non-finite torque at q=%s, qd=%s: nothing published' % (q, qd))

    def observe(self, effort, t_ns, monitor, collection):
        """Feed ``monitor`` (an ExternalTorqueMonitor, or None) and ``collection`` (a SampleBuffer, or None)
        with the state just merged and its ``effort`` (by the names of the last message) at ``t_ns`` [ns].
        Returns True when the monitor has a new residual, False when not, or a NoTorque (kinds no_effort,
        bad_effort) when the efforts cannot be used."""
        merger = self.merger
        if not len(effort):
            return NoTorque('no_effort', 'joint_states without efforts: the momentum observer and '
                            '~/identify_payload need the motor torques')
        try:
            if not merger.update_effort(effort):
                return False
        except JointMapError as exc:
            return NoTorque('bad_effort', 'efforts of a joint state ignored: %s' % exc)
        if collection is not None:
            collection.add(t_ns, merger.q, merger.qd, merger.effort)
        return monitor is not None and monitor.update(t_ns, merger.q, merger.qd, merger.effort)


def base_state_problem(base, now_ns, topic, timeout_s):
    """Why ``base`` (a BaseState) gives no torque at node clock ``now_ns`` [ns]: none came on ``topic``
    yet, or it is older than ``timeout_s`` [s] (joint_state_timeout)."""
    if not base.known:
        return 'no base state on %s yet' % topic
    return ('the base state on %s is stale: %.3f s old, more than joint_state_timeout (%.3f s)'
            % (topic, base.age(now_ns), timeout_s))


def laws_of(model, actuated, mode, friction_smoothing, kp, kd, timeout_ns, old_base=None, old_loop=None,
            tracking_friction=False, dynamics=None):
    """The laws of ``model`` for the torque loop: (laws, feedforward, computed_torque, base, loop).

    A closed-loop robot: its :class:`.closed_loop.ClosedLoop` on the ``actuated`` joints (the branch of
    ``old_loop`` carries over for the same joints); a floating or planar base: the laws on the full state
    with a :class:`.base_state.BaseState` (judged stale after ``timeout_ns`` [ns]; ``old_base``'s state
    carries over for the same base); else the laws of :mod:`.compensation`, computed by ``dynamics`` (the
    model's CompiledModel: the compiled backend, :mod:`.backend`) or the library (None). ``kp``, ``kd``: (n,)
    gains of the computed torque; ``tracking_friction``: a fixed-base tree's feedforward and computed torque
    add the friction laws (:func:`.compensation.feedforward`)."""
    from . import base_compensation
    from .base_state import BaseState
    from .closed_loop import ClosedLoop
    from .compensation import Compensation, computed_torque, feedforward
    if model.loops:
        loop = ClosedLoop(model, actuated, mode, friction_smoothing)
        if old_loop is not None and old_loop.model.joint_names == model.joint_names:
            loop.q = old_loop.q                       # the branch the mechanism is on carries over
        return (loop, loop.feedforward, lambda q, qd, *desired: loop.computed_torque(q, qd, *desired, kp, kd),
                None, loop)
    if model.root_joint is None:
        s = friction_smoothing if tracking_friction else None
        return (Compensation(model, mode, friction_smoothing, dynamics),
                lambda q, qd, q_d, qd_d, qdd_d: feedforward(model, q_d, qd_d, qdd_d, s, dynamics),
                lambda q, qd, *desired: computed_torque(model, q, qd, *desired, kp, kd, s, dynamics), None, None)
    base = BaseState(model, timeout_ns)
    if old_base is not None and (old_base.frame, old_base.model.root_joint) == (base.frame, model.root_joint):
        base.update_from(old_base)      # same base (a payload, a new description of the robot)
    return (base_compensation.FullStateCompensation(model, mode, friction_smoothing),
            lambda q, qd, *desired: base_compensation.feedforward(model, q, qd, *desired),
            lambda q, qd, *desired: base_compensation.computed_torque(model, q, qd, *desired, kp, kd), base, None)


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
    from ..errors import InputError
    from .joint_map import reorder_indices
    if len(values) == 1:
        return np.full(len(names), float(values[0]))
    missing = [n for n in names if n not in cmd_joints]
    if missing:
        raise InputError("parameter %r gives one value per entry of 'joints', which misses the model "
                         "joint(s) %s" % (name, ', '.join(missing)))
    out = np.empty(len(names))
    out[reorder_indices(names, cmd_joints)] = values
    return out
