"""simulator_node's contact outputs (``world_file``): the contacts as markers, the
contact wrench per link, the simulated force-torque sensor (issue 35, point 3).

Published at ``contact_rate`` (wall clock), from the simulator's committed state
(:mod:`robot_dynamics.contact.sensing`), frames as below:

    ~/contact_markers (visualization_msgs/MarkerArray), in the base frame: a
        DELETEALL, then per contact a sphere at its point (namespace
        ``contact_points``) and an arrow of the force on the arm's (or the
        free body's) side, 1 mm per N (``contact_forces``); the free bodies
        as boxes, spheres and cylinders at their poses (``free_bodies``).
    ~/contacts/<link> (geometry_msgs/WrenchStamped), one topic per arm link
        that has touched something (the link its body is named by): the
        wrench of that body's contacts at the link's origin, in its axes
        (frame_id the link); zeros once it touches nothing.
    ~/ft_sensor (geometry_msgs/WrenchStamped) with ``ft_sensor_link``: the
        wrench the contacts exert on the arm beyond that link, at its
        origin in its axes (:class:`~robot_dynamics.contact.sensing.ForceTorqueSensor`).

The free bodies' poses go out as markers only: a /tf broadcast needs tf2_msgs,
which is not a dependency of this package.
"""
import numpy as np
from geometry_msgs.msg import Point, WrenchStamped
from visualization_msgs.msg import Marker, MarkerArray

from ..contact.scene import contact_stepper
from ..contact.sensing import ForceTorqueSensor, body_names
from ..control.model_holder import resolve_path
from ..errors import InputError

METRES_PER_NEWTON = 0.001
_SHAPES = {"box": Marker.CUBE, "sphere": Marker.SPHERE, "cylinder": Marker.CYLINDER, "capsule": Marker.CYLINDER}


def stepper_factory(p, dt):
    """``model -> ContactStepper`` from the node's parameters ``p`` (world_file, collision_geometry,
    srdf_file; the shapes from urdf_path or robot_description), or None without world_file."""
    if not p.world_file:
        return None

    def make(model):
        if p.robot_description:
            description = p.robot_description
        elif p.urdf_path:
            description = resolve_path(p.urdf_path)
        else:
            raise InputError("parameter 'world_file' needs the robot's shapes from urdf_path or robot_description "
                             "(a model from the robot_description topic has no file to read them from)")
        try:
            world = open(resolve_path(p.world_file), "rb").read(1 << 20).decode("utf-8", "replace")
        except OSError as exc:
            raise InputError("parameter 'world_file' %r: %s" % (p.world_file, exc.strerror or exc)) from None
        return contact_stepper(model, description, world, element=p.collision_geometry,
                               srdf=resolve_path(p.srdf_file) if p.srdf_file else None, dt=dt)
    return make


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
        self.model = self.stepper = self.sensor = None

    def bind(self, model, stepper):
        """Publish ``model``'s contacts from ``stepper`` from now on (InputError: ft_sensor_link not in it)."""
        sensor = ForceTorqueSensor(model, self.ft_link) if self.ft_link else None
        self.model, self.stepper, self.sensor = model, stepper, sensor
        self.frame = model.base_link
        self.names = body_names(stepper)
        self.links = {}                  # link -> ForceTorqueSensor of its body alone, once it has touched

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
