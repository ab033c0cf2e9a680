"""A stand-in of joint_trajectory_controller on an effort interface: a PID per joint and no model.

    python test/ros/pid_trajectory_controller.py --namespace /ns --joints j1,j2 --p 900,400 --i 2700,1200 \
        --d 60,40 --i-clamp 43.5,43.5 [--max-state-age 0.005]

The law of ros2_controllers' joint_trajectory_controller (branch jazzy) with ``command_interfaces: [effort]``
and the defaults ``ff_velocity_scale: 0`` and no effort in the trajectory (src/joint_trajectory_controller.cpp,
``update``: ``ff_velocity_scale * v_d + effort_d + pid.compute_command(e, e_dot, period)``), its PID that of
control_toolbox (jazzy, src/pid.cpp, antiwindup strategy ``legacy``: the integral term is clamped to
``[-i_clamp, i_clamp]``), per joint::

    e = q_d - q,  e_dot = qd_d - qd
    i_term <- clamp(i_term + i * dt * e, -i_clamp, i_clamp)
    effort = p * e + i_term + d * e_dot          [N m]

The desired motion is sampled as that controller samples it (``robot_dynamics.control.trajectory.
TrajectorySampler``: the same splines; before the start the first point is held, after the end the last) at
the node clock's time when a joint state comes (``use_sim_time``: the simulator's /clock); dt is the time
since the previous joint state; with ``--max-state-age`` [s] a joint state older than that by its stamp gives
no command, as dynamics_node's ``max_state_age``. Reads ``joint_states`` and ``~/trajectory``
(trajectory_msgs/JointTrajectory, start at header.stamp), publishes ``effort_controller/commands``
(std_msgs/Float64MultiArray, in the order of ``--joints``), all relative to ``--namespace``. A new trajectory
keeps the integral (the controller holds the arm before it, as joint_trajectory_controller does after
activation). Runs until SIGINT or SIGTERM (exit 0).
"""
import argparse
import signal

import numpy as np
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics.control.trajectory import TrajectorySampler


class Pid:
    """control_toolbox's PID (legacy antiwindup) for n joints at once: gains (n,) [N m/rad, N m/(rad s),
    N m s/rad ... as p, i, d], ``i_clamp`` (n,) [N m] the bound of the integral term."""

    def __init__(self, p, i, d, i_clamp):
        self.p, self.i, self.d, self.i_clamp = (np.asarray(x, dtype=float) for x in (p, i, d, i_clamp))
        self.i_term = np.zeros_like(self.p)

    def command(self, e, e_dot, dt):
        """(n,) effort for the position error ``e`` and velocity error ``e_dot`` (n,) after ``dt`` [s]."""
        if dt > 0:
            self.i_term = np.clip(self.i_term + self.i * dt * e, -self.i_clamp, self.i_clamp)
        return self.p * e + self.i_term + self.d * e_dot


def floats(text):
    return [float(x) for x in text.split(',')]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--namespace', default='/')
    parser.add_argument('--joints', required=True)
    parser.add_argument('--max-state-age', type=float, default=0.0)
    for gain in ('p', 'i', 'd', 'i-clamp'):
        parser.add_argument('--' + gain, type=floats, required=True)
    args = parser.parse_args()
    joints = args.joints.split(',')
    pid = Pid(args.p, args.i, args.d, args.i_clamp)
    state = {'sampler': None, 'start_ns': 0, 'last_ns': None}

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    rclpy.init()
    node = rclpy.create_node('pid_trajectory_controller', namespace=args.namespace,
                             parameter_overrides=[Parameter('use_sim_time', value=True)])
    pub = node.create_publisher(Float64MultiArray, 'effort_controller/commands',
                                QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))

    def on_trajectory(msg):
        state['sampler'] = TrajectorySampler(joints, msg)
        state['start_ns'] = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    max_age_ns = int(args.max_state_age * 1e9)

    def on_state(msg):
        now = node.get_clock().now().nanoseconds
        if max_age_ns and now - (msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec) > max_age_ns:
            return                                # a state that waited in a queue gives no command
        index = {n: k for k, n in enumerate(msg.name)}
        q = np.array([msg.position[index[j]] for j in joints])
        qd = np.array([msg.velocity[index[j]] for j in joints])
        sampler = state['sampler']
        if sampler is None:                       # holds where it first finds the arm, as after activation
            state['sampler'] = sampler = TrajectorySampler(joints, hold(joints, q))
        q_d, qd_d, _ = sampler.sample((now - state['start_ns']) * 1e-9)
        last = state['last_ns']
        dt = 0.0 if last is None else (now - last) * 1e-9
        state['last_ns'] = now
        pub.publish(Float64MultiArray(data=pid.command(q_d - q, qd_d - qd, dt).tolist()))

    node.create_subscription(JointTrajectory, '~/trajectory', on_trajectory, 10)
    node.create_subscription(JointState, 'joint_states', on_state,
                             QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT))
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def hold(joints, q):
    """A one-point JointTrajectory at ``q`` (n,)."""
    from trajectory_msgs.msg import JointTrajectoryPoint
    return JointTrajectory(joint_names=list(joints), points=[JointTrajectoryPoint(positions=q.tolist())])


if __name__ == '__main__':
    main()
