"""Closed-loop robots over DDS (issue 12): the palletiser (urdf/examples/palletiser.urdf with its loops YAML).

- simulator_node with ``loops_file`` and ``actuated_joints`` publishes every
  joint, the passive ones included, on states that close the loops (residual
  below 1e-6 as received); without compensation the arm falls, and with
  dynamics_node (``loops_file``, ``actuated_joints``, publish_command) it
  holds its pose, as the Panda does in test_ros_closed_loop.py; the hold is
  measured over 5 s of simulated time (the simulator publishes /clock).
- dynamics_node fed by this process: the torques and the command cover the
  actuated joints only and equal rd.constrained_inverse_dynamics at the
  received state (1e-9), from joint states that name every joint and from
  joint states that name only the actuated ones (the passive joints are
  assembled); at a singular pose nothing is published and the state is
  counted; a loops file that does not fit gives an ERROR status naming the
  loop and the file, and the node keeps running.
"""
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import robot_dynamics as rd
from robot_dynamics.simulation import Simulator
from robot_dynamics_interfaces.srv import GravityCompensation, SetState

from conftest import READY_TIMEOUT, ROOT, run_simulated, stamp_s, wait_for

# Times DDS delivery to this test process on a 2-core machine: one rerun, every assertion each time.
pytestmark = pytest.mark.flaky(reruns=1)

URDF = ROOT / 'urdf' / 'examples' / 'palletiser.urdf'
LOOPS = ROOT / 'urdf' / 'examples' / 'palletiser.loops.yaml'
MODEL = rd.load_urdf(str(URDF), loops=str(LOOPS))
NAMES = list(MODEL.joint_names)
MOTORS = ['turntable_joint', 'shoulder_joint', 'drive_joint']
A = [NAMES.index(j) for j in MOTORS]
Q0 = np.array([0.4, 0.3, 0.3, 0.6, -0.3])       # turn, lower arm a = 0.3, upper arm b = 0.6: (turn, a, b - a, b, a - b)
HOLD_TIME = 5.0       # [s] of simulated time
TOLERANCE = 1e-3      # [rad]
DEEP = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
TOL = 1e-9





def drift(msgs):
    return float(np.abs(np.array([m.position for m in msgs]) - Q0).max())


def residual(msgs):
    return float(np.abs(rd.loop_residual(MODEL, np.array([m.position for m in msgs]))).max())


def compensation(q, qd):
    """(gravity, gravity + Coriolis) of the actuated joints at a closed state, independently of the node:
    rd.constrained_inverse_dynamics with the accelerations of [J; S^T] qdd = [-Jdot qd; 0]."""
    J = rd.loop_jacobian(MODEL, q)
    S = np.eye(MODEL.nq)[A]
    rhs = np.r_[-rd.constraints.loop_bias(MODEL, q, qd), np.zeros(len(A))]
    qdd = np.linalg.lstsq(np.vstack([J, S]), rhs, rcond=None)[0]
    zero = np.zeros(MODEL.nq)
    g, _ = rd.constrained_inverse_dynamics(MODEL, q, zero, zero, MOTORS)
    h, _ = rd.constrained_inverse_dynamics(MODEL, q, qd, qdd, MOTORS)
    return g[A], h[A]


def loop_params(**more):
    params = {'urdf_path': str(URDF), 'loops_file': str(LOOPS), 'actuated_joints': MOTORS}
    params.update(more)
    return params


def test_the_palletiser_falls_and_dynamics_node_holds_it_over_dds(ros, start_node):
    ns = '/loops%d' % id(ros)
    sim = start_node('simulator_node', loop_params(
        initial_positions=Q0[A].tolist(), start_paused=True, publish_clock=True, publish_rate=500.0,
        marker_rate=0.0), name='simulator', ns=ns)
    ros.wait_for_subscriber(sim.topic('effort_controller/commands'), process=sim)
    states = ros.subscribe(JointState, ns + '/joint_states', DEEP)
    first = states.wait(count=5, timeout=20)
    assert first is not None, sim.read_log()
    # Every joint, passive ones included, at the initial positions with the loops closed.
    assert list(first.name) == NAMES
    np.testing.assert_allclose(first.position, Q0, atol=1e-9)

    # Without compensation the arm falls, like the core's Simulator from the same state.
    fall = run_simulated(ros, sim, states, 0.5, slack=6)
    offline = Simulator(MODEL, actuated=MOTORS, q0=Q0)
    offline.step(500)
    expected = float(np.abs(offline.q - Q0).max())
    assert expected > 100 * TOLERANCE
    assert drift(fall) > 0.5 * expected, (drift(fall), expected)
    assert residual(fall) < 1e-6
    assert np.all(np.array([m.effort for m in fall]) == 0.0)                # limp: no motor torque anywhere

    # Back to the pose at rest, then dynamics_node closes the loop through DDS.
    req = SetState.Request()
    req.joint_state.name, req.joint_state.position = NAMES, Q0.tolist()
    res = ros.call(SetState, sim.topic('~/set_state'), req)
    assert res.success, res.message
    dyn = start_node('dynamics_node', loop_params(use_sim_time=True, mode='gravity_coriolis', publish_command=True),
                     name='dynamics_node', ns=ns)
    ros.wait_for_subscriber(ns + '/joint_states', process=dyn)
    g, _ = compensation(Q0, np.zeros(5))
    effort = np.zeros(5)
    effort[A] = g

    def held(m):
        return np.allclose(m.position, Q0, atol=1e-9) and np.allclose(m.effort, effort, rtol=0, atol=1e-6)
    assert states.wait_where(held, timeout=60), dyn.read_log()
    hold = run_simulated(ros, sim, states, HOLD_TIME, slack=6)
    span = stamp_s(hold[-1]) - stamp_s(hold[0])
    # The hold is checked over its whole span: no gap of more than 50 ms of simulated time between the states
    # that reached the test (25 of the simulator's 2 ms periods). How many of the 2500 arrive is DDS's and the
    # machine's load's business, not this code's (1248 on a loaded CI machine, where > 1250 was asked before).
    gaps = np.diff([stamp_s(m) for m in hold])
    assert span >= HOLD_TIME - 0.01 and gaps.max() <= 0.05, (span, gaps.max(), len(hold))
    print('palletiser held over DDS for %.1f s: drift %.2e rad, loop residual %.2e'
          % (span, drift(hold), residual(hold)))
    assert drift(hold) < TOLERANCE, drift(hold)
    assert residual(hold) < 1e-6
    efforts = np.array([m.effort for m in hold])
    assert np.abs(efforts - effort).max() < 1.0 and np.all(efforts[:, [2, 4]] == 0.0)   # passive: zero


def test_dynamics_node_publishes_the_actuated_torques_of_constrained_inverse_dynamics(ros, start_node):
    proc = start_node.with_services(loop_params(mode='gravity_coriolis', publish_command=True,
                                                diagnostics_period=0.2))
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    grav = ros.subscribe(JointState, proc.topic('~/gravity_torque'))
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    cmd = ros.subscribe(Float64MultiArray, proc.topic('effort_controller/commands'))
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    K = np.linalg.svd(rd.loop_jacobian(MODEL, Q0))[2][2:].T
    qd = K @ np.array([0.3, -0.4, 0.5])                                       # a velocity on the loops

    def send(names, q, v, k):
        """Publish until the outputs of this message (stamp k) are in; (gravity, compensation, command)."""
        msg = JointState(name=list(names), position=[float(x) for x in q], velocity=[float(x) for x in v])
        msg.header.stamp.sec = k
        cmd.clear()

        def stamped(collector):
            with collector._lock:
                return next((m for m in collector.messages if m.header.stamp.sec == k), None)
        assert wait_for(lambda: (pub.publish(msg), stamped(tot) and stamped(grav) and len(cmd))[1], timeout=10), \
            proc.read_log()
        return stamped(grav), stamped(tot), cmd.last()

    expected_g, expected_h = compensation(Q0, qd)
    assert np.abs(expected_h - expected_g).max() > 1.0                         # Coriolis counts here
    # Every joint named (a simulator's joint states), then the actuated ones only (a real palletiser's).
    for k, (names, q, v) in enumerate([(NAMES, Q0, qd), (MOTORS, Q0[A], qd[A])]):
        g, h, c = send(names, q, v, k + 1)
        assert list(g.name) == list(h.name) == MOTORS
        np.testing.assert_allclose(g.effort, expected_g, rtol=0, atol=TOL)
        np.testing.assert_allclose(h.effort, expected_h, rtol=0, atol=TOL)
        np.testing.assert_allclose(c.data, expected_h, rtol=0, atol=TOL)      # the command: `joints` = actuated
    # The flattened parallelogram (crank in line with the lower arm): singular, nothing published, counted.
    a = 0.2
    singular = np.array([0.0, a, np.pi / 2, a + np.pi / 2, -np.pi / 2])
    msg = JointState(name=NAMES, position=singular.tolist())
    msg.header.stamp.sec = 99
    for _ in range(5):
        pub.publish(msg)
        time.sleep(0.02)
    time.sleep(0.3)
    assert not [m for m in list(tot.messages) if m.header.stamp.sec == 99] and proc.poll() is None

    def counted(array):
        for s in array.status:
            if proc.name in s.name:
                values = {kv.key: kv.value for kv in s.values}
                return int(values.get('singular_states', 0)) >= 1 and 'singular' in values.get('last_singularity', '')
        return False
    assert diag.wait_where(counted, timeout=5), proc.read_log()
    # The service answers for the actuated joints too.
    req = GravityCompensation.Request()
    req.joint_state.name, req.joint_state.position = MOTORS, Q0[A].tolist()
    res = ros.call(GravityCompensation, proc.topic('~/gravity_compensation'), req)
    assert res.success, res.message
    assert list(res.torques.name) == MOTORS
    np.testing.assert_allclose(res.torques.effort, expected_g, rtol=0, atol=TOL)


def test_a_loops_file_that_does_not_fit_gives_an_error_status(ros, start_node, tmp_path):
    bad = tmp_path / 'bad.loops.yaml'
    bad.write_text(LOOPS.read_text().replace('child: tie_rod', 'child: tie_rods'))
    proc = start_node('dynamics_node', loop_params(loops_file=str(bad), diagnostics_period=0.2))
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')

    def error(array):
        return next((s for s in array.status if s.name == '%s: dynamics' % proc.fqn.lstrip('/')
                     and s.level == DiagnosticStatus.ERROR), None)
    got = diag.wait_where(error, timeout=READY_TIMEOUT)          # start-up: a cold kernel cache
    assert got is not None, proc.read_log()
    message = error(got).message
    assert "tie_rod_to_lever" in message and str(bad) in message and 'tie_rods' in message, message
    assert proc.poll() is None                                                   # still running
    # A file that is not there: the same, naming the file; the services say why there is no model.
    missing = str(tmp_path / 'no_such.loops.yaml')
    proc = start_node.with_services(loop_params(loops_file=missing, diagnostics_period=0.2))
    got = diag.wait_where(error, timeout=READY_TIMEOUT)          # start-up: a cold kernel cache
    assert got is not None, proc.read_log()
    assert "'loops_file'" in error(got).message and missing in error(got).message, error(got).message
    req = GravityCompensation.Request()
    req.joint_state.name, req.joint_state.position = MOTORS, Q0[A].tolist()
    res = ros.call(GravityCompensation, proc.topic('~/gravity_compensation'), req)
    assert not res.success and 'no such file' in res.message.lower(), res.message
    assert proc.poll() is None


# --- the laws without DDS (robot_dynamics/control/closed_loop.py) ------------------------------------

def test_closed_loop_laws_equal_constrained_inverse_dynamics():
    """Friction as actuated torques of the same power, feedforward and computed torque against
    rd.constrained_inverse_dynamics at the completed states; too few actuated joints are refused."""
    import re
    from robot_dynamics.control.closed_loop import ClosedLoop
    frictional = re.sub(r'(<limit [^>]*/>)', r'\1<dynamics damping="30" friction="12"/>', URDF.read_text())
    model = rd.load_urdf(frictional, loops=str(LOOPS)).with_payload('flange', 20.0)
    assert np.all(model.friction == 12.0)
    K = np.linalg.svd(rd.loop_jacobian(model, Q0))[2][2:].T
    qd = K @ np.array([0.2, 0.5, -0.3])
    loop = ClosedLoop(model, MOTORS, 'gravity_coriolis_friction', 0.01)
    q, v = loop.complete(Q0[A], qd[A])                                        # the actuated joints only
    np.testing.assert_allclose(q, Q0, atol=1e-12)
    np.testing.assert_allclose(v, qd, atol=1e-12)
    total = loop.compute(q, v).copy()
    f = rd.friction_torques(model, v, smoothing=0.01)
    assert np.abs(loop.friction).max() > 1.0
    np.testing.assert_allclose(loop.friction @ v[A], f @ v, atol=1e-12)    # the same power
    np.testing.assert_allclose(total, loop.gravity + loop.coriolis + loop.friction, atol=1e-12)
    qdd_a = np.array([0.1, -0.2, 0.3])
    ff = loop.feedforward(q, v, Q0[A], qd[A], qdd_a)
    qdd = loop.accelerations(q, v, qdd_a)
    np.testing.assert_allclose(qdd[A], qdd_a, atol=1e-12)
    tau, _ = rd.constrained_inverse_dynamics(model, q, v, qdd, MOTORS)
    np.testing.assert_allclose(ff, tau[A], atol=1e-9)
    ct = loop.computed_torque(q, v, Q0[A], qd[A], qdd_a, np.full(3, 100.0), np.full(3, 20.0))
    np.testing.assert_allclose(ct, tau[A], atol=1e-9)                      # no error: the feedforward
    with pytest.raises(rd.InputError, match="cannot drive the closed mechanism"):
        ClosedLoop(model, MOTORS[:2], 'gravity')


def test_loops_file_paths_resolve_as_paths_or_package_urls(monkeypatch, tmp_path):
    import launch_standins as L
    from robot_dynamics.control.model_holder import resolve_path
    assert resolve_path('urdf/examples/palletiser.loops.yaml') == 'urdf/examples/palletiser.loops.yaml'
    L.ament_index(monkeypatch, tmp_path, ['robot_dynamics'])
    assert resolve_path('package://robot_dynamics/urdf/examples/palletiser.loops.yaml') == str(
        tmp_path / 'share' / 'robot_dynamics' / 'urdf' / 'examples' / 'palletiser.loops.yaml')
    with pytest.raises(OSError, match="package 'no_such_package' not found"):
        resolve_path('package://no_such_package/x.yaml')
