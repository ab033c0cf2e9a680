"""Scalar expressions that fold constants while they are built, and the
emitter that writes them out as C99 statements.

The generators in :mod:`robot_dynamics.codegen.spatial` and
:mod:`robot_dynamics.codegen.algorithms` run the book's algorithms on
:class:`Expr` values instead of numbers: a model constant (a placement, an
axis, an inertia) is a literal, a state entry (``q[2]``) or an
intermediate result is a C variable. Products with an exact 0 vanish,
products with an exact +-1 keep the other factor, sums of literals are
computed, so the C code holds only the arithmetic the model's numbers
need: a revolute joint about z never multiplies by its axis' zeros.

An :class:`Expr` is ``sign * text``: negation flips ``neg`` and never adds
code (``a - b * c`` rather than ``a + -(b * c)``). Every literal is
``repr(float)``, which C's ``strtod`` reads back to the same double.
"""
import re

_ATOM = re.compile(r"^(?:[A-Za-z_]\w*(?:\[\d+\])?|[0-9][0-9.e+-]*)$")
ATOM, PRODUCT, SUM = 3, 2, 1      # precedence of an expression's text


class Expr:
    """``-text`` if ``neg`` else ``text``; ``value`` is the number of a literal (None otherwise)."""
    __slots__ = ("text", "neg", "value", "prec")

    def __init__(self, text, neg=False, value=None, prec=ATOM):
        self.text, self.neg, self.value, self.prec = text, neg, value, prec

    def __repr__(self):
        return "Expr(%s)" % c_text(self)


def const(x):
    """A literal; ``const(0.0) is`` the folded zero."""
    x = float(x)
    if x == 0.0:
        return ZERO
    return Expr(repr(abs(x)), x < 0, x, ATOM)


def var(text):
    """A C lvalue or call already valid as an operand (``q[0]``, ``t12``, ``sin(t3)``)."""
    return Expr(text, False, None, ATOM if _ATOM.match(text) else PRODUCT)


ZERO = Expr("0.0", False, 0.0, ATOM)
ONE = Expr("1.0", False, 1.0, ATOM)


def neg(a):
    if a.value is not None:
        return const(-a.value)
    return Expr(a.text, not a.neg, None, a.prec)


def mul(a, b):
    """a * b, folded: an exact zero gives 0, an exact +-1 the other factor."""
    if a.value is not None and b.value is not None:
        return const(a.value * b.value)
    for x, y in ((a, b), (b, a)):
        if x.value == 0.0:
            return ZERO
        if x.value == 1.0:
            return y
        if x.value == -1.0:
            return neg(y)
    if b.value is not None:                  # literal first: "0.5 * x"
        a, b = b, a
    return Expr("%s * %s" % (_operand(a, PRODUCT), _operand(b, PRODUCT + 1)), a.neg != b.neg, None, PRODUCT)


def add(*terms):
    """The sum of ``terms``: zeros dropped, literals added up into one."""
    literal, rest = 0.0, []
    for t in terms:
        if t.value is not None:
            literal += t.value
        else:
            rest.append(t)
    if literal != 0.0:
        rest.append(const(literal))
    if not rest:
        return ZERO
    if len(rest) == 1:
        return rest[0]
    if all(t.neg for t in rest):                   # -a - b == -(a + b)
        return neg(add(*(neg(t) for t in rest)))
    rest.sort(key=lambda t: t.neg)                 # a positive term first
    text = _operand(rest[0], SUM)
    for t in rest[1:]:
        text += (" - " if t.neg else " + ") + _operand(t, SUM + 1)
    return Expr(text, False, None, SUM)


def sub(a, b):
    return add(a, neg(b))


def dot(xs, ys):
    """sum_k xs[k] * ys[k]."""
    return add(*(mul(x, y) for x, y in zip(xs, ys)))


def div(a, b):
    """a / b (b a variable: the generators divide by joint inertias only)."""
    if a.value == 0.0:
        return ZERO
    return Expr("%s / %s" % (_operand(a, PRODUCT), _operand(b, ATOM)), a.neg != b.neg, None, PRODUCT)


def call(fn, a):
    """``fn(a)`` for a function of <math.h> (sin, cos, sqrt)."""
    return Expr("%s(%s)" % (fn, c_text(a)), False, None, PRODUCT)


def _operand(e, prec):
    """The magnitude's text, parenthesised where a context of precedence ``prec`` needs it."""
    return e.text if e.prec >= prec else "(%s)" % e.text


def c_text(e):
    """The full C text of ``e`` (sign included)."""
    if not e.neg:
        return e.text
    return "-" + (e.text if e.prec >= PRODUCT else "(%s)" % e.text)


class Emitter:
    """Collects the statements of one C function body.

    ``let`` names an intermediate result (``const double tN = ...;``) so it
    is computed once; literals and plain variables stay inline.
    """

    def __init__(self, indent="    "):
        self.lines, self.count, self.indent = [], 0, indent

    def let(self, e):
        if e.value is not None or e.prec == ATOM:
            return e
        name = "t%d" % self.count
        self.count += 1
        self.lines.append("%sconst double %s = %s;" % (self.indent, name, e.text))
        return Expr(name, e.neg, None, ATOM)

    def lets(self, es):
        return [self.let(e) for e in es]

    def assign(self, target, e):
        self.lines.append("%s%s = %s;" % (self.indent, target, c_text(e)))

    def line(self, text):
        """A statement or label as it is (``switch (frame) {``, ``case 3: {``)."""
        self.lines.append(text)

    def comment(self, text):
        self.lines.append("%s/* %s */" % (self.indent, text))

    def body(self):
        """The statements, without the named results nothing uses (a sine
        whose rotation folded away, a force no torque reads)."""
        used, kept = set(), []
        for line in reversed(self.lines):
            m = _LET.match(line)
            if m and m.group(1) not in used:
                continue
            used.update(_NAME.findall(line.split("=", 1)[1] if m else _COMMENT.sub("", line)))
            kept.append(line)
        return "\n".join(reversed(kept))


_LET = re.compile(r"^\s*const double (t\d+) = ")
_NAME = re.compile(r"\bt\d+\b")
_COMMENT = re.compile(r"/\*[^*]*\*/")           # a name in a comment is no use
