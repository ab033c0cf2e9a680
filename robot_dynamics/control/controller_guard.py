"""What ``command_watchdog`` decides, without ROS: when to ask the controller_manager to deactivate the controller.

A forward-command effort controller re-applies its last command while it is active, so while no command
comes the controller must stay inactive. :class:`ControllerGuard` holds that line from four kinds of
event, all on the monotonic clock [s]:

- a command came (:meth:`~ControllerGuard.command`): the guard arms at the first; a command after a
  timeout ends it (the node is back; the controller stays as it is);
- the manager reported the controller's state (:meth:`~ControllerGuard.activity`, from Jazzy's
  ``<manager>/activity``): a change to ``active`` while no command comes is a re-activation (UR's
  ``controller_stopper`` does this when the robot program runs again) and asks for a deactivation at once;
  ``inactive`` confirms the deactivation;
- the manager answered a deactivation (:meth:`~ControllerGuard.answered`): ok confirms it; a refusal
  (``ok = false``), a failed call or no answer within :data:`ANSWER_WAIT` is retried after
  :data:`RETRY_FIRST`, doubling up to :data:`RETRY_MAX`, until the manager reports the controller inactive;
  the :data:`ESCALATE_AFTER`-th failure in a row escalates (:attr:`~ControllerGuard.escalated`);
- time passed (:meth:`~ControllerGuard.due`, called after every event and at least every poll period):
  no command for ``timeout`` is a timeout, which asks for one deactivation whatever state was last
  reported (a report can be late).

:meth:`~ControllerGuard.due` returns why a request should go out now (one of :data:`REASONS`) or None.
The caller sends it and says so (:meth:`~ControllerGuard.sent`), or says the service is not there
(:meth:`~ControllerGuard.unavailable`: tried again every ``timeout``).
"""
from typing import Optional

#: [s] the first retry after a refused or failed deactivation; each next one waits twice as long ...
RETRY_FIRST = 0.05
#: [s] ... up to this.
RETRY_MAX = 1.0
#: Failures in a row (refused, failed, unanswered, service missing) after which the guard escalates.
ESCALATE_AFTER = 3
#: [s] a request unanswered this long counts as failed (Fast DDS can drop a response; the Jazzy manager
#: itself gives up on a switch after its default timeout of 1 s).
ANSWER_WAIT = 1.0

#: Why a deactivation goes out: the commands stopped; the controller became active while they are absent;
#: a retry after a failure; the manager still reports it active a while after an ok answer.
REASONS = ('timeout', 'reactivated', 'retry', 'still active')


def backoff(failures):
    """[s] the wait before the next try after ``failures`` (>= 1) failures in a row."""
    return min(RETRY_FIRST * 2.0 ** (failures - 1), RETRY_MAX)


class ControllerGuard:
    """The decisions of command_watchdog for one controller; ``timeout`` [s] > 0 (command_timeout)."""

    def __init__(self, timeout):
        self.timeout = float(timeout)
        self.last_command = None      # [s] of the last command; None before the first (not armed)
        self.tripped = False          # the commands are absent: the controller must be inactive
        self.confirmed = False        # ... and the manager said it is (ok answer or activity)
        self.confirmed_at = None      # [s] when it said so
        self.pending_since = None     # [s] when the request in flight went out; None: none in flight
        self.again = False            # a re-activation was reported while a request was in flight
        self.next_try = None          # [s] when to try again; None: no try scheduled
        self.next_reason = None       # the reason of that try
        self.failures = 0             # failures in a row since the last success
        self.state = None             # the controller's state as the manager last reported it (None: never)
        self.state_since = None       # [s] when that report came
        # Counters, for the log and the diagnostics.
        self.commands = self.requests = self.refusals = self.reactivations = 0

    @property
    def armed(self):
        return self.last_command is not None

    @property
    def escalated(self):
        """Whether the deactivation failed :data:`ESCALATE_AFTER` times in a row and is still not done."""
        return self.tripped and not self.confirmed and self.failures >= ESCALATE_AFTER

    def command(self, now):
        """A command came at ``now``: 'armed' (the first), 'resumed' (the first after a timeout) or None."""
        first = self.last_command is None
        self.last_command = now
        self.commands += 1
        if first:
            return 'armed'
        if self.tripped:
            self.tripped = self.confirmed = self.again = False
            self.next_try = self.next_reason = None
            self.failures = 0
            return 'resumed'
        return None

    def activity(self, state, now):
        """The manager reports the controller's lifecycle state label (``active``, ``inactive``, ...) at
        ``now``: 'reactivated' (it became active while the commands are absent), 'confirmed' (inactive
        while they are absent, not known before) or None."""
        previous, self.state, self.state_since = self.state, state, now
        if not self.tripped:
            return None
        if state == 'active' and previous != 'active':
            self.reactivations += 1
            self.confirmed = False
            if self.pending_since is not None:
                self.again = True       # the request in flight may have been served before the activation
            else:
                self._schedule(now, 'reactivated')
            return 'reactivated'
        if state != 'active' and not self.confirmed:
            self._succeeded(now)
            return 'confirmed'
        return None

    def due(self, now):
        """Why a deactivation should go out at ``now`` (one of :data:`REASONS`), or None."""
        if not self.armed or self.pending_since is not None:
            return None
        if not self.tripped:
            if now - self.last_command < self.timeout:
                return None
            self.tripped, self.confirmed = True, False
            return 'timeout'
        if self.next_try is not None and now >= self.next_try:
            return self.next_reason
        if (self.confirmed and self.state == 'active' and self.next_try is None
                and now - max(self.confirmed_at, self.state_since) >= RETRY_MAX):
            return 'still active'
        return None

    def sent(self, now):
        """A deactivation request went out at ``now``."""
        self.pending_since = now
        self.next_try = self.next_reason = None
        self.again = False
        self.requests += 1

    def unavailable(self, now):
        """The manager's service is not there at ``now``: try again in ``timeout``."""
        self.failures += 1
        self._schedule(now + self.timeout, 'retry')

    def overdue(self, now):
        """Whether the request in flight went unanswered for :data:`ANSWER_WAIT` (then call
        :meth:`answered` with ``ok=False``)."""
        return self.pending_since is not None and now - self.pending_since > ANSWER_WAIT

    def answered(self, ok, now):
        """The manager answered the request in flight (``ok``), or it failed or went unanswered (False).
        Returns the wait [s] before the retry, or None when no retry is due."""
        self.pending_since = None
        if not self.tripped:
            return None                 # the commands came back meanwhile
        if not ok and self.confirmed and self.state != 'active':
            return None                 # refused, but the manager reports the controller inactive
        if ok:
            again = self.again
            self._succeeded(now)
            if again:
                self._schedule(now, 'reactivated')
                return 0.0
            return None
        self.refusals += 1
        self.failures += 1
        wait = backoff(self.failures)
        self._schedule(now + wait, 'retry')
        return wait

    def summary(self, now):
        """(level, message) of the guard's state: level 0 OK, 1 WARN, 2 ERROR (diagnostic_msgs' levels)."""
        if not self.armed:
            return 0, 'waiting for the first command'
        if not self.tripped:
            return 0, 'commands flowing'
        gap = now - self.last_command
        if self.confirmed:
            return 1, 'no command for %.1f s; the controller is inactive' % gap
        if self.escalated:
            return 2, ('no command for %.1f s and the controller NOT deactivated: %d failures in a row'
                       % (gap, self.failures))
        return 1, 'no command for %.1f s; deactivating the controller' % gap

    # --- helpers -----------------------------------------------------------------------------------
    def _schedule(self, when, reason):
        self.next_try, self.next_reason = when, reason

    def _succeeded(self, now):
        self.confirmed, self.confirmed_at = True, now
        self.failures = 0
        self.again = False
        self.next_try = self.next_reason = None


def describe_state(state: Optional[str]):
    """The state as the log says it: the label, or 'unknown' when the manager never reported it."""
    return state if state is not None else 'unknown (no activity from the manager)'
