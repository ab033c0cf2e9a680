"""robot_dynamics.control.joint_map without DDS: name mapping, merging, errors."""
import array

import numpy as np
import pytest

from robot_dynamics.control.joint_map import (JointMapError, JointStateMerger, reorder_indices,
                                          state_from_names)

NAMES = ('j1', 'j2', 'j3', 'j4')


def d(values):
    return array.array('d', values)               # what rclpy messages hold


def test_full_message_in_model_order():
    m = JointStateMerger(NAMES)
    assert not m.ready and m.missing() == list(NAMES)
    assert m.update(list(NAMES), d([1, 2, 3, 4]), d([5, 6, 7, 8]))
    np.testing.assert_array_equal(m.q, [1, 2, 3, 4])
    np.testing.assert_array_equal(m.qd, [5, 6, 7, 8])


def test_reordered_names_map_by_name_not_position():
    m = JointStateMerger(NAMES)
    assert m.update(['j3', 'j1', 'j4', 'j2'], d([3, 1, 4, 2]), d([30, 10, 40, 20]))
    np.testing.assert_array_equal(m.q, [1, 2, 3, 4])
    np.testing.assert_array_equal(m.qd, [10, 20, 30, 40])


def test_partial_messages_merge_and_ready_only_when_complete():
    m = JointStateMerger(NAMES)
    assert not m.update(['j2', 'gripper'], d([2, 0.04]), d([])) and m.missing() == ['j1', 'j3', 'j4']
    assert not m.update(['j1'], d([1]), d([0.5]))
    assert m.update(['j4', 'j3'], [4.0, 3.0], [])
    np.testing.assert_array_equal(m.q, [1, 2, 3, 4])
    np.testing.assert_array_equal(m.qd, [0.5, 0, 0, 0])
    # A later partial message updates only its joints; no velocity -> zero.
    m.update(['j1'], d([1.5]), d([]))
    np.testing.assert_array_equal(m.q, [1.5, 2, 3, 4])
    np.testing.assert_array_equal(m.qd, [0, 0, 0, 0])


def test_messages_without_model_joints_are_ignored():
    m = JointStateMerger(NAMES)
    assert not m.update(['other'], d([1.0]))
    assert not m.known.any()


def test_errors_leave_the_state_unchanged():
    m = JointStateMerger(NAMES)
    m.update(list(NAMES), d([1, 2, 3, 4]))
    with pytest.raises(JointMapError, match='position has 3 values for 4 names'):
        m.update(list(NAMES), d([1, 2, 3]))
    with pytest.raises(JointMapError, match='velocity has 2 values for 4 names'):
        m.update(list(NAMES), d([1, 2, 3, 4]), d([1, 2]))
    with pytest.raises(JointMapError, match='non-finite position for joint.*j3'):
        m.update(list(NAMES), d([9, 9, float('nan'), 9]))
    with pytest.raises(JointMapError, match='non-finite velocity for joint.*j2'):
        m.update(['j2', 'j1'], d([9, 9]), d([float('inf'), 0]))
    with pytest.raises(JointMapError, match="'j1' appears twice"):
        m.update(['j1', 'j1'], d([9, 9]))
    np.testing.assert_array_equal(m.q, [1, 2, 3, 4])
    # A non-finite value of a joint the model does not have is not our concern.
    assert m.update(['j1', 'x'], d([1, float('nan')]))


def test_layout_is_built_once_per_name_list_and_cache_is_bounded():
    m = JointStateMerger(NAMES)
    for k in range(100):
        m.update(['j2', 'j1'] if k % 2 else ['j4', 'j3'], d([k, k]))   # new list objects each time
    assert len(m._layouts) == 2
    for k in range(200):
        try:
            m.update(['garbage%d' % k], d([0.0]))
        except JointMapError:
            pass
    assert len(m._layouts) <= 32


def test_long_name_lists_are_not_cached_and_lengths_are_checked_first():
    m = JointStateMerger(NAMES)
    long_names = ['x%d' % k for k in range(5000)] + list(NAMES)
    assert m.update(long_names, d([0.0] * 5000 + [1, 2, 3, 4]))
    np.testing.assert_array_equal(m.q, [1, 2, 3, 4])
    assert m._layouts == {} and m._last_names is None         # 5,004 names: mapped, not kept
    with pytest.raises(JointMapError, match='position has 7 values for 100000 names'):
        m.update(['y%d' % k for k in range(100_000)], d([0.0] * 7))
    assert m._layouts == {}


def test_updates_counts_only_messages_that_set_a_model_joint():
    m = JointStateMerger(NAMES)
    m.update(list(NAMES), d([1, 2, 3, 4]))
    m.update(['j2'], d([5]))
    assert m.updates == 2
    m.update([], d([]))                                          # names no model joint
    m.update(['gripper'], d([0.1]))
    with pytest.raises(JointMapError):
        m.update(['j1'], d([float('nan')]))                      # rejected
    assert m.updates == 2


def test_reset_forgets_the_state():
    m = JointStateMerger(NAMES)
    m.update(list(NAMES), d([1, 2, 3, 4]))
    m.reset()
    assert not m.ready and not m.known.any() and not m.q.any()


def test_state_from_names():
    q, qd, a = state_from_names(NAMES, ['j4', 'x', 'j1', 'j2', 'j3'], [4, 0, 1, 2, 3], [], [[40, 0, 10, 20, 30]],
                                what=('position', 'velocity', 'acceleration'))
    np.testing.assert_array_equal(q, [1, 2, 3, 4])
    np.testing.assert_array_equal(qd, 0)
    np.testing.assert_array_equal(a, [10, 20, 30, 40])
    with pytest.raises(JointMapError, match='missing joint.*j4'):
        state_from_names(NAMES, ['j1', 'j2', 'j3'], [1, 2, 3])
    with pytest.raises(JointMapError, match='named twice: j1'):
        state_from_names(NAMES, ['j1', 'j1', 'j2', 'j3', 'j4'], [1, 1, 2, 3, 4])
    with pytest.raises(JointMapError, match='acceleration has 1 values for 4 names'):
        state_from_names(NAMES, NAMES, [1, 2, 3, 4], [], [[1]], what=('position', 'velocity', 'acceleration'))
    with pytest.raises(JointMapError, match='non-finite position for joint.*j2'):
        state_from_names(NAMES, NAMES, [1, float('nan'), 3, 4])


def test_reorder_indices():
    idx = reorder_indices(NAMES, ['j4', 'j1'])
    np.testing.assert_array_equal(np.array([10, 20, 30, 40])[idx], [40, 10])
    with pytest.raises(JointMapError, match="'gripper'.*not in the model"):
        reorder_indices(NAMES, ['j1', 'gripper'])
    with pytest.raises(JointMapError, match='j1 more than once'):
        reorder_indices(NAMES, ['j1', 'j1'])
