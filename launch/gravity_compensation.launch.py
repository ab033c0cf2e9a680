"""Gravity compensation next to a real arm.

The arm's driver already publishes robot_description (robot_state_publisher)
and joint_states; this starts robot_dynamics' dynamics_node, which publishes
the compensation torque as std_msgs/Float64MultiArray on command_topic for an
effort forward_command_controller (config/ros2_controllers.yaml). Topic
names are relative: launched in the driver's namespace (PushRosNamespace,
or a namespaced include) the node finds its topics there.

    ros2 launch robot_dynamics gravity_compensation.launch.py \\
        joints:=panda_joint1,panda_joint2,panda_joint3,panda_joint4,panda_joint5,panda_joint6,panda_joint7

Arguments: urdf (a URDF file instead of the robot_description topic), params_file,
command_topic, joints (the controller's joints, in its order), publish_command,
joint_states_topic, use_sim_time.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def _names(text):
    """'a, b c' or '[a, b]' -> ['a', 'b', 'c']."""
    return [n for n in text.replace('[', ' ').replace(']', ' ').replace(',', ' ').split() if n]


def launch_setup(context, *args, **kwargs):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    overrides = {
        'publish_command': arg('publish_command').lower() == 'true',
        'command_topic': arg('command_topic'),
        'use_sim_time': arg('use_sim_time').lower() == 'true',
    }
    if arg('urdf'):
        overrides['urdf_path'] = arg('urdf')
    if _names(arg('joints')):
        overrides['joints'] = _names(arg('joints'))
    return [Node(
        package='robot_dynamics',
        executable='dynamics_node',
        name='dynamics_node',
        output='screen',
        parameters=[arg('params_file'), overrides],
        remappings=[('joint_states', arg('joint_states_topic'))],
    )]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value='',
            description='URDF file of the arm. Empty: the model comes from the robot_description topic.'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('robot_dynamics'), 'config', 'gravity_compensation.yaml']),
            description='Parameter file of dynamics_node.'),
        DeclareLaunchArgument(
            'command_topic', default_value='effort_controller/commands',
            description='Float64MultiArray command topic of the effort forward_command_controller '
                        '(relative: in the node\'s namespace).'),
        DeclareLaunchArgument(
            'joints', default_value='',
            description="The controller's joints in its order, comma separated "
                        "(empty: the params_file's, else every model joint)."),
        DeclareLaunchArgument(
            'publish_command', default_value='true', choices=['true', 'false'],
            description='Send the compensation torque to the controller.'),
        DeclareLaunchArgument(
            'joint_states_topic', default_value='joint_states',
            description='sensor_msgs/JointState topic of the driver (relative: in the node\'s namespace).'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='Use /clock (simulation) time.'),
        OpaqueFunction(function=launch_setup),
    ])
