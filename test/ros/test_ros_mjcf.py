"""An MJCF robot in the nodes: ``urdf_path`` names an MJCF file (root element <mujoco>), and
dynamics_services answers with the model MuJoCo's compiler gives, armature included
(the Panda compiled into MJCF with Menagerie's armature, 0.1 kg m^2 on every joint)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import InverseDynamics, MassMatrix

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_mjcf import mujoco, panda_mjcf  # noqa: E402
from reporting import require  # noqa: E402

Q = np.array([0.2, -0.4, 0.3, -1.9, -0.1, 1.2, 0.6])
QD = np.array([0.3, 0.2, -0.5, 0.4, 0.1, -0.3, 0.8])
QDD = np.array([1.0, -0.5, 0.25, 0.0, 2.0, -1.0, 0.5])


@pytest.fixture(scope='module')
def mjcf_services(ros, tmp_path_factory):
    require("mujoco (MuJoCo's Python package)", mujoco is not None)
    from conftest import launch_node
    folder = tmp_path_factory.mktemp('mjcf')
    path = folder / 'panda.xml'
    path.write_text(panda_mjcf(armature=0.1, damping=0.0))
    proc = launch_node(folder, 'dynamics_services', {'urdf_path': str(path)})
    try:
        ros.wait_for_service(proc.topic('~/set_payload'), process=proc)
        yield proc, rd.load_mjcf(path)
    finally:
        proc.stop()


def test_the_services_answer_with_the_mjcf_model_and_its_armature(ros, mjcf_services):
    proc, model = mjcf_services
    names = list(model.joint_names)
    req = MassMatrix.Request()
    req.joint_state.name, req.joint_state.position = names, [float(x) for x in Q]
    res = ros.call(MassMatrix, proc.topic('~/mass_matrix'), req)
    assert res.success, res.message
    M = np.reshape(res.mass_matrix, (7, 7))
    np.testing.assert_allclose(M, rd.mass_matrix(model, Q), atol=1e-9)
    urdf = rd.load_urdf(str(Path(__file__).resolve().parents[2] / 'urdf' / 'panda_arm.urdf'))
    np.testing.assert_allclose(M - rd.mass_matrix(urdf, Q), 0.1 * np.eye(7), atol=2e-5)   # XML: ~7 digits
    req = InverseDynamics.Request()
    req.joint_state.name = names
    req.joint_state.position, req.joint_state.velocity = [float(x) for x in Q], [float(x) for x in QD]
    req.acceleration = [float(x) for x in QDD]
    res = ros.call(InverseDynamics, proc.topic('~/inverse_dynamics'), req)
    assert res.success, res.message
    np.testing.assert_allclose(res.torques.effort, rd.rnea(model, Q, QD, QDD), atol=1e-9)


def test_the_simulator_runs_the_mjcf_arm_with_its_armature(ros, start_node, tmp_path):
    """simulator_node on the MJCF Panda (armature 0.1 kg m^2 on every joint): its zero-torque fall is
    the core simulate() of rd.load_mjcf's model, step for step, and not the URDF arm's (which has none)."""
    require("mujoco (MuJoCo's Python package)", mujoco is not None)
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from robot_dynamics.simulation import simulate
    from conftest import stamp_s
    path = tmp_path / 'panda.xml'
    path.write_text(panda_mjcf(armature=0.1, damping=0.0))
    model = rd.load_mjcf(path)
    q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    proc = start_node('simulator_node', {'urdf_path': str(path), 'initial_positions': q0.tolist(),
                                         'publish_rate': 250.0, 'marker_rate': 0.0, 'publish_clock': True,
                                         'effort_commands_topic': 'effort_controller/commands'})
    ros.wait_for_subscriber(proc.topic('effort_controller/commands'), process=proc)
    states = ros.subscribe(JointState, proc.topic('joint_states'), QoSProfile(depth=1000,
                                                                                reliability=ReliabilityPolicy.RELIABLE))
    assert states.wait(count=100, timeout=10), proc.read_log()
    msgs = list(states.messages)
    assert list(msgs[0].name) == list(model.joint_names)
    t = np.array([stamp_s(m) for m in msgs])
    k = np.round(t / 1e-3).astype(int)
    run = simulate(model, q0, duration=t[-1], dt=1e-3)
    np.testing.assert_allclose([m.position for m in msgs], run.q[k], atol=1e-9)
    urdf = rd.load_urdf(str(Path(__file__).resolve().parents[2] / 'urdf' / 'panda_arm.urdf'))
    bare = simulate(urdf, q0, duration=t[-1], dt=1e-3)
    assert np.max(np.abs(bare.q[k[-1]] - run.q[k[-1]])) > 1e-4          # the armature slows the fall
