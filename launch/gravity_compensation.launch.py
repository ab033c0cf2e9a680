"""Gravity compensation next to a real arm, with the vendor profile of the robot.

The arm's driver already publishes robot_description (robot_state_publisher)
and joint_states; this starts robot_dynamics' dynamics_node, which publishes
the command torque as std_msgs/Float64MultiArray on the profile's command
topic for an effort forward_command_controller. Topic names are relative:
launched in the driver's namespace (PushRosNamespace, or a namespaced
include) the node finds its topics there.

    ros2 launch robot_dynamics gravity_compensation.launch.py robot:=franka
    ros2 launch robot_dynamics gravity_compensation.launch.py robot:=ur
    ros2 launch robot_dynamics gravity_compensation.launch.py \\
        joints:=panda_joint1,panda_joint2,panda_joint3,panda_joint4,panda_joint5,panda_joint6,panda_joint7

robot:= picks the vendor profile config/robots/<robot>.yaml (or a profile
file of your own, a path ending in .yaml): the joints, the controller and its
command topic, dynamics_node's mode and which terms the robot compensates
itself (robot_compensates_gravity / robot_compensates_friction), which the
command then leaves out; docs/ROBOTS.md gives each vendor's sources. The
default, generic, is a robot that adds nothing (the command is the whole
law) and takes the joints from params_file. An unknown name stops the launch
with the list of the known profiles.

spawn_controllers:=true also spawns the profile's effort controller, inactive,
from its recipe (config/controllers/<robot>.yaml, `type` in the controller's
own section: the Jazzy spawner's --param-file), and joint_state_broadcaster
only if the vendor stack does not run one already (spawn_broadcaster:=auto,
the profile's vendor_runs_broadcaster; true / false force it). Activating the
effort controller switches the hardware to torque control: do it yourself
(ros2 control set_controller_state / switch_controllers, docs/ROBOTS.md).

namespace:=<ns> starts every node in the arm's namespace; robot_type:= and
arm_prefix:= (franka) or tf_prefix:= (ur) make the profile's joint names as
the vendor's launch file does (docs/ROBOTS.md), and spawn_controllers then
spawns the controller from a copy of its recipe with those joints.

Arguments: robot, urdf (a URDF file instead of the robot_description topic),
actuators_file (docs/ACTUATORS.md), backend (library or compiled), params_file, command_topic and joints (empty: the profile's, else
params_file's), robot_compensates_gravity and robot_compensates_friction
(empty: the profile's), publish_command, joint_states_topic (empty: the
profile's), use_sim_time, spawn_controllers, spawn_broadcaster,
controller_manager, own_controller (the node deactivates its controller on a
clean stop), command_watchdog, command_timeout, query_services and lifecycle.

command_watchdog:=true (the default, with publish_command:=true) also starts
the command_watchdog node beside dynamics_node: it watches the same command
topic and deactivates the profile's controller through
<controller_manager>/switch_controller when no command came for
command_timeout (0.1 s), which covers a node killed, crashed or hung
(docs/NODES.md).

query_services:=true (the default) also starts dynamics_services as
dynamics_node_services, which serves dynamics_node's read-only services
(/dynamics_node/gravity_compensation, inverse_dynamics, forward_dynamics,
mass_matrix, fill_trajectory_efforts, retime_trajectory, check_trajectory)
from a process of its own, so that no
large request reaches the torque loop's process; dynamics_node keeps its
payloads there (docs/NODES.md, "Which requests go where").
"""
import os
import tempfile

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from robot_dynamics.control import profiles
from robot_dynamics.ros import query_services


def _names(text):
    """'a, b c' or '[a, b]' -> ['a', 'b', 'c']."""
    return [n for n in text.replace('[', ' ').replace(']', ' ').replace(',', ' ').split() if n]


def _profile(robot, config, names):
    """The Profile of the robot argument (a name in config/robots, or a .yaml file) with the joint-name
    arguments ``names`` (robot_type, arm_prefix, tf_prefix; '' for the profile's default)."""
    if robot.endswith('.yaml') and os.path.isfile(robot):
        return profiles.load_profile(robot, names)
    return profiles.load_profile(profiles.profile_path(robot, os.path.join(config, 'robots')), names)


def _recipe(profile, config):
    """The profile's controller recipe; a copy with the profile's joints (made from robot_type, arm_prefix or
    tf_prefix) in a temporary file when they are not the recipe's."""
    recipe = os.path.join(config, profile.controller['recipe'])
    with open(recipe, encoding='utf-8') as f:
        declared = yaml.safe_load(f) or {}
    name = profile.controller['name']
    key = next((k for k in ('/**/' + name, name) if k in declared), None)
    params = (declared.get(key) or {}).get('ros__parameters', {}) if key else {}
    if not profile.joints or 'joints' not in params or list(params['joints']) == list(profile.joints):
        return recipe, declared
    params['joints'] = list(profile.joints)
    fd, path = tempfile.mkstemp(prefix='%s_' % name, suffix='.yaml')
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump(declared, f, sort_keys=False)
    return path, declared


def _node_params(path, node='dynamics_node'):
    """Every parameter the ROS 2 parameter file ``path`` sets for ``node``: those of the keys that apply to
    it (/**, /**/node, node, /ns/node), a later key's value winning, as rcl reads the file."""
    with open(path, encoding='utf-8') as f:
        data = yaml.safe_load(f) or {}
    values = {}
    for key, block in data.items():
        key = str(key)
        applies = key in ('/**', '**', node) or key.endswith('/' + node)
        params = (block or {}).get('ros__parameters') if isinstance(block, dict) else None
        if applies and isinstance(params, dict):
            values.update(params)
    return values


def _params_file_value(path, name, node='dynamics_node'):
    """Parameter ``name`` of ``node`` in the ROS 2 parameter file ``path`` (None if it sets none)."""
    return _node_params(path, node).get(name)


def _watchdog(overrides, profile, arg):
    """The command_watchdog Node: dynamics_node's effective command topic (the argument's or the profile's,
    else params_file's, else the node's default), the controller_manager argument and the profile's
    controller."""
    topic = overrides.get('command_topic') or _params_file_value(arg('params_file'), 'command_topic')
    try:
        timeout = float(arg('command_timeout'))
    except ValueError:
        timeout = float('nan')
    if not timeout > 0 or timeout == float('inf'):
        raise RuntimeError('gravity_compensation.launch.py command_timeout:=%s: expected seconds > 0, e.g. 0.1'
                           % arg('command_timeout'))
    if not arg('controller_manager'):
        raise RuntimeError('gravity_compensation.launch.py command_watchdog:=true needs controller_manager:= '
                           '(the manager that runs the effort controller), or command_watchdog:=false')
    return Node(package='robot_dynamics', executable='command_watchdog', name='command_watchdog', output='screen',
                parameters=[{'command_topic': topic or 'effort_controller/commands',
                             'controller_manager': arg('controller_manager'),
                             'controller_name': profile.controller['name'],
                             'command_timeout': timeout}], **_namespace(arg))


def _spawners(profile, config, arg):
    """The controller_manager spawner Nodes that spawn_controllers / spawn_broadcaster ask for."""
    want = arg('spawn_broadcaster')
    broadcaster = want == 'true' or (want == 'auto' and not profile.controller['vendor_runs_broadcaster'])
    names = (['joint_state_broadcaster'] if broadcaster else []) + [profile.controller['name']]
    recipe, declared = _recipe(profile, config)
    nodes = []
    for name in names:
        # The broadcaster active, the effort controller loaded and configured but inactive: the switch
        # to torque control stays the user's decision. A controller the recipe does not declare (the
        # broadcaster forced next to a vendor stack) is left to the controller_manager's own configuration.
        argv = [name, '--controller-manager', arg('controller_manager')]
        argv += ['--inactive'] if name == profile.controller['name'] else []
        # The recipes key each controller by a wildcard (/**/name), as the Jazzy spawner needs in a namespace.
        argv += ['--param-file', recipe] if {name, '/**/' + name} & set(declared) else []
        nodes.append(Node(package='controller_manager', executable='spawner', output='screen', arguments=argv,
                          **_namespace(arg)))
    return nodes


def _namespace(arg):
    """The Node keyword of the namespace argument: {} when empty (the launch's own namespace, e.g. pushed)."""
    return {'namespace': arg('namespace')} if arg('namespace') else {}


def launch_setup(context, *args, **kwargs):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    config = PathJoinSubstitution([FindPackageShare('robot_dynamics'), 'config']).perform(context)
    try:
        profile = _profile(arg('robot'), config, {k: arg(k) for k in profiles.NAME_ARGUMENTS})
    except profiles.ProfileError as exc:
        raise RuntimeError('gravity_compensation.launch.py robot:=%s: %s' % (arg('robot'), exc)) from None
    overrides = dict(profile.node_parameters())
    overrides.update({
        'publish_command': arg('publish_command').lower() == 'true',
        'use_sim_time': arg('use_sim_time').lower() == 'true',
    })
    if arg('command_topic'):
        overrides['command_topic'] = arg('command_topic')
    if arg('max_state_age'):
        try:
            overrides['max_state_age'] = float(arg('max_state_age'))
        except ValueError:
            raise RuntimeError('gravity_compensation.launch.py max_state_age:=%s: expected seconds, e.g. 0.1'
                               % arg('max_state_age')) from None
    for name in profiles.TERMS.values():          # the user's statement wins over the profile's
        if arg(name):
            overrides[name] = arg(name)
    if arg('urdf'):
        overrides['urdf_path'] = arg('urdf')
    if arg('actuators_file'):
        overrides['actuators_file'] = arg('actuators_file')
    if arg('backend'):
        overrides['backend'] = arg('backend')
    if arg('controller_manager') and arg('own_controller') == 'true':
        overrides['controller_manager'] = arg('controller_manager')
    if _names(arg('joints')):
        overrides['joints'] = _names(arg('joints'))
    if arg('query_services') == 'true':       # served by another process, under dynamics_node's names
        overrides['services_node'] = query_services.services_node_name('dynamics_node')
    nodes = [Node(
        package='robot_dynamics',
        executable='dynamics_lifecycle_node' if arg('lifecycle') == 'true' else 'dynamics_node',
        name='dynamics_node',
        output='screen',
        parameters=[arg('params_file'), overrides],
        remappings=[('joint_states', arg('joint_states_topic') or profile.joint_states['topic'])],
        **_namespace(arg),
    )]
    if arg('query_services') == 'true':
        # dynamics_node's parameters (its file's, under its name too, and the overrides): the same model;
        # what only dynamics_node declares is ignored there.
        params = dict(_node_params(arg('params_file')), **overrides, nice=query_services.NICE)
        nodes.append(Node(package='robot_dynamics', executable='dynamics_services',
                          name=overrides['services_node'], output='screen', parameters=[params],
                          remappings=query_services.remappings('dynamics_node'), **_namespace(arg)))
    if overrides['publish_command'] and arg('command_watchdog') == 'true':
        nodes.append(_watchdog(overrides, profile, arg))
    if arg('spawn_controllers') == 'true':
        nodes += _spawners(profile, config, arg)
    return nodes


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'robot', default_value='generic',
            description='Vendor profile: franka, ur, kinova, generic (config/robots/<robot>.yaml), or a profile '
                        'file (*.yaml). It sets the joints, the command topic, the mode and what the robot '
                        'compensates itself (left out of the command); docs/ROBOTS.md.'),
        DeclareLaunchArgument(
            'urdf', default_value='',
            description='URDF file of the arm. Empty: the model comes from the robot_description topic.'),
        DeclareLaunchArgument(
            'actuators_file', default_value='',
            description="YAML of the joints' actuators (armature, gear ratio, friction law; docs/ACTUATORS.md) "
                        'for dynamics_node and dynamics_services. Empty: the parameter file\'s (none).'),
        DeclareLaunchArgument(
            'backend', default_value='', choices=['', 'library', 'compiled'],
            description="dynamics_node's backend: library, or compiled (C generated for the model and "
                        "compiled with cc, docs/CODEGEN.md). Empty: the parameter file's (library)."),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('robot_dynamics'), 'config', 'gravity_compensation.yaml']),
            description='Parameter file of dynamics_node (the profile and the arguments override it).'),
        DeclareLaunchArgument(
            'command_topic', default_value='',
            description='Float64MultiArray command topic of the effort forward_command_controller '
                        '(relative: in the node\'s namespace). Empty: the profile\'s, else params_file\'s.'),
        DeclareLaunchArgument(
            'joints', default_value='',
            description="The controller's joints in its order, comma separated "
                        "(empty: the profile's, else the params_file's, else every model joint)."),
        DeclareLaunchArgument(
            'publish_command', default_value='true', choices=['true', 'false'],
            description='Send the command torque to the controller.'),
        DeclareLaunchArgument(
            'joint_states_topic', default_value='',
            description='sensor_msgs/JointState topic of the driver (relative: in the node\'s namespace). Empty: '
                        "the profile's (the joint_state_broadcaster's own topic, e.g. franka/joint_states for "
                        'franka: not the 30 Hz relay on joint_states); generic: joint_states.'),
        DeclareLaunchArgument(
            'query_services', default_value='true', choices=['true', 'false'],
            description='Also start dynamics_services (as dynamics_node_services), which serves dynamics_node\'s '
                        'read-only services (gravity_compensation, inverse_dynamics, forward_dynamics, mass_matrix, '
                        'fill_trajectory_efforts, retime_trajectory, check_trajectory) under its names from a process of its own.'),
        DeclareLaunchArgument(
            'lifecycle', default_value='false', choices=['true', 'false'],
            description='Run the managed variant (dynamics_lifecycle_node): it starts unconfigured and '
                        'sends commands only while active (ros2 lifecycle set /dynamics_node configure, activate).'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='Use /clock (simulation) time.'),
        DeclareLaunchArgument(
            'robot_compensates_gravity', default_value='', choices=['', 'true', 'false'],
            description="Does the robot add its own gravity compensation (the command then leaves it out)? "
                        "Empty: the profile's."),
        DeclareLaunchArgument(
            'robot_compensates_friction', default_value='', choices=['', 'true', 'false'],
            description="Does the robot add its own friction compensation? Empty: the profile's (kinova: "
                        "unknown, which must be stated)."),
        DeclareLaunchArgument(
            'spawn_controllers', default_value='false', choices=['true', 'false'],
            description="Also spawn the profile's effort controller, inactive, from its recipe "
                        '(config/controllers/<robot>.yaml) into the running controller_manager.'),
        DeclareLaunchArgument(
            'spawn_broadcaster', default_value='auto', choices=['auto', 'true', 'false'],
            description='With spawn_controllers: spawn joint_state_broadcaster too. auto: only if the profile '
                        'says the vendor stack does not run one (vendor_runs_broadcaster false).'),
        DeclareLaunchArgument(
            'max_state_age', default_value='',
            description="dynamics_node's max_state_age [s]: a joint state older than this by its stamp when "
                        'the node takes it gives no torque. Needs the clock of the joint states synchronised '
                        "with this host's. Empty: the parameter file's (off)."),
        DeclareLaunchArgument(
            'own_controller', default_value='true', choices=['true', 'false'],
            description="dynamics_node owns the profile's effort controller: on a clean stop it sends a zero "
                        'command and deactivates the controller through <controller_manager>/switch_controller.'),
        DeclareLaunchArgument(
            'controller_manager', default_value='controller_manager',
            description='Name of the running controller_manager (relative: in the launch namespace).'),
        DeclareLaunchArgument(
            'command_watchdog', default_value='true', choices=['true', 'false'],
            description='With publish_command: also start command_watchdog, which deactivates the effort '
                        'controller through <controller_manager>/switch_controller when no command came for '
                        'command_timeout (dynamics_node killed, crashed or hung).'),
        DeclareLaunchArgument(
            'command_timeout', default_value='0.1',
            description="command_watchdog's command_timeout [s] (> 0): the longest gap between two commands."),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of every node started here (the arm\'s, as franka.launch.py\'s or '
                        'ur_control.launch.py\'s namespace): its topics, services and controller_manager are '
                        'found in it. Empty: the launch\'s own (e.g. a PushRosNamespace).'),
        DeclareLaunchArgument(
            'robot_type', default_value='',
            description="franka: fr3, fr3v2 or fp3, the <robot_type> of the joint names "
                        "<arm_prefix>_<robot_type>_jointN (franka.launch.py's robot_type). Empty: the profile's (fr3)."),
        DeclareLaunchArgument(
            'arm_prefix', default_value='',
            description="franka: the arm_prefix of franka.launch.py (joint names <arm_prefix>_<robot_type>_jointN). "
                        'Empty: none.'),
        DeclareLaunchArgument(
            'tf_prefix', default_value='',
            description="ur: the tf_prefix of ur_control.launch.py (joint names <tf_prefix>shoulder_pan_joint ...). "
                        'Empty: none.'),
        OpaqueFunction(function=launch_setup),
    ])
