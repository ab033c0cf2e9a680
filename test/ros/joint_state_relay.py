"""A stand-in of the joint_state_publisher that franka.launch.py runs beside the robot's broadcaster.

    python test/ros/joint_state_relay.py --source /ns/franka/joint_states --topic /ns/joint_states \
        --names j1,j2 [--rate 30]

As that node does with ``source_list`` and ``rate`` (franka_ros2, jazzy): it
publishes every joint of ``--names`` on ``--topic`` at ``--rate`` [Hz],
stamped with its own clock's now(), with the latest positions, velocities
and efforts heard on ``--source``, or zeros before any came; and it goes on
publishing the last values after the source falls silent. Runs until killed
(SIGINT or SIGTERM: exit 0).
"""
import argparse
import signal
import time

import rclpy
from sensor_msgs.msg import JointState


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--source', required=True)
    parser.add_argument('--topic', required=True)
    parser.add_argument('--names', required=True)
    parser.add_argument('--rate', type=float, default=30.0)
    args = parser.parse_args()
    names = args.names.split(',')
    latest = {n: (0.0, 0.0, 0.0) for n in names}

    def heard(msg):
        for i, n in enumerate(msg.name):
            if n in latest:
                latest[n] = tuple(float(a[i]) if i < len(a) else 0.0 for a in (msg.position, msg.velocity, msg.effort))

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    rclpy.init()
    node = rclpy.create_node('joint_state_relay')
    node.create_subscription(JointState, args.source, heard, 10)
    pub = node.create_publisher(JointState, args.topic, 10)
    period = 1.0 / args.rate
    next_t = time.monotonic()
    try:
        while rclpy.ok():
            rclpy.spin_once(node, timeout_sec=max(0.0, next_t - time.monotonic()))
            if time.monotonic() < next_t:
                continue
            msg = JointState(name=names)
            msg.header.stamp = node.get_clock().now().to_msg()
            msg.position, msg.velocity, msg.effort = (list(v) for v in zip(*(latest[n] for n in names)))
            pub.publish(msg)
            next_t += period
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
