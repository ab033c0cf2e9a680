"""The demo's ``--mode cartesian_impedance``: the simulated arm's flange moved between two targets over ROS 2.

simulator_node (joint states at 250 Hz, physics at 1 kHz) and dynamics_node in ``cartesian_impedance``
(``impedance_link`` the last link of the arm, stiffness [500 N/m x3, 30 N m/rad x3], damping ratio 1,
null-space stiffness 5 N m/rad) close the loop on their default topics; this process streams a
geometry_msgs/PoseStamped target on ``<namespace>/dynamics_node/target_pose`` at 50 Hz: the flange's
start pose moved 4 cm along the base's y, then 4 cm the other way, and so on, each held for a quarter
of ``--duration`` (at least 2 s). It measures the flange on the simulator's joint states
(``rd.link_pose``) and prints, per target, the time the flange took to come within 1 mm and its
distance from the target at the end [mm]: the tracking error at rest.
"""
import os
import time

import numpy as np

import robot_dynamics as rd

STEP = 0.04           # [m] each target from the start pose, along the base's y
STIFFNESS = [500.0, 500.0, 500.0, 30.0, 30.0, 30.0]


class Flange:
    """The flange's position [m] at each joint state received (this process's executor thread)."""

    def __init__(self, node, namespace, model, link):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        self.model, self.link = model, link
        self.samples = []                       # (time.monotonic(), position (3,))
        self.order = None
        node.create_subscription(JointState, f'{namespace}/joint_states', self._on_state,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))

    def _on_state(self, msg):
        if self.order is None:
            index = {n: i for i, n in enumerate(msg.name)}
            self.order = [index[n] for n in self.model.joint_names]
        q = np.asarray(msg.position)[self.order]
        self.samples.append((time.monotonic(), rd.link_pose(self.model, q, self.link)[:3, 3]))

    def since(self, t0):
        return [(t, p) for t, p in self.samples if t >= t0]


def run(path, model, q0, duration, namespace, *, nodes, spinner, make_executor, start_timeout):
    """Run the demo for ``duration`` [s] from the pose ``q0`` (nq,); prints the report; returns the exit code.
    The demo's (:mod:`.demo`) pieces: ``nodes`` its Nodes (specs replaced here), ``spinner`` its Spinner
    class, ``make_executor`` the nodes' executor, ``start_timeout`` [s] for the nodes to come up. The
    segments' results are the lines ``target k: ... within 1 mm after X s, at the end Y mm from it``."""
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool

    from ..model.configuration import matrix_quaternion

    link = model.link_names[-1]
    T0 = rd.link_pose(model, q0, link)
    p0, quat0 = T0[:3, 3], matrix_quaternion(T0[:3, :3])
    hold = max(duration / 4.0, 2.0)
    targets = [p0 + [0.0, STEP, 0.0], p0 - [0.0, STEP, 0.0]]
    common = nodes.specs[0][2]
    nodes.specs = [
        ('simulator_node', 'simulator', dict(common, publish_rate=250.0)),
        ('dynamics_node', 'dynamics_node', dict(
            urdf_path=common['urdf_path'], joints=common['joints'], mode='cartesian_impedance', publish_command=True,
            impedance_link=link, stiffness=STIFFNESS, nullspace_stiffness=5.0, joint_state_timeout=0.5)),
    ]
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('robot_dynamics_impedance_demo')
    flange = Flange(node, namespace, model, link)
    torques = []
    node.create_subscription(JointState, f'{namespace}/dynamics_node/impedance_torque', torques.append, 10)
    pub = node.create_publisher(PoseStamped, f'{namespace}/dynamics_node/target_pose', 10)
    executor = make_executor()
    executor.add_node(node)
    spin = spinner(node, executor, nodes)
    results = []
    try:
        nodes.start()
        print(f'Started simulator_node and dynamics_node (cartesian_impedance at {link}) in {namespace} '
              f'(logs in {nodes.folder}); waiting for the loop to close...', flush=True)
        spin.until(lambda: torques, start_timeout, 'the first impedance torque')
        answer = spin.call(SetBool, nodes.processes['simulator'].topic('~/pause'), SetBool.Request(data=False))
        if not answer.success:
            raise RuntimeError(f'the simulator did not resume: {answer.message}')
        print(f'Loop closed; the flange starts at {np.round(p0, 4).tolist()} m (base frame); a new target every '
              f'{hold:g} s, {STEP * 100:g} cm along y.', flush=True)
        for k in range(max(int(round(duration / hold)), 2)):
            target = targets[k % 2]
            start = time.monotonic()
            msg = PoseStamped()
            msg.header.frame_id = model.base_link
            p, o = msg.pose.position, msg.pose.orientation
            p.x, p.y, p.z = (float(x) for x in target)
            o.x, o.y, o.z, o.w = (float(x) for x in quat0)
            while time.monotonic() - start < hold:
                msg.header.stamp = node.get_clock().now().to_msg()
                pub.publish(msg)
                spin.for_seconds(0.02)
                nodes.check()
            samples = flange.since(start)
            errors = np.array([np.linalg.norm(x - target) for _, x in samples])
            outside = np.flatnonzero(errors > 1e-3)
            settle = (samples[outside[-1] + 1][0] - start if len(outside) and outside[-1] + 1 < len(samples)
                      else (0.0 if not len(outside) else float('nan')))
            end = errors[[t >= start + hold - 0.3 for t, _ in samples]]
            results.append((settle, end.max() if len(end) else float('nan')))
            print(f'target {k + 1}: {np.round(target, 4).tolist()} m: within 1 mm after {settle:.2f} s, at the end '
                  f'{results[-1][1] * 1e3:.3f} mm from it', flush=True)
    except KeyboardInterrupt:
        print('\nCtrl-C: stopping', flush=True)
    finally:
        nodes.close(executor, node)
    if results:
        worst = max(r[1] for r in results)
        print(f'\nTracking error at rest (the last 0.3 s of each target), largest: {worst * 1e3:.3f} mm '
              f'over {len(results)} targets ({os.path.basename(path)}, link {link})')
    return 0 if results else 1
