"""The actuators_file parameter end to end (a separate node process, real DDS):
dynamics_node compensates the file's friction laws in gravity_coriolis_friction
mode, and simulator_node simulates the arm with the file's armature and
friction laws, step for step as the core simulate() of the same model."""
import numpy as np
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

import robot_dynamics as rd
from robot_dynamics.simulation import simulate

from conftest import PANDA, stamp_s
from test_ros_dynamics_node import NAMES, Q, QD, effort, joint_state, publish_until, start_panda

PLAIN = rd.load_urdf(str(PANDA))
ACTUATORS = """
panda_joint1: {armature: 0.2, friction: {law: stribeck, static: 1.2, coulomb: 0.7, stribeck_velocity: 0.1, viscous: 0.3}}
panda_joint2: {rotor_inertia: 4.0e-5, gear_ratio: 100, friction: {law: sigmoid, phi1: 0.6, phi2: 5.0, phi3: 0.05}}
panda_joint4: {armature: 0.1, friction: {law: sigmoid, phi1: 0.5, phi2: 8.0, phi3: -0.02}}
panda_joint6: {friction: {law: coulomb, coulomb: 0.2, viscous: 0.1, smoothing: 0.02}}
"""
MODEL = PLAIN.with_actuators(ACTUATORS)
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
DEEP = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def actuators_file(tmp_path):
    path = tmp_path / 'panda_actuators.yaml'
    path.write_text(ACTUATORS)
    return str(path)


def test_dynamics_node_compensates_the_laws_of_the_actuators_file(ros, start_node, tmp_path):
    proc = start_panda(ros, start_node, mode='gravity_coriolis_friction', friction_smoothing=0.0,
                       actuators_file=actuators_file(tmp_path))
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    got = publish_until(pub, joint_state(NAMES, Q, QD), tot)
    assert got is not None, proc.read_log()
    laws = np.array([rd.friction_law_torque(law, v) for law, v in zip(MODEL.friction_laws, QD)])
    np.testing.assert_allclose(effort(got), rd.nonlinear_effects(MODEL, Q, QD) + laws, atol=1e-9)
    # the laws, not the URDF's (zero) friction, and the armature does not enter at qdd = 0
    assert np.abs(laws).max() > 0.5
    np.testing.assert_allclose(rd.nonlinear_effects(MODEL, Q, QD), rd.nonlinear_effects(PLAIN, Q, QD), atol=1e-12)


def test_simulator_node_falls_with_the_armature_and_laws_of_the_actuators_file(ros, start_node, tmp_path):
    proc = start_node('simulator_node', {'urdf_path': str(PANDA), 'initial_positions': Q0.tolist(),
                                         'publish_rate': 250.0, 'marker_rate': 0.0, 'publish_clock': True,
                                         'effort_commands_topic': 'effort_controller/commands',
                                         'actuators_file': actuators_file(tmp_path)})
    ros.wait_for_subscriber(proc.topic('effort_controller/commands'), process=proc)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    assert states.wait(count=150, timeout=10), proc.read_log()
    msgs = list(states.messages)
    t = np.array([stamp_s(m) for m in msgs])
    k = np.round(t / 1e-3).astype(int)
    run = simulate(MODEL, Q0, duration=t[-1], dt=1e-3)
    np.testing.assert_allclose([m.position for m in msgs], run.q[k], atol=1e-9)
    np.testing.assert_allclose([m.velocity for m in msgs], run.qd[k], atol=1e-7)
    bare = simulate(PLAIN, Q0, duration=t[-1], dt=1e-3)
    assert np.max(np.abs(bare.q[k[-1]] - run.q[k[-1]])) > 1e-4           # the actuators change the fall


def test_simulator_node_on_an_mjcf_takes_the_actuators_file_over_its_own(ros, start_node, tmp_path):
    """An MJCF Panda (armature 0.1, damping 1.0 on every joint) with the actuators file: the
    file's joints take its armature and laws, the others keep the MJCF's; the fall is simulate()'s."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_mjcf import mujoco, panda_mjcf
    from reporting import require
    require("mujoco (MuJoCo's Python package)", mujoco is not None)
    path = tmp_path / 'panda.xml'
    path.write_text(panda_mjcf(armature=0.1, damping=1.0))
    model = rd.load_mjcf(path).with_actuators(ACTUATORS)
    assert model.armature[2] == 0.1 and model.friction_laws[2].params == {'viscous': 1.0}     # the MJCF's
    assert model.armature[0] == 0.2 and model.friction_laws[0].law == 'stribeck'             # the file's
    proc = start_node('simulator_node', {'urdf_path': str(path), 'initial_positions': Q0.tolist(),
                                         'publish_rate': 250.0, 'marker_rate': 0.0, 'publish_clock': True,
                                         'effort_commands_topic': 'effort_controller/commands',
                                         'actuators_file': actuators_file(tmp_path)})
    ros.wait_for_subscriber(proc.topic('effort_controller/commands'), process=proc)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    assert states.wait(count=100, timeout=10), proc.read_log()
    msgs = list(states.messages)
    t = np.array([stamp_s(m) for m in msgs])
    k = np.round(t / 1e-3).astype(int)
    run = simulate(model, Q0, duration=t[-1], dt=1e-3)
    np.testing.assert_allclose([m.position for m in msgs], run.q[k], atol=1e-9)
    mjcf_only = simulate(rd.load_mjcf(path), Q0, duration=t[-1], dt=1e-3)
    assert np.max(np.abs(mjcf_only.q[k[-1]] - run.q[k[-1]])) > 1e-5
