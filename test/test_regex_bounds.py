"""No regular expression with nested quantifiers anywhere in the package, and each one in SECURITY.md.

Every call ``re.compile / match / fullmatch / search / sub / subn / split / findall / finditer`` in
robot_dynamics/ whose pattern is a string literal is found in the source (ast) and parsed with
Python's own regular-expression parser: a repeat (``*``, ``+``, ``{m,n}``, ``?`` excepted) inside
another repeat is what backtracks exponentially (issue 31: ``(<!--.*?-->\\s*)*`` hung the nodes on
real URDFs), and fails the test. A pattern that is not a literal fails it too (it could not be
checked). docs/SECURITY.md's table "Regular expressions" lists every pattern with what it reads and
its bound; a pattern missing there fails.
"""
import ast
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    from re import _constants as C, _parser as sre_parse
else:                                           # pragma: no cover - Python 3.10
    import sre_constants as C
    import sre_parse

ROOT = Path(__file__).resolve().parents[1]
CALLS = {"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"}
REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT) + ((C.POSSESSIVE_REPEAT,) if hasattr(C, "POSSESSIVE_REPEAT") else ())


def patterns():
    """[(file:line, pattern)] of every re.<call>(literal, ...) in robot_dynamics/."""
    found = []
    for path in sorted((ROOT / "robot_dynamics").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CALLS
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"):
                where = "%s:%d" % (path.relative_to(ROOT), node.lineno)
                arg = node.args[0] if node.args else None
                found.append((where, arg.value if isinstance(arg, ast.Constant) else None))
    return found


def nested_repeat(items, inside=False):
    """True if a repeat that can run more than once stands inside another."""
    for op, av in items:
        if op in REPEATS:
            lo, hi, sub = av
            many = hi is C.MAXREPEAT or hi > 1
            if many and inside:
                return True
            if nested_repeat(sub, inside or many):
                return True
        elif op is C.SUBPATTERN:
            if nested_repeat(av[-1], inside):
                return True
        elif op is C.BRANCH:
            if any(nested_repeat(b, inside) for b in av[1]):
                return True
        elif op in (C.ASSERT, C.ASSERT_NOT):
            if nested_repeat(av[1], inside):
                return True
    return False


def test_the_detector_finds_what_hung_the_nodes():
    """The pattern of 5c0a0a8 is caught; the ones of the package's kind are not."""
    assert nested_repeat(sre_parse.parse(r"\s*(<\?xml[^>]*\?>\s*)?(<!--.*?-->\s*)*<mujoco[\s>/]"))
    assert nested_repeat(sre_parse.parse(r"(a+)+b")) and nested_repeat(sre_parse.parse(r"(?:x|(\d*))*"))
    assert not nested_repeat(sre_parse.parse(r"^[A-Za-z_]\w*(?:\[\d+\])?$"))


PATTERNS = patterns()


@pytest.mark.parametrize("where, pattern", PATTERNS, ids=[w for w, _ in PATTERNS])
def test_no_nested_quantifier(where, pattern):
    assert pattern is not None, "%s: a pattern that is not a literal cannot be checked" % where
    assert not nested_repeat(sre_parse.parse(pattern)), "%s: %r nests a repeat in a repeat" % (where, pattern)


def test_security_md_lists_every_pattern():
    text = (ROOT / "docs" / "SECURITY.md").read_text()
    table = text.split("### Regular expressions", 1)[1]
    missing = [(w, p) for w, p in PATTERNS if "`%s`" % p.replace("|", "\\|") not in table]   # | escaped in a table
    assert PATTERNS and not missing, "docs/SECURITY.md, 'Regular expressions', lacks %s" % missing
