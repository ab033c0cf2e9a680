"""rd.load_mjcf against MuJoCo itself, on MJCF arms written here and on the
bundled Panda compiled by MuJoCo into MJCF ("Menagerie style": armature 0.1
kg m^2 and damping on every joint).

What must agree, MuJoCo's side in brackets: joint names, nq and nv;
armature, damping and friction [dof_armature, dof_damping,
dof_frictionloss]; the link poses [xpos, xmat]; ``mass_matrix`` [mj_fullM]
to 1e-9; ``rnea + damping * qd`` [mj_inverse's qfrc_inverse, with damping
as MuJoCo's passive force] to 1e-9; ``aba`` of ``tau - damping * qd``
[mj_forward's qacc with qfrc_applied = tau] to 1e-8. Limits and friction
loss are constraints in MuJoCo: they are disabled for the dynamics
comparisons (friction loss is this package's Coulomb friction, compared as
a parameter).

A free joint is the floating root: MuJoCo's qpos is (x, y, z, qw, qx, qy,
qz), its qvel's linear part is in the world frame; this package's is
(x, y, z, qx, qy, qz, qw) and the base frame (Pinocchio's). The comparison
maps one onto the other: v = T qvel with T = diag(R^T, I), torques
tau_mujoco = T^T tau, M_mujoco = T^T M T, and the acceleration
qdd = T qacc - (w x v_lin, 0) (the derivative of base-frame components).
"""
import os
import re
import sys

import numpy as np
import pytest

import robot_dynamics as rd
from reporting import require

try:
    import mujoco
except ImportError:          # pragma: no cover
    mujoco = None

HERE = os.path.dirname(os.path.abspath(__file__))
PANDA = os.path.join(HERE, os.pardir, "urdf", "panda_arm.urdf")

# An arm that uses what the loader maps: a welded base, rotated bodies,
# joint anchors off the body origin, reference positions, a body with two
# joints, a welded body between moving ones, a motor's force limit.
ARM = """<mujoco model="test_arm">
  <option gravity="0.3 -0.2 -9.81"/>
  <default><joint armature="{armature}" damping="{damping}" frictionloss="0.3"/></default>
  <worldbody>
    <body name="base" pos="0.1 0 0.2" quat="0.9 0.1 0.2 0.3">
      <geom size="0.1" mass="3"/>
      <body name="upper" pos="0 0 1" quat="0.7 0.7 0 0">
        <joint name="shoulder" axis="0 1 0" range="-100 100" ref="10"/>
        <geom type="capsule" fromto="0 0 0 0.3 0.1 0" size="0.05" mass="1"/>
        <body name="fore" pos="0.5 0 0" euler="10 20 30">
          <joint name="slider" type="slide" axis="1 0 1" pos="0.1 0.2 0" ref="0.05" range="-0.2 0.3"/>
          <joint name="elbow" axis="0 0 1" pos="0.1 0 0.3" armature="{elbow_armature}"/>
          <geom type="box" size="0.1 0.05 0.2" pos="0.1 0.2 0.3" euler="5 6 7" mass="2"/>
          <body name="bracket" pos="0.2 0.1 0">
            <geom size="0.05" pos="0.1 0 0" mass="0.5"/>
            <body name="hand" pos="0.3 0 0">
              <joint name="wrist" axis="1 1 0" pos="0 0 0.1"/>
              <geom size="0.05" mass="0.7" pos="0 0.2 0"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="shoulder" gear="2" forcerange="-5 5" forcelimited="true"/></actuator>
</mujoco>"""

# A floating base with two limbs.
FLOATING = """<mujoco model="floater">
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="torso" pos="0 0 1" quat="0.8 0.2 0.3 0.1">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.3" mass="8"/>
      <body name="left" pos="0 0.2 0">
        <joint name="left_hip" axis="0 1 0" armature="{armature}" damping="0.4"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" mass="2"/>
      </body>
      <body name="right" pos="0 -0.2 0" euler="0 0 20">
        <joint name="right_hip" axis="1 0 0" pos="0 0 0.05" armature="{armature}"/>
        <joint name="right_slide" type="slide" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 -0.4" size="0.05" mass="2.5"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@pytest.fixture(autouse=True)
def _mujoco():
    require("mujoco (MuJoCo's Python package)", mujoco is not None)


def arm(armature=0.0, damping=0.0, elbow_armature=None):
    return ARM.format(armature=armature, damping=damping,
                      elbow_armature=armature if elbow_armature is None else elbow_armature)


def panda_mjcf(armature=0.1, damping=1.0):
    """The bundled Panda URDF, compiled by MuJoCo and written back as MJCF, with
    Menagerie's armature and a damping on every joint."""
    text = re.sub(r"<\?xml[^>]*\?>", "", open(PANDA).read())
    text = re.sub(r"(<robot[^>]*>)", lambda m: m.group(1) + '<mujoco><compiler discardvisual="true" '
                  'balanceinertia="false" fusestatic="false"/></mujoco>', text, count=1)
    spec = mujoco.MjSpec.from_string(text)
    for joint in spec.joints:
        joint.armature = armature
        if np.ndim(joint.damping):         # MuJoCo 4: (linear, polynomial terms)
            joint.damping = [damping] + [0.0] * (len(joint.damping) - 1)
        else:
            joint.damping = damping
    spec.compile()
    return spec.to_xml()


def compiled(xml, constraints=False):
    m = mujoco.MjModel.from_xml_string(xml)
    if not constraints:
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return m, mujoco.MjData(m)


def mujoco_dynamics(m, d, q, qd, qdd, tau):
    """(M, qfrc_inverse, qacc) of MuJoCo at this state."""
    d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    d.qacc[:] = qdd
    mujoco.mj_inverse(m, d)
    inverse = d.qfrc_inverse.copy()
    d.qfrc_applied[:] = tau
    mujoco.mj_forward(m, d)
    acc = d.qacc.copy()
    d.qfrc_applied[:] = 0.0
    return M, inverse, acc


def random_states(m, count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield (rng.uniform(-1, 1, m.nq), rng.uniform(-2, 2, m.nv), rng.uniform(-3, 3, m.nv),
               rng.uniform(-5, 5, m.nv))


@pytest.mark.parametrize("armature", [0.0, 0.1])
@pytest.mark.parametrize("source", ["arm", "panda"])
def test_joints_parameters_and_dynamics_match_mujoco(source, armature):
    xml = arm(armature, damping=0.25, elbow_armature=2 * armature) if source == "arm" \
        else panda_mjcf(armature, damping=1.0)
    model = rd.load_mjcf(xml)
    m, d = compiled(xml)
    names = tuple(m.joint(j).name for j in range(m.njnt))
    assert (model.nq, model.nv, model.joint_names) == (m.nq, m.nv, names)
    np.testing.assert_array_equal(model.armature, m.dof_armature)
    np.testing.assert_array_equal(model.damping, m.dof_damping)
    np.testing.assert_array_equal(model.friction, m.dof_frictionloss)
    for q, qd, qdd, tau in random_states(m, 5, seed=1):
        M, inverse, acc = mujoco_dynamics(m, d, q, qd, qdd, tau)
        np.testing.assert_allclose(rd.mass_matrix(model, q), M, rtol=0, atol=1e-9)
        np.testing.assert_allclose(rd.rnea(model, q, qd, qdd) + model.damping * qd, inverse, rtol=0, atol=1e-9)
        np.testing.assert_allclose(rd.aba(model, q, qd, tau - model.damping * qd), acc, rtol=0, atol=1e-8)


def test_link_frames_are_mujocos_body_frames():
    xml = arm()
    model = rd.load_mjcf(xml)
    m, d = compiled(xml)
    for q, *_ in random_states(m, 5, seed=2):
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        for b in range(1, m.nbody):
            T = rd.link_pose(model, q, m.body(b).name)
            np.testing.assert_allclose(T[:3, 3], d.xpos[b], atol=1e-12)
            np.testing.assert_allclose(T[:3, :3], d.xmat[b].reshape(3, 3), atol=1e-12)


def test_the_arms_structure_limits_and_gravity():
    model = rd.load_mjcf(arm(damping=0.25))
    assert model.name == "test_arm" and model.base_link == "world"
    assert model.link_names == ("world", "base", "upper", "fore__slider", "fore", "bracket", "hand")
    assert [model.joints[n].type for n in model.joint_names] == ["revolute", "prismatic", "continuous",
                                                                 "continuous"]
    assert model.joints["bracket__weld"].type == "fixed"
    np.testing.assert_allclose(model.lower_limit[:2], [-np.deg2rad(100), -0.2])
    np.testing.assert_allclose(model.upper_limit[:2], [np.deg2rad(100), 0.3])
    assert np.all(np.isinf(model.lower_limit[2:]))
    np.testing.assert_array_equal(model.effort_limit, [10.0, np.inf, np.inf, np.inf])   # 5 N m x gear 2
    np.testing.assert_array_equal(model.gravity, [0.3, -0.2, -9.81])
    assert model.total_mass == pytest.approx(3 + 1 + 2 + 0.5 + 0.7)


def test_the_panda_from_mjcf_is_the_panda_from_urdf_plus_its_armature():
    """Within the precision of MuJoCo's XML writer (spec.to_xml prints about 7 significant digits: the
    inertias move by up to 5e-6 kg m^2); the exact agreement with what MuJoCo compiled is the test above."""
    urdf = rd.load_urdf(PANDA)
    model = rd.load_mjcf(panda_mjcf(armature=0.1, damping=0.0))
    assert model.joint_names == urdf.joint_names
    np.testing.assert_allclose(model.lower_limit, urdf.lower_limit, atol=1e-12)
    for q, qd, qdd, _ in random_states(mujoco.MjModel.from_xml_string(panda_mjcf()), 5, seed=3):
        np.testing.assert_allclose(rd.mass_matrix(model, q), rd.mass_matrix(urdf, q) + 0.1 * np.eye(7),
                                   rtol=0, atol=2e-5)
        np.testing.assert_allclose(rd.rnea(model, q, qd, qdd), rd.rnea(urdf, q, qd, qdd) + 0.1 * qdd,
                                   rtol=0, atol=2e-4)


def test_a_file_is_read_with_its_includes(tmp_path):
    (tmp_path / "body.xml").write_text('<mujoco><worldbody><body name="link" pos="0 0 0.1"><joint name="j" '
                                       'axis="0 1 0"/><geom size="0.1" mass="2" pos="0.3 0 0"/></body>'
                                       '</worldbody></mujoco>')
    (tmp_path / "robot.xml").write_text('<mujoco model="inc"><include file="body.xml"/></mujoco>')
    model = rd.load_mjcf(tmp_path / "robot.xml")
    assert model.joint_names == ("j",)
    # A point mass 2 kg at 0.3 m along x from the y axis: gravity's moment about +y is
    # (0.3, 0, 0) x (0, 0, -m g) = +0.3 m g, so holding it takes -0.3 m g at q = 0.
    assert rd.gravity_torques(model, [0.0])[0] == pytest.approx(-2 * 9.81 * 0.3, rel=1e-12)


def test_a_free_joint_is_the_floating_root():
    xml = FLOATING.format(armature=0.05)
    model = rd.load_mjcf(xml)
    m, d = compiled(xml)
    assert model.root_joint == "floating" and (model.nq, model.nv) == (m.nq, m.nv)
    assert model.joint_names == ("left_hip", "right_hip", "right_slide")
    np.testing.assert_array_equal(model.armature, m.dof_armature)
    for qpos, qvel, qacc, tau in random_states(m, 5, seed=4):
        qpos[3:7] /= np.linalg.norm(qpos[3:7])
        q = np.concatenate([qpos[:3], qpos[4:7], qpos[3:4], qpos[7:]])
        R = rd.link_pose(model, q, "torso")[:3, :3]
        T = np.eye(m.nv)
        T[:3, :3] = R.T
        v = T @ qvel
        qdd = T @ qacc
        qdd[:3] -= np.cross(v[3:6], v[:3])
        M, inverse, _ = mujoco_dynamics(m, d, qpos, qvel, qacc, tau)
        np.testing.assert_allclose(T.T @ rd.mass_matrix(model, q) @ T, M, rtol=0, atol=1e-9)
        np.testing.assert_allclose(T.T @ rd.rnea(model, q, v, qdd) + _damping(model, qvel), inverse,
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(rd.link_pose(model, q, "torso")[:3, 3], d.xpos[1], atol=1e-12)


def _damping(model, qvel):
    """MuJoCo's damping torque on the joint coordinates (the root has none)."""
    out = np.zeros(model.nv)
    out[model.root_nv:] = model.damping * qvel[model.root_nv:]
    return out


@pytest.mark.parametrize("xml, words", [
    ('<mujoco><worldbody><body name="b"><joint name="shoulder_ball" type="ball"/><geom size="0.1"/></body>'
     '</worldbody></mujoco>', ["shoulder_ball", "ball"]),
    ('<mujoco><worldbody><body name="a"><freejoint name="robot"/><geom size="0.1"/></body><body name="b">'
     '<freejoint name="ball"/><geom size="0.1"/></body></worldbody></mujoco>', ["'ball'", "free joint"]),
    ('<mujoco><worldbody><body name="a"><joint name="j" axis="0 0 1"/><geom size="0.1"/></body><body name="b">'
     '<freejoint name="late"/><geom size="0.1"/></body></worldbody></mujoco>', ["'late'", "first body"]),
    ('<mujoco><worldbody><body name="b"><joint name="j" typ="hinge"/></body></worldbody></mujoco>',
     ["MuJoCo cannot compile", "typ"]),
    ("not xml at all", ["cannot read MJCF file"]),
])
def test_what_is_not_modelled_or_not_mjcf_is_refused_by_name(xml, words):
    with pytest.raises(rd.URDFError) as info:
        rd.load_mjcf(xml)
    for word in words:
        assert word in str(info.value)


def test_a_joint_spring_is_warned_about():
    xml = ('<mujoco><worldbody><body name="b"><joint name="sprung" axis="0 0 1" stiffness="3"/>'
           '<geom size="0.1"/></body></worldbody></mujoco>')
    with pytest.warns(rd.URDFWarning, match="sprung.*stiffness"):
        rd.load_mjcf(xml)


def test_without_mujoco_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(rd.URDFError, match="pip install mujoco"):
        rd.load_mjcf(arm())


def test_the_command_line_reads_an_mjcf_file(tmp_path):
    import io
    import json
    from robot_dynamics.tools import cli
    path = tmp_path / "arm.xml"
    path.write_text(arm(damping=0.25))
    out = io.StringIO()
    assert cli.main(["info", str(path), "--json"], out) == 0
    info = json.loads(out.getvalue())
    assert info["robot"] == "test_arm" and info["nq"] == 4
    assert info["gravity"] == [0.3, -0.2, -9.81]                  # the MJCF's own, no --gravity given
    out = io.StringIO()
    assert cli.main(["torques", str(path), "--q", "0,0,0,0", "--gravity", "0,0,-9.81", "--json"], out) == 0
    model = rd.load_mjcf(arm()).with_gravity((0.0, 0.0, -9.81))
    np.testing.assert_allclose(json.loads(out.getvalue())["tau"], rd.gravity_torques(model, np.zeros(4)),
                               rtol=1e-12, atol=1e-12)


def test_a_description_is_urdf_or_mjcf_by_its_root_element(tmp_path):
    from robot_dynamics.constraints.load import is_mjcf, load_description
    xml = arm()
    assert is_mjcf(xml) and is_mjcf('<?xml version="1.0"?>\n<!-- a comment -->\n' + xml)
    assert not is_mjcf(open(PANDA).read())
    model = load_description(xml, gravity=(0.0, 0.0, -1.0))
    assert model.joint_names == rd.load_mjcf(xml).joint_names
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -1.0])   # the nodes' gravity parameter wins
    assert load_description(open(PANDA).read()).joint_names == rd.load_urdf(PANDA).joint_names
    # Text from a parameter or a topic may not make MuJoCo read files; the file itself may.
    (tmp_path / "body.xml").write_text('<mujoco><worldbody><body name="l"><joint name="j"/><geom size="0.1"/>'
                                       '</body></worldbody></mujoco>')
    top = '<mujoco model="inc"><include file="body.xml"/></mujoco>'
    (tmp_path / "robot.xml").write_text(top)
    with pytest.raises(rd.URDFError, match="may not reference files"):
        load_description(top)
    assert load_description(top, path=tmp_path / "robot.xml").joint_names == ("j",)
