"""The counters and timings of dynamics_node's torque loop that /diagnostics reports, without ROS.

Totals since the start (``n_*``) and per diagnostics period (the callback and observer times, the input
latency by the stamps, the input rate): :meth:`Statistics.period` reads and restarts the latter.
Times [s].
"""
import math

#: The counter of each kind of NoTorque (torque_loop.NoTorque.kind) and of the observer's refusals.
COUNTERS = {'bad': 'n_bad', 'too_old': 'n_too_old', 'stale': 'n_stale', 'no_base': 'n_no_base',
            'singular': 'n_singular', 'non_finite': 'n_nonfinite', 'no_effort': 'n_no_effort',
            'bad_effort': 'n_bad_effort'}


class Statistics:
    """See the module doc."""

    def __init__(self, now=0.0):
        self.n_in = self.n_out = self.n_commands = self.n_references = 0
        self.n_fresh = 0                    # torques of messages that set a joint (the watchdog's sign of life)
        self.n_diagnostic_out = 0           # joint states whose diagnostic torques were published
        self.n_collisions = 0
        for name in COUNTERS.values():
            setattr(self, name, 0)
        self.last_singularity = ''
        self._period_in = 0
        self._last = now
        self._reset_period()

    def _reset_period(self):
        self.cb_time = self.cb_max = 0.0
        self.age_sum = self.age_max = 0.0
        self.age_n = 0
        self.obs_time = self.obs_max = 0.0
        self.obs_n = 0

    def refused(self, no_torque):
        """Count a torque_loop.NoTorque (or an observer's refusal) by its kind; 'waiting' is not counted."""
        name = COUNTERS.get(no_torque.kind)
        if name is not None:
            setattr(self, name, getattr(self, name) + 1)
        if no_torque.kind == 'singular':
            self.last_singularity = no_torque.reason.partition(': ')[2]

    def callback(self, dt):
        """A joint state that gave a torque took ``dt`` [s]."""
        self.cb_time += dt
        if dt > self.cb_max:
            self.cb_max = dt

    def age(self, age):
        """A joint state was ``age`` [s] old by its stamp when taken."""
        self.age_sum += age
        self.age_n += 1
        if age > self.age_max:
            self.age_max = age

    def observer(self, dt):
        """An observer sample took ``dt`` [s]."""
        self.obs_time += dt
        self.obs_n += 1
        if dt > self.obs_max:
            self.obs_max = dt

    def period(self, now):
        """End the diagnostics period at wall time ``now`` [s]: a dict of its values (the input rate [Hz]
        and its count, the mean and largest callback and observer times [s], the mean and largest input
        latency [s], nan without a stamped state); the period's sums start again."""
        length = max(now - self._last, 1e-9)
        n = self.n_in - self._period_in
        values = dict(length=length, messages=n, input_rate=n / length,
                      callback_mean=self.cb_time / max(n, 1), callback_max=self.cb_max,
                      latency_mean=self.age_sum / self.age_n if self.age_n else math.nan, latency_max=self.age_max,
                      observer_mean=self.obs_time / max(self.obs_n, 1), observer_max=self.obs_max)
        self._last, self._period_in = now, self.n_in
        self._reset_period()
        return values


class Listeners:
    """Whether the commands reach a subscriber: every 0.1 s (:meth:`check`), commands that went to a topic
    without a subscriber for 1 s (no controller loaded, another namespace) give one warning; :meth:`unheard`
    while it lasts. Wall times [s] (time.monotonic)."""

    def __init__(self):
        self.subscribers = -1           # at the latest check (-1: none yet)
        self.since = None               # since when commands went to no subscriber
        self.warned = False
        self.due = 0.0
        self._commands = 0

    def check(self, t, subscribers, n_commands):
        """At ``t`` with the topic's ``subscribers`` and the count of commands sent: the warning's silence
        [s] when it is due (once), else None."""
        self.due = t + 0.1
        self.subscribers = subscribers
        sending = n_commands != self._commands
        self._commands = n_commands
        if subscribers:
            self.since, self.warned = None, False
        elif sending and self.since is None:
            self.since = t
        elif self.since is not None and t - self.since >= 1.0 and not self.warned:
            self.warned = True
            return t - self.since
        return None

    def unheard(self, t):
        """Whether commands have gone to no subscriber for 1 s at ``t``."""
        return self.since is not None and t - self.since >= 1.0
