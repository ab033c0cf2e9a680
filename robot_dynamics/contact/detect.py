"""The narrow phase: shape poses in, a :class:`.contacts.Contacts` record out.

Collision library: coal (the successor of hpp-fcl, Pinocchio's collision
library, a separate package: ``import coal`` loads no Pinocchio), chosen
over python-fcl because

- it is maintained (coal 3.0, 2024-2026 releases; python-fcl wraps FCL
  0.7, whose last release is 2022) and gives what a contact model needs:
  the signed penetration depth, the normal and nearest points of every
  primitive pair (closed-form sphere, box, capsule and half-space pairs,
  GJK/EPA for the rest) and contact patches (the polygon of a face
  pressed on a face: a flat box on a plane gives its 4 corners);
- it is faster from Python: measured on this machine (2 cores shared,
  load 5; bench figures below are per query with its contact read back),
  sphere-half-space 5.9 us (python-fcl 0.7.0.11: 8.3 us), box-half-space
  4.9 us (7.8 us), sphere-sphere 2.9 us (5.6 us), same depth, normal and
  point; python-fcl has no contact patches and reports the depth with the
  other sign convention;
- wheels exist on PyPI for CPython 3.10-3.13 on Linux and macOS (the
  cmeel build, as Pinocchio's ``pin``, already a test dependency), and
  ROS 2 Jazzy releases it (rosdep key ``coal``, 3.0.3); python-fcl is
  pip-only in rosdep (``python-fcl-pip``).

Broad phase: each shape's axis-aligned box in its own frame (coal's local
AABB) turned into a world box with its pose (centre R c + p, half extents
|R| h), the pairs' boxes compared in one compiled pass
(``algorithms/detect_kernels.candidate_pairs``); a box against a plane by
the height of its lowest corner. Only overlapping pairs reach the narrow
phase.

Narrow phase: a sphere, capsule or box on a plane in closed form
(:mod:`.plane`: one contact per penetrating corner or end, each with its
depth; ``feature`` = the corner or end); two boxes face on (coal's normal
within 10 mrad of a face normal) as MuJoCo's box-box, the vertices of the
polygon where the faces meet, each with its depth
(:func:`.plane.box_on_face`). The plane closed forms and the common box-on-face
case (a box resting inside a face) run compiled (``algorithms/detect_kernels``,
into preallocated arrays; :mod:`.plane`'s functions are their reference, equal to
1e-12 in test/test_contact_kernels.py); a box partly over a face's edge is clipped
by :mod:`.plane` in numpy. Every other pair goes to coal:
``collide``, then its contact patch (``computeContactPatch``: the polygon
of a face pressed on a face, a cylinder's rim sampled at :data:`SAMPLES`
points); each patch point is one row of Contacts, the midpoint of the two
shapes' points, depth their distance along the normal, normal from b
towards a (coal's runs from its first object to its second, here a to b:
it is negated); ``feature`` = the point's index in the patch. A pair with
no patch gives coal's one contact (``feature`` 0). Each row carries its
surfaces' radii of curvature (:func:`pair_radii`, :func:`face_radii`), which
say how the dynamics moves its point within a step.
"""
import numpy as np

from ..algorithms import detect_kernels as kernels
from ..algorithms.dispatch import route
from ..algorithms.kinematics import FORWARD_KINEMATICS
from ..errors import InputError
from . import plane
from .collision import STATIC
from .contacts import Contacts

SAMPLES = 6            # points on a curved edge in a patch (a cylinder rim on a face; coal default 12)
ROUND = ("sphere", "capsule", "ellipsoid")               # one-point contacts, never a face
CORNER_ON_FACE = (0.0, np.inf)                           # radii of curvature of a corner on a face


def link_poses(model, q, out=None):
    """(nl, 4, 4) pose of every link in the base (world) frame at q (nq,): the
    library's forward kinematics, written into ``out`` when given."""
    nl = len(model.link_names)
    return route(FORWARD_KINEMATICS, model, (q,), out=out, tail=(nl, 4, 4),
                 extra=(model.link_body, model.link_pose_rows))


def body_poses(model, q):
    """(nb, 4, 4) pose of every body frame in the base (world) frame at q (nq,):
    the pose of the link each body's joint moves (its link placement is the identity)."""
    return link_poses(model, q)[model.body_link] @ np.linalg.inv(model.link_placement[model.body_link])


def pair_radii(collision):
    """(P, 2) each pair's radii of curvature [m] at its contacts (:class:`.contacts.Contacts`):
    a sphere's or a capsule's r on its side (any point of its surface has its centre or axis r
    inside along the normal); a plane flat (inf), and so the other side when it is not round (a
    box face or a mesh face under a round shape); 0 on both where neither is round nor a plane (a
    corner, an edge, a patch of faces: the point midway). The closed forms of a box on a face set
    their rows' own (a corner 0, the face inf)."""
    c = collision
    radius = np.array([s.size[0] if s.kind in ("sphere", "capsule") else 0.0 for s in c.shapes], dtype=float)
    round_ = radius > 0.0
    out = np.zeros((len(c.pair_a), 2))
    for col, side, other in ((0, c.pair_a, c.pair_b), (1, c.pair_b, c.pair_a)):
        flat = c.is_plane[side] | (round_[other] & ~round_[side])
        out[:, col] = np.where(round_[side], radius[side], np.where(flat, np.inf, 0.0))
    return out


def face_radii(features):
    """(top's, base's) radii of curvature (k,) [m] of a box's rows on another box's face
    (:func:`.plane.box_on_face`'s features): the top's corner on the face (0..7) 0 and inf,
    the base face's corner under the top's face (8..15) inf and 0, an edge crossing (16..) 0 and 0."""
    features = np.asarray(features)
    top = np.where((features >= 8) & (features < 16), np.inf, 0.0)
    base = np.where(features < 8, np.inf, 0.0)
    return top, base


class Detector:
    """Contact detection on a :class:`.collision.CollisionModel`, with its work arrays.

    Args:
        collision: the CollisionModel.
        capacity: rows of the Contacts record it fills (and reuses).
        margin: [m] >= 0 added to every bounding box in the broad phase.
    """

    def __init__(self, collision, capacity=256, margin=0.0):
        if not np.isfinite(margin) or margin < 0:
            raise InputError("margin must be a finite length >= 0 [m], got %r" % (margin,))
        self.collision = c = collision
        self.contacts = Contacts(capacity)
        self.nf = c.nf
        S = len(c.shapes)
        self._robot = np.flatnonzero((c.shape_body >= 0) & (c.shape_free < 0))
        self._free = np.flatnonzero(c.shape_free >= 0)
        self._moving_shapes = np.concatenate([self._robot, self._free])
        self._pose = np.array(c.body_placement)             # world <- shape (static ones: fixed here)
        self._frame = np.tile(np.eye(4), (S, 1, 1))         # world <- body / free body
        self._broad_phase_tables(c, margin)
        self._narrow_phase_tables(c)

    def _broad_phase_tables(self, c, margin):
        """The pairs split into box-box and box-plane tests, and the planes' fixed normals and offsets."""
        self._half = np.where(c.is_plane[:, None], 0.0, c.half + margin)   # a plane is only tested as a plane
        on_plane = c.is_plane[c.pair_b]
        self._box_pairs = np.flatnonzero(~on_plane)         # broad phase: box against box
        self._plane_pairs = np.flatnonzero(on_plane)        # box against plane
        self._box_a, self._box_b = c.pair_a[self._box_pairs], c.pair_b[self._box_pairs]
        self._plane_a = c.pair_a[self._plane_pairs]
        plane_shapes = np.flatnonzero(c.is_plane)                          # static: their frames are fixed
        self._plane_k = np.searchsorted(plane_shapes, c.pair_b[self._plane_pairs])
        frames = c.body_placement[plane_shapes]
        self._planes_n = frames[:, :3, 2].copy()                            # (planes, 3) normals
        self._planes_d = np.einsum("ki,ki->k", self._planes_n, frames[:, :3, 3])   # offsets n . origin
        kinds = [c.shapes[a].kind for a in c.pair_a]
        self._closed = on_plane & np.array([k in plane.KINDS for k in kinds], dtype=bool)
        self._centre = np.ascontiguousarray(c.centre, dtype=float)
        self._world = np.empty((len(c.shapes), 6))                         # scratch: world boxes
        self._candidates = np.empty(len(c.pair_a), dtype=np.int64)
        codes = {"sphere": kernels.SPHERE, "capsule": kernels.CAPSULE, "box": kernels.BOX}
        self._kind = np.array([codes.get(s.kind, -1) for s in c.shapes], dtype=np.int64)
        self._size = np.zeros((len(c.shapes), 3))                           # full edges; [r, length]
        for i, shape in enumerate(c.shapes):
            if shape.kind in codes:
                self._size[i, :len(shape.size)] = shape.size
        self._rows = (np.empty((32, 3)), np.empty(32), np.empty(32, dtype=np.int64), np.empty(3))   # a pair's rows
        self._scratch = np.empty((8, 4))

    def _narrow_phase_tables(self, c):
        """Which pairs give one point, coal's transforms (static ones set once) and its request objects."""
        import coal
        round_ = np.array([s.kind in ROUND for s in c.shapes], dtype=bool)
        capsule = np.array([s.kind == "capsule" for s in c.shapes], dtype=bool)
        self._point_pair = (round_[c.pair_a] & round_[c.pair_b]) | (round_[c.pair_a] & ~capsule[c.pair_a]) \
            | (round_[c.pair_b] & ~capsule[c.pair_b])          # one point: a sphere, an ellipsoid, two capsules
        box = np.array([s.kind == "box" for s in c.shapes], dtype=bool)
        self._box_box = box[c.pair_a] & box[c.pair_b]
        self._radii = [tuple(r) for r in pair_radii(c).tolist()]          # per pair (r_a, r_b), floats
        self._coal = coal
        self._tf = [coal.Transform3s() for _ in c.shapes]
        for tf, T in zip(self._tf, self._pose):
            tf.setTransform(T[:3, :3], T[:3, 3])
        self._moving = c.shape_body != STATIC
        self._set = np.zeros(len(c.shapes), dtype=bool)
        self._request = coal.CollisionRequest()
        self._request.enable_contact = True
        self._result = coal.CollisionResult()
        self._patch_request = coal.ContactPatchRequest(1, SAMPLES)      # one patch a pair
        self._patch = coal.ContactPatchResult(self._patch_request)

    def shape_poses(self, body_poses, free_poses=None):
        """(S, 4, 4) world <- shape of every shape, from (nb, 4, 4) body poses and
        (nf, 4, 4) free-body poses (world <- body); kept for :meth:`detect`."""
        c, m = self.collision, self._moving_shapes
        if len(self._robot):
            self._frame[self._robot] = body_poses[c.shape_body[self._robot]]
        if len(self._free):
            self._frame[self._free] = free_poses[c.shape_free[self._free]]
        self._pose[m] = self._frame[m] @ c.body_placement[m]
        return self._pose

    def candidates(self):
        """Indices of the pairs whose world bounding boxes overlap (broad phase), at the last shape_poses."""
        n = kernels.candidate_pairs(self._pose, self._centre, self._half, self._box_pairs, self._box_a,
                                    self._box_b, self._plane_pairs, self._plane_a, self._plane_k, self._planes_n,
                                    self._planes_d, self._world, self._candidates)
        return self._candidates[:n]

    def detect(self, body_poses, free_poses=None):
        """The contacts at the given poses.

        Args:
            body_poses: (nb, 4, 4) world <- body of the model's bodies
                (:func:`body_poses`; the simulator's own forward kinematics).
            free_poses: (nf, 4, 4) world <- body of the world's free bodies (None if nf = 0).

        Returns:
            this detector's :class:`.contacts.Contacts` (overwritten at the next call).
        """
        c = self.collision
        if np.shape(body_poses) != (c.nb, 4, 4):
            raise InputError("body_poses must be (%d, 4, 4) world <- body poses, got %s"
                             % (c.nb, np.shape(body_poses)))
        if self.nf and (free_poses is None or np.shape(free_poses) != (self.nf, 4, 4)):
            raise InputError("free_poses must be (%d, 4, 4) world <- body poses, got %s"
                             % (self.nf, None if free_poses is None else np.shape(free_poses)))
        self.shape_poses(body_poses, free_poses)
        if not np.isfinite(self._pose[self._moving_shapes]).all():
            raise InputError("body_poses and free_poses must be finite; got a non-finite %s"
                             % ("body pose" if not np.isfinite(body_poses).all() else "free-body pose"))
        self.contacts.clear()
        self._set[:] = False
        for p in self.candidates():
            p = int(p)
            if self._closed[p]:
                self._plane(p)
            else:
                self._pair(p)
        return self.contacts

    def _pair(self, p):
        c = self.collision
        a, b = int(c.pair_a[p]), int(c.pair_b[p])
        if not self._collide(a, b):
            return
        if self._box_box[p] and self._box_face(p, a, b):
            return
        patch = None if self._point_pair[p] else self._patch_points(a, b)
        r_a, r_b = self._radii[p]
        if patch is None:                                   # one point: coal's contact
            contact = self._result.getContacts()[0]
            self.contacts.add(c.shape_body[a], c.shape_body[b], contact.pos, -np.asarray(contact.normal),
                              max(-contact.penetration_depth, 0.0), a, b, p, 0, r_a, r_b)
            return
        n, points, depth = patch
        self.contacts.add_rows(c.shape_body[a], c.shape_body[b], points, n, np.full(len(points), depth), a, b, p,
                               np.arange(len(points)), r_a, r_b)

    def _box_face(self, p, a, b):
        """Two boxes face on (:func:`.plane.box_on_face`): their sunk corners, True; else False."""
        c = self.collision
        n = -np.asarray(self._result.getContacts()[0].normal)            # b towards a
        for top, base, sign in ((a, b, 1.0), (b, a, -1.0)):               # b the base, else a
            k, (top_r, base_r) = self._face_on_face(top, base, sign * n)
            if k:
                points, depths, features, f = self._rows
                r_a, r_b = (top_r, base_r) if sign > 0 else (base_r, top_r)
                self.contacts.add_rows(c.shape_body[a], c.shape_body[b], points[:k], sign * f, depths[:k], a, b, p,
                                       features[:k], r_a, r_b)
                return True
        return False

    def _face_on_face(self, top, base, normal):
        """The rows (in self._rows) of box ``top`` sunk into the face of box ``base`` facing along ``normal``:
        their count (0: none, or not face on) and (top's, base's) radii of curvature (:func:`face_radii`);
        compiled (the top's corners: 0 and inf), or :mod:`.plane` when the top overhangs the face."""
        T, size, (points, depths, features, f) = self._pose, self._size, self._rows
        status, k = kernels.corners_over_face(T[top], size[top], T[base], size[base], normal, self._scratch,
                                              points, depths, features, f)
        if status != kernels.GENERAL:
            return k, CORNER_ON_FACE
        found = plane._face_on_face((T[top], size[top]), (T[base], size[base]), normal)
        if found is None:
            return 0, CORNER_ON_FACE
        k = min(len(found[2]), len(depths))
        points[:k], f[:], depths[:k], features[:k] = found[0][:k], found[1], found[2][:k], found[3][:k]
        return k, face_radii(features[:k])

    def _collide(self, a, b):
        self._result.clear()
        c = self.collision
        return self._coal.collide(c.geometries[a], self._transform(a), c.geometries[b], self._transform(b),
                                  self._request, self._result)

    def _patch_points(self, a, b):
        """(normal b -> a, (k, 3) points midway, depth [m]) of the pair's contact
        patch (coal gives its points one depth, the pair's), or None.

        coal 3.0.3 gives a one-point patch for a cylinder (or hull) pressed
        flat on a box when the cylinder is its first object and the whole face
        when the box is: a one-point patch of two shapes that can have faces
        is computed again with the two swapped, and the larger one kept."""
        patch = self._patch_of(a, b)
        if patch is not None and len(patch[1]) == 1 and self._collide(b, a):
            swapped = self._patch_of(b, a)
            if swapped is not None and len(swapped[1]) > 1:
                return -swapped[0], swapped[1], swapped[2]
        return patch

    def _patch_of(self, a, b):
        c = self.collision
        self._patch.clear()
        self._coal.computeContactPatch(c.geometries[a], self._tf[a], c.geometries[b], self._tf[b], self._result,
                                       self._patch_request, self._patch)
        if not self._patch.numContactPatches():
            return None
        patch = self._patch.getContactPatch(0)
        points = np.array([patch.getPoint(i) for i in range(patch.size())])
        # coal's normal runs from a to b; its depth is signed (negative when the shapes overlap)
        return -np.asarray(patch.getNormal()), points, max(-patch.penetration_depth, 0.0)

    def _plane(self, p):
        c = self.collision
        a, b = int(c.pair_a[p]), int(c.pair_b[p])
        points, depths, features, n = self._rows
        k = kernels.plane_contacts(self._kind[a], self._size[a], self._pose[a], self._pose[b], points, depths,
                                   features, n)
        if k:
            self.contacts.add_rows(c.shape_body[a], c.shape_body[b], points[:k], n, depths[:k], a, b, p,
                                   features[:k], *self._radii[p])

    def _transform(self, s):
        tf = self._tf[s]
        if self._moving[s] and not self._set[s]:
            tf.setTransform(self._pose[s, :3, :3], self._pose[s, :3, 3])
            self._set[s] = True
        return tf
