"""The two ROS 2 peers of test_ros_lossy_network.py, one process each (run inside a network namespace).

    python test/ros/lossy_peer.py publish --topic /ns/joint_states --names a,b --q 0.1,0.2 --rate 500
    python test/ros/lossy_peer.py observe --torque /ns/n1/compensation_torque --command /ns/cmd1 ...

``publish``: sensor_msgs/JointState at ``--rate`` Hz (reliable, depth 10, as
a driver would), message k with ``header.frame_id = 'js:<k>'``, the wall
clock stamp and positions ``q + 1e-4 * k``; on SIGINT it prints
``SENT <n>`` (messages published) and exits.

``observe``: subscribes each ``--torque`` topic (sensor_msgs/JointState,
best effort: what the node sent, never a late retransmission), each
``--command`` topic (std_msgs/Float64MultiArray, reliable, as a
forward_command_controller) and /diagnostics, and prints one line per
message, flushed, with the receipt time (wall clock, ns):
``T <topic> <receipt_ns> <stamp_ns> <frame_id> <effort,...>``,
``C <topic> <receipt_ns> <data,...>`` and ``D <receipt_ns> <json of {name: {key: value}}>``.
"""
import argparse
import json
import sys
import time


def publish(args):
    import rclpy
    from sensor_msgs.msg import JointState
    rclpy.init()
    node = rclpy.create_node('lossy_joint_state_publisher')
    pub = node.create_publisher(JointState, args.topic, 10)
    names = args.names.split(',')
    q = [float(x) for x in args.q.split(',')]
    period = 1.0 / args.rate
    next_t = time.monotonic()
    k = 0
    print('publishing %s at %g Hz' % (args.topic, args.rate), flush=True)
    try:
        while True:
            msg = JointState(name=names, position=[x + 1e-4 * k for x in q], velocity=[0.0] * len(q))
            msg.header.frame_id = 'js:%d' % k
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
            pub.publish(msg)
            k += 1
            next_t += period
            time.sleep(max(0.0, next_t - time.monotonic()))
    except KeyboardInterrupt:
        pass
    print('SENT %d' % k, flush=True)


def observe(args):
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    rclpy.init()
    node = rclpy.create_node('lossy_observer')
    out = sys.stdout

    def on_torque(topic):
        def cb(msg):
            s = msg.header.stamp
            out.write('T %s %d %d %s %s\n' % (topic, time.time_ns(), s.sec * 1_000_000_000 + s.nanosec,
                                             msg.header.frame_id or '-', ','.join(repr(x) for x in msg.effort)))
        return cb

    def on_command(topic):
        def cb(msg):
            out.write('C %s %d %s\n' % (topic, time.time_ns(), ','.join(repr(x) for x in msg.data)))
        return cb

    def on_diagnostics(msg):
        statuses = {s.name: dict({kv.key: kv.value for kv in s.values}, _level=int.from_bytes(s.level, 'little')
                                 if isinstance(s.level, bytes) else int(s.level), _message=s.message)
                    for s in msg.status}
        out.write('D %d %s\n' % (time.time_ns(), json.dumps(statuses)))

    best_effort = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
    reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    for topic in args.torque:
        node.create_subscription(JointState, topic, on_torque(topic), best_effort)
    for topic in args.command:
        node.create_subscription(Float64MultiArray, topic, on_command(topic), reliable)
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, reliable)
    node.create_timer(0.1, out.flush)
    print('observing', flush=True)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    out.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='role', required=True)
    p = sub.add_parser('publish')
    p.add_argument('--topic', required=True)
    p.add_argument('--names', required=True)
    p.add_argument('--q', required=True)
    p.add_argument('--rate', type=float, default=500.0)
    o = sub.add_parser('observe')
    o.add_argument('--torque', action='append', default=[])
    o.add_argument('--command', action='append', default=[])
    args = parser.parse_args()
    (publish if args.role == 'publish' else observe)(args)


if __name__ == '__main__':
    main()
