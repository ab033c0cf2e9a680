"""URDF loading: joint types, fixed-joint merging, mimic joints, frames,
limits, inertia checks and the errors a malformed description gives."""
import warnings

import numpy as np
import pytest

import robot_dynamics as rd


def robot(body, name="r"):
    return '<robot name="%s">%s</robot>' % (name, body)


def link(name, mass=None, xyz="0 0 0", rpy="0 0 0", inertia=(0.1, 0.2, 0.25, 0, 0, 0)):
    if mass is None:
        return '<link name="%s"/>' % name
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    return ('<link name="%s"><inertial><origin xyz="%s" rpy="%s"/><mass value="%r"/>'
            '<inertia ixx="%r" iyy="%r" izz="%r" ixy="%r" ixz="%r" iyz="%r"/></inertial></link>'
            % (name, xyz, rpy, mass, ixx, iyy, izz, ixy, ixz, iyz))


def joint(name, parent, child, jtype="revolute", axis="0 0 1", xyz="0 0 0", rpy="0 0 0", extra=""):
    limit = '<limit effort="50" velocity="2" lower="-3" upper="3"/>' if jtype in ("revolute", "prismatic") else ""
    ax = '<axis xyz="%s"/>' % axis if jtype != "fixed" and axis is not None else ""
    return ('<joint name="%s" type="%s"><parent link="%s"/><child link="%s"/>'
            '<origin xyz="%s" rpy="%s"/>%s%s%s</joint>' % (name, jtype, parent, child, xyz, rpy, ax, limit, extra))


ARM = robot(link("base") + link("l1", 2.0, "0.1 0 0.2") + link("l2", 1.5, "0.3 0 0")
            + joint("j1", "base", "l1", axis="0 1 0", xyz="0 0 0.3")
            + joint("j2", "l1", "l2", axis="0 1 0", xyz="0.5 0 0"))


def test_loads_path_text_and_bytes(tmp_path):
    f = tmp_path / "arm.urdf"
    f.write_text(ARM)
    for source in (f, str(f), ARM, ARM.encode()):
        m = rd.load_urdf(source)
        assert m.joint_names == ("j1", "j2") and m.nq == 2
        assert m.link_names == ("base", "l1", "l2") and m.base_link == "base"
        assert m.total_mass == pytest.approx(3.5)


def test_inertial_rpy_rotates_the_tensor():
    """diag(1, 2, 2.5) rotated 90 deg about z is diag(2, 1, 2.5) (worked-examples sec. 8)."""
    body = (link("base") + link("l1", 1.0, "0 0 0", "0 0 %r" % (np.pi / 2), (1.0, 2.0, 2.5, 0, 0, 0))
            + joint("j", "base", "l1", axis="1 0 0"))
    m = rd.load_urdf(robot(body))
    # M for a rotation about x is the inertia about x: 2 after the rotation (1 before)
    assert rd.mass_matrix(m, [0.0])[0, 0] == pytest.approx(2.0)
    m_y = rd.load_urdf(robot(body.replace('<axis xyz="1 0 0"/>', '<axis xyz="0 1 0"/>')))
    assert rd.mass_matrix(m_y, [0.0])[0, 0] == pytest.approx(1.0)


def test_off_diagonal_inertia_entries_are_the_tensor_entries():
    """URDF ixy is the (0, 1) entry of the inertia matrix (not Craig's -Ixy)."""
    body = (link("base") + link("l1", 1.0, inertia=(1.0, 2.0, 3.0, 0.4, 0, 0))
            + joint("j", "base", "l1", axis="1 1 0"))
    m = rd.load_urdf(robot(body))
    a = np.array([1.0, 1.0, 0]) / np.sqrt(2)
    I = np.array([[1.0, 0.4, 0], [0.4, 2.0, 0], [0, 0, 3.0]])
    assert rd.mass_matrix(m, [0.3])[0, 0] == pytest.approx(a @ I @ a)


def test_fixed_joints_are_merged_with_parallel_axis_shift():
    """A link split into two halves joined by a fixed joint has the same dynamics as the whole."""
    whole = robot(link("base") + link("l1", 2.0, "0.25 0 0", inertia=(0.01, 0.2, 0.2, 0, 0, 0))
                  + joint("j1", "base", "l1", axis="0 1 0"))
    # two 1 kg halves centred at 0.125 and 0.375 with the matching inertia about their own centres
    Ic = (0.005, 0.1 - 1.0 * 0.125 ** 2, 0.1 - 1.0 * 0.125 ** 2, 0, 0, 0)
    split = robot(link("base") + link("a", 1.0, "0.125 0 0", inertia=Ic)
                  + link("b", 1.0, "0 0 0.125", inertia=(Ic[1], Ic[2], Ic[0], 0, 0, 0))
                  + joint("j1", "base", "a", axis="0 1 0")
                  + joint("fix", "a", "b", "fixed", xyz="0.25 0 0", rpy="0 %r 0" % (np.pi / 2)))
    mw, ms = rd.load_urdf(whole), rd.load_urdf(split)
    assert ms.nq == 1 and ms.link_names == ("base", "a", "b")
    for q in np.linspace(-2, 2, 5):
        np.testing.assert_allclose(rd.mass_matrix(ms, [q]), rd.mass_matrix(mw, [q]), rtol=1e-12)
        np.testing.assert_allclose(rd.gravity_torques(ms, [q]), rd.gravity_torques(mw, [q]), rtol=1e-12, atol=1e-12)
    # the merged link keeps its frame for kinematics
    T = rd.forward_kinematics(ms, [0.0])["b"]
    np.testing.assert_allclose(T[:3, 3], [0.25, 0, 0], atol=1e-15)
    np.testing.assert_allclose(T[:3, :3], [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-15)


def test_links_fixed_to_the_base_do_not_move_and_do_not_count():
    m = rd.load_urdf(robot(link("world") + link("base", 5.0) + link("l1", 1.0, "0.2 0 0")
                           + joint("mount", "world", "base", "fixed", xyz="0 0 1")
                           + joint("j1", "base", "l1", axis="0 1 0")))
    assert m.nq == 1
    assert rd.jacobian(m, [0.5], "base").any() == False
    np.testing.assert_allclose(rd.forward_kinematics(m, [0.5])["base"][:3, 3], [0, 0, 1])
    assert rd.gravity_torques(m, [0.0])[0] == pytest.approx(-9.81 * 0.2 * -1.0 * -1.0 * 1.0)


def test_branching_tree_two_arms_on_a_torso():
    arm = lambda s: (link("u" + s, 1.0, "0.2 0 0") + link("f" + s, 0.5, "0.2 0 0")
                     + joint("sh" + s, "torso", "u" + s, axis="0 1 0", xyz="0 %s 0.5" % ("0.3" if s == "L" else "-0.3"))
                     + joint("el" + s, "u" + s, "f" + s, axis="0 1 0", xyz="0.4 0 0"))
    m = rd.load_urdf(robot(link("base") + link("torso", 10.0) + joint("waist", "base", "torso", axis="0 0 1")
                           + arm("L") + arm("R")))
    assert m.joint_names == ("waist", "shL", "elL", "shR", "elR")      # depth-first, declaration order
    assert m.link_names == ("base", "torso", "uL", "fL", "uR", "fR")
    q = np.array([0.0, 0.3, -0.2, 0.3, -0.2])
    g = rd.gravity_torques(m, q)
    i = {n: k for k, n in enumerate(m.joint_names)}
    assert g[i["shL"]] == pytest.approx(g[i["shR"]]) and g[i["elL"]] == pytest.approx(g[i["elR"]])
    M = rd.mass_matrix(m, q)
    assert M[i["shL"], i["shR"]] == 0.0 and M[i["elL"], i["elR"]] == 0.0   # the arms do not couple


def test_continuous_and_prismatic_joints_and_limits():
    m = rd.load_urdf(robot(link("base") + link("l1", 1.0) + link("l2", 1.0)
                           + joint("c", "base", "l1", "continuous", axis="0 0 1")
                           + joint("p", "l1", "l2", "prismatic", axis="0 0 2",
                                   extra='<dynamics damping="0.7" friction="1.5"/>')))
    assert m.nq == 2
    np.testing.assert_array_equal(m.lower_limit, [-np.inf, -3])
    np.testing.assert_array_equal(m.upper_limit, [np.inf, 3])
    np.testing.assert_array_equal(m.effort_limit, [np.inf, 50])
    np.testing.assert_array_equal(m.damping, [0.0, 0.7])
    np.testing.assert_array_equal(m.friction, [0.0, 1.5])
    assert m.joints["p"].axis == (0.0, 0.0, 1.0)            # normalised
    g = rd.gravity_torques(m, [12.0, 0.4])                  # an unbounded angle is fine
    assert g[1] == pytest.approx(9.81 * 1.0)
    np.testing.assert_allclose(rd.friction_torques(m, [1.0, -2.0]), [0.0, 0.7 * -2.0 - 1.5])
    np.testing.assert_allclose(rd.friction_torques(m, [0.0, 0.0]), [0.0, 0.0])
    np.testing.assert_allclose(rd.friction_torques(m, [0.0, -2.0], smoothing=0.01), [0.0, -1.4 - 1.5], rtol=1e-12)


def test_mimic_joint_follows_its_source():
    m = rd.load_urdf(robot(link("base") + link("l1", 1.0, "0.1 0 0") + link("f1", 0.1, "0 0.01 0") + link("f2", 0.1)
                           + joint("j1", "base", "l1", axis="0 1 0")
                           + joint("finger1", "l1", "f1", "prismatic", axis="0 1 0")
                           + joint("finger2", "l1", "f2", "prismatic", axis="0 -1 0",
                                   extra='<mimic joint="finger1" multiplier="1" offset="0"/>')))
    assert m.joint_names == ("j1", "finger1") and m.has_mimic
    assert m.joints["finger2"].index is None and m.joints["finger2"].mimic == ("finger1", 1.0, 0.0)
    T = rd.forward_kinematics(m, [0.0, 0.02])
    assert T["f1"][1, 3] == pytest.approx(0.02) and T["f2"][1, 3] == pytest.approx(-0.02)
    # the two fingers move in opposite directions: their inertias add on the coupled coordinate
    assert rd.mass_matrix(m, [0.0, 0.02])[1, 1] == pytest.approx(0.2)


@pytest.mark.parametrize("fragment, message", [
    ("<robot name='x'><link name='a'/></robot", "not well-formed"),
    ("<notarobot/>", "<robot>"),
    ("<robot name='x'></robot>", "no <link>"),
    (robot(link("a") + link("a")), "duplicate link"),
    (robot(link("a") + link("b")), "exactly one root"),
    (robot(link("a") + link("b") + joint("j", "a", "b") + joint("k", "b", "a")), "cycle"),
    (robot(link("a") + link("b") + joint("j", "a", "zz")), "'zz' is not a <link>"),
    (robot(link("a") + link("b") + joint("j", "a", "b", axis="0 0 0")), "zero axis"),
    (robot(link("a") + link("b") + link("c") + joint("j", "a", "b") + joint("k", "b", "c", "floating")),
     "joint 'k' is floating but its parent 'b' is not the root link 'a'"),
    (robot(link("a") + link("b") + link("c") + joint("j", "a", "b", "planar") + joint("k", "a", "c")),
     "the root link 'a' attaches 'j' (planar) and also the moving joint(s) 'k'"),
    (robot(link("a") + link("b") + joint("j", "a", "b", "hinge")), "hinge"),
    (robot(link("a") + link("b", -1.0) + joint("j", "a", "b")), "mass is negative"),
    (robot(link("a") + link("b", float("nan")) + joint("j", "a", "b")), "finite"),
    (robot(link("a") + link("b") + joint("j", "a", "b").replace(
        '<limit effort="50" velocity="2" lower="-3" upper="3"/>', "")), "no <limit>"),
    (robot(link("a") + link("b") + joint("j", "a", "b").replace('lower="-3" upper="3"', 'lower="1" upper="-1"')),
     "lower 1 is above upper -1"),
])
def test_malformed_urdf_raises_one_error_type_naming_the_fault(fragment, message):
    with pytest.raises(rd.URDFError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rd.load_urdf(fragment)


def test_mimic_of_a_missing_joint_warns_and_the_joint_moves_independently():
    """Alex's fingers: "Left_index_q2" mimics "index_q1", which the file lacks."""
    body = (link("base") + link("l1", 1.0, "0.1 0 0") + link("l2", 0.5, "0.1 0 0") + link("l3", 0.2, "0.1 0 0")
            + joint("j1", "base", "l1", axis="0 1 0")
            + joint("j2", "l1", "l2", axis="0 1 0", extra='<mimic joint="nope" multiplier="2" offset="0.1"/>')
            + joint("j3", "l2", "l3", axis="0 1 0", extra='<mimic joint="j2" multiplier="-1"/>'))
    with pytest.warns(rd.errors.URDFWarning, match="joint 'j2' mimics 'nope', which is not a joint of the "
                      "robot: 'j2' moves independently") as caught:
        m = rd.load_urdf(robot(body))
    assert len(caught) == 1
    assert m.joint_names == ("j1", "j2") and m.joints["j2"].mimic is None and m.joints["j2"].index == 1
    assert m.joints["j3"].mimic == ("j2", -1.0, 0.0)            # a mimic of it still follows it
    free = rd.load_urdf(robot(body.replace('<mimic joint="nope" multiplier="2" offset="0.1"/>', "")))
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-1, 1, (3, 2))
        np.testing.assert_array_equal(rd.rnea(m, q, qd, qdd), rd.rnea(free, q, qd, qdd))
    T = rd.forward_kinematics(m, [0.0, 0.3])
    np.testing.assert_allclose(T["l2"][:3, :3], rd.forward_kinematics(free, [0.0, 0.3])["l2"][:3, :3])


# Everything dynamics does not read, each odd in its own way: none may fail a load.
UNREAD = [
    '<material name="grey"><texture/></material>',                                  # iCub, Romeo
    '<transmission type="pr2_mechanism_model/WristTransmission" name="t">'          # PR2
    '<flexJoint name="j1" mechanicalReduction="x"/></transmission>',
    '<transmission name="t"><joint name="ghost"/><actuator><mechanicalReduction>x</mechanicalReduction>'
    '</actuator></transmission>',
    '<gazebo reference="ghost"><mu1>slippery</mu1></gazebo>',
    '<ros2_control name="r" type="system"><joint name="ghost"/></ros2_control>',
    '<xacro:macro name="m"/>',                                                      # undeclared prefix
    '<foo bar="1"><link name="inner"/></foo>',
]
UNREAD_IN_LINK = [
    '<visual><origin xyz="nan nan"/><geometry><box size="-1"/></geometry>'
    '<material name="m"><texture filename="x"/><color rgba="red"/></material></visual>',
    '<visual/><visual><geometry><teapot/></geometry></visual>',
    '<collision><geometry/></collision><collision><origin rpy="inf 0 0"/></collision>',
    '<contact><lateral_friction value="1"/></contact><kinematic>0</kinematic><surface/>',
]


@pytest.mark.parametrize("element", UNREAD + UNREAD_IN_LINK)
def test_elements_dynamics_does_not_read_are_skipped_with_a_debug_message(element, caplog):
    if element in UNREAD:
        xml = ARM.replace("</robot>", element + "</robot>")
    else:
        xml = ARM.replace('<link name="l2">', '<link name="l2">' + element)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level("DEBUG", logger="robot_dynamics.model.urdf"):
            m = rd.load_urdf(xml)
    assert m.joint_names == ("j1", "j2") and m.link_names == ("base", "l1", "l2")
    assert [r.levelname for r in caplog.records] == ["DEBUG"]
    assert "skipped elements dynamics does not use" in caplog.records[0].getMessage()
    np.testing.assert_array_equal(rd.mass_matrix(m, [0.2, 0.4]), rd.mass_matrix(rd.load_urdf(ARM), [0.2, 0.4]))


def test_joint_calibration_and_safety_controller_are_not_read():
    xml = ARM.replace("</joint>", '<calibration rising="up"/><safety_controller k_velocity="fast"/></joint>', 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rd.load_urdf(xml).nq == 2


@pytest.mark.parametrize("fragment, message", [
    ('<origin xyz="0 nan 0"/>', "origin xyz must be 3 finite numbers"),
    ('<axis xyz="0 0 0"/>', "zero axis"),
])
def test_kinematics_next_to_skipped_elements_is_still_checked(fragment, message):
    body = (link("a") + '<link name="b"><visual><geometry><box size="1 1 1"/></geometry>'
            '<material name="m"><texture/></material></visual></link>'
            '<joint name="j" type="continuous"><parent link="a"/><child link="b"/>%s</joint>' % fragment)
    with pytest.raises(rd.URDFError, match=message):
        rd.load_urdf(robot(body))


def test_unknown_tag_inside_a_joint_still_warns():
    """It may be a misspelt <origin>: the model reads the joint, so the parser's notice stays."""
    xml = ARM.replace('<origin xyz="0 0 0.3"', '<orgin xyz="0 0 0.3"')
    with pytest.warns(rd.errors.URDFWarning, match='Unknown tag "orgin"'):
        rd.load_urdf(xml)


def test_missing_file_is_a_urdf_error():
    with pytest.raises(rd.URDFError, match="cannot read URDF file"):
        rd.load_urdf("/nonexistent/robot.urdf")


def test_mimic_cycle_is_rejected():
    body = (link("a") + link("b", 1.0) + link("c", 1.0)
            + joint("j1", "a", "b", extra='<mimic joint="j2"/>') + joint("j2", "b", "c", extra='<mimic joint="j1"/>'))
    with pytest.raises(rd.URDFError, match="cycle"):
        rd.load_urdf(robot(body))


def test_external_entities_are_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("leaked")
    xml = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY x SYSTEM "file://%s">]>'
           '<robot name="&x;"><link name="a"/></robot>' % secret)
    try:
        m = rd.load_urdf(xml)
    except rd.URDFError:
        return
    assert "leaked" not in m.name


@pytest.mark.parametrize("inertia, what", [
    ((0.1, 0.1, -0.1, 0, 0, 0), "not positive definite"),
    ((0.1, 0.1, 0.5, 0, 0, 0), "triangle inequality"),
])
def test_implausible_inertia_warns_naming_the_link(inertia, what):
    with pytest.warns(rd.InertiaWarning, match="link 'b'.*" + what):
        rd.load_urdf(robot(link("a") + link("b", 1.0, inertia=inertia) + joint("j", "a", "b")))


def test_valid_inertia_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rd.load_urdf(ARM)


def test_payload_equals_the_same_mass_written_in_the_urdf():
    """with_payload(link, m, c, I) == a URDF with that mass on a link fixed to it."""
    base = rd.load_urdf(ARM)
    I = np.array([[0.01, 0.002, 0], [0.002, 0.02, 0.001], [0, 0.001, 0.015]])
    loaded = base.with_payload("l2", 2.5, (0.05, -0.02, 0.1), I)
    written = rd.load_urdf(ARM.replace("</robot>", link("load", 2.5, "0.05 -0.02 0.1",
                                                         inertia=(0.01, 0.02, 0.015, 0.002, 0, 0.001))
                                       + joint("mount", "l2", "load", "fixed") + "</robot>"))
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, (3, 2))
        np.testing.assert_allclose(rd.rnea(loaded, q, qd, qdd), rd.rnea(written, q, qd, qdd), rtol=1e-12)
        np.testing.assert_allclose(rd.mass_matrix(loaded, q), rd.mass_matrix(written, q), rtol=1e-12)
    assert loaded.total_mass == pytest.approx(base.total_mass + 2.5)
    # the original is unchanged and a zero payload changes nothing
    np.testing.assert_allclose(rd.gravity_torques(base.with_payload("l2", 0.0), [0.3, 0.2]),
                               rd.gravity_torques(base, [0.3, 0.2]), rtol=0, atol=0)
    with pytest.raises(ValueError, match="payload mass"):
        base.with_payload("l2", -1.0)
    with pytest.raises(ValueError, match="unknown link"):
        base.with_payload("nope", 1.0)
