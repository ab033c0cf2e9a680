"""Parameters declared from a schema file, with descriptions and validation.

Each node's parameters are written once, in ``config/params/<node>.yaml`` in the format of ros2_control's
generate_parameter_library (:mod:`.param_files` reads them): a type, a default, a description (shown by
``ros2 param describe``), a read-only flag and validators. :func:`schema` turns a file into
:class:`Param` entries; :func:`declare` declares them all, reads the values (from ``--params-file``,
``-p`` or a launch file), runs every validator, the cross validators that read several parameters
included, and raises one :class:`ParameterError` that lists every problem, each naming the parameter,
what was expected and what came. The values come back as a dataclass with one typed attribute per
parameter (:func:`parameters_class`).
"""
from dataclasses import dataclass, field, make_dataclass
from functools import lru_cache
from types import SimpleNamespace
from typing import Any, Callable, Optional

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.parameter import Parameter
from ..errors import ParameterError  # noqa: F401
from . import param_files

#: Python types of generate_parameter_library's parameter types.
PY_TYPES = {'bool': bool, 'int': int, 'double': float, 'string': str, 'bool_array': list[bool],
            'int_array': list[int], 'double_array': list[float], 'string_array': list[str]}
_ARRAY_TYPES = {'bool_array': Parameter.Type.BOOL_ARRAY, 'int_array': Parameter.Type.INTEGER_ARRAY,
                'double_array': Parameter.Type.DOUBLE_ARRAY, 'string_array': Parameter.Type.STRING_ARRAY}


@dataclass(frozen=True)
class Param:
    """One parameter of a node's schema (an entry of its file: :meth:`from_entry`).

    ``validation`` maps validator names to their arguments (:mod:`.param_files`); ``check(value)``, if
    given, is used instead and returns None if the value is valid, else a text saying what is expected
    (e.g. ``'must be > 0'``). Array parameters with an empty default are declared by type (``ptype``), as
    rclpy cannot infer it.
    """
    name: str
    default: Any
    description: str
    read_only: bool = True
    check: Optional[Callable[[Any], Optional[str]]] = None
    ptype: Optional[Parameter.Type] = None
    choices: Optional[tuple] = None
    dynamic: bool = False        # any type (a bool or a string, e.g.); the validators decide
    type: str = ''               # generate_parameter_library's: 'double', 'string_array', ...
    validation: dict = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_entry(cls, entry):
        """The Param of an entry of a schema file (a dict, :func:`.param_files.read`)."""
        validation = dict(entry.get('validation') or {})
        one_of = validation.get('one_of<>')
        default = entry['default_value']
        return cls(name=entry['name'], default=list(default) if isinstance(default, list) else default,
                   description=' '.join(entry['description'].split()), read_only=bool(entry.get('read_only')),
                   ptype=_ARRAY_TYPES.get(entry['type']), choices=tuple(one_of[0]) if one_of else None,
                   dynamic=bool(entry.get('dynamic_typing')), type=entry['type'], validation=validation)

    def descriptor(self, undeclarable=False):
        """Its ParameterDescriptor; ``undeclarable``: not flagged read-only (rclpy cannot undeclare a read-only
        parameter), the node refuses changes itself (:func:`refuse_read_only`)."""
        text = self.description
        if self.choices:
            text += ' One of: %s.' % ', '.join(self.choices)
        return ParameterDescriptor(name=self.name, description=text, read_only=self.read_only and not undeclarable,
                                   dynamic_typing=self.dynamic)

    def validate(self, value):
        """Problem text for ``value`` (its own validators; the cross validators need every value), or None."""
        if self.choices and value not in self.choices:
            problem = 'must be one of %s' % ', '.join(self.choices)
        elif self.check is not None:
            problem = self.check(value)
        else:
            problem = param_files.value_problem(self.validation, value)
        return '%s, got %r' % (problem, value) if problem else None


def schema(name, skip=('model.yaml',)):
    """The Params of the file ``config/params/<name>`` with its includes, less those of the files in ``skip``
    (by default model.yaml's, which every model node declares itself: ``model_node.MODEL_PARAMS``)."""
    return tuple(Param.from_entry(e) for e in param_files.read(name, skip)[1])


@lru_cache(maxsize=None)
def parameters_class(names_and_types):
    """A dataclass with one typed attribute per (name, generate_parameter_library type) (slots: a misspelt
    name fails). Not frozen: a node applies the run-time changes it accepts (``ros2 param set``)."""
    return make_dataclass('Parameters', [(n, _py_type(t)) for n, t in names_and_types], slots=True)


def names_and_types(schema):
    """The key of :func:`parameters_class` for ``schema``: (name, type) pairs; 'any' for a dynamically typed one."""
    return tuple((p.name, 'any' if p.dynamic else p.type) for p in schema)


def _py_type(ptype):
    return PY_TYPES.get(ptype, Any)


def declare(node, schema, undeclarable=False):
    """Declare every parameter of ``schema`` on ``node`` and validate the values (``undeclarable``: see
    :meth:`Param.descriptor`).

    Returns:
        a :func:`parameters_class` instance, one attribute per parameter (arrays as lists).

    Raises:
        ParameterError: listing every problem: each invalid parameter, then each cross validator's.
    """
    values, problems, bad = {}, [], set()
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
            bad.add(p.name)
            continue
        if isinstance(value, (list, tuple)) or type(value).__name__ == 'array':
            value = list(value)
        problem = p.validate(value)
        if problem:
            problems.append('parameter %r %s' % (p.name, problem))
            bad.add(p.name)
        values[p.name] = value
    valid = SimpleNamespace(**{k: v for k, v in values.items() if k not in bad})
    problems += param_files.cross_problems(schema, valid)
    if problems:
        raise ParameterError('invalid parameters:\n  ' + '\n  '.join(problems))
    return parameters_class(names_and_types(schema))(**values)


def check_all(schema, params):
    """Every cross validator of ``schema`` on ``params``: ParameterError listing all their problems."""
    problems = param_files.cross_problems(schema, params)
    if problems:
        raise ParameterError('invalid parameters:\n  ' + '\n  '.join(problems))


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
