"""simulator_node's contact scene from its parameters (contact/scene.py, ros/contact_outputs.stepper_factory):
the bundled Panda's visuals with urdf/panda_arm.srdf in a world file or alone (self-collision), and the
errors of bad parameters: hostile world files and SRDFs (an alias bomb, deep nesting, a huge file, an entity
expansion...), missing files, the robot corpus's URDFs whose meshes are missing. Each is refused by the
node's own code path (simulator_node calls the factory with each model; test/ros/test_ros_contact_input.py
runs a few through the node) with an InputError naming the parameter, what was expected and what came,
within 1 s of CPU."""
import os
import re
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.contact.scene import contact_stepper
from robot_dynamics.errors import InputError
from robot_dynamics.ros.contact_outputs import ft_sensor_problem, stepper_factory

URDF = str(rd.bundled_path("panda_arm.urdf"))
SRDF = str(rd.bundled_path("urdf/panda_arm.srdf"))
WORLD = ("ground: {height: 0.0}\n"
         "free:\n  - {name: cube, shape: box, size: [0.05, 0.05, 0.05], mass: 0.2, position: [0.5, 0.3, 0.025]}\n")


def params(**kw):
    p = dict(world_file="", robot_description="", urdf_path=URDF, collision_geometry="visual", srdf_file=SRDF)
    p.update(kw)
    return SimpleNamespace(**p)


def test_the_panda_at_rest_touches_nothing_but_the_cube_touches_the_ground():
    model = rd.load_urdf(URDF)
    stepper = contact_stepper(model, URDF, WORLD, element="visual", srdf=SRDF, dt=1e-3)
    sim = rd.Simulator(model, q0=model.neutral(), contact=stepper)
    sim.set_command(model.neutral(), mode="position")
    sim.step(200)
    a, b, _, _, force = stepper.wrenches()
    assert set(a.tolist()) == {model.nb} and set(b.tolist()) == {-1}         # the cube on the ground only
    assert abs(force[:, 2].sum() - 0.2 * 9.81) < 1e-3 * 0.2 * 9.81


def test_stepper_factory_reads_the_parameters(tmp_path):
    assert stepper_factory(params(collision_geometry=""), 1e-3) is None        # no world_file, no shapes: no contact
    world = tmp_path / "w.yaml"
    world.write_text(WORLD)
    scene = stepper_factory(params(world_file=str(world)), 1e-3)
    stepper = scene(rd.load_urdf(URDF))
    assert stepper.bodies.names == ("cube",) and stepper.dt == 1e-3
    assert [s.name for s in scene.world.static_shapes] == ["ground"]         # for /tf_static


def test_collision_geometry_alone_is_self_collision():
    """Without a world file, collision_geometry gives the arm's shapes and pairs alone: nothing at the
    ready pose, the hand's body (link7) on the shoulder's links (arm bodies both) with the elbow folded to
    -2.78 rad (its limit is -3.07)."""
    from robot_dynamics.contact import body_poses
    model = rd.load_urdf(URDF)
    stepper = stepper_factory(params(), 1e-3)(model)
    assert len(stepper.bodies) == 0
    detector = stepper.detector.detector                                       # the stepper's PoseDetector's
    assert detector.detect(body_poses(model, model.neutral())).n == 0
    folded = detector.detect(body_poses(model, np.array([0.0, 0.0, 0.0, -2.78, 0.0, 0.5, 0.0])))
    assert np.all(folded.body_b[:folded.n] >= 0)
    name = [model.link_names[l] for l in model.body_link]
    pairs = {frozenset((name[a], name[b])) for a, b in zip(folded.body_a[:folded.n], folded.body_b[:folded.n])}
    assert folded.n > 0 and pairs <= {frozenset(("panda_link7", "panda_link1")),
                                      frozenset(("panda_link7", "panda_link2"))}, pairs


def test_bad_parameters_are_named(tmp_path):
    model = rd.load_urdf(URDF)
    with pytest.raises(InputError, match=r"parameter 'world_file' '/nonexistent/w.yaml': No such file"):
        stepper_factory(params(world_file="/nonexistent/w.yaml"), 1e-3)(model)
    world = tmp_path / "w.yaml"
    world.write_text(WORLD)
    with pytest.raises(InputError, match="urdf_path or robot_description"):
        stepper_factory(params(world_file=str(world), urdf_path=""), 1e-3)(model)
    world.write_text("free:\n  - {name: a, shape: box, size: [0.1, 0.1, 0.1], mass: -1, position: [0, 0, 1]}\n")
    with pytest.raises(InputError, match=r"parameter 'world_file' '.*w\.yaml': free\[0\] \(a\): mass must be positive"):
        stepper_factory(params(world_file=str(world)), 1e-3)(model)


# --- hostile parameters: the node's own code path (simulator_node calls the factory with each model) ----------

BODY = "{name: c, shape: box, size: [0.05, 0.05, 0.05], mass: 0.2, position: [0.5, 0.3, 0.1]}"
#: Nine levels of nine aliases, defined inside a key checked after the one that uses them: shown in full,
#: 9^9 items (the YAML parser shares them; the error message must not expand them).
LAUGHS = "[&a [x, x, x, x, x, x, x, x, x], " + ", ".join(
    "&%s [%s]" % (chr(98 + k), ", ".join(["*" + chr(97 + k)] * 9)) for k in range(8)) + "]"

#: (id, world file text, what the refusal says after "parameter 'world_file' '<path>': ").
HOSTILE_WORLDS = [
    ("bad YAML", "ground: [0, 0\n", "malformed YAML"),
    ("a mapping for a list", "free: {name: a}\n", "free must be a list of bodies, got dict"),
    ("a string for a number", "static:\n  - {name: t, shape: box, size: [1, 1, 1], position: [a, 0, 0]}\n",
     r"static\[0\] \(t\) position: expected numbers, got \['a', 0, 0\]"),
    ("a negative mass", "free:\n  - " + BODY.replace("0.2", "-0.2"), r"mass must be positive \[kg\], got -0.2"),
    ("an unknown shape", "free:\n  - " + BODY.replace("box", "cone"),
     "shape must be one of box, sphere, cylinder, capsule, got 'cone'"),
    ("a list for a shape", "free:\n  - " + BODY.replace("box", "[box]"), r"shape must be one of .*, got \['box'\]"),
    ("an alias bomb for a shape", "free:\n  - {name: c, position: [0, 0, 0], size: %s, shape: *i}\n" % LAUGHS,
     r"shape must be one of .*, got \[\[\.\.\.\], \[\.\.\.\]"),
    ("an alias bomb for an inertia", "free:\n  - {name: c, angular_velocity: %s, shape: box, size: [1, 1, 1], "
     "mass: 1, position: [0, 0, 0], inertia: [*i, *i, *i, *i, *i, *i]}\n" % LAUGHS, "inertia .*: expected numbers"),
    ("an alias bomb for a position", "free:\n  - {name: c, mass: %s, shape: box, size: [1, 1, 1], "
     "position: [*i, *i, *i]}\n" % LAUGHS, "position: expected numbers"),
    ("65,000 nested lists", "free: " + "[" * 65_000 + "]" * 65_000 + "\n",
     r"YAML nested 65000 levels deep in \[ and \{ \(at most 50\)"),
    ("60,000 nested block lists", "free:\n" + "- " * 60_000 + "x\n",
     "YAML nested deeper than Python's recursion limit"),
    ("a 10 MB file", "# " + "x" * 10_000_000 + "\nfree: []\n", "larger than 131072 bytes"),
    ("501 bodies", "free:\n" + "".join("  - %s\n" % BODY.replace("name: c", "name: c%d" % i) for i in range(501)),
     "at most 500 static and free bodies, got 501"),
    ("a body named like a link", "static:\n  - {name: panda_link0, shape: box, size: [1, 1, 1], position: [0, 0, 0]}\n",
     "body name\\(s\\) panda_link0 are links of robot 'panda'"),
]
#: (id, SRDF text, what the refusal says after "parameter 'srdf_file' '<path>': ").
HOSTILE_SRDFS = [
    ("malformed XML", '<robot name="panda"><disable_collisions link1="a"', "malformed|unclosed|no element"),
    ("another root", '<srdf name="panda"/>', "SRDF root element must be <robot>, got <srdf>"),
    ("a missing attribute", '<robot name="panda"><disable_collisions link1="panda_link1"/></robot>',
     "expected the attribute\\(s\\) link2"),
    ("an entity expansion", '<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa">' + "".join(
        '<!ENTITY %s "%s">' % (chr(98 + k), ("&%s;" % chr(97 + k)) * 10) for k in range(9))
     + ']><robot name="&j;"/>', "DTD"),
    ("a 20 MB file", '<robot name="panda"><!-- %s --></robot>' % ("c" * 20_000_000), "larger than 16777216 bytes"),
]
CPU_BOUND = 1.0                 # [s] of the deciding thread's CPU


def refused_quickly(p, expected):
    """The factory's refusal of parameters ``p`` for the bundled Panda: its message, checked against
    ``expected`` (a regular expression) and decided within CPU_BOUND of this thread's CPU."""
    model = rd.load_urdf(URDF)
    start = time.thread_time()
    with pytest.raises(InputError, match=expected) as refusal:
        stepper_factory(p, 1e-3)(model)
    assert time.thread_time() - start < CPU_BOUND
    return str(refusal.value)


@pytest.mark.parametrize("text, expected", [case[1:] for case in HOSTILE_WORLDS], ids=[c[0] for c in HOSTILE_WORLDS])
def test_hostile_world_files_are_refused_naming_the_parameter(tmp_path, text, expected):
    path = tmp_path / "world.yaml"
    path.write_text(text)
    message = refused_quickly(params(world_file=str(path)),
                              r"^parameter 'world_file' '%s': .*(%s)" % (re.escape(str(path)), expected))
    assert len(message) < 2000


@pytest.mark.parametrize("text, expected", [case[1:] for case in HOSTILE_SRDFS], ids=[c[0] for c in HOSTILE_SRDFS])
def test_hostile_srdf_files_are_refused_naming_the_parameter(tmp_path, text, expected):
    path = tmp_path / "panda.srdf"
    path.write_text(text)
    refused_quickly(params(srdf_file=str(path)),
                    r"^parameter 'srdf_file' '%s': .*(%s)" % (re.escape(str(path)), expected))


@pytest.mark.parametrize("parameter", ["world_file", "srdf_file"])
def test_missing_files_are_named(tmp_path, parameter):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)                                   # opened, it would wait for a writer
    for value, reason in ((str(tmp_path / "missing"), "No such file or directory"),
                          (str(tmp_path), "expected a regular file, got a directory"),
                          (str(fifo), "expected a regular file, got a FIFO, socket or device"),
                          ("package://no_such_package/x", "package 'no_such_package' not found")):
        refused_quickly(params(**{parameter: value}),
                        "^parameter '%s' '%s': %s" % (parameter, re.escape(value), reason))


def test_corpus_urdfs_whose_meshes_are_missing_are_named():
    """example-robot-data's robots name their collision meshes package://example-robot-data/..., a package
    the ament index does not have here: each is refused naming collision_geometry, the link and the mesh."""
    from robot_dynamics.tools.sample import example_robot_data_dir
    erd = example_robot_data_dir()
    if erd is None:
        pytest.skip("example-robot-data not installed")
    for name in ("panda_description/urdf/panda.urdf", "ur_description/urdf/ur5_robot.urdf",
                 "talos_data/robots/talos_reduced.urdf", "tiago_description/robots/tiago_dual.urdf"):
        path = str(erd / name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = rd.load_urdf(path)
        start = time.thread_time()
        with pytest.raises(InputError, match=r"^parameter 'collision_geometry' 'collision': the <collision> shapes "
                                             r"of urdf_path '%s': link '.*' <collision> 0: mesh 'package://"
                                             r"example-robot-data/.*' not found" % re.escape(path)):
            stepper_factory(params(urdf_path=path, srdf_file="", collision_geometry="collision"), 1e-3)(model)
        assert time.thread_time() - start < CPU_BOUND, name


def test_the_urdf_corpus_gives_shapes_or_a_named_refusal():
    """Each URDF of test/urdf_corpus that loads as a model gives its contact scene or an InputError naming
    collision_geometry, within CPU_BOUND, with either element."""
    import json
    corpus = Path(__file__).parent / "urdf_corpus"
    manifest = json.loads((corpus / "manifest.json").read_text())
    tried = 0
    for name in sorted(n for n, e in manifest.items() if e["outcome"] != "error"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = rd.load_urdf(corpus / name)
            if model.root_joint is not None or model.nb == 0:
                continue
            for element in ("collision", "visual"):
                start = time.thread_time()
                try:
                    stepper_factory(params(urdf_path=str(corpus / name), srdf_file="", collision_geometry=element),
                                    1e-3)(model)
                except InputError as exc:
                    assert str(exc).startswith("parameter 'collision_geometry' %r: " % element), exc
                assert time.thread_time() - start < CPU_BOUND, name
                tried += 1
    assert tried >= 20


def test_an_ft_sensor_link_that_cannot_carry_a_sensor_is_named():
    model = rd.load_urdf(URDF)
    assert ft_sensor_problem(model, "panda_link8") is None
    assert ft_sensor_problem(model, "panda_link0").startswith(
        "parameter 'ft_sensor_link': ft sensor: link 'panda_link0' is fixed to the base")
    assert ft_sensor_problem(model, "nope").startswith("parameter 'ft_sensor_link': ft sensor: no link 'nope'")
