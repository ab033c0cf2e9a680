"""robot_dynamics.control.statistics without DDS: the counters and per-period values of diagnostics."""
import math

import pytest

from robot_dynamics.control.statistics import Listeners, Statistics
from robot_dynamics.control.torque_loop import WAITING, NoTorque


def test_each_kind_of_no_torque_has_its_counter():
    s = Statistics()
    for kind in ('bad', 'bad', 'stale', 'too_old', 'no_base', 'non_finite', 'no_effort', 'bad_effort'):
        s.refused(NoTorque(kind, 'x'))
    s.refused(WAITING)
    assert (s.n_bad, s.n_stale, s.n_too_old, s.n_no_base, s.n_nonfinite, s.n_no_effort, s.n_bad_effort) == \
        (2, 1, 1, 1, 1, 1, 1)
    s.refused(NoTorque('singular', 'no torque for this joint state: the loop is singular at q'))
    assert s.n_singular == 1 and s.last_singularity == 'the loop is singular at q'


def test_a_period_gives_rates_means_and_maxima_then_starts_again():
    s = Statistics(now=10.0)
    s.n_in = 100
    for dt in (0.001, 0.003):
        s.callback(dt)
    s.age(0.002)
    s.age(0.004)
    v = s.period(10.5)
    assert v['messages'] == 100 and v['input_rate'] == pytest.approx(200.0)
    assert v['callback_mean'] == pytest.approx(0.004 / 100) and v['callback_max'] == pytest.approx(0.003)
    assert v['latency_mean'] == pytest.approx(0.003) and v['latency_max'] == pytest.approx(0.004)
    s.n_in = 150
    v = s.period(11.0)
    assert v['messages'] == 50 and v['input_rate'] == pytest.approx(100.0)
    assert v['callback_max'] == 0.0 and math.isnan(v['latency_mean'])


def test_commands_to_no_subscriber_warn_once_after_a_second():
    listeners = Listeners()
    assert listeners.check(0.0, 0, 1) is None             # sending, nobody listens: from now
    assert listeners.check(0.5, 0, 2) is None and not listeners.unheard(0.5)
    assert listeners.check(1.2, 0, 3) == pytest.approx(1.2)
    assert listeners.unheard(1.2)
    assert listeners.check(1.3, 0, 4) is None             # once
    assert listeners.check(1.4, 1, 5) is None and not listeners.unheard(1.4)
    assert listeners.subscribers == 1 and listeners.due == pytest.approx(1.5)
