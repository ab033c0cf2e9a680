"""simulator_node's contact scene from its parameters (contact/scene.py, ros/contact_outputs.stepper_factory):
the bundled Panda's visuals with urdf/panda_arm.srdf in a world file, and the errors of bad parameters."""
from types import SimpleNamespace

import pytest

import robot_dynamics as rd
from robot_dynamics.contact.scene import contact_stepper
from robot_dynamics.errors import InputError, WorldError
from robot_dynamics.ros.contact_outputs import stepper_factory

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
    assert stepper_factory(params(), 1e-3) is None                             # no world_file: no contact
    world = tmp_path / "w.yaml"
    world.write_text(WORLD)
    stepper = stepper_factory(params(world_file=str(world)), 1e-3)(rd.load_urdf(URDF))
    assert stepper.bodies.names == ("cube",) and stepper.dt == 1e-3


def test_bad_parameters_are_named(tmp_path):
    model = rd.load_urdf(URDF)
    with pytest.raises(InputError, match=r"parameter 'world_file' '/nonexistent/w.yaml': No such file"):
        stepper_factory(params(world_file="/nonexistent/w.yaml"), 1e-3)(model)
    world = tmp_path / "w.yaml"
    world.write_text(WORLD)
    with pytest.raises(InputError, match="urdf_path or robot_description"):
        stepper_factory(params(world_file=str(world), urdf_path=""), 1e-3)(model)
    world.write_text("free:\n  - {name: a, shape: box, size: [0.1, 0.1, 0.1], mass: -1, position: [0, 0, 1]}\n")
    with pytest.raises(WorldError, match="mass must be positive"):
        stepper_factory(params(world_file=str(world)), 1e-3)(model)
