"""The nodes' parameters come from config/params/*.yaml, and a wrong parameter file reports all its problems.

Each node runs as its own process, given its parameters with ``--params-file`` (conftest.start_node
writes them to a file next to its log). A file with several wrong values and failing cross checks
stops the node with exit status 2 and one message that names every problem (parameter, expected,
came); a running node describes each parameter (``ros2 param describe``: the DescribeParameters
service) as its schema file says. The ROS-free checks of the same code are test/test_param_files.py.
"""
import pytest

from conftest import PANDA

from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import DescribeParameters, GetParameters, SetParameters

from robot_dynamics.ros import dynamics_params, params as P

#: rcl_interfaces ParameterType of generate_parameter_library's types.
TYPES = {'bool': ParameterType.PARAMETER_BOOL, 'int': ParameterType.PARAMETER_INTEGER,
         'double': ParameterType.PARAMETER_DOUBLE, 'string': ParameterType.PARAMETER_STRING,
         'double_array': ParameterType.PARAMETER_DOUBLE_ARRAY, 'string_array': ParameterType.PARAMETER_STRING_ARRAY}


def _problems(log):
    """The lines of the 'invalid parameters:' message in a node's log."""
    start = log.index('invalid parameters:')
    return [line.strip() for line in log[start:].splitlines()[1:] if line.startswith('  ')]


def test_dynamics_node_reports_every_problem_of_its_parameter_file_at_once(start_node):
    proc = start_node('dynamics_node', {
        'urdf_path': str(PANDA),
        'joint_state_timeout': -1.0,                 # state.yaml: gt<> 0
        'effort_limit_scale': 2.0,                   # in (0, 1]
        'on_timeout': 'panic',                       # one_of<>
        'kp': [1.0, 2.0],                            # cross: per-joint gains without 'joints'
        'held_joints': ['panda_finger_joint1'],      # cross: no position for the held joint
        'mode': 'gravity', 'publish_command': True,  # cross: gravity is the robot's own
        'robot_compensates_gravity': True,
    })
    assert proc.wait(timeout=120) == 2
    log = proc.read_log()
    problems = _problems(log)
    expected = ["parameter 'joint_state_timeout' must be > 0, got -1.0",
                "parameter 'effort_limit_scale' must be in (0, 1], got 2.0",
                "parameter 'on_timeout' must be one of zero, hold, stop, got 'panic'",
                "parameter 'kp' has 2 values: per-joint gains need the 'joints' parameter",
                "parameters 'held_joints' (1) and 'held_positions' (0) must name each held joint once",
                "mode 'gravity' with robot_compensates_gravity true commands nothing"]
    for text in expected:
        assert sum(p.startswith(text) for p in problems) == 1, (text, log)
    assert len(problems) == len(expected), log


def test_simulator_node_reports_every_problem_of_its_parameter_file_at_once(start_node):
    proc = start_node('simulator_node', {
        'urdf_path': str(PANDA),
        'integrator': 'leapfrog', 'physics_rate': 500.0, 'publish_rate': 1000.0, 'catch_up_limit': 0.0,
        'joints': ['panda_joint1', 'panda_joint1'],
        'effort_commands_topic': 'cmd', 'joint_commands_topic': 'cmd',
    })
    assert proc.wait(timeout=120) == 2
    problems = _problems(proc.read_log())
    starts = ["parameter 'integrator' must be one of",
              "parameter 'catch_up_limit' must be > 0, got 0.0",
              "parameter 'publish_rate' (1000 Hz) must be <= physics_rate (500 Hz)",
              "parameter 'joints' names a joint more than once",
              "parameters 'effort_commands_topic' and 'joint_commands_topic' name the same topic 'cmd'"]
    assert [next((p for p in problems if p.startswith(s)), None) is not None for s in starts] == [True] * 5, problems
    assert len(problems) == 5, problems


def test_a_running_node_describes_its_parameters_as_its_file_says(ros, start_node):
    proc = start_node('dynamics_services', {'urdf_path': str(PANDA)})
    schema = P.schema('dynamics_services.yaml', skip=())
    assert {p.name for p in schema} >= {'nice', 'base_state_topic', 'joint_state_timeout', 'urdf_path'}
    ros.wait_for_service(proc.topic('~/describe_parameters'), process=proc)
    answer = ros.call(DescribeParameters, proc.topic('~/describe_parameters'),
                      DescribeParameters.Request(names=[p.name for p in schema]))
    assert len(answer.descriptors) == len(schema)
    for p, d in zip(schema, answer.descriptors):
        assert d.name == p.name and d.description == p.descriptor().description, p.name
        assert d.read_only == p.read_only and d.type == TYPES[p.type], p.name
    # dynamics_node's joint_state_timeout is the same entry, written once (state.yaml).
    shared = next(p for p in dynamics_params.NODE_PARAMS if p.name == 'joint_state_timeout')
    assert shared.descriptor().description == next(d.description for d in answer.descriptors
                                                     if d.name == 'joint_state_timeout')


@pytest.mark.parametrize('params, expected', [
    ({'nice': 25, 'joint_state_timeout': 0.0}, ["parameter 'nice' must be 0 to 19, got 25",
                                                 "parameter 'joint_state_timeout' must be > 0, got 0.0"]),
])
def test_dynamics_services_reports_every_problem(start_node, params, expected):
    proc = start_node('dynamics_services', dict({'urdf_path': str(PANDA)}, **params))
    assert proc.wait(timeout=120) == 2
    assert sorted(_problems(proc.read_log())) == sorted(expected)


def test_command_watchdog_describes_its_parameters_read_only_and_refuses_a_change(ros, start_node):
    """command_watchdog reads its parameters once, at start: its file says read_only, the running node
    describes them so, and ``ros2 param set command_timeout 5.0`` is refused (it used to succeed and
    change nothing: the timeout stayed 0.1 s while ``ros2 param get`` said 5.0)."""
    proc = start_node('command_watchdog', {'command_timeout': 0.1}, name='command_watchdog')
    schema = P.schema('command_watchdog.yaml', skip=())
    assert {p.name for p in schema} == {'command_topic', 'controller_manager', 'controller_name', 'command_timeout'}
    assert all(p.read_only for p in schema)
    ros.wait_for_service(proc.topic('~/describe_parameters'), process=proc)
    answer = ros.call(DescribeParameters, proc.topic('~/describe_parameters'),
                      DescribeParameters.Request(names=[p.name for p in schema]))
    assert [d.read_only for d in answer.descriptors] == [True] * len(schema)
    value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=5.0)
    result = ros.call(SetParameters, proc.topic('~/set_parameters'),
                      SetParameters.Request(parameters=[Parameter(name='command_timeout', value=value)]))
    assert not result.results[0].successful, result.results[0]
    got = ros.call(GetParameters, proc.topic('~/get_parameters'), GetParameters.Request(names=['command_timeout']))
    assert got.values[0].double_value == 0.1
