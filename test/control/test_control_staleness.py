"""Per-joint staleness (robot_dynamics.control.staleness) with the joint-state merger, and the input rate check, no DDS.

Times are integers [ns]; the limit is 50 ms.
"""
import numpy as np

from robot_dynamics.control.joint_map import JointMapError, JointStateMerger
from robot_dynamics.control.staleness import InputRate, JointStaleness, state_age_problem

ARM = ['j1', 'j2', 'j3']
GRIPPER = ['finger']
NAMES = ARM + GRIPPER
MS = 1_000_000                       # [ns]
LIMIT = 50 * MS


def merge(merger, staleness, names, now_ns):
    """What dynamics_node does per message: merge, then stamp the joints the message set."""
    ready = merger.update(names, [0.1] * len(names), [])
    staleness.touch_merged(merger, now_ns)
    return ready


def test_a_subset_message_updates_only_its_joints():
    merger, s = JointStateMerger(NAMES), JointStaleness(NAMES, LIMIT)
    merge(merger, s, ARM, 0)
    merge(merger, s, GRIPPER, 10 * MS)
    assert list(s.stamp) == [0, 0, 0, 10 * MS], 'arm stamped at 0, gripper at 10 ms; got %s' % s.stamp
    # The gripper keeps coming, the arm stops: stale once the arm is older than the limit.
    for t in range(20, 51, 10):
        merge(merger, s, GRIPPER, t * MS)
    assert s.stale(50 * MS) is None, 'the arm is exactly 50 ms old: not stale yet'
    text = s.stale(50 * MS + 1)
    assert text is not None, 'the arm is older than 50 ms: expected stale'
    assert 'joints j1, j2, j3' in text and '0.050 s old' in text and 'finger' not in text, text
    assert not s.all_stale(60 * MS + 1), 'the gripper is 10 ms old: not every joint is stale'
    assert s.all_stale(100 * MS + 1), 'every joint older than 50 ms'
    k, age = s.oldest(80 * MS)
    assert NAMES[k] in ARM and age == 80 * MS, (k, age)


def test_a_message_of_all_joints_in_model_order_stamps_all():
    merger, s = JointStateMerger(NAMES), JointStaleness(NAMES, LIMIT)
    merge(merger, s, NAMES, 7 * MS)
    assert np.all(s.stamp == 7 * MS), s.stamp
    assert s.stale(57 * MS) is None and s.stale(57 * MS + 1) is not None


def test_a_never_received_joint_is_stale_and_named():
    merger, s = JointStateMerger(NAMES), JointStaleness(NAMES, LIMIT)
    merge(merger, s, ARM, 0)
    text = s.stale(1 * MS)
    assert text == 'joint finger: no position received', text


def test_unknown_names_and_rejected_messages_stamp_nothing():
    merger, s = JointStateMerger(NAMES), JointStaleness(NAMES, LIMIT)
    merge(merger, s, NAMES, 0)
    merge(merger, s, ['other_robot_joint'], 40 * MS)       # names no joint of ours
    try:
        merger.update(ARM, [float('nan')] * 3, [])           # rejected: not merged, not stamped
    except JointMapError:
        pass
    else:
        raise AssertionError('a NaN position must be rejected')
    assert np.all(s.stamp == 0), 'only the first message stamps; got %s' % s.stamp
    assert s.stale(60 * MS) is not None


def test_state_age_refuses_old_ahead_and_unstamped_states_only():
    """max_state_age 0.1 s at t = 100 s: the limit itself passes, one ns more does not, either way."""
    now, limit = 100_000_000_000, 100_000_000
    for stamp in (now, now - limit, now + limit):
        assert state_age_problem(stamp, now, limit) is None, stamp
    assert state_age_problem(now - limit - 1, now, limit) == \
        'stamped 0.100 s ago, more than max_state_age (0.100 s)'
    assert state_age_problem(now - 2_500_000_000, now, limit) == \
        'stamped 2.500 s ago, more than max_state_age (0.100 s)'
    assert state_age_problem(now + 400_000_000, now, limit) == (
        "stamped 0.400 s ahead of this node's clock, more than max_state_age (0.100 s): are the clocks "
        'synchronised?')
    assert state_age_problem(0, now, limit) == 'it has no stamp (max_state_age needs stamped joint states)'


def test_input_rate_warns_once_after_two_slow_periods_and_never_for_a_partial_or_silent_one():
    check = InputRate(1000.0)
    assert check.judge(1000, 1.0) is None and not check.low             # the driver's rate
    assert check.judge(30, 1.0) is None and not check.low               # one slow period: a stream's start
    text = check.judge(30, 1.0)                                          # two in a row: a relay
    assert check.low and abs(check.rate_hz - 30.0) < 1e-12
    assert '30.0 Hz' in text and '1000 Hz' in text and 'relay' in text
    assert check.judge(30, 1.0) is None and check.low                   # warned once, still low
    assert check.judge(0, 1.0) is None and not check.low                # silence is the watchdog's case
    assert check.judge(1000, 1.0) is None and not check.low


def test_input_rate_limit_is_half_the_expected_rate_and_zero_turns_it_off():
    check = InputRate(1000.0)
    check.judge(500, 1.0)
    assert check.judge(500, 1.0) is None and not check.low               # exactly half: accepted
    check.judge(499, 1.0)
    assert check.judge(499, 1.0) is not None and check.low               # one message less: slow
    off = InputRate(0.0)
    for _ in range(3):
        assert off.judge(1, 1.0) is None and not off.low
