"""dynamics_services: the dynamics services alone (no joint-state stream).

Run: ``ros2 run robot_dynamics dynamics_services --ros-args -p urdf_path:=arm.urdf``
(or ``python -m robot_dynamics.ros.dynamics_services --ros-args ...``).

Gets the model like every node of this package (``robot_description``
parameter, ``urdf_path``, or the ``robot_description`` topic in its
namespace) and offers,
with the robot_dynamics_interfaces types:

    ~/gravity_compensation    GravityCompensation   g(q)
    ~/inverse_dynamics        InverseDynamics       M(q) qdd + C(q, qd) qd + g(q)
    ~/forward_dynamics        ForwardDynamics       qdd from tau
    ~/mass_matrix             MassMatrix            M(q), row-major
    ~/fill_trajectory_efforts TrajectoryEfforts     tau_ff of every trajectory point
    ~/set_payload             SetPayload            add / replace / clear a payload

and its status on /diagnostics.
"""
from .model_node import ModelNode, run


class DynamicsServices(ModelNode):
    """Model + services + payloads + diagnostics (see :mod:`.model_node`)."""

    default_name = 'dynamics_services'

    def __init__(self, node_name=default_name, **kwargs):
        super().__init__(node_name, **kwargs)

    def diagnostic_status(self, status):
        if status.level == 0:
            status.message = 'serving (%d joints)' % self.model.nq


def main(args=None):
    run(DynamicsServices, args)


if __name__ == '__main__':
    main()
