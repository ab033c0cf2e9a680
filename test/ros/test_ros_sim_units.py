"""The simulator node's parts without DDS: markers, the settings' defaults, resent service calls.

Command decoding, pacing and the simulation session are ROS-free: test/test_simulation_session.py."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import robot_dynamics as rd
from robot_dynamics.ros.markers import MarkerBuilder, body_inertials, box_sides, quaternion

from conftest import PANDA

MODEL = rd.load_urdf(str(PANDA))


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


# --- the node's parameters and the ROS-free settings ------------------------------------
def test_simulation_settings_default_to_the_node_parameters():
    """SimulationSettings (robot_dynamics/simulation/build.py) has a field per simulator_node parameter it
    runs with, of the same name and default (the node fills it from its parameters)."""
    from dataclasses import fields
    from robot_dynamics.ros.model_node import MODEL_PARAMS
    from robot_dynamics.ros.simulator_node import NODE_PARAMS
    from robot_dynamics.simulation.build import SimulationSettings
    schema = {p.name: p.default for p in MODEL_PARAMS + NODE_PARAMS}
    settings = SimulationSettings()
    for f in fields(SimulationSettings):
        assert f.name in schema, f.name
        default = getattr(settings, f.name)
        assert (list(default) if isinstance(default, tuple) else default) == schema[f.name], f.name


def test_markers_of_a_moving_base_are_in_the_frame_given():
    builder = MarkerBuilder(MODEL, 'odom')
    frames = {m.header.frame_id for m in list(builder.array.markers) + list(builder.first.markers)}
    assert frames == {'odom'}
    assert {m.header.frame_id for m in MarkerBuilder(MODEL).first.markers} == {MODEL.base_link}


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
