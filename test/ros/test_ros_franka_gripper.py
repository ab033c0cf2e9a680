"""robot:=franka with the gripper: the description has the fingers, franka/joint_states only the arm.

franka.launch.py (franka_ros2, jazzy) with ``load_gripper:=true`` puts the
Franka Hand's finger joints in robot_description (franka_description's
franka_hand.xacro: ``<prefix>finger_joint1``, prismatic, and
``<prefix>finger_joint2``, its ``<mimic>``), while joint_state_broadcaster
publishes only the 7 arm joints on ``franka/joint_states`` (1 kHz) and the
gripper's node the fingers on ``franka_gripper/joint_states``. Stood in here,
in a namespace of this test's own: test/ros/joint_state_publisher.py at
1 kHz for the arm and at 30 Hz for the fingers. The description is the
package's Panda URDF renamed to fr3_* with two 15 g fingers added (the mimic
one is no model joint: the model has 8 joints).

What the node decides, by its own counts (its /diagnostics): every joint
state of the arm gives a command once both streams came (commands_out over
messages_in, not a wall-clock rate), and the command holds the 7 arm joints
in the profile's order. Without the gripper's topic and without held joints,
the node commands nothing and says so once, naming the finger joint and the
parameters that fix it; with the finger held (held_joints), it commands.
"""
import sys
import time

import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import launch_standins as L
from conftest import BEST_EFFORT as BEST_EFFORT_QOS, PANDA, ROOT, wait_for
from robot_dynamics.control import profiles

# A 1 kHz stream on a 2-core machine: one rerun, every assertion each time.
pytestmark = pytest.mark.flaky(reruns=1)

ARM = ['fr3_joint%d' % k for k in range(1, 8)]
FINGERS = ['fr3_finger_joint1', 'fr3_finger_joint2']
Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
BROADCASTER_HZ = 1000.0
GRIPPER_HZ = 30.0
FINGERS_XML = """
  <link name="fr3_leftfinger"><inertial><origin xyz="0 0.01 0.02"/><mass value="0.015"/>
    <inertia ixx="2.4e-6" ixy="0" ixz="0" iyy="2.4e-6" iyz="0" izz="1e-6"/></inertial></link>
  <link name="fr3_rightfinger"><inertial><origin xyz="0 -0.01 0.02"/><mass value="0.015"/>
    <inertia ixx="2.4e-6" ixy="0" ixz="0" iyy="2.4e-6" iyz="0" izz="1e-6"/></inertial></link>
  <joint name="fr3_finger_joint1" type="prismatic">
    <parent link="fr3_hand"/><child link="fr3_leftfinger"/><origin xyz="0 0 0.0584"/><axis xyz="0 1 0"/>
    <limit effort="100" lower="0.0" upper="0.04" velocity="0.2"/></joint>
  <joint name="fr3_finger_joint2" type="prismatic">
    <parent link="fr3_hand"/><child link="fr3_rightfinger"/><origin xyz="0 0 0.0584"/><axis xyz="0 -1 0"/>
    <limit effort="100" lower="0.0" upper="0.04" velocity="0.2"/><mimic joint="fr3_finger_joint1"/></joint>
</robot>"""


def fr3_with_hand(tmp_path):
    """The Panda URDF as an FR3 with the hand's two fingers (file path)."""
    text = PANDA.read_text().replace('panda_', 'fr3_').replace('</robot>', FINGERS_XML)
    path = tmp_path / 'fr3_with_hand.urdf'
    path.write_text(text)
    return path


@pytest.fixture
def standins(monkeypatch):
    L.install(monkeypatch)


class Arm:
    """The arm's broadcaster and, if asked, the gripper's publisher in a fresh namespace; the node's diagnostics."""

    def __init__(self, ros, start_node, gripper):
        self.ros, self.start_node = ros, start_node
        self.ns = '/fg_%d' % (time.monotonic_ns() % 10**9)
        self.diagnostics = ros.subscribe(DiagnosticArray, '/diagnostics')
        if gripper:
            self.publisher('franka_gripper/joint_states', FINGERS, [0.03, 0.03], GRIPPER_HZ, 'gripper')
            self.wait_for_stream('franka_gripper/joint_states')
        self.publisher('franka/joint_states', ARM, Q, BROADCASTER_HZ, 'jsb')
        self.node = None

    def wait_for_stream(self, topic):
        """Until this process hears ``topic``: its publisher process is up before the node starts, so that
        the node finds both streams at its start (the node warns of joints no stream carried 1 s after
        the arm's first state; a publisher process still starting on a loaded machine is no such joint)."""
        heard = self.ros.subscribe(JointState, '%s/%s' % (self.ns, topic), BEST_EFFORT_QOS)
        try:
            assert heard.wait(count=1, timeout=60), 'no message on %s/%s' % (self.ns, topic)
        finally:
            self.ros.node.destroy_subscription(heard.subscription)

    def publisher(self, topic, names, q, rate, tag):
        script = ROOT / 'test' / 'ros' / 'joint_state_publisher.py'
        self.start_node.command([sys.executable, str(script), '--topic', '%s/%s' % (self.ns, topic), '--tag', tag,
                                 '--names', ','.join(names), '--q=' + ','.join(map(repr, q)), '--rate', str(rate)],
                                '%s_%d' % (tag, time.monotonic_ns()))

    def launch(self, tmp_path, urdf):
        """dynamics_node as gravity_compensation.launch.py robot:=franka describes it, in the namespace."""
        arguments = {'robot': 'franka', 'urdf': str(urdf), 'own_controller': 'false', 'command_watchdog': 'false',
                     'query_services': 'false'}
        _, nodes, context = L.evaluate(ROOT / 'launch' / 'gravity_compensation.launch.py', arguments,
                                       {'robot_dynamics': str(ROOT)})
        node = next(n for n in nodes if n.kwargs['executable'] == 'dynamics_node')
        cmd = L.node_command(node, context, L.console_scripts(ROOT / 'setup.py'), tmp_path)
        self.node = self.start_node.command(cmd + ['-r', '__ns:=' + self.ns], 'dynamics_node_%d' % time.monotonic_ns())

    def start(self, params, name='dynamics_node'):
        """dynamics_node started with ``params`` (no launch file) in the namespace."""
        self.node = self.start_node('dynamics_node', params, name=name, ns=self.ns,
                                    remaps={'joint_states': 'franka/joint_states'})

    def reports(self):
        """The node's diagnostics values so far, in order."""
        name = '%s/%s' % (self.ns.lstrip('/'), 'dynamics_node')
        return [{kv.key: kv.value for kv in s.values} for a in list(self.diagnostics.messages)
                for s in a.status if s.name.startswith(name)]

    def counts(self):
        """(messages_in, commands_out) of the node's latest report, (0, 0) before any."""
        reports = self.reports()
        return (int(reports[-1]['messages_in']), int(reports[-1]['commands_out'])) if reports else (0, 0)


def test_franka_with_gripper_commands_the_7_arm_joints_once_per_arm_joint_state(ros, start_node, tmp_path, standins):
    arm = Arm(ros, start_node, gripper=True)
    arm.launch(tmp_path, fr3_with_hand(tmp_path))
    assert wait_for(lambda: arm.counts()[1] >= 100, 60), 'no commands:\n' + arm.node.read_log()
    # What goes out: 7 torques, in the order of the profile's joints (the node's own statement of them).
    commands = ros.subscribe(Float64MultiArray, arm.ns + '/effort_controller/commands',
                             QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    try:
        assert commands.wait(count=5, timeout=10), arm.node.read_log()
        sizes = {len(m.data) for m in list(commands.messages)}
    finally:
        ros.node.destroy_subscription(commands.subscription)
    assert sizes == {7}, sizes
    report = arm.reports()[-1]
    assert report['command_joints'] == ', '.join(ARM), report['command_joints']
    assert 'missing_joints' not in report
    # One command per arm joint state, by the node's own counts over two diagnostics periods.
    first = len(arm.reports())
    assert wait_for(lambda: len(arm.reports()) >= first + 3, 15), 'no diagnostics'
    a, b = arm.reports()[first], arm.reports()[first + 2]
    states = int(b['messages_in']) - int(a['messages_in'])
    sent = int(b['commands_out']) - int(a['commands_out'])
    print('\nrobot:=franka with the gripper: %d commands for %d arm joint states over two diagnostics periods'
          % (sent, states))
    assert states > 200, 'the arm stream hardly reached the node: %d joint states' % states
    assert sent >= 0.99 * states, '%d commands for %d joint states:\n%s' % (sent, states, arm.node.read_log())
    assert 'no position for joint' not in arm.node.read_log()


def franka_params(urdf, **extra):
    """dynamics_node parameters of robot:=franka (config/gravity_compensation.yaml and the profile)."""
    params = yaml.safe_load((ROOT / 'config' / 'gravity_compensation.yaml').read_text())['/**']['ros__parameters']
    params.update(profiles.load_profile(ROOT / 'config' / 'robots' / 'franka.yaml').node_parameters())
    params.update({'urdf_path': str(urdf), 'publish_command': True, 'diagnostics_period': 0.5})
    params.update(extra)
    return params


def test_a_finger_no_stream_carries_gives_one_warning_and_holding_it_commands(ros, start_node, tmp_path):
    urdf = fr3_with_hand(tmp_path)
    arm = Arm(ros, start_node, gripper=False)
    arm.start(franka_params(urdf))
    assert wait_for(lambda: arm.counts()[0] >= 2000, 60), 'no joint states reached the node:\n' + arm.node.read_log()
    time.sleep(1.0)
    log = arm.node.read_log()
    assert arm.counts()[1] == 0, 'commands without a finger position'
    warnings = [line for line in log.splitlines() if 'no position for joint' in line]
    assert len(warnings) == 1, log
    for word in ('fr3_finger_joint1', 'extra_joint_state_topics', 'held_joints', 'franka_gripper/joint_states'):
        assert word in warnings[0], warnings[0]
    assert 'fr3_finger_joint2' not in warnings[0]          # a mimic: no joint of the model
    assert arm.reports()[-1].get('missing_joints') == 'fr3_finger_joint1'
    arm.node.stop()
    arm.start(franka_params(urdf, held_joints=['fr3_finger_joint1'], held_positions=[0.04]))
    assert wait_for(lambda: arm.counts()[1] >= 100, 60), 'no commands with the finger held:\n' + arm.node.read_log()
    assert 'no position for joint' not in arm.node.read_log()
