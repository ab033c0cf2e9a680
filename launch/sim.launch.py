"""The simulated arm in RViz: simulator_node + robot_state_publisher + rviz2.

    ros2 launch robot_dynamics sim.launch.py                       # the bundled Panda
    ros2 launch robot_dynamics sim.launch.py gravity_compensation:=true
    ros2 launch robot_dynamics sim.launch.py urdf:=/path/arm.urdf rviz:=false
    ros2 launch robot_dynamics sim.launch.py robot:=palletiser gravity_compensation:=true
    ros2 launch robot_dynamics sim.launch.py mode:=cartesian_impedance   # targets: /dynamics_node/target_pose
    ros2 launch robot_dynamics sim.launch.py world_file:=package://robot_dynamics/config/worlds/panda_table.yaml

Starts robot_dynamics' simulator_node (parameters from params_file, default
config/simulator.yaml), robot_state_publisher (TF from the simulator's
joint_states, robot_description) and rviz2 with rviz/sim.rviz (RobotModel,
TF and the simulator's ~/markers, fixed frame panda_link0). All nodes get
the same robot_description: the `urdf` file (run through xacro if it ends in
.xacro). With gravity_compensation:=true, dynamics_node (config/
gravity_compensation.yaml, publish_command true) closes the loop: it reads
joint_states and sends the compensation torque on effort_controller/commands,
the simulator's default effort command topic, and the arm holds its pose;
mode:=<a dynamics_node mode> starts it too, in that mode (joint_impedance and
cartesian_impedance hold the arm where it starts until a target comes on
~/target_joints or ~/target_pose; the simulator then publishes joint states
at 250 Hz, since a Cartesian torque costs about 1 ms in Python: docs/NODES.md,
"Impedance modes");
dynamics_services (as dynamics_node_services) serves dynamics_node's
read-only services under its names from a process of its own (docs/NODES.md,
"Which requests go where").
Every topic name is relative, so the loop closes in any namespace the
nodes share (RViz's config names the root namespace's topics).
use_sim_time:=true makes the simulator publish /clock and the other nodes
follow it. For another arm, give a params_file whose `joints` and
`initial_positions` fit it (and pick its root link as RViz's fixed frame).

robot:=palletiser runs the closed-loop example instead
(urdf/examples/palletiser.urdf with palletiser.loops.yaml, docs/LOOPS.md):
both robot_dynamics nodes get `loops_file` and `actuated_joints` (the three
motors, also the command's `joints`), the simulator starts at
`initial_positions` of the motors with the parallelogram closed and
publishes every joint at 250 Hz (the closed-loop step and compensation
cost 0.3-0.7 ms each: docs/LOOPS.md), RViz's fixed frame is base_link.
For another closed-loop robot: urdf:=..., loops_file:=... and
actuated_joints:=a,b,c with a params_file that fits it.
world_file:=<YAML> gives the simulator a world to touch (docs/CONTACT.md: a
table, free bodies; the bundled config/worlds/panda_table.yaml is a table
with three boxes under the Panda's hand): the bundled Panda's visuals are
its collision shapes, with urdf/panda_arm.srdf (another `urdf`: its
<collision> elements); RViz shows the contacts on /simulator/contact_markers
once that topic is added to the display.
actuators_file:=arm.actuators.yaml gives both robot_dynamics nodes the
joints' armature and friction laws (docs/ACTUATORS.md): the simulated arm
has them, and dynamics_node's model knows them.

robot_state_publisher, rviz2 and xacro are optional dependencies of the
package (a headless robot computer needs none of them, and rviz2 brings Qt):
when one that this launch needs is missing, it stops and names the packages
to install (docs/INSTALL.md).
"""
import os

from ament_index_python import has_resource
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from robot_dynamics.control.compensation import GRAVITY_CORIOLIS, IMPEDANCE_MODES, MODES
from robot_dynamics.ros import query_services


def _require(packages, why):
    """Stop the launch with what to install when one of ``packages`` is not in the ament index."""
    def installed(package):
        try:
            return bool(has_resource('packages', package))
        except OSError:              # AMENT_PREFIX_PATH unset: no ROS environment at all
            return False

    missing = [p for p in packages if not installed(p)]
    if missing:
        distro = os.environ.get('ROS_DISTRO', 'jazzy')
        raise RuntimeError(
            'sim.launch.py needs %s (%s), not installed: an optional dependency of robot_dynamics, '
            'left out so that a headless robot computer gets no Qt. Install with\n'
            '    sudo apt install %s\n'
            'or run rosdep install with ROBOT_DYNAMICS_VISUALIZATION=1 set (docs/INSTALL.md).'
            % (' and '.join(missing), why, ' '.join('ros-%s-%s' % (distro, p.replace('_', '-')) for p in missing)))


def _description(path):
    """The URDF text of ``path``; a .xacro file is expanded with xacro."""
    if path.endswith('.xacro'):
        _require(['xacro'], 'to expand %s' % os.path.basename(path))
        import xacro
        return xacro.process_file(path).toxml()
    with open(path, encoding='utf-8') as f:
        return f.read()


#: The robots of the `robot` argument: URDF and loops file (share-relative), the parameters both
#: robot_dynamics nodes get on top of their files (the simulator's `initial_positions` and
#: `publish_rate` too), RViz's fixed frame.
MOTORS = ['turntable_joint', 'shoulder_joint', 'drive_joint']
ROBOTS = {
    'panda': dict(urdf=('urdf', 'panda_arm.urdf'), loops=None, params={}, simulator={}, fixed_frame=None,
                  contact={'collision_geometry': 'visual', 'srdf_file': ('urdf', 'panda_arm.srdf')}),
    'palletiser': dict(urdf=('urdf', 'examples', 'palletiser.urdf'),
                       loops=('urdf', 'examples', 'palletiser.loops.yaml'),
                       params={'joints': MOTORS, 'actuated_joints': MOTORS},
                       simulator={'initial_positions': [0.0, 0.3, 0.6], 'publish_rate': 250.0},
                       fixed_frame='base_link', contact={}),
}


def launch_setup(context, *args, **kwargs):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    def share(*parts):
        return PathJoinSubstitution([FindPackageShare('robot_dynamics')] + list(parts)).perform(context)

    if arg('rviz') == 'true':
        _require(['robot_state_publisher', 'rviz2'], 'TF and RViz; rviz:=false starts no RViz')
    else:
        _require(['robot_state_publisher'], "TF from the simulator's joint states")
    robot = ROBOTS[arg('robot')]
    description = _description(arg('urdf') or share(*robot['urdf']))
    sim_time = arg('use_sim_time') == 'true'
    # What both robot_dynamics nodes get on top of their parameter files: the robot's, then the arguments'.
    ours = dict(robot['params'])
    loops = arg('loops_file') or (share(*robot['loops']) if robot['loops'] else '')
    if loops:
        ours['loops_file'] = loops
    if arg('actuated_joints'):
        ours['actuated_joints'] = ours['joints'] = arg('actuated_joints').split(',')
    if arg('actuators_file'):       # the simulated arm and the compensation: the same armature and friction
        ours['actuators_file'] = arg('actuators_file')
    mode = arg('mode')
    simulator = dict(robot['simulator'])
    if mode in IMPEDANCE_MODES:
        simulator['publish_rate'] = 250.0       # a Cartesian torque costs about 1 ms in Python (docs/NODES.md)
    if arg('world_file'):
        simulator['world_file'] = arg('world_file')
        if not arg('urdf'):                     # the bundled robot's shapes: its visuals for the Panda
            simulator.update({k: share(*v) if isinstance(v, tuple) else v for k, v in robot['contact'].items()})
    ns = {'namespace': arg('namespace')} if arg('namespace') else {}     # every node in the arm's namespace
    nodes = [
        Node(package='robot_dynamics', executable='simulator_node', name='simulator', output='screen', **ns,
             parameters=[arg('params_file'), dict(ours, **simulator, robot_description=description,
                                                  publish_clock=sim_time)]),
        Node(package='robot_state_publisher', executable='robot_state_publisher', name='robot_state_publisher',
             output='screen', **ns, parameters=[{'robot_description': description, 'use_sim_time': sim_time}]),
    ]
    if arg('rviz') == 'true':
        frame = ['-f', robot['fixed_frame']] if robot['fixed_frame'] else []
        nodes.append(Node(package='rviz2', executable='rviz2', name='rviz2', output='screen', **ns,
                          arguments=['-d', arg('rviz_config')] + frame, parameters=[{'use_sim_time': sim_time}]))
    if arg('gravity_compensation') == 'true' or mode != GRAVITY_CORIOLIS:
        # dynamics_node, and dynamics_services serving its read-only services under its names (query_services.py).
        services = query_services.services_node_name('dynamics_node')
        params = [share('config', 'gravity_compensation.yaml'),
                  dict(ours, robot_description=description, publish_command=True, mode=mode,
                       use_sim_time=sim_time, services_node=services)]
        nodes.append(Node(package='robot_dynamics', executable='dynamics_node', name='dynamics_node',
                          output='screen', parameters=params, **ns))
        nodes.append(Node(package='robot_dynamics', executable='dynamics_services', name=services,
                          output='screen', parameters=params + [{'nice': query_services.NICE}],
                          remappings=query_services.remappings('dynamics_node'), **ns))
    return nodes


def generate_launch_description():
    def share(*parts):
        return PathJoinSubstitution([FindPackageShare('robot_dynamics')] + list(parts))

    return LaunchDescription([
        DeclareLaunchArgument(
            'actuators_file', default_value='',
            description="YAML of the joints' actuators (armature, gear ratio, friction law; docs/ACTUATORS.md), "
                        'for the simulator and dynamics_node alike. Empty: the URDF\'s <dynamics> and '
                        '<transmission> only.'),
        DeclareLaunchArgument(
            'robot', default_value='panda', choices=sorted(ROBOTS),
            description='The bundled robot: panda (urdf/panda_arm.urdf), or palletiser (the closed-loop example '
                        'urdf/examples/palletiser.urdf with its loops_file, the three motors as actuated_joints).'),
        DeclareLaunchArgument(
            'urdf', default_value='',
            description="URDF (or .xacro) file of the arm; every node gets it as robot_description. Empty: the "
                        "`robot`'s."),
        DeclareLaunchArgument(
            'loops_file', default_value='',
            description="YAML file of the closure joints of a closed-loop robot (docs/LOOPS.md), for both "
                        "robot_dynamics nodes. Empty: the `robot`'s (the palletiser's), or none."),
        DeclareLaunchArgument(
            'actuated_joints', default_value='',
            description='Comma-separated joints with motors of a closed-loop robot (actuated_joints and the '
                        "command's joints of both robot_dynamics nodes). Empty: the `robot`'s."),
        DeclareLaunchArgument(
            'params_file', default_value=share('config', 'simulator.yaml'),
            description='Parameter file of simulator_node.'),
        DeclareLaunchArgument(
            'rviz', default_value='true', choices=['true', 'false'], description='Start rviz2.'),
        DeclareLaunchArgument(
            'rviz_config', default_value=share('rviz', 'sim.rviz'), description='RViz configuration file.'),
        DeclareLaunchArgument(
            'gravity_compensation', default_value='false', choices=['true', 'false'],
            description='Also start dynamics_node, which holds the arm with gravity + Coriolis compensation.'),
        DeclareLaunchArgument(
            'mode', default_value=GRAVITY_CORIOLIS, choices=list(MODES),
            description="dynamics_node's mode (docs/NODES.md); another than gravity_coriolis starts dynamics_node "
                        'without gravity_compensation:=true. The impedance modes hold the arm where it starts until '
                        'a target comes on /dynamics_node/target_pose or target_joints.'),
        DeclareLaunchArgument(
            'world_file', default_value='',
            description="The simulator's world (docs/CONTACT.md): a YAML path or package:// URI, e.g. "
                        'package://robot_dynamics/config/worlds/panda_table.yaml. Empty: nothing to touch.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='The simulator publishes /clock and every node runs on it.'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of every node (a second simulated arm beside the first). Empty: the launch\'s '
                        'own (e.g. a PushRosNamespace).'),
        OpaqueFunction(function=launch_setup),
    ])
