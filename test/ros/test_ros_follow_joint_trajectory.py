"""A planner's view of dynamics_node's ``~/follow_joint_trajectory`` (control_msgs/action/FollowJointTrajectory).

The client sends goals as MoveIt's moveit_simple_controller_manager does
(follow_joint_trajectory_controller_handle.cpp: an rclpy ActionClient, the goal's ``trajectory`` alone, its
first point the current state at time 0, the tolerances left to the controller's parameters; a cancel
through the goal handle). simulator_node runs the bundled Panda (physics and joint_states at 1 kHz of
simulated time, /clock, at a quarter of real time as test_ros_trajectory_tracking.py does, for the same
reason: the Python nodes keep up with 1 kHz of simulated time on a loaded 2-core machine) and dynamics_node
follows the goals in mode computed_torque, each in its own process, shared by the cases (one start).

Asserted: what the node decides, as ros2_controllers' joint_trajectory_controller (branch jazzy) decides it:
goals reached (status SUCCEEDED, error_code SUCCESSFUL, "Goal successfully reached!", the arm within the goal
tolerance of the last point), a preemption (the old goal ABORTED with INVALID_GOAL, "Current goal preempted by
new incoming action."), a cancel (CANCELED, the arm holding where it was), the refusals (the goal rejected, the
controller's text in the node's log), a path tolerance violation (the arm pushed off its path by a wrench on
simulator_node's ``~/wrench``: ABORTED, PATH_TOLERANCE_VIOLATED, "Aborted due to path tolerance violation"), a
goal tolerance missed within goal_time_tolerance (GOAL_TOLERANCE_VIOLATED), ``~/joint_trajectory`` and
``~/controller_state``.
"""
import math
import re
import threading
import time

import numpy as np
import pytest
import yaml
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTolerance, JointTrajectoryControllerState
from geometry_msgs.msg import WrenchStamped
from rclpy.action import ActionClient
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd

from conftest import PANDA, ROOT, launch_node, wait_for

pytestmark = pytest.mark.flaky(reruns=1)

NAMES = list(rd.load_urdf(str(PANDA)).joint_names)
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
POSE_A = READY + np.array([0.4, 0.2, -0.3, 0.3, 0.3, -0.2, 0.4])
POSE_B = READY + np.array([-0.5, 0.3, 0.4, 0.4, -0.4, 0.3, -0.5])
GOAL_TOLERANCE = 0.02        # [rad] constraints.<joint>.goal of every joint
PATH_TOLERANCE = 0.5         # [rad] constraints.<joint>.trajectory (the goals' own may be tighter)
GOAL_TIME = 1.0              # [s] constraints.goal_time
R = FollowJointTrajectory.Result
#: MoveIt's controller configuration for the action (docs/NODES.md): the client connects where it points.
MOVEIT = yaml.safe_load((ROOT / 'config' / 'moveit_controllers.yaml').read_text())


def moveit_action_name(ns):
    """The action moveit_simple_controller_manager's client of the configuration's one controller uses, in
    move_group's namespace ``ns``: <controller name>/<action_ns> (action_based_controller_handle.hpp)."""
    manager = MOVEIT['moveit_simple_controller_manager']
    [name] = manager['controller_names']
    controller = manager[name]
    assert MOVEIT['moveit_controller_manager'] == 'moveit_simple_controller_manager/MoveItSimpleControllerManager'
    assert controller['type'] == 'FollowJointTrajectory' and controller['joints'] == NAMES
    return '%s/%s/%s' % (ns, name, controller['action_ns'])


@pytest.fixture(scope='module')
def arm(ros, tmp_path_factory):
    """simulator_node and dynamics_node (computed_torque, its command to the simulator), shared by the module's
    cases in a namespace of their own; the action client and the joint states."""
    tmp, ns = tmp_path_factory.mktemp('fjt'), '/fjt'
    sim = dyn = None
    holder = {}

    def start():            # node_process: the children die with the thread that started them
        nonlocal sim, dyn
        sim = launch_node(tmp, 'simulator_node', {
            'urdf_path': str(PANDA), 'initial_positions': READY.tolist(), 'publish_clock': True,
            'real_time_factor': 0.25, 'physics_rate': 1000.0, 'publish_rate': 1000.0, 'marker_rate': 0.0},
            name='simulator', ns=ns)
        params = {'urdf_path': str(PANDA), 'use_sim_time': True, 'mode': 'computed_torque', 'publish_command': True,
                  'kp': [400.0], 'kd': [40.0], 'constraints.goal_time': GOAL_TIME, 'joint_state_timeout': 0.5}
        for joint in NAMES:
            params['constraints.%s.goal' % joint] = GOAL_TOLERANCE
            params['constraints.%s.trajectory' % joint] = PATH_TOLERANCE
        dyn = launch_node(tmp, 'dynamics_node', params, name='dynamics_node', ns=ns)
        holder['ready'].wait()

    holder['ready'] = threading.Event()
    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    assert wait_for(lambda: dyn is not None, 60), 'nodes not started'
    try:
        ros.wait_for_subscriber(ns + '/joint_states', process=dyn)
        client = ActionClient(ros.node, FollowJointTrajectory, moveit_action_name(ns))
        assert client.wait_for_server(timeout_sec=60), dyn.read_log()
        states = ros.subscribe(JointState, ns + '/joint_states')
        assert states.wait(count=5, timeout=30), sim.read_log()
        yield Arm(ros, client, states, sim, dyn, ns)
    finally:
        holder['ready'].set()
        thread.join(timeout=5)
        for proc in (dyn, sim):
            if proc is not None:
                proc.stop()


class Arm:
    def __init__(self, ros, client, states, sim, dyn, ns):
        self.ros, self.client, self.states, self.sim, self.dyn, self.ns = ros, client, states, sim, dyn, ns

    def q(self):
        return np.array(self.states.last().position)

    def settle(self, seconds=0.3):
        """Wait ``seconds`` of wall time and return the current position."""
        time.sleep(seconds)
        return self.q()

    def goal(self, target, duration, names=NAMES, start=None, end_velocity=0.0):
        """MoveIt's goal: the current state at time 0, ``target`` at ``duration`` [s], at rest at both ends."""
        start = self.q() if start is None else start
        traj = JointTrajectory(joint_names=list(names))
        n = len(names)
        for t, q, v in ((0.0, start, [0.0] * n), (duration, target, [end_velocity] * n)):
            traj.points.append(JointTrajectoryPoint(positions=[float(x) for x in q][:n], velocities=v,
                                                    time_from_start=seconds(t)))
        return FollowJointTrajectory.Goal(trajectory=traj)

    def in_executor(self, request):
        """``request()`` (an ActionClient call that returns a Future) made in the thread that spins the client's
        node: rclpy's ActionClient records a request after sending it, so an answer taken meanwhile by the
        spinning thread is dropped ("Ignoring unexpected goal response"). The request's Future."""
        task = self.ros.executor.create_task(request)
        assert wait_for(task.done, 10), 'the request was not made'
        return task.result()

    def send(self, goal, feedback=None):
        future = self.in_executor(lambda: self.client.send_goal_async(goal, feedback_callback=feedback))
        assert wait_for(future.done, 30), 'no answer to the goal'
        return future.result()

    def result(self, handle, timeout=90):
        future = self.in_executor(handle.get_result_async)
        assert wait_for(future.done, timeout), 'no result:\n' + self.dyn.read_log()[-3000:]
        return future.result()


def seconds(t):
    return Duration(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


def test_goals_are_reached_with_feedback_and_controller_state(arm):
    states = arm.ros.subscribe(JointTrajectoryControllerState, arm.ns + '/dynamics_node/controller_state')
    for target in (POSE_A, READY):
        feedback = []
        handle = arm.send(arm.goal(target, 1.0), feedback.append)
        assert handle.accepted
        got = arm.result(handle)
        assert got.status == GoalStatus.STATUS_SUCCEEDED, (got.status, got.result.error_string)
        assert (got.result.error_code, got.result.error_string) == (R.SUCCESSFUL, 'Goal successfully reached!')
        assert np.abs(arm.settle() - target).max() < GOAL_TOLERANCE, arm.q() - target
        assert feedback and list(feedback[-1].feedback.joint_names) == NAMES
    msg = states.last()
    assert msg is not None and list(msg.joint_names) == NAMES
    assert len(msg.reference.positions) == len(msg.feedback.positions) == len(msg.output.effort) == 7
    assert all(math.isfinite(x) for x in msg.output.effort)


def test_a_new_goal_preempts_the_active_one(arm):
    first = arm.send(arm.goal(POSE_B, 3.0))
    time.sleep(0.5)
    second = arm.send(arm.goal(READY, 1.0))
    old = arm.result(first)
    assert old.status == GoalStatus.STATUS_ABORTED
    assert (old.result.error_code, old.result.error_string) == (
        R.INVALID_GOAL, 'Current goal preempted by new incoming action.')
    new = arm.result(second)
    assert new.status == GoalStatus.STATUS_SUCCEEDED, new.result.error_string
    assert np.abs(arm.settle() - READY).max() < GOAL_TOLERANCE


def test_a_cancel_holds_the_current_position(arm):
    start = arm.q()
    handle = arm.send(arm.goal(POSE_B, 3.0))
    assert wait_for(lambda: np.abs(arm.q() - start).max() > 0.2, 30)      # under way
    cancel = arm.in_executor(handle.cancel_goal_async)
    assert wait_for(cancel.done, 30)
    got = arm.result(handle)
    assert got.status == GoalStatus.STATUS_CANCELED
    assert (got.result.error_code, got.result.error_string) == (R.SUCCESSFUL, '')
    held = arm.settle(0.5)
    assert np.abs(arm.settle(1.0) - held).max() < 0.01           # at rest where it stopped
    assert np.abs(held - POSE_B).max() > 0.1 and np.abs(held - start).max() > 0.2     # on its way, not at an end
    assert arm.result(arm.send(arm.goal(READY, 1.0))).status == GoalStatus.STATUS_SUCCEEDED


def test_infeasible_goals_are_rejected_with_the_controllers_reason(arm):
    q = arm.q()
    early = arm.goal(POSE_A, 1.0)
    early.trajectory.points.append(JointTrajectoryPoint(positions=POSE_A.tolist(), time_from_start=seconds(0.5)))
    nan = arm.goal(POSE_A, 1.0)
    nan.trajectory.points[1].positions[3] = math.nan
    unknown = arm.goal(POSE_A, 1.0)
    unknown.trajectory.joint_names[6] = 'panda_joint99'
    cases = [
        (arm.goal(POSE_A, 1.0, names=NAMES[:6]), "Joints on incoming trajectory don't match the controller joints."),
        (unknown, "Incoming joint panda_joint99 doesn't match the controller's joints."),
        (early, 'Time between points 1 and 2 is not strictly increasing, it is 1.000000 and 0.500000 respectively'),
        (arm.goal(POSE_A, 1.0, end_velocity=0.5), 'Velocity of last trajectory point of joint panda_joint1 is not '
                                                  'zero: 0.500000000000000'),
        (nan, 'point 1: non-finite position of joint panda_joint4'),
        (arm.goal(POSE_A, 1.0, start=q + 0.3), re.compile(        # 0.3 less the drift since q was read
            r'first point at time 0 is 0\.(29|30)\d+ from the current position of joint panda_joint1, more than '
            r'start_tolerance \(0\.100000\)')),
    ]
    for goal, text in cases:
        handle = arm.send(goal)
        assert not handle.accepted, text
        logged = text.search if isinstance(text, re.Pattern) else (lambda log, text=text: text in log)
        assert wait_for(lambda: logged(arm.dyn.read_log()), 10), (text, arm.dyn.read_log()[-2000:])
    assert np.abs(arm.settle() - q).max() < 0.01                 # nothing moved


def test_a_push_off_the_path_aborts_with_path_tolerance_violated(arm):
    q = arm.q()
    goal = arm.goal(q, 6.0)                                        # hold still for 6 s, within 0.03 rad
    goal.path_tolerance = [JointTolerance(name=n, position=0.03) for n in NAMES]
    handle = arm.send(goal)
    assert handle.accepted
    time.sleep(1.0)
    push = arm.ros.publisher(WrenchStamped, arm.sim.topic('~/wrench'))
    assert wait_for(lambda: push.get_subscription_count() > 0, 10)
    wrench = WrenchStamped()
    wrench.header.frame_id = 'panda_link7'
    wrench.wrench.force.x, wrench.wrench.force.y = 60.0, 60.0
    push.publish(wrench)
    try:
        got = arm.result(handle)
    finally:
        push.publish(WrenchStamped(header=wrench.header))        # all zeros: removed
    assert got.status == GoalStatus.STATUS_ABORTED
    assert (got.result.error_code, got.result.error_string) == (
        R.PATH_TOLERANCE_VIOLATED, 'Aborted due to path tolerance violation')
    assert 'State tolerances failed for joint' in arm.dyn.read_log()
    arm.settle(1.0)
    assert arm.result(arm.send(arm.goal(READY, 1.0))).status == GoalStatus.STATUS_SUCCEEDED


def test_a_goal_tolerance_not_met_in_goal_time_aborts(arm):
    goal = arm.goal(POSE_A, 0.5)
    goal.goal_tolerance = [JointTolerance(name=n, position=1e-9) for n in NAMES]    # tighter than any arm
    goal.goal_time_tolerance = seconds(0.05)
    got = arm.result(arm.send(goal))
    assert got.status == GoalStatus.STATUS_ABORTED and got.result.error_code == R.GOAL_TOLERANCE_VIOLATED
    late = re.fullmatch(r'Aborted due to goal_time_tolerance exceeding by (\d+\.\d{6}) seconds', got.result.error_string)
    assert late and float(late.group(1)) >= 0.05, got.result.error_string


def test_joint_trajectory_topic_is_followed(arm):
    pub = arm.ros.publisher(JointTrajectory, arm.dyn.topic('~/joint_trajectory'))
    assert wait_for(lambda: pub.get_subscription_count() > 0, 10)
    pub.publish(arm.goal(READY, 1.0).trajectory)
    assert wait_for(lambda: np.abs(arm.q() - READY).max() < GOAL_TOLERANCE, 30), arm.q() - READY


def documented_goal():
    """The goal of NODES.md's ``ros2 action send_goal`` command, filled from its YAML as that command fills it
    (every key a field of the message, nested messages and arrays of them by their types)."""
    text = (ROOT / 'docs' / 'NODES.md').read_text()
    [command] = [line for line in text.splitlines() if line.startswith('ros2 action send_goal ')]
    words = command.split(' ', 6)
    assert words[3:6] == ['--feedback', '/dynamics_node/follow_joint_trajectory',
                          'control_msgs/action/FollowJointTrajectory'], words
    return fill(FollowJointTrajectory.Goal(), yaml.safe_load(words[6].strip('"')))


def fill(msg, values):
    import importlib
    types = msg.get_fields_and_field_types()
    for key, value in values.items():
        assert key in types, (key, type(msg).__name__)
        if isinstance(value, dict):
            fill(getattr(msg, key), value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            package, _, name = types[key][len('sequence<'):-1].partition('/')
            element = getattr(importlib.import_module(package + '.msg'), name)
            setattr(msg, key, [fill(element(), v) for v in value])
        else:
            setattr(msg, key, value)
    return msg


def test_the_documented_send_goal_command(arm):
    goal = documented_goal()
    target = np.array(goal.trajectory.points[0].positions)
    got = arm.result(arm.send(goal))
    assert got.status == GoalStatus.STATUS_SUCCEEDED, got.result.error_string
    assert (got.result.error_code, got.result.error_string) == (R.SUCCESSFUL, 'Goal successfully reached!')
    assert np.abs(arm.settle() - target).max() < GOAL_TOLERANCE


def test_a_lifecycle_node_configured_again_serves_the_action(ros, start_node):
    """dynamics_lifecycle_node: a cleanup destroys the node's entities but not the action server; configured
    again, the node serves the action once more (one server) and reaches a goal, in each of two cycles. The
    joint states are the test's own, at rest at READY (the goal: stay there)."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState
    proc = start_node('lifecycle_node', {'urdf_path': str(PANDA), 'mode': 'computed_torque',
                                         'joint_state_timeout': 1.0})
    ros.wait_for_service(proc.topic('~/change_state'), process=proc)

    def change(transition):
        req = ChangeState.Request(transition=Transition(id=transition))
        return ros.call(ChangeState, proc.topic('~/change_state'), req, timeout=120.0, idempotent=False).success

    pub = ros.publisher(JointState, proc.namespace + '/joint_states')
    stop = threading.Event()

    def stream():
        while not stop.is_set():
            msg = JointState(name=NAMES, position=READY.tolist(), velocity=[0.0] * len(NAMES))
            msg.header.stamp = ros.node.get_clock().now().to_msg()
            pub.publish(msg)
            time.sleep(0.01)

    threading.Thread(target=stream, daemon=True).start()
    client = ActionClient(ros.node, FollowJointTrajectory, proc.topic('~/follow_joint_trajectory'))
    arm = Arm(ros, client, None, None, proc, proc.namespace)
    try:
        for cycle in range(2):
            assert change(Transition.TRANSITION_CONFIGURE) and change(Transition.TRANSITION_ACTIVATE), proc.read_log()
            assert client.wait_for_server(timeout_sec=30)
            goal, handles = arm.goal(READY, 0.3, start=READY), []
            # Refused until a joint state has given a torque in this configuration ('no joint state ...').
            assert wait_for(lambda: handles.append(arm.send(goal)) or handles[-1].accepted, 20, 0.5), \
                proc.read_log()[-2000:]
            got = arm.result(handles[-1])
            assert got.status == GoalStatus.STATUS_SUCCEEDED, (cycle, got.result.error_string)
            assert change(Transition.TRANSITION_DEACTIVATE) and change(Transition.TRANSITION_CLEANUP), proc.read_log()
    finally:
        stop.set()
