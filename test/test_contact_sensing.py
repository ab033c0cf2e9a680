"""What a simulation with contact shows (issue 35, point 3, in Python): the contacts
by body name, the free bodies' poses, and the force-torque sensor at a link, whose
reading is the closed form of a static push: the wrench W at the link origin with
J^T W = -(tau - g) (the joint torques hold the arm against the table alone)."""
import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.contact.analytic import PlaneDetector
from robot_dynamics.contact.free_bodies import FreeBodies
from robot_dynamics.contact.sensing import ForceTorqueSensor, contact_list, free_body_poses
from robot_dynamics.contact.stepping import ContactStepper
from robot_dynamics.errors import InputError

Q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785])


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(rd.bundled_path("panda_arm.urdf"))


@pytest.fixture(scope="module")
def pressed(panda):
    """The flange sphere (r = 2 cm, 10 cm out of panda_link8) pushed 5 cm into a table by the
    position servo, settled for 1.5 s; a ball resting on the table (a plane) 1.5 m out."""
    l8 = panda.link_index("panda_link8")
    P = panda.link_placement[l8]
    tip = P[:3, :3] @ [0, 0, 0.1] + P[:3, 3]
    T = rd.link_pose(panda, Q0, "panda_link8")
    x = T[:3, :3] @ [0, 0, 0.1] + T[:3, 3]
    ball = FreeBodies([dict(name="ball", shape="sphere", size=(0.05,), mass=0.3,
                            position=(1.5, 0.0, x[2] - 0.02 + 0.05))])
    det = PlaneDetector([dict(body=panda.link_body[l8], type="sphere", size=(0.02,), position=tip),
                         dict(body=panda.nb, type="sphere", size=(0.05,))],
                        [((0, 0, x[2] - 0.02), (0, 0, 1))])
    stepper = ContactStepper(panda, det, ball)
    sim = rd.Simulator(panda, q0=Q0, contact=stepper)
    J = rd.jacobian(panda, Q0, "panda_link8", (0, 0, 0.1))[:3]
    sim.set_command(Q0 + np.linalg.pinv(J) @ [0, 0, -0.05], mode="position")
    sim.step(1500)
    return sim


def test_contacts_are_named_by_body(panda, pressed):
    contacts = contact_list(pressed.contact)
    pairs = sorted((c.body_a, c.body_b) for c in contacts)
    assert pairs == [("ball", "world"), ("panda_link7", "world")]
    arm = next(c for c in contacts if c.body_a == "panda_link7")
    assert np.allclose(arm.normal, [0, 0, 1]) and 90.0 < arm.force[2] < 120.0 and arm.depth > 0
    ball = next(c for c in contacts if c.body_a == "ball")
    assert abs(ball.force[2] - 0.3 * 9.81) < 1e-6 * 0.3 * 9.81            # it carries its weight


def test_free_body_poses(pressed):
    table = pressed.contact.detector.plane_point[0, 2]
    [(name, p, quat)] = free_body_poses(pressed.contact)
    assert name == "ball" and abs(p[0] - 1.5) < 1e-9 and abs(p[2] - (table + 0.05)) < 1e-3   # sunk m g / k < 1 mm
    assert abs(np.linalg.norm(quat) - 1.0) < 1e-12


def test_ft_sensor_reads_the_static_push(panda, pressed):
    """W at panda_link8's origin (link axes) from the joint torques alone: the arm is
    static, so tau - g = -J^T W_base with J link8's origin Jacobian (base axes)."""
    q = pressed.q
    sensor = ForceTorqueSensor(panda, "panda_link8")
    w = sensor.wrench(pressed.contact, q)
    T = rd.link_pose(panda, q, "panda_link8")
    J = rd.jacobian(panda, q, "panda_link8")                                  # (6, 7), base axes
    tau_g = pressed.effort - rd.gravity_torques(panda, q)
    W = np.linalg.lstsq(J.T, -tau_g, rcond=None)[0]                         # 7 equations, 6 unknowns
    assert np.linalg.norm(J.T @ W + tau_g) < 1e-2 * np.linalg.norm(tau_g)   # a static state
    R = T[:3, :3]
    expected = np.concatenate([R.T @ W[:3], R.T @ W[3:]])
    assert np.linalg.norm(w[:3] - expected[:3]) < 0.01 * np.linalg.norm(expected[:3])
    assert np.linalg.norm(w[3:] - expected[3:]) < 0.01 * np.linalg.norm(expected[3:]) + 1e-3
    force_world = R @ w[:3]                           # the table pushes up ~100 N, friction within its cone
    mu = pressed.contact.parameters.friction
    assert 90.0 < force_world[2] < 120.0 and np.hypot(*force_world[:2]) <= mu * force_world[2]


def test_ft_sensor_nearer_the_base_reads_the_same_wrench_moved(panda, pressed):
    """A sensor at panda_link5 carries the same contact: the same force, its torque
    moved by the lever from link5's origin to link8's, (o8 - o5) x f (world axes)."""
    q = pressed.q
    T5, T8 = rd.link_pose(panda, q, "panda_link5"), rd.link_pose(panda, q, "panda_link8")
    w5 = ForceTorqueSensor(panda, "panda_link5").wrench(pressed.contact, q)
    w8 = ForceTorqueSensor(panda, "panda_link8").wrench(pressed.contact, q)
    f5, f8 = T5[:3, :3] @ w5[:3], T8[:3, :3] @ w8[:3]
    t5, t8 = T5[:3, :3] @ w5[3:], T8[:3, :3] @ w8[3:]
    assert np.linalg.norm(f5 - f8) < 1e-9 * np.linalg.norm(f8)
    assert np.linalg.norm(t5 - (t8 + np.cross(T8[:3, 3] - T5[:3, 3], f8))) < 1e-9 * np.linalg.norm(t5)


def test_a_bodys_own_contacts(panda, pressed):
    """subtree=False: link5's body touches nothing; link7's carries the flange sphere, as the sensor reads it."""
    q = pressed.q
    assert np.all(ForceTorqueSensor(panda, "panda_link5", subtree=False).wrench(pressed.contact, q) == 0.0)
    w7 = ForceTorqueSensor(panda, "panda_link7", subtree=False).wrench(pressed.contact, q)
    w8 = ForceTorqueSensor(panda, "panda_link8").wrench(pressed.contact, q)
    R7, R8 = rd.link_pose(panda, q, "panda_link7")[:3, :3], rd.link_pose(panda, q, "panda_link8")[:3, :3]
    assert np.linalg.norm(R7 @ w7[:3] - R8 @ w8[:3]) < 1e-9 * np.linalg.norm(w8[:3])


def test_ft_sensor_refuses_unknown_and_base_links(panda):
    with pytest.raises(InputError, match="no link 'tool0'"):
        ForceTorqueSensor(panda, "tool0")
    with pytest.raises(InputError, match="fixed to the base"):
        ForceTorqueSensor(panda, panda.link_names[0])
