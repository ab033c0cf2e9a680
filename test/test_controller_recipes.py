"""The controller recipes under config/controllers/ load with the Jazzy spawner, with and without a namespace.

A recipe is read twice, and both readers must find each controller's section:

1. **The spawner** (``ros2 run controller_manager spawner <controller> --param-file <recipe>``, started in the
   controller_manager's namespace) looks up the controller's section, sets ``<controller>.params_file`` and
   ``<controller>.type`` on the controller_manager from it, then loads the controller. Its rule is in
   ros-controls/ros2_control, branch jazzy, commit 9ffbf97fd6798085db22797fed44da59089dc10a,
   controller_manager/controller_manager/controller_manager_services.py, functions
   get_params_files_with_controller_parameters and get_parameter_from_param_files; the namespace it uses is the
   spawner node's own (spawner.py, same commit). :func:`spawner_parameter` restates that rule: the candidate keys,
   in order, are the bare name, ``<ns>/<name>`` (``/<name>`` in ``/``), ``/**/<name>`` and ``/**<ns>/<name>``, each at
   the top level or under a top-level ``/**``; a top-level ``/**`` holding ``ros__parameters`` itself serves every
   controller. A bare key in a namespaced spawner is refused ("Missing namespace : <ns> or wildcard in parameter
   file for controller : <name>"): the file is then not used for that controller at all, so no ``type`` is set and
   the controller_manager cannot load it ("The 'type' param was not defined for '<name>'.",
   controller_manager/src/controller_manager.cpp, same commit).

2. **The controller's own node.** The controller_manager creates it in its own namespace, named after the
   controller, with ``--ros-args --params-file <recipe>`` (controller_manager.cpp, determine_controller_node_options,
   same commit). rcl's YAML parser (ros2/rcl, rcl_yaml_param_parser/src/parse.c, tag 9.2.0, Jazzy) keeps every key
   above ``ros__parameters`` as a node name and accepts ``/*`` and ``/**`` as namespace segments; the matching is
   rclcpp's (ros2/rclcpp, branch jazzy, commit 985e320de3a3549d5bc674876c79a5531bf301c2,
   rclcpp/src/rclcpp/parameter_map.cpp, is_node_name_matched and parameter_map_from): a name without a leading ``/``
   gets one, ``/*`` stands for one namespace token and ``/**`` for any number of them, and a section applies when it
   matches the node's whole name (``/arm1/effort_controller``). :func:`node_parameters` restates that. So
   ``/**/effort_controller`` reaches the controller in ``/`` and in any namespace, while a bare
   ``effort_controller`` reaches only ``/effort_controller``: in a namespace the node would not get its ``joints``
   either.

The tests prove, for every recipe and for a controller_manager in ``/``, ``/arm1`` and ``/lab/arm1``, that each
controller the recipe declares gets its ``type`` from the spawner and its ``type`` and ``joints`` in its node, and
that the former bare-key form of the same recipe is refused in a namespace (so these tests can fail).
"""
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted((ROOT / 'config' / 'controllers').glob('*.yaml'))
PROFILES = ROOT / 'config' / 'robots'
NAMESPACES = ('/', '/arm1', '/lab/arm1')
WILDCARD = '/**'
PARAMS = 'ros__parameters'
EFFORT_TYPE = 'effort_controllers/JointGroupEffortController'
BROADCASTER_TYPE = 'joint_state_broadcaster/JointStateBroadcaster'


class Refused(Exception):
    """The spawner refuses the file for this controller (a bare key in a namespace)."""


def _spawner_sections(recipe, controller, namespace):
    """The sections the spawner considers for ``controller``, in its order of candidate keys."""
    qualified = '/' + controller if namespace == '/' else namespace + '/' + controller
    everywhere = recipe.get(WILDCARD) if isinstance(recipe.get(WILDCARD), dict) else {}
    sections = []
    for key in (controller, qualified, WILDCARD + '/' + controller, WILDCARD + qualified):
        if key in recipe:
            if key == controller and namespace != '/':
                raise Refused('Missing namespace : %s or wildcard in parameter file for controller : %s'
                              % (namespace, controller))
            sections.append(recipe[key])
        elif key in everywhere:
            sections.append(everywhere[key])
        elif PARAMS in everywhere:
            sections.append(everywhere)
    return sections


def spawner_parameter(recipe, controller, namespace, name):
    """The value the Jazzy spawner in ``namespace`` reads for ``controller``'s parameter ``name`` from ``recipe``
    (None: not there). Raises :class:`Refused` where the spawner refuses the file."""
    for section in _spawner_sections(recipe, controller, namespace):
        if not isinstance(section, dict) or PARAMS not in section:
            raise ValueError('not a ROS parameter file for controller %s' % controller)
        if name in section[PARAMS]:
            return section[PARAMS][name]
    return None


def spawner_uses_file(recipe, controller, namespace):
    """Whether the spawner passes the file to the controller_manager as the controller's params_file."""
    try:
        return bool(_spawner_sections(recipe, controller, namespace))
    except Refused:
        return False


def node_parameters(recipe, node):
    """The parameters the node named ``node`` (fully qualified) gets from ``recipe`` passed with --params-file.
    Only flat recipes (every top-level key's value is ``{ros__parameters: {...}}``), which test_recipe_shape checks."""
    params = {}
    for key, section in recipe.items():
        name = key if key.startswith('/') else '/' + key
        pattern = name.replace('/*', r'(/\w+)')      # '/**' -> '(/\w+)*': any number of namespace tokens
        if re.fullmatch(pattern, node):
            params.update(section[PARAMS])
    return params


def load(path):
    return yaml.safe_load(Path(path).read_text())


def declared(recipe):
    """{controller name: its ros__parameters} of a wildcard recipe."""
    return {key[len(WILDCARD) + 1:]: section[PARAMS] for key, section in recipe.items()}


def bare(recipe):
    """The same recipe with the bare top-level keys the recipes had before."""
    return {key[len(WILDCARD) + 1:]: section for key, section in recipe.items()}


def qualified(namespace, controller):
    return ('' if namespace == '/' else namespace) + '/' + controller


def test_there_are_recipes():
    assert {p.stem for p in RECIPES} >= {'franka', 'generic', 'kinova', 'ur'}


@pytest.mark.parametrize('path', RECIPES, ids=lambda p: p.stem)
def test_recipe_shape(path):
    """Wildcard keys only, each holding only ros__parameters with a type; effort controllers are
    JointGroupEffortController with `joints` and nothing it does not take (effort_controllers' userdoc, branch
    jazzy: "the ``joints`` parameter is the only one that is required"; it sets interface_name itself)."""
    recipe = load(path)
    assert recipe, path
    for key, section in recipe.items():
        assert key.startswith(WILDCARD + '/') and '/' not in key[len(WILDCARD) + 1:], key
        assert list(section) == [PARAMS], key
    for name, params in declared(recipe).items():
        if params['type'] == BROADCASTER_TYPE:
            continue
        assert params['type'] == EFFORT_TYPE, (path.stem, name)
        assert set(params) == {'type', 'joints'}, (path.stem, name)
        assert params['joints'] and all(isinstance(j, str) for j in params['joints'])


@pytest.mark.parametrize('namespace', NAMESPACES)
@pytest.mark.parametrize('path', RECIPES, ids=lambda p: p.stem)
def test_every_controller_gets_its_type_and_joints(path, namespace):
    recipe = load(path)
    for name, params in declared(recipe).items():
        assert spawner_uses_file(recipe, name, namespace), (name, namespace)
        assert spawner_parameter(recipe, name, namespace, 'type') == params['type'], (name, namespace)
        node = node_parameters(recipe, qualified(namespace, name))
        assert node == params, (name, namespace, node)
        if params['type'] == EFFORT_TYPE:
            assert node['joints'] == params['joints']


@pytest.mark.parametrize('path', RECIPES, ids=lambda p: p.stem)
def test_the_old_bare_keys_fail_in_a_namespace(path):
    old = bare(load(path))
    for name, section in old.items():
        # In / the bare key works for both readers ...
        assert spawner_parameter(old, name, '/', 'type') == section[PARAMS]['type']
        assert node_parameters(old, '/' + name) == section[PARAMS]
        # ... in a namespace the spawner refuses it (no type: the controller does not load) and the node
        # gets none of its parameters.
        for namespace in NAMESPACES[1:]:
            with pytest.raises(Refused, match='Missing namespace : %s or wildcard' % namespace):
                spawner_parameter(old, name, namespace, 'type')
            assert not spawner_uses_file(old, name, namespace)
            assert node_parameters(old, qualified(namespace, name)) == {}


def test_the_rule_on_other_key_forms():
    """The rest of the spawner's and rclcpp's rule, as read in the sources named in the module docstring."""
    section = {PARAMS: {'type': EFFORT_TYPE, 'joints': ['j1']}}
    # A fully qualified key serves its namespace only.
    recipe = {'/arm1/effort_controller': section}
    assert spawner_parameter(recipe, 'effort_controller', '/arm1', 'type') == EFFORT_TYPE
    assert spawner_parameter(recipe, 'effort_controller', '/', 'type') is None
    assert node_parameters(recipe, '/arm1/effort_controller') == section[PARAMS]
    assert node_parameters(recipe, '/arm2/effort_controller') == {}
    # Nested under a top-level /** (the spawner looks there for every candidate key, the bare one included,
    # without the namespace check).
    recipe = {WILDCARD: {'effort_controller': section}}
    assert spawner_parameter(recipe, 'effort_controller', '/arm1', 'type') == EFFORT_TYPE
    assert spawner_parameter(recipe, 'effort_controller', '/', 'type') == EFFORT_TYPE
    # A global /** block serves every controller of every namespace.
    recipe = {WILDCARD: section}
    assert spawner_parameter(recipe, 'anything', '/arm1', 'type') == EFFORT_TYPE
    assert node_parameters(recipe, '/arm1/anything') == section[PARAMS]
    # /* is exactly one namespace token, /** any number (none included).
    assert node_parameters({'/*/c': section}, '/arm1/c') and not node_parameters({'/*/c': section}, '/c')
    assert not node_parameters({'/*/c': section}, '/lab/arm1/c')
    assert node_parameters({'/**/c': section}, '/c') and node_parameters({'/**/c': section}, '/lab/arm1/c')
    assert not node_parameters({'/**/c': section}, '/lab/arm1/c2')
    # A bare key in a namespace refuses the file even if a wildcard key for the same controller follows.
    recipe = {'c': section, '/**/c': section}
    assert not spawner_uses_file(recipe, 'c', '/arm1') and spawner_uses_file(recipe, 'c', '/')


@pytest.mark.parametrize('path', sorted(PROFILES.glob('*.yaml')), ids=lambda p: p.stem)
def test_profile_names_its_recipe_controller_and_type(path):
    profile = load(path)
    controller = profile['controller']
    recipe = declared(load(ROOT / 'config' / controller['recipe']))
    assert recipe[controller['name']]['type'] == controller['type'] == EFFORT_TYPE
    assert controller['command_topic'] == controller['name'] + '/commands'
    states = profile['joint_states']
    assert not states['topic'].startswith('/')               # relative: in the driver's namespace
    assert states['effort'] in ('joint_torque', 'motor_current', 'unknown')
    assert isinstance(states['rate_hz'], (int, float)) and states['rate_hz'] >= 0
    assert states['source']
