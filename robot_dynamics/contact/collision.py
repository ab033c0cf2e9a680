"""The collision model: every shape on its body, and the shape pairs that may touch.

Built once from a :class:`~robot_dynamics.Model`, its shapes
(:mod:`.geometry`), a world (:mod:`.world`) and optionally an SRDF, then
read by :mod:`.detect` at every step; per-step work never walks names.

Shapes are numbered robot first (as given), then the world's static
shapes, then each free body's shape. Bodies follow
:mod:`.contacts`: ``0..nb-1`` the model's bodies, ``nb + k`` free body k,
``-1`` the static world, to which the robot's base links (fixed to the
world) also belong.

Pair filtering, the way URDF users expect (MoveIt's rules):

- two shapes on one body never collide (links joined by fixed joints are
  one body);
- adjacent bodies never collide: a body and its parent body, the base
  links counting as the parent of the bodies they carry;
- two static shapes never collide (base links, ground, static boxes);
- an SRDF's ``<disable_collisions link1 link2>`` removes that link pair,
  ``<disable_default_collisions link>`` every pair of that link, and
  ``<enable_collisions link1 link2>`` puts a pair back; links the model
  lacks are warned about and skipped (a MoveIt SRDF often names the hand
  of a URDF without it).

The SRDF is read with expat (:func:`robot_dynamics.model.xml_root.element_tree`),
never with a regular expression.
"""
import os
import warnings

import numpy as np

from ..errors import InputError, URDFError, URDFWarning
from ..model.xml_root import element_tree
from .geometry import coal_geometry, local_aabb

STATIC = -1          # body of the static world in Contacts
MAX_SRDF_BYTES = 16 * 1024 * 1024


class CollisionModel:
    """Shapes on bodies and the pairs to test (module docstring), built once.

    Args:
        model: the robot's :class:`~robot_dynamics.Model`.
        shapes: the robot's shapes (:func:`.geometry.shapes_from_urdf` or
            ``shapes_from_mjcf``); a shape whose link is None is static world.
        world: a :class:`.world.World` (static shapes and free bodies), or None.
        srdf: an SRDF file path or text, or None.

    Attributes (S shapes, P pairs, nf free bodies):
        shapes: tuple of S :class:`.geometry.Shape`; ``geometries``: their coal geometries.
        nb, nf: the model's bodies, the world's free bodies.
        shape_body (S,) int: body index as in :class:`.contacts.Contacts`.
        shape_link (S,) int: the link index in ``model.link_names``, -1 if not a robot link.
        shape_free (S,) int: the free body index, -1 if not on a free body.
        placement (S, 4, 4): shape frame in its link / free-body / world frame.
        body_placement (S, 4, 4): shape frame in its body frame (robot shapes:
            ``link_placement @ placement``; on the base, body -1, that is
            the world frame); the others as ``placement``.
        centre (S, 3) [m], half (S, 3) [m]: the axis-aligned bounding box in the
            shape frame, centre and half extents (inf for a plane).
        pair_a, pair_b (P,) int: shape indices; static shapes are in pair_b.
    """

    def __init__(self, model, shapes, world=None, srdf=None):
        if model.root_joint is not None:
            raise InputError("contact detection takes a fixed-base model; this one has a %r root joint"
                             % model.root_joint)
        static = list(world.static_shapes) if world is not None else []
        free = list(world.free_bodies) if world is not None else []
        self.nb, self.nf = int(model.nb), len(free)
        robot = [s for s in shapes if s.link is not None]
        static = [s for s in shapes if s.link is None] + static
        self.shapes = tuple(robot + static + [f.shape for f in free])
        self.names = tuple(s.name for s in self.shapes)
        S = len(self.shapes)
        self.shape_link = np.full(S, -1, dtype=np.int64)
        self.shape_free = np.full(S, -1, dtype=np.int64)
        self.shape_body = np.full(S, STATIC, dtype=np.int64)
        for i, s in enumerate(robot):
            l = model.link_index(s.link)
            self.shape_link[i] = l
            self.shape_body[i] = model.link_body[l]
        for k in range(self.nf):
            i = len(robot) + len(static) + k
            self.shape_free[i], self.shape_body[i] = k, self.nb + k
        self.placement = np.array([s.placement for s in self.shapes]).reshape(S, 4, 4)
        self.body_placement = self.placement.copy()
        for i in range(len(robot)):
            self.body_placement[i] = model.link_placement[self.shape_link[i]] @ self.placement[i]
        self.geometries = [coal_geometry(s) for s in self.shapes]
        self.centre, self.half = np.zeros((S, 3)), np.zeros((S, 3))
        for i, (s, g) in enumerate(zip(self.shapes, self.geometries)):
            self.centre[i], self.half[i] = local_aabb(s, g)
        self.is_plane = np.array([s.kind == "plane" for s in self.shapes], dtype=bool)
        disabled = disabled_pairs(srdf, model.link_names) if srdf is not None else set()
        self.pair_a, self.pair_b = self._pairs(model, len(robot), disabled)

    def _pairs(self, model, n_robot, disabled):
        parent = np.asarray(model.parent)
        pairs = []
        for i in range(len(self.shapes)):
            for j in range(i + 1, len(self.shapes)):
                if self._excluded(i, j, n_robot, parent, disabled, model.link_names):
                    continue
                a, b = (j, i) if self.shape_body[i] == STATIC else (i, j)
                if self.is_plane[a]:
                    raise URDFError("plane %r is on a moving body; a plane is static world only" % self.names[a])
                pairs.append((a, b))
        p = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        return p[:, 0].copy(), p[:, 1].copy()

    def _excluded(self, i, j, n_robot, parent, disabled, link_names):
        bi, bj = self.shape_body[i], self.shape_body[j]
        if bi == bj:                                        # one body, or both static
            return True
        if i < n_robot and j < n_robot:
            if (bi >= 0 and parent[bi] == bj) or (bj >= 0 and parent[bj] == bi):
                return True                                 # adjacent (the base is the parent of its children)
            li, lj = link_names[self.shape_link[i]], link_names[self.shape_link[j]]
            return frozenset((li, lj)) in disabled
        return False

    @property
    def npairs(self):
        return len(self.pair_a)

    def __repr__(self):
        return "CollisionModel(%d shapes, %d pairs, nb=%d, nf=%d)" % (len(self.shapes), self.npairs, self.nb,
                                                                       self.nf)


def disabled_pairs(srdf, link_names):
    """The link pairs an SRDF disables, as a set of frozensets of two link names.

    Args:
        srdf: an SRDF file path or its text (str or bytes).
        link_names: the model's links; pairs naming other links are warned about and dropped.

    Raises:
        URDFError: unreadable or malformed XML, a root that is not <robot>,
            an element without its link attributes (named).
    """
    root = element_tree(_srdf_text(srdf), max_bytes=MAX_SRDF_BYTES)
    if root.tag != "robot":
        raise URDFError("SRDF root element must be <robot>, got <%s>" % root.tag)
    known = set(link_names)
    unknown, disabled, enabled, default_off = set(), set(), set(), set()
    for e in root.children:
        if e.tag in ("disable_collisions", "enable_collisions"):
            links = _links(e, ("link1", "link2"))
            (disabled if e.tag == "disable_collisions" else enabled).add(frozenset(links))
        elif e.tag == "disable_default_collisions":
            links = _links(e, ("link",))
            default_off.add(links[0])
        else:
            continue
        unknown.update(l for l in links if l not in known)
    if unknown:
        warnings.warn("SRDF: links not in the model, their entries skipped: %s" % ", ".join(sorted(unknown)),
                      URDFWarning, stacklevel=3)
    for link in default_off & known:
        disabled.update(frozenset((link, other)) for other in known if other != link)
    return {p for p in disabled - enabled if p <= known}


def _links(element, keys):
    missing = [k for k in keys if not element.attrib.get(k)]
    if missing:
        raise URDFError("SRDF <%s %s>: expected the attribute(s) %s" % (
            element.tag, " ".join('%s="%s"' % kv for kv in element.attrib.items()), ", ".join(missing)))
    return [element.attrib[k] for k in keys]


def _srdf_text(srdf):
    if isinstance(srdf, (bytes, bytearray)):
        return bytes(srdf)
    text = os.fspath(srdf)
    if text.lstrip().startswith("<"):
        return text
    try:
        with open(text, "rb") as f:
            return f.read(MAX_SRDF_BYTES + 1)
    except OSError as exc:
        raise URDFError("cannot read SRDF file %r: %s" % (text, exc.strerror or exc)) from None
