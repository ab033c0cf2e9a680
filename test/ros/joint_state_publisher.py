"""A joint-state publisher process for the fault tests (a driver that can be
killed, stopped or restarted): publishes sensor_msgs/JointState at a fixed
rate, all joints every time.

    python test/ros/joint_state_publisher.py --topic /ns/joint_states --tag p1 \
        --names j1,j2 --q 0.1,0.2 [--rate 200] [--nan]

Message k (from 0) has ``header.frame_id = '<tag>:<k>'``, the wall-clock
stamp, zero velocities and positions ``q + 1e-3 * k`` (every message a new
state, the test recomputes it from the frame_id), or NaN positions with
``--nan`` (a driver gone wrong). SIGUSR1 switches to NaN positions without a
break in the stream. SIGUSR2 silences the driver and the next SIGUSR2 resumes
it (a driver alive that lost its hardware: no message while silent, no DDS
endpoint lost; message numbers go on as if it had published); on falling
silent it prints the stamp of its last message. Runs until
killed.
"""
import argparse
import signal
import time

import rclpy
from sensor_msgs.msg import JointState


def positions(q, k):
    """The positions of message k (the test imports this)."""
    return [x + 1e-3 * k for x in q]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--topic', required=True)
    parser.add_argument('--tag', required=True)
    parser.add_argument('--names', required=True)
    parser.add_argument('--q', required=True)
    parser.add_argument('--rate', type=float, default=200.0)
    parser.add_argument('--nan', action='store_true')
    args = parser.parse_args()
    names = args.names.split(',')
    q = [float(x) for x in args.q.split(',')]
    nan = [args.nan]
    signal.signal(signal.SIGUSR1, lambda *_: nan.__setitem__(0, True))
    silent = [False]
    signal.signal(signal.SIGUSR2, lambda *_: silent.__setitem__(0, not silent[0]))
    rclpy.init()
    node = rclpy.create_node('joint_state_publisher_%s' % args.tag)
    pub = node.create_publisher(JointState, args.topic, 10)
    period = 1.0 / args.rate
    next_t = time.monotonic()
    k = 0
    nan_since = []
    last_stamp, reported_silence = None, False
    while True:
        msg = JointState()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.header.frame_id = '%s:%d' % (args.tag, k)
        msg.name = names
        if nan[0] and not nan_since:
            nan_since.append(time.time())
            print('NaN from message %d, wall time %.6f s' % (k, nan_since[0]), flush=True)
        msg.position = [float('nan')] * len(q) if nan[0] else positions(q, k)
        msg.velocity = [0.0] * len(q)
        quiet = silent[0]                # read once: SIGUSR2 may flip it between two reads
        if not quiet:
            pub.publish(msg)
            last_stamp = msg.header.stamp
        elif not reported_silence and last_stamp is not None:
            print('silent after message %d, stamped %d.%09d s' % (k - 1, last_stamp.sec, last_stamp.nanosec),
                  flush=True)
        reported_silence = quiet and (reported_silence or last_stamp is not None)
        k += 1
        next_t += period
        time.sleep(max(0.0, next_t - time.monotonic()))


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:           # stopped by the test fixture (SIGINT)
        pass
