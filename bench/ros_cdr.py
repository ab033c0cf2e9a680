"""What dynamics_node's serialized-message path (robot_dynamics/ros/cdr.py) buys, per joint state.

Per joint state the torque node reads one sensor_msgs/JointState and writes one
JointState (the commanded torque) and one std_msgs/Float64MultiArray (the
command). Side by side, in one process, on the same bytes:

- rclpy: what a subscription and two publishers with messages cost in
  conversion: ``rclpy.serialization.deserialize_message`` (the C message
  converted to Python objects, as rclpy's take does), the arrays read with
  ``np.asarray``, the two outputs built as messages and
  ``serialize_message``-d (as ``Publisher.publish`` converts and serializes);
- cdr: ``raw=True`` and bytes published (public rclpy API):
  ``JointStateReader.read`` and the two writers' ``serialize``.

Neither includes the middleware (taking and sending the bytes), which is the
same for both. Medians of --repeat runs of --number messages each, reported
with their ratio::

    .venv/bin/python bench/ros_cdr.py [--joints 7 30] [--repeat 15] [--number 2000]
"""
import argparse
import statistics
import timeit

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from robot_dynamics.ros.cdr import Float64ArrayWriter, JointStateReader, JointStateWriter


def joint_state_bytes(n):
    """A serialized JointState of ``n`` joints (names, positions, velocities, efforts), as a driver sends it."""
    msg = JointState(name=['joint_%d' % k for k in range(n)], position=np.linspace(-1, 1, n).tolist(),
                     velocity=np.linspace(0.5, -0.5, n).tolist(), effort=np.zeros(n).tolist())
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 12, 345, 'base'
    return serialize_message(msg)


def rclpy_path(data, tau):
    """Messages: the input converted to Python, the two outputs converted and serialized."""
    msg = deserialize_message(data, JointState)
    q, qd = np.asarray(msg.position), np.asarray(msg.velocity)
    out = JointState(header=msg.header, name=msg.name, effort=tau.tolist())
    cmd = Float64MultiArray(data=tau.tolist())
    cmd.layout.dim = [MultiArrayDimension(label='joints', size=tau.size, stride=tau.size)]
    return q, qd, serialize_message(out), serialize_message(cmd)


def cdr_path(reader, torque, command, data, tau):
    """Bytes: the input decoded in place, the two outputs written from preallocated parts."""
    s = reader.read(data)
    return s.position, s.velocity, torque.serialize(s.head, tau), command.serialize(tau)


def per_message_us(fn, number, repeat):
    """Median [us] per call of ``fn`` over ``repeat`` runs of ``number`` calls."""
    runs = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--joints', type=int, nargs='+', default=[7, 30])
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--number', type=int, default=2000)
    args = parser.parse_args()
    print('| joints | rclpy messages [us] | cdr bytes [us] | ratio |')
    print('|---|---|---|---|')
    for n in args.joints:
        data, tau = joint_state_bytes(n), np.linspace(1.0, 2.0, n)
        reader, torque, command = JointStateReader(), JointStateWriter(['joint_%d' % k for k in range(n)]), \
            Float64ArrayWriter(n)
        # Same answers: the decoded state, and outputs that decode to the same values.
        a, b = rclpy_path(data, tau), cdr_path(reader, torque, command, data, tau)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        assert list(deserialize_message(b[2], JointState).effort) == list(deserialize_message(a[2], JointState).effort)
        assert list(deserialize_message(b[3], Float64MultiArray).data) == tau.tolist()
        t_rclpy = per_message_us(lambda: rclpy_path(data, tau), args.number, args.repeat)
        t_cdr = per_message_us(lambda: cdr_path(reader, torque, command, data, tau), args.number, args.repeat)
        print('| %d | %.1f | %.1f | %.1f |' % (n, t_rclpy, t_cdr, t_rclpy / t_cdr))


if __name__ == '__main__':
    main()
