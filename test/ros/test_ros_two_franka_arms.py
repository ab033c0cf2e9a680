"""Two Franka arms side by side, as franka_ros2's duo layout names them: two namespaces, prefixed joint names.

gravity_compensation.launch.py is evaluated (launch stand-ins) twice with ``robot:=franka robot_type:=fr3v2``,
``arm_prefix:=left`` / ``right`` and ``namespace:=`` one of each (franka_bringup/config/fr3_duo.config.yaml,
jazzy: robot_types ['fr3v2','fr3v2'], arm_prefixes ['left','right']). What it describes is checked (every node
in the arm's namespace, dynamics_node's joints ``<arm_prefix>_fr3v2_jointN``, the spawner's recipe a copy with
those joints), then dynamics_node and command_watchdog are run as `ros2 launch` would run them, each arm with a
controller_manager stand-in and a joint-state publisher in its namespace (the Panda URDF renamed to the arm's
joints). Each manager receives its own arm's 7-joint commands only; killing one arm's dynamics_node makes that
arm's watchdog deactivate that arm's controller, while the other arm's commands keep coming and its controller
stays active.

What is asserted is what the watchdogs decide, not how DDS delivers under load: a real gap over command_timeout
in an arm's commands (8 processes on a loaded 2-core machine) makes its watchdog deactivate a fed controller, and
it is right to. So every deactivation must be one a watchdog decided on a gap it measured on its own arm's topic,
at least command_timeout (its log line says so before the request goes out); after such a one the test
activates the controller again, as a user would, and goes on.
"""
import signal
import sys
import time

import pytest
import yaml

import launch_standins as L
import watchdog_log
from conftest import PANDA, ROOT, wait_for
from controller_manager_standin import read_record

LAUNCH = ROOT / 'launch' / 'gravity_compensation.launch.py'
SCRIPTS = L.console_scripts(ROOT / 'setup.py')
Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
#: [s] 'activate both controllers, then watch them fed for SETTLE s' is done again and again, for at most ACTIVATING
#: s, while a watchdog deactivated a controller in the SETTLE s on a gap it measured over its timeout.
SETTLE = 0.5
ACTIVATING = 60.0


@pytest.fixture
def standins(monkeypatch):
    L.install(monkeypatch)


def joints(prefix):
    return ['%s_fr3v2_joint%d' % (prefix, k) for k in range(1, 8)]


def describe(prefix, ns, tmp_path):
    """The launch file's nodes for one arm: {executable: Node}, and the context."""
    urdf = tmp_path / ('%s.urdf' % prefix)
    urdf.write_text(PANDA.read_text().replace('panda_', '%s_fr3v2_' % prefix))
    arguments = {'robot': 'franka', 'robot_type': 'fr3v2', 'arm_prefix': prefix, 'namespace': ns,
                 'urdf': str(urdf), 'spawn_controllers': 'true', 'query_services': 'false'}
    _, nodes, context = L.evaluate(LAUNCH, arguments, {'robot_dynamics': str(ROOT)})
    return nodes, context


def test_the_launch_file_puts_each_arm_in_its_namespace_with_its_joint_names(standins, tmp_path):
    nodes, _ = describe('left', '/duo_left', tmp_path)
    assert {n.kwargs.get('namespace') for n in nodes} == {'/duo_left'}
    node = next(n for n in nodes if n.kwargs['executable'] == 'dynamics_node')
    assert node.kwargs['parameters'][1]['joints'] == joints('left')
    spawner = next(n for n in nodes if n.kwargs['executable'] == 'spawner')
    argv = spawner.kwargs['arguments']
    recipe = yaml.safe_load(open(argv[argv.index('--param-file') + 1]))
    assert recipe['/**/effort_controller']['ros__parameters']['joints'] == joints('left')
    assert recipe['/**/effort_controller']['ros__parameters']['type'] == 'effort_controllers/JointGroupEffortController'
    # No namespace and no prefix: the profile's own recipe and names, as before.
    _, plain, _ = L.evaluate(LAUNCH, {'robot': 'franka', 'spawn_controllers': 'true'}, {'robot_dynamics': str(ROOT)})
    assert all('namespace' not in n.kwargs for n in plain)
    argv = next(n for n in plain if n.kwargs['executable'] == 'spawner').kwargs['arguments']
    assert argv[argv.index('--param-file') + 1] == str(ROOT / 'config' / 'controllers' / 'franka.yaml')
    with pytest.raises(RuntimeError, match='robot_type must be one of fr3, fr3v2, fp3'):
        L.evaluate(LAUNCH, {'robot': 'franka', 'robot_type': 'panda'}, {'robot_dynamics': str(ROOT)})
    with pytest.raises(RuntimeError, match='takes no arm_prefix'):
        L.evaluate(LAUNCH, {'robot': 'ur', 'arm_prefix': 'left'}, {'robot_dynamics': str(ROOT)})


class Arm:
    """One arm's stand-ins and its launched dynamics_node and command_watchdog."""

    def __init__(self, ros, start_node, tmp_path, prefix):
        self.prefix = prefix
        tmp_path = tmp_path / prefix            # the launch's parameter files of each arm apart
        tmp_path.mkdir()
        self.ns = '/duo_%s_%d' % (prefix, time.monotonic_ns() % 10**8)
        self.record = tmp_path / ('%s_manager.jsonl' % prefix)
        tests = ROOT / 'test' / 'ros'
        start_node.command([sys.executable, str(tests / 'controller_manager_standin.py'), '--record', str(self.record),
                            '--controller', 'effort_controller', '--command-topic', 'effort_controller/commands',
                            '--ros-args', '-r', '__ns:=' + self.ns], 'controller_manager_' + prefix, self.ns)
        start_node.command([sys.executable, str(tests / 'joint_state_publisher.py'), '--topic',
                            self.ns + '/franka/joint_states', '--tag', prefix, '--names', ','.join(joints(prefix)),
                            '--q=' + ','.join(map(repr, Q)), '--rate', '200'], 'broadcaster_' + prefix)
        nodes, context = describe(prefix, self.ns, tmp_path)
        launched = {n.kwargs['executable']: n for n in nodes if n.kwargs['package'] == 'robot_dynamics'}
        assert set(launched) == {'dynamics_node', 'command_watchdog'}
        self.node = start_node.command(L.node_command(launched['dynamics_node'], context, SCRIPTS, tmp_path),
                                       'dynamics_node_' + prefix)
        self.watchdog = start_node.command(L.node_command(launched['command_watchdog'], context, SCRIPTS, tmp_path),
                                           'command_watchdog_' + prefix)
        watched = launched['command_watchdog'].kwargs['parameters'][0]
        self.timeout = watched['command_timeout']               # [s] the launch file's, 0.1
        self.topic = self.ns + '/' + watched['command_topic']   # relative: in the arm's namespace

    def events(self, kind):
        return [e for e in read_record(self.record) if e['event'] == kind]

    def state(self):
        """The controller's state in the manager's record now: 'active' or 'inactive'."""
        ready = self.events('ready')[0]['controllers']['effort_controller']
        return ([ready] + [e['state'] for e in self.events('state')])[-1]

    def justified_deactivations(self, since=None):
        """The controller's deactivations (the manager's record, after ``since``), each asserted to be one its
        watchdog decided on a gap it measured on this arm's topic, at least command_timeout."""
        everyone = [e for e in self.events('state') if e['state'] == 'inactive']   # the record before the log
        watchdog_log.assert_justified(len(everyone), self.watchdog.read_log(), self.topic, self.timeout,
                                      'the %s' % self.prefix)
        return [e for e in everyone if since is None or e['t'] > since]

    def activate(self, ros):
        """The user's switch: the controller active (BEST_EFFORT: one already active is no error)."""
        from controller_manager_msgs.srv import SwitchController
        res = ros.call(SwitchController, self.ns + '/controller_manager/switch_controller',
                       SwitchController.Request(activate_controllers=['effort_controller'],
                                                strictness=SwitchController.Request.BEST_EFFORT))
        assert res.ok, res.message


def test_two_prefixed_arms_in_two_namespaces_each_with_its_own_watchdog(ros, start_node, tmp_path, standins):
    left, right = (Arm(ros, start_node, tmp_path, prefix) for prefix in ('left', 'right'))
    for arm in (left, right):
        assert wait_for(lambda: len(arm.events('command')) >= 50, 90), (
            'no commands reached the %s manager:\n%s' % (arm.prefix, arm.node.read_log()))
        assert {len(e['data']) for e in arm.events('command')} == {7}
        # The watchdog hears them too (its own discovery: under load it can match a second or more after the manager).
        assert wait_for(lambda: 'first command on %s: armed' % arm.topic in arm.watchdog.read_log(), 90), (
            'the %s watchdog heard no command:\n%s' % (arm.prefix, arm.watchdog.read_log()))
    # Both controllers active while commands flow (the user's switch). A watchdog may deactivate a fed controller
    # only on a gap it measured over its timeout (justified_deactivations asserts it); after one, the user's
    # switch again, until both stayed active and fed for SETTLE s.
    deadline = time.monotonic() + ACTIVATING
    while True:
        for arm in (left, right):
            arm.activate(ros)
        fed = time.monotonic()
        time.sleep(SETTLE)
        switched = [arm.justified_deactivations(fed) for arm in (left, right)]
        if not any(switched) and all(arm.state() == 'active' and arm.events('command')[-1]['active']
                                     for arm in (left, right)):
            break
        assert time.monotonic() < deadline, (
            'for %.0f s a watchdog deactivated a controller on a gap over its timeout within %.1f s of activating '
            'it:\n%s\n%s' % (ACTIVATING, SETTLE, left.watchdog.read_log(), right.watchdog.read_log()))
    # The left arm's node dies: its watchdog deactivates its controller; the right arm goes on.
    left.node.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    assert wait_for(lambda: left.state() == 'inactive' and watchdog_log.tripped(left.watchdog.read_log()), 10), (
        'the left watchdog did nothing:\n' + left.watchdog.read_log())
    left.justified_deactivations()
    state = ([e for e in left.events('state') if e['t'] > killed] or [None])[0]
    assert state is None or (state['controller'] == 'effort_controller' and state['state'] == 'inactive'), state
    before = len(right.events('command'))
    time.sleep(1.0)
    assert wait_for(lambda: len(right.events('command')) > before + 50, 10), 'the right arm stopped with the left one'
    assert {len(e['data']) for e in right.events('command')} == {7}
    # The right controller stays active, unless its own watchdog measured a gap over the timeout on its own topic.
    switched = right.justified_deactivations(fed)
    assert switched or right.events('command')[-1]['active'], right.events('state')
