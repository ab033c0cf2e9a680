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
    ~/retime_trajectory       RetimeTrajectory      the fastest timing of a path through waypoints
    ~/check_trajectory        CheckTrajectory       a timed trajectory's worst torque, velocity, acceleration
    ~/set_payload             SetPayload            add / replace / clear a payload

and its status on /diagnostics. A floating or planar robot needs
``base_state_topic`` (as dynamics_node: nav_msgs/Odometry of the base, stale
after ``joint_state_timeout``); the services use its latest fresh state.

Beside dynamics_node (the launch files start it so, as
``dynamics_node_services``), it serves dynamics_node's read-only services
under dynamics_node's names (:mod:`.query_services`) at a lower CPU priority
(``nice``), so that a large request is computed in this process and never
takes the torque loop's GIL or its core.
"""
import os

from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ..errors import InputError
from ..ros import params as P
from ..control.base_state import BaseState
from ..model.model import describe_base
from .model_node import ModelNode, run, warm_up_moving_base
from .timing_queries import warm_up_timing

#: config/params/dynamics_services.yaml: nice, and base_state_topic and joint_state_timeout written once in
#: state.yaml (dynamics_node's too).
SERVICES_PARAMS = P.schema('dynamics_services.yaml')


class DynamicsServices(ModelNode):
    """Model + services + payloads + diagnostics (see :mod:`.model_node`)."""

    default_name = 'dynamics_services'
    extra_params = SERVICES_PARAMS

    def __init__(self, node_name=default_name, **kwargs):
        super().__init__(node_name, **kwargs)
        self.base = None              # the BaseState of a floating or planar model with base_state_topic

    def validate_params(self):
        if self.p.nice:
            os.nice(self.p.nice)

    def warm_up(self):
        super().warm_up()
        warm_up_timing()                     # toppra: its import would otherwise delay the first retiming by ~1 s
        if self.p.base_state_topic:          # the services on a floating or planar base (as dynamics_node)
            warm_up_moving_base()

    def create_inputs(self):
        if self.p.base_state_topic:
            self.create_subscription(Odometry, self.p.base_state_topic, self._on_base_state,
                                     QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))

    def on_model(self, model, joints_changed):
        old = self.base
        self.base = None
        if model.root_joint is not None and self.p.base_state_topic:
            self.base = BaseState(model, self.p.joint_state_timeout * 1e9)
            if old is not None and (old.frame, old.model.root_joint) == (self.base.frame, model.root_joint):
                self.base.update_from(old)
        return None

    def moving_base_problem(self, model):
        return None if self.p.base_state_topic else super().moving_base_problem(model)

    def service_base_state(self, model):
        """The latest base state from ``base_state_topic`` if it is fresh (InputError if not)."""
        base, now = self.base, self.get_clock().now().nanoseconds
        if base is None or not base.fresh(now):
            what = 'no base state' if base is None or not base.known else 'the base state is %.3f s old' % base.age(now)
            raise InputError('%s: %s on %s (fresh: at most joint_state_timeout, %.3f s)' % (
                describe_base(model), what, self.resolve_topic_name(self.p.base_state_topic),
                self.p.joint_state_timeout))
        return base.q.copy(), base.v.copy()

    def _on_base_state(self, msg):
        if self.base is not None:
            self.base.update(msg, self.get_clock().now().nanoseconds)

    def diagnostic_status(self, status):
        if status.level == DiagnosticStatus.OK:
            status.message = 'serving (%d joints)' % len(self.model.joint_names)
        return []


def main(args=None):
    run(DynamicsServices, args)


if __name__ == '__main__':
    main()
