"""``NAME_friction_torques``: each joint's friction law (docs/ACTUATORS.md) as C, its
coefficients folded, the terms that are zero left out.

The laws are those of :mod:`robot_dynamics.model.friction` (the torque
along the motion at joint velocity ``v``):

- viscous:  ``viscous v``
- coulomb:  ``coulomb sgn_s(v) + viscous v``
- stribeck: ``(coulomb + (static - coulomb) exp(-(v / vs)^2)) sgn_s(v) + viscous v``
  (Armstrong-Helouvry, Dupont, Canudas de Wit, Automatica 30(7), 1994)
- sigmoid:  ``phi1 sigma(phi2 (v + phi3)) - phi1 sigma(phi2 phi3)`` (Gaz et al., RA-L 2019)

with ``sgn_s(v) = tanh(v / s)``, ``s`` the law's own smoothing when it has
one > 0, else the call's ``smoothing``; ``sign(v)`` when both are 0. A mimic
joint's law acts at its own velocity (multiplier times its source's) and its
torque is mapped onto the source joint, as ``rd.friction_torques`` does; a
floating or planar root's coordinates have none.

Written once: the C is printed from the same coefficient table
(:func:`robot_dynamics.model.friction.coefficients`) as the compiled law
:func:`robot_dynamics.model.friction.law_torque` evaluates, term for term in
its order (``viscous v + (coulomb + excess exp(-(v inv_vs)^2)) sgn_s(v) +
(phi1 sigma(phi2 (v + phi3)) - offset)``), so the generated function and the
library differ only where a zero term is left out (adding an exact 0) and in
the C library's tanh/exp; test_codegen compares the two. C cannot call the
Python law, and a second description of the law (a table of terms for both
to read) would only move the one formula into a small interpreter; the
coefficients, where the laws differ, come from one place.
"""
from ..model import friction as law
from .literals import c_double, comment_text

SIGNATURE = "const double *qd, double smoothing, double *tau"
WHAT = ("the joints' friction torques tau_f(qd) [N m | N], along the motion, each joint's law "
        "(what a controller adds to compensate friction; smoothing [rad/s | m/s] >= 0)")
REFERENCE = ("docs/ACTUATORS.md: viscous, coulomb (Schilling eq. 6-3-3), stribeck (Armstrong-Helouvry et al. "
             "1994), sigmoid (Gaz et al. 2019); sgn_s(v) = tanh(v / s), sign(v) for s = 0")


def source(model, P, origin):
    """The C lines of ``P_friction_torques`` and its batch, after the static
    helpers they call (only those: an unused static function is a warning)."""
    body = _body(model, P)
    lines = []
    if "%s_sgn(" % P in body:
        lines += ["/* sgn_s(v): tanh(v / s) for s > 0, else sign(v) (0 at v = 0). */",
                  "static double %s_sgn(double v, double s)" % P, "{",
                  "    if (s > 0.0)", "        return tanh(v / s);",
                  "    return (double)((v > 0.0) - (v < 0.0));", "}", ""]
    if "%s_sigma(" % P in body:
        lines += ["/* The logistic function 1 / (1 + exp(-x)), as 0.5 + 0.5 tanh(x / 2): no overflow. */",
                  "static double %s_sigma(double x)" % P, "{",
                  "    return 0.5 + 0.5 * tanh(0.5 * x);", "}", ""]
    return lines + [
        "/* %s_friction_torques: %s." % (P, WHAT), " * %s." % REFERENCE, " * %s. */" % origin,
        "void %s_friction_torques(%s)" % (P, SIGNATURE), "{", body, "}", "",
        "/* %s_friction_torques for n states (state k at qd + k * %s_NV, tau + k * %s_NV). %s. */"
        % (P, P, P, origin),
        "void %s_friction_torques_batch(int n, %s)" % (P, SIGNATURE), "{",
        "    int k;", "    for (k = 0; k < n; ++k)",
        "        %s_friction_torques(qd + (long)k * %s_NV, smoothing, tau + (long)k * %s_NV);" % (P, P, P),
        "}", ""]


def declarations(P):
    """The header's lines of the two functions."""
    return ["/* %s */" % WHAT, "void %s_friction_torques(%s);" % (P, SIGNATURE),
            "void %s_friction_torques_batch(int n, %s);" % (P, SIGNATURE)]


def _body(model, P):
    """The statements of ``P_friction_torques(qd, smoothing, tau)``."""
    lines = []
    G = model.coupling
    for i, name in enumerate(model.body_joint):
        if i < model.root_nv or name not in model.actuators:
            continue
        friction = model.actuators[name].friction
        term = _law(P, law.coefficients([friction])[:, 0])
        if term is None:
            continue
        columns = [j for j in range(model.nv) if G[i, j] != 0.0]
        lines.append("    /* %s: %s */" % (comment_text(name), friction.law))
        lines.append("    v = %s;" % " + ".join(_scaled(G[i, j], "qd[%d]" % j) for j in columns))
        lines.append("    f = %s;" % term)
        lines += ["    tau[%d] += %s;" % (j, _scaled(G[i, j], "f")) for j in columns]
    head = ["    double v, f;"] if lines else ["    (void)qd;"]
    if "smoothing" not in "\n".join(lines):
        head.append("    (void)smoothing;")
    zero = ["    tau[%d] = 0.0;" % j for j in range(model.nv)]          # straight-line, as every function
    return "\n".join(head + zero + lines)


def _law(P, c):
    """The C expression of the law of coefficient column ``c`` (ROWS,) at velocity ``v``, the terms of
    :func:`robot_dynamics.model.friction.law_torque` in its order; None when it is zero."""
    terms = []
    if c[law.VISCOUS] != 0.0:
        terms.append("%s * v" % c_double(c[law.VISCOUS]))
    if c[law.COULOMB] != 0.0 or c[law.EXCESS] != 0.0:
        level = c_double(c[law.COULOMB])
        if c[law.EXCESS] != 0.0:
            level = "(%s + %s * exp(-(v * %s) * (v * %s)))" % (
                level, c_double(c[law.EXCESS]), c_double(c[law.INV_VS]), c_double(c[law.INV_VS]))
        own = c[law.SMOOTH]
        terms.append("%s * %s_sgn(v, %s)" % (level, P, c_double(own) if own > 0 else "smoothing"))
    if c[law.PHI1] != 0.0:
        terms.append("(%s * %s_sigma(%s * (v + %s)) - %s)" % (
            c_double(c[law.PHI1]), P, c_double(c[law.PHI2]), c_double(c[law.PHI3]), c_double(c[law.OFFSET])))
    return " + ".join(terms) or None


def _scaled(factor, x):
    return x if factor == 1.0 else "%s * %s" % (c_double(factor), x)
