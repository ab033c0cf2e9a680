"""Real-time factor and CPU of simulator_node through real DDS.

Usage (from the checkout, after scripts/setup-venv.sh):
    .venv/bin/python bench/ros_simulator.py [--rtf 1.0] [--duration 10] [--physics-rate 1000]
        [--publish-rate 1000] [--integrator rk4] [--controller] [--json]

Starts simulator_node as a separate process on the bundled 7-DOF Panda arm
(urdf/panda_arm.urdf, "ready" pose, URDF damping, stops and velocity
limits on, markers at 30 Hz, publish_clock on so that every joint state
carries its simulated time), lets it run ``--duration`` s of wall time after
a 2 s warm-up, and prints:

- the real-time factor achieved: simulated time advanced / wall time, from
  the stamps of the joint states this process received;
- joint states received, their rate, and gaps (states the node published
  but this process did not get, from the stamps);
- the node's lag events and dropped time (its /diagnostics);
- the node's CPU share (of one core) from /proc/<pid>/stat.

``--rtf 0`` runs the physics as fast as possible: the factor printed is then
the node's maximum. ``--controller`` also starts dynamics_node (gravity +
Coriolis compensation, publish_command) in the loop, as in
test/ros/test_ros_closed_loop.py, and reports its CPU too.
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # this checkout's robot_dynamics, installed or not
sys.path.insert(1, str(ROOT / 'test' / 'ros'))   # the tests' node-process harness, node_process.py
from node_process import NodeProcessError, start_node, stop_all, wait_until  # noqa: E402

Q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rtf', type=float, default=1.0)
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--physics-rate', type=float, default=1000.0)
    ap.add_argument('--publish-rate', type=float, default=1000.0)
    ap.add_argument('--integrator', default='rk4')
    ap.add_argument('--controller', action='store_true')
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args()

    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 101 + 1))
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    ns = '/rd_simbench_%d' % os.getpid()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='rd_simbench_'))
    panda = str(ROOT / 'urdf' / 'panda_arm.urdf')
    procs = {'simulator': start_node('simulator_node', {
        'urdf_path': panda, 'initial_positions': Q0,
        'physics_rate': args.physics_rate, 'publish_rate': args.publish_rate, 'integrator': args.integrator,
        'real_time_factor': args.rtf, 'publish_clock': True, 'diagnostics_period': 1.0},
        name='simulator', namespace=ns, log_path=tmp / 'simulator.log', cwd=ROOT)}
    if args.controller:
        # Both on their default command topic, effort_controller/commands in the namespace.
        procs['dynamics_node'] = start_node('dynamics_node', {
            'urdf_path': panda, 'publish_command': True, 'mode': 'gravity_coriolis', 'use_sim_time': True},
            name='dynamics_node', namespace=ns, log_path=tmp / 'dynamics_node.log', cwd=ROOT)

    rclpy.init()
    node = rclpy.create_node('simbench_receiver')
    lock = threading.Lock()
    stamps, diags = [], []

    def on_state(msg):
        with lock:
            stamps.append((time.monotonic(), msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9))

    def on_diag(msg):
        for s in msg.status:
            if s.name.startswith(ns.lstrip('/') + '/simulator'):
                diags.append({kv.key: kv.value for kv in s.values})
    node.create_subscription(JointState, ns + '/joint_states', on_state,
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 10)
    from rclpy.executors import SingleThreadedExecutor
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        try:
            wait_until(lambda: stamps, 120, 'the first joint state', processes=list(procs.values()), period=0.05)
        except NodeProcessError as exc:
            raise SystemExit(str(exc))
        time.sleep(2.0)                                   # warm-up, not counted
        with lock:
            n0 = len(stamps)
        cpu0 = {n: p.cpu_seconds() for n, p in procs.items()}
        diag0 = len(diags)
        w0 = time.monotonic()
        time.sleep(args.duration)
        wall = time.monotonic() - w0
        cpu = {n: (p.cpu_seconds() - cpu0[n]) / wall for n, p in procs.items()}
        with lock:
            window = stamps[n0:]
        recent = diags[diag0:] or diags[-1:]
    finally:
        stop_all(list(procs.values()))
        executor.shutdown(timeout_sec=1.0)
        spin.join(timeout=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    arrival = np.array([a for a, _ in window])
    t = np.array([s for _, s in window])
    period = round(args.physics_rate / args.publish_rate) / args.physics_rate
    gaps = int(np.sum(np.round(np.diff(t) / period) - 1))
    result = {
        'real_time_factor_requested': args.rtf,
        'real_time_factor_achieved': float((t[-1] - t[0]) / (arrival[-1] - arrival[0])),
        'joint_states_received': len(t), 'joint_states_rate_hz': float((len(t) - 1) / (arrival[-1] - arrival[0])),
        'joint_states_missed_by_receiver': gaps,
        'lag_events': int(recent[-1]['lag_events']) if recent else None,
        'dropped_time_s': float(recent[-1]['dropped_time_s']) if recent else None,
        'tick_time_mean_us': float(np.mean([float(d['tick_time_mean_us']) for d in recent])) if recent else None,
        'cpu_percent': {n: round(100 * c, 1) for n, c in cpu.items()},
        'physics_rate_hz': args.physics_rate, 'publish_rate_hz': args.publish_rate, 'integrator': args.integrator,
    }
    for k, v in result.items():
        print('%-34s %s' % (k, v))
    if args.json:
        print(json.dumps(result))


if __name__ == '__main__':
    main()
