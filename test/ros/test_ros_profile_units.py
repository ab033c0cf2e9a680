"""robot_dynamics.control.profiles without DDS, and the launch file's robot:= argument (the emulated robot's
gravity, robot_dynamics.simulation.robot_emulation: test/test_simulation_session.py)."""
import numpy as np
import pytest
import yaml

import robot_dynamics as rd
from robot_dynamics.control import profiles
from robot_dynamics.control.compensation import Compensation

import launch_standins as L
from conftest import PANDA, ROOT

MODEL = rd.load_urdf(str(PANDA))
ROBOTS = ROOT / 'config' / 'robots'
rng = np.random.default_rng(3)
Q, QD = rng.uniform(-1, 1, (2, 7))


def test_states_accept_bools_and_strings_and_refuse_the_rest():
    assert profiles.parse_state(True) == 'true' and profiles.parse_state(False) == 'false'
    assert profiles.parse_state(' Unknown ') == 'unknown'
    with pytest.raises(ValueError, match="robot_compensates_gravity must be true, false or unknown, got 'yes'"):
        profiles.parse_state('yes', 'robot_compensates_gravity')
    assert profiles.check_state('maybe') and profiles.check_state(1.0)
    assert profiles.check_state('true') is None


def test_unknown_terms_name_the_parameter_to_set():
    assert profiles.unknown_problem('true', False) is None
    text = profiles.unknown_problem('unknown', 'unknown', profile='kinova')
    assert 'gravity and friction' in text and "'kinova'" in text
    assert "'robot_compensates_gravity' to true" in text and 'robot_compensates_friction:=false' in text
    assert profiles.mode_problem('gravity', 'true', True)
    assert profiles.mode_problem('gravity', 'true', False) is None
    assert profiles.mode_problem('gravity_coriolis', True, True) is None


@pytest.mark.parametrize('gravity, friction', [(False, False), (True, False), (True, True), (False, True)])
def test_command_leaves_out_exactly_the_terms_the_robot_compensates(gravity, friction):
    comp = Compensation(MODEL, 'gravity_coriolis_friction', friction_smoothing=0.05)
    total = comp.compute(Q, QD).copy()
    terms = profiles.CommandTerms(gravity, friction, MODEL.nq)
    cmd = terms.command(comp.total, comp.gravity, comp.friction)
    # What the robot adds back, from the library directly.
    added = (rd.gravity_torques(MODEL, Q) if gravity else 0) + \
        (rd.friction_torques(MODEL, QD, smoothing=0.05) if friction else 0)
    np.testing.assert_allclose(cmd + added, total, atol=1e-12)
    if gravity and not friction:          # gravity_coriolis's command then is C(q, qd) qd + friction
        np.testing.assert_allclose(cmd, rd.nonlinear_effects(MODEL, Q, QD) - rd.gravity_torques(MODEL, Q)
                                   + rd.friction_torques(MODEL, QD, smoothing=0.05), atol=1e-12)
    assert (cmd is comp.total) == (not (gravity or friction))
    np.testing.assert_array_equal(comp.total, total)        # the published torque is untouched
    assert ('minus' in terms.describe()) == terms.active


def test_shipped_profiles_state_every_term_with_a_source():
    loaded = {n: profiles.load_profile(ROBOTS / (n + '.yaml')) for n in profiles.known_profiles(str(ROBOTS))}
    assert {'franka', 'ur', 'kinova', 'generic'} <= set(loaded)
    assert (loaded['franka'].gravity, loaded['franka'].friction) == ('true', 'true')
    assert loaded['ur'].gravity == 'true'
    assert (loaded['generic'].gravity, loaded['generic'].friction) == ('false', 'false')
    # generic: nothing of the node's own parameters but what every profile states (joints, topic from params_file).
    assert loaded['generic'].node_parameters() == {'robot_compensates_gravity': 'false',
                                                   'robot_compensates_friction': 'false',
                                                   'joint_state_effort': 'joint_torque',
                                                   'expected_joint_state_rate': 0.0,
                                                   'controller_name': 'effort_controller'}
    # Where each driver's own joint states come at the control rate, and what their effort field carries.
    js = {name: p.joint_states for name, p in loaded.items()}
    assert js['franka']['topic'] == 'franka/joint_states' and js['franka']['rate_hz'] == 1000, js['franka']
    assert js['ur']['effort'] == 'motor_current', js['ur']
    assert loaded['ur'].node_parameters()['joint_state_effort'] == 'motor_current'
    assert loaded['franka'].node_parameters()['expected_joint_state_rate'] == 1000.0
    for name, p in loaded.items():
        assert 'joint_states' in p.data and p.data['joint_states'].get('source'), (
            'profile %s must say where its joint states come from, with a source' % name)
    for name, p in loaded.items():
        for term in profiles.TERMS:
            for source in p.data['compensated_by_robot'][term]['source']:
                assert source.get('url', '').startswith(('https://', 'docs/')) or source.get('note'), (name, term)
        params = p.node_parameters()
        assert params['robot_compensates_gravity'] == p.gravity


def test_profile_errors_say_what_is_wrong(tmp_path):
    with pytest.raises(profiles.ProfileError, match=r"unknown robot profile 'abb'; known profiles .*franka, generic"):
        profiles.profile_path('abb', str(ROBOTS))
    data = yaml.safe_load((ROBOTS / 'franka.yaml').read_text())
    del data['compensated_by_robot']['friction']['source']
    bad = tmp_path / 'bad.yaml'
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(profiles.ProfileError, match='compensated_by_robot.friction has no source'):
        profiles.load_profile(bad)
    data['compensated_by_robot']['friction'] = {'value': 'maybe', 'source': 'x'}
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(profiles.ProfileError, match='must be true, false or unknown'):
        profiles.load_profile(bad)


# --- launch/gravity_compensation.launch.py robot:= ---------------------------------------------

SHARES = {'robot_dynamics': str(ROOT)}


@pytest.fixture
def standins(monkeypatch):
    L.install(monkeypatch)


def _launch(args):
    return L.evaluate(ROOT / 'launch' / 'gravity_compensation.launch.py', args, SHARES)


def test_launch_robot_picks_the_profile_and_refuses_an_unknown_one(standins):
    _, nodes, _ = _launch({'robot': 'franka'})
    params = nodes[0].kwargs['parameters'][1]
    assert params['robot_compensates_gravity'] == 'true' and params['joints'][0] == 'fr3_joint1'
    _, nodes, _ = _launch({'robot': 'ur', 'joints': 'a,b', 'command_topic': 'x/commands'})
    params = nodes[0].kwargs['parameters'][1]
    assert params['joints'] == ['a', 'b'] and params['command_topic'] == 'x/commands'     # arguments win
    _, nodes, _ = _launch({'robot': 'kinova', 'robot_compensates_friction': 'false'})
    assert nodes[0].kwargs['parameters'][1]['robot_compensates_friction'] == 'false'
    with pytest.raises(RuntimeError, match=r"robot:=abb: unknown robot profile 'abb'; known profiles .*: "
                                           r"franka, generic, kinova, ur"):
        _launch({'robot': 'abb'})
    assert 'max_state_age' not in _launch({'robot': 'ur'})[1][0].kwargs['parameters'][1]   # off, the node's
    _, nodes, _ = _launch({'robot': 'ur', 'max_state_age': '0.1'})
    assert nodes[0].kwargs['parameters'][1]['max_state_age'] == 0.1
    with pytest.raises(RuntimeError, match=r"max_state_age:=soon: expected seconds, e.g. 0.1"):
        _launch({'robot': 'ur', 'max_state_age': 'soon'})


def test_launch_spawns_the_broadcaster_only_where_the_vendor_stack_has_none(standins):
    for robot, want in (('franka', ['effort_controller']), ('ur', ['forward_effort_controller']),
                        ('generic', ['joint_state_broadcaster', 'effort_controller'])):
        _, nodes, _ = _launch({'robot': robot, 'spawn_controllers': 'true'})
        spawners = [n for n in nodes if n.kwargs['package'] == 'controller_manager']
        assert [n.kwargs['arguments'][0] for n in spawners] == want, robot
        for n in spawners:
            argv = n.kwargs['arguments']
            recipe = yaml.safe_load(open(argv[argv.index('--param-file') + 1]))
            # Wildcard keys (test/test_controller_recipes.py): the Jazzy spawner reads the type there.
            assert 'type' in recipe['/**/' + argv[0]]['ros__parameters']
        assert '--inactive' in spawners[-1].kwargs['arguments']      # switching to torque stays the user's
    _, nodes, _ = _launch({'robot': 'franka', 'spawn_controllers': 'true', 'spawn_broadcaster': 'true'})
    assert [n.kwargs['arguments'][0] for n in nodes if n.kwargs['package'] == 'controller_manager'] == [
        'joint_state_broadcaster', 'effort_controller']
    _, nodes, _ = _launch({'robot': 'franka'})
    assert [n.kwargs['executable'] for n in nodes] == [
        'dynamics_node', 'dynamics_services', 'command_watchdog']     # no spawner


def test_profile_joint_states_errors_name_the_field(tmp_path):
    data = yaml.safe_load((ROBOTS / 'franka.yaml').read_text())
    for field, value, words in (('rate_hz', -1, 'joint_states.rate_hz must be a rate >= 0'),
                                ('rate_hz', 'fast', 'joint_states.rate_hz must be a rate >= 0'),
                                ('effort', 'amperes', 'joint_states.effort must be one of joint_torque, motor_current'),
                                ('topic', '', 'joint_states.topic must be a topic name')):
        bad = dict(data, joint_states=dict(data['joint_states'], **{field: value}))
        path = tmp_path / 'bad.yaml'
        path.write_text(yaml.safe_dump(bad))
        with pytest.raises(profiles.ProfileError, match=words):
            profiles.load_profile(path)
    plain = {k: v for k, v in data.items() if k != 'joint_states'}     # a user's profile without the block
    path = tmp_path / 'plain.yaml'
    path.write_text(yaml.safe_dump(plain))
    assert profiles.load_profile(path).joint_states == profiles.DEFAULT_JOINT_STATES


def test_a_payload_only_the_node_knows_stays_in_the_command_as_its_gravity_torque():
    """robot_compensates_gravity true and a 2 kg payload set in the node: the command keeps the payload's gravity
    torque, J_c(q)^T m g0 with J_c the linear Jacobian of its centre of mass (Pinocchio, independently), and nothing
    of the arm's own gravity."""
    import pinocchio as pin
    mass, com = 2.0, np.array([0.01, -0.02, 0.08])
    loaded = MODEL.with_payload('panda_hand', mass, com, np.diag([1e-3, 1e-3, 1e-3]))
    q = Q.copy()
    law = Compensation(loaded, 'gravity_coriolis')
    law.compute(q, np.zeros(7))                       # at rest: total = g_loaded(q)
    terms = profiles.CommandTerms(True, False, 7, robot_gravity=profiles.RobotGravity(MODEL, q))
    command = terms.command(law.total, law.gravity)
    pmodel = pin.buildModelFromUrdf(str(PANDA))
    data = pmodel.createData()
    frame = pmodel.getFrameId('panda_hand')
    pin.computeJointJacobians(pmodel, data, q)
    pin.updateFramePlacements(pmodel, data)
    J = pin.getFrameJacobian(pmodel, data, frame, pin.LOCAL_WORLD_ALIGNED)
    r = data.oMf[frame].rotation @ com
    skew = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    J_com = J[:3] - skew @ J[3:]
    expected = J_com.T @ (mass * np.array([0.0, 0.0, 9.81]))
    np.testing.assert_allclose(command, expected, atol=1e-9)
    assert np.abs(expected).max() > 1.0               # a torque the arm would sag under if it were dropped
    assert 'payloads set in this node' in terms.describe()
    # Without the robot's gravity, the old rule: the payload's gravity left out with the rest.
    np.testing.assert_allclose(profiles.CommandTerms(True, False, 7).command(law.total, law.gravity), 0, atol=1e-9)


def test_payloads_on_a_robot_that_is_no_fixed_base_tree_are_refused_not_dropped():
    assert profiles.payload_problem('true', {'hand': ()}, tree=True) is None
    assert profiles.payload_problem('false', {'hand': ()}, tree=False) is None
    assert 'hand' in profiles.payload_problem('true', {'hand': ()}, tree=False)
