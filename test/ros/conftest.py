"""Fixtures for the ROS 2 tests: real rclpy, real DDS, nodes in separate processes.

- ``ros``: this process's rclpy context, one test node and an executor
  spinning in a background thread (session scope).
- ``start_node``: starts ``python -m robot_dynamics.ros.<module> --ros-args ...``
  as a separate process with a parameter file, in a namespace of its own
  (test/ros/node_process.py's ``start_node``), and always stops it in the
  fixture's finalizer. Its output is kept in a log file that is printed when
  a test fails.

Every test run gets its own ROS_DOMAIN_ID from scripts/test.sh, and
discovery stays on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, set
here too for a bare pytest run).
"""
import itertools
import os
import pathlib
import sys
import threading
import time
import traceback

import pytest

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
if 'ROS_DOMAIN_ID' not in os.environ:
    os.environ['ROS_DOMAIN_ID'] = str(os.getpid() % 101 + 1)

import rclpy  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

import node_process  # noqa: E402
from robot_dynamics.ros import query_services  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
PANDA = ROOT / 'urdf' / 'panda_arm.urdf'
UR5 = ROOT / 'urdf' / 'ur5.urdf'
# Generous: a cold numba cache compiles the kernels in the node (~40 s).
READY_TIMEOUT = float(os.environ.get('RD_TEST_READY_TIMEOUT', '120'))
_counter = itertools.count()

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
BEST_EFFORT = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def wait_for(predicate, timeout=5.0, period=0.005):
    """Poll ``predicate`` until it is truthy or ``timeout`` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(period)

# --- the simulator, paused and resumed (simulator_node's ~/pause) ----------------------------------

def stamp_s(msg):
    """A message's header stamp [s]."""
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def stamp_ns(msg):
    """A message's header stamp [ns], exact."""
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def set_paused(ros, proc, on):
    """Pause (``on``) or resume simulator_node ``proc``; its answer, checked for success."""
    from std_srvs.srv import SetBool
    res = ros.call(SetBool, proc.topic('~/pause'), SetBool.Request(data=on), idempotent=True)
    assert res.success, res.message
    return res


def run_simulated(ros, proc, states, duration, slack=3.0):
    """Resume ``proc``, wait until ``states`` (a Collector of its joint_states) holds ``duration`` s of
    simulated time, pause it; the states stamped after the start. Gives up after ``slack * duration + 20``
    s of wall time."""
    start = stamp_s(states.last())
    set_paused(ros, proc, False)
    done = states.wait_where(lambda m: stamp_s(m) >= start + duration - 1e-9, timeout=slack * duration + 20)
    set_paused(ros, proc, True)
    assert done is not None, 'the simulation did not reach %.1f s:\n%s' % (start + duration, proc.read_log())
    return [m for m in list(states.messages) if start < stamp_s(m) <= start + duration + 1e-9]


def odometry(position=(0.0, 0.0, 0.0), orientation=(0.0, 0.0, 0.0, 1.0), linear=(0.0, 0.0, 0.0),
             angular=(0.0, 0.0, 0.0), child='base_link', frame='odom'):
    """A nav_msgs/Odometry of a base: pose (position [m], quaternion x, y, z, w) in ``frame``,
    twist (linear [m/s], angular [rad/s]) in the base frame ``child``."""
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.header.frame_id, msg.child_frame_id = frame, child
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(x) for x in position)
    o.x, o.y, o.z, o.w = (float(x) for x in orientation)
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in linear)
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in angular)
    return msg


class Collector:
    """Messages received on one topic, in arrival order, thread-safe."""

    def __init__(self):
        self.messages = []
        self.times = []
        self._lock = threading.Lock()

    def __call__(self, msg):
        with self._lock:
            self.messages.append(msg)
            self.times.append(time.monotonic())

    def __len__(self):
        with self._lock:
            return len(self.messages)

    def clear(self):
        with self._lock:
            self.messages.clear()
            self.times.clear()

    def last(self):
        with self._lock:
            return self.messages[-1] if self.messages else None

    def wait(self, count=1, timeout=5.0):
        """Wait until ``count`` messages have arrived; returns the last one (or None)."""
        wait_for(lambda: len(self) >= count, timeout)
        return self.last() if len(self) >= count else None

    def wait_where(self, predicate, timeout=5.0):
        """The first message satisfying ``predicate`` (None after ``timeout``)."""
        def find():
            with self._lock:
                return next((m for m in self.messages if predicate(m)), None)
        return wait_for(find, timeout)


class Ros:
    """This test process's node, spun by a background executor."""

    def __init__(self):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('rd_test_%d' % os.getpid(), context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._closing = False
        self._spinning = threading.Lock()       # held by spin_once: entities are destroyed between two spins
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        """Spin until the context shuts down. An exception out of the executor while the context is
        up is printed and spinning goes on: it once ended this thread silently (a CI run at a66f745,
        after test_ros_namespace destroyed this node's latched publishers), and every later test that
        needed this node timed out (38 of them)."""
        while self.context.ok() and not self._closing:
            try:
                with self._spinning:
                    self.executor.spin_once(timeout_sec=0.1)
            except Exception:
                if self._closing or not self.context.ok():        # shut down at the end of the session
                    return
                print('test process executor: exception, spinning on:\n%s' % traceback.format_exc(),
                      file=sys.stderr, flush=True)
                time.sleep(0.01)

    def subscribe(self, msg_type, topic, qos=RELIABLE):
        collector = Collector()
        sub = self.node.create_subscription(msg_type, topic, collector, qos)
        collector.subscription = sub
        return collector

    def publisher(self, msg_type, topic, qos=RELIABLE):
        return self.node.create_publisher(msg_type, topic, qos)

    def call(self, srv_type, name, request, timeout=10.0, idempotent=True):
        """Call a service and wait for the answer (fails the test if none comes).

        ``idempotent`` (the default): the request may be served twice, so it
        is resent while unanswered (:func:`node_process.call_until_answered`:
        Fast DDS drops a response sent before the server matched this new
        client, "failed to send response (timeout)" in the node's log). Every
        service the tests call through here is: the queries, ~/pause,
        ~/set_state, ~/set_payload (it replaces a link's payload) and
        ~/set_parameters. Pass False for one that is not."""
        client = self.node.create_client(srv_type, name)
        try:
            assert client.wait_for_service(timeout_sec=timeout), 'service %s not available' % name
            if idempotent:
                return node_process.call_until_answered(client, request, timeout, 'the answer of %s' % name)
            future = client.call_async(request)
            assert wait_for(future.done, timeout), 'service %s did not answer' % name
            return future.result()
        finally:
            self.node.destroy_client(client)

    def wait_for_subscriber(self, topic, timeout=READY_TIMEOUT, process=None):
        def ready():
            if process is not None and process.poll() is not None:
                return True
            return self.node.count_subscribers(topic) > 0
        assert wait_for(ready, timeout, 0.05), 'no subscriber on %s after %.0f s' % (topic, timeout)
        if process is not None and process.poll() is not None:
            raise AssertionError('node exited with status %s:\n%s' % (process.returncode, process.read_log()))

    def wait_for_service(self, name, timeout=READY_TIMEOUT, process=None):
        """Wait until service ``name`` exists; fail with the node's log if it died."""
        def ready():
            if process is not None and process.poll() is not None:
                return True
            return any(n == name for n, _ in self.node.get_service_names_and_types())
        ok = wait_for(ready, timeout, 0.05)
        if process is not None and process.poll() is not None:
            raise AssertionError('node exited with status %s:\n%s' % (process.returncode, process.read_log()))
        assert ok, 'no service %s after %.0f s%s' % (
            name, timeout, '' if process is None else ':\n' + process.read_log())

    def wait_for_publisher(self, topic, timeout=10.0):
        assert wait_for(lambda: self.node.count_publishers(topic) > 0, timeout, 0.02), \
            'no publisher on %s' % topic

    def entities(self):
        """What this node has now: its subscriptions, publishers, clients, services, timers and action
        clients (the other waitables are subscriptions' and publishers' event handlers, which go with them)."""
        n = self.node
        return {'subscription': set(n.subscriptions), 'publisher': set(n.publishers), 'client': set(n.clients),
                'service': set(n.services), 'timer': set(n.timers),
                'action_client': {w for w in n.waitables if isinstance(w, ActionClient)}}

    def release(self, before):
        """Destroy the entities made since ``before`` (an :meth:`entities`), between two spins.

        Kept, they stayed for the whole session: rclpy's executor walks every subscription of the node in
        Python each time it wakes, and the collectors held every message they got (a 1 kHz test leaves tens
        of thousands for the garbage collector to walk). Both grew with each module and made this process's
        own publishers late in the last ones (the watchdog tests, where a late joint state is a fault)."""
        now = self.entities()
        with self._spinning:
            for kind, made in now.items():
                for entity in made - before[kind]:
                    if kind == 'action_client':
                        entity.destroy()                # removes itself from the node's waitables
                    else:
                        getattr(self.node, 'destroy_' + kind)(entity)

    def close(self):
        self._closing = True
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self._thread.join(timeout=2.0)


@pytest.fixture(scope='session')
def ros():
    harness = Ros()
    yield harness
    harness.close()


@pytest.fixture(scope='module', autouse=True)
def ros_entities_of_the_module(request):
    """Each test module's subscriptions, publishers, clients and action clients on the test process's node
    are destroyed after its last test (module scope: some modules share a node process and its topics between
    tests through module fixtures)."""
    if not any('ros' in item.fixturenames for item in request.session.items if item.module is request.module):
        yield
        return
    harness = request.getfixturevalue('ros')
    before = harness.entities()
    yield
    harness.release(before)


def launch_node(tmp_path, module, params, *, name=None, ns=None, args=(), remaps=None, env=None):
    """Start ``python -m robot_dynamics.ros.<module>`` with a params file, in a namespace of
    its own unless ``ns`` is given; returns its :class:`node_process.NodeProcess`."""
    k = next(_counter)
    name = name or '%s_%d' % (module, k)
    ns = ns if ns is not None else '/t%d_%d' % (os.getpid(), k)
    return node_process.start_node(module, params, name=name, namespace=ns or '/', args=args, remaps=remaps,
                                   env=env, log_path=tmp_path / ('%s.log' % name), cwd=ROOT)


@pytest.fixture
def start_node(tmp_path, request):
    """Factory: start a node process; every one is terminated when the test ends."""
    procs = []

    def start(module, params, **kwargs):
        proc = launch_node(tmp_path, module, params, **kwargs)
        procs.append(proc)
        return proc

    def command(cmd, name, ns='', env=None):
        """Run the command line ``cmd`` (it sets its node's name and namespace itself)."""
        proc = node_process.start_node(cmd, name=name, namespace=ns, env=env,
                                       log_path=tmp_path / ('%s.log' % name), cwd=ROOT)
        procs.append(proc)
        return proc

    def services_for(proc, params):
        """dynamics_services beside the dynamics_node ``proc`` (its namespace), as the launch files start it:
        it serves the node's read-only services under the node's names (robot_dynamics/ros/query_services.py)."""
        return start('dynamics_services', dict(params, nice=query_services.NICE),
                     name=query_services.services_node_name(proc.name), ns=proc.namespace,
                     remaps=dict(query_services.remappings(proc.name)))

    def with_services(params, *, module='dynamics_node', name='dynamics_node', ns=None):
        """dynamics_node (or ``module``, its lifecycle variant) and dynamics_services beside it
        (:func:`services_for`); the node keeps its payloads there. Returns the node's process, with
        ``services``, the other one's."""
        ns = ns or '/t%d_%d' % (os.getpid(), next(_counter))
        proc = start(module, dict(params, services_node=query_services.services_node_name(name)), name=name, ns=ns)
        proc.services = services_for(proc, params)
        return proc

    start.command = command
    start.with_services = with_services
    start.services_for = services_for
    yield start
    failed = getattr(request.node, 'rep_call', None) is not None and request.node.rep_call.failed
    node_process.stop_all(procs)
    if failed:
        for proc in procs:
            sys.stderr.write('\n--- log of %s ---\n%s\n' % (proc.label, proc.read_log()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, 'rep_' + report.when, report)


def pytest_terminal_summary(terminalreporter):
    """Each failed attempt that pytest-rerunfailures ran again, with its output: its own summary names
    the test only, and a CI log should say why a timing test needed its rerun."""
    for report in terminalreporter.stats.get('rerun', []):
        terminalreporter.write_sep('-', 'failed attempt of %s (run again)' % report.nodeid)
        terminalreporter.write_line(report.longreprtext)
        for title, content in report.sections:
            terminalreporter.write_line('--- %s ---\n%s' % (title, content))
