"""The actuators declaration (docs/ACTUATORS.md): where each field comes from
(the declaration over a URDF <transmission> over <dynamics>), what every copy
of a model keeps, and the errors that name the joint and the field. What the
armature does to the algorithms is in test_armature.py."""
import warnings

import pytest

import robot_dynamics as rd

TWO = ('<robot name="two"><link name="base"/>'
       '<link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
       '</inertial></link>'
       '<link name="l2"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
       '</inertial></link>'
       '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>'
       '<limit effort="10" velocity="1" lower="-1" upper="1"/><dynamics damping="0.7" friction="0.2"/></joint>'
       '<joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/><origin xyz="0.3 0 0"/>'
       '<axis xyz="1 0 0"/><limit effort="10" velocity="1" lower="-1" upper="1"/><dynamics damping="0.4"/></joint>'
       '%s</robot>')
TRANSMISSION = ('<transmission name="t1"><type>transmission_interface/SimpleTransmission</type>'
                '<joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>'
                '<actuator name="m1"><mechanicalReduction>50</mechanicalReduction></actuator></transmission>')


def test_without_a_declaration_the_urdf_gives_the_actuators():
    model = rd.load_urdf(TWO % "")
    assert model.armature.tolist() == [0.0, 0.0] and model.gear_ratio.tolist() == [1.0, 1.0]
    law1, law2 = model.friction_laws
    assert (law1.law, law1.params) == ("coulomb", {"coulomb": 0.2, "viscous": 0.7, "smoothing": 0.0})
    assert (law2.law, law2.params) == ("viscous", {"viscous": 0.4})
    assert model.actuators["j1"].gear_ratio_from == "default"
    for name in ("armature", "gear_ratio", "body_armature"):
        with pytest.raises(ValueError):
            getattr(model, name)[0] = 1.0


def test_precedence_declaration_over_transmission_over_urdf_dynamics(tmp_path):
    urdf = TWO % TRANSMISSION
    model = rd.load_urdf(urdf)
    assert model.gear_ratio.tolist() == [50.0, 1.0] and model.actuators["j1"].gear_ratio_from == "transmission"
    model = rd.load_urdf(urdf, actuators={"j1": {"rotor_inertia": 1e-4}})        # the transmission's ratio
    assert model.armature[0] == pytest.approx(1e-4 * 50 ** 2, rel=1e-12)
    path = tmp_path / "actuators.yaml"
    path.write_text("j1:\n  rotor_inertia: 1.0e-4\n  gear_ratio: 80\n"
                    "  friction: {law: viscous, viscous: 0.05}\nj2:\n  armature: 2.5\n")
    model = rd.load_urdf(urdf, actuators=path)
    assert model.gear_ratio.tolist() == [80.0, 1.0] and model.actuators["j1"].gear_ratio_from == "actuators"
    assert model.armature.tolist() == pytest.approx([1e-4 * 80 ** 2, 2.5], rel=1e-12)
    assert model.friction_laws[0].params == {"viscous": 0.05}                    # over <dynamics>
    assert model.damping.tolist() == [0.05, 0.4] and model.friction.tolist() == [0.0, 0.0]
    assert model.body_damping.tolist() == [0.05, 0.4] and model.body_friction.tolist() == [0.0, 0.0]
    assert rd.load_urdf(urdf, actuators=str(path)).armature.tolist() == model.armature.tolist()
    assert rd.load_urdf(urdf, actuators="j2: {armature: 2.5}").armature.tolist() == [0.0, 2.5]   # one-line YAML
    again = model.with_actuators({"j1": {"gear_ratio": 10}})                     # the rotor inertia is kept
    assert again.armature[0] == pytest.approx(1e-4 * 10 ** 2, rel=1e-12) and again.armature[1] == 2.5
    assert again.friction_laws[0] == model.friction_laws[0]


def test_every_copy_keeps_the_actuators():
    model = rd.load_urdf(TWO % TRANSMISSION, actuators={"j2": {"armature": 0.5, "friction": {
        "law": "stribeck", "static": 1.0, "coulomb": 0.8, "stribeck_velocity": 0.1, "viscous": 0.2}}})
    for copy in (model.with_gravity([0, 0, -1.0]), model.with_payload("l2", 1.0), model.with_loops(None)):
        assert copy.armature.tolist() == model.armature.tolist()
        assert copy.gear_ratio.tolist() == model.gear_ratio.tolist()
        assert copy.friction_laws == model.friction_laws and dict(copy.actuators) == dict(model.actuators)
        assert copy.damping.tolist() == [0.7, 0.2] and copy.friction.tolist() == [0.2, 0.8]
    floating = rd.load_urdf(TWO % "", root_joint="floating", actuators={"j1": {"armature": 0.3}})
    assert floating.armature.tolist() == [0.0] * 6 + [0.3, 0.0]
    assert floating.with_gravity([0, 0, -1.0]).armature.tolist() == floating.armature.tolist()


@pytest.mark.parametrize("spec, words", [
    ({"nope": {"armature": 1.0}}, ["unknown joint 'nope'", "j1, j2"]),
    ({"j1": {"armature": -0.1}}, ["'j1'", "armature", ">= 0", "kg m^2"]),
    ({"j2": {"armature": float("nan")}}, ["'j2'", "armature", "finite", "[kg]"]),
    ({"j1": {"gear_ratio": 0}}, ["'j1'", "gear_ratio", "nonzero"]),
    ({"j1": {"rotor_inertia": 1e-4}}, ["'j1'", "rotor_inertia needs a gear_ratio"]),
    ({"j1": {"rotor_inertia": -1e-4, "gear_ratio": 10}}, ["'j1'", "rotor_inertia", ">= 0"]),
    ({"j1": {"armature": 0.1, "rotor_inertia": 1e-4}}, ["'j1'", "both armature and rotor_inertia"]),
    ({"j1": {"armatur": 0.1}}, ["'j1'", "unknown field", "armatur"]),
    ({"j1": {"friction": {"law": "stribeck", "static": 1.0, "coulomb": 0.5}}},
     ["'j1'", "friction", "stribeck", "stribeck_velocity", "viscous"]),
    ({"j1": {"friction": {"law": "sigmoid", "phi1": 1.0, "phi3": 0.0}}}, ["'j1'", "friction", "phi2"]),
    ({"j1": {"friction": {"law": "dahl"}}}, ["'j1'", "friction", "unknown law 'dahl'"]),
    ({"j1": {"friction": {"law": "viscous", "viscous": 0.1, "coulomb": 1.0}}}, ["'j1'", "unknown parameter", "coulomb"]),
    ({"j2": {"friction": {"law": "coulomb", "coulomb": -1.0}}}, ["'j2'", "friction coulomb", ">= 0", "[N]"]),
    ({"j1": {"friction": {"law": "stribeck", "static": 1, "coulomb": 0.5, "stribeck_velocity": 0, "viscous": 0}}},
     ["'j1'", "stribeck_velocity", "> 0"]),
    ({"j1": {"friction": 0.3}}, ["'j1'", "friction", "law"]),
    ({"j1": 0.3}, ["'j1'", "must map to"]),
    ("j1: [unclosed\n", ["actuators", "malformed YAML"]),
    ([1, 2], ["actuators must be a mapping", "list"]),
])
def test_a_bad_declaration_names_the_joint_and_the_field(spec, words):
    model = rd.load_urdf(TWO % "")
    for call in (lambda: model.with_actuators(spec), lambda: rd.load_urdf(TWO % "", actuators=spec)):
        with pytest.raises(rd.URDFError) as err:
            call()
        assert isinstance(err.value, ValueError)
        for w in words:
            assert w in str(err.value), (w, str(err.value))


def test_a_missing_actuators_file_is_named():
    with pytest.raises(rd.URDFError, match="cannot read actuators file"):
        rd.load_urdf(TWO % "", actuators="/nonexistent/actuators.yaml")


@pytest.mark.parametrize("transmission", [
    '<transmission name="t"><joint name="j1"/><actuator><mechanicalReduction>0</mechanicalReduction></actuator>'
    '</transmission>',
    '<transmission name="t"><joint name="ghost"/><actuator><mechanicalReduction>5</mechanicalReduction>'
    '</actuator></transmission>',
    '<transmission name="t"><joint name="j1"/><joint name="j2"/><actuator><mechanicalReduction>5'
    '</mechanicalReduction></actuator></transmission>',
])
def test_a_transmission_that_gives_no_simple_ratio_is_skipped_as_before(transmission):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = rd.load_urdf(TWO % transmission)
    assert model.gear_ratio.tolist() == [1.0, 1.0]


def test_an_old_style_transmission_gives_its_ratio():
    old = ('<transmission name="t" type="pr2_mechanism_model/SimpleTransmission"><actuator name="m"/>'
           '<joint name="j2"/><mechanicalReduction>-12.5</mechanicalReduction></transmission>')
    model = rd.load_urdf(TWO % old, actuators={"j2": {"rotor_inertia": 0.01}})
    assert model.gear_ratio.tolist() == [1.0, -12.5]
    assert model.armature[1] == pytest.approx(0.01 * 12.5 ** 2, rel=1e-12)
