"""The launch files, evaluated against stand-ins of launch/launch_ros, then run.

generate_launch_description() is called with the stand-ins of
``launch_standins`` (launch and launch_ros are not installable here); the
Nodes it describes are started as real processes with the command line,
parameter files and remappings that `ros2 launch` would use, and the topic
graph and the outputs are checked.
"""
import re
import sys
import time

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import GravityCompensation, MassMatrix

import launch_standins as L
import watchdog_log
from conftest import PANDA, ROOT, wait_for
from controller_manager_standin import read_record

LAUNCH = ROOT / 'launch'
SHARES = {'robot_dynamics': str(ROOT)}        # the checkout mirrors share/robot_dynamics
SCRIPTS = L.console_scripts(ROOT / 'setup.py')
MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
Q = np.array([0.3, -0.5, 0.1, -1.8, 0.2, 1.4, 0.5])


@pytest.fixture
def standins(monkeypatch):
    L.install(monkeypatch)


def in_root(name):
    """The absolute name a node in the root namespace gives topic ``name``."""
    return name if name.startswith('/') else '/' + name


def test_launch_files_declare_the_documented_arguments(standins):
    declared, nodes, context = L.evaluate(LAUNCH / 'gravity_compensation.launch.py', {}, SHARES)
    assert {'urdf', 'params_file', 'command_topic', 'joints'} <= set(declared)
    assert all(d.description for d in declared.values())
    assert context.launch_configurations['robot'] == 'generic'
    assert context.launch_configurations['params_file'] == str(ROOT / 'config' / 'gravity_compensation.yaml')
    params_file, overrides = nodes[0].kwargs['parameters']
    topic = overrides.get('command_topic',
                          yaml.safe_load(open(params_file))['/**']['ros__parameters']['command_topic'])
    assert in_root(topic) == '/effort_controller/commands'
    assert [n.kwargs['executable'] for n in nodes] == ['dynamics_node', 'dynamics_services', 'command_watchdog']
    assert {'dynamics_node', 'command_watchdog'} <= set(SCRIPTS)
    # dynamics_services serves dynamics_node's read-only services under its names, at nice 10, with the same
    # parameters; dynamics_node keeps its payloads there. query_services:=false: dynamics_node alone.
    services = nodes[1].kwargs
    assert services['name'] == overrides['services_node'] == 'dynamics_node_services'
    assert services['parameters'] == [dict(yaml.safe_load(open(params_file))['/**']['ros__parameters'],
                                           **overrides, nice=10)]
    assert sorted(services['remappings']) == sorted(('~/%s' % s, 'dynamics_node/%s' % s) for s in (
        'gravity_compensation', 'inverse_dynamics', 'forward_dynamics', 'mass_matrix', 'fill_trajectory_efforts',
        'retime_trajectory', 'check_trajectory'))
    _, alone, _ = L.evaluate(LAUNCH / 'gravity_compensation.launch.py', {'query_services': 'false'}, SHARES)
    assert [n.kwargs['executable'] for n in alone] == ['dynamics_node', 'command_watchdog']
    assert 'services_node' not in alone[0].kwargs['parameters'][1]
    declared, nodes, context = L.evaluate(LAUNCH / 'dynamics_services.launch.py', {}, SHARES)
    assert {'urdf', 'params_file'} <= set(declared)
    assert [n.kwargs['executable'] for n in nodes] == ['dynamics_services']
    assert 'dynamics_services' in SCRIPTS
    # actuators_file:= and backend:= reach dynamics_node and dynamics_services; unset, the parameter file's.
    assert not {'actuators_file', 'backend'} & set(overrides)
    _, nodes, _ = L.evaluate(LAUNCH / 'gravity_compensation.launch.py',
                             {'actuators_file': '/tmp/arm.actuators.yaml', 'backend': 'compiled'}, SHARES)
    assert nodes[0].kwargs['parameters'][1]['actuators_file'] == '/tmp/arm.actuators.yaml'
    assert nodes[0].kwargs['parameters'][1]['backend'] == 'compiled'
    assert nodes[1].kwargs['parameters'][0]['actuators_file'] == '/tmp/arm.actuators.yaml'
    with pytest.raises(AssertionError):
        L.evaluate(LAUNCH / 'gravity_compensation.launch.py', {'backend': 'gpu'}, SHARES)
    with pytest.raises(AssertionError):
        L.evaluate(LAUNCH / 'gravity_compensation.launch.py', {'publish_command': 'maybe'}, SHARES)
    with pytest.raises(AssertionError):
        L.evaluate(LAUNCH / 'gravity_compensation.launch.py', {'no_such_argument': '1'}, SHARES)


def test_controller_yaml_matches_the_node_yaml():
    node = yaml.safe_load((ROOT / 'config' / 'gravity_compensation.yaml').read_text())['/**']['ros__parameters']
    ctrl = yaml.safe_load((ROOT / 'config' / 'controllers' / 'generic.yaml').read_text())
    # Each controller's type in its own section, under a wildcard key (the Jazzy spawner's --param-file reads it
    # there, namespaced or not: test/test_controller_recipes.py); a type that zeroes its command on deactivate.
    assert ctrl['/**/effort_controller']['ros__parameters']['type'] == 'effort_controllers/JointGroupEffortController'
    assert (ctrl['/**/joint_state_broadcaster']['ros__parameters']['type']
            == 'joint_state_broadcaster/JointStateBroadcaster')
    effort = ctrl['/**/effort_controller']['ros__parameters']
    assert effort['joints'] == node['joints']
    assert in_root(node['command_topic']) == '/effort_controller/commands'
    assert set(node['joints']) == set(NAMES)


def _start(ros, start_node, tmp_path, launch_file, arguments, ready_topic=None, service=None):
    declared, nodes, context = L.evaluate(LAUNCH / launch_file, arguments, SHARES)
    nodes = [n for n in nodes if n.kwargs['executable'] != 'command_watchdog']     # test_ros_launch_watchdog's
    # The node, and dynamics_services beside dynamics_node (query_services:=true) after it.
    assert [n.kwargs['executable'] for n in nodes[1:]] in ([], ['dynamics_services']), nodes
    procs = [start_node.command(L.node_command(n, context, SCRIPTS, tmp_path), n.kwargs['name']) for n in nodes]
    proc = procs[0]
    if ready_topic:
        ros.wait_for_subscriber(ready_topic, process=proc)
    return proc


def test_gravity_compensation_launch_runs_with_the_config_joints(ros, start_node, tmp_path, standins):
    ns = '/lt%d' % time.monotonic_ns()
    args = {'urdf': str(PANDA), 'command_topic': ns + '/commands', 'joint_states_topic': ns + '/joint_states'}
    proc = _start(ros, start_node, tmp_path, 'gravity_compensation.launch.py', args, ns + '/joint_states')
    # The graph: the command publisher, the private torques, the services.
    ros.wait_for_publisher(ns + '/commands')
    ros.wait_for_publisher('/dynamics_node/compensation_torque')
    ros.wait_for_service('/dynamics_node/gravity_compensation', process=proc)    # dynamics_services' (it starts after)
    services = dict(ros.node.get_service_names_and_types())
    assert services.get('/dynamics_node/gravity_compensation') == ['robot_dynamics_interfaces/srv/GravityCompensation']
    cmd = ros.subscribe(Float64MultiArray, ns + '/commands')
    pub = ros.publisher(JointState, ns + '/joint_states')
    deadline = time.monotonic() + 10
    while not len(cmd) and time.monotonic() < deadline:
        pub.publish(JointState(name=NAMES, position=Q.tolist()))
        time.sleep(0.02)
    got = cmd.last()
    assert got is not None, proc.read_log()
    # config/gravity_compensation.yaml: mode gravity_coriolis (at rest: = g), joints in model order.
    np.testing.assert_allclose(np.array(got.data), rd.gravity_torques(MODEL, Q), atol=1e-9)


def test_gravity_compensation_launch_joints_argument_sets_the_order(ros, start_node, tmp_path, standins):
    ns = '/lj%d' % time.monotonic_ns()
    order = list(reversed(NAMES))
    args = {'urdf': str(PANDA), 'command_topic': ns + '/commands',
            'joint_states_topic': ns + '/joint_states', 'joints': ', '.join(order)}
    _start(ros, start_node, tmp_path, 'gravity_compensation.launch.py', args, ns + '/joint_states')
    cmd = ros.subscribe(Float64MultiArray, ns + '/commands')
    pub = ros.publisher(JointState, ns + '/joint_states')
    deadline = time.monotonic() + 10
    while not len(cmd) and time.monotonic() < deadline:
        pub.publish(JointState(name=NAMES, position=Q.tolist()))
        time.sleep(0.02)
    g = rd.gravity_torques(MODEL, Q)
    np.testing.assert_allclose(np.array(cmd.last().data), [g[NAMES.index(n)] for n in order], atol=1e-9)


def test_gravity_compensation_launch_rejects_a_joint_the_model_lacks(ros, start_node, tmp_path, standins):
    args = {'urdf': str(PANDA), 'joints': 'panda_joint1, gripper_joint'}
    proc = _start(ros, start_node, tmp_path, 'gravity_compensation.launch.py', args)
    assert proc.wait(timeout=120) == 2
    log = proc.read_log()
    assert "'gripper_joint'" in log and 'not in the model' in log


def test_dynamics_services_launch_serves(ros, start_node, tmp_path, standins):
    proc = _start(ros, start_node, tmp_path, 'dynamics_services.launch.py', {'urdf': str(PANDA)})
    ros.wait_for_service('/dynamics_services/gravity_compensation', process=proc)
    req = GravityCompensation.Request()
    req.joint_state.name = NAMES
    req.joint_state.position = Q.tolist()
    res = ros.call(GravityCompensation, '/dynamics_services/gravity_compensation', req)
    assert res.success, res.message
    np.testing.assert_allclose(res.torques.effort, rd.gravity_torques(MODEL, Q), atol=1e-9)
    req = MassMatrix.Request()
    req.joint_state.name = NAMES
    req.joint_state.position = Q.tolist()
    res = ros.call(MassMatrix, '/dynamics_services/mass_matrix', req)
    assert res.success
    np.testing.assert_allclose(np.array(res.mass_matrix).reshape(7, 7), rd.mass_matrix(MODEL, Q), atol=1e-9)


# --- command_watchdog ---------------------------------------------------------------------------

def _watchdog(arguments):
    """The command_watchdog Node of gravity_compensation.launch.py with ``arguments`` (None: not started)
    and its parameters."""
    declared, nodes, context = L.evaluate(LAUNCH / 'gravity_compensation.launch.py', arguments, SHARES)
    assert {'command_watchdog', 'command_timeout'} <= set(declared)
    watchdogs = [n for n in nodes if n.kwargs['executable'] == 'command_watchdog']
    assert len(watchdogs) <= 1
    if not watchdogs:
        return None, None, context
    (params,) = watchdogs[0].kwargs['parameters']
    return watchdogs[0], params, context


def test_launch_describes_the_command_watchdog_with_the_node_s_command_topic(standins, tmp_path):
    node, params, _ = _watchdog({})
    assert node.kwargs['package'] == 'robot_dynamics' and node.kwargs['name'] == 'command_watchdog'
    # generic: the command topic of params_file (config/gravity_compensation.yaml), the profile's controller
    assert params == {'command_topic': 'effort_controller/commands', 'controller_manager': 'controller_manager',
                      'controller_name': 'effort_controller', 'command_timeout': 0.1}
    # a profile's topic and controller; the arguments
    _, params, _ = _watchdog({'robot': 'ur', 'command_timeout': '0.25', 'controller_manager': '/arm/cm'})
    assert params == {'command_topic': 'forward_effort_controller/commands', 'controller_manager': '/arm/cm',
                      'controller_name': 'forward_effort_controller', 'command_timeout': 0.25}
    _, params, _ = _watchdog({'robot': 'franka', 'command_topic': 'x/commands'})
    assert params['command_topic'] == 'x/commands'
    # a parameter file of one's own: its command_topic, under the node's own key
    own = tmp_path / 'own.yaml'
    own.write_text('/**:\n  ros__parameters:\n    joints: [a]\n'
                   'dynamics_node:\n  ros__parameters:\n    command_topic: mine/commands\n')
    _, params, _ = _watchdog({'params_file': str(own)})
    assert params['command_topic'] == 'mine/commands'
    _, nodes, _ = L.evaluate(LAUNCH / 'gravity_compensation.launch.py', {'params_file': str(own)}, SHARES)
    services, = [n for n in nodes if n.kwargs['executable'] == 'dynamics_services']   # ... and dynamics_services
    assert services.kwargs['parameters'][0]['command_topic'] == 'mine/commands'
    # the same topic as dynamics_node's
    _, nodes, _ = L.evaluate(LAUNCH / 'gravity_compensation.launch.py', {'robot': 'kinova'}, SHARES)
    watchdog, = [n for n in nodes if n.kwargs['executable'] == 'command_watchdog']
    assert watchdog.kwargs['parameters'][0]['command_topic'] == nodes[0].kwargs['parameters'][1]['command_topic']
    # left out
    assert _watchdog({'command_watchdog': 'false'})[0] is None
    assert _watchdog({'publish_command': 'false'})[0] is None
    with pytest.raises(AssertionError):
        _watchdog({'command_watchdog': 'maybe'})
    for bad in ('0', '-1', 'soon', 'inf'):
        with pytest.raises(RuntimeError, match=r'command_timeout:=%s: expected seconds > 0' % bad):
            _watchdog({'command_timeout': bad})
    with pytest.raises(RuntimeError, match='command_watchdog:=true needs controller_manager'):
        _watchdog({'controller_manager': ''})


def test_the_launched_watchdog_deactivates_the_controller_when_commands_stop(ros, start_node, tmp_path, standins):
    """The command line the launch file describes, run: commands stop, the stand-in manager is asked. A gap over
    command_timeout in the 30 commands (a loaded 2-core machine) makes the watchdog deactivate the controller
    while they flow, rightly (its log says so): that attempt is made again from a fresh stand-in and watchdog, at
    most watchdog_log.ATTEMPTS times."""
    for attempt in range(watchdog_log.ATTEMPTS):
        ns = '/lw%d' % time.monotonic_ns()
        record = tmp_path / ('manager_%d.jsonl' % attempt)
        manager = start_node.command(
            [sys.executable, str(ROOT / 'test' / 'ros' / 'controller_manager_standin.py'), '--record', record,
             '--controller', 'effort_controller', '--ros-args', '-r', '__ns:=' + ns], 'controller_manager', ns)
        node, params, context = _watchdog({'command_topic': ns + '/commands',
                                           'controller_manager': ns + '/controller_manager'})
        watchdog = start_node.command(L.node_command(node, context, SCRIPTS, tmp_path), 'command_watchdog')
        ros.wait_for_subscriber(ns + '/commands', process=watchdog)
        ros.wait_for_service(ns + '/controller_manager/switch_controller', process=manager)
        pub = ros.publisher(Float64MultiArray, ns + '/commands')
        for _ in range(30):
            last = time.monotonic()                             # before the publication: before any receipt
            pub.publish(Float64MultiArray(data=[0.0] * 7))
            time.sleep(0.01)
        states = wait_for(lambda: [e for e in read_record(record) if e['event'] == 'state'], 5.0)
        assert states, 'no deactivation:\n%s' % watchdog.read_log()
        assert wait_for(lambda: watchdog_log.tripped(watchdog.read_log()), 5.0), watchdog.read_log()
        off = [e for e in read_record(record) if e['event'] == 'state' and e['state'] == 'inactive']
        if not watchdog_log.voided(len(off), watchdog.read_log(), ns + '/commands', params['command_timeout']):
            break
        watchdog.stop()
        manager.stop()
    else:
        raise AssertionError('in each of %d streams the watchdog saw a gap over its timeout (a deactivation it was '
                             'right to decide while the commands flowed)' % watchdog_log.ATTEMPTS)
    assert states[0]['controller'] == 'effort_controller' and states[0]['state'] == 'inactive'
    # not before command_timeout (0.1 s) after the last command (one CLOCK_MONOTONIC: 'last' precedes the
    # watchdog's receipt, which precedes its decision by the timeout); this process's publish returns before
    # delivery, so no upper bound here (test_ros_defined_end.py times it against the stand-in's own receipt)
    assert states[0]['t'] - last >= params['command_timeout'], (states[0]['t'] - last, params['command_timeout'])
    assert 'dynamics_node stopped, crashed or hung' in watchdog.read_log()


def test_launch_gives_the_node_its_profile_s_joint_states_topic_and_controller(standins):
    """robot:=franka: the node reads the broadcaster's franka/joint_states (not franka.launch.py's 30 Hz relay on
    joint_states), owns the profile's controller (deactivated on a clean stop) and expects 1 kHz joint states;
    joint_states_topic:= and own_controller:=false override."""
    def dynamics_node(arguments):
        _, nodes, _ = L.evaluate(LAUNCH / 'gravity_compensation.launch.py', arguments, SHARES)
        node = next(n for n in nodes if n.kwargs['executable'] == 'dynamics_node')
        return dict(node.kwargs['remappings']), node.kwargs['parameters'][1]

    remaps, params = dynamics_node({'robot': 'franka'})
    assert remaps == {'joint_states': 'franka/joint_states'}
    assert params['controller_manager'] == 'controller_manager' and params['controller_name'] == 'effort_controller'
    assert params['expected_joint_state_rate'] == 1000.0 and params['joint_state_effort'] == 'joint_torque'
    remaps, params = dynamics_node({'robot': 'ur', 'own_controller': 'false'})
    assert remaps == {'joint_states': 'joint_states'} and 'controller_manager' not in params
    assert params['controller_name'] == 'forward_effort_controller' and params['joint_state_effort'] == 'motor_current'
    remaps, _ = dynamics_node({'robot': 'franka', 'joint_states_topic': '/fr3/joint_states'})
    assert remaps == {'joint_states': '/fr3/joint_states'}


def test_the_documented_pair_by_hand_is_the_launch_files_pair():
    """docs/NODES.md's command lines for dynamics_node and dynamics_services by hand give what the launch files
    give: every remap of query_services, the services node's name on both sides, its niceness."""
    from robot_dynamics.ros import query_services
    text = (ROOT / 'docs' / 'NODES.md').read_text()
    section = text[text.index('### Which requests go where'):]
    block = re.search(r'```bash\n(.*?)```', section, re.S).group(1).replace('\\\n', ' ')
    node, services = [line.split() for line in block.splitlines() if line.strip()]
    name = query_services.services_node_name('dynamics_node')
    assert node[:3] == ['ros2', 'run', 'robot_dynamics'] and node[3] == 'dynamics_node'
    assert 'services_node:=%s' % name in node
    assert services[3] == 'dynamics_services' and '__node:=%s' % name in services
    assert 'nice:=%d' % query_services.NICE in services
    rules = [services[k + 1] for k, a in enumerate(services) if a == '-r' and not services[k + 1].startswith('__')]
    assert rules == query_services.ros_arguments('dynamics_node')[1::2]
