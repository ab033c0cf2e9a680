"""simulator_node's contact outputs (``world_file`` or ``collision_geometry``): the contacts as
markers, the contact wrench per link, the simulated force-torque sensor, the world bodies on TF
(issue 35, point 3).

Contact is on with a ``world_file`` (the arm, its own links and the world's bodies touch) or with
``collision_geometry`` alone (no world: the arm touches itself). The robot's shapes are its URDF's
``<collision>`` elements (``visual``: its visuals), the pairs those of an SRDF's
``<disable_collisions>`` left out. Published at ``contact_rate`` (wall clock), from the simulator's
committed state (:mod:`robot_dynamics.contact.sensing`), frames as below:

    ~/contact_markers (visualization_msgs/MarkerArray), in the base frame: a
        DELETEALL, then per contact a sphere at its point (namespace
        ``contact_points``) and an arrow of the force on the arm's (or the
        free body's) side, 1 mm per N (``contact_forces``); the free bodies
        as boxes, spheres and cylinders at their poses (``free_bodies``).
    ~/contacts/<link> (geometry_msgs/WrenchStamped), one topic per arm link
        that has touched something (the link its body is named by): the
        wrench of that body's contacts at the link's origin, in its axes
        (frame_id the link); zeros once it touches nothing. A contact of the
        arm with itself is on both links' topics, equal and opposite.
    ~/ft_sensor (geometry_msgs/WrenchStamped) with ``ft_sensor_link``: the
        wrench the contacts exert on the arm beyond that link, at its
        origin in its axes (:class:`~robot_dynamics.contact.sensing.ForceTorqueSensor`).
    /tf, /tf_static (tf2_msgs/TFMessage): the world file's bodies (:mod:`.contact_tf`).
"""
import os
import stat
import warnings

import numpy as np
from geometry_msgs.msg import Point, WrenchStamped
from visualization_msgs.msg import Marker, MarkerArray

from ..contact.collision import MAX_SRDF_BYTES, CollisionModel, disabled_pairs
from ..contact.detect import Detector
from ..contact.free_bodies import FreeBodies
from ..contact.geometry import shapes_from_urdf
from ..contact.sensing import ForceTorqueSensor, body_names
from ..contact.stepping import ContactStepper
from ..contact.world import MAX_BYTES as MAX_WORLD_BYTES, World, load_world
from ..control.model_holder import resolve_path
from ..errors import InputError, URDFWarning
from .contact_tf import WorldFrames

METRES_PER_NEWTON = 0.001
_SHAPES = {"box": Marker.CUBE, "sphere": Marker.SPHERE, "cylinder": Marker.CYLINDER, "capsule": Marker.CYLINDER}


def stepper_factory(p, dt):
    """The node's :class:`ContactScene` from its parameters ``p``, or None (neither world_file nor
    collision_geometry: no contact)."""
    return ContactScene(p, dt) if p.world_file or p.collision_geometry else None


class ContactScene:
    """``model -> ContactStepper`` from the node's parameters (world_file, collision_geometry,
    srdf_file; the shapes from urdf_path or robot_description); keeps the :class:`World` it read
    last (``world``). Every refusal is an InputError naming the parameter, what it expected and
    what came.

    Args:
        p: the parameters. dt: the simulator's step [s].
    """

    def __init__(self, p, dt):
        self.p, self.dt = p, dt
        self.element = p.collision_geometry or "collision"
        self.world = World()

    def __call__(self, model):
        world = self._world(model)
        shapes = self._shapes()
        srdf = self._srdf(model)
        try:
            collision = CollisionModel(model, shapes, world, srdf=srdf)
        except ValueError as exc:
            raise InputError("parameter 'collision_geometry' %r: %s" % (self.element, exc)) from None
        stepper = ContactStepper(model, Detector(collision), FreeBodies.from_world(world), dt=self.dt)
        self.world = world
        return stepper

    def _world(self, model):
        """The World of world_file (empty without), its names checked against ``model``'s links."""
        path = self.p.world_file
        if not path:
            return World()
        try:
            world = load_world(_read(path, MAX_WORLD_BYTES))
        except (OSError, ValueError) as exc:
            raise InputError("parameter 'world_file' %r: %s" % (path, _reason(exc))) from None
        links = set(model.link_names)
        clash = [b.name for b in world.static_shapes + world.free_bodies if b.name in links]
        if clash:
            raise InputError("parameter 'world_file' %r: body name(s) %s are links of robot %r; a world body "
                             "is a TF frame and needs a name of its own" % (path, ", ".join(clash), model.name))
        return world

    def _shapes(self):
        """The robot's shapes (the URDF's collision or visual elements)."""
        p = self.p
        if p.robot_description:
            description, source = p.robot_description, "robot_description"
        elif p.urdf_path:
            source = "urdf_path %r" % p.urdf_path
            try:
                description = resolve_path(p.urdf_path)
            except OSError as exc:
                raise InputError("parameter 'urdf_path' %r: %s" % (p.urdf_path, _reason(exc))) from None
        else:
            raise InputError("parameters 'world_file' and 'collision_geometry' need the robot's shapes from "
                             "urdf_path or robot_description (a model from the robot_description topic has no "
                             "file to read them from)")
        try:
            return shapes_from_urdf(description, element=self.element)
        except (OSError, ValueError) as exc:
            raise InputError("parameter 'collision_geometry' %r: the <%s> shapes of %s: %s"
                             % (self.element, self.element, source, _reason(exc))) from None

    def _srdf(self, model):
        """The SRDF's text (checked), or None."""
        path = self.p.srdf_file
        if not path:
            return None
        try:
            text = _read(path, MAX_SRDF_BYTES)
            with warnings.catch_warnings():             # unknown links: CollisionModel warns once
                warnings.simplefilter("ignore", URDFWarning)
                disabled_pairs(text, model.link_names)
        except (OSError, ValueError) as exc:
            raise InputError("parameter 'srdf_file' %r: %s" % (path, _reason(exc))) from None
        return text


def ft_sensor_problem(model, link):
    """None if ``link`` of ``model`` can carry the force-torque sensor, else why not (ft_sensor_link)."""
    try:
        ForceTorqueSensor(model, link)
    except InputError as exc:
        return "parameter 'ft_sensor_link': %s" % exc
    return None


def _read(path, max_bytes):
    """The bytes of file ``path`` (or package://), at most ``max_bytes`` (OSError, InputError). A
    regular file only: opening a FIFO would wait for a writer, and the node with it."""
    path = resolve_path(path)
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        raise InputError("expected a regular file, got %s" % ("a directory" if os.path.isdir(path) else
                                                                 "a FIFO, socket or device"))
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError("the file is larger than %d bytes" % max_bytes)
    return data


def _reason(exc):
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


class ContactOutputs:
    """The publishers and messages of the contact outputs (publishers made once, per node).

    Args:
        node: the rclpy node that owns the publishers.
        ft_link: the sensor's link ('' : none).
    """

    def __init__(self, node, ft_link=""):
        self.node, self.ft_link = node, ft_link
        self.pub_markers = node.create_publisher(MarkerArray, "~/contact_markers", 1)
        self.pub_ft = node.create_publisher(WrenchStamped, "~/ft_sensor", 10) if ft_link else None
        self.publishers = {}             # link -> publisher of ~/contacts/<link>
        self.frames = WorldFrames(node)
        self.model = self.stepper = self.sensor = None

    def bind(self, model, stepper, world, stamp):
        """Publish ``model``'s contacts from ``stepper`` from now on, and the bodies of ``world`` (a
        :class:`World`) on TF (the static ones now, stamped ``stamp``).

        Raises:
            InputError: ft_sensor_link is not a link of ``model`` or is fixed to its base.
        """
        sensor = ForceTorqueSensor(model, self.ft_link) if self.ft_link else None
        self.model, self.stepper, self.sensor = model, stepper, sensor
        self.frame = model.base_link
        self.names = body_names(stepper)
        self.links = {}                  # link -> ForceTorqueSensor of its body alone, once it has touched
        self.frames.bind(self.frame, world, stepper.bodies, stamp)

    def publish(self, q, stamp):
        """Publish the outputs of the committed state (arm configuration ``q``), stamped ``stamp``."""
        s = self.stepper
        if s is None:
            return
        a, b, point, _, force = s.wrenches()
        self.pub_markers.publish(self.markers(point, force, stamp))
        for body in set(a.tolist()) | set(b.tolist()):
            if 0 <= body < self.model.nb and self.names[body] not in self.links:
                link = self.names[body]
                self.links[link] = ForceTorqueSensor(self.model, link, subtree=False)
                if link not in self.publishers:
                    self.publishers[link] = self.node.create_publisher(WrenchStamped, "~/contacts/" + link, 10)
        for link, sensor in self.links.items():
            self.publishers[link].publish(wrench_msg(sensor.wrench(s, q), link, stamp))
        if self.sensor is not None:
            self.pub_ft.publish(wrench_msg(self.sensor.wrench(s, q), self.sensor.link, stamp))
        self.frames.publish(stamp)

    def markers(self, point, force, stamp):
        """The MarkerArray of the contacts (points, force arrows) and the free bodies."""
        clear = Marker(action=Marker.DELETEALL)
        clear.header.frame_id = self.frame
        out = [clear]
        for i in range(len(point)):
            p = Point(x=float(point[i, 0]), y=float(point[i, 1]), z=float(point[i, 2]))
            tip = point[i] + METRES_PER_NEWTON * force[i]
            dot = self._marker("contact_points", i, Marker.SPHERE, stamp, (1.0, 0.2, 0.2))
            dot.pose.position = p
            dot.pose.orientation.w = 1.0
            dot.scale.x = dot.scale.y = dot.scale.z = 0.01
            arrow = self._marker("contact_forces", i, Marker.ARROW, stamp, (1.0, 0.8, 0.0))
            arrow.pose.orientation.w = 1.0
            arrow.points = [p, Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2]))]
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.004, 0.008, 0.01
            out += [dot, arrow]
        out += self._free_bodies(stamp)
        return MarkerArray(markers=out)

    def _free_bodies(self, stamp):
        bodies = self.stepper.bodies
        out = []
        for j, quat in enumerate(bodies.quaternions()):
            kind, size = bodies.shape[j], np.asarray(bodies.size[j], dtype=float)
            m = self._marker("free_bodies", j, _SHAPES.get(kind, Marker.CUBE), stamp, (0.3, 0.5, 0.9))
            m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(x) for x in bodies.p[j])
            o = m.pose.orientation
            o.x, o.y, o.z, o.w = (float(x) for x in quat)
            if kind == "box":
                m.scale.x, m.scale.y, m.scale.z = (float(x) for x in size)
            elif kind == "sphere":
                m.scale.x = m.scale.y = m.scale.z = 2.0 * float(size[0])
            else:                                          # cylinder, capsule: [r, length]
                m.scale.x = m.scale.y = 2.0 * float(size[0])
                m.scale.z = float(size[1]) + (2.0 * float(size[0]) if kind == "capsule" else 0.0)
            out.append(m)
        return out

    def _marker(self, ns, i, kind, stamp, rgb):
        m = Marker(ns=ns, id=i, type=kind, action=Marker.ADD)
        m.header.frame_id = self.frame
        m.header.stamp = stamp
        m.color.r, m.color.g, m.color.b, m.color.a = rgb + (1.0,)
        return m


def wrench_msg(w, frame, stamp):
    """geometry_msgs/WrenchStamped of ``w`` (6,) [fx, fy, fz, tx, ty, tz] in ``frame``."""
    msg = WrenchStamped()
    msg.header.frame_id, msg.header.stamp = frame, stamp
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z, t.x, t.y, t.z = (float(x) for x in w)
    return msg
