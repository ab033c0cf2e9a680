"""The robot_dynamics services alone (no joint-state stream).

    ros2 launch robot_dynamics dynamics_services.launch.py urdf:=/path/to/arm.urdf

Offers ~/gravity_compensation, ~/inverse_dynamics, ~/forward_dynamics,
~/mass_matrix, ~/fill_trajectory_efforts, ~/retime_trajectory,
~/check_trajectory and ~/set_payload
(robot_dynamics_interfaces) under /dynamics_services (under
<namespace>/dynamics_services when launched in a namespace).

Arguments: urdf (empty: the model comes from the robot_description topic),
params_file, use_sim_time.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def launch_setup(context, *args, **kwargs):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    overrides = {'use_sim_time': arg('use_sim_time').lower() == 'true'}
    if arg('urdf'):
        overrides['urdf_path'] = arg('urdf')
    return [Node(
        package='robot_dynamics',
        executable='dynamics_services',
        name='dynamics_services',
        output='screen',
        parameters=[arg('params_file'), overrides],
        **({'namespace': arg('namespace')} if arg('namespace') else {}),
    )]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value='',
            description='URDF file of the robot. Empty: the model comes from the robot_description topic.'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('robot_dynamics'), 'config', 'dynamics_services.yaml']),
            description='Parameter file of dynamics_services.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='Use /clock (simulation) time.'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description="Namespace of the node (the arm's). Empty: the launch's own (e.g. a PushRosNamespace)."),
        OpaqueFunction(function=launch_setup),
    ])
