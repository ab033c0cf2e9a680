"""dynamics_node's joint-state callback in-process: microseconds per message, without the middleware.

Usage (from the checkout, after scripts/setup-venv.sh):
    .venv/bin/python bench/ros_callback.py [--messages 10000] [--repeats 5] [--backend compiled] [--checkout PATH]
                                           [--diagnostics]

Configures a DynamicsNode on the bundled Panda (urdf/panda_arm.urdf) with the
ros2_control command on (``publish_command``), as bench/ros_latency.py runs
it, and calls its joint-state callback with serialized sensor_msgs/JointState
messages (stamped now, positions changing by 1e-5 rad per message): the
decoding, the merge, the laws, the limits and the publishes of the command
and the compensation torque (to no subscriber). The middleware's delivery
and the executor are not included; bench/ros_latency.py measures those.

``--general`` sends every joint state through the general path (the reader and TorqueLoop.step) instead
of the compiled merge of the driver's usual message (ros/joint_state_intake.py), for a side-by-side figure.

``--backend compiled`` sets the node's ``backend`` parameter (the laws on the
Panda's generated C, docs/CODEGEN.md); ``--mode`` its ``mode``.

``--diagnostics`` times the node's diagnostics period instead (``publish_diagnostics``, once a second on the
torque loop's thread; published to no subscriber), once after every 100 of the joint states, so that its
counters and statistics change from one period to the next as in a running node.

``--checkout`` runs another checkout's robot_dynamics (e.g. a worktree of an
older commit) with this script, for a side-by-side figure.

Prints the median and p99 per call (joint state or diagnostics period) of each repeat and, as its last line,
``median X us`` (the median of the repeats' medians).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--messages', type=int, default=10000)
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--checkout', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument('--backend', default='library', choices=('library', 'compiled'),
                    help="the node's backend parameter (compiled: the laws on the Panda's generated C)")
    ap.add_argument('--mode', default='gravity_coriolis', help="the node's mode parameter")
    ap.add_argument('--general', action='store_true',
                    help='every joint state through the general path (cdr.JointStateReader and TorqueLoop.step), '
                         "not the compiled merge of the driver's usual message (ros/joint_state_intake.py)")
    ap.add_argument('--diagnostics', action='store_true',
                    help='time the diagnostics period (after every 100 joint states) instead of the callback')
    args = ap.parse_args()
    sys.path.insert(0, args.checkout)
    import rclpy
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    rclpy.init(args=['--ros-args', '-p', 'urdf_path:=%s/urdf/panda_arm.urdf' % args.checkout,
                     '-p', 'publish_command:=true', '-p', 'command_topic:=commands', '-p', 'joint_state_timeout:=0.5']
               + (['-p', 'backend:=%s' % args.backend] if args.backend != 'library' else [])
               + ['-p', 'mode:=%s' % args.mode])
    from robot_dynamics.ros.dynamics_node import DynamicsNode
    node = DynamicsNode()
    if hasattr(node, 'configure'):
        node.configure()
    # Older checkouts: node._on_joint_state and node.backend_state().
    on_joint_state = getattr(node, 'on_joint_state', None) or getattr(node, '_on_joint_state')
    backend_state = (node.backend_state if hasattr(node, 'backend_state')
                     else lambda: node.backend.state(node.model))
    if args.backend == 'compiled':               # the code compiles in a thread; a timer of the node picks it up
        deadline = time.monotonic() + 120
        while backend_state() != 'compiled' and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        print('backend: %s' % backend_state(), flush=True)
    if args.general:
        node.intake.merges_compiled = False
    names = ['panda_joint%d' % k for k in range(1, 8)]
    msgs = [JointState(name=names, position=list(np.full(7, 0.1 + 1e-5 * k)), velocity=[0.01] * 7)
            for k in range(args.messages)]

    def run(n):
        took = np.empty(n)
        for k in range(n):
            m = msgs[k]
            m.header.stamp.sec, m.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
            data = serialize_message(m)
            t0 = time.perf_counter_ns()
            on_joint_state(data)
            took[k] = time.perf_counter_ns() - t0
        return took / 1e3

    def run_diagnostics(n):
        took = []
        for k in range(n):
            m = msgs[k]
            m.header.stamp.sec, m.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
            on_joint_state(serialize_message(m))
            if k % 100 == 99:
                t0 = time.perf_counter_ns()
                node.publish_diagnostics()
                took.append(time.perf_counter_ns() - t0)
        return np.array(took) / 1e3

    timed = run_diagnostics if args.diagnostics else run
    what = 'diagnostics period' if args.diagnostics else 'joint state'

    timed(min(2000, args.messages))
    medians = []
    for _ in range(args.repeats):
        d = timed(args.messages)
        medians.append(float(np.median(d)))
        print('median %.1f us, p99 %.1f us per %s' % (medians[-1], np.percentile(d, 99), what), flush=True)
    print('median %.1f us' % statistics.median(medians))
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
