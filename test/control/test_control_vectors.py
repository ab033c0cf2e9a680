"""The torque loop's compiled checks: the clamp of TorqueLimiter and the joint map's finiteness tests,
on every array a message or a law gives (contiguous or strided, read-only views of received bytes)."""
import math

import numpy as np
import pytest

from robot_dynamics.algorithms.vectors import CLAMPED, NOT_FINITE, WITHIN, all_finite, clamp, copy_finite

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
