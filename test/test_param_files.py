"""The nodes' parameter schemas in config/params/*.yaml, with no ROS graph: the files, their validators,
every problem reported at once, the typed parameter object, and docs/NODES.md's tables.

The files follow generate_parameter_library's format (robot_dynamics/ros/param_files.py says which keys
are this package's own); a node process given a wrong file is test/ros/test_ros_param_files.py.
"""
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip('rclpy')
from rclpy.parameter import Parameter  # noqa: E402

from robot_dynamics.errors import ParameterError  # noqa: E402
from robot_dynamics.ros import dynamics_params, param_files, params as P, simulator_params  # noqa: E402
from robot_dynamics.ros import param_tables  # noqa: E402
from shipped import install_share  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODEL = P.schema('model.yaml', skip=())
DYNAMICS = MODEL + dynamics_params.NODE_PARAMS
SIMULATOR = MODEL + simulator_params.NODE_PARAMS


class StandInNode:
    """What :func:`params.declare` needs of a node: declare_parameter / get_parameter with rclpy's type rule
    (an override of another type than the declared one is refused, unless dynamically typed)."""

    def __init__(self, overrides):
        self.overrides, self.values = overrides, {}

    def declare_parameter(self, name, value, descriptor):
        declared = value if isinstance(value, Parameter.Type) else Parameter.Type.from_parameter_value(value)
        if name not in self.overrides:
            self.values[name] = [] if isinstance(value, Parameter.Type) else value
            return
        given = self.overrides[name]
        if Parameter.Type.from_parameter_value(given) != declared and not descriptor.dynamic_typing:
            raise TypeError('Trying to set parameter %r to %r of type %s, expecting type %s'
                            % (name, given, Parameter.Type.from_parameter_value(given).name, declared.name))
        self.values[name] = given

    def get_parameter(self, name):
        return SimpleNamespace(value=self.values[name])


def declare(schema, **overrides):
    return P.declare(StandInNode(overrides), schema)


def problems_of(schema, **overrides):
    with pytest.raises(ParameterError) as info:
        declare(schema, **overrides)
    text = str(info.value)
    assert text.startswith('invalid parameters:\n  ')
    return text.split('\n  ')[1:]


def test_every_file_loads_and_names_only_known_validators():
    names = sorted(p.name for p in param_files.folder().glob('*.yaml'))
    assert names == ['command_watchdog.yaml', 'dynamics_node.yaml', 'dynamics_services.yaml', 'model.yaml',
                     'simulator_node.yaml', 'state.yaml', 'trajectory_action.yaml']
    for name in names:
        node, entries = param_files.read(name)
        assert node == name[:-5] and entries
        for e in entries:
            assert e['type'] in P.PY_TYPES, (name, e['name'])
            for v in e.get('validation') or {}:
                known = v[:-2] in param_files.BUILT_IN if v.endswith('<>') else (
                    v in param_files.VALUE_CHECKS or v in param_files.CROSS_CHECKS)
                assert known, (name, e['name'], v)


def test_shared_entries_are_written_once():
    written, texts = {}, {}
    for path in sorted(param_files.folder().glob('*.yaml')):
        for e in param_files.read(path.name)[1]:
            if e['file'] == path.name:
                # A name may mean another thing in another node (simulator_node's command_timeout is not
                # command_watchdog's); the same entry twice would be a copy.
                key = (e['name'], ' '.join(e['description'].split()))
                assert key not in texts, (e['name'], texts.get(key), path.name)
                texts[key] = path.name
                written.setdefault(e['name'], path.name)
    # The two dynamics_services.py declared a second time, with another text, now in state.yaml only.
    assert written['base_state_topic'] == written['joint_state_timeout'] == 'state.yaml'
    for node_file in ('dynamics_node.yaml', 'dynamics_services.yaml'):
        entries = {e['name']: e for e in param_files.read(node_file)[1]}
        assert entries['joint_state_timeout']['file'] == 'state.yaml'
        assert entries['robot_description']['file'] == 'model.yaml'


def test_a_file_that_writes_an_entry_twice_is_refused(tmp_path, monkeypatch):
    (tmp_path / 'model.yaml').write_text('model:\n  a: {type: int, default_value: 1, description: one}\n')
    (tmp_path / 'node.yaml').write_text('include: [model.yaml]\nnode:\n'
                                        '  a: {type: int, default_value: 2, description: again}\n')
    monkeypatch.setattr(param_files, 'folder', lambda: tmp_path)
    with pytest.raises(ValueError, match='node.yaml: parameter.s. a written more than once'):
        param_files.read('node.yaml')


def test_simulator_defaults_come_from_simulation_settings():
    from robot_dynamics.simulation.build import SimulationSettings
    import yaml
    raw = yaml.safe_load((param_files.folder() / 'simulator_node.yaml').read_text())['simulator_node']
    schema = {p.name: p for p in SIMULATOR}
    settings = SimulationSettings()
    for f in fields(SimulationSettings):
        value = getattr(settings, f.name)
        assert schema[f.name].default == (list(value) if isinstance(value, tuple) else value), f.name
        if f.name in raw:
            assert 'default_value' not in raw[f.name], f.name      # written once, in SimulationSettings


def test_the_choices_are_the_code_s():
    from robot_dynamics.control import profiles
    from robot_dynamics.control.backend import BACKENDS
    from robot_dynamics.control.compensation import MODES
    from robot_dynamics.control.watchdog import ON_TIMEOUT
    from robot_dynamics.simulation import INTEGRATORS
    choices = {p.name: p.choices for p in DYNAMICS + SIMULATOR}
    assert choices['mode'] == tuple(MODES) and choices['backend'] == tuple(BACKENDS)
    assert choices['on_timeout'] == tuple(ON_TIMEOUT) and choices['joint_state_effort'] == tuple(profiles.EFFORT_KINDS)
    assert choices['integrator'] == tuple(sorted(INTEGRATORS))


def test_defaults_are_valid_and_typed():
    p = declare(DYNAMICS)
    assert type(p) is dynamics_params.Parameters
    names = [f.name for f in fields(p)]
    assert names == [s.name for s in DYNAMICS]
    types = {f.name: f.type for f in fields(p)}
    assert types['joint_state_timeout'] is float and types['max_trajectory_bytes'] is int
    assert types['joints'] == list[str] and types['kp'] == list[float] and types['publish_command'] is bool
    assert p.mode == 'gravity_coriolis' and p.gravity == [0.0, 0.0, -9.81] and p.kp == []
    p.mode = 'gravity'                                         # a run-time change, as the node applies it
    with pytest.raises(AttributeError):
        p.moed = 'gravity'                                     # a misspelt name is no new attribute
    declare(SIMULATOR)


def test_every_problem_is_reported_at_once_with_parameter_expected_and_came():
    problems = problems_of(
        DYNAMICS, joint_state_timeout=-1.0, on_timeout='panic', effort_limit_scale=2.0, max_state_age='old',
        kp=[1.0, 2.0],                                          # per-joint gains without joints: a cross check
        held_joints=['panda_finger_joint1'],                   # and a held joint without a position: another
        robot_compensates_gravity=True, mode='gravity', publish_command=True)   # and a term the robot adds: a third
    assert problems[:4] == [
        "parameter 'joint_state_timeout' must be > 0, got -1.0",
        "parameter 'effort_limit_scale' must be in (0, 1], got 2.0",
        "parameter 'on_timeout' must be one of zero, hold, stop, got 'panic'",
        "parameter 'max_state_age': expected a value of type float (Trying to set parameter 'max_state_age' to "
        "'old' of type STRING, expecting type DOUBLE)"]
    rest = '\n'.join(problems[4:])
    assert "parameter 'kp' has 2 values: per-joint gains need the 'joints' parameter" in rest
    assert "parameters 'held_joints' (1) and 'held_positions' (0) must name each held joint once" in rest
    assert 'robot_compensates_gravity' in rest and "'gravity'" in rest
    assert len(problems) == 7, problems


def test_a_cross_check_on_an_invalid_parameter_is_left_to_that_parameter_s_problem():
    # kp's own problem (a negative gain) is reported; the per-joint count, which reads kp, is not run on it.
    problems = problems_of(DYNAMICS, kp=[-1.0, 2.0])
    assert problems == ["parameter 'kp' must hold finite gains >= 0, got [-1.0, 2.0]"]


def test_simulator_problems_at_once():
    problems = problems_of(SIMULATOR, physics_rate=500.0, publish_rate=1000.0, integrator='leapfrog',
                           joints=['a', 'a'], effort_commands_topic='cmd', joint_commands_topic='cmd')
    assert problems[0].startswith("parameter 'integrator' must be one of")
    assert problems[1].startswith("parameter 'publish_rate' (1000 Hz) must be <= physics_rate (500 Hz)")
    assert problems[2] == "parameter 'joints' names a joint more than once: ['a', 'a']"
    assert problems[3].startswith("parameters 'effort_commands_topic' and 'joint_commands_topic' name the same")
    assert len(problems) == 4


def test_validate_reports_every_cross_problem_of_a_run_time_change():
    p = declare(DYNAMICS)
    p.mode, p.stiffness, p.max_pose_error = 'cartesian_impedance', [1.0, 2.0], [0.1]
    warnings = []
    with pytest.raises(ParameterError) as info:
        dynamics_params.validate(p, warnings.append)
    text = str(info.value)
    assert "'max_pose_error' must be 2 values [m, rad]" in text
    assert "'stiffness' of mode cartesian_impedance must be 6 values" in text


@pytest.mark.parametrize('name, args, good, bad, text', [
    ('gt', [0], 0.1, 0.0, 'must be > 0'),
    ('gt_eq', [0], 0.0, -0.1, 'must be >= 0'),
    ('bounds', [0, 19], 19, 20, 'must be 0 to 19'),
    ('one_of', [['a', 'b']], 'a', 'c', 'must be one of a, b'),
    ('not_empty', [], 'x', '', 'must not be empty'),
    ('fixed_size', [2], [1.0, 2.0], [1.0], 'must be 2 values'),
    ('size_lt', [2], [1.0], [1.0, 2.0], 'must be fewer than 2 values'),
    ('unique', [], ['a', 'b'], ['a', 'a'], 'must not name an element twice'),
    ('lower_element_bounds', [0], [0.0], [-1.0], 'must hold values >= 0'),
])
def test_built_in_validators(name, args, good, bad, text):
    validation = {name + '<>': args}
    assert param_files.value_problem(validation, good) is None
    assert param_files.value_problem(validation, bad) == text


def test_the_descriptions_rclpy_gets():
    by_name = {p.name: p for p in DYNAMICS}
    text = by_name['on_timeout'].descriptor().description
    assert text.startswith('What to do when joint states time out.') and text.endswith('One of: zero, hold, stop.')
    assert by_name['joint_state_timeout'].descriptor().read_only
    assert not by_name['mode'].descriptor().read_only
    assert by_name['robot_compensates_gravity'].descriptor().dynamic_typing


def test_nodes_md_tables_are_the_files():
    text = (ROOT / 'docs' / 'NODES.md').read_text()
    found = param_tables.blocks_in(text)
    assert sorted(found) == sorted(p.name for p in param_files.folder().glob('*.yaml'))
    for name, block in found.items():
        assert block == param_tables.block(name), 'run python -m robot_dynamics.ros.param_tables --write docs/NODES.md'


def test_the_settings_fields_checked_are_those_problems_reads():
    from robot_dynamics.simulation.build import SimulationSettings
    names, read = {f.name for f in fields(SimulationSettings)}, set()

    class Spy(SimulationSettings):
        def __getattribute__(self, name):
            read.add(name)
            return object.__getattribute__(self, name)

    Spy(joints=('a', 'b'), kp=(1.0,), initial_positions=(0.0, 0.0)).problems()
    assert read & names == set(simulator_params.SETTINGS_CHECKED)


def test_an_installed_package_finds_its_files_in_the_share_directory(tmp_path, monkeypatch):
    """No checkout beside the code (a wheel or a colcon install): config/params of the share directory, which
    setup.py's data_files fill (test/shipped.py installs them as setup.py would)."""
    installed = install_share(tmp_path / 'install')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(installed))
    monkeypatch.setattr(param_files, 'CHECKOUT', tmp_path / 'no_checkout' / 'config' / 'params')
    assert param_files.folder() == installed / 'share' / 'robot_dynamics' / 'config' / 'params'
    assert tuple(P.schema('dynamics_node.yaml')) == dynamics_params.NODE_PARAMS
    assert [p.default for p in P.schema('simulator_node.yaml')] == [p.default for p in simulator_params.NODE_PARAMS]


def test_every_double_parameter_refuses_infinity_and_nan():
    """A time or rate of .inf passed the bounds (inf > 0) and then raised OverflowError where the node
    turns it into nanoseconds (configure crashed, a run-time ``ros2 param set target_timeout .inf`` raised
    out of the set-parameters callback): every double of every node is checked finite, reported with
    the other problems."""
    for schema in (DYNAMICS, SIMULATOR):
        doubles = [p.name for p in schema if p.type == 'double']
        assert len(doubles) >= 7
        for bad in (float('inf'), float('nan')):
            problems = problems_of(schema, **{name: bad for name in doubles})
            named = {name for name in doubles if any("'%s'" % name in p for p in problems)}
            assert named == set(doubles), sorted(set(doubles) - named)
