"""dynamics_node's diagnostics period: what it publishes is the state and the parameters of now.

The period runs in the torque loop's thread and keeps what does not change from one period to the next (each
value's serialized KeyValue while its text stays the same, cdr.DiagnosticArrayWriter; the text of the held
impedance target while the target does): after new joint states, a parameter change, a new model and a payload,
the published values are the new ones. The node runs in this process (its own context) and what it publishes is
read back with rclpy's deserialization; test_ros_dynamics_node.py reads /diagnostics over DDS."""
import gc
import sys
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from conftest import PANDA

NAMES = ['panda_joint%d' % k for k in range(1, 8)]


@pytest.fixture
def node():
    """A configured DynamicsNode on the Panda in cartesian_impedance, its /diagnostics publishes collected in
    ``node.sent`` instead of sent."""
    import rclpy
    from robot_dynamics.ros.dynamics_node import DynamicsNode

    switch = sys.getswitchinterval()
    context = rclpy.Context()
    rclpy.init(context=context)
    overrides = [Parameter(k, value=v) for k, v in {
        'urdf_path': str(PANDA), 'mode': 'cartesian_impedance', 'publish_command': True, 'command_topic': 'commands',
        'joint_state_timeout': 0.5}.items()]
    node = DynamicsNode(context=context, parameter_overrides=overrides)
    try:
        node.configure()
        node.sent = []
        node.diagnostics.publish = node.sent.append
        yield node
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        sys.setswitchinterval(switch)           # create_inputs set them for the torque loop
        gc.unfreeze()


def feed(node, n, q=0.1):
    for k in range(n):
        msg = JointState(name=NAMES, position=[q + 1e-5 * k] * 7, velocity=[0.01] * 7)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
        node.on_joint_state(serialize_message(msg))


def period(node):
    """One diagnostics period: (its status, its values {key: value}), as a subscriber reads them."""
    node.publish_diagnostics()
    array = deserialize_message(node.sent[-1], DiagnosticArray)
    assert len(array.status) == 1
    status = array.status[0]
    keys = [kv.key for kv in status.values]
    assert len(keys) == len(set(keys)), keys
    return status, {kv.key: kv.value for kv in status.values}


def test_each_period_publishes_the_state_and_parameters_of_now(node):
    feed(node, 20)
    status, first = period(node)
    assert (status.name, status.hardware_id, status.message) == ('dynamics_node: dynamics', 'panda',
                                                                   'publishing (cartesian_impedance)')
    assert (first['mode'], first['effort_limit_scale'], first['messages_in'], first['commands_out']) == (
        'cartesian_impedance', '1.0', '20', '20')
    assert first['impedance_link'] == 'panda_hand_tcp' and first['robot'] == 'panda'
    held = node.pipeline.target
    assert first['target'] == 'position %s m, quaternion %s (panda_link0)' % (
        np.round(held.position, 4), np.round(held.quaternion, 4))

    # New joint states: the counters of the state move; what did not change is the same text.
    feed(node, 5)
    _, second = period(node)
    assert (second['messages_in'], second['commands_out']) == ('25', '25')
    assert all(second[k] == first[k] for k in ('mode', 'effort_limit_scale', 'robot', 'joints', 'target'))

    # A new pose target: the target's text is that of the new one.
    now = node.now_ns()
    assert held.offer_pose('', (0.4, -0.1, 0.5), (1.0, 0.0, 0.0, 0.0), now, now) is None
    _, third = period(node)
    assert third['target'] == 'position [ 0.4 -0.1  0.5] m, quaternion [1. 0. 0. 0.] (panda_link0)'
    assert third['targets_in'] == '1'

    # Parameter changes: their echoes and what they decide.
    results = node.set_parameters([Parameter('mode', value='joint_impedance'),
                                   Parameter('effort_limit_scale', value=0.5)])
    assert all(r.successful for r in results), [r.reason for r in results]
    feed(node, 3, q=0.2)
    status, fourth = period(node)
    assert (fourth['mode'], fourth['effort_limit_scale'], fourth['impedance_link']) == (
        'joint_impedance', '0.5', '(joint space)')
    assert fourth['target'] == 'joints %s' % np.round(node.pipeline.target.q, 4)
    assert fourth['target'].startswith('joints [0.2 ') and status.message == 'publishing (joint_impedance)'
    assert fourth['messages_in'] == '28'


def test_a_new_model_and_a_payload_are_published_in_the_next_period(node):
    feed(node, 5)
    status, before = period(node)
    assert (status.hardware_id, before['robot'], before['model_updates']) == ('panda', 'panda', '1')
    assert (before['payload_mass_kg'], before['payload_links']) == ('0', '')

    # A new description (the same arm, named otherwise), as from robot_description.
    node.holder.set_description(PANDA.read_text().replace('<robot name="panda"', '<robot name="panda_b"', 1),
                                fatal=False)
    assert node.model.name == 'panda_b' and node.ready
    feed(node, 5)
    status, after = period(node)
    assert (status.hardware_id, after['robot'], after['model_updates'], after['model_status']) == (
        'panda_b', 'panda_b', '2', 'ok')

    # A payload: the model is rebuilt with it.
    assert node.holder.set_payload('panda_link7', (1.5, np.array([0.0, 0.0, 0.05]), np.eye(3) * 1e-3)) is None
    _, loaded = period(node)
    assert (loaded['payload_mass_kg'], loaded['payload_links']) == ('1.5', 'panda_link7')

    # A rejected description: counted, the model kept.
    node.holder.set_description('<robot name="broken">', fatal=False)
    status, rejected = period(node)
    assert (rejected['descriptions_rejected'], rejected['robot'], rejected['model_status']) == (
        '1', 'panda_b', 'error (previous model kept)')
    assert status.level == b'\x02'             # ERROR


def test_the_services_node_says_what_it_serves():
    """dynamics_services' OK status names what it serves (its hook compared the level, a byte, with 0: never
    equal, so it said 'ok')."""
    import rclpy
    from robot_dynamics.ros.dynamics_services import DynamicsServices

    context = rclpy.Context()
    rclpy.init(context=context)
    node = DynamicsServices(context=context, parameter_overrides=[Parameter('urdf_path', value=str(PANDA))])
    try:
        node.configure()
        node.sent = []
        node.diagnostics.publish = node.sent.append
        status, values = period(node)
        assert (status.level, status.message) == (b'\x00', 'serving (7 joints)')
        assert values['robot'] == 'panda'
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        gc.unfreeze()
