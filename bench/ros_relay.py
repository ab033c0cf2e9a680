"""The baseline of bench/ros_latency.py: a bare rclpy relay of sensor_msgs/JointState.

    python bench/ros_relay.py --ros-args -r __node:=bench_relay -r __ns:=/ns

Subscribes ``joint_states`` (relative; best-effort or reliable as
``--reliability`` says, depth 100: dynamics_node's subscription) and
publishes each message as received, header included, on
``~/compensation_torque`` (reliable, depth 10, no QoS-event callbacks:
dynamics_node's torque publishers). ``--command`` also publishes, before
each relayed message, its positions as a std_msgs/Float64MultiArray on
``commands`` (reliable, depth 10: dynamics_node's command, sent first as
dynamics_node sends it): the node's I/O without its work. Nothing else: no model, no
computation, no timers, no parameters of its own. It spins the executor
dynamics_node spins (rclpy's EventsExecutor, or the SingleThreadedExecutor
with ``ROBOT_DYNAMICS_EXECUTOR=single``, as robot_dynamics.ros.model_node
chooses) with the same ``spin_once(timeout_sec=0.1)`` loop and the same stop
on SIGINT/SIGTERM (a flag the loop checks, as model_node.StopSignals), so
the difference between the two is what dynamics_node does per message. It does
not import robot_dynamics (nor numba).
"""
import argparse
import os
import signal
import sys


def make_executor():
    """The executor dynamics_node would spin (robot_dynamics.ros.model_node.make_executor's rule)."""
    kind = os.environ.get('ROBOT_DYNAMICS_EXECUTOR') or 'events'
    if kind not in ('events', 'single'):
        raise SystemExit('ROBOT_DYNAMICS_EXECUTOR is %r; expected events or single' % kind)
    if kind == 'events':
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            pass
    from rclpy.executors import SingleThreadedExecutor
    return SingleThreadedExecutor()


def _traced(relay, directory):
    """``relay`` with its callback's start and end recorded (bench/latency_trace.py)."""
    import time
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from latency_trace import Trace
    trace = Trace(directory, 'relay')

    def traced(msg):
        t0 = time.time_ns()
        relay(msg)
        stamp = msg.header.stamp
        trace.message(int(msg.header.frame_id), stamp.sec * 1_000_000_000 + stamp.nanosec, t0, time.time_ns())
    return traced


def main(argv=None):
    import rclpy
    from rclpy.event_handler import PublisherEventCallbacks
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState

    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--reliability', default='best_effort', choices=('best_effort', 'reliable'))
    parser.add_argument('--command', action='store_true',
                        help='also publish a Float64MultiArray command on commands before each relayed message')
    parser.add_argument('--trace', metavar='DIR',
                        help='record each message\'s callback times into DIR (bench/latency_trace.py)')
    args = parser.parse_args(rclpy.utilities.remove_ros_args(argv)[1:])
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('bench_relay')
    pub = node.create_publisher(JointState, '~/compensation_torque', 10,
                                event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))
    reliability = (ReliabilityPolicy.BEST_EFFORT if args.reliability == 'best_effort'
                   else ReliabilityPolicy.RELIABLE)
    relay = pub.publish
    if args.command:
        from std_msgs.msg import Float64MultiArray
        command_pub = node.create_publisher(Float64MultiArray, 'commands',
                                            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
                                            event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))
        command = Float64MultiArray()

        def relay(msg):
            command.data = msg.position
            command_pub.publish(command)
            pub.publish(msg)
    if args.trace:                                      # bench/ros_latency.py --trace: per-message times
        relay = _traced(relay, args.trace)
    node.create_subscription(JointState, 'joint_states', relay, QoSProfile(depth=100, reliability=reliability))
    executor = make_executor()
    executor.add_node(node)
    stop = []
    for number in (signal.SIGINT, signal.SIGTERM):       # after the EventsExecutor's own handlers
        signal.signal(number, lambda number, frame: stop.append(number))
    node.get_logger().info('relaying; spinning in %s' % type(executor).__name__)
    try:
        while not stop and rclpy.ok():
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception:
                if rclpy.ok():
                    raise
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
