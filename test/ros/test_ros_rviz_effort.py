"""RViz's Effort display in rviz/sim.rviz shows a torque topic that dynamics_node publishes in sim.launch.py.

No GUI: the launch is evaluated against the stand-ins of ``launch_standins``
(as test_ros_sim_launch.py does), the RViz file it gives rviz2 is parsed as
YAML, and dynamics_node is started with the command line `ros2 launch` would
use, so the topic graph shows what it publishes. rviz_default_plugins/Effort
reads sensor_msgs/JointState ``name`` + ``effort`` and the joints' effort
limits from the robot description topic; it draws the revolute joints, at
the TF of each joint's child link. Before ros2/rviz#1312 (a MessageFilter
display) it drops a JointState whose header.frame_id is empty, so the
node's message must carry a frame RViz can transform: the model's root link.
"""
import time

import numpy as np
import yaml
from sensor_msgs.msg import JointState

import robot_dynamics as rd

import launch_standins as L
from conftest import BEST_EFFORT, PANDA, ROOT, wait_for

LAUNCH = ROOT / 'launch' / 'sim.launch.py'
SHARES = {'robot_dynamics': str(ROOT)}
SCRIPTS = L.console_scripts(ROOT / 'setup.py')
VISUALIZATION = ['robot_state_publisher', 'rviz2', 'xacro']
MODEL = rd.load_urdf(str(PANDA))
Q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])
QD = np.array([0.5, -0.4, 0.3, 0.6, -0.2, 0.4, 0.9])
JOINT_STATE = 'sensor_msgs/msg/JointState'


def _launch(monkeypatch, tmp_path):
    L.install(monkeypatch)
    L.ament_index(monkeypatch, tmp_path / 'ament_prefix', VISUALIZATION)
    _, nodes, context = L.evaluate(LAUNCH, {'gravity_compensation': 'true'}, SHARES)
    return {n.kwargs['executable']: n for n in nodes}, context


def _effort_display(by):
    """The one Effort display of the RViz file the launch gives rviz2."""
    args = by['rviz2'].kwargs['arguments']
    path = args[args.index('-d') + 1]
    config = yaml.safe_load(open(path).read())['Visualization Manager']
    efforts = [d for d in config['Displays'] if d['Class'] == 'rviz_default_plugins/Effort']
    assert len(efforts) == 1, 'expected one rviz_default_plugins/Effort display in %s, found %d' % (path, len(efforts))
    return efforts[0], config


def test_effort_display_shows_a_joint_state_topic_of_dynamics_node(ros, start_node, tmp_path, monkeypatch):
    by, context = _launch(monkeypatch, tmp_path)
    display, config = _effort_display(by)
    assert display['Enabled'] is True
    topic = display['Topic']['Value']
    # The robot description comes from robot_state_publisher (root namespace in this launch).
    assert display['Robot Description'] == '/robot_description'
    assert 'robot_state_publisher' in by
    # A 1 kHz topic: RViz reads it best-effort, so a slow RViz never holds the node's writer back.
    assert display['Topic']['Reliability Policy'] == 'Best Effort'

    node = by['dynamics_node'].kwargs
    name = L._perform(node['name'], context)
    namespace = L._perform(node['namespace'], context) if node.get('namespace') else '/'
    proc = start_node.command(L.node_command(by['dynamics_node'], context, SCRIPTS, tmp_path), name)
    ros.wait_for_subscriber('/joint_states', process=proc)

    def joint_state_topics():
        # The JointState topics this node's writers publish, by endpoint (each endpoint names its node): a look-up
        # by node name found, twice in CI, another 'dynamics_node' in '/' the graph still listed, with no writers.
        found = set()
        for t, types in ros.node.get_topic_names_and_types():
            if JOINT_STATE in types and any(
                    (info.node_name, info.node_namespace) == (name, namespace)
                    for info in ros.node.get_publishers_info_by_topic(t)):
                found.add(t)
        return sorted(found)

    wait_for(lambda: topic in joint_state_topics(), timeout=60)
    joint_state_topics = joint_state_topics()
    assert topic in joint_state_topics, (
        'the Effort display reads %s, which dynamics_node (%s in namespace %s) does not publish as %s; '
        'it publishes JointState on: %s' % (topic, name, namespace, JOINT_STATE, ', '.join(joint_state_topics)))
    # It is the topic of the commanded torque, which goes with every joint state (not a decimated one).
    assert topic == '/'.join([namespace.rstrip('/'), name, 'compensation_torque'])

    # What the display gets: the URDF joints' torques in `effort`, a frame it can transform, every state.
    got = ros.subscribe(JointState, topic, BEST_EFFORT)
    pub = ros.publisher(JointState, '/joint_states')
    assert wait_for(lambda: pub.get_subscription_count() > 0, 10)
    # Both ends matched first: states until one torque comes back (discovery of the torque topic's
    # publisher by this subscription may lag behind the node's subscription to joint_states).
    warm = JointState(name=list(MODEL.joint_names), position=Q.tolist(), velocity=QD.tolist())
    warm.header.stamp.sec = 99
    assert wait_for(lambda: pub.publish(warm) or len(got) > 0, 10, period=0.02), 'no torque from dynamics_node'
    time.sleep(0.1)
    got.clear()
    n = 30
    for k in range(n):
        msg = JointState(name=list(MODEL.joint_names), position=(Q + 1e-3 * k).tolist(), velocity=QD.tolist())
        msg.header.stamp.sec, msg.header.stamp.nanosec = 100, k
        pub.publish(msg)
        time.sleep(0.01)
    assert wait_for(lambda: len(got) >= n, 5), 'only %d of %d torque messages on %s' % (len(got), n, topic)
    last = got.last()
    assert list(last.name) == list(MODEL.joint_names)
    np.testing.assert_allclose(np.array(last.effort), rd.nonlinear_effects(MODEL, Q + 1e-3 * (n - 1), QD),
                               rtol=0, atol=1e-9)
    assert last.header.frame_id == MODEL.base_link == config['Global Options']['Fixed Frame'], \
        'frame_id %r: RViz needs a frame it can transform' % last.header.frame_id
    assert proc.poll() is None
