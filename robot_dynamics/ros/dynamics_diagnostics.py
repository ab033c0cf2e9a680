"""dynamics_node's /diagnostics status: its values and its level and message, from one :class:`Snapshot`."""
import math
import time
from typing import Any, Callable, NamedTuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus


class Snapshot(NamedTuple):
    """What dynamics_node's status is made of, taken at once by the node (its parts, not the node).

    p: the parameters; stats: control.statistics.Statistics; pipeline: the TorqueLoop of the last model that
    fitted (or None); ready: it fits the current model; model: the current model (or None); watchdog, command
    (CommandOutput or None), input_rate (InputRate or None), payload_sync (or None), identify (IdentifyService
    or None), observer_out (ObserverOutputs or None); backend: what computes the laws (text); now_ns: the node
    clock [ns]; base_topic: the resolved base state topic;
    clamps_reported: the clamp events of the last status; warn: the node's warning.
    """
    p: Any
    stats: Any
    pipeline: Any
    ready: bool
    model: Any
    watchdog: Any
    command: Any
    input_rate: Any
    payload_sync: Any
    identify: Any
    observer_out: Any
    backend: str
    now_ns: int
    base_topic: str
    clamps_reported: int
    warn: Callable

    @property
    def merger(self):
        return self.pipeline.merger if self.pipeline is not None else None

    @property
    def monitor(self):
        return self.pipeline.monitor if self.pipeline is not None else None

    @property
    def base(self):
        return self.pipeline.base if self.pipeline is not None else None

    def no_base_text(self, base):
        from ..control.torque_loop import base_state_problem
        return base_state_problem(base, self.now_ns, self.base_topic, self.p.joint_state_timeout)


def fill_status(node, status):
    """The values of ``node`` (a :class:`Snapshot`), and the level and message of ``status`` (model_node.Status,
    whose level ModelNode set). Returns (values [(key, value)], the clamp events counted so far: the next
    snapshot's ``clamps_reported``)."""
    p, stats, loop = node.p, node.stats, node.pipeline
    period = stats.period(time.monotonic())
    slow = node.input_rate.judge(period['messages'], period['length']) if node.input_rate is not None else None
    if slow:
        node.warn(slow)
    clamps = loop.limiter.clamp_events if loop is not None else 0
    new_clamps = clamps - node.clamps_reported
    wd, throttle, command = node.watchdog, loop.throttle if loop is not None else None, node.command
    reference = loop.reference if loop is not None else None
    values = [
        ('mode', p.mode), ('backend', node.backend), ('state', _state(node)),
        ('input_rate_hz', '%.1f' % period['input_rate']), ('messages_in', stats.n_in), ('messages_out', stats.n_out),
        ('commands_out', command.sent if command is not None else 0), ('references_in', stats.n_references),
        ('diagnostic_torque_rate_hz', 'off' if throttle is None or throttle.period_ns is None else
         ('every joint state' if not throttle.period_ns else '%g' % p.diagnostic_torque_rate)),
        ('diagnostic_torques_out', stats.n_diagnostic_out),
        ('bad_messages', stats.n_bad), ('non_finite_torques', stats.n_nonfinite),
        ('callback_time_mean_us', '%.1f' % (period['callback_mean'] * 1e6)),
        ('callback_time_max_us', '%.1f' % (period['callback_max'] * 1e6)),
        ('input_latency_mean_ms', '%.3f' % (period['latency_mean'] * 1e3)),
        ('input_latency_max_ms', '%.3f' % (period['latency_max'] * 1e3)),
        ('clamp_events', clamps), ('clamp_events_last_period', new_clamps),
        ('timeouts', wd.timeouts), ('on_timeout', p.on_timeout),
        ('joint_timeout_ms', '%.1f' % (wd.joint_timeout_ns * 1e-6)),
        ('stale_joint_states', stats.n_stale),
        ('max_state_age_ms', '%.1f' % (p.max_state_age * 1e3) if p.max_state_age else 'off'),
        ('joint_states_too_old', stats.n_too_old),
        ('watchdog_period_ms', '%.1f' % (wd.period * 1e3)),
        ('watchdog_calls_last_period', wd.calls),
        ('watchdog_interval_max_ms', '%.1f' % (wd.gap_max * 1e3)),
        ('effort_limit_scale', p.effort_limit_scale),
        ('command_topic', p.command_topic if command is not None else '(off)'),
        ('command_subscribers', command.listeners.subscribers if command is not None else '(off)'),
        ('controller', '%s (deactivated on stop through %s)' % (command.switch.controller, command.switch.service_name)
         if command is not None and command.switch is not None else '(not owned)'),
        ('expected_joint_state_rate_hz', '%g' % p.expected_joint_state_rate if p.expected_joint_state_rate else 'off'),
        ('joint_state_rate_low', node.input_rate is not None and node.input_rate.low),
        ('joint_state_effort', p.joint_state_effort),
        ('services_payloads', node.payload_sync.state if node.payload_sync is not None else '(no services_node)'),
        ('command_joints', ', '.join(loop.cmd_joints if loop is not None else ())),
        ('command_contains', loop.terms.describe() if node.ready else '(no model)'),
        ('reference', 'none' if reference is None else
         ('set-point' if loop.ref_stream else '%d points, %.3f s' % (len(reference.t), reference.duration))),
    ] + _observer(node, period) + _base(node) + _loop(node) + _impedance(node) + [
        ('payload_identification', node.identify.state() if node.identify is not None else 'idle')]
    if node.ready and not node.merger.ready:
        values.append(('missing_joints', ', '.join(node.merger.missing())))
    wd.reset_period()
    if status.level == DiagnosticStatus.OK:
        _judge(node, status, new_clamps)
    return values, clamps


def _judge(node, status, new_clamps):
    """The level and message of an OK status by the node's state, the gravest first."""
    p, monitor, base = node.p, node.monitor, node.base
    if node.ready and monitor is not None and monitor.in_collision:
        status.level = DiagnosticStatus.WARN
        status.message = 'collision: %s over the threshold' % ', '.join(
            node.merger.joint_names[i] for i in monitor.over())
        return
    if node.watchdog.timed_out:
        cause = node.watchdog.cause
        status.level = DiagnosticStatus.ERROR if p.on_timeout != 'hold' else DiagnosticStatus.WARN
        status.message = 'joint_states timed out (on_timeout=%s)%s' % (p.on_timeout, ': stale ' + cause if cause else '')
    elif node.command is not None and node.command.unheard():
        status.level = DiagnosticStatus.WARN
        status.message = 'commands go to %s and nothing subscribes to it' % node.command.pub.topic_name
    elif not node.merger.ready:
        status.level = DiagnosticStatus.WARN
        status.message = 'waiting for joint_states of: %s' % ', '.join(node.merger.missing())
    elif node.input_rate is not None and node.input_rate.low:
        status.level = DiagnosticStatus.WARN
        status.message = ('joint states at %.1f Hz, expected %g Hz: a relay or a throttled topic?'
                          % (node.input_rate.rate_hz, node.input_rate.expected_hz))
    elif base is not None and not base.fresh(node.now_ns):
        status.level = DiagnosticStatus.WARN
        status.message = node.no_base_text(base)
    elif new_clamps:
        status.level = DiagnosticStatus.WARN
        status.message = 'command clamped to the effort limits %d times' % new_clamps
    else:
        status.message = 'publishing (%s)' % p.mode


def _state(node):
    if not node.ready:
        return 'no model' if node.model is None else 'model error'
    if node.watchdog.timed_out:
        return 'timed out'
    if not node.merger.ready:
        return 'waiting for joint states'
    if node.base is not None and not node.base.fresh(node.now_ns):
        return 'waiting for the base state'
    return 'running'


def _observer(node, period):
    """Diagnostic values of the momentum observer (the per-sample time is part of the callback time)."""
    monitor, stats = node.monitor, node.stats
    values = [('observer', 'off' if monitor is None else 'on'),
              ('joint_states_without_effort', stats.n_no_effort), ('bad_efforts', stats.n_bad_effort)]
    if monitor is not None:
        r = monitor.residual
        values += [('observer_samples', monitor.samples), ('observer_skipped', monitor.skipped),
                   ('observer_restarts', monitor.restarts),
                   ('observer_time_mean_us', '%.1f' % (period['observer_mean'] * 1e6)),
                   ('observer_time_max_us', '%.1f' % (period['observer_max'] * 1e6)),
                   ('external_torque_max', '%.4g' % float(np.abs(r).max()) if r.size else '0'),
                   ('collision', monitor.in_collision),
                   ('collision_events', node.observer_out.n_collisions if node.observer_out is not None else 0)]
    return values


def _base(node):
    """Diagnostic values of the base state (a floating or planar robot, or base_state_topic set)."""
    base = node.base
    if base is None:
        return [('base_state_topic', node.base_topic)] if node.p.base_state_topic else []
    age = base.age(node.now_ns)
    return [('base', '%s, base link %s' % (base.model.root_joint, base.frame)),
            ('base_state_topic', node.base_topic),
            ('base_states_in', base.accepted + base.rejected), ('base_states_rejected', base.rejected),
            ('base_state_age_ms', '%.1f' % (age * 1e3) if math.isfinite(age) else 'none'),
            ('base_state_frame', base.fixed_frame),
            ('last_base_state_problem', base.problem),
            ('joint_states_without_base_state', node.stats.n_no_base)]


def _impedance(node):
    """Diagnostic values of the impedance targets (every fixed-base robot: other modes refuse them) and, in an
    impedance mode, of its law: the held target, the rate-limited torques, the singular states."""
    loop = node.pipeline
    target = loop.target if loop is not None else None
    if target is None:
        return []
    values = [('targets_in', target.accepted + target.rejected), ('targets_rejected', target.rejected),
              ('last_target_problem', target.problem)]
    control = loop.impedance
    if control is not None:
        values += [('target', target.describe()),
                   ('impedance_link', control.law.link if control.cartesian else '(joint space)'),
                   ('torques_rate_limited', control.rate.limited),
                   ('singular_states', node.stats.n_singular), ('last_singularity', node.stats.last_singularity)]
    return values


def _loop(node):
    """Diagnostic values of a closed-loop robot: its singular states (no torque) and the last one."""
    if node.pipeline is None or node.pipeline.loop is None:
        return []
    return [('singular_states', node.stats.n_singular), ('last_singularity', node.stats.last_singularity)]
