"""Collision shapes: read from a URDF's ``<collision>`` elements or an MJCF's geoms.

A :class:`Shape` is one primitive or mesh with its placement in its link
frame. Shape frames follow URDF (and MJCF): a box is centred on its origin,
a cylinder and a capsule have their axis along z and their middle at the
origin, a plane is the half-space z <= 0 of its frame (normal +z), a mesh
is in its file's frame times ``scale``.

``size`` by kind (all [m]):

==========  ==================================================================
box         (lx, ly, lz): full edge lengths (URDF ``size``; MJCF's half sizes x 2)
sphere      (r,)
cylinder    (r, length)
capsule     (r, length): the length of the cylinder between the two caps
ellipsoid   (rx, ry, rz): MJCF only
plane       (): the half-space z <= 0 of the shape frame
mesh        (sx, sy, sz): the scale applied to the file's vertices
==========  ==================================================================

URDF capsules: the URDF specification has none; ``<capsule radius length>``
inside ``<geometry>`` (urdfdom's reading of the tag, also what Drake
writes as ``drake:capsule``) is read as such.

Meshes (STL, OBJ, DAE and whatever else Assimp reads) are loaded with
coal's ``MeshLoader`` (Assimp inside) and collide as their convex hull
(qhull, through coal), as MuJoCo and Bullet collide meshes: a link's
collision mesh is a rough convex envelope in every URDF of
example-robot-data, and a hull gives one contact with a well-defined normal
where a triangle soup gives many with ill-defined ones. ``package://PKG/PATH``
is looked up in ``package_dirs`` (``DIR/PKG/PATH``, Pinocchio's rule), then
as :func:`robot_dynamics.bundled.resolve_uri` does (the package's own
files, else the ament index); ``file://`` and plain paths are taken as
they are, relative ones from the URDF's folder.
"""
import os
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from ..errors import URDFError
from ..model.configuration import quaternion_matrix
from ..model.spatial import homogeneous, rpy_to_matrix
from ..model.xml_root import element_tree

KINDS = ("box", "sphere", "cylinder", "capsule", "ellipsoid", "plane", "mesh")
MAX_MESH_BYTES = 64 * 1024 * 1024           # a collision mesh is kilobytes to a few megabytes
MAX_URDF_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Shape:
    """One collision shape (module docstring for the kinds, sizes and frames).

    Attributes:
        kind: one of :data:`KINDS`.
        size: tuple of floats [m] (or the mesh scale), by kind.
        placement: (4, 4) pose of the shape frame in the link frame.
        link: the link it is fixed to; None for the static world.
        name: the collision element's name, else ``link/index``.
        mesh: the mesh file's path (resolved), or None.
        vertices: (V, 3) [m] mesh vertices in the shape frame, scaled, when
            they come from the description (an MJCF's compiled mesh), else None.
    """
    kind: str
    size: Tuple[float, ...]
    placement: np.ndarray = field(default_factory=lambda: np.eye(4), repr=False)
    link: Optional[str] = None
    name: str = ""
    mesh: Optional[str] = None
    vertices: Optional[np.ndarray] = field(default=None, repr=False)


def placed(shape, placement):
    """``shape`` with ``placement`` ((4, 4), link frame) instead of its own."""
    return Shape(shape.kind, shape.size, np.asarray(placement, dtype=float), shape.link, shape.name,
                 shape.mesh, shape.vertices)


# --- URDF ------------------------------------------------------------------------------------

def shapes_from_urdf(source, *, package_dirs=(), element="collision"):
    """The collision shapes of a URDF, in document order.

    Args:
        source: a URDF file path or the URDF text (str or bytes).
        package_dirs: folders where ``package://PKG/PATH`` is ``DIR/PKG/PATH``.
        element: ``"collision"``, or ``"visual"`` for a URDF whose visuals
            are meant as its collision geometry (the bundled arms ship
            primitive visuals and no collision element).

    Returns:
        list of :class:`Shape`, each with its link and its placement in the link frame.

    Raises:
        URDFError: a geometry that is missing, unknown or has a bad size,
            or a mesh that cannot be found or read, naming the link.
    """
    if element not in ("collision", "visual"):
        raise URDFError("element must be 'collision' or 'visual', got %r" % (element,))
    text, folder = _urdf_text(source)
    robot = element_tree(text, max_bytes=MAX_URDF_BYTES)
    if robot.tag != "robot":
        raise URDFError("URDF root element must be <robot>, got <%s>" % robot.tag)
    shapes = []
    for link in robot.children:
        if link.tag != "link":
            continue
        name = link.attrib.get("name", "")
        for k, col in enumerate(c for c in link.children if c.tag == element):
            what = "link %r <%s> %d" % (name, element, k)
            shape = _urdf_geometry(col, what, folder, package_dirs)
            shapes.append(Shape(shape.kind, shape.size, _urdf_origin(col, what), name,
                                col.attrib.get("name") or "%s/%d" % (name, k), shape.mesh))
    return shapes


def _urdf_text(source):
    """(the URDF's bytes, its folder or None)."""
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), None
    text = os.fspath(source)
    if text.lstrip().startswith("<"):
        return text.encode("utf-8"), None
    try:
        with open(text, "rb") as f:
            data = f.read(MAX_URDF_BYTES + 1)
    except OSError as exc:
        raise URDFError("cannot read URDF file %r: %s" % (text, exc.strerror or exc)) from None
    return data, os.path.dirname(os.path.abspath(text))


def _urdf_origin(parent, what):
    origin = next((c for c in parent.children if c.tag == "origin"), None)
    attrib = origin.attrib if origin is not None else {}
    xyz = _numbers(attrib.get("xyz", "0 0 0"), 3, what + " origin xyz")
    rpy = _numbers(attrib.get("rpy", "0 0 0"), 3, what + " origin rpy")
    return homogeneous(rpy_to_matrix(rpy), xyz)


def _urdf_geometry(parent, what, folder, package_dirs):
    geometry = next((c for c in parent.children if c.tag == "geometry"), None)
    shapes = [] if geometry is None else geometry.children
    if len(shapes) != 1:
        raise URDFError("%s: expected one shape in <geometry>, got %s"
                        % (what, "none" if not shapes else ", ".join("<%s>" % s.tag for s in shapes)))
    g, a = shapes[0], shapes[0].attrib
    tag = g.tag.rpartition(":")[2]                     # drake:capsule is a capsule
    if tag == "box":
        return Shape("box", _positive(_numbers(a.get("size"), 3, what + " box size"), what + " box size"))
    if tag == "sphere":
        return Shape("sphere", _positive(_numbers(a.get("radius"), 1, what + " sphere radius"), what))
    if tag in ("cylinder", "capsule"):
        r = _numbers(a.get("radius"), 1, "%s %s radius" % (what, tag))
        length = _numbers(a.get("length"), 1, "%s %s length" % (what, tag))
        return Shape(tag, _positive(np.concatenate([r, length]), "%s %s radius and length" % (what, tag)))
    if tag == "mesh":
        scale = _positive(_numbers(a.get("scale", "1 1 1"), 3, what + " mesh scale"), what + " mesh scale")
        return Shape("mesh", scale, mesh=resolve_mesh(a.get("filename"), folder, package_dirs, what))
    raise URDFError("%s: unknown geometry <%s>; expected box, sphere, cylinder, capsule or mesh" % (what, g.tag))


def _numbers(text, n, what):
    if text is None:
        raise URDFError("%s: missing" % what)
    try:
        v = np.array([float(t) for t in text.split()])
    except ValueError:
        raise URDFError("%s must be %d numbers, got %r" % (what, n, text)) from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise URDFError("%s must be %d finite numbers, got %r" % (what, n, text))
    return v


def _positive(v, what):
    if not np.all(v > 0):
        raise URDFError("%s must be positive, got %s" % (what, " ".join("%g" % x for x in v)))
    return tuple(float(x) for x in v)


def resolve_mesh(filename, folder=None, package_dirs=(), what="mesh"):
    """The path of a mesh ``filename`` as a URDF writes it (module docstring).

    Raises:
        URDFError: no filename, or no file found, naming ``what`` and where it was looked for.
    """
    if not filename:
        raise URDFError("%s: <mesh> has no filename" % what)
    looked = []
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        looked = [os.path.join(os.fspath(d), package, rest) for d in package_dirs]
        path = next((p for p in looked if os.path.isfile(p)), None)
        if path is None:
            from ..bundled import resolve_uri
            try:
                path = resolve_uri(filename)
            except FileNotFoundError as exc:
                looked.append(str(exc))
    elif filename.startswith("file://"):
        path = filename[len("file://"):]
    else:
        path = filename if os.path.isabs(filename) or folder is None else os.path.join(folder, filename)
    if path is None or not os.path.isfile(path):
        raise URDFError("%s: mesh %r not found (looked in: %s); give package_dirs=[...] with the folder "
                        "holding the package" % (what, filename, "; ".join(looked or [str(path)])))
    return path


# --- MJCF ------------------------------------------------------------------------------------

MJ_KINDS = {"plane": "plane", "sphere": "sphere", "capsule": "capsule", "ellipsoid": "ellipsoid",
            "cylinder": "cylinder", "box": "box", "mesh": "mesh"}


def shapes_from_mjcf(source, *, skip_missing_meshes=False):
    """The colliding geoms of an MJCF (those with a nonzero contype or
    conaffinity), read from the model MuJoCo compiles (defaults, includes,
    mesh frames as MuJoCo sets them).

    Args:
        source: an MJCF file path or text, as :func:`robot_dynamics.load_mjcf`
            takes it, or a compiled ``mujoco.MjModel``.

    Returns:
        list of :class:`Shape`: ``link`` is the geom's body name (a link of
        ``rd.load_mjcf``'s model), None for geoms of the world body (the
        static world); a mesh's ``vertices`` are MuJoCo's, in the geom frame.

    Raises:
        URDFError: as ``rd.load_mjcf``; a geom type this package does not
            collide (hfield, sdf), naming the geom.
    """
    import mujoco
    from ..model.mjcf import compiled_mjcf
    m = source if isinstance(source, mujoco.MjModel) else compiled_mjcf(
        source, skip_missing_meshes=skip_missing_meshes)
    types = {int(getattr(mujoco.mjtGeom, "mjGEOM_" + k.upper())): k for k in MJ_KINDS}
    shapes = []
    for g in range(m.ngeom):
        if m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0:
            continue
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or "geom%d" % g
        kind = types.get(int(m.geom_type[g]))
        if kind is None:
            raise URDFError("MJCF geom %r: type %d is not a collision shape of this package "
                            "(expected one of %s)" % (name, m.geom_type[g], ", ".join(MJ_KINDS)))
        b = int(m.geom_bodyid[g])
        link = None if b == 0 else mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or "body%d" % b   # as rd.load_mjcf
        w, x, y, z = m.geom_quat[g] / np.linalg.norm(m.geom_quat[g])      # MuJoCo's order: w first
        placement = homogeneous(quaternion_matrix(np.array([x, y, z, w])), m.geom_pos[g])
        size, vertices = _mj_size(m, g, kind)
        shapes.append(Shape(kind, size, placement, link, name, None, vertices))
    return shapes


def _mj_size(m, g, kind):
    s = m.geom_size[g]
    if kind == "box":
        return tuple(2.0 * float(x) for x in s), None
    if kind in ("cylinder", "capsule"):
        return (float(s[0]), 2.0 * float(s[1])), None
    if kind == "sphere":
        return (float(s[0]),), None
    if kind == "ellipsoid":
        return tuple(float(x) for x in s), None
    if kind == "plane":
        return (), None
    k = int(m.geom_dataid[g])
    start, count = int(m.mesh_vertadr[k]), int(m.mesh_vertnum[k])
    return (1.0, 1.0, 1.0), np.array(m.mesh_vert[start:start + count], dtype=float)


# --- coal ------------------------------------------------------------------------------------

def coal_geometry(shape):
    """The coal collision geometry of ``shape`` (a mesh: its convex hull).

    Raises:
        URDFError: a mesh file that coal cannot read, or too large, naming the shape.
    """
    import coal
    kind, s = shape.kind, shape.size
    if kind == "box":
        return coal.Box(*s)
    if kind == "sphere":
        return coal.Sphere(s[0])
    if kind == "cylinder":
        return coal.Cylinder(s[0], s[1])
    if kind == "capsule":
        return coal.Capsule(s[0], s[1])
    if kind == "ellipsoid":
        return coal.Ellipsoid(*s)
    if kind == "plane":
        return coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    if kind == "mesh":
        return _hull(coal, shape)
    raise URDFError("shape %r: unknown kind %r; expected one of %s" % (shape.name, kind, ", ".join(KINDS)))


def _hull(coal, shape):
    if shape.vertices is not None:
        model = coal.BVHModelOBBRSS()
        model.beginModel(0, len(shape.vertices))
        model.addVertices(np.ascontiguousarray(shape.vertices, dtype=float))
        model.endModel()
    else:
        size = os.path.getsize(shape.mesh)
        if size > MAX_MESH_BYTES:
            raise URDFError("shape %r: mesh %r has %d bytes, more than %d" % (shape.name, shape.mesh, size,
                                                                               MAX_MESH_BYTES))
        try:
            model = coal.MeshLoader().load(shape.mesh, np.array(shape.size, dtype=float))
        except Exception as exc:                      # coal raises its own RuntimeError-like types
            raise URDFError("shape %r: coal cannot read mesh %r: %s" % (shape.name, shape.mesh, exc)) from None
    if model.num_vertices < 4:
        raise URDFError("shape %r: mesh has %d vertices, a convex hull needs at least 4"
                        % (shape.name, model.num_vertices))
    model.buildConvexHull(False, "Qt")
    return model.convex


def local_aabb(shape, geometry):
    """(centre (3,), half extents (3,)) [m] of the shape's axis-aligned box in
    its own frame, from coal's local AABB; a plane's half extents are inf.
    ``geometry`` is its :func:`coal_geometry`."""
    if shape.kind == "plane":
        return np.zeros(3), np.full(3, np.inf)
    geometry.computeLocalAABB()
    lo, hi = np.asarray(geometry.aabb_local.min_, dtype=float), np.asarray(geometry.aabb_local.max_, dtype=float)
    return 0.5 * (lo + hi), 0.5 * (hi - lo)
