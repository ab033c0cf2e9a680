"""docs/MJCF.md's table, row by row: each MJCF element or attribute that moves
MuJoCo's dynamics is read (compared with MuJoCo), mapped (compared with MuJoCo),
warned about or refused, naming the element and its body, joint or actuator.

Every MJCF here is written by the test (files in tmp_path, none fetched).
"""
import os
import struct
import warnings

import numpy as np
import pytest

import robot_dynamics as rd
from reporting import require

try:
    import mujoco
except ImportError:          # pragma: no cover
    mujoco = None


@pytest.fixture(autouse=True)
def _mujoco():
    require("mujoco (MuJoCo's Python package)", mujoco is not None)


# Two hinges about y, the second 0.3 m out: the arm every row below adds one element to.
ARM = """<mujoco model="elements">{option}
  <worldbody>
    <body name="upper" pos="0 0 0.1">
      <joint name="shoulder" axis="0 1 0" {shoulder}/>
      <geom name="upper_geom" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
      <site name="tip" pos="0.3 0 0"/>
      <body name="fore" pos="0.3 0 0" {fore}>
        <joint name="elbow" axis="0 1 0" {elbow}/>
        <geom name="fore_geom" type="capsule" fromto="0 0 0 0.2 0 0" size="0.03" mass="0.5"/>
        <site name="hand" pos="0.2 0 0"/>
      </body>
    </body>
  </worldbody>
  {extra}
</mujoco>"""


def arm(option="", shoulder="", fore="", elbow="", extra=""):
    return ARM.format(option=option, shoulder=shoulder, fore=fore, elbow=elbow, extra=extra)


def load_quietly(xml, **options):
    """rd.load_mjcf, failing on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return rd.load_mjcf(xml, **options)


def refused(xml, *words):
    with pytest.raises(rd.URDFError) as info:
        rd.load_mjcf(xml)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    return str(info.value)


def warned(xml, *words, **options):
    with pytest.warns(rd.URDFWarning) as record:
        model = rd.load_mjcf(xml, **options)
    text = " | ".join(str(w.message) for w in record)
    for word in words:
        assert word in text, (word, text)
    return model, text


def mujoco_at(xml, qpos, qvel=None, qacc=None, constraints=False):
    m = mujoco.MjModel.from_xml_string(xml)
    if not constraints:
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    d.qvel[:] = 0.0 if qvel is None else qvel
    d.qacc[:] = 0.0 if qacc is None else qacc
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    if qacc is not None:
        d.qacc[:] = qacc
        mujoco.mj_inverse(m, d)
    return m, d, M


# --- equality constraints ---------------------------------------------------------------------------

COUPLED = arm(shoulder='ref="10" armature="0.02"', elbow='ref="-20" armature="0.03"',
              extra='<equality><joint name="link" joint1="elbow" joint2="shoulder" polycoef="0.1 -1.5 0 0 0"/>'
                    '</equality>')


def test_an_exact_joint_coupling_is_a_mimic_joint_with_mujocos_dynamics():
    """elbow - elbow0 = 0.1 - 1.5 (shoulder - shoulder0) in MuJoCo (qpos0 the refs); here the elbow's body
    moves with q_shoulder: MuJoCo's constraint residual is 0 at the coupled positions, and the reduced
    mass matrix and torques are G^T M G and G^T qfrc_inverse, G = d(qpos)/dq = (1, -1.5)."""
    model = load_quietly(COUPLED)
    assert model.joint_names == ("shoulder",) and model.nq == 1
    source, multiplier, offset = model.joints["elbow"].mimic
    assert (source, multiplier) == ("shoulder", -1.5)
    assert offset == pytest.approx(0.1 + np.deg2rad(-20) + 1.5 * np.deg2rad(10), abs=1e-15)
    G = np.array([[1.0], [-1.5]])
    for q, qd, qdd in [(0.4, 0.7, -1.2), (-1.1, -0.3, 2.0)]:
        qpos = np.array([q, multiplier * q + offset])
        m, d, M = mujoco_at(COUPLED, qpos, G @ [qd], G @ [qdd])
        m_on, d_on, _ = mujoco_at(COUPLED, qpos, constraints=True)
        assert abs(d_on.efc_pos[0]) < 1e-12 and d_on.efc_type[0] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        np.testing.assert_allclose(rd.mass_matrix(model, [q]), G.T @ M @ G, rtol=0, atol=1e-12)
        np.testing.assert_allclose(rd.rnea(model, [q], [qd], [qdd]), G.T @ d.qfrc_inverse, rtol=0, atol=1e-12)
    assert model.armature[0] == pytest.approx(0.02 + 1.5 ** 2 * 0.03, abs=1e-15)


@pytest.mark.parametrize("polycoef, words", [
    ("0 1 0.5 0 0", ["degree 2"]),
    ("0.2 0 0 0 0", ["c1 = 0"]),
])
def test_a_joint_equality_that_is_no_mimic_is_refused_by_name(polycoef, words):
    xml = arm(extra='<equality><joint name="cam" joint1="elbow" joint2="shoulder" polycoef="%s"/></equality>'
                    % polycoef)
    refused(xml, "equality 'cam'", "'elbow' and 'shoulder'", *words)


def test_a_joint_held_at_a_constant_is_refused_by_name():
    refused(arm(extra='<equality><joint name="lock" joint1="elbow"/></equality>'), "equality 'lock'", "'elbow'",
            "locked joint")


def test_a_joint_coupled_twice_is_refused():
    xml = arm(extra='<equality><joint name="one" joint1="elbow" joint2="shoulder"/>'
                    '<joint name="two" joint1="elbow" joint2="shoulder" polycoef="0 2 0 0 0"/></equality>')
    refused(xml, "equality 'two'", "joint 'elbow' a second time", "equality 'one'")


FOUR_BAR = """<mujoco model="four_bar">
  <worldbody>
    <body name="crank"><joint name="a" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="1"/>
      <body name="coupler" pos="0.2 0 0"><joint name="b" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.02" mass="1"/>
        <body name="rocker" pos="0 0 0.3" euler="0 30 0"><joint name="c" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 -0.2 0 0" size="0.02" mass="1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <equality>{equality}</equality>
</mujoco>"""


@pytest.mark.parametrize("equality, kind", [
    ('<connect name="pin" body1="rocker" body2="world" anchor="-0.2 0 0"/>', "point"),
    ('<weld name="pin" body1="rocker" body2="world"/>', "weld"),
])
def test_connect_and_weld_are_loops_closed_where_mujocos_are(equality, kind):
    """MuJoCo's compiler places the anchors so that the constraint holds at qpos0 (here q = 0). The
    loop's position rows p_B - p_A are MuJoCo's equality rows with the opposite sign (MuJoCo's
    efc_pos is p_A - p_B); the orientation rows of a weld vanish where MuJoCo's do."""
    xml = FOUR_BAR.format(equality=equality)
    model = load_quietly(xml)
    (loop,) = model.loops
    assert (loop.name, loop.kind, loop.parent, loop.child) == ("pin", kind, "rocker", "world")
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for q in (np.zeros(3), np.array([0.3, -0.2, 0.5]), np.array([-0.7, 1.1, 0.2])):
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        residual = rd.loop_residual(model, q)
        np.testing.assert_allclose(residual[:3], -d.efc_pos[:3], rtol=0, atol=1e-12)
        assert (np.abs(residual[3:]).max(initial=0) < 1e-12) == (np.abs(d.efc_pos[3:d.nefc]).max(initial=0) < 1e-12)
    if kind == "point":                         # a four-bar: closed at another crank angle too
        q = rd.assemble(model, np.array([0.3, -0.3, 0.0]), keep=("a",))
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        assert q[0] == 0.3 and np.abs(d.efc_pos[:3]).max() < 1e-9


def test_a_loop_between_sites_is_refused_by_name():
    xml = arm(extra='<equality><connect name="pin" site1="hand" site2="tip"/></equality>')
    refused(xml, "equality 'pin'", "connect", "'hand' and 'tip'", "between sites", "LOOPS.md")


def test_a_tendon_equality_is_refused():
    xml = arm(extra='<tendon><fixed name="sum"><joint joint="shoulder" coef="1"/><joint joint="elbow" coef="1"/>'
                    '</fixed></tendon><equality><tendon name="keep" tendon1="sum"/></equality>')
    refused(xml, "equality 'keep'", "tendon", "'sum'")


def test_an_inactive_equality_is_warned_about_and_left_out():
    xml = arm(extra='<equality><weld name="grasp" body1="fore" active="false"/></equality>')
    model, _ = warned(xml, "equality 'grasp'", "'fore'", "inactive")
    assert model.joint_names == ("shoulder", "elbow")


# --- tendons, flexes ---------------------------------------------------------------------------------

TENDON = ('<tendon><fixed name="split" {attr}><joint joint="shoulder" coef="0.5"/><joint joint="elbow" coef="0.5"/>'
          '</fixed></tendon>')


@pytest.mark.parametrize("attr", ['stiffness="10"', 'damping="0.5"', 'frictionloss="0.1"', 'armature="0.01"'])
def test_a_tendon_with_a_passive_force_is_refused(attr):
    refused(arm(extra=TENDON.format(attr=attr)), "tendon 'split'", "'shoulder', 'elbow'", attr.split("=")[0],
            "not modelled")


def test_a_tendon_without_a_force_is_warned_about_with_the_actuators_on_it():
    xml = arm(extra=TENDON.format(attr='limited="true" range="-1 1"') +
              '<actuator><motor name="grip" tendon="split" forcerange="-5 5"/></actuator>')
    model, text = warned(xml, "tendon 'split'", "length limit", "actuator 'grip' drives a tendon")
    assert np.all(np.isinf(model.effort_limit))            # the tendon's motor bounds no joint


def test_a_flex_is_refused():
    xml = ('<mujoco><worldbody><flexcomp name="rope" type="grid" count="3 1 1" spacing=".1 .1 .1" dim="1" '
           'mass="0.1"><edge equality="false"/></flexcomp></worldbody></mujoco>')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # MuJoCo's own note on a flex without stiffness
        refused(xml, "flex", "'rope'", "deformable")


# --- joints and bodies -------------------------------------------------------------------------------

def test_a_joint_spring_is_warned_naming_the_joint_stiffness_and_springref():
    xml = arm(elbow='stiffness="3" springref="30"')
    model, text = warned(xml, "joint 'elbow'", "stiffness 3", "springref %g" % np.deg2rad(30))
    m, d, _ = mujoco_at(xml, [0.0, 0.2])      # MuJoCo's spring, which the model leaves out
    assert d.qfrc_passive[1] == pytest.approx(-3 * (0.2 - np.deg2rad(30)), abs=1e-12)
    np.testing.assert_allclose(rd.rnea(model, [0.0, 0.2], [0, 0], [0, 0]), d.qfrc_bias, atol=1e-12)


@pytest.mark.parametrize("attr, words", [
    ('damping="0.3 0.1"', ["joint 'elbow'", "nonlinear damping terms '0.1 0'", "linear damping 0.3 is modelled"]),
    ('stiffness="0.3 0.1"', ["joint 'elbow'", "stiffness 0.3 and polynomial terms '0.1 0'"]),
])
def test_mujoco_4s_polynomial_damping_and_springs_are_warned_about(attr, words):
    m = mujoco.MjModel.from_xml_string(arm(elbow=attr))
    if not hasattr(m, "dof_dampingpoly"):
        pytest.skip("MuJoCo before 4 has no polynomial damping or stiffness")
    warned(arm(elbow=attr), *words)


def test_a_springref_without_stiffness_moves_nothing_and_is_not_warned():
    load_quietly(arm(elbow='springref="30"'))


def test_frictionloss_is_the_coulomb_law_of_the_actuator_model():
    """dof_frictionloss -> coulomb, dof_damping -> viscous, unsmoothed: the torque
    frictionloss sgn(v) + damping v, along the motion."""
    xml = arm(elbow='frictionloss="0.7" damping="0.2"')
    model = load_quietly(xml)
    m = mujoco.MjModel.from_xml_string(xml)
    law = model.actuators["elbow"].friction
    assert law.law == "coulomb"
    assert dict(law.parameters) == {"coulomb": m.dof_frictionloss[1], "viscous": m.dof_damping[1], "smoothing": 0.0}
    np.testing.assert_allclose(rd.friction_law_torque(law, np.array([-2.0, 3.0])), [-0.7 - 0.4, 0.7 + 0.6])
    assert model.actuators["shoulder"].friction.law == "viscous"


def test_gravcomp_is_warned_naming_the_body_and_the_model_keeps_the_full_weight():
    xml = arm(fore='gravcomp="1"')
    model, text = warned(xml, "'fore' (gravcomp 1)", "full weight")
    q = [0.3, -0.5]
    m, d, _ = mujoco_at(xml, q)
    m0, d0, _ = mujoco_at(arm(), q)
    # The model holds the weight of both links; MuJoCo's passive force carries fore's (M qacc + qfrc_bias =
    # qfrc_passive + actuators), so holding the arm in MuJoCo takes qfrc_bias - qfrc_passive, upper's weight.
    np.testing.assert_allclose(rd.rnea(model, q, [0, 0], [0, 0]), d0.qfrc_bias, atol=1e-12)
    np.testing.assert_allclose(d.qfrc_passive, _fore_gravity(q), rtol=0, atol=1e-8)


def _fore_gravity(q):
    """MuJoCo's gravity torques of the fore link alone (the upper link's mass 1e-9 kg: 1e-9 N m)."""
    xml = arm().replace('size="0.03" mass="1"', 'size="0.03" mass="1e-9"')
    return mujoco_at(xml, q)[1].qfrc_bias


def test_a_mocap_body_is_welded_at_its_pose():
    xml = arm(extra="").replace('<worldbody>', '<worldbody><body name="target" mocap="true" pos="0.5 0 0.5">'
                                               '<geom size="0.05" mass="1" contype="0" conaffinity="0"/></body>')
    model = load_quietly(xml)
    assert model.joints["target__weld"].type == "fixed"
    np.testing.assert_allclose(rd.link_pose(model, [0, 0], "target")[:3, 3], [0.5, 0, 0.5])


# --- contacts ----------------------------------------------------------------------------------------

def test_a_contact_pair_is_warned_about_naming_its_geoms():
    warned(arm(extra='<contact><pair geom1="upper_geom" geom2="fore_geom"/></contact>'),
           "'upper_geom'-'fore_geom'", "contacts are not simulated")


def test_a_contact_exclude_needs_no_warning():
    load_quietly(arm(extra='<contact><exclude body1="upper" body2="fore"/></contact>'))


# --- actuators ---------------------------------------------------------------------------------------

def test_an_actuators_gear_scales_its_force_range_into_the_effort_limit():
    xml = arm(shoulder='actuatorfrcrange="-7 7"',
              extra='<actuator><motor name="m1" joint="shoulder" gear="50" forcerange="-1 1"/>'
                    '<motor name="m2" joint="elbow" gear="20" forcerange="-2 2"/>'
                    '<motor name="m3" joint="elbow" gear="-3" forcerange="-10 10"/></actuator>')
    model = load_quietly(xml)
    np.testing.assert_array_equal(model.effort_limit, [7.0, 30.0])     # the joint's own range wins; min |g| f


@pytest.mark.parametrize("actuator, kind", [
    ('<general name="slow" joint="elbow" dyntype="filter" dynprm="0.05"/>', "filter"),
    ('<intvelocity name="slow" joint="elbow" actrange="-1 1"/>', "integrator"),
])
def test_actuator_dynamics_are_warned_naming_the_actuator(actuator, kind):
    warned(arm(extra="<actuator>%s</actuator>" % actuator), "actuator 'slow'", "dyntype %s" % kind,
           "not modelled")


def test_an_actuator_delay_is_warned_about():
    extra = '<actuator><general name="late" joint="elbow" nsample="3" delay="0.01"/></actuator>'
    if not hasattr(mujoco.MjModel.from_xml_string(arm()), "actuator_delay"):
        pytest.skip("MuJoCo before 4 has no actuator delay")
    warned(arm(extra=extra), "actuator 'late'", "delay '0.01' s")


def test_an_actuator_on_a_site_is_warned_about():
    warned(arm(extra='<actuator><motor name="push" site="hand" gear="1 0 0 0 0 0"/></actuator>'),
           "actuator 'push'", "site", "not read")


def test_an_actuators_armature_and_damping_are_reflected_through_its_gear():
    """MuJoCo 4: an actuator's armature and damping act on its joint times gear^2."""
    xml = arm(elbow='armature="0.01" damping="0.1"',
              extra='<actuator><motor name="drive" joint="elbow" gear="3" armature="0.5" damping="0.7"/></actuator>')
    m = mujoco.MjModel.from_xml_string(xml)
    if not hasattr(m, "actuator_armature"):
        pytest.skip("MuJoCo before 4 has no actuator armature")
    model = load_quietly(xml)
    np.testing.assert_allclose(model.armature, [0.0, 0.01 + 9 * 0.5], rtol=1e-15)
    np.testing.assert_allclose(model.damping, [0.0, 0.1 + 9 * 0.7], rtol=1e-15)
    q, qd, qdd = np.array([0.3, -0.4]), np.array([0.5, -1.0]), np.array([1.0, 2.0])
    _, d, M = mujoco_at(xml, q, qd, qdd)
    np.testing.assert_allclose(rd.mass_matrix(model, q), M, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rd.rnea(model, q, qd, qdd) + model.damping * qd, d.qfrc_inverse, rtol=0, atol=1e-12)


def test_an_actuators_armature_on_a_tendon_is_refused():
    xml = arm(extra=TENDON.format(attr="") + '<actuator><motor name="grip" tendon="split" armature="0.2"/>'
                                             '</actuator>')
    refused(xml, "actuator 'grip'", "tendon", "armature")


# --- options -----------------------------------------------------------------------------------------

def test_fluid_forces_are_warned_about():
    warned(arm(option='<option density="1.2" viscosity="1e-5"/>'), "density 1.2", "fluid")


def test_disabled_gravity_is_no_gravity():
    model = load_quietly(arm(option='<option><flag gravity="disable"/></option>'))
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, 0.0])


@pytest.mark.parametrize("where, attrs", [
    ("elbow", 'margin="0.01" solreflimit="0.01 1" solimplimit="0.9 0.95 0.001" range="-1 1"'),
    ("elbow", 'solreffriction="0.01 1" solimpfriction="0.9 0.95 0.001"'),
    ("extra", '<actuator><position name="servo" joint="elbow" kp="100" kv="5" ctrlrange="-1 1"/></actuator>'),
    ("option", '<option timestep="0.001" integrator="implicitfast" cone="elliptic"/>'),
    ("extra", '<keyframe><key name="home" qpos="0.1 0.2"/></keyframe>'),
])
def test_what_shapes_only_mujocos_constraints_or_control_moves_nothing_and_is_not_warned(where, attrs):
    """Constraint softness, a servo's gains and ranges, the integrator, keyframes: the
    model (inertias, joints, effort limits) is the same, and MuJoCo's mass matrix and bias agree."""
    xml = arm(**{where: attrs})
    model, plain = load_quietly(xml), rd.load_mjcf(arm())
    q = np.array([0.3, -0.5])
    _, d, M = mujoco_at(xml, q)
    np.testing.assert_allclose(rd.mass_matrix(model, q), M, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rd.rnea(model, q, [0, 0], [0, 0]), d.qfrc_bias, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(model.effort_limit, plain.effort_limit)
    np.testing.assert_array_equal(rd.mass_matrix(model, q), rd.mass_matrix(plain, q))


# --- mesh files ----------------------------------------------------------------------------------------

MESHED = """<mujoco model="meshed">
  <compiler meshdir="assets"/>
  <asset><mesh name="shell" file="shell.stl"/><mesh file="cover.stl"/></asset>
  <worldbody>
    <geom type="mesh" mesh="cover"/>
    <body name="upper" pos="0 0 0.1">
      <inertial pos="0.1 0 0" mass="2" diaginertia="0.01 0.02 0.03"/>
      <joint name="shoulder" axis="0 1 0"/>
      <geom name="upper_shell" type="mesh" mesh="shell"/>
      <body name="fore" pos="0.3 0 0">
        {fore_inertial}
        <joint name="elbow" axis="0 1 0"/>
        <geom name="fore_cover" type="mesh" mesh="cover"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03" mass="0.5"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""
INERTIAL = '<inertial pos="0.05 0 0" mass="0.5" diaginertia="0.001 0.002 0.003"/>'


def write_stl(path):
    """A tetrahedron 0.1 m on a side, binary STL."""
    v = [(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)]
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    with open(path, "wb") as f:
        f.write(b"\0" * 80 + struct.pack("<I", len(faces)))
        for face in faces:
            f.write(struct.pack("<3f", 0, 0, 0) + b"".join(struct.pack("<3f", *v[i]) for i in face) + b"\0\0")


def test_a_missing_mesh_file_is_refused_by_the_path_the_user_gave(tmp_path, monkeypatch):
    (tmp_path / "robot").mkdir()
    (tmp_path / "robot" / "arm.xml").write_text(MESHED.format(fore_inertial=INERTIAL))
    (tmp_path / "robot" / "scene.xml").write_text('<mujoco><include file="arm.xml"/></mujoco>')
    monkeypatch.chdir(tmp_path)
    for top in ("arm.xml", "scene.xml"):
        text = refused(os.path.join("robot", top), repr(os.path.join("robot", "assets", "shell.stl")),
                       "mesh 'shell'", "skip_missing_meshes=True")
        assert "assets/robot" not in text and "assets/assets" not in text
    # An arm file kept in assets/ beside its scene: meshdir is the scene's assets/ (MuJoCo 4.0's own
    # message says 'assets/assets/shell.stl').
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "arm.xml").write_text(MESHED.format(fore_inertial=INERTIAL))
    (tmp_path / "scene.xml").write_text('<mujoco><include file="assets/arm.xml"/></mujoco>')
    text = refused("scene.xml", repr(os.path.join("assets", "shell.stl")), "mesh 'shell'")
    assert "assets/assets" not in text


def test_missing_meshes_are_skipped_on_request_when_every_inertia_is_explicit(tmp_path):
    (tmp_path / "assets").mkdir()
    write_stl(tmp_path / "assets" / "cover.stl")
    path = tmp_path / "arm.xml"
    path.write_text(MESHED.format(fore_inertial=INERTIAL))
    model, text = warned(path, "1 geom(s) left out", "body 'upper': geom 'upper_shell'", skip_missing_meshes=True)
    assert "cover" not in text                      # found, kept
    # MuJoCo on the same file with the missing mesh's geom and asset removed by hand:
    xml = MESHED.format(fore_inertial=INERTIAL).replace('<geom name="upper_shell" type="mesh" mesh="shell"/>', "") \
        .replace('<mesh name="shell" file="shell.stl"/>', "")
    (tmp_path / "by_hand.xml").write_text(xml)
    m = mujoco.MjModel.from_xml_path(str(tmp_path / "by_hand.xml"))
    d = mujoco.MjData(m)
    d.qpos[:] = [0.4, -0.8]
    mujoco.mj_forward(m, d)
    M = np.zeros((2, 2))
    mujoco.mj_fullM(m, d, M)
    np.testing.assert_allclose(rd.mass_matrix(model, d.qpos), M, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rd.rnea(model, d.qpos, [0, 0], [0, 0]), d.qfrc_bias, rtol=0, atol=1e-12)


def test_a_body_whose_inertia_would_come_from_a_missing_mesh_is_refused_by_name(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(MESHED.format(fore_inertial=""))
    with pytest.raises(rd.URDFError, match="body 'fore' takes its inertia from geom 'fore_cover', whose mesh "
                                           "file '.*cover.stl' is missing"):
        rd.load_mjcf(path, skip_missing_meshes=True)
    # A geom outside the compiler's inertiagrouprange adds no inertia: skipped, fore keeps its capsule's.
    path.write_text(MESHED.format(fore_inertial="")
                    .replace('<compiler meshdir="assets"/>', '<compiler meshdir="assets" inertiagrouprange="0 2"/>')
                    .replace('name="fore_cover"', 'name="fore_cover" group="3"'))
    with pytest.warns(rd.URDFWarning, match="3 geom.*body 'fore': geom 'fore_cover'"):
        model = rd.load_mjcf(path, skip_missing_meshes=True)
    assert model.link_masses["fore"] == pytest.approx(0.5, rel=1e-12)
