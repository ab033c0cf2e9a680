"""Latency and CPU of dynamics_node through real DDS at 1 kHz.

Usage (from the checkout, after scripts/setup-venv.sh):
    .venv/bin/python bench/ros_latency.py [--rate 1000] [--duration 10] [--mode gravity_coriolis]

Starts dynamics_node as a separate process on the bundled 7-DOF Panda arm
(urdf/panda_arm.urdf) with the ros2_control bridge on, then:

- a publisher process sends sensor_msgs/JointState at ``--rate`` Hz for
  ``--duration`` s (after a 1 s warm-up that is not counted), each stamped
  with the wall clock at publish time and with a sequence number in
  header.frame_id;
- this process receives ~/compensation_torque (stamped with the input's
  stamp) and the Float64MultiArray command, and takes the latency of each
  torque message as receipt time minus its stamp: joint-state publish to
  torque receipt, through DDS twice and the node's callback once;
- the node's CPU share is read from /proc/<pid>/stat over the measured window.

Prints messages in/out, lost messages, p50/p99/max latency, the node's CPU
share (of one core), and exits 1 if a target is missed: no message lost,
p99 < 1 ms, CPU < 50 %. ``--json`` prints the figures as JSON as well.
Publisher and receiver are separate processes so that neither's Python
loop delays the other; all three share the machine's cores.
"""
import argparse
import json
import multiprocessing as mp
import os
import pathlib
import sys
import threading
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # this checkout's robot_dynamics, installed or not
from robot_dynamics.ros.process import NodeProcessError, start_node  # noqa: E402

NS = '/rd_bench_%d' % os.getpid()
NODE = 'bench_dynamics'


def _publisher(ns, rate, warmup, duration, ready, start_evt, result, domain_env):
    """Child process: publish JointState at ``rate`` Hz with absolute deadlines."""
    os.environ.update(domain_env)
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    rclpy.init()
    node = rclpy.create_node('bench_joint_state_publisher')
    pub = node.create_publisher(JointState, ns + '/joint_states',
                                QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    names = ['panda_joint%d' % i for i in range(1, 8)]
    msg = JointState(name=names)
    base = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    deadline = time.monotonic() + 10
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    ready.set()
    start_evt.wait()
    n_total = int(round((warmup + duration) * rate))
    period = 1.0 / rate
    t0 = time.monotonic() + 0.05
    late = 0
    for k in range(n_total):
        target = t0 + k * period
        dt = target - time.monotonic()               # sleep only: a busy wait would
        if dt > 0:                                   # take a core from the node
            time.sleep(dt)
        if time.monotonic() - target > period:
            late += 1
        s = 0.1 * np.sin(2 * np.pi * 0.5 * k * period)
        msg.position = (base + s).tolist()
        msg.velocity = [s] * 7
        msg.header.frame_id = str(k)
        now = time.time_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
        pub.publish(msg)
    result.put({'sent': n_total, 'late': late, 'first_measured': int(round(warmup * rate))})
    time.sleep(0.5)
    node.destroy_node()
    rclpy.shutdown()


def run(args):
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    domain_env = {k: os.environ[k] for k in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE')
                  if k in os.environ}
    params = {'urdf_path': str(ROOT / 'urdf' / 'panda_arm.urdf'), 'mode': args.mode, 'publish_command': True,
              'command_topic': 'commands', 'joint_state_timeout': 0.5,
              'joint_states_reliability': args.reliability}
    rclpy.init()
    node = rclpy.create_node('bench_receiver')
    n_max = int((args.duration + 2) * args.rate) + 1000
    seq = np.full(n_max, -1, dtype=np.int64)
    lat = np.zeros(n_max)
    count = [0, 0]                                     # torques, commands

    def on_torque(msg):
        t = time.time_ns()
        i = count[0]
        if i < n_max:
            s = msg.header.stamp
            lat[i] = (t - (s.sec * 1_000_000_000 + s.nanosec)) * 1e-9
            seq[i] = int(msg.header.frame_id) if msg.header.frame_id else -1
        count[0] = i + 1

    def on_command(msg):
        count[1] += 1

    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(JointState, '%s/%s/compensation_torque' % (NS, NODE), on_torque, qos)
    if not args.no_command_subscriber:
        node.create_subscription(Float64MultiArray, NS + '/commands', on_command, qos)
    # The receiver spins the same C++ EventsExecutor as the node, so that its
    # own Python overhead adds as little as possible to the measured latency.
    try:
        from rclpy.experimental import EventsExecutor
        executor = EventsExecutor()
    except ImportError:
        from rclpy.executors import SingleThreadedExecutor
        executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.05)
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    t_start = time.monotonic()
    node_proc = start_node('dynamics_node', params, name=NODE, namespace=NS)
    try:
        try:
            node_proc.wait_until(lambda: node.count_subscribers(NS + '/joint_states') > 0, 180,
                                 'the joint_states subscription of dynamics_node', period=0.05)
        except NodeProcessError as exc:
            raise SystemExit('dynamics_node did not start: %s' % exc)
        print('node ready after %.1f s (pid %d)' % (time.monotonic() - t_start, node_proc.pid))
        ctx = mp.get_context('spawn')                  # never fork a process with DDS threads
        ready, start_evt, result = ctx.Event(), ctx.Event(), ctx.Queue()
        pub = ctx.Process(
            target=_publisher, args=(NS, args.rate, args.warmup, args.duration, ready, start_evt, result, domain_env))
        pub.start()
        ready.wait(30)
        time.sleep(0.5)                                # let the subscriptions match
        start_evt.set()
        time.sleep(0.05 + args.warmup)
        cpu0, wall0 = node_proc.cpu_seconds(), time.monotonic()
        time.sleep(args.duration)
        cpu1, wall1 = node_proc.cpu_seconds(), time.monotonic()
        info = result.get(timeout=30)
        pub.join(10)
        time.sleep(0.5)                                # the last messages in flight
    finally:
        node_proc.stop()
        stop.set()
        spinner.join(2)
        node.destroy_node()
        rclpy.try_shutdown()

    n = min(count[0], n_max)
    measured = seq[:n] >= info['first_measured']
    got = np.unique(seq[:n][measured])
    expected = info['sent'] - info['first_measured']
    lat_ms = np.sort(lat[:n][measured]) * 1e3
    cpu = (cpu1 - cpu0) / (wall1 - wall0)
    figures = {
        'rate_hz': args.rate, 'duration_s': args.duration, 'mode': args.mode,
        'joint_states_sent': expected, 'torque_messages_received': int(got.size),
        'commands_received_total': count[1], 'joint_states_sent_total': info['sent'],
        'lost': int(expected - got.size), 'publisher_late': info['late'],
        'latency_p50_ms': float(np.percentile(lat_ms, 50)) if lat_ms.size else float('nan'),
        'latency_p90_ms': float(np.percentile(lat_ms, 90)) if lat_ms.size else float('nan'),
        'latency_p99_ms': float(np.percentile(lat_ms, 99)) if lat_ms.size else float('nan'),
        'latency_max_ms': float(lat_ms[-1]) if lat_ms.size else float('nan'),
        'node_cpu_share_of_one_core': cpu,
    }
    print('dynamics_node, %s mode, %d-DOF Panda, %d Hz for %.0f s (after %.0f s warm-up):'
          % (args.mode, 7, args.rate, args.duration, args.warmup))
    print('  joint states sent    %7d   (publisher late by > 1 period: %d)' % (expected, info['late']))
    print('  torques received     %7d   lost: %d' % (got.size, expected - got.size))
    print('  commands received    %7d   (for %d joint states in all, warm-up included, '
          '+ 1 zero command at the timeout after the stream)' % (count[1], info['sent']))
    print('  latency publish -> receipt: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms'
          % (figures['latency_p50_ms'], figures['latency_p90_ms'], figures['latency_p99_ms'],
             figures['latency_max_ms']))
    print('  node CPU: %.1f %% of one core' % (100 * cpu))
    ok = figures['lost'] == 0 and figures['latency_p99_ms'] < 1.0 and cpu < 0.5
    print('  targets (no loss, p99 < 1 ms, CPU < 50 %%): %s' % ('met' if ok else 'MISSED'))
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0 if ok else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rate', type=float, default=1000.0, help='joint-state rate [Hz] (1000)')
    parser.add_argument('--duration', type=float, default=10.0, help='measured seconds (10)')
    parser.add_argument('--warmup', type=float, default=1.0, help='seconds streamed before measuring (1)')
    parser.add_argument('--mode', default='gravity_coriolis', help='dynamics_node mode (gravity_coriolis)')
    parser.add_argument('--reliability', default='best_effort', choices=('best_effort', 'reliable'),
                        help="the node's joint_states subscription QoS (best_effort)")
    parser.add_argument('--no-command-subscriber', action='store_true',
                        help='do not subscribe to the Float64MultiArray command (lighter receiver)')
    parser.add_argument('--json', action='store_true', help='also print the figures as JSON')
    args = parser.parse_args(argv)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 101 + 1))
    return run(args)


if __name__ == '__main__':
    sys.exit(main())
