"""A namespace moves every topic of a node: the default topic names are relative.

Each node runs with ``--ros-args -r __ns:=/arm2`` and its default topics
(every optional input and output on), and the ROS graph must show each of
its publishers, subscriptions and services under /arm2. The exceptions are
the topics ROS 2 keeps global: rclpy's /rosout and /parameter_events,
/diagnostics (where diagnostic_aggregator listens) and /clock (the time
source). dynamics_node then closes its loop there: the description and the
joint states it reads and the command it sends are all under /arm2. Two
arms, a Panda in /arm_a and a UR5 in /arm_b, run at once without crosstalk.
"""
import time

import numpy as np
import pytest
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

import robot_dynamics as rd

from conftest import LATCHED, PANDA, UR5, wait_for
from probes import Diagnostics

NS = '/arm2'
GLOBAL = {'/rosout', '/parameter_events', '/diagnostics', '/clock'}
MODEL = rd.load_urdf(str(PANDA))
Q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])

#: module, node name, parameters (every optional entity on; the description from its topic),
#: and topics that must be there, relative to NS.
NODES = [
    ('dynamics_node', 'dynamics_node', {'publish_command': True},
     {'joint_states', 'robot_description', 'effort_controller/commands', 'dynamics_node/compensation_torque'}),
    ('dynamics_services', 'dynamics_services', {}, {'robot_description'}),
    ('simulator_node', 'simulator', {'publish_clock': True},
     {'robot_description', 'effort_controller/commands', 'robot_joint_commands'}),
]


def graph_of(ros, name):
    """{'topics': set, 'services': set} of node ``name`` in NS, from this process's graph."""
    graph = ros.node
    if (name, NS) not in graph.get_node_names_and_namespaces():
        return {'topics': set(), 'services': set()}
    topics = {n for n, _ in graph.get_publisher_names_and_types_by_node(name, NS)}
    topics |= {n for n, _ in graph.get_subscriber_names_and_types_by_node(name, NS)}
    return {'topics': topics, 'services': {n for n, _ in graph.get_service_names_and_types_by_node(name, NS)}}


@pytest.mark.parametrize('module, name, params, expected', NODES, ids=[n[0] for n in NODES])
def test_every_topic_of_a_node_is_in_its_namespace(ros, start_node, module, name, params, expected):
    proc = start_node(module, params, name=name, ns=NS)
    ros.wait_for_service(proc.topic('~/set_payload'), process=proc)
    want = {'%s/%s' % (NS, t) for t in expected}
    # Discovery delivers the node's entities one by one: wait for the ones named above.
    assert wait_for(lambda: want <= graph_of(ros, name)['topics'], 10, 0.05), (want, graph_of(ros, name))
    got = graph_of(ros, name)
    outside = {t for t in got['topics'] if not t.startswith(NS + '/')} - GLOBAL
    assert not outside, 'topics of %s outside %s: %s' % (name, NS, sorted(outside))
    assert got['services'] and all(s.startswith('%s/%s/' % (NS, name)) for s in got['services']), got


def test_dynamics_node_in_a_namespace_closes_its_loop_there(ros, start_node):
    desc = ros.publisher(String, NS + '/robot_description', LATCHED)
    desc.publish(String(data=PANDA.read_text()))
    proc = start_node('dynamics_node', {'publish_command': True, 'mode': 'gravity'}, name='dynamics_node', ns=NS)
    ros.wait_for_subscriber(NS + '/joint_states', process=proc)
    cmd = ros.subscribe(Float64MultiArray, NS + '/effort_controller/commands')
    pub = ros.publisher(JointState, NS + '/joint_states')
    state = JointState(name=list(MODEL.joint_names), position=Q.tolist())
    try:
        assert wait_for(lambda: pub.publish(state) or len(cmd), 30, 0.02), proc.read_log()
        np.testing.assert_allclose(cmd.last().data, rd.gravity_torques(MODEL, Q), atol=1e-9)
    finally:
        ros.node.destroy_publisher(desc)            # latched: it would outlive the test


def test_two_arms_in_two_namespaces_at_once_without_crosstalk(ros, start_node):
    """A Panda in /arm_a and a UR5 in /arm_b, each dynamics_node named 'dynamics_node' with the default
    topics and its description from its namespace's robot_description: every command and torque of an
    arm is its own model's torque of its own states (the header's frame_id says whose), and neither
    node counts a message of the other's as bad."""
    arms = {'/arm_a': (PANDA, Q), '/arm_b': (UR5, np.array([0.3, -1.2, 1.5, -0.8, 1.1, 0.4]))}
    desc, procs, pubs, cmds, tots, diags, models = {}, {}, {}, {}, {}, {}, {}
    for ns, (path, q) in arms.items():
        desc[ns] = ros.publisher(String, ns + '/robot_description', LATCHED)
        desc[ns].publish(String(data=path.read_text()))
        models[ns] = rd.load_urdf(str(path))
        # joint_state_timeout 1 s: a stall of this process on a loaded machine is not crosstalk
        # (bench/watchdog_timing.py times the 0.1 s watchdog).
        procs[ns] = start_node('dynamics_node', {'publish_command': True, 'mode': 'gravity',
                                                 'diagnostics_period': 0.2, 'joint_state_timeout': 1.0},
                               name='dynamics_node', ns=ns)
        diags[ns] = Diagnostics(ros, procs[ns].fqn)
    try:
        for ns in arms:
            ros.wait_for_subscriber(ns + '/joint_states', process=procs[ns])
            cmds[ns] = ros.subscribe(Float64MultiArray, ns + '/effort_controller/commands')
            tots[ns] = ros.subscribe(JointState, ns + '/dynamics_node/compensation_torque')
            pubs[ns] = ros.publisher(JointState, ns + '/joint_states')

        def send(k):
            for ns, (path, q) in arms.items():
                state = JointState(name=list(models[ns].joint_names), position=q.tolist())
                state.header.frame_id = '%s:%d' % (ns, k)
                pubs[ns].publish(state)
        want = {ns: rd.gravity_torques(models[ns], q) for ns, (path, q) in arms.items()}
        k = 0
        deadline = time.monotonic() + 30
        while not all(len(tots[ns]) >= 50 and len(cmds[ns]) >= 50 for ns in arms):
            assert time.monotonic() < deadline, {ns: (len(tots[ns]), len(cmds[ns])) for ns in arms}
            send(k)
            k += 1
            time.sleep(0.01)
        # Taken at once: 1 s after the last state each node's watchdog sends its zero command.
        commands, torques = {}, {}
        for ns in arms:
            with cmds[ns]._lock:
                commands[ns] = [np.array(m.data) for m in cmds[ns].messages]
            with tots[ns]._lock:
                torques[ns] = list(tots[ns].messages)
        for ns in arms:
            assert all(c.shape == want[ns].shape and np.allclose(c, want[ns], rtol=0, atol=1e-9)
                       for c in commands[ns]), (ns, [c for c in commands[ns] if c.shape != want[ns].shape
                                                     or not np.allclose(c, want[ns], rtol=0, atol=1e-9)][:3])
            assert all(m.header.frame_id.startswith(ns + ':') for m in torques[ns]), \
                (ns, sorted({m.header.frame_id.split(':')[0] for m in torques[ns]}))
            assert all(list(m.name) == list(models[ns].joint_names) for m in torques[ns]), ns
            values = diags[ns].wait(lambda v: int(v['messages_out']) >= len(torques[ns]))
            assert values is not None and int(values['bad_messages']) == 0, (ns, values)
        print('two arms: %s' % ', '.join('%s %d torques and %d commands, all its own' % (
            ns, len(torques[ns]), len(commands[ns])) for ns in arms))
    finally:
        for pub in desc.values():
            ros.node.destroy_publisher(pub)           # latched: they would outlive the test
