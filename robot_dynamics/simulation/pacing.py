"""Pacing of a fixed-step simulation against the wall clock (no ROS needed).

The simulator node runs its physics from a wall-clock timer. Each tick asks
:class:`Pacer` how many steps of ``dt`` are due so that the simulated time
follows the wall time multiplied by the real-time factor: a late tick runs
the missed steps in one batch (catch-up), up to a bound; a longer lag is
dropped rather than made up, so that after a stall (a loaded machine, a
debugger) the simulation does not race ahead to catch up. The dropped time
and the number of such events are counted for /diagnostics.
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
        self._wall0 = now
        self._steps0 = steps

    def due(self, now, steps):
        """Steps to run at wall time ``now`` [s] when ``steps`` are done (>= 0).

        If more than :attr:`max_batch` are due, returns ``max_batch``, drops
        the rest (counted) and counts from ``now`` again.
        """
        target = self._steps0 + math.floor((now - self._wall0) * self.rate + 1e-9)
        n = target - steps
        if n <= self.max_batch:
            return max(n, 0)
        self.lag_events += 1
        self.dropped_steps += n - self.max_batch
        self.anchor(now, steps + self.max_batch)
        return self.max_batch
