"""A simulator's contact scene from files: the robot's shapes, a world file and an SRDF
(simulator_node's ``world_file``, ``collision_geometry`` and ``srdf_file``)."""
from .collision import CollisionModel
from .detect import Detector
from .free_bodies import FreeBodies
from .geometry import shapes_from_urdf
from .stepping import ContactStepper
from .world import load_world


def contact_stepper(model, description, world_file, *, element="collision", srdf=None, dt=None):
    """A :class:`~.stepping.ContactStepper` of ``model`` in the world of ``world_file``.

    Args:
        model: the arm (fixed base).
        description: its URDF (a path or the text) the shapes are read from.
        world_file: the YAML world file (docs/CONTACT.md), a path or the text.
        element: ``"collision"`` or ``"visual"`` (the URDF elements read as shapes).
        srdf: an SRDF path whose ``<disable_collisions>`` are honoured (None or '': none).
        dt: the simulator's step [s] (None: the one it first steps).
    """
    world = load_world(world_file)
    shapes = shapes_from_urdf(description, element=element)
    collision = CollisionModel(model, shapes, world, srdf=srdf or None)
    return ContactStepper(model, Detector(collision), FreeBodies.from_world(world), dt=dt)
