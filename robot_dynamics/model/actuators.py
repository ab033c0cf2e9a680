"""The actuator model of each joint: the rotor's reflected inertia and a friction law.

A motor turning ``gear_ratio`` times faster than its joint adds the
rotor's inertia reflected through the gear, ``armature = rotor_inertia *
gear_ratio**2`` [kg m^2 revolute, kg prismatic], to the joint's own
coordinate: ``tau = M qdd + h`` with ``M_ii`` gaining ``armature_i``
(Featherstone, *Rigid Body Dynamics Algorithms*, sec. 9.6 on the rotor
inertia of geared motors; Pinocchio's ``model.armature``, MuJoCo's joint
``armature``). The friction law says how the joint's friction torque
depends on its velocity (:data:`LAWS`; evaluated elsewhere: the model only
describes it).

Declared per joint (a YAML file, its text, or the parsed dict; schema and
units in docs/ACTUATORS.md)::

    panda_joint1:
      rotor_inertia: 4.0e-5      # [kg m^2 | kg], motor side
      gear_ratio: 100            # motor turns per joint turn; armature = 4.0e-5 * 100**2
      friction: {law: coulomb, coulomb: 0.8, viscous: 0.05, smoothing: 0.01}
    panda_joint2:
      armature: 0.3              # [kg m^2 | kg], already reflected to the joint

Sources, highest precedence first: the declaration given to
``robot_dynamics.load_urdf(..., actuators=)`` or :meth:`Model.with_actuators`;
a URDF ``<transmission>`` ``mechanicalReduction`` (the gear ratio only);
the URDF ``<dynamics damping friction>`` (the friction law only). Every
bad declaration raises :class:`~robot_dynamics.errors.URDFError` naming the
joint and the field.
"""
import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Optional, Tuple

from ..errors import URDFError
from . import packed as P
from .files import read_yaml

MAX_BYTES = 1024 * 1024          # an actuators file is a few kilobytes
KEYS = ("armature", "rotor_inertia", "gear_ratio", "friction")
REVOLUTE_UNITS = {"armature": "kg m^2", "rotor_inertia": "kg m^2", "viscous": "N m s/rad", "coulomb": "N m",
                  "static": "N m", "stribeck_velocity": "rad/s", "smoothing": "rad/s", "phi1": "N m",
                  "phi2": "s/rad", "phi3": "rad/s", "gear_ratio": "1"}
PRISMATIC_UNITS = {"armature": "kg", "rotor_inertia": "kg", "viscous": "N s/m", "coulomb": "N", "static": "N",
                   "stribeck_velocity": "m/s", "smoothing": "m/s", "phi1": "N", "phi2": "s/m", "phi3": "m/s",
                   "gear_ratio": "1"}

# law -> (required parameters, optional parameters with their defaults). The
# friction torque opposing the motion, with v the joint velocity:
#   viscous:  viscous v
#   coulomb:  coulomb sgn_s(v) + viscous v,  sgn_s(v) = tanh(v / smoothing) (sign(v) for smoothing 0)
#   stribeck: (coulomb + (static - coulomb) exp(-(v / stribeck_velocity)^2)) sign(v) + viscous v
#   sigmoid:  phi1 / (1 + exp(-phi2 (v + phi3))) - phi1 / (1 + exp(-phi2 phi3))   (Gaz et al. 2019)
LAWS = {"viscous": (("viscous",), {}),
        "coulomb": (("coulomb",), {"viscous": 0.0, "smoothing": 0.0}),
        "stribeck": (("static", "coulomb", "stribeck_velocity", "viscous"), {}),
        "sigmoid": (("phi1", "phi2", "phi3"), {})}
POSITIVE = ("stribeck_velocity", "phi2")                  # > 0; phi3 any finite number; the rest >= 0
SIGNED = ("phi3",)


@dataclass(frozen=True)
class FrictionLaw:
    """One joint's friction law: ``law`` (a key of :data:`LAWS`) and its
    ``parameters``, ``((name, value), ...)`` in SI units (N m, N m s/rad,
    rad/s for a revolute joint; N, N s/m, m/s for a prismatic one).
    ``law.params`` is the same as a dict, ``law["viscous"]`` one value."""
    law: str
    parameters: Tuple[Tuple[str, float], ...]

    @property
    def params(self):
        return dict(self.parameters)

    def __getitem__(self, name):
        return self.params[name]

    @property
    def viscous(self):
        """The viscous coefficient the built-in evaluators apply (0 for the sigmoid)."""
        return self.params.get("viscous", 0.0)

    @property
    def coulomb(self):
        """The Coulomb level the built-in evaluators apply (the stribeck law's
        ``coulomb``, without its static peak; 0 for viscous and sigmoid)."""
        return self.params.get("coulomb", 0.0)


@dataclass(frozen=True)
class Actuator:
    """The actuator of one moving joint (immutable).

    - ``joint``: the URDF joint's name.
    - ``armature``: the rotor inertia reflected to the joint [kg m^2 | kg].
    - ``gear_ratio``: motor turns per joint turn (1.0 where no source gives one).
    - ``gear_ratio_from``: ``"actuators"`` (the declaration), ``"transmission"``
      (the URDF's ``mechanicalReduction``) or ``"default"``.
    - ``rotor_inertia``: the motor-side inertia when the declaration gave it
      (then ``armature = rotor_inertia * gear_ratio**2``), else None.
    - ``friction``: the :class:`FrictionLaw`.
    """
    joint: str
    armature: float = 0.0
    gear_ratio: float = 1.0
    gear_ratio_from: str = "default"
    rotor_inertia: Optional[float] = None
    friction: FrictionLaw = FrictionLaw("viscous", (("viscous", 0.0),))


def urdf_law(joint):
    """The friction law of a URDF ``<dynamics damping friction>``: coulomb when
    it has Coulomb friction (unsmoothed), else viscous."""
    if joint.friction:
        return FrictionLaw("coulomb", (("coulomb", joint.friction), ("viscous", joint.damping), ("smoothing", 0.0)))
    return FrictionLaw("viscous", (("viscous", joint.damping),))


def defaults(joints, body_joint, packed):
    """{joint: Actuator} of every moving joint from the URDF alone: the armature
    in the packed table (0 from a URDF), gear ratio 1, the ``<dynamics>`` law."""
    out = {}
    for b, name in enumerate(body_joint):
        joint = joints[name]
        if joint.type in ("floating", "planar") or name in out:
            continue
        out[name] = Actuator(name, armature=float(packed[b, P.ARMATURE]), friction=urdf_law(joint))
    return out


# --- reading and checking a declaration ---------------------------------------------------------

def parse_actuators(source):
    """A declaration as ``{joint: {field: value}}``, its structure checked (not
    its joints: :func:`apply` checks those against a model).

    Args:
        source: None (nothing); a dict; YAML text (a str holding a newline,
            starting with ``{``, or holding a ``:`` and naming no file); or a
            path to a YAML file (str or os.PathLike).
    """
    if source is None:
        return {}
    if isinstance(source, (str, bytes, os.PathLike)):
        source = read_yaml(source, MAX_BYTES, "actuators", _is_text)
        if source is None:
            return {}
    if not isinstance(source, dict):
        raise URDFError("actuators must be a mapping {joint: {armature | rotor_inertia, gear_ratio, friction}}, "
                        "got %s" % type(source).__name__)
    out = {}
    for name, entry in source.items():
        if not isinstance(name, str):
            raise URDFError("actuators: joint names must be strings, got %r" % (name,))
        if not isinstance(entry, dict):
            raise URDFError("actuators: joint %r must map to {armature | rotor_inertia, gear_ratio, friction}, "
                            "got %r" % (name, entry))
        extra = sorted(set(map(str, entry)) - set(KEYS))
        if extra:
            raise URDFError("actuators: joint %r: unknown field(s) %s (known: %s)"
                            % (name, ", ".join(extra), ", ".join(KEYS)))
        if "armature" in entry and "rotor_inertia" in entry:
            raise URDFError("actuators: joint %r gives both armature and rotor_inertia: give one (armature is "
                            "the reflected rotor_inertia * gear_ratio**2)" % name)
        out[name] = dict(entry)
    return out


def apply(model, source, origin="actuators"):
    """(packed table, joints, {joint: Actuator}) of ``model`` with the
    declaration ``source`` merged in: each joint it names takes the fields it
    gives, the rest stay. ``origin`` is ``"actuators"`` or ``"transmission"``
    (a URDF's gear ratios, below a declaration in precedence)."""
    entries = parse_actuators(source)
    actuators, joints = dict(model.actuators), dict(model.joints)
    D = model.packed.copy()
    bodies = {}
    for b, name in enumerate(model.body_joint):
        bodies.setdefault(name, []).append(b)
    for name, entry in entries.items():
        if name not in actuators:
            raise URDFError("actuators: unknown joint %r; the moving joints are: %s"
                            % (name, ", ".join(actuators) or "none"))
        units = PRISMATIC_UNITS if joints[name].type == "prismatic" else REVOLUTE_UNITS
        new = _merged(actuators[name], entry, origin, units)
        actuators[name] = new
        joints[name] = dataclasses.replace(joints[name], damping=new.friction.viscous, friction=new.friction.coulomb)
        for b in bodies[name]:
            D[b, P.ARMATURE] = new.armature
            D[b, P.DAMPING], D[b, P.FRICTION] = new.friction.viscous, new.friction.coulomb
    return D, joints, actuators


def _merged(old, entry, origin, units):
    name = old.joint
    gear, gear_from, rotor, armature = old.gear_ratio, old.gear_ratio_from, old.rotor_inertia, old.armature
    if "gear_ratio" in entry:
        gear = _number(entry["gear_ratio"], name, "gear_ratio", units)
        if gear == 0.0:
            raise URDFError("actuators: joint %r: gear_ratio must be nonzero (motor turns per joint turn), got 0"
                            % name)
        gear_from = origin
    if "armature" in entry:
        armature, rotor = _number(entry["armature"], name, "armature", units, minimum=0.0), None
    if "rotor_inertia" in entry:
        rotor = _number(entry["rotor_inertia"], name, "rotor_inertia", units, minimum=0.0)
    if rotor is not None:
        if gear_from == "default":
            raise URDFError("actuators: joint %r: rotor_inertia needs a gear_ratio (here or a URDF <transmission> "
                            "mechanicalReduction); for an inertia already reflected to the joint give armature"
                            % name)
        armature = rotor * gear * gear
    friction = _law(entry["friction"], name, units) if "friction" in entry else old.friction
    return Actuator(name, armature=armature, gear_ratio=gear, gear_ratio_from=gear_from, rotor_inertia=rotor,
                    friction=friction)


def _law(spec, name, units):
    what = "actuators: joint %r: friction" % name
    if not isinstance(spec, dict) or not isinstance(spec.get("law"), str):
        raise URDFError("%s must be a mapping with 'law' (one of %s) and its parameters, got %r"
                        % (what, ", ".join(LAWS), spec))
    law = spec["law"]
    if law not in LAWS:
        raise URDFError("%s: unknown law %r (known: %s)" % (what, law, ", ".join(LAWS)))
    required, optional = LAWS[law]
    given = {k: v for k, v in spec.items() if k != "law"}
    extra = sorted(set(map(str, given)) - set(required) - set(optional))
    if extra:
        raise URDFError("%s: unknown parameter(s) %s of law %r (its parameters: %s)"
                        % (what, ", ".join(extra), law, ", ".join(required + tuple(optional))))
    missing = [k for k in required if k not in given]
    if missing:
        raise URDFError("%s: law %r needs %s [%s]" % (what, law, ", ".join(missing),
                                                       ", ".join(units[k] for k in missing)))
    values = []
    for key in required + tuple(optional):
        value = given.get(key, optional.get(key))
        minimum = None if key in SIGNED else 0.0
        v = _number(value, name, "friction %s" % key, units, minimum=minimum, key=key)
        if key in POSITIVE and not v > 0.0:
            raise URDFError("%s %s must be > 0 [%s], got %r" % (what, key, units[key], value))
        values.append((key, v))
    return FrictionLaw(law, tuple(values))


def _number(value, joint, field, units, minimum=None, key=None):
    unit = units[key or field]
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or not math.isfinite(v):
        raise URDFError("actuators: joint %r: %s must be a finite number [%s], got %r" % (joint, field, unit, value))
    if minimum is not None and v < minimum:
        raise URDFError("actuators: joint %r: %s must be >= %g [%s], got %r" % (joint, field, minimum, unit, value))
    return v


def _is_text(source):
    """A str holding a newline, starting with ``{``, or holding a ``:`` and naming no file is YAML text."""
    return "\n" in source or source.lstrip().startswith("{") or (":" in source and not os.path.exists(source))


# --- URDF <transmission> -------------------------------------------------------------------------

def transmission_ratios(root, moving):
    """{joint: mechanicalReduction} of the URDF's simple transmissions (lxml
    ``root``): one ``<joint>`` naming a joint of ``moving``, one finite
    nonzero reduction (in its ``<actuator>``, its ``<joint>`` or, in the old
    style, the ``<transmission>`` itself). Others (differentials, PR2 wrists,
    unreadable numbers) are not read, as before transmissions were: the list
    of their names is returned too, for the loader's debug line."""
    ratios, skipped = {}, []
    for t in root:
        if t.tag != "transmission":
            continue
        joints = [j for j in t if j.tag == "joint"]
        values = [e.text for e in t.iter("mechanicalReduction")]
        ratio = _reduction(values)
        name = joints[0].get("name") if len(joints) == 1 else None
        if name in moving and ratio is not None and name not in ratios:
            ratios[name] = ratio
        else:
            skipped.append(t)
    return ratios, skipped


def _reduction(values):
    if len(values) != 1:
        return None
    try:
        v = float((values[0] or "").strip())
    except ValueError:
        return None
    return v if math.isfinite(v) and v != 0.0 else None
