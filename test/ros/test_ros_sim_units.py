"""The simulator node's pure parts, without DDS: command decoding, pacing, markers."""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import robot_dynamics as rd
from robot_dynamics.ros.markers import MarkerBuilder, body_inertials, box_sides, quaternion
from robot_dynamics.ros.pacing import MAX_TICK, MIN_TICK, Pacer, tick_period
from robot_dynamics.ros.sim_commands import (CommandError, effort_command, joint_command,
                                              joint_state_update, stamp)

from conftest import PANDA

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
INDEX = {n: i for i, n in enumerate(NAMES)}
NAN = float('nan')


# --- commands ----------------------------------------------------------------
def test_effort_command_checks_length_and_finiteness():
    joints = NAMES[::-1]
    v = effort_command([float(i) for i in range(7)], joints)
    np.testing.assert_array_equal(v, np.arange(7.0))
    with pytest.raises(CommandError, match='has 6 values, expected 7'):
        effort_command([0.0] * 6, joints)
    with pytest.raises(CommandError, match='not finite for %s' % joints[2]):
        effort_command([0.0, 0.0, NAN, 0.0, 0.0, 0.0, 0.0], joints)
    with pytest.raises(CommandError, match='has 100000 values'):
        effort_command(np.zeros(100000), joints)


def test_joint_command_mode_is_the_first_field_with_a_value():
    names = ['panda_joint3', 'panda_joint1', 'panda_joint7']
    joints, values, modes = joint_command(names, [0.1, NAN, NAN], [9.0, 0.2, NAN], [9.0, 9.0, 0.3], INDEX)
    assert joints == names
    assert modes == ['position', 'velocity', 'effort']
    np.testing.assert_array_equal(values, [0.1, 0.2, 0.3])
    # One field filled: every joint in that mode (what the ros2_control plugin sends).
    _, values, modes = joint_command(NAMES, [], [], list(range(7)), INDEX)
    assert modes == ['effort'] * 7
    np.testing.assert_array_equal(values, np.arange(7.0))


@pytest.mark.parametrize('names, position, velocity, effort, message', [
    ([], [], [], [], 'names no joint'),
    (['panda_joint1'], [], [], [], 'no position, velocity or effort'),
    (['panda_joint1', 'panda_joint2'], [0.0], [], [], 'position has 1 values for 2 names'),
    (['panda_joint1'], [math.inf], [], [], 'position for panda_joint1 is infinite'),
    (['panda_joint1', 'panda_joint2'], [0.0, NAN], [], [], 'no value for panda_joint2'),
    (['panda_joint1', 'gripper'], [0.0, 0.0], [], [], "'gripper', not joint"),
    (['panda_joint1', 'panda_joint1'], [0.0, 0.0], [], [], 'panda_joint1 more than once'),
    (['panda_joint1'] * 50, [0.0] * 50, [], [], 'names 50 joints, the model has 7'),
])
def test_joint_command_rejects(names, position, velocity, effort, message):
    with pytest.raises(CommandError, match=message):
        joint_command(names, position, velocity, effort, INDEX)


def test_joint_state_update_by_name():
    idx, q, qd = joint_state_update(['panda_joint4', 'panda_joint2'], [-1.0, 0.5], [], INDEX)
    np.testing.assert_array_equal(idx, [3, 1])
    np.testing.assert_array_equal(q, [-1.0, 0.5])
    np.testing.assert_array_equal(qd, [0.0, 0.0])
    for args, message in [((['x'], [0.0], []), "unknown joint"),
                          ((['panda_joint1'], [0.0], [0.0, 1.0]), 'velocity has 2 values'),
                          ((['panda_joint1'], [NAN], []), 'position is not finite for panda_joint1'),
                          ((['panda_joint1'] * 2, [0.0] * 2, []), 'named twice')]:
        with pytest.raises(CommandError, match=message):
            joint_state_update(*args, INDEX)


def test_stamp_splits_seconds():
    assert stamp(0.0) == (0, 0)
    assert stamp(12.001) == (12, 1_000_000)
    assert stamp(3 * 0.001 * 1000) == (3, 0)


# --- pacing ----------------------------------------------------------------------
def test_pacer_follows_the_wall_clock_times_the_factor():
    p = Pacer(dt=1e-3, real_time_factor=2.0, catch_up_limit=0.05)
    p.anchor(100.0, 0)
    steps = 0
    for k in range(1, 1001):                       # 1 s of wall time in 1 ms ticks
        steps += p.due(100.0 + k * 1e-3, steps)
    assert steps == 2000 and p.lag_events == 0


def test_pacer_catches_up_a_late_tick_but_bounds_the_batch():
    p = Pacer(dt=1e-3, real_time_factor=1.0, catch_up_limit=0.05)
    p.anchor(0.0, 0)
    assert p.max_batch == 50
    assert p.due(0.030, 0) == 30                   # 30 ms late: made up at once
    assert p.due(1.030, 30) == 50                  # 1 s late: 50 steps, the rest dropped
    assert p.lag_events == 1 and p.dropped_steps == 1000 - 50
    assert p.due(1.031, 80) == 1                   # then on time again
    assert p.due(1.031, 81) == 0


def test_tick_period_bounds():
    assert tick_period(1e-3, 1.0) == pytest.approx(1e-3)
    assert tick_period(1e-4, 1.0) == MIN_TICK      # 10 kHz physics: 10 steps per tick
    assert tick_period(1e-3, 0.01) == MAX_TICK     # slow motion: ticks without steps
    assert tick_period(1e-3, 0.0) == MIN_TICK


# --- markers -------------------------------------------------------------------------
def _urdf_links():
    """{link: (mass, com (3,) in the link frame)} and {child link: (parent, joint type)} from the URDF text."""
    root = ET.parse(str(PANDA)).getroot()
    links = {}
    for link in root.findall('link'):
        inertial = link.find('inertial')
        if inertial is None:
            links[link.get('name')] = (0.0, np.zeros(3))
            continue
        origin = inertial.find('origin')
        xyz = np.zeros(3) if origin is None else np.array([float(x) for x in origin.get('xyz', '0 0 0').split()])
        links[link.get('name')] = (float(inertial.find('mass').get('value')), xyz)
    parent = {j.find('child').get('link'): (j.find('parent').get('link'), j.get('type'))
              for j in root.findall('joint')}
    return links, parent


def composite_coms(q):
    """{moving link: (mass, com in the base frame)} composed link by link from the URDF
    and rd.forward_kinematics, independently of the model's merged bodies."""
    links, parent = _urdf_links()
    T = rd.forward_kinematics(MODEL, q)

    def body_link(link):                           # the nearest link at or above moved by a joint
        while link in parent and parent[link][1] == 'fixed':
            link = parent[link][0]
        return link if link in parent else None
    acc = {}
    for link, (m, c) in links.items():
        b = body_link(link)
        if b is None or m == 0:
            continue
        mass, moment = acc.get(b, (0.0, np.zeros(3)))
        acc[b] = (mass + m, moment + m * (T[link][:3, :3] @ c + T[link][:3, 3]))
    return {b: (m, s / m) for b, (m, s) in acc.items()}


def test_marker_coms_equal_the_urdf_links_composed():
    q = np.array([0.3, -0.5, 0.1, -1.8, 0.2, 1.4, 0.5])
    expected = composite_coms(q)
    builder = MarkerBuilder(MODEL)
    array = builder.update(q, None)
    assert array.markers[0].action == array.markers[0].DELETEALL        # first array clears old markers
    spheres = {m.id: m for m in array.markers if m.ns == 'com'}
    assert len(spheres) == len(expected)
    for body in builder.bodies:
        m, c = expected[body.link]
        assert body.mass == pytest.approx(m, rel=1e-12)
        p = spheres[body.index].pose.position
        np.testing.assert_allclose([p.x, p.y, p.z], c, atol=1e-12)
    assert builder.update(q, None).markers[0].ns == 'frames'            # later arrays: no DELETEALL


def test_inertia_boxes_have_the_bodies_mass_and_principal_moments():
    for body in body_inertials(MODEL):
        a = box_sides(body.mass, body.moments)
        box = body.mass / 12.0 * np.array([a[1]**2 + a[2]**2, a[0]**2 + a[2]**2, a[0]**2 + a[1]**2])
        np.testing.assert_allclose(box, body.moments, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(body.axes @ body.axes.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(body.axes) == pytest.approx(1.0)


def test_quaternion_matches_scipy():
    for R in Rotation.random(200, random_state=1).as_matrix():
        q = quaternion(R)
        ref = Rotation.from_matrix(R).as_quat()
        ref = ref if ref[3] >= 0 else -ref
        np.testing.assert_allclose(q, ref, atol=1e-12)
    np.testing.assert_allclose(quaternion(np.diag([1.0, -1.0, -1.0])), [1, 0, 0, 0], atol=1e-15)


# --- service calls that may be resent ---------------------------------------
class _Answered:
    def __init__(self, value):
        self.value = value

    def done(self):
        return self.value is not None

    def result(self):
        return self.value


class _LosesFirstResponses:
    """A client whose first ``lost`` responses never come (Fast DDS, ros2/ros2#1024)."""

    def __init__(self, lost):
        self.lost, self.sent, self.removed = lost, [], []

    def call_async(self, request):
        self.sent.append(request)
        return _Answered(None if len(self.sent) <= self.lost else 'answer to %s' % request)

    def remove_pending_request(self, future):
        self.removed.append(future)


def test_call_until_answered_resends_a_request_whose_response_was_lost():
    from robot_dynamics.errors import NodeTimeout
    from robot_dynamics.tools.processes import call_until_answered
    client = _LosesFirstResponses(lost=2)
    assert call_until_answered(client, 'resume', 5.0, 'the answer', resend_after=0.05) == 'answer to resume'
    assert client.sent == ['resume'] * 3 and len(client.removed) == 2
    client = _LosesFirstResponses(lost=10 ** 6)
    with pytest.raises(NodeTimeout, match='waiting for the answer'):
        call_until_answered(client, 'resume', 0.3, 'the answer', resend_after=0.05)
    assert 4 <= len(client.sent) <= 8
