"""The command-line tool's argument values and tables: joint vectors from
``"0.1,0.2"`` or ``"name=value"`` text (angles may end in ``deg``), numbers
in aligned columns. Shared by :mod:`robot_dynamics.tools.cli` and
:mod:`robot_dynamics.tools.cli_identify`."""
import math

import numpy as np

from ..errors import UsageError


def floats(text, n, what):
    """``n`` finite comma-separated numbers of option ``what`` as an (n,) array; UsageError otherwise."""
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise UsageError("%s: expected %d comma-separated numbers, got %r" % (what, n, text)) from None
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise UsageError("%s: expected %d finite comma-separated numbers, got %r" % (what, n, text))
    return np.array(vals)


def value(text, joint, model, what):
    """One joint value [rad | m] of option ``what``; ``deg`` converts a revolute joint's angle."""
    t = text.strip()
    scale = 1.0
    if t.endswith("deg"):
        if joint is not None and model.joints[joint].type == "prismatic":
            raise UsageError("%s: %r is prismatic, its value is in m, not deg" % (what, joint))
        t, scale = t[:-3], math.pi / 180.0
    try:
        v = float(t) * scale
    except ValueError:
        raise UsageError("%s: %r is not a number" % (what, text)) from None
    if not math.isfinite(v):
        raise UsageError("%s: %r is not finite" % (what, text))
    return v


def joint_vector(text, model, what, default=None):
    """Parse ``"0.1,0.2,..."`` (nq values) or ``"name=value,..."`` into (nq,)."""
    names = model.joint_names
    base = np.zeros(model.nq) if default is None else np.array(default, dtype=float)
    items = [s for s in text.split(",")] if text.strip() else []
    if items and all("=" in s for s in items):
        out = base.copy()
        for s in items:
            name, _, val = s.partition("=")
            name = name.strip()
            if name not in names:
                raise UsageError("%s: unknown joint %r; the joints are: %s" % (what, name, ", ".join(names)))
            out[names.index(name)] = value(val, name, model, what)
        return out
    if any("=" in s for s in items):
        raise UsageError("%s: mix of values and name=value pairs in %r; use one form" % (what, text))
    if len(items) != model.nq:
        raise UsageError("%s: expected %d comma-separated values (one per joint: %s) or name=value pairs, got %d"
                         % (what, model.nq, ", ".join(names), len(items)))
    return np.array([value(s, n, model, what) for s, n in zip(items, names)])


def fmt(x, width=11, scale=1.0):
    """A number in a table cell; |x| < 1e-9 max(1, scale) (rounding residue) shows as 0."""
    if abs(x) < 1e-9 * max(1.0, scale):
        x = 0.0
    if not np.isfinite(x):
        return "%*s" % (width, "inf" if x > 0 else "-inf")
    return "%*.5g" % (width, x)


def table(header, rows, first):
    """Aligned text table: first column left-aligned, numbers right."""
    w = max([len(first)] + [len(r[0]) for r in rows])
    scale = [max([abs(r[c]) for r in rows if np.isfinite(r[c])], default=0.0) for c in range(1, len(header) + 1)]
    lines = ["%-*s %s" % (w, first, " ".join("%11s" % h for h in header))]
    for r in rows:
        lines.append("%-*s %s" % (w, r[0], " ".join(fmt(v, 11, s) for v, s in zip(r[1:], scale))))
    return "\n".join(lines)


def matrix(M, names):
    """M (n, n) as aligned rows, each headed by its joint's name."""
    w = max(len(n) for n in names)
    scale = float(np.max(np.abs(M)))
    out = []
    for i, n in enumerate(names):
        out.append("  %-*s %s" % (w, n, " ".join(fmt(v, 11, scale) for v in M[i])))
    return "\n".join(out)
