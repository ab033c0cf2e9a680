"""robot_dynamics.control.watchdog without DDS: when the watchdog times out, and what it asks for."""
import pytest

from robot_dynamics.control.staleness import JointStaleness
from robot_dynamics.control.watchdog import HOLD, Timeout, Watchdog

MS = 1_000_000      # [ns]


def test_its_period_is_a_tenth_of_the_shorter_limit_within_1_to_50_ms():
    assert Watchdog(100 * MS, 100 * MS, 'zero').period == pytest.approx(0.01)
    assert Watchdog(100 * MS, 30 * MS, 'zero').period == pytest.approx(0.003)
    assert Watchdog(2000 * MS, 2000 * MS, 'zero').period == pytest.approx(0.05)
    assert Watchdog(5 * MS, 5 * MS, 'zero').period == pytest.approx(0.001)


def test_an_unknown_on_timeout_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="zero, hold, stop.*'pause'"):
        Watchdog(MS, MS, 'pause')


def test_silent_joint_states_time_out_once_after_the_timeout():
    wd = Watchdog(100 * MS, 100 * MS, 'zero', now_ns=0)
    assert wd.check(500 * MS, 0) is None                # nothing published yet: nothing to time out
    wd.streaming = True                                 # a torque went out ...
    assert wd.check(10 * MS, 1) is None                 # ... and was a sign of life at 10 ms
    assert wd.check(109 * MS, 1) is None                # 99 ms of silence
    got = wd.check(110 * MS, 1)
    assert got == Timeout('zero', None, pytest.approx(0.1))
    assert wd.timed_out and not wd.streaming and wd.timeouts == 1
    assert wd.check(300 * MS, 1) is None                # once
    assert wd.resume() and not wd.timed_out
    assert not wd.resume()


def test_hold_asks_for_the_last_command_at_every_call_while_timed_out():
    wd = Watchdog(100 * MS, 100 * MS, 'hold', now_ns=0)
    wd.streaming = True
    assert wd.check(100 * MS, 0).action == 'hold'
    assert [wd.check(t * MS, 0) for t in (110, 120)] == [HOLD, HOLD]


def test_a_stale_joint_times_out_while_other_joints_keep_coming():
    staleness = JointStaleness(('a', 'b'), 50 * MS)
    staleness.touch(slice(None), 0)                     # both at 0
    wd = Watchdog(100 * MS, 50 * MS, 'stop', now_ns=0)
    wd.streaming = True
    staleness.touch([0], 40 * MS)
    assert wd.check(40 * MS, 1, staleness) is None      # b 40 ms old
    staleness.touch([0], 60 * MS)
    got = wd.check(60 * MS, 2, staleness)               # a keeps coming, b is 60 ms old
    assert got.action == 'stop' and 'joint b' in got.stale and '0.060 s' in got.stale
    assert wd.cause == got.stale


def test_when_no_joint_comes_at_all_it_is_the_silent_case():
    staleness = JointStaleness(('a', 'b'), 100 * MS)
    staleness.touch(slice(None), 0)
    wd = Watchdog(100 * MS, 100 * MS, 'zero', now_ns=0)
    wd.streaming = True
    got = wd.check(150 * MS, 0, staleness)
    assert got.stale is None and got.silence == pytest.approx(0.15)


def test_restart_forgets_a_timeout_and_counts_from_now():
    wd = Watchdog(100 * MS, 100 * MS, 'zero', now_ns=0)
    wd.streaming = True
    wd.check(200 * MS, 0)
    wd.restart(1000 * MS, 5)
    assert not wd.timed_out and not wd.streaming
    wd.streaming = True
    assert wd.check(1050 * MS, 5) is None and wd.check(1100 * MS, 5).action == 'zero'


def test_its_own_timing_for_diagnostics():
    wd = Watchdog(100 * MS, 100 * MS, 'zero')
    for t in (1.0, 1.01, 1.05, 1.06):
        wd.tick(t)
    assert wd.calls == 4 and wd.gap_max == pytest.approx(0.04)
    wd.reset_period()
    assert wd.calls == 0 and wd.gap_max == 0.0
