"""dynamics_node's ``~/follow_joint_trajectory`` action (control_msgs/action/FollowJointTrajectory), its
``~/joint_trajectory`` topic and ``~/controller_state``, as ros2_controllers' joint_trajectory_controller
(branch ``jazzy``) serves them; docs/NODES.md, "The FollowJointTrajectory action".

The decisions are :mod:`robot_dynamics.control.trajectory_goal`'s; this module converts messages and
keeps the goal. The trajectory is followed by the torque loop: an accepted goal's
:class:`~robot_dynamics.control.trajectory_goal.TrajectoryTracker` becomes the pipeline's reference, which
the loop samples (and which checks the tolerances) with every joint state; nothing here runs in the
joint-state callback. A timer at ``action_monitor_rate`` (the controller's parameter, default 20 Hz)
publishes the feedback and the controller state and ends the goal with the tracker's outcome, as the
controller's goal handle timer does; the execute callback is a coroutine that waits for it without
holding the executor.
"""
import weakref

from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTrajectoryControllerState
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future
from trajectory_msgs.msg import JointTrajectory

from ..control import trajectory_goal as tg
from ..control.compensation import COMPUTED_TORQUE, FEEDFORWARD
from ..control.joint_map import JointMapError
from ..errors import ParameterError
from . import params as P

#: node -> its TrajectoryAction.
SERVED = weakref.WeakKeyDictionary()
#: The modes that follow a trajectory.
FOLLOWING = (FEEDFORWARD, COMPUTED_TORQUE)

#: The parameters this module declares on the node (config/params/trajectory_action.yaml). The per-joint ones,
#: constraints.<joint>.trajectory and constraints.<joint>.goal (default 0: not checked), are declared for the
#: controller's joints when the first goal or message comes.
SCHEMA = P.schema('trajectory_action.yaml')


class TrajectoryAction:
    """The action server, the topic and the state publisher, made on ``node`` (dynamics_node).

    Args:
        pipeline: ``pipeline()`` -> the node's TorqueLoop when it fits the model, else None.
        now_ns: the node clock [ns].
    """

    def __init__(self, node, pipeline, now_ns):
        self.node, self.pipeline, self.now_ns, self.log = node, pipeline, now_ns, node.get_logger()
        # A lifecycle node configured again after a cleanup (which destroys the node's other entities but
        # not an action server, and undeclares only its own parameters): one server, parameters kept.
        previous = SERVED.get(node)
        if previous is not None:
            previous.server.destroy()
        SERVED[node] = self
        problems = []
        for param in SCHEMA:
            if not node.has_parameter(param.name):
                node.declare_parameter(param.name, param.default, param.descriptor())
            problem = param.validate(node.get_parameter(param.name).value)
            if problem:
                problems.append('parameter %r %s' % (param.name, problem))
        if problems:
            raise ParameterError('invalid parameters:\n  ' + '\n  '.join(problems))
        node.add_on_set_parameters_callback(self.on_set_parameters)
        self.goal = None            # (ServerGoalHandle, TrajectoryTracker, Future) of the active goal
        self.futures = {}           # goal_key -> the Future of the goal's Outcome, until its execute takes it
        self.tracker = None         # the TrajectoryTracker the loop follows (a goal's or the topic's)
        self.reported = None        # the tracker whose outcome without a goal was logged
        self.server = ActionServer(node, FollowJointTrajectory, '~/follow_joint_trajectory',
                                   execute_callback=self.execute, goal_callback=self.on_goal,
                                   handle_accepted_callback=self.on_accepted, cancel_callback=self.on_cancel)
        node.create_subscription(JointTrajectory, '~/joint_trajectory', self.on_topic, 10)
        self.state_pub = node.create_publisher(JointTrajectoryControllerState, '~/controller_state', 10)
        node.create_timer(1.0 / node.get_parameter('action_monitor_rate').value, self.monitor)

    def on_set_parameters(self, parameters):
        """A run-time change of this module's parameters: checked as at start (the others: the node's own)."""
        for param in parameters:
            spec = next((p for p in SCHEMA if p.name == param.name), None)
            problem = spec.validate(param.value) if spec is not None else None
            if spec is None and param.name.startswith('constraints.') and param.name.endswith(('.trajectory', '.goal')):
                problem = tolerance_problem(param.value)
            if problem:
                return SetParametersResult(successful=False, reason='%s %s' % (param.name, problem))
        return SetParametersResult(successful=True)

    # --- goals -----------------------------------------------------------------------------------------
    def problem(self, trajectory):
        """Why ``trajectory`` cannot be followed now (tg.goal_problem, or this node's state), or None."""
        pipeline = self.pipeline()
        if pipeline is None:
            return 'no robot model that fits the controller yet'
        if pipeline.mode not in FOLLOWING:
            return "mode is '%s': trajectories are followed in feedforward and computed_torque" % pipeline.mode
        if pipeline.q is None:
            return 'no joint state has given a torque yet'
        return tg.goal_problem(trajectory, pipeline.joint_names, self.now_ns() * 1e-9, pipeline.q,
                               self.node.get_parameter('start_tolerance').value)

    def on_goal(self, goal):
        self.log.info('Received new action goal')
        problem = self.problem(goal.trajectory) or self.parameter_problem()
        if problem:
            self.log.error(problem)
            return GoalResponse.REJECT
        self.log.info('Accepted new action goal')
        return GoalResponse.ACCEPT

    def on_accepted(self, handle):
        """The new goal preempts the active one, and its trajectory becomes the loop's reference."""
        if self.goal is not None:
            self.finish(tg.PREEMPTED)
        self.futures[goal_key(handle)] = future = Future()
        pipeline, tracker = self.pipeline(), None
        if pipeline is not None:
            tolerances, problem = tg.goal_tolerances(self.default_tolerances(), handle.request, pipeline.joint_names)
            if problem:
                self.log.error(problem)
            tracker = self.follow(handle.request.trajectory, tolerances)
        self.goal = (handle, tracker, future)
        handle.execute()
        if tracker is None:                 # the model changed between acceptance and now
            self.finish(tg.Outcome(tg.INVALID_GOAL, 'no robot model that fits the controller'))

    async def execute(self, handle):
        """The goal's result, when :meth:`monitor` (or a preemption, a cancel) has decided it."""
        outcome = await self.futures.pop(goal_key(handle))
        result = FollowJointTrajectory.Result(error_code=outcome.error_code, error_string=outcome.error_string)
        if outcome.canceled and handle.is_cancel_requested:
            handle.canceled()
        elif outcome.succeeded:
            handle.succeed()
        else:
            handle.abort()
        return result

    def on_cancel(self, handle):
        """The active goal canceled: the arm holds its current position (the controller's default)."""
        self.log.info('Got request to cancel goal')
        if self.goal is not None and self.goal[0] is handle:
            self.log.info('Canceling active action goal because cancel callback received.')
            pipeline = self.pipeline()
            if self.goal[1] is not None and pipeline is not None and pipeline.q is not None:
                self.goal[1].hold(pipeline.q)
            self.finish(tg.CANCELED)
        return CancelResponse.ACCEPT

    def finish(self, outcome):
        """End the active goal with ``outcome`` (its execute coroutine reports it)."""
        handle, _, future = self.goal
        self.goal = None
        if not future.done():
            future.set_result(outcome)
        if outcome.succeeded:           # rclpy: one severity per call site
            self.log.info(outcome.error_string)
        elif not outcome.canceled:
            self.log.warning(outcome.error_string)

    # --- the topic and the loop's reference ---------------------------------------------------------------
    def on_topic(self, msg):
        """A trajectory on ~/joint_trajectory: followed, checked like a goal's, without a result."""
        problem = self.problem(msg) or self.parameter_problem()
        if problem:
            return self.log.error(problem)
        self.follow(msg, self.default_tolerances())

    def follow(self, trajectory, tolerances):
        """Make ``trajectory`` the loop's reference (from the current state); its tracker, or None."""
        pipeline = self.pipeline()
        if pipeline is None or pipeline.q is None:
            return None
        merger = pipeline.merger
        try:
            tracker = tg.tracker(trajectory, pipeline.joint_names, tolerances, lambda: (merger.q, merger.qd),
                                 pipeline.q, pipeline.qd)
        except JointMapError as exc:       # goal_problem let it through: a bug, said as such
            self.log.error('trajectory not followed: %s' % exc)
            return None
        stamp = trajectory.header.stamp.sec * 1_000_000_000 + trajectory.header.stamp.nanosec
        pipeline.set_reference(tracker, stamp or self.now_ns())
        self.tracker = tracker
        return tracker

    def parameter_problem(self):
        """Why the tolerance parameters cannot be read (a bad per-joint value), or None."""
        try:
            self.default_tolerances()
        except ParameterError as exc:
            return str(exc)
        return None

    def default_tolerances(self):
        """The tolerances of the parameters (constraints.*), for the controller's joints."""
        node, joints = self.node, self.pipeline().joint_names
        per_joint = {}
        for kind in ('trajectory', 'goal'):
            per_joint[kind] = {}
            for joint in joints:
                name = 'constraints.%s.%s' % (joint, kind)
                try:
                    if not node.has_parameter(name):
                        node.declare_parameter(name, 0.0, ParameterDescriptor(
                            description='%s tolerance of %s [rad or m]; 0: none' % (kind, joint)))
                    value = node.get_parameter(name).value
                except Exception as exc:        # a value of another type in a params file or -p
                    raise ParameterError('parameter %r: %s' % (name, exc)) from None
                problem = tolerance_problem(value)
                if problem:
                    raise ParameterError('parameter %r %s' % (name, problem))
                per_joint[kind][joint] = value
        return tg.default_tolerances(joints, per_joint['trajectory'], per_joint['goal'],
                                     node.get_parameter('constraints.stopped_velocity_tolerance').value,
                                     node.get_parameter('constraints.goal_time').value)

    # --- the monitor -----------------------------------------------------------------------------------
    def monitor(self):
        """Feedback, ~/controller_state, and the goal's end when the tracker has decided it."""
        tracker, pipeline = self.tracker, self.pipeline()
        if tracker is None:
            return
        if pipeline is None or pipeline.reference is not tracker or pipeline.mode not in FOLLOWING:
            self.tracker = None             # replaced on ~/trajectory or ~/reference, a new model, another mode
            if self.goal is not None:
                why = 'no model fits' if pipeline is None else "mode is '%s'" % pipeline.mode
                self.finish(tg.REPLACED if pipeline is not None and pipeline.reference is not tracker
                            else tg.Outcome(tg.INVALID_GOAL, 'the trajectory is no longer followed: %s' % why))
            return
        if tracker.sampled_at is None:
            return
        stamp = self.node.get_clock().now().to_msg()
        names = list(pipeline.joint_names)
        state = JointTrajectoryControllerState(joint_names=names, speed_scaling_factor=1.0)
        state.header.stamp = stamp
        fill(state.reference, tracker.desired)
        fill(state.feedback, tracker.actual)
        fill(state.error, tracker.error)
        state.output.effort = pipeline.views['ct' if pipeline.mode == COMPUTED_TORQUE else 'ff'].tolist()
        self.state_pub.publish(state)
        if self.goal is not None and self.goal[1] is tracker:
            feedback = FollowJointTrajectory.Feedback(joint_names=names, desired=state.reference,
                                                      actual=state.feedback, error=state.error)
            feedback.header.stamp = stamp
            self.goal[0].publish_feedback(feedback)
            if tracker.outcome is not None:
                self.report_violation(tracker, names)
                self.finish(tracker.outcome)
        elif tracker.outcome is not None and tracker.outcome is not tg.SUCCEEDED and self.reported is not tracker:
            self.reported = tracker
            self.report_violation(tracker, names)
            self.log.error('Holding position due to state tolerance violation' if tracker.outcome is tg.PATH_VIOLATED
                           else 'Exceeded goal_time_tolerance: holding position...')

    def report_violation(self, tracker, names):
        for j in tracker.violated:
            self.log.error('State tolerances failed for joint %s: position error %f, velocity error %f'
                           % (names[j], tracker.error[0, j], tracker.error[1, j]))


def goal_key(handle):
    """A goal's id as a dict key (rclpy's ServerGoalHandle is not hashable)."""
    return bytes(handle.goal_id.uuid)


def tolerance_problem(value):
    """A per-joint tolerance parameter's problem: not a number >= 0 (inf: none), or None."""
    if not isinstance(value, float):
        return 'must be a double, got %r' % (value,)
    return None if value >= 0.0 else 'must be >= 0, got %r' % value


def fill(point, rows):
    """A JointTrajectoryPoint's positions, velocities (and accelerations) from ``rows`` ((2 or 3, n))."""
    point.positions = rows[0].tolist()
    point.velocities = rows[1].tolist()
    if len(rows) > 2:
        point.accelerations = rows[2].tolist()
