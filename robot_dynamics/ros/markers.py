"""RViz markers of the simulated arm: link frames, centres of mass, inertia boxes.

Lets RViz show the arm as the simulation sees it, without meshes and
without TF: every marker is in the base frame (the URDF root link), posed
with :func:`robot_dynamics.forward_kinematics` at the simulated q.

- ns ``frames`` (one LINE_LIST): the axes of every link frame, x red,
  y green, z blue, :data:`AXIS_LENGTH` long;
- ns ``skeleton`` (one LINE_LIST): a segment from each joint's parent link
  origin to its child link origin;
- ns ``com`` (one SPHERE per moving body with mass, id = body index): its
  centre of mass, diameter ``0.04 m * cbrt(mass / 1 kg)`` clipped to
  [0.015, 0.1] m;
- ns ``inertia`` (one CUBE per moving body with mass, same ids): the
  equivalent inertia box, the uniform box with the body's mass and
  principal moments of inertia, centred on its centre of mass and aligned
  with its principal axes.

A moving body is what the simulation integrates: a link moved by a joint
together with every link (and payload) fixed to it, named after that
link. Links fixed to the base do not move and are not simulated, so only
their frames are drawn. The pure functions (:func:`body_inertials`,
:func:`box_sides`, :func:`quaternion`) need no ROS.
"""
from typing import NamedTuple

import numpy as np

from ..algorithms.kinematics import forward_kinematics
from ..model.inertia import inertia_about_com, principal_axes
from ..model.configuration import matrix_quaternion as quaternion  # (3, 3) -> (4,) xyzw, w >= 0

AXIS_LENGTH = 0.1        # [m]
LINE_WIDTH = 0.005       # [m]
MIN_SIDE = 0.001         # [m] smallest box side drawn (a rod's thickness)


class BodyInertial(NamedTuple):
    """Mass properties of one moving body, in the frame of the link that names it.

    Attributes:
        index: body index in the model (the marker id).
        link: the link moved by the body's joint.
        mass: [kg].
        com: (3,) centre of mass in the link frame [m].
        moments: (3,) principal moments of inertia about the com, ascending [kg m^2].
        axes: (3, 3) principal axes in the link frame, as columns (a rotation, det +1).
    """
    index: int
    link: str
    mass: float
    com: np.ndarray
    moments: np.ndarray
    axes: np.ndarray


def body_inertials(model):
    """Mass properties of the model's moving bodies with mass > 0 (payloads included).

    Returns:
        list of :class:`BodyInertial`, in body order (parents first).
    """
    out = []
    for b in range(model.nb):
        m = model.body_mass[b]
        if not m > 0:
            continue
        c = model.body_com[b]
        moments, axes = principal_axes(inertia_about_com(m, c, model.body_inertia[b]))
        out.append(BodyInertial(b, model.link_names[model.body_link[b]], float(m), c, moments, axes))
    return out


def box_sides(mass, moments):
    """Sides (3,) [m] of the uniform box with ``mass`` [kg] and principal ``moments`` (3,) [kg m^2].

    A box with sides a_x, a_y, a_z has ``I_x = m (a_y^2 + a_z^2) / 12`` and so
    on, hence ``a_x^2 = 6 (I_y + I_z - I_x) / m``. The triangle inequality of a
    physical inertia keeps the bracket >= 0; rounding below 0 and sides below
    :data:`MIN_SIDE` are clipped to MIN_SIDE.
    """
    I = np.asarray(moments, dtype=float)
    sq = 6.0 * (I.sum() - 2.0 * I) / mass
    return np.maximum(np.sqrt(np.maximum(sq, 0.0)), MIN_SIDE)


def sphere_diameter(mass):
    """Diameter [m] of a centre-of-mass sphere: 0.04 m * cbrt(mass / 1 kg), in [0.015, 0.1]."""
    return float(np.clip(0.04 * np.cbrt(mass), 0.015, 0.1))


class MarkerBuilder:
    """The arm's MarkerArray, built once per model; :meth:`update` poses it at q.

    Args:
        model: the simulated robot.
        frame: the markers' frame_id; None: the base frame (``model.base_link``). A floating or
            planar robot's markers are in the fixed frame of its base pose (the node's odom_frame).
    """

    def __init__(self, model, frame=None):
        from geometry_msgs.msg import Point
        from std_msgs.msg import ColorRGBA
        from visualization_msgs.msg import Marker, MarkerArray
        self._Point = Point
        self.model = model
        self.bodies = body_inertials(model)
        self.segments = [(j.parent, j.child) for j in model.joints.values()]
        frame = frame or model.base_link

        def marker(ns, ident, kind, rgba, scale):
            m = Marker(ns=ns, id=ident, type=kind, action=Marker.ADD)
            m.header.frame_id = frame
            m.pose.orientation.w = 1.0
            m.scale.x, m.scale.y, m.scale.z = scale
            m.color = ColorRGBA(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])
            return m

        self.frames = marker('frames', 0, Marker.LINE_LIST, (1, 1, 1, 1), (LINE_WIDTH, 0, 0))
        axis_colors = [ColorRGBA(r=1.0, a=1.0), ColorRGBA(g=1.0, a=1.0), ColorRGBA(b=1.0, a=1.0)]
        self.frames.colors = [c for _ in model.link_names for c in axis_colors for _ in (0, 1)]
        self.skeleton = marker('skeleton', 0, Marker.LINE_LIST, (0.6, 0.6, 0.6, 1), (2 * LINE_WIDTH, 0, 0))
        self.com = [marker('com', b.index, Marker.SPHERE, (1.0, 0.55, 0.0, 1.0), (sphere_diameter(b.mass),) * 3)
                    for b in self.bodies]
        self.boxes = [marker('inertia', b.index, Marker.CUBE, (0.2, 0.45, 0.9, 0.35),
                             tuple(box_sides(b.mass, b.moments))) for b in self.bodies]
        self.array = MarkerArray(markers=[self.frames, self.skeleton] + self.com + self.boxes)
        # The first array after a new model clears the markers of the previous one.
        clear = Marker(action=Marker.DELETEALL)
        clear.header.frame_id = frame
        self.first = MarkerArray(markers=[clear] + list(self.array.markers))

    def update(self, q, stamp):
        """Pose every marker at joint positions ``q`` (nq,); ``stamp`` a builtin_interfaces/Time.

        Returns:
            the MarkerArray to publish (the same object every time, after the first).
        """
        T = forward_kinematics(self.model, q)
        P = self._Point
        pts = []
        for name in self.model.link_names:
            o = T[name][:3, 3]
            for k in range(3):
                tip = o + AXIS_LENGTH * T[name][:3, k]
                pts += [P(x=o[0], y=o[1], z=o[2]), P(x=tip[0], y=tip[1], z=tip[2])]
        self.frames.points = pts
        pts = []
        for parent, child in self.segments:
            a, b = T[parent][:3, 3], T[child][:3, 3]
            pts += [P(x=a[0], y=a[1], z=a[2]), P(x=b[0], y=b[1], z=b[2])]
        self.skeleton.points = pts
        for body, sphere, box in zip(self.bodies, self.com, self.boxes):
            Tl = T[body.link]
            c = Tl[:3, :3] @ body.com + Tl[:3, 3]
            for m in (sphere, box):
                m.pose.position.x, m.pose.position.y, m.pose.position.z = c
            qx, qy, qz, qw = quaternion(Tl[:3, :3] @ body.axes)
            o = box.pose.orientation
            o.x, o.y, o.z, o.w = qx, qy, qz, qw
        out = self.array
        if self.first is not None:
            out, self.first = self.first, None
        for m in out.markers:
            m.header.stamp = stamp
        return out
