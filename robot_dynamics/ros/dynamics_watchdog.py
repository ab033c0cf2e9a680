"""What dynamics_node does when its watchdog (:class:`robot_dynamics.control.watchdog.Watchdog`) decides:
joint states stopped, or a joint went stale (``on_timeout``: zero / hold / stop), logged."""
import time

from ..control.watchdog import HOLD


def on_timeout(watchdog, command, ready, pipeline, stats, now_ns, p, log, warn, no_base_text):
    """One call of the watchdog's timer.

    Args:
        watchdog: the node's Watchdog; command: its CommandOutput, or None.
        ready: the TorqueLoop when it fits the current model, else None; pipeline: the last one built (or None).
        stats: the node's Statistics (``n_fresh``, ``n_no_base``); now_ns: the node clock [ns].
        p: the parameters (``joint_state_timeout``); log: the node's logger; warn: its throttled warning.
        no_base_text: ``no_base_text(base)``: why a base state gives no torque.
    """
    t = time.monotonic()
    watchdog.tick(t)
    if command is not None:
        command.check_listeners(t)
    action = watchdog.check(now_ns, stats.n_fresh, ready.staleness if ready is not None and ready.merger.ready
                            else None)
    if action is None:
        return
    if action == HOLD:
        if command is not None and ready is not None:
            command.send()
            warn('joint_states timed out: holding the last command (on_timeout=hold)')
        return
    if action.action == 'zero':
        # Also when the model no longer fits (not ready): the command message is sized for the read-only
        # `joints`, so zero is valid.
        if command is not None:
            command.zero()
        what = 'sent a zero command, publishing stops until joint_states resume'
    elif action.action == 'hold':
        what = 'holding the last command until joint_states resume (on_timeout=hold)'
    else:
        what = 'publishing stops; a forward_command_controller keeps its last command'
    base = pipeline.base if pipeline is not None else None
    if action.action != 'hold' and pipeline is not None:
        pipeline.merger.reset()          # a stale position is never used again (held joints stay held)
        pipeline.resume(zeroed=action.action == 'zero' and command is not None)   # the next torque: a ramp
        if base is not None:
            base.forget()                # nor a stale base state
    if action.stale is not None:
        return log.error('stale joint state: %s (on_timeout=%s): %s' % (action.stale, action.action, what))
    cause = ('' if base is None or not stats.n_no_base or base.fresh(now_ns) else
             ' (joint states that came gave no torque: %s)' % no_base_text(base))
    log.error('no joint_states for %.3f s (joint_state_timeout %.3f s; rejected messages and messages that gave no '
              'torque do not count)%s: %s' % (action.silence, p.joint_state_timeout, cause, what))
