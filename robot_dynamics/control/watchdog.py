"""What dynamics_node's watchdog does when joint states stop or a joint goes stale, without ROS.

The watchdog is called every :attr:`Watchdog.period` [s]. A joint state that gave a torque and set a
joint is its sign of life (the count ``n_fresh``). Without one for ``timeout_ns`` [ns]
(joint_state_timeout), or as soon as a joint's latest position is older than ``joint_timeout_ns``
(:class:`.staleness.JointStaleness`) while others keep coming, it times out once: :meth:`Watchdog.check`
returns a :class:`Timeout`; the node then does what ``on_timeout`` says (zero, hold, stop). While timed
out with ``on_timeout`` hold it returns :data:`HOLD` at every call (send the last command again). The
next torque ends the timeout (:meth:`Watchdog.resume`).
"""
from typing import NamedTuple, Optional

ON_TIMEOUT = ('zero', 'hold', 'stop')

#: Timed out with on_timeout hold: send the last command again.
HOLD = 'hold'


class Timeout(NamedTuple):
    """A timeout that just came: ``action`` (on_timeout), the ``stale`` joint (its description, or None
    when joint states stopped altogether) and the time since the last sign of life [s]."""
    action: str
    stale: Optional[str]
    silence: float


class Watchdog:
    """See the module doc. Times [ns] of the node's clock; ``on_timeout`` one of :data:`ON_TIMEOUT`."""

    def __init__(self, timeout_ns, joint_timeout_ns, on_timeout, now_ns=0):
        if on_timeout not in ON_TIMEOUT:
            raise ValueError('on_timeout must be one of %s, got %r' % (', '.join(ON_TIMEOUT), on_timeout))
        self.timeout_ns, self.joint_timeout_ns, self.on_timeout = int(timeout_ns), int(joint_timeout_ns), on_timeout
        #: [s]: a tenth of the shorter limit, within 1 to 50 ms.
        self.period = min(max(min(self.timeout_ns, self.joint_timeout_ns) * 1e-9 / 10.0, 0.001), 0.05)
        self.timed_out = False
        self.streaming = False          # a torque went out since the last timeout
        self.cause = ''                 # the stale joint of the last timeout, or ''
        self.timeouts = 0
        self.last_ns = now_ns           # the last sign of life
        self._count = 0
        # Its own timing (wall clock, for diagnostics): calls and the longest gap this period.
        self.calls = 0
        self.gap_max = 0.0              # [s]
        self._prev = None

    def restart(self, now_ns, n_fresh):
        """Start afresh at ``now_ns``: not timed out, no torque yet (lifecycle activate)."""
        self.timed_out = self.streaming = False
        self._count, self.last_ns = n_fresh, now_ns

    def resume(self):
        """A joint state gives a torque: True if that ends a timeout."""
        if not self.timed_out:
            return False
        self.timed_out, self.cause = False, ''
        return True

    def tick(self, t):
        """Record a call at wall time ``t`` [s] (time.monotonic) for diagnostics."""
        if self._prev is not None and t - self._prev > self.gap_max:
            self.gap_max = t - self._prev
        self._prev = t
        self.calls += 1

    def reset_period(self):
        """Start a diagnostics period: calls and the longest gap from zero."""
        self.calls, self.gap_max = 0, 0.0

    def check(self, now_ns, n_fresh, staleness=None):
        """One call at node clock ``now_ns`` [ns] with the count of signs of life ``n_fresh``; ``staleness``
        (a JointStaleness) while the merged state is complete, else None.

        Returns None (nothing to do), :data:`HOLD`, or the :class:`Timeout` that just came."""
        # A joint whose latest position is older than joint_timeout counts as silent joint states, even
        # while other joints' messages keep coming.
        stale = (staleness.stale(now_ns) if staleness is not None and self.streaming and not self.timed_out
                 else None)
        if stale is not None and self.joint_timeout_ns >= self.timeout_ns and staleness.all_stale(now_ns):
            stale = None        # no joint comes at all: silent joint states, the whole-message watchdog's case
        if n_fresh != self._count and stale is None:
            self._count, self.last_ns = n_fresh, now_ns
            return None
        if self.timed_out:
            return HOLD if self.on_timeout == 'hold' else None
        if not self.streaming or (stale is None and now_ns - self.last_ns < self.timeout_ns):
            return None
        self.cause = stale or ''
        self.timed_out, self.streaming = True, False
        self.timeouts += 1
        return Timeout(self.on_timeout, stale, (now_ns - self.last_ns) * 1e-9)
