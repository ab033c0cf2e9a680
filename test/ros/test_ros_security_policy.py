"""config/sros2_policy.xml grants each node exactly what it uses.

Each node runs (default name, every optional input and output on:
publish_command, use_sim_time, the momentum observer with collision events
and a wrench link, the description from its topic) and its
publishers, subscriptions and services are read from the ROS graph; the
policy's profile for it, with the SROS2 name rules (absolute "/x", private
"~/x", else relative to the namespace), must list exactly those, with the
right permission. The policy is written for the root namespace; the test
resolves relative and private names in the namespace the node runs in.
"""
import time
import xml.etree.ElementTree as ET

import pytest

from robot_dynamics.ros import query_services

from conftest import ROOT, wait_for

POLICY = ROOT / 'config' / 'sros2_policy.xml'

DYNAMICS_PARAMS = {'publish_command': True, 'use_sim_time': True, 'observer_gains': [20.0],
                   'collision_thresholds': [5.0], 'external_wrench_link': 'panda_link8',
                   'services_node': 'dynamics_node_services'}
#: module, node name, parameters that switch every optional entity on, enclave.
TARGETS = [
    ('dynamics_node', 'dynamics_node', DYNAMICS_PARAMS, '/robot_dynamics/dynamics_node'),
    ('dynamics_services', 'dynamics_services', {'use_sim_time': True}, '/robot_dynamics/dynamics_services'),
    ('lifecycle_node', 'dynamics_node', DYNAMICS_PARAMS, '/robot_dynamics/dynamics_lifecycle_node'),
    # beside dynamics_node, as the launch files start it (query_services.py): its services under dynamics_node's names
    ('dynamics_services', 'dynamics_node_services', {'use_sim_time': True}, '/robot_dynamics/dynamics_node_services'),
]
#: The remaps the launch files give a node (dynamics_services beside dynamics_node).
REMAPS = {'dynamics_node_services': dict(query_services.remappings('dynamics_node'))}
#: Hidden nodes of a node's process (same enclave) whose entities are the node's: dynamics_node's services' thread.
HELPERS = {'dynamics_node': ['_dynamics_node_services']}


def resolve(name, ns, node):
    """A policy name as SROS2's permissions template resolves it."""
    ns = ns.rstrip('/') + '/'
    if name.startswith('/'):
        return name
    if name.startswith('~'):
        return ns + node + name[1:]
    return ns + name


def policy_grants(node, ns, enclave):
    """{'publish': set, 'subscribe': set, 'reply': set, 'request': set} of ``node``'s profile in ``enclave``."""
    root = ET.parse(POLICY).getroot()
    assert root.tag == 'policy' and root.get('version') == '0.2.0'
    profiles = [p for e in root.iter('enclave') if e.get('path') == enclave
                for p in e.iter('profile') if p.get('node') == node]
    assert len(profiles) == 1, 'one profile for %s in %s expected, found %d' % (node, enclave, len(profiles))
    grants = {'publish': set(), 'subscribe': set(), 'reply': set(), 'request': set()}
    for group in profiles[0]:
        items = [e.text.strip() for e in group]
        for permission, value in group.attrib.items():
            assert value in ('ALLOW', 'DENY'), value
            if value == 'ALLOW':
                grants[permission] |= {resolve(x, ns, node) for x in items}
    return grants


def test_each_node_has_its_own_enclave():
    root = ET.parse(POLICY).getroot()
    paths = {e.get('path'): [p.get('node') for p in e.iter('profile')] for e in root.iter('enclave')}
    assert paths == {enclave: [node] for _, node, _, enclave in TARGETS}


@pytest.mark.parametrize('module, node, params, enclave', TARGETS, ids=[t[0] for t in TARGETS])
def test_policy_lists_exactly_what_the_node_uses(ros, start_node, module, node, params, enclave):
    ns = '/sros_%d' % time.monotonic_ns()
    proc = start_node(module, params, name=node, ns=ns, remaps=REMAPS.get(node))
    if module == 'lifecycle_node':            # configured through its lifecycle service: then every entity is there
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState
        ros.wait_for_service(proc.topic('~/change_state'), process=proc)
        req = ChangeState.Request(transition=Transition(id=Transition.TRANSITION_CONFIGURE))
        assert ros.call(ChangeState, proc.topic('~/change_state'), req, timeout=120.0, idempotent=False).success
    ros.wait_for_service(proc.topic('~/set_payload'), process=proc)
    graph = ros.node
    want = policy_grants(node, ns, enclave)
    helpers = HELPERS.get(node, [])

    def current():
        names = graph.get_node_names_and_namespaces()
        if (node, ns) not in names:
            return {}
        nodes = [node] + [h for h in helpers if (h, ns) in names]
        return {
            'publish': {n for x in nodes for n, _ in graph.get_publisher_names_and_types_by_node(x, ns)},
            'subscribe': {n for x in nodes for n, _ in graph.get_subscriber_names_and_types_by_node(x, ns)},
            'reply': {n for x in nodes for n, _ in graph.get_service_names_and_types_by_node(x, ns)},
            'request': {n for x in nodes for n, _ in graph.get_client_names_and_types_by_node(x, ns)},
        }
    # Discovery delivers the node's entities one by one: wait until they settle.
    got = wait_for(lambda: current() if current() == want else None, 10, 0.1) or current()
    assert got, 'node %s/%s not in the graph' % (ns, node)
    for permission in want:
        assert got[permission] - want[permission] == set(), \
            '%s %s not granted by the policy' % (node, permission)
        assert want[permission] - got[permission] == set(), \
            '%s: policy grants %s it does not use' % (node, permission)
    assert got['publish'] and got['subscribe'] and got['reply']
