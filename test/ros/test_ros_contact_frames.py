"""simulator_node's world bodies on TF and the arm touching itself, over DDS (issue 35, point 3 and the
self-collision Done-when).

- World bodies on TF: a world file with a ground, a table (turned 0.3 rad about z) and a cube dropped 5 mm
  onto it, out of the arm's reach; the arm is held by the emulated robot's gravity compensation. /tf_static
  (read as a late joiner, transient local) holds the ground and the table at their world-file poses, parent
  the base link; /tf holds the cube, which comes to rest on the table top: its centre half an edge above it,
  less the contact's stated sinking (m g / k, under 1 mm), flat, where it was dropped across the table.
- Self-collision without a world: the bundled Panda's visuals with urdf/panda_arm.srdf (``collision_geometry``
  alone), the elbow driven by an effort of -3 N m (the other joints held by position commands on the same
  joint-command topic, taken while the simulator is paused) from -2.0 rad towards its limit of -3.07 rad.
  The hand's body (panda_link7) meets the shoulder (panda_link1) at -2.77 rad and stops there: every joint
  velocity settles below 1e-3 rad/s with the elbow short of its limit. The contact is published: ~/contacts/<link> of both links at one stamp are
  equal and opposite (their sum, moved to one point in the base frame, is zero), they balance the joint
  torques (g(q) = effort + sum J^T w: the joint friction of the URDF is 0 and the damping acts on velocity
  only), and ~/contact_markers has the contact points with their force arrows.
"""
import math
import time

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

import robot_dynamics as rd

from conftest import LATCHED, PANDA, set_paused, wait_for

pytestmark = pytest.mark.flaky(reruns=1)

MODEL = rd.load_urdf(str(PANDA))
SRDF = str(rd.bundled_path('urdf/panda_arm.srdf'))
BASE = 'panda_link0'
TOP = 0.30                                   # [m] the table's top
EDGE = 0.05                                  # [m] the cube's edge
MASS = 0.2                                   # [kg]
YAW = 0.3                                    # [rad] the table about z
WORLD = ('ground: {height: -0.5}\n'
         'static:\n  - {name: table, shape: box, size: [0.6, 0.8, 0.04], position: [1.5, 0.0, %g], rpy: [0, 0, %g]}\n'
         'free:\n  - {name: cube, shape: box, size: [%g, %g, %g], mass: %g, position: [1.45, 0.1, %g]}\n'
         % (TOP - 0.02, YAW, EDGE, EDGE, EDGE, MASS, TOP + EDGE / 2 + 0.005))
SIM = {'urdf_path': str(PANDA), 'physics_rate': 1000.0, 'publish_rate': 100.0, 'marker_rate': 0.0,
       'contact_rate': 20.0, 'collision_geometry': 'visual', 'srdf_file': SRDF}


def transforms(messages):
    """{child frame: TransformStamped} of the TFMessages ``messages``, the last one of each frame."""
    return {t.child_frame_id: t for msg in messages for t in msg.transforms}


def test_world_bodies_on_tf(ros, start_node, tmp_path):
    world = tmp_path / 'world.yaml'
    world.write_text(WORLD)
    sim = start_node('simulator_node', dict(SIM, world_file=str(world), robot_compensates_gravity=True,
                                            initial_positions=[0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8]))
    tf = ros.subscribe(TFMessage, '/tf')
    ros.wait_for_subscriber(sim.topic('effort_controller/commands'), process=sim)
    static = ros.subscribe(TFMessage, '/tf_static', LATCHED)          # after the node sent it: latched
    frames = wait_for(lambda: transforms(static.messages).keys() >= {'ground', 'table'} and transforms(
        static.messages), 30)
    assert frames, 'no /tf_static with the ground and the table: %s\n%s' % (static.messages, sim.read_log())
    table, ground = frames['table'], frames['ground']
    assert table.header.frame_id == ground.header.frame_id == BASE
    p, r = table.transform.translation, table.transform.rotation
    assert (p.x, p.y, p.z) == pytest.approx((1.5, 0.0, TOP - 0.02), abs=1e-12)
    assert (r.x, r.y, r.z, r.w) == pytest.approx((0.0, 0.0, math.sin(YAW / 2), math.cos(YAW / 2)), abs=1e-12)
    assert ground.transform.translation.z == -0.5 and ground.transform.rotation.w == 1.0

    def resting():
        """The cube's last two transforms, once 1 s apart they agree within 1e-6 m."""
        cube = [(t, m) for t, m in zip(tf.times, tf.messages) if any(x.child_frame_id == 'cube' for x in m.transforms)]
        if not cube or cube[-1][0] - cube[0][0] < 1.0:
            return None
        last = transforms([cube[-1][1]])['cube']
        before = transforms([next(m for t, m in reversed(cube) if t <= cube[-1][0] - 1.0)])['cube']
        a, b = last.transform.translation, before.transform.translation
        return last if abs(a.x - b.x) + abs(a.y - b.y) + abs(a.z - b.z) < 1e-6 else None

    cube = wait_for(resting, 30, 0.1)
    assert cube is not None, 'the cube does not come to rest on /tf: %s\n%s' % (tf.last(), sim.read_log())
    assert cube.header.frame_id == BASE and [t.child_frame_id for t in tf.last().transforms] == ['cube']
    p, r = cube.transform.translation, cube.transform.rotation
    sink = TOP + EDGE / 2 - p.z                                      # m g / k of the contact model: under 1 mm
    print('\nthe cube rests %.4f mm into the table top' % (1e3 * sink))
    assert 0.0 < sink < 1e-3
    assert (p.x, p.y) == pytest.approx((1.45, 0.1), abs=1e-4)         # dropped flat: no slide
    assert abs(r.w) == pytest.approx(1.0, abs=1e-6)


def test_the_arm_folded_into_itself_stops_at_contact(ros, start_node):
    q0 = [0.0, 0.0, 0.0, -2.0, 0.0, 0.5, 0.0]
    sim = start_node('simulator_node', dict(SIM, initial_positions=q0, integrator='rk4', start_paused=True))
    states = ros.subscribe(JointState, sim.topic('joint_states'))
    links = ['panda_link%d' % k for k in range(1, 8)]
    wrenches = {link: ros.subscribe(WrenchStamped, sim.topic('~/contacts/' + link), 100) for link in links}
    markers = ros.subscribe(MarkerArray, sim.topic('~/contact_markers'), 10)
    commands = ros.publisher(JointState, sim.topic('robot_joint_commands'))
    ros.wait_for_subscriber(sim.topic('robot_joint_commands'), process=sim)
    command = JointState(name=list(MODEL.joint_names))
    command.position = [math.nan if k == 3 else x for k, x in enumerate(q0)]     # the elbow by effort
    command.effort = [-3.0 if k == 3 else math.nan for k in range(7)]

    def commanded():
        """While paused the simulator publishes the torques of the command in force: -3 N m at the elbow."""
        commands.publish(command)
        return len(states) and states.last().effort[3] == -3.0

    assert wait_for(commanded, 30, 0.1), 'the command is not taken: %s\n%s' % (states.last(), sim.read_log())
    set_paused(ros, sim, False)

    def at_rest():
        """The last joint state once the velocities of the last 0.5 s are all under 1e-3 rad/s."""
        recent = [m for t, m in zip(states.times, states.messages) if t > time.monotonic() - 0.5]
        moved = len(states) and states.last().position[3] < -2.5
        return moved and len(recent) > 5 and max(np.abs(m.velocity).max() for m in recent) < 1e-3 and recent[-1]

    state = wait_for(at_rest, 30, 0.05)
    assert state, 'the arm does not come to rest: %s\n%s' % (states.last(), sim.read_log())
    q, effort = np.array(state.position), np.array(state.effort)
    lower = MODEL.lower_limit[3]
    print('\nthe elbow stopped at %.4f rad (its limit %.4f rad)' % (q[3], lower))
    assert lower + 0.2 < q[3] < -2.7                                  # at the contact, short of the limit
    time.sleep(0.3)                                                   # the contact outputs of the rest

    def same_stamp():
        """{link: wrench} of the latest stamp every touching link has published."""
        last = {link: c.last() for link, c in wrenches.items() if c.last() is not None}
        stamps = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in last.values()}
        return last if len(stamps) == 1 else None

    last = wait_for(same_stamp, 5)
    assert last, {link: c.last() for link, c in wrenches.items()}
    force, moment, tau = np.zeros(3), np.zeros(3), np.zeros(7)
    touching = []
    for link, msg in last.items():
        T = rd.link_pose(MODEL, q, link)
        f = T[:3, :3] @ [msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z]
        t = T[:3, :3] @ [msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z]
        assert msg.header.frame_id == link
        force += f
        moment += t + np.cross(T[:3, 3], f)                           # about the base frame's origin
        tau += rd.jacobian(MODEL, q, link).T @ np.concatenate([f, t])
        if np.linalg.norm(f) > 1.0:
            touching.append((link, np.linalg.norm(f)))
    print('contact forces: %s' % ', '.join('%s %.3f N' % lf for lf in touching))
    assert len(touching) >= 2 and 'panda_link7' in dict(touching)    # the hand's body and the arm it meets
    assert np.linalg.norm(force) < 1e-6 * max(n for _, n in touching) + 1e-9    # equal and opposite
    assert np.linalg.norm(moment) < 1e-6 * max(n for _, n in touching) + 1e-9
    residual = rd.gravity_torques(MODEL, q) - effort - tau           # statics: g = tau_motor + J^T w
    assert np.linalg.norm(residual) < 0.01 * np.linalg.norm(tau), (residual, tau)

    msg = markers.last()
    points = [m for m in msg.markers if m.ns == 'contact_points']
    arrows = [m for m in msg.markers if m.ns == 'contact_forces']
    assert points and len(arrows) == len(points)
    f_arrows = sum(np.array([m.points[1].x - m.points[0].x, m.points[1].y - m.points[0].y,
                             m.points[1].z - m.points[0].z]) for m in arrows) / 0.001     # 1 mm per N
    assert abs(np.linalg.norm(f_arrows) - max(n for _, n in touching)) < 0.01 * max(n for _, n in touching)
