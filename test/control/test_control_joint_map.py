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


# --- joints the main stream lacks: held joints and extra topics (control/joint_sources.py) -----------------

ARM7 = tuple('fr3_joint%d' % k for k in range(1, 8))
WITH_FINGER = ARM7 + ('fr3_finger_joint1',)     # fr3_finger_joint2 mimics joint1: not a model joint


def test_a_held_joint_is_known_at_its_position_and_no_message_changes_it():
    m = JointStateMerger(NAMES)
    assert m.hold({'j4': 0.04, 'not_a_joint': 1.0}) == ['not_a_joint']
    assert m.missing() == ['j1', 'j2', 'j3']
    # The three others in model order complete the state; it is not taken for a whole message (identity).
    assert m.update(['j1', 'j2', 'j3'], d([1, 2, 3]), d([4, 5, 6]))
    np.testing.assert_array_equal(m.q, [1, 2, 3, 0.04])
    np.testing.assert_array_equal(m.qd, [4, 5, 6, 0])
    assert list(m.last_indices()) == [0, 1, 2]
    m.update(list(NAMES), d([7, 8, 9, 10]), d([1, 1, 1, 1]))
    np.testing.assert_array_equal(m.q, [7, 8, 9, 0.04])       # the message's j4 is not taken
    assert m.qd[3] == 0.0
    m.reset()                                                # a timeout forgets the rest, not the held joint
    assert m.missing() == ['j1', 'j2', 'j3'] and m.q[3] == 0.04 and m.known[3]


def test_holding_the_same_joints_again_keeps_the_state_and_a_joint_held_no_more_is_unknown():
    m = JointStateMerger(NAMES)
    m.hold({'j4': 0.0})
    m.update(['j1', 'j2', 'j3'], d([1, 2, 3]))
    m.hold({'j4': 0.0})                                      # a new model of the same joints (a payload)
    assert m.ready
    m.hold({})
    assert not m.ready and m.missing() == ['j4']
    with pytest.raises(JointMapError, match='j4'):
        m.hold({'j4': float('nan')})


def test_a_held_last_joint_and_an_arm_message_in_order_is_no_identity():
    """7 arm joints in model order, the 8th held: the message sets 7 of 8 (an identity layout would write 7 values
    into the 8 of q)."""
    m = JointStateMerger(WITH_FINGER)
    m.hold({'fr3_finger_joint1': 0.02})
    assert m.update(list(ARM7), d(range(7)))
    np.testing.assert_array_equal(m.q, list(range(7)) + [0.02])


def test_the_extra_topic_completes_the_state_and_its_joints_get_the_longer_limit():
    from robot_dynamics.control.joint_sources import JointSources
    from robot_dynamics.control.staleness import JointStaleness
    ms = 1_000_000
    m, s = JointStateMerger(WITH_FINGER), JointStaleness(WITH_FINGER, 100 * ms)
    sources = JointSources({}, ['franka_gripper/joint_states'], 500 * ms)
    sources.attach(m, s)
    assert not m.update(list(ARM7), d(range(7)))
    s.touch_merged(m, 0)
    fingers = ['fr3_finger_joint1', 'fr3_finger_joint2']
    assert sources.merge(m, s, fingers, d([0.03, 0.03]), d([0, 0]), d([0, 0]), 0) is None
    assert m.ready and m.q[7] == 0.03
    assert m.update(list(ARM7), d(range(7)))
    s.touch_merged(m, 300 * ms)
    assert s.stale(300 * ms) is None                          # the finger 0.3 s old: within its 0.5 s
    m.update(list(ARM7), d(range(7)))
    s.touch_merged(m, 550 * ms)
    text = s.stale(600 * ms)                                  # the finger 0.6 s old, the arm 0.05 s
    assert 'fr3_finger_joint1' in text and 'extra_joint_state_timeout (0.500 s)' in text, text
    # The arm silent for 0.2 s while the gripper keeps coming: every main-stream joint is stale.
    sources.merge(m, s, fingers, d([0.03, 0.03]), (), (), 700 * ms)
    assert s.all_stale(751 * ms) and 'joint_timeout (0.100 s)' in s.stale(751 * ms)
    assert 'appears twice' in sources.merge(m, s, fingers * 2, d([0] * 4), (), (), 0)


def test_missing_joints_give_one_warning_naming_them_and_the_parameters():
    from robot_dynamics.control.joint_sources import MISSING_GRACE_NS, JointSources
    m = JointStateMerger(WITH_FINGER)
    sources = JointSources({}, [], 500_000_000)
    m.update(list(ARM7), d(range(7)))
    texts = [sources.waiting(m, t, '/franka/joint_states') for t in range(0, 3 * MISSING_GRACE_NS, 1_000_000)]
    said = [t for t in texts if t]
    assert len(said) == 1 and texts.index(said[0]) == MISSING_GRACE_NS // 1_000_000
    for word in ('fr3_finger_joint1', 'extra_joint_state_topics', 'held_joints', 'held_positions',
                 '/franka/joint_states'):
        assert word in said[0], said[0]
    assert 'fr3_joint1' not in said[0]


def test_held_positions_parameters_are_checked():
    from robot_dynamics.control.joint_sources import held_positions
    assert held_positions(['a', 'b'], [0.0, 0.5]) == {'a': 0.0, 'b': 0.5}
    with pytest.raises(ValueError, match="1 values for the 2 joints"):
        held_positions(['a', 'b'], [0.0])
    with pytest.raises(ValueError, match='more than once'):
        held_positions(['a', 'a'], [0.0, 0.0])
