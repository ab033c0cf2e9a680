"""The symbolic model: a Model's bodies with sympy entries, chosen parameters as symbols.

Each body gets the entries of Featherstone's model structure (*Rigid Body
Dynamics Algorithms*, sec. 4.2: ``parent``, joint type and axis, the tree
transform ``X_tree``, the inertia) from the public arrays of
:class:`~robot_dynamics.Model` (``parent``, ``joint_type``, ``axis``,
``joint_placement``, ``body_coordinate``/``body_multiplier``/``body_offset``,
``body_mass``, ``body_parameters``, ``body_inertia``), as exact numbers
(:mod:`.exact`). A parameter named as a symbol (a link's mass, centre of
mass or inertia entry, a joint origin offset, the gravity magnitude) is
put in where it enters: the body inertia is then rebuilt from its links'
inertials and the joint placements from the joint origins, fixed joints
merged as the loader merges them. The rebuilt bodies, with the symbols at
their values, must equal the numeric model (:func:`check_against_model`),
so the symbolic and numeric dynamics describe the same frames.
"""
import re
import warnings
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..errors import InertiaWarning, InputError
from ..model import PRISMATIC
from ..model.urdf import read_urdf
from ..model.inertia import inertia_about_com
from .exact import exact, exact_matrix, exact_unit, exact_vector

CHECK_RTOL = 1e-9            # rebuilt symbolic bodies vs the numeric model
NOISE_REL = 1e-12            # inertia entries this small relative to the largest are float noise

LINK_ATTRS = ("mass", "com_x", "com_y", "com_z", "ixx", "iyy", "izz", "ixy", "ixz", "iyz")
JOINT_ATTRS = ("x", "y", "z")
COM_ATTRS = ("com_x", "com_y", "com_z")
INERTIA_ENTRY = {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2), "iyz": (1, 2)}
RESERVED = re.compile(r"^(q|qd|qdd|c|s)\d+$")   # joint variables and the printers' sin/cos shorthand


@dataclass
class Body:
    """One body of the symbolic model (sympy entries, exact numbers)."""
    parent: int          # parent body, -1 for the base
    prismatic: bool
    k: int               # index of the driving coordinate in q
    mul: sp.Expr         # joint position = mul * q[k] + off
    off: sp.Expr
    axis: sp.Matrix      # (3, 1) in the body frame
    R0: sp.Matrix        # parent body <- body frame at q = 0 (rotation of X_tree)
    p0: sp.Matrix        # body origin in the parent body frame (translation of X_tree)
    m: sp.Expr
    h: sp.Matrix         # first moment m c, body frame
    Io: sp.Matrix        # inertia about the body origin, body frame


# ---------------------------------------------------------------------------
# Parameters as symbols
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Location:
    """Where a symbol's parameter sits: ``element.attr``, equal to ``factor * symbol``."""
    element: str         # link or joint name; "gravity" for the gravity magnitude
    attr: str
    factor: float = 1.0


def parse_location(loc, what):
    """``'link.attr'``, ``'link.attr*0.5'``, ``(element, attr[, factor])`` or ``'gravity'`` -> :class:`Location`."""
    if isinstance(loc, str):
        if loc == "gravity":
            return Location("gravity", "magnitude")
        loc, star, f = loc.partition("*")
        factor = _number(f, what) if star else 1.0
        body, _, rest = loc.strip().rpartition(".")
        if not body:
            raise InputError("%s: location %r must be 'element.attribute' (e.g. 'link2.mass', "
                             "'joint2.x', 'link1.com_x*0.5') or 'gravity'" % (what, loc))
        return Location(body, rest, factor)
    if isinstance(loc, tuple) and len(loc) in (2, 3) and all(isinstance(s, str) for s in loc[:2]):
        return Location(loc[0], loc[1], _number(loc[2], what) if len(loc) == 3 else 1.0)
    raise InputError("%s: a location is (element, attribute[, factor]) or 'element.attribute', got %r"
                     % (what, loc))


def _number(text, what):
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError("%s: factor must be a number, got %r" % (what, text)) from None
    if not np.isfinite(v) or v == 0:
        raise InputError("%s: factor must be finite and nonzero, got %r" % (what, text))
    return v


def parse_symbols(model, symbols):
    """{name: location or [locations]} -> {name: [Location]} after checking the names."""
    out = {}
    for name, locs in (symbols or {}).items():
        if not isinstance(name, str) or not name.isidentifier() or RESERVED.match(name):
            raise InputError("symbol name %r must be a Python identifier other than q<i>, qd<i>, qdd<i>, "
                             "c<i>, s<i> (those name the joint variables and sin/cos)" % (name,))
        if isinstance(locs, (str, tuple)):
            locs = [locs]
        parsed = [parse_location(l, "symbol %r" % name) for l in locs]
        if not parsed:
            raise InputError("symbol %r has no location" % name)
        for loc in parsed:
            if loc.element == "gravity":
                if not np.any(model.gravity):
                    raise InputError("symbol %r: the model's gravity is zero, it has no magnitude to name" % name)
                continue
            if loc.attr in JOINT_ATTRS:
                if loc.element not in model.joints:
                    raise InputError("symbol %r: %r is not a joint of the robot (joint origin attributes "
                                     "x, y, z); joints: %s" % (name, loc.element, ", ".join(model.joints)))
            elif loc.attr in LINK_ATTRS:
                if model.link_body[model.link_index(loc.element)] < 0:   # (ValueError listing the links)
                    raise InputError("symbol %r: link %r is fixed to the base, its parameters do not enter "
                                     "the dynamics" % (name, loc.element))
            else:
                raise InputError("symbol %r: unknown attribute %r; use one of %s (links) or %s (joint origin)"
                                 % (name, loc.attr, ", ".join(LINK_ATTRS), ", ".join(JOINT_ATTRS)))
        out[name] = parsed
    return out


# ---------------------------------------------------------------------------
# Link inertials
# ---------------------------------------------------------------------------

def _clean(Ic):
    """Symmetric, with the float noise of a rotated tensor (1e-18 off-diagonals) set to 0."""
    Ic = 0.5 * (Ic + Ic.T)
    scale = max(float(np.max(np.abs(Ic))), 1e-300)
    return np.where(np.abs(Ic) < NOISE_REL * scale, 0.0, Ic)


def file_inertials(model, urdf):
    """{link: (m, c (3,), Ic (3, 3))} floats: each link's own URDF inertial
    (centre of mass in the link frame, inertia about it in link axes), from
    the file the model was loaded from (read by :func:`robot_dynamics.load_urdf`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)    # reported when the model was loaded
        other = read_urdf(urdf)
    missing = set(model.link_names) - set(other.link_names)
    if missing:
        raise InputError("urdf does not match the model: links %s are missing from it" % ", ".join(sorted(missing)))
    return {n: (float(other.link_mass[l]), np.array(other.link_com[l]), _clean(other.link_inertia[l]))
            for l, n in enumerate(other.link_names)}


def body_inertial(model, link):
    """(m, c, Ic) floats of a link that is the only link with mass on its body,
    read from the body's inertia (payloads included): the link's inertial as
    the model's dynamics use it."""
    l = model.link_index(link)
    b = int(model.link_body[l])
    if b < 0:
        raise InputError("link %r is fixed to the base: its parameters do not enter the dynamics" % link)
    massive = [n for i, n in enumerate(model.link_names)
               if model.link_body[i] == b and model.link_masses[n] > 0]
    if massive != [link]:
        raise InputError("link %r shares its body with other links that have mass (%s): pass urdf= "
                         "(the file the model was loaded from) so that each link's own inertial is known"
                         % (link, ", ".join(n for n in massive if n != link) or "none, and it is massless"))
    m, cb = float(model.body_mass[b]), model.body_com[b]             # centre of mass, body frame
    Icb = inertia_about_com(m, cb, model.body_inertia[b])
    T = model.link_placement[l]
    R, p = T[:3, :3], T[:3, 3]
    return m, R.T @ (cb - p), _clean(R.T @ Icb @ R)


# ---------------------------------------------------------------------------
# The bodies
# ---------------------------------------------------------------------------

class _Parameters:
    """Exact numbers, or ``factor * symbol`` for the parameters named as symbols;
    records each symbol's value and checks that its locations agree."""

    def __init__(self, locations):
        self.symbol = {name: sp.Symbol(name) for name in locations}
        self.by_location = {}
        for name, ls in locations.items():
            for loc in ls:
                key = (loc.element, loc.attr)
                if key in self.by_location:
                    raise InputError("%s.%s is named twice (symbols %r and %r)"
                                     % (key + (self.by_location[key][0], name)))
                self.by_location[key] = (name, loc.factor)
        self.values = {}                 # name -> (value, "element.attr" it was first read from)

    def __call__(self, element, attr, number):
        if (element, attr) not in self.by_location:
            return exact(number)
        name, factor = self.by_location[(element, attr)]
        v = float(number) / factor
        seen = self.values.setdefault(name, (v, "%s.%s" % (element, attr)))
        if not np.isclose(seen[0], v, rtol=CHECK_RTOL, atol=1e-12):
            raise InputError("symbol %r stands for %s = %.12g and %s.%s = %.12g (x %g): the values differ; "
                             "give a factor, e.g. ('%s', '%s', 0.5)" % (name, seen[1], seen[0], element, attr,
                                                                       float(number), 1 / factor, element, attr))
        return exact_unit(factor) * self.symbol[name] if factor != 1.0 else self.symbol[name]


def _link_poses(model, param):
    """({link: (R, p) pose in its body frame}, {joint: (R, p) origin}), sympy, from the
    joint origins (named offsets as symbols): the fixed-joint chains the loader merged."""
    parent_joint = {j.child: j for j in model.joints.values()}
    pose = {model.base_link: (sp.eye(3), sp.zeros(3, 1))}
    origin = {}
    for link in model.link_names[1:]:                 # depth-first: a parent link comes first
        j = parent_joint[link]
        xyz = sp.Matrix([param(j.name, a, j.origin[r, 3]) for r, a in enumerate(JOINT_ATTRS)])
        origin[j.name] = (exact_matrix(j.origin[:3, :3]), xyz)
        if j.type == "fixed":
            Rp, pp = pose[j.parent]
            pose[link] = (Rp * origin[j.name][0], pp + Rp * xyz)
        else:
            pose[link] = (sp.eye(3), sp.zeros(3, 1))
    return pose, origin


def _body_inertia(links, inertial, pose):
    """(m, h, I_O) of a body, sympy: its links' inertials moved into the body frame
    (as :func:`robot_dynamics.model.inertia.transform_inertia`)."""
    m, h, Io = sp.Integer(0), sp.zeros(3, 1), sp.zeros(3, 3)
    for link in links:
        ml, c, Ic = inertial(link)
        R, p = pose[link]
        hb = R * (ml * c)                                          # h in the body frame
        Io_l = Ic + ml * ((c.T * c)[0] * sp.eye(3) - c * c.T)      # about the link origin
        m += ml
        h += hb + ml * p
        Io += (R * Io_l * R.T + ml * ((p.T * p)[0] * sp.eye(3) - p * p.T)
               + 2 * (p.T * hb)[0] * sp.eye(3) - p * hb.T - hb * p.T)
    return m, h, Io


def symbolic_bodies(model, symbols, urdf):
    """(bodies, gravity vector (3, 1), {Symbol: value}) with the named parameters as symbols.

    Args:
        model: :class:`~robot_dynamics.Model`.
        symbols: ``{name: location(s)}`` (see :func:`robot_dynamics.symbolic.derive`).
        urdf: the file or text the model was loaded from, or None.
    """
    locations = parse_symbols(model, symbols)
    param = _Parameters(locations)
    pose, origin = _link_poses(model, param)
    named_links = {loc.element for ls in locations.values() for loc in ls if loc.attr in LINK_ATTRS}
    from_file = file_inertials(model, urdf) if urdf is not None else None

    def inertial(link):
        m, c, Ic = from_file[link] if from_file is not None else body_inertial(model, link)
        m = param(link, "mass", m)
        c = sp.Matrix([param(link, a, c[r]) for r, a in enumerate(COM_ATTRS)])
        Ic = exact_matrix(Ic, exact)
        for a, (r, s) in INERTIA_ENTRY.items():
            Ic[r, s] = Ic[s, r] = param(link, a, Ic[r, s])
        return m, c, Ic

    bodies = []
    for i in range(model.nb):
        j = model.joints[model.body_joint[i]]
        Rp, pp = pose[j.parent]                        # parent link in the parent body frame
        R0, xyz = origin[j.name]
        links = [model.link_names[l] for l in np.flatnonzero(model.link_body == i)]
        if any(l in named_links for l in links) or any(pose[l][1].free_symbols for l in links):
            massive = [l for l in links if from_file is not None or model.link_masses[l] > 0 or l in named_links]
            m, h, Io = _body_inertia(massive, inertial, pose)
        else:
            m = exact(model.body_mass[i])
            h = exact_vector(model.body_parameters[i, 1:4])
            Io = exact_matrix(model.body_inertia[i], exact)
        bodies.append(Body(
            parent=int(model.parent[i]), prismatic=bool(model.joint_type[i] == PRISMATIC),
            k=int(model.body_coordinate[i]), mul=exact(model.body_multiplier[i]), off=exact(model.body_offset[i]),
            axis=exact_vector(model.axis[i], exact_unit), R0=Rp * R0, p0=pp + Rp * xyz,
            m=sp.expand(m), h=h.applyfunc(sp.expand), Io=Io.applyfunc(sp.expand)))

    gravity = model.gravity
    g_named = [name for name, ls in locations.items() if any(l.element == "gravity" for l in ls)]
    if g_named:
        gnorm = float(np.linalg.norm(gravity))
        param.values[g_named[0]] = (gnorm, "gravity")
        g = param.symbol[g_named[0]] * exact_vector(gravity / gnorm, exact_unit)
    else:
        g = exact_vector(gravity)
    unused = [n for n in locations if n not in param.values]
    if unused:
        raise InputError("symbols %s name no parameter that enters the dynamics (a massless link, or the "
                         "origin of a joint that nothing with mass hangs from)" % ", ".join(unused))
    values = {param.symbol[n]: param.values[n][0] for n in locations}
    check_against_model(model, bodies, values)
    return bodies, g, values


def check_against_model(model, bodies, values):
    """The rebuilt bodies, with the symbols at their ``values``, equal the model's
    ``joint_placement``, ``body_mass``, first moments and ``body_inertia``; ValueError if not."""
    subs = {s: exact(v) for s, v in values.items()}
    for b, body in enumerate(bodies):
        X = model.joint_placement[b]
        got = {"joint origin": (body.p0, X[:3, 3]), "joint rotation": (body.R0, X[:3, :3]),
               "mass": (sp.Matrix([body.m]), model.body_mass[b:b + 1]),
               "first moment": (body.h, model.body_parameters[b, 1:4]),
               "inertia": (body.Io, model.body_inertia[b])}
        for what, (expr, num) in got.items():
            num = np.ravel(num)
            val = np.array(expr.subs(subs).evalf(), dtype=float).ravel()
            scale = max(1.0, float(np.max(np.abs(num))))
            if not np.allclose(val, num, rtol=CHECK_RTOL, atol=1e-9 * scale):
                raise InputError("the symbolic model does not match the numeric one at body %d (%s): %s vs %s; "
                                 "is urdf= the file this model was loaded from (without payloads)?"
                                 % (b, what, np.array2string(val, precision=6), np.array2string(num, precision=6)))
