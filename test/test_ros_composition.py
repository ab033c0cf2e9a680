"""dynamics_node is composed of parts with explicit inputs (issue 33, point 2), checked without DDS:

- the classes of ``DynamicsNode``'s method resolution order that robot_dynamics defines hold at most
  500 lines in all, and none defines a service handler the node does not register;
- no module of robot_dynamics/ros or robot_dynamics/control reads an underscore name through a node
  object it holds (``node._x``, ``self.node._x``), and no node class reads an underscore name that a
  node class of another module defines (``self._x`` of a parent elsewhere).
"""
import ast
import inspect
from pathlib import Path

import pytest

pytest.importorskip('rclpy')

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / 'robot_dynamics'


def own_classes(cls):
    """The classes of ``cls``'s MRO that robot_dynamics defines."""
    return [c for c in cls.__mro__ if c.__module__.startswith('robot_dynamics.')]


def mro_lines(cls):
    return sum(len(inspect.getsourcelines(c)[0]) for c in own_classes(cls))


def node_private_reads(source):
    """[(line, text)] of the ``<node>._<name>`` reads in ``source``: an underscore attribute (not a dunder)
    of a name ``node`` or of an attribute ``.node`` / ``._node``."""
    found = []
    for n in ast.walk(ast.parse(source)):
        if not (isinstance(n, ast.Attribute) and n.attr.startswith('_') and not n.attr.startswith('__')):
            continue
        holder = n.value
        if (isinstance(holder, ast.Name) and holder.id == 'node') or \
                (isinstance(holder, ast.Attribute) and holder.attr in ('node', '_node')):
            found.append((n.lineno, ast.unparse(n)))
    return found


def test_the_detection_finds_node_privates_and_nothing_else():
    positive = 'def f(node):\n    node._now_ns()\nclass A:\n    def g(self):\n        return self.node._warn\n'
    assert node_private_reads(positive) == [(2, 'node._now_ns'), (5, 'self.node._warn')]
    negative = ('def f(node, other):\n    node.now_ns(); other._x; node.__class__\n'
                'class A:\n    def g(self):\n        return self._own, self.node.warn, self.nodes._x\n')
    assert node_private_reads(negative) == []


def test_no_module_reads_a_node_private():
    found = {}
    for folder in ('ros', 'control'):
        for path in sorted((PKG / folder).glob('*.py')):
            reads = node_private_reads(path.read_text())
            if reads:
                found[str(path.relative_to(ROOT))] = reads
    assert not found, found


def privates_used(source):
    """The underscore names (not dunders) that ``source`` reads or writes on ``self``."""
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == 'self' and n.attr.startswith('_')
            and not n.attr.startswith('__')}


def privates_defined(source):
    """The underscore names (not dunders) ``source`` defines: its methods and the attributes it sets on self."""
    tree = ast.parse(source)
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
              and isinstance(n.value, ast.Name) and n.value.id == 'self'}
    return {n for n in names if n.startswith('_') and not n.startswith('__')}


def inherited_privates(source, parent_sources):
    """The underscore names ``source`` (a class) uses that one of ``parent_sources`` (its parents from
    other modules) defines."""
    used = privates_used(source)
    return set().union(*(used & privates_defined(parent) for parent in parent_sources))


def class_privates(cls):
    """:func:`inherited_privates` of ``cls`` and its robot_dynamics parents from other modules."""
    import textwrap
    parents = [textwrap.dedent(inspect.getsource(c)) for c in own_classes(cls)[1:] if c.__module__ != cls.__module__]
    return inherited_privates(textwrap.dedent(inspect.getsource(cls)), parents)


def test_the_inherited_private_detection_works():
    base = 'class Base:\n    def _hidden(self):\n        self._state = 1\n    def shown(self):\n        pass\n'
    child = 'class Child(Base):\n    def f(self):\n        return self._hidden() + self._state + self._mine\n'
    clean = 'class Clean(Base):\n    def f(self):\n        self._mine = self.shown()\n'
    assert inherited_privates(child, [base]) == {'_hidden', '_state'}
    assert inherited_privates(clean, [base]) == set()


@pytest.mark.parametrize('module, name', [('robot_dynamics.ros.dynamics_node', 'DynamicsNode'),
                                          ('robot_dynamics.ros.lifecycle_node', 'DynamicsLifecycleNode'),
                                          ('robot_dynamics.ros.dynamics_services', 'DynamicsServices')])
def test_no_node_class_reads_a_private_of_a_node_class_elsewhere(module, name):
    import importlib
    cls = getattr(importlib.import_module(module), name)
    assert class_privates(cls) == set()


def test_dynamics_node_is_at_most_500_lines_and_defines_no_handler_it_does_not_register():
    from robot_dynamics.ros.dynamics_node import DynamicsNode
    classes = own_classes(DynamicsNode)
    assert [c.__name__ for c in classes] == ['DynamicsNode', 'ModelNode']
    assert mro_lines(DynamicsNode) <= 500, {c.__name__: len(inspect.getsourcelines(c)[0]) for c in classes}
    handlers = [name for c in classes for name in vars(c) if name.startswith('_srv_')]
    assert handlers == []              # the services are functions of the model holder (queries.py, payloads.py)


def test_every_service_function_of_the_holder_is_registered():
    """Each function of (holder, request, response) in queries, timing_queries and payloads is created as
    a service by model_node.register_queries or payloads.register: none is written and left unserved."""
    from robot_dynamics.ros import model_node, payloads, queries, timing_queries
    registered = inspect.getsource(model_node.register_queries) + inspect.getsource(payloads.register)
    handlers = [(module.__name__.rsplit('.', 1)[1], name) for module in (queries, timing_queries, payloads)
                for name, f in vars(module).items()
                if inspect.isfunction(f) and f.__module__ == module.__name__
                and list(inspect.signature(f).parameters) == ['holder', 'request', 'response']]
    assert len(handlers) == 8, handlers
    unserved = [(m, name) for m, name in handlers if '%s.%s' % (m, name) not in registered
                and not (m == 'payloads' and name in registered)]
    assert unserved == []
