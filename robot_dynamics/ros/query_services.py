"""Which requests go where: the torque node's read-only services, served by another process.

The read-only dynamics services take requests of any size (a trajectory of
100,000 points, 100,000 accelerations). rclpy converts a request to Python
before the callback can look at it, holding the process's GIL for about 10 us
per trajectory point; in the torque node's process that would hold its torque
loop too. So dynamics_node does not serve them (``ModelNode.query_services``):
``dynamics_services``, a process of its own, serves them under dynamics_node's
names, by remapping its private service names, and dynamics_node keeps its
payloads there (``services_node``, payload_sync.py). The launch files start
the two side by side; by hand::

    ros2 run robot_dynamics dynamics_services --ros-args -r __node:=dynamics_node_services \\
        -p urdf_path:=arm.urdf -r ~/gravity_compensation:=dynamics_node/gravity_compensation ...

(:func:`ros_arguments` gives every ``-r``). docs/NODES.md, "Which requests go where".
"""

#: The read-only dynamics services of ModelNode (robot_dynamics_interfaces types).
QUERY_SERVICES = ('gravity_compensation', 'inverse_dynamics', 'forward_dynamics', 'mass_matrix',
                  'fill_trajectory_efforts', 'retime_trajectory', 'check_trajectory')
#: The niceness the launch files give dynamics_services beside the torque node (its ``nice`` parameter): on busy
#: cores a large request's computation yields to the torque loop.
NICE = 10


def services_node_name(torque_node):
    """The name of the dynamics_services node beside the torque node ``torque_node`` (same namespace)."""
    return '%s_services' % torque_node


def remappings(torque_node):
    """[(from, to)]: the dynamics_services node's private services to ``<namespace>/<torque_node>/<service>``."""
    return [('~/%s' % s, '%s/%s' % (torque_node, s)) for s in QUERY_SERVICES]


def ros_arguments(torque_node):
    """The ``--ros-args`` rules (``-r from:=to`` each) of :func:`remappings`, as a list of strings."""
    args = []
    for a, b in remappings(torque_node):
        args += ['-r', '%s:=%s' % (a, b)]
    return args
