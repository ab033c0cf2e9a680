"""``NAME.h`` and ``NAME.c`` for one model: the C API around the unrolled
algorithms of :mod:`robot_dynamics.codegen.algorithms`.

Every function is straight-line C99 (one loop: the batch over states), with
the model's numbers as literals, no allocation, no global mutable state and
no dependency beyond ``<math.h>``: re-entrant and thread-safe.
"""
import datetime
import re
from pathlib import Path

from . import algorithms as A
from .expr import Emitter
from .literals import c_double, c_string, comment_text
from . import frames, friction
from ..errors import InputError

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile "
    "while _Bool _Complex _Imaginary".split())

# (function, C parameters, outputs and their sizes, what it computes, book reference)
FUNCTIONS = (
    ("rnea", "const double *q, const double *qd, const double *qdd, double *tau",
     "inverse dynamics tau = M(q) qdd + C(q, qd) qd + g(q) [N m | N]",
     "recursive Newton-Euler: Featherstone, Rigid Body Dynamics Algorithms, Table 5.1; "
     "Springer Handbook of Robotics, Algorithm 3.1"),
    ("gravity", "const double *q, double *g",
     "gravity torques g(q) = rnea(q, 0, 0): what the motors apply to hold the arm still [N m | N]",
     "RNEA with qd = qdd = 0 (Handbook eq. 3.39: gravity as the base acceleration -g)"),
    ("coriolis", "const double *q, const double *qd, double *c",
     "Coriolis and centrifugal torques C(q, qd) qd = rnea(q, qd, 0) - g(q) [N m | N]",
     "RNEA with qdd = 0 and no gravity (Featherstone Table 5.1)"),
    ("mass_matrix", "const double *q, double *M",
     "joint-space inertia M(q), NV x NV, row-major, both triangles [kg m^2 | kg]",
     "composite-rigid-body algorithm: Featherstone Table 6.2; Handbook Algorithm 3.2"),
    ("aba", "const double *q, const double *qd, const double *tau, double *qdd",
     "forward dynamics qdd = M(q)^-1 (tau - C(q, qd) qd - g(q)) [rad/s^2 | m/s^2]",
     "articulated-body algorithm: Featherstone Table 7.1; Handbook Algorithm 3.4"),
)
MIMIC_ABA = ("forward dynamics by M qdd = tau - h, M from the CRBA, h from the RNEA and a Cholesky "
             "factorisation (Featherstone sec. 6.1, FDcrb): the ABA does not cover coupled (mimic) joints, and "
             "the root's accelerations are shifted back by g_root + b(v) on a moving base")
BATCHES = {"rnea": ("q", "qd", "qdd", "tau"), "gravity": ("q", "g"), "coriolis": ("q", "qd", "c"),
           "mass_matrix": ("q", "M"), "aba": ("q", "qd", "tau", "qdd")}


def check_prefix(prefix):
    """``prefix`` if it is a C identifier (the names NAME_rnea ... and the files NAME.h, NAME.c)."""
    if not isinstance(prefix, str) or not IDENTIFIER.match(prefix) or prefix in C_KEYWORDS:
        raise InputError("prefix must be a C identifier (letters, digits and '_', not starting with a digit, "
                         "not a C keyword), got %r" % (prefix,))
    return prefix


def check_model(model):
    """Refuse what the generator does not cover yet, naming it."""
    if len(model.joint_names) == 0:
        raise InputError("codegen needs a model with at least one moving joint: %r has none" % (model.name,))


def generate(model, prefix, source=None, date=None):
    """(header text, source text) of the C code for ``model``.

    Args:
        model: a :class:`robot_dynamics.Model` (fixed base, or a floating or planar root).
        prefix: C identifier that starts every generated name.
        source: where the model came from, for the comments (default ``model.name``).
        date: the generation date written in the comments; None: today (UTC),
            "" for none (:func:`robot_dynamics.codegen.compile` hashes the text).
    """
    check_prefix(prefix)
    check_model(model)
    if date is None:
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    origin = "robot %s (%s)%s" % (comment_text(model.name), comment_text(source or model.name),
                                  ", generated %s" % comment_text(date) if date else "")
    bodies = {name: _body(model, name) for name, *_ in FUNCTIONS}
    return _header(model, prefix, origin), _source(model, prefix, origin, bodies)


def _body(model, name):
    """The C statements of one function. A floating or planar root runs the
    fixed-base algorithms on the kernels' coordinates with the root's
    accelerations shifted (:func:`robot_dynamics.codegen.algorithms.shifted`)."""
    em, n, nr = Emitter(), model.nv, model.root_nv
    q = A.inputs("q", model.nq)
    J = A.joints(model, em, A.kernel_positions(model, q))
    g = A.kernel_gravity(model)
    qd, zeros = A.inputs("qd", n), A.zeros(n)
    gravity = A.root_gravity(model, em, q) if nr else []
    if name == "rnea":
        shift = [em.let(A.add(x, y)) for x, y in zip(gravity, A.root_bias(model, em, qd))] if nr else []
        out, target = A.rnea(model, em, J, qd, A.shifted(model, em, A.inputs("qdd", n), shift), g), "tau"
    elif name == "gravity":
        out, target = A.rnea(model, em, J, zeros, A.shifted(model, em, zeros, gravity), g), "g"
    elif name == "coriolis":
        bias = A.root_bias(model, em, qd) if nr else []
        out, target = A.rnea(model, em, J, qd, A.shifted(model, em, zeros, bias), [0.0] * 3), "c"
    elif name == "mass_matrix":
        M = A.joint_space(model, A.crba(model, em, J))
        out, target = [e for row in M for e in row], "M"
    elif model.has_mimic or nr:                         # FDcrb: a coupled tree, a moving root
        M = A.joint_space(model, A.crba(model, em, J))
        h = A.rnea(model, em, J, qd, zeros, g)
        rhs = [em.let(A.sub(t, x)) for t, x in zip(A.inputs("tau", n), h)]
        out, target = A.cholesky_solve(em, M, rhs), "qdd"
        if nr:                                          # qdd_root = x + g_root + b(v)
            bias = A.root_bias(model, em, qd)
            out = [A.add(out[k], gravity[k], bias[k]) for k in range(nr)] + out[nr:]
    else:
        out, target = A.aba(model, em, J, qd, A.inputs("tau", n), g), "qdd"
    for k, e in enumerate(out):
        em.assign("%s[%d]" % (target, k), e)
    return em.body()


def _declarations(prefix):
    return ["void %s_%s(%s);" % (prefix, name, args) for name, args, *_ in FUNCTIONS] + [
        "void %s_%s_batch(int n, %s);" % (prefix, name, args) for name, args, *_ in FUNCTIONS]


def _root_lines(model, P):
    """The header's words on the base: fixed, or the root's coordinates."""
    if model.root_joint is None:
        return [" * Fixed base; SI units (rad, m, kg, s, N m, N); everything in the body frames of the",
                " * URDF, gravity (%s) m/s^2 in the base frame, folded into the code." % comment_text(
                    ", ".join("%g" % x for x in model.gravity)),
                " * q, qd, qdd, tau: %d values in the order of %s_joint_names (mimic joints are not" % (model.nv, P),
                " * coordinates: they follow their source joint, their torque is mapped onto it)."]
    if model.root_joint == "floating":
        root = [" * Floating base: q = (x, y, z, qx, qy, qz, qw, joints), the base position in the world and",
                " * the quaternion world <- base, scalar last (normalised by every function: give a unit one);",
                " * qd, qdd = (vx, vy, vz, wx, wy, wz, joint rates), the base's linear velocity (of its origin)",
                " * and angular velocity in the base frame, qdd their derivatives; tau = (fx, fy, fz, nx, ny,",
                " * nz, joint torques), the wrench on the base in its frame (Pinocchio's conventions)."]
    else:
        root = [" * Planar base: q = (x, y, theta, joints) in the plane of the root placement, qd = (vx, vy,",
                " * wz, joint rates) in the base frame, tau = (fx, fy, nz, joint torques)."]
    return root + [" * SI units; gravity (%s) m/s^2 in the world frame, folded into the code." % comment_text(
                       ", ".join("%g" % x for x in model.gravity)),
                   " * The joints' part: %d values in the order of %s_joint_names (mimic joints follow" % (
                       len(model.joint_names), P),
                   " * their source joint). docs/CODEGEN.md, Conventions."]


def _header(model, prefix, origin):
    P = prefix
    names = "\n".join(" *   %2d  %s" % (k, comment_text(j)) for k, j in enumerate(model.joint_names))
    lines = [
        "/* %s.h: rigid-body dynamics of %s," % (P, origin),
        " * by robot_dynamics.codegen (docs/CODEGEN.md).",
        " *",
        *_root_lines(model, P),
        " * The rotors' reflected inertia (model.armature, docs/ACTUATORS.md) is in rnea, mass_matrix, aba.",
        " * Friction: %s_friction_torques(qd, smoothing, tau) gives each joint's law (docs/ACTUATORS.md);" % P,
        " * no other function includes it (as rd.rnea): add it to a feedforward to compensate it.",
        " * %s_damping and %s_friction hold the URDF <dynamics damping friction> values." % (P, P),
        " * Every function is re-entrant and thread-safe: no allocation, no global mutable state.",
        " * NAME_batch(n, ...): n states, row-major (state k at q + k * NQ, qd, qdd, tau at + k * NV,",
        " * M at M + k * NV * NV).",
        " *",
        " * Joints:",
        names,
        " */",
        "#ifndef %s_H" % P.upper(), "#define %s_H" % P.upper(), "",
        "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
        "#define %s_NQ %d" % (P, model.nq), "#define %s_NV %d" % (P, model.nv),
        "#define %s_NJ %d   /* joints */" % (P, len(model.joint_names)), "",
        "extern const char *const %s_joint_names[%s_NJ];" % (P, P),
        "extern const double %s_effort_limit[%s_NJ];   /* [N m | N], HUGE_VAL where the URDF has none */" % (P, P),
        "extern const double %s_damping[%s_NJ];        /* viscous [N m s/rad | N s/m], not applied */" % (P, P),
        "extern const double %s_friction[%s_NJ];       /* Coulomb [N m | N], not applied */" % (P, P),
        *frames.header_constants(model, P),
        "",
    ]
    for (name, args, what, _), decl in zip(FUNCTIONS, _declarations(P)):
        lines += ["/* %s */" % what, decl]
    lines += friction.declarations(P)
    lines += frames.declarations(P)
    lines += ["", "/* The same for n states (row-major blocks). */"] + _declarations(P)[len(FUNCTIONS):]
    lines += ["", "#ifdef __cplusplus", "}", "#endif", "#endif", ""]
    return "\n".join(lines)


def _array(model, P, name, values, ctype="double", fmt=c_double):
    items = ", ".join(fmt(x) for x in values)
    return "const %s %s_%s[%s_NJ] = {%s};" % (ctype, P, name, P, items)


def _source(model, P, origin, bodies):
    lines = ["/* %s.c: rigid-body dynamics of %s. See %s.h. */" % (P, origin, P),
             "#include <math.h>", '#include "%s.h"' % P, "",
             "const char *const %s_joint_names[%s_NJ] = {%s};" % (
                 P, P, ", ".join(c_string(j) for j in model.joint_names)),
             _array(model, P, "effort_limit", model.effort_limit),
             _array(model, P, "damping", model.damping),
             _array(model, P, "friction", model.friction), ""]
    for name, args, what, ref in FUNCTIONS:
        if name == "aba" and (model.has_mimic or model.root_joint is not None):
            ref = MIMIC_ABA
        params = [a.split("*")[1].strip() for a in args.split(",")]
        lines += ["/* %s_%s: %s." % (P, name, what),
                  " * %s." % ref,
                  " * %s. */" % origin,
                  "void %s_%s(%s)" % (P, name, args), "{",
                  "    " + " ".join("(void)%s;" % x for x in params),
                  bodies[name], "}", ""]
    for name, args, *_ in FUNCTIONS:
        params = BATCHES[name]
        sizes = ["%s_NV * %s_NV" % (P, P) if x == "M" else "%s_NQ" % P if x == "q" else "%s_NV" % P
                 for x in params]
        call = ", ".join("%s + (long)k * %s" % (x, s) for x, s in zip(params, sizes))
        lines += ["/* %s_%s for n states, row-major (state k at q + k * %s_NQ, the others at k * %s_NV). %s. */"
                  % (P, name, P, P, origin),
                  "void %s_%s_batch(int n, %s)" % (P, name, args), "{",
                  "    int k;", "    for (k = 0; k < n; ++k)", "        %s_%s(%s);" % (P, name, call), "}", ""]
    return "\n".join(lines + friction.source(model, P, origin) + frames.source(model, P, origin))


def write(model, prefix, folder, source=None, date=None):
    """Write ``folder/prefix.h`` and ``folder/prefix.c``; returns their two paths."""
    header, code = generate(model, prefix, source=source, date=date)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / ("%s.h" % prefix), folder / ("%s.c" % prefix)
    paths[0].write_text(header)
    paths[1].write_text(code)
    return paths
