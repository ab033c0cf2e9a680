"""Kinematic loops declared beside the URDF: the closure joints of a spanning tree.

A URDF describes a tree. A closed-loop mechanism (a four-bar, a palletiser's
parallelogram) is that tree -- its spanning tree -- plus closure joints
that the URDF cannot hold (Handbook of Robotics, 2nd ed., sec. 3.6.1: "a
closed-loop system can be modelled as a spanning tree subject to a set of
loop-closure constraints"). Each closure joint is a :class:`Loop`: two
frames, one fixed to a ``parent`` link and one to a ``child`` link, that
the mechanism keeps together:

- ``point``: the two frames' origins coincide (3 constraints, a ball joint);
- ``revolute``: the origins coincide and the z axes stay aligned (5, a hinge
  about the common z axis);
- ``weld``: the frames coincide (6, a rigid joint).

Declared in YAML (a file, its text, or the parsed list of dicts)::

    loops:
      - name: coupler_to_rocker
        kind: revolute          # point | revolute | weld
        parent: coupler         # a link of the URDF tree
        child: rocker           # another link; the loop closes between them
        parent_xyz: [0.30, 0, 0]
        parent_rpy: [0, 0, 0]   # closure frame in the parent link's frame [m, rad]
        child_xyz: [0.25, 0, 0]
        child_rpy: [0, 0, 0]    # closure frame in the child link's frame

This module only reads and checks the declaration against the tree (names,
links, structure); whether the loops can be closed at all needs the
kinematics of the layers above (:mod:`robot_dynamics.constraints`, which
``robot_dynamics.load_urdf`` calls). Every bad declaration is a
:class:`~robot_dynamics.errors.URDFError` that names the loop.
"""
import os
from dataclasses import dataclass

import numpy as np

from ..errors import URDFError
from .spatial import homogeneous, rpy_to_matrix
from .files import read_yaml

#: Constraints each kind of closure joint imposes (rows of its residual and Jacobian).
KINDS = {"point": 3, "revolute": 5, "weld": 6}
KEYS = ("name", "kind", "parent", "child", "parent_xyz", "parent_rpy", "child_xyz", "child_rpy")
MAX_BYTES = 1024 * 1024         # a loops file is a few hundred bytes


@dataclass(frozen=True, eq=False, repr=False)
class Loop:
    """One closure joint between two links of the tree (immutable).

    - ``name``: unique among the model's loops.
    - ``kind``: ``"point"``, ``"revolute"`` or ``"weld"`` (:data:`KINDS`).
    - ``parent``, ``child``: link names; the constraint forces act on
      ``child`` and, opposite, on ``parent``.
    - ``parent_placement`` (4, 4): the closure frame A in the parent link's
      frame; ``child_placement`` (4, 4): frame B in the child link's frame
      (read-only; m).
    """
    name: str
    kind: str
    parent: str
    child: str
    parent_placement: np.ndarray
    child_placement: np.ndarray

    def __repr__(self):
        return "Loop(%r, %s, %s -> %s)" % (self.name, self.kind, self.parent, self.child)

    @property
    def rows(self):
        """Number of constraints: 3 (point), 5 (revolute) or 6 (weld)."""
        return KINDS[self.kind]


def parse_loops(source):
    """Read loop declarations; return a tuple of :class:`Loop` (unchecked against a model).

    Args:
        source: None or ``()`` (no loops); a path to a YAML file (str or
            os.PathLike; a str is YAML text if it holds a newline or starts
            with ``loops:``, ``[`` or ``{``); YAML text; a dict with the key
            ``loops``; or a list whose items are dicts (keys as in the YAML)
            or :class:`Loop`.

    Raises:
        URDFError: unreadable file, bad YAML, unknown key, missing field,
            unknown kind, non-finite or badly shaped placement; the message
            names the loop (or its position in the list).
    """
    if source is None:
        return ()
    if isinstance(source, (str, bytes, os.PathLike)):
        source = read_yaml(source, MAX_BYTES, "loops", _is_text)
    if isinstance(source, dict):
        extra = sorted(set(source) - {"loops"})
        if extra:
            raise URDFError("loops: unknown top-level key(s) %s; expected 'loops: [...]'" % ", ".join(map(str, extra)))
        source = source.get("loops") or []
    if isinstance(source, Loop):
        source = [source]
    if not isinstance(source, (list, tuple)):
        raise URDFError("loops must be a list of loop declarations, got %s" % type(source).__name__)
    return tuple(item if isinstance(item, Loop) else _loop(item, k) for k, item in enumerate(source))


def check_loops(model, loops):
    """Check loop declarations against a model's tree; URDFError naming the loop at fault.

    Refused: two loops of one name; a link the model lacks; a loop between a
    link and itself, or between links of one rigid body (fixed joints or
    both on the base: it would constrain nothing); a loop that spans a
    single tree joint (between a link and the link its parent joint hangs
    from: that joint belongs in the URDF); any loop on a floating or planar
    base (not supported).
    """
    seen = set()
    for loop in loops:
        if not isinstance(loop, Loop):
            raise URDFError("loops must be Loop declarations, got %s" % type(loop).__name__)
        what = "loop %r" % loop.name
        if loop.kind not in KINDS:
            raise URDFError("%s: kind must be one of %s, got %r" % (what, ", ".join(KINDS), loop.kind))
        for side in ("parent_placement", "child_placement"):
            T = np.asarray(getattr(loop, side), dtype=float)
            if T.shape != (4, 4) or not np.all(np.isfinite(T)) or not np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3)):
                raise URDFError("%s: %s must be a finite (4, 4) homogeneous transform" % (what, side))
        if loop.name in seen:
            raise URDFError("%s is declared twice; loop names must be unique" % what)
        seen.add(loop.name)
        if model.root_joint is not None:
            raise URDFError("%s: loops on a %s base are not supported (fixed-base models only)"
                            % (what, model.root_joint))
        for role in ("parent", "child"):
            link = getattr(loop, role)
            if link not in model.link_names:
                raise URDFError("%s: %s link %r is not a link of the URDF (links: %s)"
                                % (what, role, link, ", ".join(model.link_names)))
        if loop.parent == loop.child:
            raise URDFError("%s: parent and child are the same link %r; a loop closes between two links"
                            % (what, loop.parent))
        bp, bc = (int(model.link_body[model.link_index(n)]) for n in (loop.parent, loop.child))
        if bp == bc:
            where = "both fixed to the base" if bp < 0 else "fixed to each other"
            raise URDFError("%s: links %r and %r are %s, so the loop would constrain nothing"
                            % (what, loop.parent, loop.child, where))
        for upper, lower in ((bp, bc), (bc, bp)):
            if lower >= 0 and int(model.parent[lower]) == upper:
                raise URDFError("%s: links %r and %r are connected by the single tree joint %r; "
                                "a loop must close a chain of two or more joints (declare that joint "
                                "in the URDF instead)" % (what, loop.parent, loop.child, model.body_joint[lower]))
    return tuple(loops)


def _is_text(source):
    """A str holding a newline or starting with ``loops:``, ``[`` or ``{`` is YAML text."""
    return "\n" in source or source.lstrip().startswith(("loops:", "[", "{"))


def _loop(item, k):
    if not isinstance(item, dict):
        raise URDFError("loops[%d] must be a mapping with keys %s, got %s" % (k, ", ".join(KEYS), type(item).__name__))
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise URDFError("loops[%d] needs a 'name' (a non-empty string), got %r" % (k, name))
    what = "loop %r" % name
    extra = sorted(set(map(str, item)) - set(KEYS))
    if extra:
        raise URDFError("%s: unknown key(s) %s (known: %s)" % (what, ", ".join(extra), ", ".join(KEYS)))
    for key in ("kind", "parent", "child"):
        if not isinstance(item.get(key), str):
            raise URDFError("%s needs %r (a string), got %r" % (what, key, item.get(key)))
    if item["kind"] not in KINDS:
        raise URDFError("%s: kind must be one of %s, got %r" % (what, ", ".join(KINDS), item["kind"]))
    placements = [_frozen(homogeneous(rpy_to_matrix(_vector(item, side + "_rpy", what)),
                                      _vector(item, side + "_xyz", what))) for side in ("parent", "child")]
    return Loop(name, item["kind"], item["parent"], item["child"], *placements)


def _vector(item, key, what):
    value = item.get(key)
    try:
        v = np.zeros(3) if value is None else np.array(value, dtype=float)
    except (TypeError, ValueError):
        v = None
    if v is None or v.shape != (3,) or not np.all(np.isfinite(v)):
        raise URDFError("%s: %s must be 3 finite numbers, got %r" % (what, key, value))
    return v


def _frozen(a):
    a.setflags(write=False)
    return a
