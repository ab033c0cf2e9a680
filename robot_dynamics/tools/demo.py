"""Demo: a simulated arm held by gravity compensation, over real ROS 2 topics.

Usage: ``python -m robot_dynamics.tools.demo [--urdf PATH] [--duration S | --forever] [--output PNG]
[--mode cartesian_impedance | --mode contact [--force N] [--world YAML]]``
(``scripts/demo.sh`` or ``ros2 run robot_dynamics robot_dynamics_demo``).

What it does, with the bundled 7-DOF Panda arm by default:

1. prints the arm (joints, limits, mass) and its gravity torques at the
   start pose;
2. simulates the same arm offline, with zero motor torque, from the same
   pose (:func:`robot_dynamics.simulation.simulate`, the physics of the
   simulator node): the arm falls;
3. starts two separate processes, ``simulator_node`` and ``dynamics_node``
   (mode ``gravity_coriolis``, ``publish_command: true``), in the ROS
   namespace ``--namespace``: the simulator publishes ``joint_states`` at
   1 kHz, the dynamics node answers each with the compensation torque on
   ``effort_controller/commands``, which the simulator applies. The
   simulator starts paused and runs once the first command has arrived;
4. records the joint states for ``--duration`` seconds (or until Ctrl-C
   with ``--forever``), stops both nodes and prints a report: pose drift
   with and without compensation, loop rates and the latency from a joint
   state's publication to the receipt of its compensation torque;
5. writes a PNG plot, joint angles over time, compensated versus falling,
   and prints where it is.

``--mode cartesian_impedance`` instead moves the flange between two targets over ROS 2 and
prints the tracking error (:mod:`robot_dynamics.tools.impedance_demo`). ``--mode contact`` presses
the Panda's hand on a table (``--world``) with ``--force`` N in ``cartesian_impedance`` and prints
the contact force, the force-torque sensor's and the momentum observer's estimate
(:mod:`robot_dynamics.tools.contact_demo`).

SIGTERM or SIGHUP stop the nodes too and end the demo without a report
(exit status 128 + the signal); a SIGKILL of the demo leaves them running.

While it runs, RViz on the same ROS domain can show the arm from
``<namespace>/joint_states`` and the markers on
``<namespace>/simulator/markers`` (the contacts, ``--mode contact``: ``<namespace>/simulator/contact_markers``).
"""
import argparse
import os
import signal
import sys
import tempfile
import threading
import time

import numpy as np

import robot_dynamics as rd

from ..bundled import bundled_path
from .contact_demo import MAX_FORCE
from .processes import call_until_answered, start_node, stop_all, wait_until

# The bundled 7-DOF arm (Franka Emika Panda, without the hand's fingers).
BUNDLED_ARM = 'panda_arm.urdf'
# The Panda's "ready" pose (franka_description), used when the joints are the Panda's.
PANDA_READY = {'panda_joint1': 0.0, 'panda_joint2': -0.785, 'panda_joint3': 0.0, 'panda_joint4': -2.356,
               'panda_joint5': 0.0, 'panda_joint6': 1.571, 'panda_joint7': 0.785}
START_TIMEOUT = 180.0   # [s] for the nodes to come up (a cold numba cache compiles for ~40 s)


def bundled_urdf(name=BUNDLED_ARM):
    """Path of a URDF shipped with the package (urdf/NAME), wherever it is installed (robot_dynamics/bundled.py)."""
    try:
        return str(bundled_path('urdf/' + name))
    except FileNotFoundError as exc:
        raise FileNotFoundError('%s; pass --urdf PATH' % exc) from None


def mid_pose(model):
    """Midpoint of each joint's position limits; 0 where a limit is infinite."""
    lower, upper = np.asarray(model.lower_limit), np.asarray(model.upper_limit)
    finite = np.isfinite(lower) & np.isfinite(upper)
    q = np.zeros(model.nq)
    q[finite] = 0.5 * (lower[finite] + upper[finite])
    return q


def start_pose(model):
    """The Panda's ready pose for the Panda, else the middle of the limits, (nq,) [rad]."""
    if set(model.joint_names) == set(PANDA_READY):
        return np.array([PANDA_READY[n] for n in model.joint_names])
    return mid_pose(model)


def print_arm(model, path, q0):
    """Joints with limits, total mass, gravity torques at q0."""
    width = max((len(n) for n in model.joint_names), default=5)
    print(f'URDF: {path}')
    print(f'{model.nq} joints, total mass {model.total_mass:.3f} kg, gravity '
          f'{np.asarray(model.gravity).tolist()} m/s^2\n')
    g = rd.gravity_torques(model, q0)
    print(f'{"joint":<{width}}  {"lower":>7} {"upper":>7} {"effort":>7} {"q0":>7} {"g(q0)":>8}')
    print(f'{"":<{width}}  {"[rad]":>7} {"[rad]":>7} {"[N m]":>7} {"[rad]":>7} {"[N m]":>8}')
    for i, name in enumerate(model.joint_names):
        print(f'{name:<{width}}  {model.lower_limit[i]:7.3f} {model.upper_limit[i]:7.3f} '
              f'{model.effort_limit[i]:7.1f} {q0[i]:7.3f} {g[i]:8.3f}')
    print()


# --- the two nodes ----------------------------------------------------------

class Nodes:
    """The simulator and dynamics node as child processes (:mod:`robot_dynamics.tools.processes`),
    logs in a temporary folder. The loop closes on the nodes' default topics, relative to
    the namespace: ``joint_states`` and ``effort_controller/commands``."""

    def __init__(self, urdf, model, q0, namespace):
        self.folder = tempfile.mkdtemp(prefix='robot_dynamics_demo_')
        common = {'urdf_path': os.path.abspath(urdf), 'joints': list(model.joint_names)}
        #: (module, node name, parameters)
        self.specs = [
            ('simulator_node', 'simulator',
             dict(common, initial_positions=[float(x) for x in q0], start_paused=True)),
            ('dynamics_node', 'dynamics_node', dict(common, mode='gravity_coriolis', publish_command=True)),
        ]
        self.namespace = namespace
        self.processes = {}

    def start(self):
        for module, name, params in self.specs:
            self.processes[name] = start_node(module, params, name=name, namespace=self.namespace,
                                              log_path=os.path.join(self.folder, module + '.log'))

    def check(self):
        """Raise NodeExited (a RuntimeError, with the end of its log) if a node has exited."""
        for proc in self.processes.values():
            proc.check()

    def stop(self):
        stop_all(list(self.processes.values()))

    def close(self, executor, node):
        """The end of a demo run: stop the node processes, then this process's ``executor``, its ``node`` and
        rclpy."""
        import rclpy
        self.stop()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


class Recorder:
    """Subscribes to the loop's topics and keeps what the report needs (thread-safe)."""

    def __init__(self, node, namespace, joint_names):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from diagnostic_msgs.msg import DiagnosticArray
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.lock = threading.Lock()
        self.joint_names = list(joint_names)
        self.t, self.q = [], []               # joint-state stamps [s] and positions (model order)
        self.torque_latency = []              # [s] joint-state stamp to torque receipt
        self.diagnostics = {}                 # node name -> {key: value}
        self.recording = False
        node.create_subscription(JointState, f'{namespace}/joint_states', self._on_state, qos)
        node.create_subscription(JointState, f'{namespace}/dynamics_node/compensation_torque',
                                 self._on_torque, qos)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        self.order = None
        self.torques = 0

    @staticmethod
    def _seconds(stamp):
        return stamp.sec + 1e-9 * stamp.nanosec

    def _on_state(self, msg):
        if self.order is None:
            index = {n: i for i, n in enumerate(msg.name)}
            self.order = [index[n] for n in self.joint_names]
        with self.lock:
            if self.recording:
                self.t.append(self._seconds(msg.header.stamp))
                self.q.append(np.asarray(msg.position)[self.order])

    def _on_torque(self, msg):
        received = time.time()
        with self.lock:
            self.torques += 1
            if self.recording:
                self.torque_latency.append(received - self._seconds(msg.header.stamp))

    def _on_diagnostics(self, msg):
        with self.lock:
            for status in msg.status:
                self.diagnostics[status.name] = {kv.key: kv.value for kv in status.values}

    def diagnostic(self, node, key):
        """A value from the latest diagnostics of ``node`` (a fully qualified name), or None.

        Status names are ``'<node without the leading />: <status>'`` (model_node)."""
        prefix = node.lstrip('/') + ':'
        with self.lock:
            for name, values in self.diagnostics.items():
                if name.startswith(prefix) and key in values:
                    return values[key]
        return None


class Spinner:
    """Spins the demo's node from the main thread (rclpy's EventsExecutor must not
    get new subscriptions or clients from another thread while it spins)."""

    def __init__(self, node, executor, nodes):
        self.node, self.executor, self.nodes = node, executor, nodes

    def until(self, predicate, timeout, what):
        """Spin until ``predicate()``; a RuntimeError naming ``what`` after ``timeout`` s
        or if a node process has exited (:func:`robot_dynamics.tools.processes.wait_until`)."""
        wait_until(predicate, timeout, what, processes=list(self.nodes.processes.values()),
                   step=lambda: self.executor.spin_once(timeout_sec=0.01))

    def for_seconds(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def call(self, srv_type, name, request, timeout=10.0):
        """Call a service whose request may be served twice (it is resent if no answer
        comes, :func:`robot_dynamics.tools.processes.call_until_answered`); its response."""
        client = self.node.create_client(srv_type, name)
        try:
            self.until(lambda: client.service_is_ready(), timeout, f'service {name}')
            return call_until_answered(client, request, timeout, f'the answer of {name}',
                                       processes=list(self.nodes.processes.values()),
                                       step=lambda: self.executor.spin_once(timeout_sec=0.01))
        finally:
            self.node.destroy_client(client)


def run_loop(urdf, model, q0, duration, namespace):
    """Run the closed loop over DDS; returns (t (N,), q (N, nq), latency (M,), info dict)."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    from std_srvs.srv import SetBool

    # The one import of the nodes' package in tools/: this process receives 2 x 1 kHz as the
    # nodes do, so it spins the executor they spin (ros/spin.py: rclpy's EventsExecutor, or what
    # ROBOT_DYNAMICS_EXECUTOR selects). The nodes themselves run as child processes.
    from ..ros.spin import make_executor

    nodes = Nodes(urdf, model, q0, namespace)
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)   # Ctrl-C stays ours
    node = rclpy.create_node('robot_dynamics_demo')
    rec = Recorder(node, namespace, model.joint_names)
    executor = make_executor()          # rclpy's EventsExecutor: keeps up with 2 x 1 kHz
    executor.add_node(node)
    spin = Spinner(node, executor, nodes)
    info = {}
    try:
        nodes.start()
        print(f'Started simulator_node and dynamics_node in {namespace} (logs in {nodes.folder}); '
              f'waiting for the loop to close...', flush=True)
        spin.until(lambda: rec.torques > 0, START_TIMEOUT, 'the first compensation torque')
        rec.recording = True
        answer = spin.call(SetBool, nodes.processes['simulator'].topic('~/pause'), SetBool.Request(data=False))
        if not answer.success:
            raise RuntimeError(f'the simulator did not resume: {answer.message}')
        label = 'until Ctrl-C' if duration is None else f'for {duration:g} s'
        print(f'Loop closed; the arm runs {label}.', flush=True)
        start = time.monotonic()
        try:
            while duration is None or time.monotonic() - start < duration:
                spin.for_seconds(5.0 if duration is None else min(0.1, duration))
                nodes.check()
                if duration is None and rec.q:
                    drift = np.abs(rec.q[-1] - q0).max()
                    print(f'  t = {time.monotonic() - start:6.1f} s, drift {drift * 1e3:.3f} mrad', flush=True)
        except KeyboardInterrupt:
            print('\nCtrl-C: stopping', flush=True)
        rec.recording = False
        info['wall'] = time.monotonic() - start
        spin.for_seconds(1.2)           # one more diagnostics period of both nodes
        for key in ('real_time_factor_achieved', 'effort_commands_in', 'commands_rejected', 'steps'):
            info['sim_' + key] = rec.diagnostic(f'{namespace}/simulator', key)
        for key in ('messages_in', 'commands_out', 'callback_time_mean_us', 'input_latency_mean_ms',
                    'input_latency_max_ms'):
            info['dyn_' + key] = rec.diagnostic(f'{namespace}/dynamics_node', key)
        info['torques'] = rec.torques
    finally:
        nodes.close(executor, node)
    t = np.asarray(rec.t) - (rec.t[0] if rec.t else 0.0)
    return t, np.asarray(rec.q).reshape(-1, model.nq), np.asarray(rec.torque_latency), info


# --- report and plot ----------------------------------------------------------

def report(model, q0, t, q, latency, info, fall):
    """Print drift with and without compensation, rates and latency."""
    drift = np.abs(q - q0).max(axis=0) if len(q) else np.full(model.nq, np.nan)
    fall_drift = np.abs(fall.q - q0).max(axis=0)
    width = max(len(n) for n in model.joint_names)
    span = t[-1] if len(t) else 0.0
    print(f'\nPose drift over {span:.2f} s, max |q - q0| [rad]:')
    print(f'{"joint":<{width}}  {"compensated":>12} {"falling":>10}')
    for i, name in enumerate(model.joint_names):
        print(f'{name:<{width}}  {drift[i]:12.2e} {fall_drift[i]:10.3f}')
    print(f'{"all":<{width}}  {drift.max():12.2e} {fall_drift.max():10.3f}')
    n = len(t)
    rate = (n - 1) / span if span > 0 else float('nan')
    print(f'\nLoop: {n} joint states received ({rate:.0f} Hz), {info.get("torques", 0)} compensation '
          f'torques; simulator: {info.get("sim_effort_commands_in")} effort commands applied, '
          f'{info.get("sim_commands_rejected")} rejected, real-time factor '
          f'{info.get("sim_real_time_factor_achieved")}')
    print(f'dynamics_node: {info.get("dyn_messages_in")} joint states in, {info.get("dyn_commands_out")} '
          f'commands out, callback {info.get("dyn_callback_time_mean_us")} us, input latency (last second) '
          f'mean {info.get("dyn_input_latency_mean_ms")} ms, max {info.get("dyn_input_latency_max_ms")} ms')
    if len(latency):
        p50, p99 = np.percentile(latency, [50, 99]) * 1e3
        print(f'Latency, joint state published -> its torque received by this process: p50 {p50:.2f} ms, '
              f'p99 {p99:.2f} ms, max {latency.max() * 1e3:.2f} ms')


def plot(model, q0, t, q, fall, path):
    """Joint angles over time, compensated (solid) versus falling (dashed); saves a PNG."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    n = model.nq
    cols = 2
    rows = (n + 1 + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(11, 2.2 * rows), sharex=True, squeeze=False)
    end = min(t[-1] if len(t) else fall.t[-1], fall.t[-1])
    for i, name in enumerate(model.joint_names):
        ax = axes.flat[i]
        ax.plot(fall.t, fall.q[:, i], '--', color='tab:red', label='no compensation (falls)')
        ax.plot(t, q[:, i], '-', color='tab:blue', label='gravity compensation over ROS 2')
        ax.axhline(q0[i], color='0.6', lw=0.8)
        ax.set_ylabel(f'{name}\n[rad]', fontsize=8)
        ax.grid(alpha=0.3)
    ax = axes.flat[n]
    ax.semilogy(fall.t[1:], np.abs(fall.q[1:] - q0).max(axis=1), '--', color='tab:red')
    if len(t) > 1:
        ax.semilogy(t[1:], np.maximum(np.abs(q[1:] - q0).max(axis=1), 1e-12), '-', color='tab:blue')
    ax.axhline(1e-3, color='k', lw=0.8, ls=':')
    ax.set_ylabel('max |q - q0|\n[rad]', fontsize=8)
    ax.grid(alpha=0.3)
    for ax in axes.flat[n + 1:]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel('time [s]')
        ax.set_xlim(0, end)
    axes.flat[0].legend(fontsize=8, loc='best')
    fig.suptitle(f'{model.name}: joint angles, simulated arm with and without gravity compensation')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def exit_on_signals(signals=(signal.SIGTERM, signal.SIGHUP)):
    """Make ``signals`` end the demo as SystemExit (status 128 + the signal), so that the
    nodes are stopped on the way out, as after Ctrl-C (the main thread only)."""
    def leave(signum, frame):
        raise SystemExit(128 + signum)
    if threading.current_thread() is threading.main_thread():
        for sig in signals:
            signal.signal(sig, leave)


def main(argv=None):
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog='robot_dynamics_demo',
        description='Simulate a robot arm and hold it with gravity compensation over ROS 2 topics; '
                    'report the drift with and without compensation and plot it.')
    parser.add_argument('--urdf', metavar='PATH',
                        help=f'URDF file (default: the bundled 7-DOF arm, {BUNDLED_ARM})')
    parser.add_argument('--duration', type=float, default=10.0, metavar='S',
                        help='seconds to run the loop (default: %(default)s)')
    parser.add_argument('--forever', action='store_true', help='run until Ctrl-C instead of --duration')
    parser.add_argument('--output', default='robot_dynamics_demo.png', metavar='PNG',
                        help='plot file to write (default: %(default)s in the current folder)')
    parser.add_argument('--namespace', default='/robot_dynamics_demo', metavar='NS',
                        help='ROS namespace of the two nodes (default: %(default)s)')
    parser.add_argument('--mode', default='gravity_coriolis',
                        choices=('gravity_coriolis', 'cartesian_impedance', 'contact'),
                        help="dynamics_node's mode: gravity_coriolis holds the arm (report and plot); "
                             'cartesian_impedance moves the flange between two targets and prints the tracking '
                             'error (no plot; robot_dynamics/tools/impedance_demo.py); contact presses the '
                             "Panda's hand on the table of --world with --force in cartesian_impedance, holds it "
                             'until the force is steady (at most --duration) and prints the contact force, the '
                             "force-torque sensor's and the momentum observer's (report and plot; "
                             'robot_dynamics/tools/contact_demo.py) (default: %(default)s)')
    parser.add_argument('--force', type=float, default=10.0, metavar='N',
                        help='--mode contact: the force [N] the hand presses on the table with, 0 < N <= '
                             f'{MAX_FORCE:g} (the stiffness 500 N/m times dynamics_node\'s max_pose_error 5 cm) '
                             '(default: %(default)s)')
    parser.add_argument('--world', metavar='YAML',
                        help='--mode contact: the world file (docs/CONTACT.md), a static box under the hand '
                             '(default: the bundled config/worlds/panda_table.yaml)')
    args = parser.parse_args(argv)
    if not 0.0 < args.force <= MAX_FORCE:
        parser.error(f'--force must be a force in newtons, 0 < N <= {MAX_FORCE:g} (the spring of 500 N/m is '
                     f'clipped at dynamics_node\'s max_pose_error of 5 cm), got {args.force}')
    if not (args.duration > 0 and np.isfinite(args.duration)):
        parser.error(f'--duration must be a finite number of seconds > 0, got {args.duration}')
    if not args.output.lower().endswith('.png'):
        parser.error(f'--output: expected a file name ending in .png, got {args.output!r}')
    if not args.namespace.startswith('/'):
        parser.error(f'--namespace must start with "/", got {args.namespace!r}')

    try:
        path = args.urdf or bundled_urdf()
        model = rd.load_urdf(path)
    except (OSError, ValueError) as err:    # missing file, rd.URDFError
        print(f'robot_dynamics_demo: error: {err}', file=sys.stderr)
        return 1
    from ..simulation import simulate
    q0 = start_pose(model)
    if args.mode == 'contact' and set(model.joint_names) != set(PANDA_READY):
        print('robot_dynamics_demo: error: --mode contact needs the Panda (the bundled arm, or a URDF with '
              f'its joints), got the joints {list(model.joint_names)}', file=sys.stderr)
        return 1
    print_arm(model, path, q0)
    if args.mode == 'contact':
        from ..ros.spin import make_executor
        from .contact_demo import run
        exit_on_signals()
        try:
            world = args.world or str(rd.bundled_path('config/worlds/panda_table.yaml'))
            return run(path, model, q0, 20.0 if args.forever else args.duration, args.namespace, force=args.force,
                       world_file=world, output=args.output, nodes=Nodes(path, model, q0, args.namespace),
                       spinner=Spinner, make_executor=make_executor, start_timeout=START_TIMEOUT)
        except (OSError, RuntimeError, ValueError) as err:      # contact.WorldError is a ValueError
            print(f'robot_dynamics_demo: error: {err}', file=sys.stderr)
            return 1
    if args.mode == 'cartesian_impedance':
        from ..ros.spin import make_executor
        from .impedance_demo import run
        exit_on_signals()
        try:
            return run(path, model, q0, 20.0 if args.forever else args.duration, args.namespace,
                       nodes=Nodes(path, model, q0, args.namespace), spinner=Spinner, make_executor=make_executor,
                       start_timeout=START_TIMEOUT)
        except (RuntimeError, ValueError) as err:
            print(f'robot_dynamics_demo: error: {err}', file=sys.stderr)
            return 1

    fall_duration = args.duration if not args.forever else 10.0
    fall = simulate(model, q0, duration=fall_duration)
    print(f'Without compensation (offline, same physics, {fall_duration:g} s): max drift '
          f'{np.abs(fall.q - q0).max():.3f} rad\n', flush=True)
    exit_on_signals()
    try:
        t, q, latency, info = run_loop(path, model, q0, None if args.forever else args.duration,
                                       args.namespace)
    except RuntimeError as err:
        print(f'robot_dynamics_demo: error: {err}', file=sys.stderr)
        return 1
    if len(q) < 2:
        print('robot_dynamics_demo: error: no joint states were recorded', file=sys.stderr)
        return 1
    report(model, q0, t, q, latency, info, fall)
    plot(model, q0, t, q, fall, args.output)
    print(f'\nPlot written to {os.path.abspath(args.output)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
