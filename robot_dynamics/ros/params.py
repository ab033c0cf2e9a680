"""Parameters declared once as a schema, with descriptions and validation.

In the manner of ros2_control's generate_parameter_library: each parameter
has a type, a default, a description (shown by ``ros2 param describe``), a
read-only flag and a check. :func:`declare` declares them all, reads the
values (from ``--params-file``, ``-p`` or a launch file) and raises one
:class:`ParameterError` that lists every problem, each naming the parameter,
what was expected and what came.
"""
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, Optional

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.parameter import Parameter
from ..errors import ParameterError  # noqa: F401




@dataclass(frozen=True)
class Param:
    """One parameter of a node's schema.

    ``check(value)`` returns None if the value is valid, else a text saying
    what is expected (e.g. ``'must be > 0'``). Array parameters with an empty
    default are declared by type (``ptype``), as rclpy cannot infer it.
    """
    name: str
    default: Any
    description: str
    read_only: bool = True
    check: Optional[Callable[[Any], Optional[str]]] = None
    ptype: Optional[Parameter.Type] = None
    choices: Optional[tuple] = None
    dynamic: bool = False        # any type (a bool or a string, e.g.); ``check`` decides

    def descriptor(self, undeclarable=False):
        """Its ParameterDescriptor; ``undeclarable``: not flagged read-only (rclpy cannot undeclare a read-only
        parameter), the node refuses changes itself (:func:`refuse_read_only`)."""
        text = self.description
        if self.choices:
            text += ' One of: %s.' % ', '.join(self.choices)
        return ParameterDescriptor(name=self.name, description=text, read_only=self.read_only and not undeclarable,
                                   dynamic_typing=self.dynamic)

    def validate(self, value):
        """Problem text for ``value``, or None."""
        if self.choices and value not in self.choices:
            return 'must be one of %s, got %r' % (', '.join(self.choices), value)
        if self.check is not None:
            problem = self.check(value)
            if problem:
                return '%s, got %r' % (problem, value)
        return None


def declare(node, schema, undeclarable=False):
    """Declare every parameter of ``schema`` on ``node`` and validate the values (``undeclarable``: see
    :meth:`Param.descriptor`).

    Returns:
        SimpleNamespace with one attribute per parameter (arrays as lists).

    Raises:
        ParameterError: listing every invalid parameter.
    """
    values, problems = {}, []
    for p in schema:
        try:
            if p.ptype is not None and p.default in ([], ()):
                node.declare_parameter(p.name, p.ptype, p.descriptor(undeclarable))
            else:
                node.declare_parameter(p.name, p.default, p.descriptor(undeclarable))
            try:
                value = node.get_parameter(p.name).value
            except ParameterUninitializedException:
                value = list(p.default)
        except Exception as exc:       # a value of the wrong type in a params file or -p
            problems.append('parameter %r: %s' % (p.name, _type_error(exc, p)))
            continue
        if isinstance(value, (list, tuple)) or type(value).__name__ == 'array':
            value = list(value)
        problem = p.validate(value)
        if problem:
            problems.append('parameter %r %s' % (p.name, problem))
        values[p.name] = value
    if problems:
        raise ParameterError('invalid parameters:\n  ' + '\n  '.join(problems))
    return SimpleNamespace(**values)


def refuse_read_only(schema):
    """An on-set-parameters callback that refuses a change of a read-only parameter of ``schema`` (declared
    ``undeclarable``), with the reason rclpy gives for its own read-only parameters."""
    from rcl_interfaces.msg import SetParametersResult
    fixed = {p.name for p in schema if p.read_only}

    def callback(parameters):
        names = [param.name for param in parameters if param.name in fixed]
        if names:
            return SetParametersResult(successful=False, reason='parameter %s cannot be set because it is read-only'
                                       % ', '.join(repr(n) for n in names))
        return SetParametersResult(successful=True)
    return callback


def undeclare(node, schema):
    """Undeclare the parameters of ``schema`` that ``node`` has (declared ``undeclarable``)."""
    for p in schema:
        if node.has_parameter(p.name):
            node.undeclare_parameter(p.name)


def _type_error(exc, p):
    expected = type(p.default).__name__ if p.ptype is None else p.ptype.name.lower()
    if isinstance(p.default, list) and p.default:
        expected = '%s array' % type(p.default[0]).__name__
    return 'expected a value of type %s (%s)' % (expected, exc)


def positive(value):
    return None if value > 0 else 'must be > 0'


def non_negative(value):
    return None if value >= 0 else 'must be >= 0'


def in_unit_interval(value):
    return None if 0 < value <= 1 else 'must be in (0, 1]'


def finite_vector(n):
    def check(value):
        import math
        if len(value) != n or not all(math.isfinite(x) for x in value):
            return 'must be %d finite numbers' % n
        return None
    return check


def gains(value):
    import math
    if not all(math.isfinite(x) and x >= 0 for x in value):
        return 'must hold finite gains >= 0'
    return None


def positive_values(value):
    import math
    if not all(math.isfinite(x) and x > 0 for x in value):
        return 'must hold finite values > 0'
    return None


def finite_values(value):
    import math
    if not all(math.isfinite(x) for x in value):
        return 'must hold finite values'
    return None
