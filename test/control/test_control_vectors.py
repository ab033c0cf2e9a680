"""The torque loop's compiled checks: the clamp of TorqueLimiter and the joint map's finiteness tests,
on every array a message or a law gives (contiguous or strided, read-only views of received bytes);
the torque-rate limit's one pass (within_step) against numpy's test it replaced."""
import math

import numpy as np
import pytest

from robot_dynamics.algorithms.vectors import CLAMPED, NOT_FINITE, WITHIN, all_finite, clamp, copy_finite, within_step

LIMIT = np.array([10.0, 5.0, math.inf])


def test_clamp_keeps_values_within_and_clamps_both_signs_to_the_limits():
    tau = np.array([-10.0, 5.0, 1e300])                 # on the limits, and no limit on the last joint
    assert clamp(tau, LIMIT) == WITHIN and tau.tolist() == [-10.0, 5.0, 1e300]
    tau = np.array([12.0, -7.5, -3.0])
    assert clamp(tau, LIMIT) == CLAMPED and tau.tolist() == [10.0, -5.0, -3.0]


@pytest.mark.parametrize('bad', [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize('where', [0, 2])
def test_clamp_refuses_a_non_finite_torque_and_leaves_it_untouched(bad, where):
    tau = np.array([50.0, -50.0, 1.0])                  # over the limits: a clamp would change them
    tau[where] = bad
    before = tau.copy()
    assert clamp(tau, LIMIT) == NOT_FINITE
    np.testing.assert_array_equal(tau, before)


def test_clamp_works_on_a_strided_view_in_place():
    buf = np.array([20.0, 0.0, -20.0, 0.0, 2.0, 0.0])
    assert clamp(buf[::2], LIMIT) == CLAMPED
    assert buf.tolist() == [10.0, 0.0, -5.0, 0.0, 2.0, 0.0]


def views():
    """The same three values as: an array, a read-only view of bytes, a strided view, both."""
    x = np.array([0.5, -1.0, 2.0])
    raw = np.frombuffer(x.tobytes(), dtype=np.float64)
    wide = np.repeat(x, 2)
    strided_ro = np.frombuffer(wide.tobytes(), dtype=np.float64)[::2]
    return [x, raw, wide[::2], strided_ro]


@pytest.mark.parametrize('k', range(4))
def test_all_finite_and_copy_finite_on_every_kind_of_vector(k):
    x = views()[k]
    assert all_finite(x)
    dst = np.zeros(3)
    assert copy_finite(x, dst) and dst.tolist() == [0.5, -1.0, 2.0]


@pytest.mark.parametrize('bad', [math.nan, math.inf, -math.inf])
def test_a_non_finite_value_is_found_anywhere_and_copy_finite_writes_nothing(bad):
    for where in range(3):
        x = np.array([0.5, -1.0, 2.0])
        x[where] = bad
        assert not all_finite(x)
        dst = np.full(3, 7.0)
        assert not copy_finite(x, dst) and dst.tolist() == [7.0, 7.0, 7.0]


def test_within_step_decides_as_numpys_test_and_keeps_the_torque_only_then():
    """``all(|tau - last| <= rate * dt)``, each rate one per joint or one for all; then last = tau."""
    rng = np.random.default_rng(34)
    for _ in range(2000):
        last = rng.normal(0.0, 5.0, 7)
        tau = last + rng.normal(0.0, 1.0, 7) * rng.choice([0.0, 1e-3, 1.0], 7)
        rate = rng.uniform(0.0, 2000.0, rng.choice([1, 7]))
        dt = rng.choice([0.0, 1e-3, 2.5e-4, rng.uniform(0, 0.1)])
        if rng.random() < 0.1:
            tau[rng.integers(7)] = rng.choice([math.nan, math.inf, -math.inf])
        expected = bool((np.abs(tau - last) <= (rate[0] if len(rate) == 1 else rate) * dt).all())
        before = last.copy()
        assert within_step(tau, last, rate, dt) == expected
        np.testing.assert_array_equal(last, tau if expected else before)


def test_within_step_on_the_boundary_and_with_lengths_that_differ():
    last = np.array([1.0, 2.0])
    assert within_step(np.array([1.5, 1.5]), last, np.array([500.0]), 1e-3)      # |0.5| <= 0.5 both
    assert last.tolist() == [1.5, 1.5]
    for tau, rate in ((np.array([1.5, 1.5, 1.5]), np.array([500.0])), (np.array([1.5, 1.5]), np.ones(3))):
        assert not within_step(tau, last, rate, 1.0) and last.tolist() == [1.5, 1.5]
