"""~/retime_trajectory and ~/check_trajectory end to end (issue 26): dynamics_services in its own process.

- A 20-waypoint retiming of the Panda (7 joints) is answered in under 1 s
  (the wall time this client sees, after a warm-up call; the first call is
  timed and printed too); the answer's torques, recomputed with Pinocchio
  (an independent library) at every point, stay within the effort limits,
  its velocities within the velocity limits, and its duration is the
  library's (rd.retime) for the same waypoints; joints named in any order.
- Bad requests (a missing joint, a non-finite waypoint, too many waypoints
  or grid points, gravity alone beyond a joint's limit at a waypoint) are
  answered success=false with a message naming what is wrong, and the node
  keeps serving.
- ~/check_trajectory of a trajectory whose panda_joint4 exceeds its
  velocity limit at one point reports that joint, point and time.
"""
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd
from robot_dynamics.ros.timing_queries import MAX_GRIDPOINTS, MAX_WAYPOINTS
from robot_dynamics_interfaces.srv import CheckTrajectory, RetimeTrajectory

from conftest import PANDA, ROOT, wait_for

pin = pytest.importorskip('pinocchio')

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
PM = pin.buildModelFromUrdf(str(PANDA))
PD = PM.createData()
PERM = [3, 6, 0, 5, 1, 4, 2]                  # requests name joints out of model order
ANSWER_WITHIN = 1.0                           # [s] the bound for a 7-DOF, 20-waypoint request
ROUNDING = 1e-6                               # a ratio up to 1 + ROUNDING is at the limit


def waypoints(n, seed=26):
    """(n, 7) waypoints of the Panda within 80 % of its joint ranges (Pinocchio's limits)."""
    rng = np.random.default_rng(seed)
    mid = 0.5 * (PM.lowerPositionLimit + PM.upperPositionLimit)
    half = 0.5 * (PM.upperPositionLimit - PM.lowerPositionLimit)
    return mid + 0.8 * half * rng.uniform(-1.0, 1.0, (n, 7))


def retime_request(W, order=PERM, extra=True, **fields):
    """A RetimeTrajectory request of ``W`` (model order) naming the joints in ``order`` (+ a gripper)."""
    names = [NAMES[i] for i in order] + (['panda_finger_joint1'] if extra else [])
    points = [JointTrajectoryPoint(positions=[float(x) for x in w[order]] + ([0.04] if extra else []),
                                   time_from_start=Duration(sec=k))      # ignored
              for k, w in enumerate(W)]
    return RetimeTrajectory.Request(waypoints=JointTrajectory(joint_names=names, points=points), **fields)


def arrays(trajectory):
    """(t, q, qd, qdd, tau) of a JointTrajectory answer."""
    t = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in trajectory.points])
    return (t,) + tuple(np.array([getattr(p, f) for p in trajectory.points])
                        for f in ('positions', 'velocities', 'accelerations', 'effort'))


def pinocchio_torques(Q, QD, QDD):
    """(N, 7) Pinocchio's RNEA plus the URDF's viscous and Coulomb friction."""
    tau = np.array([pin.rnea(PM, PD, q, qd, qdd) for q, qd, qdd in zip(Q, QD, QDD)])
    return tau + PM.damping * QD + PM.friction * np.sign(QD)


@pytest.fixture(scope='module')
def services(ros, tmp_path_factory):
    """One dynamics_services process for the module (terminated at its end)."""
    from conftest import launch_node
    proc = launch_node(tmp_path_factory.mktemp('srv'), 'dynamics_services', {'urdf_path': str(PANDA)})
    try:
        ros.wait_for_service(proc.topic('~/retime_trajectory'), process=proc)
        yield proc
    finally:
        proc.stop()


def timed_call(ros, client, request, timeout=30.0):
    """(response, seconds from the send to the answer, as this client sees it)."""
    t0 = time.monotonic()
    future = client.call_async(request)
    assert wait_for(future.done, timeout, 0.0005), 'no answer within %.0f s' % timeout
    return future.result(), time.monotonic() - t0


# A wall-clock answer over DDS on a 2-core machine: one rerun, every assertion each time (CI at 0d2ad49: one
# of three calls took 1.28 s, the two others 0.34 s).
@pytest.mark.flaky(reruns=1)
def test_a_20_waypoint_retiming_is_answered_within_a_second_and_holds_the_limits(ros, services):
    from node_process import call_until_answered
    W = waypoints(20)
    request = retime_request(W)
    client = ros.node.create_client(RetimeTrajectory, services.topic('~/retime_trajectory'))
    try:
        assert client.wait_for_service(timeout_sec=10)
        t0 = time.monotonic()
        first = call_until_answered(client, request, 30.0, 'the first retiming')   # resent if DDS drops it
        t_first = time.monotonic() - t0
        times = []
        for _ in range(3):
            res, seconds = timed_call(ros, client, request)
            times.append(seconds)
    finally:
        ros.node.destroy_client(client)
    print('\n~/retime_trajectory, Panda, 20 waypoints, %d points answered: first call %.3f s, then %s s'
          % (len(res.trajectory.points), t_first, ', '.join('%.3f' % s for s in times)))
    assert first.success and res.success, (first.message, res.message)
    assert max(times) < ANSWER_WITHIN, 'answered in %s s; the bound is %.1f s' % (times, ANSWER_WITHIN)

    # The library's duration for the same waypoints; the joints in model order whatever the request's.
    assert res.duration == pytest.approx(rd.retime(MODEL, W).duration, rel=1e-9)
    assert list(res.trajectory.joint_names) == NAMES
    t, q, qd, qdd, tau = arrays(res.trajectory)
    assert t[0] == 0.0 and np.all(np.diff(t) > 0) and t[-1] == pytest.approx(res.duration, abs=1e-9)
    np.testing.assert_allclose(q[[0, -1]], W[[0, -1]], atol=1e-9)         # from rest to rest
    np.testing.assert_allclose(qd[[0, -1]], 0.0, atol=1e-9)
    # The torques Pinocchio computes at every point: the answer's efforts, within the effort limits.
    reference = pinocchio_torques(q, qd, qdd)
    np.testing.assert_allclose(tau, reference, atol=1e-8)
    effort = np.abs(reference) / PM.effortLimit
    velocity = np.abs(qd) / PM.velocityLimit
    print('worst |tau| / limit %.6f, |qd| / limit %.6f' % (effort.max(), velocity.max()))
    assert effort.max() <= 1.0 + ROUNDING and velocity.max() <= 1.0 + ROUNDING
    assert effort.max() > 0.9 or velocity.max() > 0.999         # time-optimal: some limit is reached

    # The same waypoints named in model order, without the gripper: the same answer.
    same = ros.call(RetimeTrajectory, services.topic('~/retime_trajectory'),
                    retime_request(W, order=list(range(7)), extra=False))
    assert same.success and same.duration == res.duration


def test_retiming_options_are_applied_by_joint_name(ros, services):
    W = waypoints(4, seed=3)
    vel = 0.5 * PM.velocityLimit
    acc = np.full(7, 3.0)
    req = retime_request(W, velocity_limits=[float(x) for x in vel[PERM]] + [1.0],
                         acceleration_limits=[float(x) for x in acc[PERM]] + [1.0],
                         effort_scale=0.8, gridpoints=300, rate=50.0)
    res = ros.call(RetimeTrajectory, services.topic('~/retime_trajectory'), req)
    assert res.success, res.message
    want = rd.retime(MODEL, W, velocity_limits=vel, acceleration_limits=acc, effort_scale=0.8, gridpoints=300)
    assert res.duration == pytest.approx(want.duration, rel=1e-9)
    t, q, qd, qdd, tau = arrays(res.trajectory)
    n = int(np.ceil(res.duration * 50.0))                         # evenly spaced, at least 50 Hz
    assert t.size == n + 1 and t[-1] == pytest.approx(res.duration, abs=1e-9)
    np.testing.assert_allclose(np.diff(t), res.duration / n, atol=1e-9)
    np.testing.assert_allclose(q, want.sample(t)[0], atol=1e-9)
    # Between grid points the limits hold to O(ds^2) (docs/RETIMING.md): 300 grid points, a margin of 2 %.
    assert np.all(np.abs(qd) <= 1.02 * vel) and np.all(np.abs(qdd) <= 1.02 * acc)
    assert np.all(np.abs(pinocchio_torques(q, qd, qdd)) <= 1.02 * 0.8 * PM.effortLimit)


def test_bad_retiming_requests_are_refused_and_the_node_keeps_serving(ros, services):
    srv = services.topic('~/retime_trajectory')
    W = waypoints(5, seed=7)

    def refused(request, *words):
        res = ros.call(RetimeTrajectory, srv, request)
        assert not res.success and all(w in res.message for w in words), (words, res.message)
        assert not res.trajectory.points
        return res.message

    missing = retime_request(W)
    missing.waypoints.joint_names = [n if n != 'panda_joint7' else 'joint_seven' for n in missing.waypoints.joint_names]
    refused(missing, 'misses model joint(s): panda_joint7')
    bad = retime_request(W)
    bad.waypoints.points[3].positions[PERM.index(4)] = float('nan')        # panda_joint5 of waypoint 3
    refused(bad, 'waypoint 3', 'non-finite', 'panda_joint5')
    short = retime_request(W)
    short.waypoints.points[2].positions = [0.0] * 3
    refused(short, 'waypoint 2', '3 values for 8 joint_names')
    refused(retime_request(waypoints(MAX_WAYPOINTS + 1)), '%d points, more than %d' % (MAX_WAYPOINTS + 1,
                                                                                       MAX_WAYPOINTS))
    refused(retime_request(W, gridpoints=MAX_GRIDPOINTS + 1), 'gridpoints', str(MAX_GRIDPOINTS))
    refused(retime_request(W, velocity_limits=[1.0] * 3), 'velocity_limits has 3 values for 8 joint_names')
    refused(retime_request(W, effort_scale=-1.0), 'effort_scale', '> 0')
    refused(retime_request(W, rate=float('nan')), 'rate')
    refused(retime_request(W, rate=1e6), 'rate 1e+06 Hz gives', 'more than 100000')
    refused(retime_request(W[:1]), 'm >= 2')
    outside = W.copy()
    outside[1, 3] = 0.5                                                   # panda_joint4's range is < -0.07
    refused(retime_request(outside), 'waypoint 1', 'panda_joint4', 'outside its limits')

    # Gravity alone beyond the (scaled) limit at one waypoint: that waypoint and joint named. Pinocchio's
    # gravity says which: the largest ratio, the scale 5 % below it.
    ratio = np.array([np.abs(pin.computeGeneralizedGravity(PM, PD, w)) / PM.effortLimit for w in W])
    k, j = np.unravel_index(np.argmax(ratio), ratio.shape)
    message = refused(retime_request(W, effort_scale=0.95 * ratio.max()), 'infeasible',
                      'waypoint %d' % k, 'joint %s' % NAMES[j])
    print('\nrefused: %s' % message)

    assert services.poll() is None, services.read_log()
    res = ros.call(RetimeTrajectory, srv, retime_request(W))
    assert res.success and res.trajectory.points, res.message


def trajectory(order, t, Q, QD, QDD=None):
    """A JointTrajectory of (K,) times and (K, 7) arrays (model order), joints named in ``order``."""
    points = []
    for k in range(t.size):
        sec, nsec = divmod(int(round(t[k] * 1e9)), 10 ** 9)
        points.append(JointTrajectoryPoint(
            positions=[float(x) for x in Q[k][order]], velocities=[float(x) for x in QD[k][order]],
            accelerations=[] if QDD is None else [float(x) for x in QDD[k][order]],
            time_from_start=Duration(sec=sec, nanosec=nsec)))
    return JointTrajectory(joint_names=[NAMES[i] for i in order], points=points)


def test_check_trajectory_names_the_joint_and_point_beyond_its_velocity_limit(ros, services):
    srv = services.topic('~/check_trajectory')
    K = 8
    t = np.linspace(0.0, 0.7, K)
    Q = waypoints(1, seed=5) + np.outer(t, np.full(7, 0.1))
    QD = np.full((K, 7), 0.1)
    QDD = np.zeros((K, 7))
    QD[5, 3] = 1.5 * PM.velocityLimit[3]                  # panda_joint4 at point 5: 1.5 x its limit
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=trajectory(PERM, t, Q, QD, QDD)))
    assert res.success, res.message
    assert not res.feasible and list(res.joint_names) == NAMES
    assert res.velocity_ratio[3] == pytest.approx(1.5) and res.velocity_point[3] == 5
    assert res.velocity_time[3] == pytest.approx(t[5], abs=1e-9)
    assert 'velocity of panda_joint4' in res.message and 'point 5' in res.message and 'NOT feasible' in res.message
    # The other ratios: Pinocchio's torques and the given velocities against the URDF limits.
    effort = np.abs(pinocchio_torques(Q, QD, QDD)) / PM.effortLimit
    np.testing.assert_allclose(res.effort_ratio, effort.max(axis=0), rtol=1e-9)
    np.testing.assert_array_equal(res.effort_point, effort.argmax(axis=0))
    np.testing.assert_allclose(res.velocity_ratio, (np.abs(QD) / PM.velocityLimit).max(axis=0), rtol=1e-12)
    assert list(res.acceleration_ratio) == [0.0] * 7              # no acceleration limits given

    # Within the limits: feasible; an acceleration limit by joint name is applied.
    QD[5, 3] = 0.1
    QDD[2, 0] = 4.0                                       # panda_joint1 at point 2
    acc = [2.0 if NAMES[i] == 'panda_joint1' else 100.0 for i in PERM]
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=trajectory(PERM, t, Q, QD, QDD)))
    assert res.success and res.feasible, res.message
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=trajectory(PERM, t, Q, QD, QDD),
                                                                 acceleration_limits=acc))
    assert res.success and not res.feasible
    assert res.acceleration_ratio[0] == pytest.approx(2.0) and res.acceleration_point[0] == 2
    assert 'acceleration of panda_joint1' in res.message


def test_check_trajectory_of_a_retimed_answer_and_bad_requests(ros, services):
    W = waypoints(3, seed=11)
    timed = ros.call(RetimeTrajectory, services.topic('~/retime_trajectory'), retime_request(W))
    assert timed.success, timed.message
    srv = services.topic('~/check_trajectory')
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=timed.trajectory))
    assert res.success and res.feasible, res.message
    assert max(res.effort_ratio) <= 1.0 + ROUNDING and max(res.velocity_ratio) <= 1.0 + ROUNDING

    t = np.linspace(0.0, 1.0, 4)
    Q = np.tile(W[0], (4, 1))
    QD = np.zeros((4, 7))
    bad = trajectory(PERM, t, Q, QD)
    bad.points[2].velocities[PERM.index(1)] = float('inf')
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=bad))
    assert not res.success and 'point 2: non-finite value: velocity of joint %s' % NAMES[1] in res.message, res.message
    missing = trajectory(PERM[:6], t, Q, QD)
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=missing))
    assert not res.success and NAMES[PERM[6]] in res.message, res.message
    late = trajectory(PERM, t[::-1], Q, QD)
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=late))
    assert not res.success and 'increase' in res.message, res.message
    res = ros.call(CheckTrajectory, srv, CheckTrajectory.Request(trajectory=trajectory(PERM, t, Q, QD),
                                                                 acceleration_limits=[1.0]))
    assert not res.success and 'acceleration_limits has 1 values for 7 joint_names' in res.message, res.message
    assert services.poll() is None, services.read_log()


def filled(msg, values):
    """``msg`` with the fields of ``values`` (the YAML of a ``ros2 service call``, nested dicts and lists)."""
    import importlib
    types = msg.get_fields_and_field_types()
    for key, value in values.items():
        if isinstance(value, dict):
            filled(getattr(msg, key), value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            package, name = types[key][len('sequence<'):-1].split('/')
            cls = getattr(importlib.import_module(package + '.msg'), name)
            setattr(msg, key, [filled(cls(), v) for v in value])
        else:
            setattr(msg, key, [float(v) for v in value] if types[key] == 'sequence<double>' else value)
    return msg


def test_the_retiming_md_service_calls(ros, services):
    """docs/RETIMING.md's two ``ros2 service call`` lines, sent as written, answer what the page says."""
    import re
    import yaml
    text = (ROOT / 'docs' / 'RETIMING.md').read_text()
    calls = re.findall(r'^ros2 service call /dynamics_node/(\w+) robot_dynamics_interfaces/srv/(\w+) "(.*)"$', text,
                       re.M)
    assert [c[:2] for c in calls] == [('retime_trajectory', 'RetimeTrajectory'), ('check_trajectory',
                                                                                   'CheckTrajectory')]
    (_, _, retime), (_, _, check) = calls
    request = filled(RetimeTrajectory.Request(), yaml.safe_load(retime))
    res = ros.call(RetimeTrajectory, services.topic('~/retime_trajectory'), request)
    assert res.success, res.message
    W = np.array([p.positions for p in request.waypoints.points])
    assert res.duration == pytest.approx(rd.retime(MODEL, W, effort_scale=0.8).duration, rel=1e-9)
    t = arrays(res.trajectory)[0]
    np.testing.assert_allclose(np.diff(t), res.duration / np.ceil(100.0 * res.duration), atol=1e-9)   # 100 Hz+
    res = ros.call(CheckTrajectory, services.topic('~/check_trajectory'),
                   filled(CheckTrajectory.Request(), yaml.safe_load(check)))
    assert res.success and not res.feasible
    assert res.message == 'worst: velocity of panda_joint4 at 1.379 x its limit (point 1, t = 1 s): NOT feasible'
    assert (res.velocity_point[3], res.velocity_time[3]) == (1, 1.0)


@pytest.mark.parametrize('kind', ['floating base', 'closed loops'])
def test_a_moving_base_or_closed_loops_are_refused(kind):
    """The handlers alone (no DDS), on a model the services take but a retiming does not: the message says
    why (the library's retiming and check are for fixed-base trees)."""
    from types import SimpleNamespace
    from robot_dynamics.ros import timing_queries
    if kind == 'floating base':
        model, words = rd.load_urdf(str(PANDA), root_joint='floating'), ['floating', 'fixed-base arm']
    else:
        urdf = ROOT / 'urdf' / 'examples' / 'palletiser.urdf'
        model = rd.load_urdf(str(urdf), loops=(ROOT / 'urdf' / 'examples' / 'palletiser.loops.yaml').read_text())
        words = ['closed loops', 'trees only']

    holder = SimpleNamespace(model=model)
    names = list(model.joint_names)
    request = RetimeTrajectory.Request(waypoints=JointTrajectory(joint_names=names, points=[
        JointTrajectoryPoint(positions=[0.0] * len(names)), JointTrajectoryPoint(positions=[0.1] * len(names))]))
    res = timing_queries.retime(holder, request, RetimeTrajectory.Response())
    assert not res.success and all(w in res.message for w in words + ['~/retime_trajectory']), res.message
    res = timing_queries.check_trajectory(holder, CheckTrajectory.Request(trajectory=request.waypoints),
                                         CheckTrajectory.Response())
    assert not res.success and all(w in res.message for w in words + ['~/check_trajectory']), res.message
