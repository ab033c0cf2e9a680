"""The simulated arm in RViz: simulator_node + robot_state_publisher + rviz2.

    ros2 launch robot_dynamics sim.launch.py                       # the bundled Panda
    ros2 launch robot_dynamics sim.launch.py gravity_compensation:=true
    ros2 launch robot_dynamics sim.launch.py urdf:=/path/arm.urdf rviz:=false

Starts robot_dynamics' simulator_node (parameters from params_file, default
config/simulator.yaml), robot_state_publisher (TF from the simulator's
joint_states, robot_description) and rviz2 with rviz/sim.rviz (RobotModel,
TF and the simulator's ~/markers, fixed frame panda_link0). All nodes get
the same robot_description: the `urdf` file (run through xacro if it ends in
.xacro). With gravity_compensation:=true, dynamics_node (config/
gravity_compensation.yaml, publish_command true) closes the loop: it reads
joint_states and sends the compensation torque on effort_controller/commands,
the simulator's default effort command topic, and the arm holds its pose.
Every topic name is relative, so the loop closes in any namespace the
nodes share (RViz's config names the root namespace's topics).
use_sim_time:=true makes the simulator publish /clock and the other nodes
follow it. For another arm, give a params_file whose `joints` and
`initial_positions` fit it (and pick its root link as RViz's fixed frame).

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


def launch_setup(context, *args, **kwargs):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    def share(*parts):
        return PathJoinSubstitution([FindPackageShare('robot_dynamics')] + list(parts)).perform(context)

    if arg('rviz') == 'true':
        _require(['robot_state_publisher', 'rviz2'], 'TF and RViz; rviz:=false starts no RViz')
    else:
        _require(['robot_state_publisher'], "TF from the simulator's joint states")
    description = _description(arg('urdf'))
    sim_time = arg('use_sim_time') == 'true'
    nodes = [
        Node(package='robot_dynamics', executable='simulator_node', name='simulator', output='screen',
             parameters=[arg('params_file'), {'robot_description': description, 'publish_clock': sim_time}]),
        Node(package='robot_state_publisher', executable='robot_state_publisher', name='robot_state_publisher',
             output='screen', parameters=[{'robot_description': description, 'use_sim_time': sim_time}]),
    ]
    if arg('rviz') == 'true':
        nodes.append(Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                          arguments=['-d', arg('rviz_config')], parameters=[{'use_sim_time': sim_time}]))
    if arg('gravity_compensation') == 'true':
        nodes.append(Node(
            package='robot_dynamics', executable='dynamics_node', name='dynamics_node', output='screen',
            parameters=[share('config', 'gravity_compensation.yaml'),
                        {'robot_description': description, 'publish_command': True,
                         'mode': 'gravity_coriolis', 'use_sim_time': sim_time}]))
    return nodes


def generate_launch_description():
    def share(*parts):
        return PathJoinSubstitution([FindPackageShare('robot_dynamics')] + list(parts))

    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value=share('urdf', 'panda_arm.urdf'),
            description='URDF (or .xacro) file of the arm; every node gets it as robot_description.'),
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
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='The simulator publishes /clock and every node runs on it.'),
        OpaqueFunction(function=launch_setup),
    ])
