"""bench/latency_trace.py: the sequence number and stamp read from a serialized JointState, and the split of
each message's latency into in, callback and out (a synthetic trace whose parts are known)."""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'bench'))
import latency_trace as LT  # noqa: E402


def test_sequence_number_and_stamp_come_from_the_serialized_message():
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    msg = JointState(name=['a', 'b'], position=[1.0, 2.0])
    msg.header.frame_id = '12345'
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1795908000, 987654321
    from robot_dynamics.ros.cdr import JointStateReader
    assert LT.seq_and_stamp(JointStateReader(), serialize_message(msg)) == (12345, 1795908000 * 10**9 + 987654321)


def test_each_latency_splits_into_in_callback_and_out(tmp_path):
    rng = np.random.default_rng(3)
    n, first = 2000, 100
    stamp = 10**18 + np.arange(n, dtype=np.int64) * 1_000_000
    t_in = rng.integers(50_000, 150_000, n)                      # [ns]
    t_cb = rng.integers(20_000, 60_000, n)
    t_out = rng.integers(80_000, 120_000, n)
    t_in[1500] = t_cb[1700] = t_out[1900] = 5_000_000            # three late messages, one part each
    trace = LT.Trace(tmp_path, 'dynamics_node')
    for k in range(n):
        trace.message(k, int(stamp[k]), int(stamp[k] + t_in[k]), int(stamp[k] + t_in[k] + t_cb[k]))
    # A timer callback ran while message 1500 waited, none during the others of the top 1 %.
    trace.others.append((int(stamp[1500]) + 1000, int(stamp[1500]) + 4_000_000, 'on_watchdog'))
    trace.save()
    seq = np.arange(n)
    latency = (t_in + t_cb + t_out) * 1e-9
    got = LT.decompose(tmp_path, 'dynamics_node', seq, latency, first)
    measured = slice(first, None)
    for part, x in (('in', t_in), ('callback', t_cb), ('out', t_out), ('latency', t_in + t_cb + t_out)):
        for p, q in (('p50', 50), ('p99', 99)):
            want = np.percentile(x[measured] * 1e-3, q)
            assert abs(got['%s_%s_us' % (part, p)] - want) < 1e-3 * max(1.0, want), (part, p)
    top = np.sort(latency[measured])[-int(0.01 * (n - first)):]
    assert 1 / len(top) - 1e-9 <= got['tail_during_other_callbacks'] <= 1 / len(top) + 1e-9
    assert got['other_callbacks'] == 1
    assert LT.decompose(tmp_path, 'relay', seq, latency, first) is None      # no trace of that target


def test_each_command_pairs_with_the_torque_after_it():
    """bench/ros_latency.py's CommandPairing: a command's latency is its receipt minus the stamp of the torque
    that follows it; a torque after no command, or after two (one of them another torque's), stays unpaired."""
    import ros_latency
    pairing = ros_latency.CommandPairing(5)
    stamp = 10**18
    pairing.command(stamp + 250_000)
    pairing.torque(0, stamp)                            # paired: 250 us
    pairing.torque(1, stamp + 1_000_000)                # no command before it
    pairing.command(stamp + 2_300_000)
    pairing.command(stamp + 3_200_000)
    pairing.torque(2, stamp + 3_000_000)                # two commands: which is its own is unknown
    pairing.command(stamp + 4_400_000)
    pairing.torque(3, stamp + 4_000_000)                # paired: 400 us
    pairing.command(stamp + 5_100_000)
    pairing.torque(7, stamp + 5_000_000)                # past the array: counted, not kept
    np.testing.assert_allclose(pairing.lat[[0, 3]], [250e-6, 400e-6], rtol=0, atol=1e-12)
    assert np.isnan(pairing.lat[[1, 2, 4]]).all()
