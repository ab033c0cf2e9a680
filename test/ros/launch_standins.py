"""Minimal stand-ins of the ROS 2 `launch` and `launch_ros` APIs.

`launch` and `launch_ros` are not installable from PyPI (the PyPI package
named `launch` is unrelated), so the launch files are checked this way:
these classes implement the small part of the real API that the files use,
with the real semantics (a DeclareLaunchArgument's default is a
substitution performed in the launch context, an OpaqueFunction receives
the context and returns actions, a launch_ros Node's `parameters` is a list
of parameter files and dicts, written by launch_ros to a temporary file
under the `/**` key). :func:`evaluate` runs generate_launch_description()
against them with given arguments and returns the Nodes it describes;
:func:`node_command` turns one into the command line that `ros2 launch`
would run, with the executable resolved through setup.py's console_scripts.

Everything a launch file uses beyond these names fails loudly (ImportError
or AttributeError), so the stand-ins cannot hide a wrong API use silently.
"""
import importlib.util
import os
import re
import sys
import types


class LaunchContext:
    def __init__(self, arguments, package_shares):
        self.launch_configurations = dict(arguments)
        self.package_shares = dict(package_shares)


def _perform(value, context):
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ''.join(_perform(v, context) for v in value)
    return value.perform(context)


class LaunchConfiguration:
    def __init__(self, variable_name, default=None):
        self.variable_name = variable_name
        self.default = default

    def perform(self, context):
        if self.variable_name in context.launch_configurations:
            return context.launch_configurations[self.variable_name]
        if self.default is None:
            raise KeyError('launch configuration %r is not set' % self.variable_name)
        return _perform(self.default, context)


class PathJoinSubstitution:
    def __init__(self, substitutions):
        self.substitutions = list(substitutions)

    def perform(self, context):
        return os.path.join(*[_perform(s, context) for s in self.substitutions])


class TextSubstitution:
    def __init__(self, text=''):
        self.text = text

    def perform(self, context):
        return self.text


class FindPackageShare:
    def __init__(self, package):
        self.package = package

    def perform(self, context):
        return context.package_shares[self.package]


class DeclareLaunchArgument:
    def __init__(self, name, default_value=None, description='', choices=None, **kwargs):
        assert not kwargs, 'unsupported DeclareLaunchArgument options: %s' % kwargs
        self.name = name
        self.default_value = default_value
        self.description = description
        self.choices = choices


class OpaqueFunction:
    def __init__(self, function, args=None, kwargs=None):
        self.function = function
        self.args = args or []
        self.kwargs = kwargs or {}


class LaunchDescription:
    def __init__(self, initial_entities=None):
        self.entities = list(initial_entities or [])


class Node:
    _ALLOWED = {'package', 'executable', 'name', 'namespace', 'parameters', 'remappings',
                'output', 'arguments', 'emulate_tty', 'respawn', 'respawn_delay'}

    def __init__(self, **kwargs):
        unknown = set(kwargs) - self._ALLOWED
        assert not unknown, 'unsupported launch_ros Node options: %s' % unknown
        assert 'package' in kwargs and 'executable' in kwargs
        self.kwargs = kwargs


def install(monkeypatch):
    """Put the stand-in modules in sys.modules (undone by monkeypatch)."""
    mods = {}
    for name in ('launch', 'launch.actions', 'launch.substitutions',
                 'launch_ros', 'launch_ros.actions', 'launch_ros.substitutions'):
        mods[name] = types.ModuleType(name)
    mods['launch'].LaunchDescription = LaunchDescription
    mods['launch'].LaunchContext = LaunchContext
    mods['launch.actions'].DeclareLaunchArgument = DeclareLaunchArgument
    mods['launch.actions'].OpaqueFunction = OpaqueFunction
    mods['launch.substitutions'].LaunchConfiguration = LaunchConfiguration
    mods['launch.substitutions'].PathJoinSubstitution = PathJoinSubstitution
    mods['launch.substitutions'].TextSubstitution = TextSubstitution
    mods['launch_ros.actions'].Node = Node
    mods['launch_ros.substitutions'].FindPackageShare = FindPackageShare
    mods['launch'].actions = mods['launch.actions']
    mods['launch'].substitutions = mods['launch.substitutions']
    mods['launch_ros'].actions = mods['launch_ros.actions']
    mods['launch_ros'].substitutions = mods['launch_ros.substitutions']
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)


def ament_index(monkeypatch, prefix, packages):
    """Make ``packages`` look installed to ament_index_python: their marker files in a
    prefix of the ament index, first on AMENT_PREFIX_PATH (undone by monkeypatch)."""
    index = os.path.join(str(prefix), 'share', 'ament_index', 'resource_index', 'packages')
    os.makedirs(index, exist_ok=True)
    for package in packages:
        open(os.path.join(index, package), 'w').close()
    rest = os.environ.get('AMENT_PREFIX_PATH')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(prefix) + (os.pathsep + rest if rest else ''))


def load(path):
    spec = importlib.util.spec_from_file_location('launch_file_%d' % abs(hash(str(path))), str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def evaluate(path, arguments, package_shares):
    """(declared arguments, nodes) of a launch file evaluated with ``arguments``.

    Raises AssertionError for an unknown argument or a value outside ``choices``.
    """
    description = load(path).generate_launch_description()
    assert isinstance(description, LaunchDescription)
    declared = {e.name: e for e in description.entities if isinstance(e, DeclareLaunchArgument)}
    unknown = set(arguments) - set(declared)
    assert not unknown, 'arguments not declared by %s: %s' % (path, unknown)
    context = LaunchContext({}, package_shares)
    for name, decl in declared.items():                  # declaration order, as launch does
        if name in arguments:
            context.launch_configurations[name] = arguments[name]
        elif decl.default_value is not None:
            context.launch_configurations[name] = _perform(decl.default_value, context)
        value = context.launch_configurations.get(name)
        if decl.choices is not None:
            assert value in decl.choices, '%s=%r not in %s' % (name, value, decl.choices)
    nodes = []
    for entity in description.entities:
        if isinstance(entity, OpaqueFunction):
            nodes += entity.function(context, *entity.args, **entity.kwargs) or []
        elif isinstance(entity, Node):
            nodes.append(entity)
    return declared, nodes, context


def console_scripts(setup_py):
    """{executable: module} from setup.py's console_scripts entries."""
    text = open(setup_py).read()
    return {m.group(1): m.group(2)
            for m in re.finditer(r"'(\w+)\s*=\s*([\w.]+):main'", text)}


def _yaml(value):
    import json
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(_yaml(v) for v in value) + ']'
    return repr(value)


def node_command(node, context, scripts, tmp_path, python=sys.executable):
    """The command line `ros2 launch` runs for ``node`` (as python -m <module>)."""
    kw = node.kwargs
    assert kw['package'] == 'robot_dynamics'
    module = scripts[kw['executable']]                   # KeyError: no such console script
    cmd = [python, '-m', module, '--ros-args']
    if kw.get('name'):
        cmd += ['-r', '__node:=%s' % _perform(kw['name'], context)]
    if kw.get('namespace'):
        cmd += ['-r', '__ns:=%s' % _perform(kw['namespace'], context)]
    for k, entry in enumerate(kw.get('parameters', [])):
        if isinstance(entry, dict):                      # launch_ros writes dicts under /**
            path = tmp_path / ('%s_params_%d.yaml' % (kw['executable'], k))
            lines = ['/**:', '  ros__parameters:']
            lines += ['    %s: %s' % (name, _yaml(v)) for name, v in entry.items()]
            path.write_text('\n'.join(lines) + '\n')
            cmd += ['--params-file', str(path)]
        else:
            path = _perform(entry, context)
            assert os.path.isfile(path), 'parameter file %s does not exist' % path
            cmd += ['--params-file', path]
    for a, b in kw.get('remappings', []):
        cmd += ['-r', '%s:=%s' % (_perform(a, context), _perform(b, context))]
    return cmd
