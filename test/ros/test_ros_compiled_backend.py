"""dynamics_node with ``backend: compiled`` (control/backend.py): the laws of the Panda computed by
its generated C, compiled in the background while the library computes; the same torques; a payload
(a new model) compiled again, the library meanwhile; the diagnostics say which computes."""
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from builtin_interfaces.msg import Duration, Time

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import SetPayload

from conftest import PANDA, wait_for
from test_ros_dynamics_node import NAMES, PANDA_MODEL, Q, QD, effort, joint_state, publish_until, start_panda


def backend_of(diag, proc, want, timeout=60.0):
    """Wait until the node's diagnostics report ``backend`` == ``want``; True if they did."""
    def reports(array):
        for s in array.status:
            if proc.name in s.name:
                values = {kv.key: kv.value for kv in s.values}
                return values.get('backend') == want
        return False
    return diag.wait_where(reports, timeout=timeout)


def test_compiled_backend_gives_the_library_s_torques_and_recompiles_a_payload(ros, start_node):
    kp, kd = 100.0, 20.0
    proc = start_panda(ros, start_node, backend='compiled', mode='computed_torque', kp=[kp], kd=[kd],
                       diagnostics_period=0.2)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    total = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    ct = ros.subscribe(JointState, proc.topic('~/computed_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    assert backend_of(diag, proc, 'compiled'), proc.read_log()[-3000:]
    assert 'now come from its generated C' in proc.read_log()

    total.clear()
    got = publish_until(pub, joint_state(NAMES, Q, QD), total)
    np.testing.assert_allclose(effort(got), rd.nonlinear_effects(PANDA_MODEL, Q, QD), rtol=0, atol=1e-9)

    traj_pub = ros.publisher(JointTrajectory, proc.topic('~/trajectory'))
    q_end = Q + 0.05
    traj = JointTrajectory(joint_names=NAMES)
    traj.header.stamp = Time(sec=1)
    traj.points = [JointTrajectoryPoint(positions=Q.tolist(), time_from_start=Duration(sec=0)),
                   JointTrajectoryPoint(positions=q_end.tolist(), time_from_start=Duration(sec=1))]
    wait_for(lambda: traj_pub.get_subscription_count() > 0, 5)
    traj_pub.publish(traj)
    time.sleep(0.2)
    got = publish_until(pub, joint_state(NAMES, Q, QD), ct)
    want = rd.rnea(PANDA_MODEL, Q, QD, kd * (np.zeros(7) - QD) + kp * (q_end - Q))
    np.testing.assert_allclose(effort(got), want, rtol=0, atol=1e-8)

    # A payload is a new model: its code is compiled again; the torques carry the payload at once (the
    # library computes until the new code is loaded), and the backend comes back to compiled.
    req = SetPayload.Request()
    req.payload.link = 'panda_link8'
    req.payload.inertia.m = 1.5
    req.payload.inertia.com.x, req.payload.inertia.com.z = 0.02, 0.05
    res = ros.call(SetPayload, proc.topic('~/set_payload'), req)
    assert res.success, res.message
    loaded = PANDA_MODEL.with_payload('panda_link8', 1.5, (0.02, 0.0, 0.05))
    want = rd.nonlinear_effects(loaded, Q, QD)
    assert wait_for(lambda: pub.publish(joint_state(NAMES, Q, QD)) or (
        total.last() is not None and np.allclose(effort(total.last()), want, rtol=0, atol=1e-9)), 10)
    assert backend_of(diag, proc, 'compiled')
    total.clear()
    got = publish_until(pub, joint_state(NAMES, Q, QD), total)
    np.testing.assert_allclose(effort(got), want, rtol=0, atol=1e-9)


def test_without_a_compiler_the_library_computes_and_the_node_says_why(ros, start_node):
    # A gravity of its own: a model whose code no earlier run has compiled and cached.
    gravity = (0.0, 0.0, -9.80665)
    proc = start_node('dynamics_node', {'urdf_path': str(PANDA), 'backend': 'compiled', 'gravity': list(gravity),
                                        'diagnostics_period': 0.2},
                      env={'CC': 'no-such-compiler-rd'})
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    total = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    got = publish_until(pub, joint_state(NAMES, Q, QD), total)
    np.testing.assert_allclose(effort(got), rd.nonlinear_effects(PANDA_MODEL.with_gravity(gravity), Q, QD),
                               rtol=0, atol=1e-9)
    assert backend_of(diag, proc, 'library (failed)')
    assert wait_for(lambda: "'no-such-compiler-rd' was not found" in proc.read_log(), 10), proc.read_log()[-2000:]
