"""The nodes' parameter schemas, read from ``config/params/*.yaml``, and their validators (no rclpy here).

One file per node, in the format of ros2_control's generate_parameter_library (its README, "YAML
Syntax" and "Built-In Validators"): the top-level key is the node, under it one entry per parameter
with ``type``, ``default_value``, ``read_only``, ``description`` and ``validation``, a map of validator
names to argument lists. Built-in names end in ``<>`` (``gt<>: [0]``, ``one_of<>: [[a, b]]``); a
custom validator is a function named ``robot_dynamics::<name>``, registered here with
:func:`validator`. Two of this package's own keys sit beside the node's key (each file's header
says so):

- ``include: [model.yaml, state.yaml]``: files whose entries come first, so that an entry shared by
  several nodes is written once;
- ``defaults_from: package.module.Class``: a dataclass whose field defaults are the ``default_value``
  of the entries of the same names, which then give none (simulator_node: ``SimulationSettings``).

And one per entry: ``dynamic_typing: true`` (rclpy's ParameterDescriptor field) for a parameter that
takes a bool or a string. A cross validator (``cross=True``) reads several parameters: listed under
one of them, it is called with all of the node's values and returns its problems.
"""
import importlib
import math
from dataclasses import MISSING, fields
from pathlib import Path

import yaml

#: The files' folder in a checkout and in the ament share directory (bundled.py).
FOLDER = ('config', 'params')
#: This package's keys beside the node's key.
INCLUDE, DEFAULTS_FROM = 'include', 'defaults_from'
#: The package's prefix of custom validator names.
PREFIX = 'robot_dynamics::'

VALUE_CHECKS = {}          # name -> function(value, *args) -> problem text or None
CROSS_CHECKS = {}          # name -> function(params) -> a problem text, a list of them, or None


#: config/params of the checkout this code runs from (an editable install); absent in an installed package.
CHECKOUT = Path(__file__).resolve().parents[2].joinpath(*FOLDER)


def folder():
    """``config/params`` beside this code (a checkout), else in the installed share directory (the ament
    index, else ``<sys.prefix>/share/robot_dynamics``: :func:`robot_dynamics.bundled.share_directory`)."""
    if CHECKOUT.is_dir():
        return CHECKOUT
    from ..bundled import share_directory
    return share_directory().joinpath(*FOLDER)


def node_files():
    """Names of the node files (those that are not only included), sorted."""
    names = sorted(p.name for p in folder().glob('*.yaml'))
    included = {i for n in names for i in _read(n).get(INCLUDE, ())}
    return [n for n in names if n not in included]


def read(name, skip=()):
    """(node name, entries) of the file ``name`` (``'dynamics_node.yaml'``), its includes first, without
    the entries of the files in ``skip``; each entry a dict with its ``name`` and ``file``.

    Raises:
        ValueError: a malformed file, an entry written twice, an unknown validator (naming the file).
    """
    data = _read(name)
    node = _node_key(name, data)
    entries = []
    for other in data.get(INCLUDE, ()):
        entries += [] if other in skip else read(other, skip)[1]
    defaults = _defaults(data.get(DEFAULTS_FROM))
    for pname, spec in data[node].items():
        entry = dict(spec, name=pname, file=name)
        if pname in defaults:
            if 'default_value' in spec:
                raise ValueError('%s: %s has a default_value and %s gives one too; write it once'
                                 % (name, pname, data[DEFAULTS_FROM]))
            entry['default_value'] = defaults[pname]
        _check_entry(name, entry)
        entries.append(entry)
    seen = [e['name'] for e in entries]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise ValueError('%s: parameter(s) %s written more than once (with its includes)' % (name, ', '.join(twice)))
    return node, entries


def _read(name):
    with open(folder() / name, encoding='utf-8') as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict):
        raise ValueError('%s: expected a map with the node name as its key' % name)
    return data


def _node_key(name, data):
    keys = [k for k in data if k not in (INCLUDE, DEFAULTS_FROM)]
    if len(keys) != 1 or not isinstance(data[keys[0]], dict):
        raise ValueError('%s: expected one top-level key, the node (beside include, defaults_from), got %s'
                         % (name, keys))
    return keys[0]


def _defaults(path):
    """{field: default} of the dataclass at ``path`` (``'package.module.Class'``); tuples as lists."""
    if not path:
        return {}
    module, _, cls = path.rpartition('.')
    found = {}
    for f in fields(getattr(importlib.import_module(module), cls)):
        value = f.default if f.default is not MISSING else f.default_factory()
        found[f.name] = list(value) if isinstance(value, tuple) else value
    return found


def _check_entry(name, entry):
    for key in ('type', 'default_value', 'description'):
        if key not in entry:
            raise ValueError('%s: parameter %s has no %s' % (name, entry['name'], key))
    for vname in entry.get('validation') or {}:
        if vname.endswith('<>') and vname[:-2] not in BUILT_IN:
            raise ValueError('%s: parameter %s: unknown validator %s' % (name, entry['name'], vname))
        if not vname.endswith('<>') and not vname.startswith(PREFIX):
            raise ValueError('%s: parameter %s: custom validator %s is not named %s<function>'
                             % (name, entry['name'], vname, PREFIX))


def validator(name, cross=False):
    """Register a custom validator as ``robot_dynamics::<name>`` (a decorator)."""
    def register(function):
        (CROSS_CHECKS if cross else VALUE_CHECKS)[PREFIX + name] = function
        return function
    return register


def value_problem(validation, value):
    """The first problem of ``value`` by the value validators of ``validation`` ({name: args}), or None."""
    for vname, args in (validation or {}).items():
        args = args or []
        if vname.endswith('<>'):
            problem = BUILT_IN[vname[:-2]](value, *args)
        elif vname in VALUE_CHECKS:
            problem = VALUE_CHECKS[vname](value, *args)
        elif vname in CROSS_CHECKS:
            continue
        else:
            raise KeyError('validator %s is not registered (robot_dynamics.ros.param_files.validator)' % vname)
        if problem:
            return problem
    return None


def cross_problems(entries, params):
    """Every problem of the cross validators named in ``entries`` (dicts or objects with ``validation``), run
    on ``params`` (an object with an attribute per valid parameter): all of them run; one that reads a
    parameter ``params`` lacks (invalid by itself, already reported) is skipped."""
    problems = []
    for vname in _cross_names(entries):
        try:
            found = CROSS_CHECKS[vname](params)
        except AttributeError:
            continue
        problems += [found] if isinstance(found, str) else list(found or ())
    return problems


def _cross_names(entries):
    names = []
    for e in entries:
        validation = e.get('validation') if isinstance(e, dict) else e.validation
        names += [n for n in (validation or {}) if n in CROSS_CHECKS and n not in names]
    return names


def _g(x):
    return '%g' % x if isinstance(x, float) else str(x)


#: generate_parameter_library's built-in validators (without the ``<>``), as problem texts.
BUILT_IN = {
    'gt': lambda v, a: None if v > a else 'must be > %s' % _g(a),
    'gt_eq': lambda v, a: None if v >= a else 'must be >= %s' % _g(a),
    'lt': lambda v, a: None if v < a else 'must be < %s' % _g(a),
    'lt_eq': lambda v, a: None if v <= a else 'must be <= %s' % _g(a),
    'bounds': lambda v, lo, hi: None if lo <= v <= hi else 'must be %s to %s' % (_g(lo), _g(hi)),
    'one_of': lambda v, options: None if v in options else 'must be one of %s' % ', '.join(map(str, options)),
    'not_empty': lambda v: None if len(v) else 'must not be empty',
    'fixed_size': lambda v, n: None if len(v) == n else 'must be %d values' % n,
    'size_gt': lambda v, n: None if len(v) > n else 'must be more than %d values' % n,
    'size_lt': lambda v, n: None if len(v) < n else 'must be fewer than %d values' % n,
    'unique': lambda v: None if len(set(v)) == len(v) else 'must not name an element twice',
    'element_bounds': lambda v, lo, hi: (None if all(lo <= x <= hi for x in v)
                                         else 'must hold values from %s to %s' % (_g(lo), _g(hi))),
    'lower_element_bounds': lambda v, lo: None if all(x >= lo for x in v) else 'must hold values >= %s' % _g(lo),
    'upper_element_bounds': lambda v, hi: None if all(x <= hi for x in v) else 'must hold values <= %s' % _g(hi),
}


@validator('finite')
def finite(value):
    return None if math.isfinite(value) else 'must be finite'


@validator('in_unit_interval')
def in_unit_interval(value):
    return None if 0 < value <= 1 else 'must be in (0, 1]'


@validator('finite_vector')
def finite_vector(value, n):
    return None if len(value) == n and all(math.isfinite(x) for x in value) else 'must be %d finite numbers' % n


@validator('finite_values')
def finite_values(value):
    return None if all(math.isfinite(x) for x in value) else 'must hold finite values'


@validator('gains')
def gains(value):
    return None if all(math.isfinite(x) and x >= 0 for x in value) else 'must hold finite gains >= 0'


@validator('positive_values')
def positive_values(value):
    return None if all(math.isfinite(x) and x > 0 for x in value) else 'must hold finite values > 0'
