"""The dynamics services end to end (dynamics_services node in its own process).

Correct answers equal the library's values; failures answer success=false
with a message that names what is wrong.
"""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import (ForwardDynamics, GravityCompensation, InverseDynamics,
                                           MassMatrix, SetPayload, TrajectoryEfforts)

from conftest import PANDA, wait_for

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
Q = np.array([0.2, -0.4, 0.3, -1.9, -0.1, 1.2, 0.6])
QD = np.array([0.3, 0.2, -0.5, 0.4, 0.1, -0.3, 0.8])
QDD = np.array([1.0, -0.5, 0.25, 0.0, 2.0, -1.0, 0.5])
PERM = [3, 6, 0, 5, 1, 4, 2]                  # requests name joints out of model order


@pytest.fixture(scope='module')
def services(ros, tmp_path_factory):
    """One dynamics_services process for the module (terminated at its end)."""
    from conftest import launch_node
    proc = launch_node(tmp_path_factory.mktemp('srv'), 'dynamics_services', {'urdf_path': str(PANDA)})
    try:
        ros.wait_for_service(proc.topic('~/set_payload'), process=proc)
        yield proc
    finally:
        proc.stop()


def named(request_state, names, **arrays):
    request_state.name = list(names)
    for field, values in arrays.items():
        setattr(request_state, field, [float(x) for x in values])


def test_gravity_compensation(ros, services):
    req = GravityCompensation.Request()
    named(req.joint_state, [NAMES[i] for i in PERM] + ['extra_joint'], position=list(Q[PERM]) + [9.0])
    res = ros.call(GravityCompensation, services.topic('~/gravity_compensation'), req)
    assert res.success, res.message
    assert list(res.torques.name) == NAMES
    np.testing.assert_allclose(res.torques.effort, rd.gravity_torques(MODEL, Q), atol=1e-9)


def test_gravity_compensation_explains_failures(ros, services):
    srv = services.topic('~/gravity_compensation')
    req = GravityCompensation.Request()
    named(req.joint_state, NAMES[:6], position=Q[:6])
    res = ros.call(GravityCompensation, srv, req)
    assert not res.success and 'missing joint' in res.message and 'panda_joint7' in res.message
    named(req.joint_state, NAMES, position=list(Q[:3]) + [float('inf')] + list(Q[4:]))
    res = ros.call(GravityCompensation, srv, req)
    assert not res.success and 'non-finite' in res.message and 'panda_joint4' in res.message
    named(req.joint_state, NAMES, position=Q[:5])
    res = ros.call(GravityCompensation, srv, req)
    assert not res.success and 'position has 5 values for 7 names' in res.message


def test_inverse_dynamics(ros, services):
    req = InverseDynamics.Request()
    named(req.joint_state, [NAMES[i] for i in PERM], position=Q[PERM], velocity=QD[PERM])
    req.acceleration = [float(x) for x in QDD[PERM]]
    res = ros.call(InverseDynamics, services.topic('~/inverse_dynamics'), req)
    assert res.success, res.message
    np.testing.assert_allclose(res.torques.effort, rd.rnea(MODEL, Q, QD, QDD), atol=1e-9)
    # Empty velocities and accelerations are zeros.
    req = InverseDynamics.Request()
    named(req.joint_state, NAMES, position=Q)
    res = ros.call(InverseDynamics, services.topic('~/inverse_dynamics'), req)
    np.testing.assert_allclose(res.torques.effort, rd.gravity_torques(MODEL, Q), atol=1e-9)
    req.acceleration = [1.0, 2.0]
    res = ros.call(InverseDynamics, services.topic('~/inverse_dynamics'), req)
    assert not res.success and 'acceleration has 2 values for 7 names' in res.message


def test_forward_dynamics(ros, services):
    tau = rd.rnea(MODEL, Q, QD, QDD)
    req = ForwardDynamics.Request()
    named(req.joint_state, [NAMES[i] for i in PERM], position=Q[PERM], velocity=QD[PERM], effort=tau[PERM])
    res = ros.call(ForwardDynamics, services.topic('~/forward_dynamics'), req)
    assert res.success, res.message
    assert list(res.name) == NAMES
    np.testing.assert_allclose(res.acceleration, QDD, atol=1e-8)
    named(req.joint_state, NAMES, position=Q, velocity=[float('nan')] * 7)
    res = ros.call(ForwardDynamics, services.topic('~/forward_dynamics'), req)
    assert not res.success and 'non-finite velocity' in res.message


def test_mass_matrix(ros, services):
    req = MassMatrix.Request()
    named(req.joint_state, [NAMES[i] for i in PERM], position=Q[PERM])
    res = ros.call(MassMatrix, services.topic('~/mass_matrix'), req)
    assert res.success and list(res.name) == NAMES
    np.testing.assert_allclose(np.reshape(res.mass_matrix, (7, 7)), rd.mass_matrix(MODEL, Q), atol=1e-9)
    res = ros.call(MassMatrix, services.topic('~/mass_matrix'), MassMatrix.Request())
    assert not res.success and 'missing joint' in res.message


def test_fill_trajectory_efforts(ros, services):
    K = 5
    t = np.linspace(0, 1, K)
    Qs = Q + np.outer(t, QD)
    QDs = np.tile(QD, (K, 1))
    QDDs = np.outer(np.ones(K), QDD)
    names = [NAMES[i] for i in PERM] + ['gripper_joint']
    traj = JointTrajectory(joint_names=names)
    for k in range(K):
        traj.points.append(JointTrajectoryPoint(
            positions=list(Qs[k][PERM]) + [0.01], velocities=list(QDs[k][PERM]) + [0.0],
            accelerations=list(QDDs[k][PERM]) + [0.0],
            time_from_start=Duration(sec=0, nanosec=int(t[k] * 0.9e9) + 1)))
    req = TrajectoryEfforts.Request(trajectory=traj, include_friction=True)
    res = ros.call(TrajectoryEfforts, services.topic('~/fill_trajectory_efforts'), req)
    assert res.success, res.message
    want = rd.rnea(MODEL, Qs, QDs, QDDs) + rd.friction_torques(MODEL, QDs, smoothing=0.01)
    got = np.array([p.effort for p in res.trajectory.points])
    np.testing.assert_allclose(got[:, :7], want[:, PERM], atol=1e-9)
    assert np.all(got[:, 7] == 0.0)
    np.testing.assert_allclose([p.positions for p in res.trajectory.points],
                               [p.positions for p in traj.points])
    bad = JointTrajectory(joint_names=NAMES[:6], points=[JointTrajectoryPoint(positions=[0.0] * 6)])
    res = ros.call(TrajectoryEfforts, services.topic('~/fill_trajectory_efforts'),
                   TrajectoryEfforts.Request(trajectory=bad))
    assert not res.success and 'panda_joint7' in res.message


def test_payload_changes_service_answers(ros, services):
    srv = services.topic('~/set_payload')
    req = SetPayload.Request()
    req.payload.link = 'panda_hand'
    req.payload.inertia.m = 1.5
    req.payload.inertia.com.x = 0.02
    req.payload.inertia.com.z = 0.05
    res = ros.call(SetPayload, srv, req)
    assert res.success, res.message
    try:
        g_req = GravityCompensation.Request()
        named(g_req.joint_state, NAMES, position=Q)
        res = ros.call(GravityCompensation, services.topic('~/gravity_compensation'), g_req)
        loaded = MODEL.with_payload('panda_hand', 1.5, (0.02, 0.0, 0.05))
        np.testing.assert_allclose(res.torques.effort, rd.gravity_torques(loaded, Q), atol=1e-9)
        # Replacing, not adding: the same link again.
        req.payload.inertia.m = 0.5
        res = ros.call(SetPayload, srv, req)
        assert res.success and res.total_payload_mass == pytest.approx(0.5)
    finally:
        clear = SetPayload.Request(clear=True)
        clear.payload.link = 'panda_hand'
        res = ros.call(SetPayload, srv, clear)
        assert res.success and res.total_payload_mass == 0.0


def test_no_model_yet_is_explained(ros, start_node):
    proc = start_node('dynamics_services', {'robot_description_topic': '/rd_nobody_publishes_this'})
    req = GravityCompensation.Request()
    named(req.joint_state, NAMES, position=Q)
    ros.wait_for_service(proc.topic('~/gravity_compensation'), process=proc)
    res = ros.call(GravityCompensation, proc.topic('~/gravity_compensation'), req)
    assert not res.success and 'no robot model yet' in res.message and '/rd_nobody_publishes_this' in res.message


# --- dynamics_node with dynamics_services beside it (robot_dynamics/ros/query_services.py) ------------------------

def _payload(link, m, com):
    req = SetPayload.Request()
    req.payload.link, req.payload.inertia.m = link, m
    req.payload.inertia.com.x, req.payload.inertia.com.y, req.payload.inertia.com.z = com
    req.payload.inertia.ixx = req.payload.inertia.iyy = req.payload.inertia.izz = 0.01
    return req


def test_dynamics_node_s_services_come_from_dynamics_services_with_its_payloads(ros, start_node):
    from probes import Diagnostics
    proc = start_node.with_services({'urdf_path': str(PANDA), 'diagnostics_period': 0.1})
    diag = Diagnostics(ros, proc.fqn)
    ros.wait_for_service(proc.topic('~/gravity_compensation'), process=proc)
    ros.wait_for_service(proc.topic('~/set_payload'), process=proc)
    # dynamics_node itself serves no read-only service: every one under its name comes from one other node.
    assert wait_for(lambda: (proc.name, proc.namespace) in ros.node.get_node_names_and_namespaces(), 5)

    def own():
        return dict(ros.node.get_service_names_and_types_by_node(proc.name, proc.namespace))
    assert wait_for(lambda: proc.topic('~/set_payload') in own(), 5), sorted(own())
    assert not {s for s in own() if s.rsplit('/', 1)[-1] in ('gravity_compensation', 'inverse_dynamics',
                                                            'forward_dynamics', 'mass_matrix',
                                                            'fill_trajectory_efforts', 'retime_trajectory',
                                                            'check_trajectory')}, sorted(own())
    req = GravityCompensation.Request()
    named(req.joint_state, NAMES, position=Q)

    def gravity():
        res = ros.call(GravityCompensation, proc.topic('~/gravity_compensation'), req)
        assert res.success, res.message
        return np.array(res.torques.effort)
    np.testing.assert_allclose(gravity(), rd.gravity_torques(MODEL, Q), atol=1e-9)
    # A payload set on dynamics_node reaches the services under its name (diagnostics: services_payloads).
    res = ros.call(SetPayload, proc.topic('~/set_payload'), _payload('panda_hand', 1.5, (0.0, 0.0, 0.1)))
    assert res.success, res.message
    assert diag.wait(lambda v: v['services_payloads'] == 'in sync' and float(v['payload_mass_kg']) == 1.5, 5), \
        diag.get()
    loaded = MODEL.with_payload('panda_hand', 1.5, np.array([0.0, 0.0, 0.1]), 0.01 * np.eye(3))
    np.testing.assert_allclose(gravity(), rd.gravity_torques(loaded, Q), atol=1e-9)
    assert np.abs(gravity() - rd.gravity_torques(MODEL, Q)).max() > 0.1         # the payload shows
    # A services node that comes back (restarted) gets the payloads again.
    proc.services.stop()
    proc.services = start_node.services_for(proc, {'urdf_path': str(PANDA)})
    ros.wait_for_service(proc.topic('~/gravity_compensation'), process=proc.services)
    assert wait_for(lambda: np.allclose(gravity(), rd.gravity_torques(loaded, Q), atol=1e-9), 10), gravity()
    # Replaced, then cleared: the services follow.
    ros.call(SetPayload, proc.topic('~/set_payload'), _payload('panda_link5', 0.7, (0.05, 0.0, 0.0)))
    both = loaded.with_payload('panda_link5', 0.7, np.array([0.05, 0.0, 0.0]), 0.01 * np.eye(3))
    assert wait_for(lambda: np.allclose(gravity(), rd.gravity_torques(both, Q), atol=1e-9), 5), gravity()
    ros.call(SetPayload, proc.topic('~/set_payload'), SetPayload.Request(clear=True))
    assert wait_for(lambda: np.allclose(gravity(), rd.gravity_torques(MODEL, Q), atol=1e-9), 5), gravity()
