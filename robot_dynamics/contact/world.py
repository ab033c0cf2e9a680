"""The world file: a ground plane, static boxes and free bodies around the robot, in YAML.

Why YAML rather than SDF or MJCF world bodies: it is what ROS users write
in a package's ``config/`` next to the nodes' parameter files, it is read
with ``yaml.safe_load`` (:func:`robot_dynamics.model.files.read_yaml`: no
SDF parser to depend on, no XML), and a world of a table and three boxes
is ten lines. An MJCF's world-body geoms are read too, as static shapes
(:func:`.geometry.shapes_from_mjcf`).

Format (lengths [m], angles [rad], mass [kg], inertia [kg m^2]; poses in
the world frame, which is the robot's base frame)::

    ground: {height: 0.0}          # optional: the half-space z <= height
    static:                        # optional list
      - name: table
        shape: box                 # box | sphere | cylinder | capsule
        size: [0.8, 1.2, 0.04]     # box: full edges; sphere: [r]; cylinder, capsule: [r, length]
        position: [0.5, 0.0, 0.38]
        rpy: [0.0, 0.0, 0.0]       # optional, default 0 (URDF's roll-pitch-yaw)
    free:                          # optional list
      - name: cube
        shape: box
        size: [0.05, 0.05, 0.05]
        mass: 0.2
        inertia: [ixx, iyy, izz, ixy, ixz, iyz]   # optional: about the centre, body frame
        position: [0.5, 0.0, 0.425]
        rpy: [0.0, 0.0, 0.0]
        linear_velocity: [0, 0, 0]                # optional, world frame [m/s]
        angular_velocity: [0, 0, 0]               # optional, world frame [rad/s]

A free body's frame is its shape's frame: the centre of mass is at its
origin (a homogeneous solid). Without ``inertia`` the solid's is computed
from the shape and the mass (:func:`solid_inertia`). Every mistake is a
:class:`~robot_dynamics.errors.WorldError` naming the entry and key, what
was expected and what came; unknown keys are refused (a misspelt
``mas:`` would otherwise vanish). What came is shown cut short (a YAML
alias bomb's nested lists are shared, not copied, by the parser; shown in
full they would be exponential), and a world has at most
:data:`MAX_BODIES` bodies (the pair list is built once, quadratic in them).
"""
import reprlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import URDFError, WorldError
from ..model.files import read_yaml
from ..model.spatial import homogeneous, rpy_to_matrix
from .geometry import Shape

MAX_BYTES = 128 * 1024          # PyYAML parses 4-8 us a byte (in Python): 0.5-1 s of CPU at most
MAX_BODIES = 500              # static and free together: 500 boxes in flow style are 47 kB
SIZES = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2}
TOP = ("ground", "static", "free")
STATIC_KEYS = ("name", "shape", "size", "position", "rpy")
FREE_KEYS = STATIC_KEYS + ("mass", "inertia", "linear_velocity", "angular_velocity")


@dataclass(frozen=True)
class FreeBody:
    """A rigid body moving freely (6 DOF) in the world.

    Attributes:
        name: str. shape: its :class:`.geometry.Shape` (placement identity:
            the shape frame is the body frame, centre of mass at the origin).
        mass [kg]; inertia (3, 3) [kg m^2] about the centre of mass, body frame.
        pose (4, 4): initial pose, world <- body.
        velocity (6,): initial [v; w], centre-of-mass velocity [m/s] and
            angular velocity [rad/s], both in the world frame.
    """
    name: str
    shape: Shape
    mass: float
    inertia: np.ndarray = field(repr=False)
    pose: np.ndarray = field(repr=False)
    velocity: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class World:
    """What a world file holds: ``static_shapes`` (tuple of Shape, placed in
    the world frame, link None) and ``free_bodies`` (tuple of FreeBody)."""
    static_shapes: tuple = ()
    free_bodies: tuple = ()


def load_world(source):
    """A :class:`World` from a world file path, its YAML text, or the parsed dict.

    Raises:
        WorldError: unreadable or malformed YAML, a missing, unknown or bad
            key, a non-positive size or mass, a non-finite number (named).
    """
    if not isinstance(source, dict):
        try:
            source = read_yaml(source, MAX_BYTES, "world", _is_text)
        except URDFError as exc:
            raise WorldError(str(exc)) from None
    if source is None:
        source = {}
    if not isinstance(source, dict):
        raise WorldError("world: expected a mapping with keys %s, got %s" % (", ".join(TOP), _kind(source)))
    _known_keys(source, TOP, "world")
    static_entries, free_entries = _entries(source, "static"), _entries(source, "free")
    if len(static_entries) + len(free_entries) > MAX_BODIES:
        raise WorldError("world: at most %d static and free bodies, got %d"
                         % (MAX_BODIES, len(static_entries) + len(free_entries)))
    static = [_ground(source["ground"])] if source.get("ground") not in (None, False) else []
    static += [_static(e, "static[%d]" % i) for i, e in enumerate(static_entries)]
    free = [_free(e, "free[%d]" % i) for i, e in enumerate(free_entries)]
    names = [s.name for s in static] + [f.name for f in free]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise WorldError("world: names must be unique, got %s more than once" % ", ".join(dup))
    return World(tuple(static), tuple(free))


def _is_text(source):
    return "\n" in source or source.lstrip().startswith(("{", "ground:", "static:", "free:"))


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxstring, _SHOWN.maxother = 1, 6, 6, 60, 60


def _shown(value):
    """``repr(value)`` cut short: one level, six items, 60 characters a string."""
    return _SHOWN.repr(value)


def _kind(value):
    return "%s %s" % (type(value).__name__, _shown(value)) if not isinstance(value, (dict, list)) \
        else type(value).__name__


def _known_keys(d, keys, what):
    unknown = sorted(str(k) for k in d if k not in keys)
    if unknown:
        raise WorldError("%s: unknown key(s) %s; expected keys: %s" % (what, ", ".join(unknown), ", ".join(keys)))


def _entries(source, key):
    entries = source.get(key) or []
    if not isinstance(entries, list):
        raise WorldError("world: %s must be a list of bodies, got %s" % (key, _kind(entries)))
    return entries


def _ground(ground):
    if ground is True:
        ground = {}
    if not isinstance(ground, dict):
        raise WorldError("ground: expected a mapping such as {height: 0.0} (or true), got %s" % _kind(ground))
    _known_keys(ground, ("height",), "ground")
    h = _numbers(ground.get("height", 0.0), 1, "ground height")[0]
    return Shape("plane", (), homogeneous(np.eye(3), (0.0, 0.0, h)), None, "ground")


def _body(entry, what, keys):
    if not isinstance(entry, dict):
        raise WorldError("%s: expected a mapping with keys %s, got %s" % (what, ", ".join(keys), _kind(entry)))
    _known_keys(entry, keys, what)
    for key in ("name", "shape", "size", "position"):
        if key not in entry:
            raise WorldError("%s: missing key %r (required: name, shape, size, position)" % (what, key))
    name = entry["name"]
    if not isinstance(name, str) or not name:
        raise WorldError("%s: name must be a non-empty string, got %s" % (what, _kind(name)))
    what = "%s (%s)" % (what, name)
    kind = entry["shape"]
    if not isinstance(kind, str) or kind not in SIZES:
        raise WorldError("%s: shape must be one of %s, got %s" % (what, ", ".join(SIZES), _shown(kind)))
    size = _numbers(entry["size"], SIZES[kind], "%s size of a %s" % (what, kind))
    if not np.all(size > 0):
        raise WorldError("%s: size must be positive, got %s" % (what, list(size)))
    pose = homogeneous(rpy_to_matrix(_numbers(entry.get("rpy", [0, 0, 0]), 3, what + " rpy")),
                       _numbers(entry["position"], 3, what + " position"))
    return name, kind, tuple(float(x) for x in size), pose, what


def _static(entry, what):
    name, kind, size, pose, _ = _body(entry, what, STATIC_KEYS)
    return Shape(kind, size, pose, None, name)


def _free(entry, what):
    name, kind, size, pose, what = _body(entry, what, FREE_KEYS)
    if "mass" not in entry:
        raise WorldError("%s: missing key 'mass' (a free body needs its mass in kg)" % what)
    mass = _numbers(entry["mass"], 1, what + " mass")[0]
    if mass <= 0:
        raise WorldError("%s: mass must be positive [kg], got %g" % (what, mass))
    if "inertia" in entry:
        inertia = _inertia(_numbers(entry["inertia"], 6, what + " inertia [ixx, iyy, izz, ixy, ixz, iyz]"), what)
    else:
        inertia = solid_inertia(kind, size, mass)
    v = _numbers(entry.get("linear_velocity", [0, 0, 0]), 3, what + " linear_velocity")
    w = _numbers(entry.get("angular_velocity", [0, 0, 0]), 3, what + " angular_velocity")
    shape = Shape(kind, size, np.eye(4), None, name)
    return FreeBody(name, shape, float(mass), inertia, pose, np.concatenate([v, w]))


def _inertia(values, what):
    ixx, iyy, izz, ixy, ixz, iyz = values
    I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    eig = np.linalg.eigvalsh(I)
    if eig[0] <= 0 or eig[0] + eig[1] < eig[2] * (1 - 1e-9):
        raise WorldError("%s: inertia must be positive definite and meet the triangle inequality, got "
                         "principal moments %s" % (what, ", ".join("%g" % e for e in eig)))
    return I


def _numbers(value, n, what):
    v = [value] if n == 1 and not isinstance(value, (list, tuple)) else value
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise WorldError("%s: expected %d number%s, got %s" % (what, n, "s" if n > 1 else "", _kind(value)))
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v):
        raise WorldError("%s: expected numbers, got %s" % (what, _shown(value)))
    a = np.array(v, dtype=float)
    if not np.all(np.isfinite(a)):
        raise WorldError("%s: expected finite numbers, got %s" % (what, _shown(value)))
    return a


def solid_inertia(kind, size, mass):
    """(3, 3) [kg m^2] inertia of a homogeneous solid about its centre, in its
    shape frame (axis z for a cylinder and a capsule); size as in :mod:`.geometry`.

    Box: m/12 (ly^2 + lz^2, ...); sphere: 2/5 m r^2; cylinder: m r^2/2 about
    z, m (3 r^2 + l^2)/12 across; capsule: the cylinder and two hemispheres
    of one density, each hemisphere's centre of mass 3r/8 from its flat face.
    """
    m = mass
    if kind == "box":
        lx, ly, lz = size
        return np.diag([m * (ly**2 + lz**2) / 12, m * (lx**2 + lz**2) / 12, m * (lx**2 + ly**2) / 12])
    if kind == "sphere":
        return np.eye(3) * 0.4 * m * size[0]**2
    r, l = size
    if kind == "cylinder":
        across = m * (3 * r**2 + l**2) / 12
        return np.diag([across, across, m * r**2 / 2])
    vc, vs = np.pi * r**2 * l, 4.0 / 3.0 * np.pi * r**3          # capsule: cylinder and sphere volumes
    mc, ms = m * vc / (vc + vs), m * vs / (vc + vs)
    izz = mc * r**2 / 2 + 0.4 * ms * r**2
    d = l / 2 + 3 * r / 8                                           # each hemisphere's centre from the middle
    hemi = 0.4 * (ms / 2) * r**2 - (ms / 2) * (3 * r / 8)**2       # about its own centre of mass, across
    across = mc * (3 * r**2 + l**2) / 12 + 2 * (hemi + (ms / 2) * d**2)
    return np.diag([across, across, izz])
