"""A client process that calls dynamics_node's services with large and malformed requests (for
test_ros_service_stall.py, which times the node's commands meanwhile in another process).

    python test/ros/service_flood.py --node /ns/dynamics_node --names j1,...,j7 --rounds 2

Every request is built before the first call; ``ready`` is printed once every service is matched, and the
first call made ``--settle`` seconds later. Prints one JSON line per answer:
``{"kind", "service", "seconds" (send to answer), "success", "message"}``, or
``"success": null`` when no answer came within --timeout [s]; then ``done``.
"""
import argparse
import array
import json
import time

import rclpy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from robot_dynamics_interfaces.srv import (CheckTrajectory, GravityCompensation, IdentifyPayload, InverseDynamics,
                                           MassMatrix, RetimeTrajectory, TrajectoryEfforts)

HUGE = 100_000


def trajectory(names, points, width=None):
    """A TrajectoryEfforts request of ``points`` points 1 ms apart (positions, velocities, accelerations of
    ``width`` values each, default one per name)."""
    width = len(names) if width is None else width
    req = TrajectoryEfforts.Request()
    req.trajectory.joint_names = list(names)
    zeros = array.array('d', bytes(8 * width))
    pts = []
    for k in range(points):
        p = JointTrajectoryPoint(positions=zeros, velocities=zeros, accelerations=zeros)
        p.time_from_start.sec, p.time_from_start.nanosec = divmod(k, 1000)
        p.time_from_start.nanosec *= 1_000_000
        pts.append(p)
    req.trajectory.points = pts
    return req


def waypoints(names, count):
    """A RetimeTrajectory request of ``count`` Panda waypoints (within its joint limits) at the grid's maximum."""
    import numpy as np
    rng = np.random.default_rng(26)
    lower = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
    upper = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
    W = 0.5 * (lower + upper) + 0.4 * (upper - lower) * rng.uniform(-1.0, 1.0, (count, len(names)))
    req = RetimeTrajectory.Request(gridpoints=10000)
    req.waypoints.joint_names = list(names)
    req.waypoints.points = [JointTrajectoryPoint(positions=w.tolist()) for w in W]
    return req


def requests(names):
    n = len(names)
    q = array.array('d', [0.1] * n)
    huge_js = GravityCompensation.Request()
    huge_js.joint_state.name = ['joint_%d' % k for k in range(HUGE)]
    huge_js.joint_state.position = array.array('d', bytes(8 * HUGE))
    huge_acc = InverseDynamics.Request(joint_state=JointState(name=names, position=q, velocity=q),
                                       acceleration=array.array('d', bytes(8 * HUGE)))
    samples = [JointState(name=names, position=q, velocity=q, effort=q) for _ in range(5000)]
    return [
        ('trajectory of 100,000 points', TrajectoryEfforts, '~/fill_trajectory_efforts', trajectory(names, HUGE)),
        ('trajectory with 3 positions for 7 names', TrajectoryEfforts, '~/fill_trajectory_efforts',
         trajectory(names, 500, width=3)),
        ('trajectory of 1,000 points', TrajectoryEfforts, '~/fill_trajectory_efforts', trajectory(names, 1000)),
        ('joint state of 100,000 names', GravityCompensation, '~/gravity_compensation', huge_js),
        ('100,000 accelerations', InverseDynamics, '~/inverse_dynamics', huge_acc),
        ('identification of 5,000 samples', IdentifyPayload, '~/identify_payload',
         IdentifyPayload.Request(link='panda_link7', samples=samples)),
        ('mass matrix', MassMatrix, '~/mass_matrix', MassMatrix.Request(joint_state=JointState(name=names, position=q))),
        ('retiming of 20 waypoints', RetimeTrajectory, '~/retime_trajectory', waypoints(names, 20)),
        ('retiming of 1,001 waypoints', RetimeTrajectory, '~/retime_trajectory', waypoints(names, 1001)),
        ('check of 100,000 points', CheckTrajectory, '~/check_trajectory',
         CheckTrajectory.Request(trajectory=trajectory(names, HUGE).trajectory)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--node', required=True)
    parser.add_argument('--names', required=True)
    parser.add_argument('--rounds', type=int, default=1)
    parser.add_argument('--timeout', type=float, default=20.0)
    parser.add_argument('--settle', type=float, default=1.0,
                        help="seconds between 'ready' (every service matched) and the first request")
    args = parser.parse_args()
    names = args.names.split(',')
    rclpy.init()
    node = rclpy.create_node('service_flood')
    calls = requests(names)
    clients = {}
    for _, srv, name, _ in calls:
        if name not in clients:
            clients[name] = node.create_client(srv, args.node + name[1:])
            assert clients[name].wait_for_service(timeout_sec=30), name
    print('ready', flush=True)
    time.sleep(args.settle)          # the discovery of this process is over before the first request
    for _ in range(args.rounds):
        for kind, _, name, req in calls:
            t0 = time.monotonic()
            future = clients[name].call_async(req)
            rclpy.spin_until_future_complete(node, future, timeout_sec=args.timeout)
            res = future.result() if future.done() else None
            print(json.dumps({'kind': kind, 'service': name, 'seconds': round(time.monotonic() - t0, 4),
                              'success': None if res is None else bool(res.success),
                              'message': None if res is None else res.message[:300]}), flush=True)
    print('done', flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
