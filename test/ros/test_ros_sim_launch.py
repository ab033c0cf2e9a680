"""launch/sim.launch.py, rviz/sim.rviz and the ros2_control example files.

As in test_ros_launch.py: generate_launch_description() runs against the
stand-ins of ``launch_standins``; robot_state_publisher and rviz2 are not
installable here, so they are checked as described (package, parameters,
arguments, the RViz file they load), and our own nodes are started with the
command line `ros2 launch` would use and checked on the topic graph. The
ros2_control example (urdf/panda_arm.ros2_control.xacro,
config/simulator_ros2_controllers.yaml and the copy in docs/NODES.md) must name the
simulator's default topics.
"""
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import JointState

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import GravityCompensation
from robot_dynamics.ros.simulator_node import NODE_PARAMS, SimulatorNode

import launch_standins as L
from conftest import PANDA, ROOT

LAUNCH = ROOT / 'launch' / 'sim.launch.py'
SHARES = {'robot_dynamics': str(ROOT)}        # the checkout mirrors share/robot_dynamics
SCRIPTS = L.console_scripts(ROOT / 'setup.py')
MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
DEFAULTS = {p.name: p.default for p in NODE_PARAMS}
XACRO_NS = '{http://www.ros.org/wiki/xacro}'
PLUGIN = 'joint_state_topic_hardware_interface/JointStateTopicSystem'


VISUALIZATION = ['robot_state_publisher', 'rviz2', 'xacro']     # optional dependencies (package.xml)


@pytest.fixture
def standins(monkeypatch, tmp_path):
    L.install(monkeypatch)
    L.ament_index(monkeypatch, tmp_path / 'ament_prefix', VISUALIZATION)


def params_of(node, context):
    """(parameter files, merged dict) of a described Node."""
    files, merged = [], {}
    for entry in node.kwargs.get('parameters', []):
        if isinstance(entry, dict):
            merged.update(entry)
        else:
            files.append(L._perform(entry, context))
    return files, merged


def yaml_params(path):
    return yaml.safe_load(open(path).read())['/**']['ros__parameters']


def test_sim_launch_describes_simulator_state_publisher_and_rviz(standins):
    declared, nodes, context = L.evaluate(LAUNCH, {}, SHARES)
    assert {'urdf', 'params_file', 'rviz', 'rviz_config', 'gravity_compensation', 'use_sim_time', 'robot', 'loops_file',
            'actuated_joints'} <= set(declared)
    assert all(d.description for d in declared.values())
    by = {n.kwargs['executable']: n for n in nodes}
    assert set(by) == {'simulator_node', 'robot_state_publisher', 'rviz2'}
    assert 'simulator_node' in SCRIPTS
    description = PANDA.read_text()
    sim_files, sim = params_of(by['simulator_node'], context)
    assert by['simulator_node'].kwargs['name'] == SimulatorNode.default_name
    assert sim_files == [str(ROOT / 'config' / 'simulator.yaml')]
    assert sim['robot_description'] == description and sim['publish_clock'] is False
    rsp = by['robot_state_publisher'].kwargs
    assert rsp['package'] == 'robot_state_publisher'
    assert params_of(by['robot_state_publisher'], context)[1] == {'robot_description': description,
                                                                  'use_sim_time': False}
    rviz = by['rviz2'].kwargs
    assert rviz['package'] == 'rviz2' and rviz['arguments'][0] == '-d'
    assert rviz['arguments'][1] == str(ROOT / 'rviz' / 'sim.rviz')
    # The RViz file: fixed frame the URDF root, the robot from /robot_description, the markers.
    config = yaml.safe_load((ROOT / 'rviz' / 'sim.rviz').read_text())['Visualization Manager']
    assert config['Global Options']['Fixed Frame'] == MODEL.base_link == 'panda_link0'
    displays = {d['Class']: d for d in config['Displays']}
    robot = displays['rviz_default_plugins/RobotModel']
    assert robot['Description Source'] == 'Topic'
    assert robot['Description Topic']['Value'] == '/robot_description'
    assert robot['Description Topic']['Durability Policy'] == 'Transient Local'   # robot_state_publisher's QoS
    markers = displays['rviz_default_plugins/MarkerArray']
    assert markers['Topic']['Value'] == '/%s/markers' % SimulatorNode.default_name
    assert 'rviz_default_plugins/TF' in displays


def test_sim_launch_arguments(standins):
    _, nodes, context = L.evaluate(LAUNCH, {'rviz': 'false', 'gravity_compensation': 'true',
                                            'use_sim_time': 'true'}, SHARES)
    by = {n.kwargs['executable']: n for n in nodes}
    assert set(by) == {'simulator_node', 'robot_state_publisher', 'dynamics_node', 'dynamics_services'}
    files, dyn = params_of(by['dynamics_node'], context)
    # dynamics_node's read-only services come from dynamics_services, under dynamics_node's names, with the same
    # parameters; dynamics_node keeps its payloads there.
    services = by['dynamics_services'].kwargs
    assert services['name'] == dyn['services_node'] == 'dynamics_node_services'
    assert params_of(by['dynamics_services'], context) == (files, dict(dyn, nice=10))
    assert sorted(services['remappings']) == sorted(('~/%s' % s, 'dynamics_node/%s' % s) for s in (
        'gravity_compensation', 'inverse_dynamics', 'forward_dynamics', 'mass_matrix', 'fill_trajectory_efforts',
        'retime_trajectory', 'check_trajectory'))
    assert files == [str(ROOT / 'config' / 'gravity_compensation.yaml')]
    assert dyn['publish_command'] is True and dyn['use_sim_time'] is True and dyn['mode'] == 'gravity_coriolis'
    # The loop closes without remapping: dynamics_node's command topic is the simulator's effort topic,
    # both read/write joint_states in the same namespace.
    assert yaml_params(files[0])['command_topic'] == yaml_params(ROOT / 'config' / 'simulator.yaml')[
        'effort_commands_topic'] == DEFAULTS['effort_commands_topic']
    assert not by['dynamics_node'].kwargs.get('remappings') and not by['simulator_node'].kwargs.get('remappings')
    assert params_of(by['simulator_node'], context)[1]['publish_clock'] is True
    assert params_of(by['robot_state_publisher'], context)[1]['use_sim_time'] is True
    with pytest.raises(AssertionError):
        L.evaluate(LAUNCH, {'gravity_compensation': 'yes'}, SHARES)
    assert 'actuators_file' not in dyn and 'actuators_file' not in params_of(by['simulator_node'], context)[1]
    # actuators_file:= reaches the simulator, dynamics_node and dynamics_services alike.
    _, nodes, context = L.evaluate(LAUNCH, {'rviz': 'false', 'gravity_compensation': 'true',
                                            'actuators_file': '/tmp/arm.actuators.yaml'}, SHARES)
    for node in nodes:
        if node.kwargs['package'] == 'robot_dynamics':
            assert params_of(node, context)[1]['actuators_file'] == '/tmp/arm.actuators.yaml', node.kwargs


def test_sim_launch_mode_starts_dynamics_node_in_that_mode(standins):
    _, nodes, context = L.evaluate(LAUNCH, {'rviz': 'false', 'mode': 'cartesian_impedance'}, SHARES)
    by = {n.kwargs['executable']: n for n in nodes}
    assert set(by) == {'simulator_node', 'robot_state_publisher', 'dynamics_node', 'dynamics_services'}
    dyn = params_of(by['dynamics_node'], context)[1]
    assert dyn['mode'] == 'cartesian_impedance' and dyn['publish_command'] is True
    assert params_of(by['simulator_node'], context)[1]['publish_rate'] == 250.0   # a Cartesian torque: ~1 ms
    _, nodes, context = L.evaluate(LAUNCH, {'rviz': 'false', 'gravity_compensation': 'true', 'mode': 'gravity'},
                                   SHARES)
    by = {n.kwargs['executable']: n for n in nodes}
    assert params_of(by['dynamics_node'], context)[1]['mode'] == 'gravity'
    assert 'publish_rate' not in params_of(by['simulator_node'], context)[1]
    with pytest.raises(AssertionError):
        L.evaluate(LAUNCH, {'mode': 'antigravity'}, SHARES)


def test_sim_launch_world_file_gives_the_simulator_a_world_and_the_pandas_shapes(standins):
    world = 'package://robot_dynamics/config/worlds/panda_table.yaml'
    _, nodes, context = L.evaluate(LAUNCH, {'rviz': 'false', 'world_file': world}, SHARES)
    sim = params_of(next(n for n in nodes if n.kwargs['executable'] == 'simulator_node'), context)[1]
    assert sim['world_file'] == world
    assert sim['collision_geometry'] == 'visual' and sim['srdf_file'] == str(ROOT / 'urdf' / 'panda_arm.srdf')
    assert (ROOT / 'config' / 'worlds' / 'panda_table.yaml').is_file()
    # another URDF: its own <collision> elements (the simulator's default), no SRDF of the Panda's
    _, nodes, context = L.evaluate(LAUNCH, {'rviz': 'false', 'world_file': world, 'urdf': str(PANDA)}, SHARES)
    sim = params_of(next(n for n in nodes if n.kwargs['executable'] == 'simulator_node'), context)[1]
    assert sim['world_file'] == world and 'collision_geometry' not in sim and 'srdf_file' not in sim
    _, nodes, context = L.evaluate(LAUNCH, {'rviz': 'false'}, SHARES)
    assert 'world_file' not in params_of(nodes[0], context)[1]


@pytest.mark.parametrize('arguments, installed, missing', [
    ({}, ['xacro'], 'robot_state_publisher and rviz2'),
    ({}, ['robot_state_publisher', 'xacro'], 'rviz2'),
    ({'rviz': 'false'}, ['rviz2', 'xacro'], 'robot_state_publisher'),
    ({'urdf': str(ROOT / 'urdf' / 'panda_arm.ros2_control.xacro')}, ['robot_state_publisher', 'rviz2'], 'xacro'),
])
def test_sim_launch_names_the_missing_visualisation_packages(monkeypatch, tmp_path, arguments, installed, missing):
    """robot_state_publisher, rviz2 and xacro are optional (no Qt on a headless robot): the
    launch that needs a missing one stops and says what to install."""
    L.install(monkeypatch)
    L.ament_index(monkeypatch, tmp_path, installed)
    monkeypatch.setenv('ROS_DISTRO', 'jazzy')
    with pytest.raises(RuntimeError) as error:
        L.evaluate(LAUNCH, arguments, SHARES)
    text = str(error.value)
    assert text.startswith('sim.launch.py needs %s (' % missing)
    packages = ['ros-jazzy-' + p.replace('_', '-') for p in missing.split(' and ')]
    assert 'sudo apt install ' + ' '.join(packages) in text
    assert 'ROBOT_DYNAMICS_VISUALIZATION=1' in text


def test_sim_launch_without_rviz_needs_no_rviz2(monkeypatch, tmp_path):
    L.install(monkeypatch)
    L.ament_index(monkeypatch, tmp_path, ['robot_state_publisher'])
    _, nodes, _ = L.evaluate(LAUNCH, {'rviz': 'false'}, SHARES)
    assert {n.kwargs['executable'] for n in nodes} == {'simulator_node', 'robot_state_publisher'}


def test_sim_launch_runs_the_simulator_with_gravity_compensation(ros, start_node, tmp_path, standins):
    _, nodes, context = L.evaluate(LAUNCH, {'gravity_compensation': 'true', 'rviz': 'false'}, SHARES)
    ours = [n for n in nodes if n.kwargs['package'] == 'robot_dynamics']
    assert [n.kwargs['executable'] for n in ours] == ['simulator_node', 'dynamics_node', 'dynamics_services']
    procs = [start_node.command(L.node_command(n, context, SCRIPTS, tmp_path), n.kwargs['name']) for n in ours]
    ros.wait_for_subscriber('/effort_controller/commands', process=procs[0])
    ros.wait_for_subscriber('/joint_states', process=procs[1])
    # The graph: the simulator publishes /joint_states and its markers; the command loop is connected.
    ros.wait_for_publisher('/joint_states')
    ros.wait_for_publisher('/simulator/markers')
    ros.wait_for_publisher('/effort_controller/commands')
    services = dict(ros.node.get_service_names_and_types())
    assert services.get('/simulator/set_state') == ['robot_dynamics_interfaces/srv/SetState']
    assert services.get('/simulator/reset') == ['std_srvs/srv/Trigger']
    # dynamics_node's read-only services, from dynamics_services under dynamics_node's names.
    ros.wait_for_service('/dynamics_node/gravity_compensation', process=procs[2])
    req = GravityCompensation.Request()
    req.joint_state.name, req.joint_state.position = list(MODEL.joint_names), [0.1] * MODEL.nq
    res = ros.call(GravityCompensation, '/dynamics_node/gravity_compensation', req)
    assert res.success, res.message
    np.testing.assert_allclose(res.torques.effort, rd.gravity_torques(MODEL, np.full(MODEL.nq, 0.1)), atol=1e-9)
    states = ros.subscribe(JointState, '/joint_states')

    def compensated(m):             # the motors apply gravity + Coriolis compensation of the state
        h = rd.nonlinear_effects(MODEL, np.array(m.position), np.array(m.velocity))
        return np.abs(h).max() > 1.0 and np.allclose(m.effort, h, atol=0.05 * np.abs(h).max())
    assert states.wait_where(compensated, timeout=20), procs[1].read_log()


def test_ros2_control_example_names_the_simulator_defaults():
    root = ET.parse(ROOT / 'urdf' / 'panda_arm.ros2_control.xacro').getroot()
    control = root.find('ros2_control')
    hardware = control.find('hardware')
    assert hardware.find('plugin').text.strip() == PLUGIN
    params = {p.get('name'): p.text.strip() for p in hardware.findall('param')}
    # The plugin's own default command topic (its source: "/robot_joint_commands").
    assert params['joint_commands_topic'] == '/' + DEFAULTS['joint_commands_topic'] == '/robot_joint_commands'
    assert params['joint_states_topic'] == '/' + DEFAULTS['joint_states_topic']    # relative, root namespace
    joints = [e for e in control if e.tag == XACRO_NS + 'sim_joint']
    node = yaml_params(ROOT / 'config' / 'simulator.yaml')
    assert [j.get('name') for j in joints] == NAMES == node['joints']
    assert [float(j.get('q0')) for j in joints] == node['initial_positions']
    for key in ('effort_commands_topic', 'joint_commands_topic', 'joint_states_topic'):
        assert node[key] == DEFAULTS[key]
    ctrl = yaml.safe_load((ROOT / 'config' / 'simulator_ros2_controllers.yaml').read_text())
    cm = ctrl['controller_manager']['ros__parameters']
    assert cm['effort_controller']['type'] == 'forward_command_controller/ForwardCommandController'
    assert ctrl['effort_controller']['ros__parameters']['joints'] == NAMES
    assert ctrl['effort_controller']['ros__parameters']['interface_name'] == 'effort'
    assert ctrl['joint_trajectory_controller']['ros__parameters']['joints'] == NAMES
    # The simulator publishes /joint_states itself: the broadcaster's copy goes elsewhere.
    assert ctrl['joint_state_broadcaster']['ros__parameters']['use_local_topics'] is True


def test_documented_ros2_control_block_equals_the_shipped_one():
    readme = (ROOT / 'docs' / 'NODES.md').read_text()
    section = readme[readme.index('## simulator_node'):]
    section = section[:section.index('\n## ', 1)]
    block = re.search(r'```xml\n(.*?)```', section, re.S).group(1)
    control = ET.fromstring(block)
    assert control.tag == 'ros2_control'
    shipped = ET.parse(ROOT / 'urdf' / 'panda_arm.ros2_control.xacro').getroot().find('ros2_control/hardware')
    hardware = control.find('hardware')
    assert hardware.find('plugin').text.strip() == shipped.find('plugin').text.strip()
    assert ({p.get('name'): p.text.strip() for p in hardware.findall('param')}
            == {p.get('name'): p.text.strip() for p in shipped.findall('param')})
    ctrl = re.search(r'```yaml\n(.*?)```', section, re.S).group(1)
    shipped = yaml.safe_load((ROOT / 'config' / 'simulator_ros2_controllers.yaml').read_text())
    for key, value in yaml.safe_load(ctrl).items():
        assert shipped[key] == value, key


def test_sim_launch_runs_the_palletiser_with_its_loops_and_gravity_compensation(ros, start_node, tmp_path, standins):
    """robot:=palletiser: both robot_dynamics nodes get the loops file and the three motors; the simulator
    publishes every joint of the closed parallelogram and the motors apply the compensation of the closed
    mechanism (rd.constrained_inverse_dynamics), the passive joints none."""
    _, nodes, context = L.evaluate(LAUNCH, {'robot': 'palletiser', 'gravity_compensation': 'true', 'rviz': 'false'},
                                   SHARES)
    examples = ROOT / 'urdf' / 'examples'
    motors = ['turntable_joint', 'shoulder_joint', 'drive_joint']
    ours = {n.kwargs['executable']: n for n in nodes if n.kwargs['package'] == 'robot_dynamics'}
    for node in ours.values():
        params = params_of(node, context)[1]
        assert params['robot_description'] == (examples / 'palletiser.urdf').read_text()
        assert params['loops_file'] == str(examples / 'palletiser.loops.yaml')
        assert params['actuated_joints'] == params['joints'] == motors
    assert params_of(ours['simulator_node'], context)[1]['initial_positions'] == [0.0, 0.3, 0.6]
    model = rd.load_urdf(str(examples / 'palletiser.urdf'), loops=str(examples / 'palletiser.loops.yaml'))
    procs = [start_node.command(L.node_command(n, context, SCRIPTS, tmp_path), n.kwargs['name'])
             for n in ours.values()]
    ros.wait_for_subscriber('/effort_controller/commands', process=procs[0])
    ros.wait_for_subscriber('/joint_states', process=procs[1])
    states = ros.subscribe(JointState, '/joint_states')
    A = [model.joint_names.index(j) for j in motors]

    def compensated(m):
        q = np.array(m.position)
        if list(m.name) != list(model.joint_names) or np.abs(rd.loop_residual(model, q)).max() > 1e-6:
            return False
        g, _ = rd.constrained_inverse_dynamics(model, q, np.zeros(5), np.zeros(5), motors)
        return (np.allclose(np.array(m.effort)[A], g[A], atol=0.01 * np.abs(g).max())
                and m.effort[2] == m.effort[4] == 0.0)
    assert states.wait_where(compensated, timeout=30), procs[1].read_log()
