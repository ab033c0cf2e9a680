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

    def will_go(self, t_ns):
        """What :meth:`go` at ``t_ns`` [ns] will say, without counting it."""
        period = self.period_ns
        return period is not None and (not period or t_ns >= self.due)

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


class Step:
    """What one joint state gave (:meth:`TorqueLoop.step` returns the loop's one Step, refilled each time).

    Attributes:
        refused: None, or the :class:`NoTorque` that says why there is no torque (then no output).
        outputs: the names of the outputs to publish, the commanded torque's first (keys of ``torques``);
            () when refused.
        torques: output name -> (n,) torque array [N m or N] (the loop's arrays, rewritten by each step
            that outputs them; an impedance mode's compensation only when it goes out or the command needs it).
        command: (m,) the command torques in the order of the controller's joints.
        clamped: the command was clamped to the effort limits.
        fresh: the message set a model joint (the watchdog's sign of life).
    """

    __slots__ = ('refused', 'outputs', 'torques', 'command', 'clamped', 'fresh')

    def __init__(self, torques, command):
        self.torques, self.command = torques, command
        self.refused, self.outputs, self.clamped, self.fresh = None, (), False, False


class TorqueLoop:
    """The torque pipeline of one model (see the module doc); :func:`robot_dynamics.control.build` builds it.

    Args:
        settings: :class:`.settings.PipelineSettings`: ``mode``, ``max_state_age``, ``diagnostic_torque_rate``,
            ``joint_state_timeout`` and ``base_topic`` (for the reasons) are read here.
        merger: :class:`.joint_map.JointStateMerger` of the torque's joints (n of them).
        staleness: :class:`.staleness.JointStaleness` of the same joints.
        laws: :class:`.laws.Laws` of the model (its ``base`` and ``loop`` too).
        limiter: :class:`.compensation.TorqueLimiter` of the n joints.
        terms: :class:`.profiles.CommandTerms`: what the robot adds to the command itself.
        cmd_idx: (m,) indices of the command's joints in the n joints.
        passive: the merger of the passive joints of a closed loop (None when it has none).
        impedance: :class:`.impedance_target.ImpedanceControl` of an impedance mode (its torque is the
            command, output ``imp``), or None.
        target: :class:`.impedance_target.ImpedanceTarget` that takes the targets (in every mode of a fixed
            base: the others refuse them), or None.
        monitor: the momentum observer (:class:`.external_torque.ExternalTorqueMonitor`), or None.
    """

    def __init__(self, settings, merger, staleness, laws, limiter, terms, cmd_idx, *, passive=None,
                 impedance=None, target=None, monitor=None):
        n = len(merger.joint_names)
        self.settings = settings
        self.merger, self.staleness, self.laws, self.limiter, self.terms = merger, staleness, laws, limiter, terms
        self.cmd_idx, self.mode = cmd_idx, settings.mode
        self.cmd_joints = [merger.joint_names[i] for i in cmd_idx]     # the command's joints, in its order
        self.base, self.loop, self.passive = laws.base, laws.loop, passive
        self.impedance, self.target, self.monitor = impedance, target, monitor
        self.max_age_ns = int(settings.max_state_age * 1e9)
        self.base_topic, self.timeout_s = settings.base_topic, settings.joint_state_timeout
        self.throttle = DiagnosticThrottle.from_rate(settings.diagnostic_torque_rate)
        self.views = {key: np.zeros(n) for key in OUTPUTS}
        laws.write_into(self.views['gravity'], self.views['coriolis'], self.views['total'])
        self.command = np.zeros(len(cmd_idx))       # the command joints' torques
        self.result = Step(self.views, self.command)
        self.reference = None                       # .trajectory.TrajectorySampler, or None
        self.ref_start = 0                          # node clock time of the reference's t = 0 [ns]
        self.ref_stream = False                     # a streamed set-point (~/reference)
        self.fresh = False                          # the last message set a joint (the watchdog's sign of life)
        self.q = self.qd = None                     # the state of the last torque

    @property
    def joint_names(self):
        """The n joints of the torques."""
        return self.merger.joint_names

    def unclamped_joints(self):
        """The joints without a (finite) URDF effort limit: their torques are checked, not clamped."""
        return [n for n, limit in zip(self.joint_names, self.limiter.limit) if not np.isfinite(limit)]

    def resume(self, zeroed):
        """The torques stopped (a watchdog timeout, a deactivation; ``zeroed``: a zero command went out) and
        resume with the next joint state: an impedance mode's rate limit starts from what the actuator holds
        (:meth:`.impedance_target.ImpedanceControl.resume`)."""
        if self.impedance is not None:
            self.impedance.resume(zeroed)

    def set_reference(self, sampler, start_ns, stream=False):
        """Follow ``sampler`` (None: none) from node clock time ``start_ns`` [ns]."""
        self.reference, self.ref_start, self.ref_stream = sampler, start_ns, stream

    def step(self, names, position, velocity, stamp_ns, now_ns):
        """One joint state: its joint ``names``, ``position`` and ``velocity`` (by name; velocity may be
        empty), its header stamp ``stamp_ns`` and the node clock ``now_ns`` [ns] when it was taken.

        Returns the loop's :class:`Step` (:attr:`result`), refilled: the outputs to publish, the commanded
        torque's first, and the command; or ``refused``, the :class:`NoTorque` with the reason."""
        return self._result(self._step(names, position, velocity, stamp_ns, now_ns))

    def _result(self, out):
        """:attr:`result` refilled with ``out``, the output names or a NoTorque."""
        result = self.result
        if type(out) is NoTorque:
            result.refused, result.outputs, result.clamped = out, (), False
        else:       # the command's limiting was the step's one counted call
            result.refused, result.outputs, result.clamped = None, out, self.limiter.clamped
        result.fresh = self.fresh
        return result

    def _step(self, names, position, velocity, stamp_ns, now_ns):
        """:meth:`step`'s work: the output names, or a NoTorque."""
        if self.max_age_ns:
            why = state_age_problem(stamp_ns, now_ns, self.max_age_ns)
            if why is not None:
                self.fresh = False          # not merged: no sign of life for the watchdog
                return NoTorque('too_old', NO_TORQUE + why)
        merger = self.merger
        updates = merger.updates
        try:
            ready = merger.update(names, position, velocity)
        except JointMapError as exc:
            self.fresh = False
            return NoTorque('bad', 'joint_states message ignored: %s' % exc)
        self.fresh = merger.updates != updates
        return self._merged(ready, names, position, now_ns)

    def step_merged(self, layout, now_ns):
        """:meth:`step` of a joint state that a compiled merge (:func:`robot_dynamics.algorithms.cdr_merge.merge_known`)
        wrote into the merger's q and qd already: every joint, in ``layout`` (the merger's
        :meth:`~.joint_map.JointStateMerger.full_layout`), finite, and young enough for ``max_state_age``;
        only for a loop without closed loops or base state (:attr:`merges_compiled`). Returns :attr:`result`."""
        self.merger.merged(layout)
        self.fresh = True
        return self._result(self._merged(True, (), (), now_ns))

    @property
    def merges_compiled(self):
        """Whether :meth:`step_merged` may take a joint state: no closed loop, no base state."""
        return self.loop is None and self.base is None

    def _merged(self, ready, names, position, now_ns):
        """:meth:`_step` after the merge: the output names, or a NoTorque."""
        # The joints this message set were received now; no torque while any joint is too old.
        every_joint = self.staleness.touch_merged(self.merger, now_ns)
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
        laws, terms, t_ns = self.laws, self.terms, time.monotonic_ns()
        if self.impedance is not None:
            # The law compensates gravity and Coriolis itself: the compensation only for its outputs (at the
            # diagnostic rate) and for the terms the robot adds itself (they are left out of the command).
            if terms.active or self.throttle.will_go(t_ns):
                laws.compute(q, qd)                         # -> views gravity, coriolis, total
            self.impedance.torque(q, qd, now_ns, out=self.views['imp'])     # the law writes into the view
            outputs = IMPEDANCE_OUT
        else:
            laws.compute(q, qd)
            outputs = COMPENSATION
            if self.reference is not None and self.mode in (FEEDFORWARD, COMPUTED_TORQUE):
                q_d, qd_d, qdd_d = self.reference.sample((now_ns - self.ref_start) * 1e-9)
                self.views['ff'][:] = laws.feedforward(q, qd, q_d, qd_d, qdd_d)
                outputs = FEEDFORWARD_OUT
                if self.mode == COMPUTED_TORQUE:
                    self.views['ct'][:] = laws.computed_torque(q, qd, q_d, qd_d, qdd_d)
                    outputs = COMPUTED_TORQUE_OUT
        if not self.throttle.go(t_ns):
            outputs = outputs[:1]
        # Nothing non-finite or over the limit is published; the command torque (first output) counts the
        # clamp events.
        limiter = self.limiter
        command = self.views[outputs[0]]
        if terms.active:
            # The robot adds these terms itself: they are left out of the command (profiles.CommandTerms).
            command = terms.command(command, laws.gravity, laws.friction)
            if not limiter.apply(command):
                return self._non_finite(q, qd)
        for k, key in enumerate(outputs):
            if not limiter.apply(self.views[key], count=k == 0 and not terms.active):
                return self._non_finite(q, qd)
        command.take(self.cmd_idx, out=self.command)        # the method: numpy's np.take wrapper costs 0.9 us more
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
