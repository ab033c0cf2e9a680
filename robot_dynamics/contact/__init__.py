"""Contact: collision geometry, the world file, the narrow phase and the contact dynamics (issue 35).

:mod:`.contacts` holds the record shared by the detector and the dynamics
(:class:`Contacts`: bodies, point, normal, depth in the world frame).

Geometry (docs/CONTACT.md): :mod:`.geometry` reads shapes from a URDF's
``<collision>`` elements or an MJCF's geoms, :mod:`.world` the YAML world
file (ground, static boxes, free bodies), :mod:`.collision` puts them on
bodies and filters the pairs (adjacent links, an SRDF), :mod:`.detect`
turns poses into Contacts (coal, closed forms on planes in :mod:`.plane`).
What a simulation shows (the contacts by name, the free bodies' poses, a
force-torque sensor): :mod:`.sensing`.
"""
from .collision import CollisionModel, disabled_pairs
from .contacts import Contacts
from .detect import Detector, body_poses, link_poses
from .geometry import Shape, shapes_from_mjcf, shapes_from_urdf
from .sensing import Contact, ForceTorqueSensor, contact_list, free_body_poses
from .world import FreeBody, World, load_world, solid_inertia

__all__ = ["Contacts", "CollisionModel", "disabled_pairs", "Detector", "body_poses", "link_poses", "Shape",
           "shapes_from_mjcf", "shapes_from_urdf", "FreeBody", "World", "load_world", "solid_inertia", "Contact",
           "ForceTorqueSensor", "contact_list", "free_body_poses"]
