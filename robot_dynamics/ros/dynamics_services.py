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

Beside dynamics_node (the launch files start it so, as
``dynamics_node_services``), it serves dynamics_node's read-only services
under dynamics_node's names (:mod:`.query_services`) at a lower CPU priority
(``nice``), so that a large request is computed in this process and never
takes the torque loop's GIL or its core.
"""
import os

from ..ros import params as P
from .model_node import ModelNode, run

SERVICES_PARAMS = (
    P.Param('nice', 0, 'Niceness this process adds to itself at start (os.nice; 0-19): a larger value gives '
            'it less CPU than the processes beside it when the cores are busy. The launch files start '
            'dynamics_services beside dynamics_node with 10, so a large request never takes the torque '
            'loop\'s core.', check=lambda v: None if 0 <= v <= 19 else 'must be 0 to 19'),
)


class DynamicsServices(ModelNode):
    """Model + services + payloads + diagnostics (see :mod:`.model_node`)."""

    default_name = 'dynamics_services'
    extra_params = SERVICES_PARAMS

    def __init__(self, node_name=default_name, **kwargs):
        super().__init__(node_name, **kwargs)

    def validate_params(self):
        if self.p.nice:
            os.nice(self.p.nice)

    def diagnostic_status(self, status):
        if status.level == 0:
            status.message = 'serving (%d joints)' % self.model.nq


def main(args=None):
    run(DynamicsServices, args)


if __name__ == '__main__':
    main()
