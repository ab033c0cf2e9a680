"""A small closed-form detector: spheres and boxes against static planes.

For the contact dynamics' closed-form tests and scenes made of a ground or
a table top and simple shapes, before (or beside) the narrow phase of
:mod:`.detect`. It fills the shared :class:`~.contacts.Contacts` record
with the same conventions (normal from b to a, the static world as
``body_b = -1``, point midway between the surfaces, ``(pair, feature)``
the contact's identity: ``pair = shape * n_planes + plane``, ``feature``
the box corner 0..7, 0 for a sphere; the radii of curvature: a sphere's r
or a corner's 0 on the shape, inf on the plane).

A shape sits on a body: ``0..nb-1`` an arm body (its pose in the body
frame of :func:`robot_dynamics.algorithms.kernels.world_poses`), ``nb..``
a free body (pose about its centre of mass). A plane is the boundary of
the static half-space ``(x - point) . normal <= 0``.
"""
import numpy as np

from ..algorithms.contact_kernels import detect_planes
from ..errors import InputError

SPHERE, BOX = 0, 1


class PlaneDetector:
    """Spheres and boxes (on arm or free bodies) against static planes.

    Args:
        shapes: sequence of dicts ``{'body': int, 'type': 'sphere' | 'box',
            'size': (r,) or full edges (lx, ly, lz) [m], 'position': (3,)
            in the body frame [m] (default 0), 'rotation': (3, 3) body <- shape
            (default identity)}``.
        planes: sequence of ``(point (3,), normal (3,))``, world frame [m];
            the normal points out of the solid, it is normalised here.
    """

    def __init__(self, shapes, planes):
        shapes, planes = list(shapes), list(planes)
        self.body = np.array([int(s["body"]) for s in shapes], dtype=np.int64)
        self.kind = np.array([{"sphere": SPHERE, "box": BOX}[s["type"]] for s in shapes], dtype=np.int64)
        self.size = np.zeros((len(shapes), 3))
        for i, s in enumerate(shapes):
            size = np.asarray(s["size"], dtype=float).ravel()
            if size.shape != ((1,) if self.kind[i] == SPHERE else (3,)) or not np.all(size > 0):
                raise InputError("shape %d: a %s needs %s > 0 [m], got %r"
                                 % (i, s["type"], "(r,)" if self.kind[i] == SPHERE else "(lx, ly, lz)", s["size"]))
            self.size[i, :size.shape[0]] = size
        self.R = np.array([np.asarray(s.get("rotation", np.eye(3)), dtype=float) for s in shapes]).reshape(-1, 3, 3)
        self.p = np.array([np.asarray(s.get("position", (0, 0, 0)), dtype=float) for s in shapes]).reshape(-1, 3)
        self.plane_point = np.array([np.asarray(p, dtype=float) for p, _ in planes]).reshape(-1, 3)
        n = np.array([np.asarray(n, dtype=float) for _, n in planes]).reshape(-1, 3)
        if not np.all(np.linalg.norm(n, axis=1) > 0):
            raise InputError("plane normals must be non-zero vectors, got %r" % (n.tolist(),))
        self.plane_normal = n / np.linalg.norm(n, axis=1)[:, None]

    def detect(self, Rw, pw, Rf, pf, contacts):
        """Fill ``contacts`` (cleared first) at the given poses.

        Args:
            Rw (nb + 1, 3, 3), pw (nb + 1, 3): the arm's body poses in the
                world (base) frame, the last row the base.
            Rf (nf, 3, 3), pf (nf, 3): the free bodies' orientations and centres [m].
            contacts: a :class:`~.contacts.Contacts`.
        """
        c = contacts
        c.n, c.dropped = detect_planes(self.body, self.kind, self.size, self.R, self.p, self.plane_point,
                                       self.plane_normal, Rw, pw, Rf, pf, c.body_a, c.body_b, c.point, c.normal,
                                       c.depth, c.geom_a, c.geom_b, c.pair, c.feature, c.radius_a, c.radius_b)
