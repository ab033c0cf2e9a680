"""Per-joint staleness of merged joint states (no ROS needed).

dynamics_node merges partial joint states by name (:class:`.joint_map.JointStateMerger`):
an arm driver and a gripper driver may publish their joints in separate
messages. The whole-message watchdog sees a sign of life in every message,
so a gripper that keeps publishing would hide a dead arm driver.
:class:`JointStaleness` keeps, per joint, the time its latest position was
received (a message with a subset of the joints updates only those) and says
which joint is older than the limit (``joint_timeout``): no torque is then
computed from it, and the node's watchdog applies ``on_timeout``.

Times are integers in nanoseconds of the node's clock (reception times).
Those count from when the node takes a message, so a state that waited in a
queue looks new; :func:`state_age_problem` judges a state by its header
stamp instead (``max_state_age``).
"""
import numpy as np

#: Stamp of a joint never received.
NEVER = np.iinfo(np.int64).min // 2
#: Stamp of a held joint (JointStateMerger.hold): never old.
HELD = np.iinfo(np.int64).max // 4


class JointStaleness:
    """Reception time of each joint's latest position and the staleness limit.

    Args:
        joint_names: the merged joints, in the merger's order.
        limit_ns: largest age [ns] of a joint's latest position that gives a torque.
    """

    def __init__(self, joint_names, limit_ns):
        self.joint_names = tuple(joint_names)
        self.limit_ns = int(limit_ns)
        self.stamp = np.full(len(self.joint_names), NEVER, dtype=np.int64)
        self.limit = np.full(len(self.joint_names), self.limit_ns, dtype=np.int64)   # per joint [ns]
        self.main = np.ones(len(self.joint_names), dtype=bool)   # judged by limit_ns (the main stream's)
        self.labels = {self.limit_ns: 'joint_timeout'}           # limit [ns] -> its parameter, for the text

    def set_limit(self, index, limit_ns, label):
        """Joints ``index`` are judged by ``limit_ns`` [ns], the parameter ``label`` (e.g. the joints of a
        slower topic, extra_joint_state_timeout); they are then left out of :meth:`all_stale`."""
        self.limit[index] = int(limit_ns)
        self.main[index] = False
        self.labels[int(limit_ns)] = label

    def hold(self, index):
        """Joints ``index`` are held at a fixed position (no message sets them): never stale."""
        self.stamp[index] = HELD
        self.main[index] = False

    def touch(self, index, now_ns):
        """Joints ``index`` (indices, or ``slice(None)`` for all) were received at ``now_ns``."""
        self.stamp[index] = now_ns

    def touch_merged(self, merger, now_ns):
        """The joints of the message ``merger`` (a JointStateMerger) accepted last were received at
        ``now_ns`` (none if it named no joint of the merger). True if it set every joint (then none is
        stale)."""
        index = merger.last_indices()
        self.stamp[index] = now_ns
        return type(index) is slice

    def oldest(self, now_ns):
        """(index, age [ns]) of the joint received longest ago (age huge if one never was)."""
        k = int(np.argmin(self.stamp))
        return k, now_ns - int(self.stamp[k])

    def stale(self, now_ns):
        """None while every joint's latest position is at most its limit old; else a text naming
        the joint furthest over its limit and its age."""
        k = int(np.argmax(now_ns - self.stamp - self.limit))
        age = now_ns - int(self.stamp[k])
        if age <= self.limit[k]:
            return None
        return self.describe(k, age)

    def all_stale(self, now_ns):
        """True when every joint of the main stream (all but those of :meth:`set_limit` and :meth:`hold`)
        has its latest position older than the limit (none is being received)."""
        stamps = self.stamp[self.main] if not self.main.all() else self.stamp
        return stamps.size > 0 and now_ns - int(stamps.max()) > self.limit_ns

    def describe(self, k, age_ns):
        """'joint panda_joint1: latest position 0.123 s old, more than joint_timeout (0.050 s)'."""
        if self.stamp[k] == NEVER:
            return 'joint %s: no position received' % self.joint_names[k]
        stale = [self.joint_names[i] for i in np.flatnonzero(self.stamp == self.stamp[k])]
        limit = int(self.limit[k])
        return ('joint%s %s: latest position %.3f s old, more than %s (%.3f s)'
                % ('s' if len(stale) > 1 else '', ', '.join(stale), age_ns * 1e-9,
                   self.labels.get(limit, 'joint_timeout'), limit * 1e-9))


def state_age_problem(stamp_ns, now_ns, limit_ns):
    """Why a joint state stamped ``stamp_ns`` gives no torque at ``now_ns`` under ``max_state_age``
    ``limit_ns`` (all in ns of the node's clock; stamp 0: unstamped), or None when it is young enough:
    at most ``limit_ns`` old or ahead."""
    if not stamp_ns:
        return 'it has no stamp (max_state_age needs stamped joint states)'
    age = now_ns - stamp_ns
    if age > limit_ns:
        return 'stamped %.3f s ago, more than max_state_age (%.3f s)' % (age * 1e-9, limit_ns * 1e-9)
    if age < -limit_ns:
        return ('stamped %.3f s ahead of this node\'s clock, more than max_state_age (%.3f s): are the clocks '
                'synchronised?' % (-age * 1e-9, limit_ns * 1e-9))
    return None


class InputRate:
    """Joint states that keep coming far slower than the driver publishes them: a relay, not the driver.

    franka.launch.py, for one, relays the broadcaster's ``franka/joint_states``
    on ``joint_states`` at 30 Hz, restamped and repeating its last values: a node
    on the relay commands at 30 Hz instead of 1 kHz, and its watchdog never sees
    a stalled driver. :meth:`judge` takes the count of joint states of each
    diagnostics period; a rate below ``fraction`` of ``expected_hz`` in two
    periods in a row (the first period of a stream is partial) makes ``low``
    true, and the first such judgement returns the warning's text (later ones
    None). A period without joint states is the watchdog's case, not this one.

    Args:
        expected_hz: the driver's publishing rate [Hz] (0: no check).
        fraction: the lowest accepted share of it.
    """

    def __init__(self, expected_hz, fraction=0.5):
        self.expected_hz = float(expected_hz)
        self.fraction = float(fraction)
        self.rate_hz = 0.0          # the latest period's rate [Hz]
        self.low = False            # slow in the latest two periods
        self.warned = False
        self._slow_before = False

    def judge(self, count, period_s):
        """Count ``count`` joint states over ``period_s`` [s]: the warning's text the first time the rate is
        low, else None."""
        self.rate_hz = count / period_s if period_s > 0 else 0.0
        slow = bool(self.expected_hz) and count > 0 and self.rate_hz < self.fraction * self.expected_hz
        self.low = slow and self._slow_before
        self._slow_before = slow
        if not self.low or self.warned:
            return None
        self.warned = True
        return ('joint states arrive at %.1f Hz, less than half of the driver\'s %g Hz '
                '(expected_joint_state_rate): is joint_states a relay (franka.launch.py relays '
                'franka/joint_states at 30 Hz) or a throttled topic? Commands follow the joint states, '
                'and a relay that repeats its last state hides a stalled driver from the watchdog'
                % (self.rate_hz, self.expected_hz))
