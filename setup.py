"""ament_python build script for robot_dynamics (used by colcon and pip)."""
from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'robot_dynamics'
share = os.path.join('share', package_name)


def package_version():
    """package.xml's <version>: the package's one version, written there only (ROS reads
    package.xml; pip and colcon read it here; robot_dynamics.__version__ is what was installed)."""
    from xml.etree import ElementTree
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'package.xml')
    return ElementTree.parse(path).findtext('version').strip()


def files(pattern):
    """Files matching pattern, minus folder READMEs; [] if the folder is missing."""
    return [path for path in sorted(glob(pattern))
            if os.path.isfile(path) and os.path.basename(path) != 'README.md']


setup(
    name=package_name,
    version=package_version(),
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=[
        ('share/ament_index/resource_index/packages',
            ['resource/' + package_name]),
        (share, ['package.xml']),
        (os.path.join(share, 'launch'), files('launch/*.launch.py')),
        (os.path.join(share, 'urdf'), files('urdf/*')),
        (os.path.join(share, 'urdf', 'textbook'), files('urdf/textbook/*')),
        (os.path.join(share, 'urdf', 'examples'), files('urdf/examples/*')),
        (os.path.join(share, 'config'), files('config/*')),
        (os.path.join(share, 'config', 'robots'), files('config/robots/*.yaml')),
        (os.path.join(share, 'config', 'controllers'), files('config/controllers/*.yaml')),
        (os.path.join(share, 'config', 'params'), files('config/params/*.yaml')),
        (os.path.join(share, 'config', 'worlds'), files('config/worlds/*.yaml')),
        (os.path.join(share, 'rviz'), files('rviz/*.rviz')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='robot_dynamics maintainers',
    maintainer_email='robot-dynamics@example.com',
    description='Rigid-body dynamics of robot arms from a URDF '
                '(RNEA, CRBA, ABA, Jacobians), compiled with numba.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'robot_dynamics_demo = robot_dynamics.tools.demo:main',
            'dynamics_node = robot_dynamics.ros.dynamics_node:main',
            'dynamics_lifecycle_node = robot_dynamics.ros.lifecycle_node:main',
            'dynamics_services = robot_dynamics.ros.dynamics_services:main',
            'simulator_node = robot_dynamics.ros.simulator_node:main',
            'command_watchdog = robot_dynamics.ros.command_watchdog:main',
            'robot-dynamics = robot_dynamics.tools.cli:main',
        ],
    },
)
