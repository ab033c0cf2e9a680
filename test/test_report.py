"""Dynamic characteristics report (robot_dynamics.analysis.report).

- Its numbers are the library's: M_ii, M_ij, G, J^T F (rd.static_torques).
- The two-link point-mass arm (worked-examples.md 4): the torque per kg of
  payload at the tip and the maximum payload follow from the closed-form G
  with m2 increased.
- The maximum payload is exact: with that payload attached
  (Model.with_payload) the limiting joint needs exactly its effort limit,
  the others less; 0.1 % more exceeds it.
- Edge cases: gravity alone over a limit (0 kg, named joint); no joint
  carries the payload (unbounded, said so); JSON output without infinities.
"""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.analysis.report import default_tool_link, dynamic_report

ROOT = Path(__file__).resolve().parents[1]
TWO_LINK = ROOT / "urdf" / "textbook" / "point_mass_two_link.urdf"
P = dict(m1=1.9, l1=0.62, m2=0.85, l2=0.37, g=9.81, effort=(29.5, None))


def load(path_or_text, gravity=(0, -9.81, 0)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)
        return rd.load_urdf(str(path_or_text), gravity=gravity)


def closed_G(q, m2):
    m1, l1, l2, g = P["m1"], P["l1"], P["l2"], P["g"]
    c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
    return np.array([m2 * l2 * g * c12 + (m1 + m2) * l1 * g * c1, m2 * l2 * g * c12])


def test_report_numbers_are_the_librarys():
    model = rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))
    q = np.array([0.3, -1.2, 1.4, -0.5, 0.8, 0.1])
    F = np.array([5.0, -3.0, -20.0, 0.5, 0.0, 1.0])
    rep = dynamic_report(model, q, link="tool0", point=(0, 0, 0.05), wrench=F)
    M = rd.mass_matrix(model, q)
    np.testing.assert_allclose(rep.effective_inertia, np.diag(M))
    np.testing.assert_allclose(rep.mass_matrix, M)
    np.testing.assert_allclose(np.diag(rep.coupling_ratio), 1.0)
    np.testing.assert_allclose(rep.coupling_ratio, rep.coupling_ratio.T)
    assert np.all(np.abs(rep.coupling_ratio) <= 1.0 + 1e-12)          # M is positive definite
    np.testing.assert_allclose(rep.gravity, rd.gravity_torques(model, q))
    np.testing.assert_allclose(rep.wrench_torques, rd.static_torques(model, q, F, "tool0", (0, 0, 0.05)))
    np.testing.assert_allclose(rep.static_torques, rep.gravity + rep.wrench_torques)
    np.testing.assert_allclose(rep.effort_usage, np.abs(rep.static_torques) / model.effort_limit)
    assert rep.link == "tool0" and rep.joint_names == model.joint_names


def test_payload_torque_and_max_payload_of_the_two_link_arm_follow_the_closed_form():
    """A payload m at the tip is m2 -> m2 + m in the worked example's G, so t = G(m2 = 1) - G(m2 = 0)."""
    model = load(TWO_LINK)
    E = model.effort_limit
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, 2)
        rep = dynamic_report(model, q, link="tip")
        t = closed_G(q, 1.0) - closed_G(q, 0.0)
        np.testing.assert_allclose(rep.payload_torque_per_kg, t, rtol=1e-10, atol=1e-12)
        G = closed_G(q, P["m2"])
        bounds = [((E[i] if t[i] > 0 else -E[i]) - G[i]) / t[i] for i in range(2) if abs(t[i]) > 1e-9]
        if np.all(np.abs(G) <= E):
            assert rep.max_payload == pytest.approx(min(bounds), rel=1e-9)
        else:
            assert rep.max_payload == 0.0


@pytest.mark.parametrize("robot, link, point", [("ur5.urdf", "tool0", (0, 0, 0.1)),
                                                ("panda_arm.urdf", "panda_link8", (0.0, 0.05, 0.1))])
def test_max_payload_puts_the_limiting_joint_exactly_at_its_limit(robot, link, point):
    model = rd.load_urdf(str(ROOT / "urdf" / robot))
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = model.neutral() + rng.uniform(-1, 1, model.nq)
        rep = dynamic_report(model, q, link=link, point=point)
        assert 0 < rep.max_payload < np.inf
        i = model.joint_names.index(rep.limiting_joint)
        loaded = rd.gravity_torques(model.with_payload(link, rep.max_payload, com=point), q)
        assert abs(loaded[i]) == pytest.approx(model.effort_limit[i], rel=1e-9)
        assert np.all(np.abs(loaded) <= model.effort_limit * (1 + 1e-9))
        over = rd.gravity_torques(model.with_payload(link, 1.001 * rep.max_payload, com=point), q)
        assert abs(over[i]) > model.effort_limit[i]


def test_max_payload_includes_the_tool_wrench():
    model = rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))
    q = np.array([0.0, -1.0, 1.0, 0.0, 0.0, 0.0])
    down = dynamic_report(model, q, wrench=[0, 0, -50.0, 0, 0, 0])     # the tool pushes down: helps hold it
    up = dynamic_report(model, q, wrench=[0, 0, 50.0, 0, 0, 0])
    free = dynamic_report(model, q)
    # Pushing down with 50 N is the reaction a 50 / 9.81 kg payload would need: the limits allow that much more.
    assert down.max_payload == pytest.approx(free.max_payload + 50 / 9.81, rel=1e-9)
    assert up.max_payload == pytest.approx(free.max_payload - 50 / 9.81, rel=1e-9)


def test_gravity_alone_over_a_limit_gives_zero_payload_and_names_the_joint():
    text = TWO_LINK.read_text().replace('effort="29.5"', 'effort="2.0"')
    model = load(text)
    rep = dynamic_report(model, [0.0, 0.0], link="tip")
    assert rep.max_payload == 0.0 and rep.limiting_joint == "joint1"
    assert "already needs" in rep.payload_note and "joint1" in rep.payload_note


def test_unbounded_payload_is_said_not_hidden():
    """The one-axis arm with gravity along its joint axis: the weight never loads the joint."""
    model = load(ROOT / "urdf" / "textbook" / "one_axis_arm.urdf", gravity=(0, 0, -9.81))
    rep = dynamic_report(model, [0.7])
    assert rep.max_payload == np.inf and rep.limiting_joint is None
    assert "no joint" in rep.payload_note
    assert "unbounded" in rep.table()
    d = rep.to_dict()
    assert d["max_payload"] is None
    json.dumps(d, allow_nan=False)


def test_table_and_json():
    model = rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))
    rep = dynamic_report(model, [0, -1.57, 1.57, 0, 0, 0], point=(0, 0, 0.1))
    text = rep.table()
    for name in model.joint_names:
        assert name in text
    assert "Maximum payload at this pose: %.4g kg (limited by %s)" % (rep.max_payload, rep.limiting_joint) in text
    assert "shoulder_lift_joint elbow_joint" in text          # a coupling row
    d = json.loads(json.dumps(rep.to_dict(), allow_nan=False))
    assert d["max_payload"] == pytest.approx(rep.max_payload)
    assert np.allclose(d["mass_matrix"], rep.mass_matrix)
    assert len(d["effort_usage"]) == 6


def test_default_tool_link_is_the_end_of_the_arm():
    assert default_tool_link(rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))) == "tool0"
    assert default_tool_link(rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))) == "panda_hand_tcp"
    assert default_tool_link(load(TWO_LINK)) == "tip"


def test_bad_arguments():
    model = load(TWO_LINK)
    with pytest.raises(ValueError, match="2 values, got shape"):
        dynamic_report(model, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="unknown link 'hand'"):
        dynamic_report(model, [0.1, 0.2], link="hand")
    with pytest.raises(ValueError, match="wrench must be 6 finite numbers"):
        dynamic_report(model, [0.1, 0.2], wrench=[1, 2, 3])
    with pytest.raises(ValueError, match="must be finite"):
        dynamic_report(model, [0.1, np.nan])
