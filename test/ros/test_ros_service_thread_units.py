"""robot_dynamics.ros.service_thread in one process (rclpy, no kernels): requests over the limit are refused
before conversion, the others reach the handler, in the services' thread, under the main node's names."""
import array
import threading

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from robot_dynamics.ros.service_thread import MAX_JOINT_VALUES, ServiceThread
from robot_dynamics_interfaces.srv import GravityCompensation, TrajectoryEfforts

from conftest import wait_for

LIMIT = 50                   # trajectory points


@pytest.fixture
def served():
    context = rclpy.Context()
    rclpy.init(context=context)
    main = rclpy.create_node('main_node', namespace='/st_units', context=context)
    client_node = rclpy.create_node('client_node', namespace='/st_units', context=context)
    seen = []

    def handler(request, response):
        seen.append((threading.current_thread().name, request))
        response.success, response.message = True, 'converted'
        return response

    thread = ServiceThread(main)
    thread.create_service(TrajectoryEfforts, '~/fill_trajectory_efforts', handler, lambda: LIMIT)
    thread.create_service(GravityCompensation, '~/gravity_compensation', handler)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(client_node)
    spin = threading.Thread(target=lambda: _spin(executor, context), daemon=True)
    spin.start()
    yield client_node, seen
    thread.destroy()
    executor.shutdown(timeout_sec=1.0)
    main.destroy_node()
    client_node.destroy_node()
    rclpy.try_shutdown(context=context)
    spin.join(timeout=2.0)


def _spin(executor, context):
    while context.ok():
        try:
            executor.spin_once(timeout_sec=0.05)
        except Exception:
            return


def call(node, srv, name, request):
    client = node.create_client(srv, name)
    assert client.wait_for_service(timeout_sec=10), 'no service %s' % name
    future = client.call_async(request)
    assert wait_for(future.done, 10), 'no answer from %s' % name
    return future.result()


def trajectory(points):
    req = TrajectoryEfforts.Request()
    req.trajectory.joint_names = ['a', 'b']
    req.trajectory.points = [JointTrajectoryPoint(positions=array.array('d', [0.0, 0.0])) for _ in range(points)]
    return req


def test_a_trajectory_over_the_limit_is_refused_before_conversion(served):
    node, seen = served
    name = '/st_units/main_node/fill_trajectory_efforts'
    res = call(node, TrajectoryEfforts, name, trajectory(LIMIT + 1))
    assert not res.success and res.message == (
        'request refused before conversion: trajectory has %d points, more than max_request_points (%d); split it, '
        'or use dynamics_services for offline work' % (LIMIT + 1, LIMIT)), res.message
    assert not seen, 'the handler saw a refused request'
    res = call(node, TrajectoryEfforts, name, trajectory(LIMIT))
    assert res.success and res.message == 'converted', res.message
    assert len(seen) == 1 and len(seen[0][1].trajectory.points) == LIMIT
    assert seen[0][0] == 'services', 'handled in thread %r, expected the services thread' % seen[0][0]


def test_a_joint_state_with_too_many_names_is_refused(served):
    node, seen = served
    name = '/st_units/main_node/gravity_compensation'
    n = MAX_JOINT_VALUES + 1
    req = GravityCompensation.Request(joint_state=JointState(name=['j%d' % k for k in range(n)]))
    res = call(node, GravityCompensation, name, req)
    assert not res.success and 'joint_state.name has %d values, more than the %d' % (n, MAX_JOINT_VALUES) \
        in res.message, res.message
    req = GravityCompensation.Request(joint_state=JointState(name=['j1'], position=[0.5]))
    res = call(node, GravityCompensation, name, req)
    assert res.success and list(seen[-1][1].joint_state.position) == [0.5], res.message
