"""Pacing of a fixed-step simulation against the wall clock (no ROS needed).

The simulator node runs its physics from a wall-clock timer. Each tick asks
:class:`Pacer` how many steps of ``dt`` are due so that the simulated time
follows the wall time multiplied by the real-time factor: a late tick runs
the missed steps in one batch (catch-up), up to a bound; a longer lag is
dropped rather than made up, so that after a stall (a loaded machine, a
debugger) the simulation does not race ahead to catch up. The dropped time
and the number of such events are counted for /diagnostics.

:class:`StateStamps` gives each state the wall-clock time it stands for (on
the system clock), so that the states of a catch-up batch are stamped
``dt / real_time_factor`` apart, in the past, rather than all at once.
"""
import math
from ..errors import InputError

#: Shortest timer period [s]: an rclpy timer faster than 1 kHz costs more than it gains.
MIN_TICK = 0.001
#: Longest timer period [s], so that a slow simulation still answers quickly.
MAX_TICK = 0.01


def tick_period(dt, real_time_factor):
    """Period [s] of the wall-clock timer that drives the physics.

    One physics step per tick when it fits in [MIN_TICK, MAX_TICK]
    (``dt / real_time_factor``), else the nearest bound (then a tick runs
    several steps, or none). As fast as possible (factor 0): MIN_TICK.
    """
    if real_time_factor <= 0:
        return MIN_TICK
    return min(max(dt / real_time_factor, MIN_TICK), MAX_TICK)


class Pacer:
    """Physics steps due at a wall-clock time.

    Args:
        dt: physics step [s].
        real_time_factor: simulated seconds per wall-clock second, > 0.
        catch_up_limit: the longest wall-clock lag [s] that is made up for
            by running extra steps; the steps beyond it are dropped (the
            simulated time then falls behind for good, and the achieved
            real-time factor shows it).

    Attributes:
        anchor_time, anchor_steps: the anchor (:meth:`anchor`): ``anchor_steps``
            were done at wall time ``anchor_time`` [s]; step ``k`` is due at
            ``anchor_time + (k - anchor_steps) / rate``.
        max_batch: the most steps one call of :meth:`due` returns
            (``ceil(catch_up_limit * real_time_factor / dt)``, at least 1).
        lag_events: how often steps were dropped.
        dropped_steps: how many steps were dropped in total.
    """

    def __init__(self, dt, real_time_factor, catch_up_limit):
        if not (dt > 0 and real_time_factor > 0 and catch_up_limit > 0):
            raise InputError('dt, real_time_factor and catch_up_limit must be > 0, got %r, %r, %r'
                             % (dt, real_time_factor, catch_up_limit))
        self.rate = real_time_factor / dt                 # steps per wall-clock second
        self.max_batch = max(1, math.ceil(catch_up_limit * self.rate - 1e-9))
        self.lag_events = 0
        self.dropped_steps = 0
        self.anchor(0.0, 0)

    def anchor(self, now, steps):
        """Count from here: ``steps`` steps done at wall time ``now`` [s]
        (at start, on resume after a pause, after a reset)."""
        self.anchor_time = now
        self.anchor_steps = steps

    def due(self, now, steps):
        """Steps to run at wall time ``now`` [s] when ``steps`` are done (>= 0).

        If more than :attr:`max_batch` are due, returns ``max_batch``, drops
        the rest (counted) and counts from ``now`` again.
        """
        target = self.anchor_steps + math.floor((now - self.anchor_time) * self.rate + 1e-9)
        n = target - steps
        if n <= self.max_batch:
            return max(n, 0)
        self.lag_events += 1
        self.dropped_steps += n - self.max_batch
        self.anchor(now, steps + self.max_batch)
        return self.max_batch


class StateStamps:
    """The system-clock time [integer ns] each state of a paced simulation stands for.

    The state after ``steps`` steps stands for the wall time the pacer made
    them due at (``anchor_time + (steps - anchor_steps) / rate``), whatever
    time it was computed and published: a catch-up batch's states are stamped
    ``dt / real_time_factor`` apart (to the ns), in the past; when the pacer
    drops steps or is anchored again (a lag event, a resume, a reset) the
    stamps go on from the new anchor. The pacer's ``clock`` [s] (any clock) is
    converted to the ``system_clock`` [ns] (``time.time_ns``) with their
    offset, measured once at each anchor, so that the stamps of one anchor
    differ by whole steps. A stamp is never before the previous one (a system
    clock set back at an anchor repeats the last stamp until it is passed).

    Args:
        pacer: the :class:`Pacer`.
        clock: the pacer's wall clock [s] (``time.perf_counter``).
        system_clock: the clock of the stamps [ns] (``time.time_ns``).
    """

    def __init__(self, pacer, clock, system_clock):
        self.pacer, self.clock, self.system_clock = pacer, clock, system_clock
        self._anchor = None         # (anchor_time, anchor_steps) the offset was measured for
        self._anchor_ns = 0         # the anchor on the system clock [ns]
        self._last_ns = 0           # the last stamp given

    def at(self, steps):
        """The stamp [ns] of the state after ``steps`` steps (never before the previous one given)."""
        pacer = self.pacer
        anchor = pacer.anchor_time, pacer.anchor_steps
        if anchor != self._anchor:
            self._anchor = anchor
            self._anchor_ns = round(pacer.anchor_time * 1e9) + clock_offset_ns(self.clock, self.system_clock)
        ns = self._anchor_ns + round((steps - pacer.anchor_steps) * 1e9 / pacer.rate)
        self._last_ns = max(ns, self._last_ns)
        return self._last_ns


def clock_offset_ns(clock, system_clock, tries=3):
    """``system_clock()`` [ns] minus ``clock()`` [s] in ns at the same instant.

    Each try reads clock, system clock, clock; the narrowest of ``tries``
    brackets counts (its middle), so that a thread preempted between two
    readings does not shift the offset.
    """
    best = None
    for _ in range(tries):
        t1 = clock()
        ns = system_clock()
        t2 = clock()
        if best is None or t2 - t1 < best[0]:
            best = t2 - t1, ns - round((t1 + t2) * 5e8)
    return best[1]
