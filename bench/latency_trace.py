"""Per-message trace of bench/ros_latency.py (``--trace DIR``): where a joint state's latency goes.

A traced target records, for each joint state it takes (by the sequence number the bench's publisher
writes in ``header.frame_id``), the publisher's stamp and the wall-clock times [ns] at which its callback
started and ended, and the start and end of each of its other callbacks (dynamics_node's watchdog timer
and diagnostics); the bench's receiver records the receipt time of each output. From the three:

- *in*: stamp -> callback start (DDS to the target, its executor's wake-up),
- *callback*: the target's own work, its publishes included,
- *out*: callback end -> receipt here (DDS back, this process's executor),

per target and round (:func:`decompose`). Targets: ``python bench/latency_trace.py node DIR ...`` runs
dynamics_node (its main) with :meth:`DynamicsNode.on_joint_state`, ``on_watchdog`` and
``publish_diagnostics`` wrapped; bench/ros_relay.py ``--trace DIR`` wraps its relay callback. The
wrappers cost a few us a message (two clock reads and the header's parse).
"""
import atexit
import os
import pathlib
import sys
import time

import numpy as np

#: Sequence numbers recorded (the bench sends (warm-up + duration) x rate, 11,000 by default).
N_MAX = 100_000


class Trace:
    """The per-message records of one target process, saved as ``DIR/<label>_<pid>.npz`` at exit."""

    def __init__(self, directory, label):
        self.path = pathlib.Path(directory) / ('%s_%d.npz' % (label, os.getpid()))
        self.messages = np.zeros((N_MAX, 3), dtype=np.int64)     # stamp, callback start, end [ns]
        self.others = []                                          # (start, end [ns], callback name)
        atexit.register(self.save)

    def message(self, seq, stamp_ns, t0, t1):
        if 0 <= seq < N_MAX:
            self.messages[seq] = (stamp_ns, t0, t1)

    def save(self):
        np.savez(self.path, messages=self.messages,
                 others=np.array([o[:2] for o in self.others], dtype=np.int64).reshape(-1, 2),
                 names=np.array([o[2] for o in self.others], dtype=str))


def seq_and_stamp(reader, data):
    """(sequence number, stamp [ns]) of a serialized JointState whose frame_id is the bench's number, read by
    ``reader`` (robot_dynamics.ros.cdr.JointStateReader: imported by the traced node only, never the relay)."""
    msg = reader.read(data)
    return int(msg.frame_id), msg.sec * 1_000_000_000 + msg.nanosec


def trace_dynamics_node(directory):
    """Wrap dynamics_node's joint-state callback and its timers' callbacks with the trace."""
    from robot_dynamics.ros import dynamics_node
    from robot_dynamics.ros.cdr import JointStateReader
    trace, node_class, reader = Trace(directory, 'dynamics_node'), dynamics_node.DynamicsNode, JointStateReader()
    on_joint_state = node_class.on_joint_state

    def traced(self, data):
        t0 = time.time_ns()
        on_joint_state(self, data)
        t1 = time.time_ns()
        trace.message(*seq_and_stamp(reader, data), t0, t1)
    node_class.on_joint_state = traced
    for name in ('on_watchdog', 'publish_diagnostics'):
        def timed(self, *args, _method=getattr(node_class, name), _name=name):
            t0 = time.time_ns()
            _method(self, *args)
            trace.others.append((t0, time.time_ns(), _name))
        setattr(node_class, name, timed)
    return dynamics_node


def decompose(directory, label, seq, latency_s, first):
    """Figures [us] of one measured target: p50 and p99 of in, callback, out and the whole latency, and the
    share of the top 1 % of messages during which another callback of the target ran. ``seq``,
    ``latency_s``: the receiver's sequence numbers and latencies [s]; ``first``: the first measured number.
    None if the target's trace file is not there."""
    files = sorted(pathlib.Path(directory).glob('%s_*.npz' % label), key=lambda p: p.stat().st_mtime)
    if not files:
        return None
    with np.load(files[-1]) as f:
        messages, others = f['messages'], f['others']
    files[-1].rename(files[-1].with_suffix('.used'))            # the next round's file is the newest again
    keep = (seq >= first) & (seq < N_MAX)
    seq, latency_s = seq[keep], latency_s[keep]
    stamp, t0, t1 = messages[seq].T
    keep = t0 > 0
    stamp, t0, t1, latency_s = stamp[keep], t0[keep], t1[keep], latency_s[keep]
    whole = latency_s * 1e6
    t_in, callback = (t0 - stamp) * 1e-3, (t1 - t0) * 1e-3
    out = whole - t_in - callback
    tail = whole > np.percentile(whole, 99)
    receipt = stamp + (latency_s * 1e9).astype(np.int64)
    during = np.zeros(len(whole), dtype=bool)
    for start, end in others:
        during |= (start < receipt) & (end > stamp)
    figures = {'%s_%s_us' % (part, p): float(np.percentile(x, q)) for part, x in
               (('in', t_in), ('callback', callback), ('out', out), ('latency', whole))
               for p, q in (('p50', 50), ('p99', 99))}
    figures['tail_during_other_callbacks'] = float(during[tail].mean()) if tail.any() else 0.0
    figures['other_callbacks'] = int(len(others))
    return figures


def main(argv):
    """``latency_trace.py node DIR [ROS arguments]``: dynamics_node, traced into DIR."""
    if len(argv) < 3 or argv[1] != 'node':
        raise SystemExit('usage: latency_trace.py node DIR [--ros-args ...]')
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    trace_dynamics_node(argv[2]).main(argv[:1] + argv[3:])


if __name__ == '__main__':
    main(sys.argv)
