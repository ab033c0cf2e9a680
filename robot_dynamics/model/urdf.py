"""Build a :class:`~robot_dynamics.model.Model` from a URDF (urdfdom-py).

The XML is parsed with a hardened lxml parser (no entity resolution, no
network, no DTD loading). Elements dynamics does not read (visual,
collision, material, gazebo, ros2_control, any extension tag under <robot>
or <link>, a joint's calibration and safety_controller, and every
<transmission> but a simple one's gear ratio) are removed from the tree
with one debug-level log line, so however odd they are they never make a
load fail. A simple transmission (one joint, one finite nonzero
``mechanicalReduction``) gives that joint's ``gear_ratio``
(:mod:`robot_dynamics.model.actuators`). What is left, the links, joints and
inertials, goes to ``urdf_parser_py``; everything the parser or the checks
here dislike becomes one :class:`URDFError` that names the element at fault.
"""
import collections
import logging
import os
import warnings

import numpy as np
from lxml import etree
from urdf_parser_py import urdf as _urdf
from urdf_parser_py.xml_reflection import core as _xmlr

from . import actuators as _actuators
from . import model as _m
from . import packed as P
from ..errors import InertiaWarning, URDFError, URDFWarning
from .files import read_bounded
from .inertia import inertia_about_origin, inertia_problem
from .spatial import homogeneous, rpy_to_matrix

MOVING = ("revolute", "continuous", "prismatic")
MAX_BYTES = 16 * 1024 * 1024      # a URDF is kilobytes; meshes live in other files
#: libxml2's limits, which lxml keeps on without huge_tree, and the words of its messages that name them.
PARSER_BOUNDS = "a text, comment or attribute of at most 10,000,000 bytes, elements nested at most 256 deep"
LIMIT_WORDS = ("XML_PARSE_HUGE", "too big", "Excessive depth", "limit exceeded")
ROOTS = ("floating", "planar")     # joint types allowed only between the world and the base
# The elements dynamics reads, by parent; every other child of <robot> and
# <link> is dropped before parsing. Inside <joint> and <inertial> an unknown
# tag is left to the parser, which warns (it may be a misspelt <origin>).
READ = {"robot": ("link", "joint"), "link": ("inertial",)}
JOINT_UNREAD = ("calibration", "safety_controller")

log = logging.getLogger(__name__)


def read_urdf(source, *, root_joint=None, gravity=(0.0, 0.0, -9.81), max_bytes=MAX_BYTES, loops=None,
              actuators=None):
    """The model layer's half of :func:`robot_dynamics.load_urdf` (arguments,
    result and errors as there): the URDF parsed and checked, the gear
    ratios of its transmissions and the ``actuators`` declaration applied
    (in that order: the declaration wins), the loop declaration checked
    against the tree; whether the loops can be closed needs the kinematics
    above this layer and is checked by ``robot_dynamics.load_urdf`` alone."""
    if root_joint not in (None,) + ROOTS:
        raise URDFError("root_joint must be None, 'floating' or 'planar', got %r" % (root_joint,))
    robot, ratios = _parse(_read(source, max_bytes))
    model = _build(robot, gravity, root_joint)
    ratios = {j: {"gear_ratio": r} for j, r in ratios.items() if j in model.actuators}
    if ratios:
        model = model.with_actuators(ratios, source="transmission")
    if actuators is not None:
        model = model.with_actuators(actuators)
    return model if loops is None else model.with_loops(loops)


def _read(source, max_bytes):
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        text = os.fspath(source)
        if text.lstrip().startswith("<"):
            data = text.encode("utf-8")
        else:
            data = read_bounded(text, max_bytes, "URDF file")
    if len(data) > max_bytes:
        raise URDFError("URDF is larger than max_bytes=%d bytes; a robot description is kilobytes "
                        "(meshes belong in separate files)" % max_bytes)
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise URDFError("URDF contains a DTD (<!DOCTYPE> or <!ENTITY>): refused, a robot "
                        "description needs none and entities can read files or expand without bound")
    if not data.strip():
        raise URDFError("URDF is empty")
    return data


def _xml(xml_bytes):
    """The lxml root element. A namespace prefix nobody declared (an unexpanded
    ``xacro:`` tag, which urdfdom accepts) is no error: when it is the only
    fault, the text is parsed again with lxml's recover mode."""
    strict = _xml_parser(recover=False)
    try:
        return etree.fromstring(xml_bytes, strict)
    except etree.XMLSyntaxError as exc:
        error = exc
    if all(e.domain_name == "NAMESPACE" for e in strict.error_log):
        lenient = _xml_parser(recover=True)
        try:
            root = etree.fromstring(xml_bytes, lenient)
        except etree.XMLSyntaxError:
            root = None
        if root is not None and all(e.domain_name == "NAMESPACE" for e in lenient.error_log):
            return root
    if any(word in str(error) for word in LIMIT_WORDS):
        raise URDFError("URDF is beyond the XML parser's bounds (%s; docs/SECURITY.md): %s"
                        % (PARSER_BOUNDS, str(error).replace("try XML_PARSE_HUGE", "").strip()))
    raise URDFError("URDF is not well-formed XML: %s" % error)


def _xml_parser(recover):
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, remove_comments=True, recover=recover)


def _parse(xml_bytes):
    root = _xml(xml_bytes)
    if root.tag != "robot":
        raise URDFError("URDF root element must be <robot>, got <%s>" % root.tag)
    moving = {j.get("name") for j in root if j.tag == "joint" and j.get("type") in MOVING}
    ratios, skipped = _actuators.transmission_ratios(root, moving)
    if ratios:
        log.debug("URDF: gear ratios from <transmission>: %s",
                  ", ".join("%s %g" % kv for kv in sorted(ratios.items())))
    _drop_unread(root, skipped)
    messages = []
    previous, _xmlr.on_error = _xmlr.on_error, messages.append
    try:
        robot = _urdf.URDF.from_xml(root, _xmlr.Path("robot", tree=etree.ElementTree(root)))
    except _xmlr.ParseError as exc:
        raise URDFError("invalid URDF: %s" % exc) from None
    except (AssertionError, ValueError, TypeError, AttributeError, KeyError) as exc:
        raise URDFError("invalid URDF: %s" % (exc or type(exc).__name__)) from None
    finally:
        _xmlr.on_error = previous
    for msg in messages:
        warnings.warn("URDF: %s" % msg, URDFWarning, stacklevel=3)
    return robot, ratios


def _drop_unread(root, skipped=()):
    """Remove from the lxml tree every element the parser does not read (see
    READ); the log line counts those dynamics does not use (the transmissions
    whose gear ratio was read are used: only ``skipped`` ones count)."""
    dropped = collections.Counter()
    parents = [root] + [l for l in root if l.tag == "link"]
    skipped = set(map(id, skipped))
    for parent in parents:
        for child in list(parent):
            if child.tag not in READ[parent.tag]:
                if child.tag != "transmission" or id(child) in skipped:
                    dropped[_tag(child)] += 1
                parent.remove(child)
    for j in root:
        if j.tag == "joint":
            for child in list(j):
                if child.tag in JOINT_UNREAD:
                    dropped[child.tag] += 1
                    j.remove(child)
    if dropped:
        log.debug("URDF: skipped elements dynamics does not use: %s",
                  ", ".join("%s x%d" % kv for kv in sorted(dropped.items())))


def _tag(element):
    tag = element.tag
    return tag if isinstance(tag, str) else type(element).__name__.lstrip("_")


def _vector(values, default, what):
    v = np.array(default if values is None else values, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise URDFError("%s must be 3 finite numbers, got %r" % (what, values))
    return v


def _origin(pose, what):
    xyz = _vector(pose.xyz if pose is not None else None, (0, 0, 0), what + " origin xyz")
    rpy = _vector(pose.rpy if pose is not None else None, (0, 0, 0), what + " origin rpy")
    return homogeneous(rpy_to_matrix(rpy), xyz)


def _finite(value, what):
    v = float(value)
    if not np.isfinite(v):
        raise URDFError("%s must be finite, got %r" % (what, value))
    return v


def _tree(robot):
    """Check the link/joint graph is one tree; return (root, children map)."""
    links = [l.name for l in robot.links]
    if not links:
        raise URDFError("URDF has no <link>")
    if len(set(links)) != len(links):
        dup = sorted({n for n in links if links.count(n) > 1})
        raise URDFError("duplicate link names: %s" % ", ".join(dup))
    names = [j.name for j in robot.joints]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise URDFError("duplicate joint names: %s" % ", ".join(dup))
    known = set(links)
    parent_of, children = {}, {n: [] for n in links}
    for j in robot.joints:
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in known:
                raise URDFError("joint %r: %s link %r is not a <link> of the robot" % (j.name, role, link))
        if j.child in parent_of:
            raise URDFError("link %r is the child of two joints (%r and %r)"
                            % (j.child, parent_of[j.child].name, j.name))
        parent_of[j.child] = j
        children[j.parent].append(j)
    roots = [n for n in links if n not in parent_of]
    if len(roots) != 1:
        raise URDFError("URDF must have exactly one root link, found %d: %s"
                        % (len(roots), ", ".join(roots) or "none (the joints form a cycle)"))
    return roots[0], children


def _joint(j):
    """Validated :class:`Joint` (index and mimic resolved later)."""
    if j.type in ROOTS:
        return _m.Joint(name=j.name, type=j.type, parent=j.parent, child=j.child, axis=(0.0, 0.0, 0.0),
                        origin=_origin(j.origin, "joint %r" % j.name))
    if j.type not in MOVING + ("fixed",):
        raise URDFError("joint %r has unknown type %r" % (j.name, j.type))
    origin = _origin(j.origin, "joint %r" % j.name)
    axis = (1.0, 0.0, 0.0)
    lower, upper, effort, velocity = -np.inf, np.inf, np.inf, np.inf
    damping = friction = 0.0
    mimic = None
    if j.type in MOVING:
        a = _vector(j.axis, (1, 0, 0), "joint %r axis" % j.name)
        n = np.linalg.norm(a)
        if n < 1e-9:
            raise URDFError("joint %r has a zero axis %r" % (j.name, tuple(a)))
        axis = tuple(a / n)
        lim = j.limit
        if lim is None and j.type != "continuous":
            raise URDFError("joint %r (%s) has no <limit>: URDF requires effort and velocity "
                            "limits on revolute and prismatic joints" % (j.name, j.type))
        if lim is not None:
            effort = abs(_finite(lim.effort, "joint %r limit effort" % j.name))
            velocity = abs(_finite(lim.velocity, "joint %r limit velocity" % j.name))
            if j.type != "continuous":
                lower = _finite(lim.lower if lim.lower is not None else 0.0, "joint %r limit lower" % j.name)
                upper = _finite(lim.upper if lim.upper is not None else 0.0, "joint %r limit upper" % j.name)
                if lower > upper:
                    raise URDFError("joint %r: limit lower %g is above upper %g" % (j.name, lower, upper))
        if j.dynamics is not None:
            damping = _finite(j.dynamics.damping or 0.0, "joint %r dynamics damping" % j.name)
            friction = _finite(j.dynamics.friction or 0.0, "joint %r dynamics friction" % j.name)
            if damping < 0 or friction < 0:
                raise URDFError("joint %r: dynamics damping and friction must be >= 0, got %g and %g"
                                % (j.name, damping, friction))
        if j.mimic is not None:
            mult = 1.0 if j.mimic.multiplier is None else _finite(j.mimic.multiplier, "joint %r mimic multiplier" % j.name)
            off = 0.0 if j.mimic.offset is None else _finite(j.mimic.offset, "joint %r mimic offset" % j.name)
            mimic = (j.mimic.joint, mult, off)
    return _m.Joint(name=j.name, type=j.type, parent=j.parent, child=j.child, axis=axis,
                    origin=origin, lower=lower, upper=upper, effort=effort, velocity=velocity,
                    damping=damping, friction=friction, mimic=mimic)


def _link_inertial(link):
    """(mass, centre of mass, inertia about the centre of mass), in the link frame."""
    inertial = link.inertial
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    what = "link %r inertial" % link.name
    mass = _finite(inertial.mass if inertial.mass is not None else 0.0, what + " mass")
    if mass < 0:
        raise URDFError("%s mass is negative (%g kg)" % (what, mass))
    T = _origin(inertial.origin, what)
    Ic = np.zeros((3, 3))
    if inertial.inertia is not None:
        Ic = np.array(inertial.inertia.to_matrix(), dtype=float)
        if not np.all(np.isfinite(Ic)):
            raise URDFError("%s inertia has non-finite values" % what)
    R, c = T[:3, :3], T[:3, 3]
    Ic = R @ Ic @ R.T                                  # tensor in the link frame: R I R^T
    if mass > 0 or np.any(Ic != 0):
        problem = inertia_problem(Ic) if mass > 0 else "has inertia but zero mass"
        if problem:
            warnings.warn("link %r: %s" % (link.name, problem), InertiaWarning, stacklevel=4)
    return mass, c, Ic


def _drop_missing_mimics(joints):
    """A mimic of a joint the robot lacks is dropped with a warning: that joint moves on its own."""
    for name, joint in joints.items():
        if joint.mimic is not None and joint.mimic[0] not in joints:
            warnings.warn("joint %r mimics %r, which is not a joint of the robot: %r moves independently"
                          % (name, joint.mimic[0], name), URDFWarning, stacklevel=4)
            joints[name] = _replace(joint, mimic=None)


def _resolve_mimics(joints, moving):
    """Independent source, multiplier and offset of every moving joint."""
    coupling = {}
    for name in moving:
        src, mult, off, seen = name, 1.0, 0.0, [name]
        while joints[src].mimic is not None:
            target, m, o = joints[src].mimic
            if joints[target].type not in MOVING:
                raise URDFError("joint %r mimics %r, which is %s (not a moving joint)"
                                % (src, target, joints[target].type))
            if target in seen:
                raise URDFError("mimic joints form a cycle: %s" % " -> ".join(seen + [target]))
            mult, off = mult * m, mult * o + off
            src = target
            seen.append(src)
        coupling[name] = (src, mult, off)
    return coupling


def _root(root, children, joints, root_joint):
    """(kind, the joint, placement) of the root joint: None, or the URDF's
    floating/planar joint (its parent must be the root link and its siblings
    fixed), or a joint ``root_joint`` added above the root link."""
    deep = [j for j in joints.values() if j.type in ROOTS and j.parent != root]
    if deep:
        j = deep[0]
        raise URDFError("joint %r is %s but its parent %r is not the root link %r: a floating or planar "
                        "joint may only attach the base to the world" % (j.name, j.type, j.parent, root))
    top = [joints[c.name] for c in children[root]]
    free = [j for j in top if j.type in ROOTS]
    if not free:
        if root_joint is None:
            return None, None, None
        return root_joint, _m.Joint(name="root_joint", type=root_joint, parent="world", child=root,
                                    axis=(0.0, 0.0, 0.0), origin=np.eye(4)), np.eye(4)
    j = free[0]
    others = [o.name for o in top if o is not j and o.type != "fixed"]
    if len(free) > 1 or others:
        raise URDFError("the root link %r attaches %r (%s) and also the moving joint(s) %s: with a floating "
                        "or planar base every other joint of the world link must be fixed"
                        % (root, j.name, j.type, ", ".join(repr(n) for n in [f.name for f in free[1:]] + others)))
    if root_joint is not None and root_joint != j.type:
        raise URDFError("root_joint=%r, but the URDF attaches the base %r through the %s joint %r"
                        % (root_joint, j.child, j.type, j.name))
    return j.type, j, j.origin


def _build(robot, gravity, root_joint=None):
    root, children = _tree(robot)
    links = {l.name: l for l in robot.links}
    joints = {j.name: _joint(j) for j in robot.joints}
    _drop_missing_mimics(joints)
    kind, free, placement = _root(root, children, joints, root_joint)
    if free is not None:
        joints[free.name] = free
    nvr = _m.ROOT_NV[kind]

    # Depth-first walk, children in declaration order: body of every link
    # (-1 = base) and the link's pose in that body's frame. A floating or
    # planar root is nvr bodies (1-DOF joints at the base frame; the root's
    # pose enters through robot_dynamics.model.configuration).
    link_order, body_of, pose_in_body = [], {}, {}
    bodies = []                       # (joint name, parent body, (4, 4) joint frame in parent body)
    stack = [(root, None)]
    while stack:
        name, j = stack.pop()
        link_order.append(name)
        if j is None and free is not None and free.child == name:
            j = free                                       # root_joint given: above the root link
        if j is None:
            body_of[name], pose_in_body[name] = -1, np.eye(4)
        elif j is free:
            for k in range(nvr):
                bodies.append((free.name, k - 1, np.eye(4)))
            body_of[name], pose_in_body[name] = nvr - 1, np.eye(4)
        else:
            T = pose_in_body[j.parent] @ j.origin
            if j.type == "fixed":
                body_of[name], pose_in_body[name] = body_of[j.parent], T
            else:
                bodies.append((j.name, body_of[j.parent], T))
                body_of[name], pose_in_body[name] = len(bodies) - 1, np.eye(4)
        stack.extend((c.child, joints[c.name]) for c in reversed(children[name]))

    moving = [b[0] for b in bodies[nvr:]]
    coupling = _resolve_mimics(joints, moving)
    independent = [n for n in moving if coupling[n][0] == n]
    q_index = {n: i for i, n in enumerate(independent)}
    for n in independent:
        joints[n] = _replace(joints[n], index=_m.ROOT_NQ[kind] + q_index[n])

    nb = len(bodies)
    data = np.zeros((nb + 1, P.NCOL))
    for k, (jtype, axis) in enumerate(ROOT_AXES[kind]):
        row = data[k]
        row[P.PARENT], row[P.JTYPE], row[P.QIDX] = k - 1, jtype, k
        row[P.AXIS:P.AXIS + 3] = axis
        row[P.ROT0:P.ROT0 + 9] = np.eye(3).ravel()
        row[P.QMUL] = 1.0
    for b, (jname, parent, T) in enumerate(bodies[nvr:], start=nvr):
        joint = joints[jname]
        src, mult, off = coupling[jname]
        row = data[b]
        row[P.PARENT] = parent
        row[P.JTYPE] = P.PRISMATIC if joint.type == "prismatic" else P.REVOLUTE
        row[P.QIDX] = nvr + q_index[src]
        row[P.AXIS:P.AXIS + 3] = joint.axis
        row[P.ROT0:P.ROT0 + 9] = T[:3, :3].ravel()
        row[P.POS0:P.POS0 + 3] = T[:3, 3]
        row[P.QMUL], row[P.QOFF] = mult, off
        row[P.DAMPING], row[P.FRICTION] = joint.damping, joint.friction

    inertials = [_link_inertial(links[name]) for name in link_order]
    for name, (mass, c, Ic) in zip(link_order, inertials):
        b = body_of[name]
        if b >= 0 and (mass != 0.0 or np.any(Ic)):
            _m.add_body_inertia(data[b], pose_in_body[name], mass, mass * c, inertia_about_origin(mass, c, Ic))

    return _m.Model(name=robot.name or "", base_link=root, link_names=link_order,
                    joints=joints, joint_names=independent, packed=data,
                    body_joint=[b[0] for b in bodies],
                    link_body=[body_of[n] for n in link_order],
                    link_placement=[pose_in_body[n] for n in link_order],
                    link_inertials=tuple(zip(*inertials)) if inertials else ((), (), ()),
                    gravity=gravity, root_joint=kind, root_placement=placement)


_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
# The root joint's 1-DOF bodies, in the order of its velocity (linear, then angular).
ROOT_AXES = {None: (),
             "floating": ((P.PRISMATIC, _X), (P.PRISMATIC, _Y), (P.PRISMATIC, _Z),
                          (P.REVOLUTE, _X), (P.REVOLUTE, _Y), (P.REVOLUTE, _Z)),
             "planar": ((P.PRISMATIC, _X), (P.PRISMATIC, _Y), (P.REVOLUTE, _Z))}


def _replace(joint, **changes):
    import dataclasses
    return dataclasses.replace(joint, **changes)
