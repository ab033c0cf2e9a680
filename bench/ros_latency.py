"""Latency and CPU of dynamics_node through real DDS at 1 kHz, against a bare rclpy relay.

Usage (from the checkout, after scripts/setup-venv.sh):
    .venv/bin/python bench/ros_latency.py [--rounds 3] [--tries 3] [--rate 1000] [--duration 10] [--mode ...]

Measures two targets one after the other, in one invocation, with the same
publisher process and the same receiver (this process):

1. the baseline, bench/ros_relay.py: a bare rclpy node that subscribes
   JointState and publishes each message as received (nothing else), on the
   executor dynamics_node spins (rclpy's EventsExecutor by default;
   ``ROBOT_DYNAMICS_EXECUTOR=single`` switches both);
2. dynamics_node on the bundled 7-DOF Panda arm (urdf/panda_arm.urdf) with
   the ros2_control bridge on (Float64MultiArray command) and its default
   ``diagnostic_torque_rate`` unless ``--diagnostic-torque-rate`` is given.

For each: the publisher process sends sensor_msgs/JointState at ``--rate``
Hz for ``--duration`` s (after a ``--warmup`` that is not counted), each
stamped with the wall clock at publish time and with a sequence number in
header.frame_id; this process receives the target's ~/compensation_torque
(the relay: the joint state itself; dynamics_node: the torque, stamped with
the input's stamp; in ``--mode joint_impedance`` or ``cartesian_impedance``
its ~/impedance_torque, the law's torque towards the first joint state's
pose, which the node holds without a target) and takes the latency of each message as receipt time
minus its stamp (through DDS twice and the target's callback once); the
target's CPU share is read from /proc/<pid>/stat over the measured window.
This process also subscribes to dynamics_node's command (Float64MultiArray,
which has no stamp) and counts it, serialized (a raw subscription: nothing
here reads it, and its Python deserialization delayed the torque after it). ``--command-process`` gives the command
to a process of its own instead, a stand-in of the controller manager: on
this 2-core machine that fourth process cost more than it took off the
receiver (docs/PERFORMANCE.md, 2026-11-27). The command's own latency is
reported too: it has no stamp, but the node publishes it just before the
torque, in the same callback, so each command is paired with the torque that
follows it (:class:`CommandPairing`) and timed against that torque's stamp;
the round's "command ratio" is its p99 over the relay's message's. It is what
a controller gets; the targets stay on the torque topic, the second message
of each joint state (its latency includes the command's publish and this
process's handling of the command).

A round measures the pair; ``--rounds N`` measures N rounds, alternating
which goes first. A round in which the relay or dynamics_node lost a
message, or stalled (a message later than ``--stall-ms``, 50 ms: fifty
periods of the loop), is repeated, up to ``--tries`` times in all (3), and
the output says so: a disturbed baseline is no baseline (on a fresh machine
the relay's first round once lost 157 of 10,000 messages in a 335 ms stall,
p99 6.8 ms, which made that round's p99 ratio 0.10; a 335 ms stall without
a loss once made a round's ratio 0.00). A round still disturbed after its
last try is kept, reported as such, and misses the targets.

Prints, per round, each target's messages in/out, lost messages,
p50/p90/p99/max latency and CPU share (of one core) and the round's ratios
(dynamics_node / relay), then the medians over the rounds, the targets
(every round's relay and dynamics_node lost nothing; the median of the
rounds' p99 ratios <= 1.3 and of their CPU ratios <= 1.5) and, as its last
line, ``ratio p99 X cpu Y`` (those medians). Exits 1 if a target is missed.
``--json`` prints the figures as JSON as well. ``--trace DIR`` runs both
targets traced (bench/latency_trace.py) and prints, per target and round,
where a message's latency goes: in (stamp to the target's callback), the
callback, out (to the receipt here), p50 and p99, and how much of the top 1 %
came while another callback of the target (dynamics_node's watchdog timer or
diagnostics) ran; the wrappers cost a few us a message, so the targets'
verdict is not taken from a traced run. Publisher and receiver are
separate processes so that neither's Python loop delays the other; all
share the machine's cores.
"""
import argparse
import json
import multiprocessing as mp
import os
import pathlib
import sys
import threading
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # this checkout's robot_dynamics, installed or not
sys.path.insert(1, str(ROOT / 'test' / 'ros'))   # the tests' node-process harness, node_process.py
from node_process import NodeProcessError, start_node  # noqa: E402
sys.path.insert(2, str(ROOT / 'bench'))
import latency_trace  # noqa: E402

NS = '/rd_bench_%d' % os.getpid()
NODE = 'bench_dynamics'
RELAY = 'bench_relay'
#: dynamics_node's torque topic of a mode (its command, stamped with the joint state's stamp), when not
#: ~/compensation_torque: the impedance modes publish the law's torque there (with no target they hold
#: the first joint state's pose, docs/NODES.md) and ~/compensation_torque only at diagnostic_torque_rate.
TORQUE_TOPIC = {'joint_impedance': 'impedance_torque', 'cartesian_impedance': 'impedance_torque'}
#: Targets of dynamics_node against the relay: p99 latency and CPU ratios.
P99_RATIO, CPU_RATIO = 1.3, 1.5


def _publisher(ns, rate, warmup, duration, phases, results, domain_env):
    """Child process: for each phase ``phases`` hands it, publish JointState at ``rate`` Hz with
    absolute deadlines once a subscriber has matched; report to ``results``. None ends it."""
    os.environ.update(domain_env)
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    rclpy.init()
    node = rclpy.create_node('bench_joint_state_publisher')
    pub = node.create_publisher(JointState, ns + '/joint_states',
                                QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    names = ['panda_joint%d' % i for i in range(1, 8)]
    msg = JointState(name=names)
    base = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    while True:
        phase = phases.get()
        if phase is None:
            break
        deadline = time.monotonic() + 30
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)                                # the receiver's side matches too
        results.put(('started', phase, time.monotonic()))
        n_total = int(round((warmup + duration) * rate))
        period = 1.0 / rate
        t0 = time.monotonic() + 0.05
        late = 0
        for k in range(n_total):
            target = t0 + k * period
            dt = target - time.monotonic()               # sleep only: a busy wait would
            if dt > 0:                                   # take a core from the node
                time.sleep(dt)
            if time.monotonic() - target > period:
                late += 1
            s = 0.1 * np.sin(2 * np.pi * 0.5 * k * period)
            msg.position = (base + s).tolist()
            msg.velocity = [s] * 7
            msg.header.frame_id = str(k)
            now = time.time_ns()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
            pub.publish(msg)
        results.put(('done', phase, {'sent': n_total, 'late': late, 'first_measured': int(round(warmup * rate)),
                                     't0': t0}))
    node.destroy_node()
    rclpy.shutdown()


def _command_counter(topic, count, stop, domain_env):
    """Child process: subscribe dynamics_node's command like a controller manager, count it in ``count``
    (a shared integer) until ``stop`` is set."""
    os.environ.update(domain_env)
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Float64MultiArray
    rclpy.init()
    node = rclpy.create_node('bench_controller_standin')

    def on_command(_msg):
        with count.get_lock():
            count.value += 1
    node.create_subscription(Float64MultiArray, topic, on_command,
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    while not stop.is_set() and rclpy.ok():
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.shutdown()


class CommandPairing:
    """The latency of each command, which has no stamp, from the torque that follows it.

    The target publishes the command, then the torque, in one callback (dynamics_node; ros_relay.py
    ``--command``), and this process takes them in the order they came: the one command received since the
    last torque is that torque's, and its latency is its receipt minus the torque's stamp (the joint state's).
    A torque after no command or after more than one (one lost or late) is left unpaired (NaN)."""

    def __init__(self, n_max):
        self.lat = np.full(n_max, np.nan)       # [s] the command's latency of torque i, NaN: unpaired
        self.t_ns, self.since = 0, 0            # receipt [ns] of the last command; commands since the last torque

    def command(self, t_ns):
        """A command received at wall time ``t_ns`` [ns]."""
        self.t_ns = t_ns
        self.since += 1

    def torque(self, i, stamp_ns):
        """The ``i``-th torque received, stamped ``stamp_ns`` [ns] (past the array: counted, not kept)."""
        if self.since == 1 and i < len(self.lat):
            self.lat[i] = (self.t_ns - stamp_ns) * 1e-9
        self.since = 0


class Receiver:
    """This process's node: the target's ~/compensation_torque, with receipt times, and dynamics_node's command
    (counted; with ``--command-process`` another process counts it, :func:`_command_counter`)."""

    def __init__(self, n_max):
        import rclpy
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        self.rclpy = rclpy
        rclpy.init()
        self.node = rclpy.create_node('bench_receiver')
        self.qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.n_max = n_max
        self.subs = []
        self.reset()
        # The receiver spins the same C++ EventsExecutor as the node, so that its
        # own Python overhead adds as little as possible to the measured latency.
        try:
            from rclpy.experimental import EventsExecutor
            self.executor = EventsExecutor()
        except ImportError:
            from rclpy.executors import SingleThreadedExecutor
            self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.stop = threading.Event()
        self.spinner = threading.Thread(target=self._spin, daemon=True)
        self.spinner.start()

    def _spin(self):
        while not self.stop.is_set() and self.rclpy.ok():
            self.executor.spin_once(timeout_sec=0.05)

    def reset(self):
        self.seq = np.full(self.n_max, -1, dtype=np.int64)
        self.lat = np.zeros(self.n_max)
        self.commands = CommandPairing(self.n_max)
        self.count = [0, 0]                            # torques, commands (those received here)

    def on_torque(self, msg):
        t = time.time_ns()
        i, s = self.count[0], msg.header.stamp
        stamp = s.sec * 1_000_000_000 + s.nanosec
        if i < self.n_max:
            self.lat[i] = (t - stamp) * 1e-9
            self.seq[i] = int(msg.header.frame_id) if msg.header.frame_id.isdigit() else -1
        self.commands.torque(i, stamp)
        self.count[0] = i + 1

    def on_command(self, msg):
        self.commands.command(time.time_ns())
        self.count[1] += 1

    def listen(self, torque_topic, command_topic=None):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        for sub in self.subs:
            self.node.destroy_subscription(sub)
        self.subs = [self.node.create_subscription(JointState, torque_topic, self.on_torque, self.qos)]
        if command_topic:
            # Counted only, so taken serialized (raw): deserializing it in Python here, before the torque that
            # follows it, added 30-50 us to each of dynamics_node's measured latencies (docs/PERFORMANCE.md,
            # 2026-11-28 night), a cost of this process, not of the node (a controller manager takes it in C++).
            self.subs.append(self.node.create_subscription(Float64MultiArray, command_topic, self.on_command,
                                                           self.qos, raw=True))
        self.reset()

    def close(self):
        self.stop.set()
        self.spinner.join(2)
        self.node.destroy_node()
        self.rclpy.try_shutdown()


def measure(label, target, params, name, receiver, phases, results, args, command_topic=None, commands=None,
            torque='compensation_torque'):
    """Start ``target``, stream to it, stop it; its figures. ``command_topic``: subscribed here;
    ``commands``: the shared count of the command stand-in process (reset here); ``torque``: the target's
    torque topic (its private name) received and timed here."""
    receiver.listen('%s/%s/%s' % (NS, name, torque), command_topic)
    if commands is not None:
        with commands.get_lock():
            commands.value = 0
    t_start = time.monotonic()
    proc = start_node(target, params, name=name, namespace=NS,
                      ros_args=['-r', '__node:=%s' % name, '-r', '__ns:=%s' % NS]
                      if isinstance(target, list) else ())
    try:
        try:
            proc.wait_until(lambda: receiver.node.count_subscribers(NS + '/joint_states') > 0, 180,
                            'the joint_states subscription of %s' % label, period=0.05)
        except NodeProcessError as exc:
            raise SystemExit('%s did not start: %s' % (label, exc))
        print('%s ready after %.1f s (pid %d)' % (label, time.monotonic() - t_start, proc.pid), flush=True)
        phases.put(label)
        kind, _, t_started = results.get(timeout=60)
        assert kind == 'started'
        # The stream starts 0.05 s after 'started'; the window starts after the warm-up.
        time.sleep(max(0.0, t_started + 0.05 + args.warmup - time.monotonic()))
        cpu0, wall0 = proc.cpu_seconds(), time.monotonic()
        time.sleep(args.duration)
        cpu1, wall1 = proc.cpu_seconds(), time.monotonic()
        kind, _, info = results.get(timeout=60)
        assert kind == 'done'
        time.sleep(0.5)                                # the last messages in flight
        if proc.poll() is not None:
            raise SystemExit('%s exited during the measurement:\n%s' % (label, proc.log_tail()))
    finally:
        proc.stop()
    n = min(receiver.count[0], receiver.n_max)
    seq, lat, cmd_lat = receiver.seq[:n], receiver.lat[:n], receiver.commands.lat[:n]
    measured = seq >= info['first_measured']
    got = np.unique(seq[measured])
    expected = info['sent'] - info['first_measured']
    lat_ms = np.sort(lat[measured]) * 1e3
    trace = (latency_trace.decompose(args.trace, 'relay' if label == 'relay' else 'dynamics_node', seq, lat,
                                     info['first_measured']) if args.trace else None)

    cmd_ms = np.sort(cmd_lat[measured & np.isfinite(cmd_lat)]) * 1e3

    def pct(p, values=lat_ms):
        return float(np.percentile(values, p)) if values.size else float('nan')
    return {
        'commands_paired': int(cmd_ms.size), 'command_latency_p50_ms': pct(50, cmd_ms),
        'command_latency_p99_ms': pct(99, cmd_ms),
        'target': label, 'joint_states_sent': expected, 'messages_received': int(got.size),
        'commands_received_total': receiver.count[1] if commands is None else commands.value,
        'joint_states_sent_total': info['sent'],
        'lost': int(expected - got.size), 'publisher_late': info['late'],
        'latency_p50_ms': pct(50), 'latency_p90_ms': pct(90), 'latency_p99_ms': pct(99),
        'latency_max_ms': float(lat_ms[-1]) if lat_ms.size else float('nan'),
        'cpu_share_of_one_core': (cpu1 - cpu0) / (wall1 - wall0),
        'trace': trace,
    }


def ratios(relay, node):
    """(p99, CPU) of dynamics_node over the relay's."""
    return (node['latency_p99_ms'] / relay['latency_p99_ms'],
            node['cpu_share_of_one_core'] / relay['cpu_share_of_one_core'])


def command_ratio(relay, node):
    """p99 of dynamics_node's command (paired with the torque after it) over the relay's message's; NaN without
    paired commands."""
    return node['command_latency_p99_ms'] / relay['latency_p99_ms']


def disturbed(figures, stall_ms):
    """Why the round is no measure (the relay or dynamics_node lost a message or stalled), or ''."""
    why = []
    for label in ('relay', 'dynamics_node'):
        f = figures[label]
        if f['lost'] > 0:
            why.append('%s lost %d' % (label, f['lost']))
        if not f['latency_max_ms'] <= stall_ms:
            why.append('%s stalled %.0f ms' % (label, f['latency_max_ms']))
    return ', '.join(why)


def report(f, what):
    print('%s:' % what)
    print('  joint states sent    %7d   (publisher late by > 1 period: %d)' % (f['joint_states_sent'],
                                                                              f['publisher_late']))
    print('  messages received    %7d   lost: %d' % (f['messages_received'], f['lost']))
    if f['target'] == 'dynamics_node':
        print('  commands received    %7d   (for %d joint states in all, warm-up included, '
              '+ 1 zero command at the timeout after the stream)' % (f['commands_received_total'],
                                                                      f['joint_states_sent_total']))
    print('  latency publish -> receipt: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms'
          % (f['latency_p50_ms'], f['latency_p90_ms'], f['latency_p99_ms'], f['latency_max_ms']))
    if f['commands_paired']:
        print('  command publish -> receipt (%d paired with the torque after it): p50 %.3f ms, p99 %.3f ms'
              % (f['commands_paired'], f['command_latency_p50_ms'], f['command_latency_p99_ms']))
    print('  CPU: %.1f %% of one core' % (100 * f['cpu_share_of_one_core']), flush=True)
    t = f.get('trace')
    if t:
        print('  trace [us] p50 / p99: in %.0f / %.0f, callback %.0f / %.0f, out %.0f / %.0f; top 1 %% during '
              'another callback of the target: %.0f %% (%d such callbacks)'
              % (t['in_p50_us'], t['in_p99_us'], t['callback_p50_us'], t['callback_p99_us'], t['out_p50_us'],
                 t['out_p99_us'], 100 * t['tail_during_other_callbacks'], t['other_callbacks']), flush=True)


def run(args):
    domain_env = {k: os.environ[k] for k in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE')
                  if k in os.environ}
    params = {'urdf_path': str(ROOT / 'urdf' / 'panda_arm.urdf'), 'mode': args.mode, 'publish_command': True,
              'command_topic': 'commands', 'joint_state_timeout': 0.5,
              'joint_states_reliability': args.reliability}
    if args.diagnostic_torque_rate is not None:
        params['diagnostic_torque_rate'] = args.diagnostic_torque_rate
    executor = os.environ.get('ROBOT_DYNAMICS_EXECUTOR') or 'events'
    receiver = Receiver(int((args.duration + args.warmup + 2) * args.rate) + 1000)
    ctx = mp.get_context('spawn')                      # never fork a process with DDS threads
    phases, results = ctx.Queue(), ctx.Queue()
    pub = ctx.Process(target=_publisher,
                      args=(NS, args.rate, args.warmup, args.duration, phases, results, domain_env))
    pub.start()
    relay_cmd = [sys.executable, str(ROOT / 'bench' / 'ros_relay.py'), '--reliability', args.reliability]
    node_target = 'dynamics_node'
    if args.trace:
        pathlib.Path(args.trace).mkdir(parents=True, exist_ok=True)
        relay_cmd += ['--trace', args.trace]
        node_target = [sys.executable, str(ROOT / 'bench' / 'latency_trace.py'), 'node', args.trace]
    if args.relay_command:
        relay_cmd.append('--command')
    command_topic = NS + '/commands' if not args.command_process and not args.no_command_subscriber else None
    commands, stop_counter, counter = None, ctx.Event(), None
    if not args.no_command_subscriber and args.command_process:
        commands = ctx.Value('q', 0)
        counter = ctx.Process(target=_command_counter, args=(NS + '/commands', commands, stop_counter, domain_env))
        counter.start()
    rounds = []
    try:
        for k in range(args.rounds):
            # Alternate the order, so that a drift of the machine's load weighs on both alike.
            order = ('relay', 'dynamics_node') if k % 2 == 0 else ('dynamics_node', 'relay')
            for attempt in range(1, args.tries + 1):
                figures = {}
                for label in order:
                    if label == 'relay':
                        figures[label] = measure(label, relay_cmd, None, RELAY, receiver, phases, results, args,
                                                 command_topic=command_topic if args.relay_command else None)
                    else:
                        figures[label] = measure(label, node_target, params, NODE, receiver, phases, results,
                                                 args, command_topic=command_topic, commands=commands,
                                                 torque=TORQUE_TOPIC.get(args.mode, 'compensation_torque'))
                figures['tries'] = attempt
                why = disturbed(figures, args.stall_ms)
                if not why:
                    break
                print('round %d, try %d of %d: %s: %s'
                      % (k + 1, attempt, args.tries, why,
                         'repeating the round' if attempt < args.tries else 'no try left, the round stays disturbed'),
                      flush=True)
            rounds.append(figures)
    finally:
        phases.put(None)
        stop_counter.set()
        for child in (pub, counter):
            if child is None:
                continue
            child.join(10)
            if child.is_alive():
                child.terminate()
        receiver.close()
    rate_text = ('node default' if args.diagnostic_torque_rate is None
                 else '%g Hz' % args.diagnostic_torque_rate)
    print('%d Hz for %g s each (after %g s warm-up), %s executor, joint_states %s, %d round(s):'
          % (args.rate, args.duration, args.warmup, executor, args.reliability, len(rounds)))
    round_ratios, command_ratios = [], []
    for k, figures in enumerate(rounds):
        print('-- round %d (%s first, %d tr%s%s)' % (k + 1, 'relay' if k % 2 == 0 else 'dynamics_node',
                                                   figures['tries'], 'y' if figures['tries'] == 1 else 'ies',
                                                   ', DISTURBED' if disturbed(figures, args.stall_ms) else ''))
        report(figures['relay'], 'bare rclpy relay (bench/ros_relay.py)')
        report(figures['dynamics_node'], 'dynamics_node, %s mode, 7-DOF Panda, command on, '
               'diagnostic_torque_rate %s' % (args.mode, rate_text))
        round_ratios.append(ratios(figures['relay'], figures['dynamics_node']))
        command_ratios.append(command_ratio(figures['relay'], figures['dynamics_node']))
        print('  round ratios: p99 %.2f, CPU %.2f; the command\'s p99 over the relay\'s message\'s %.2f'
              % (round_ratios[-1] + (command_ratios[-1],)))

    def median(label, key):
        return float(np.median([r[label][key] for r in rounds]))
    keys = ('latency_p50_ms', 'latency_p99_ms', 'latency_max_ms', 'cpu_share_of_one_core')
    med = {label: {key: median(label, key) for key in keys} for label in ('relay', 'dynamics_node')}
    for label in ('relay', 'dynamics_node'):
        print('median of %d round(s), %s: p50 %.3f ms, p99 %.3f ms, max %.3f ms, CPU %.1f %%'
              % (len(rounds), label, med[label]['latency_p50_ms'], med[label]['latency_p99_ms'],
                 med[label]['latency_max_ms'], 100 * med[label]['cpu_share_of_one_core']))
    r_p99, r_cpu = (float(x) for x in np.median(round_ratios, axis=0))
    print('rounds\' ratios p99 %s, CPU %s; medians p99 %.2f, CPU %.2f'
          % (' / '.join('%.2f' % r for r, _ in round_ratios), ' / '.join('%.2f' % c for _, c in round_ratios),
             r_p99, r_cpu))
    r_cmd = float(np.median(command_ratios))
    print('the command (what the controller gets, published before the torque) against the relay\'s message: '
          'rounds\' p99 ratios %s, median %.2f (for the record: the targets are on the torque)'
          % (' / '.join('%.2f' % r for r in command_ratios), r_cmd))
    bad_rounds = [k + 1 for k, r in enumerate(rounds) if disturbed(r, args.stall_ms)]
    repeated = sum(r['tries'] - 1 for r in rounds)
    ok = not bad_rounds and r_p99 <= P99_RATIO and r_cpu <= CPU_RATIO
    print('targets (no message lost or later than %g ms by relay or dynamics_node in any round (%s; %d '
          'repeat(s)), median round ratio p99 <= %.1f and CPU <= %.1f): %s'
          % (args.stall_ms, 'disturbed rounds: %s' % bad_rounds if bad_rounds else 'none disturbed', repeated,
             P99_RATIO, CPU_RATIO, 'met' if ok else 'MISSED'))
    if args.json:
        print(json.dumps(dict(rounds=rounds, round_ratios=round_ratios, medians=med, rate_hz=args.rate,
                              duration_s=args.duration, mode=args.mode, executor=executor,
                              ratio_p99=r_p99, ratio_cpu=r_cpu, command_ratios=command_ratios,
                              ratio_command_p99=r_cmd, disturbed_rounds=bad_rounds), indent=2))
    print('ratio p99 %.2f cpu %.2f' % (r_p99, r_cpu), flush=True)
    return 0 if ok else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rate', type=float, default=1000.0, help='joint-state rate [Hz] (1000)')
    parser.add_argument('--duration', type=float, default=10.0, help='measured seconds (10)')
    parser.add_argument('--warmup', type=float, default=1.0, help='seconds streamed before measuring (1)')
    parser.add_argument('--mode', default='gravity_coriolis', help='dynamics_node mode (gravity_coriolis)')
    parser.add_argument('--reliability', default='best_effort', choices=('best_effort', 'reliable'),
                        help="the node's joint_states subscription QoS (best_effort)")
    parser.add_argument('--no-command-subscriber', action='store_true',
                        help='nobody subscribes to the Float64MultiArray command (the node still publishes it)')
    parser.add_argument('--command-process', action='store_true',
                        help='a controller stand-in process subscribes to the command, instead of this one')
    parser.add_argument('--relay-command', action='store_true',
                        help='the relay also publishes a command before each message, as dynamics_node does '
                             '(ros_relay.py --command; this process subscribes to it): a baseline with the '
                             "node's I/O, for the record; the targets are on the bare relay")
    parser.add_argument('--diagnostic-torque-rate', type=float, default=None,
                        help="dynamics_node's diagnostic_torque_rate [Hz] (default: the node's default; "
                             "-1: every joint state, as before the parameter; 0: off)")
    parser.add_argument('--rounds', type=int, default=1,
                        help='measure relay and node this many times, alternating which goes first; the '
                             'targets are on the medians of the rounds\' ratios (1)')
    parser.add_argument('--tries', type=int, default=3,
                        help='measurements of a round at most: a round in which the relay or dynamics_node '
                             'lost a message or stalled is repeated (3)')
    parser.add_argument('--stall-ms', type=float, default=50.0,
                        help='a round in which the relay or dynamics_node delivered a message later than this '
                             '[ms] is repeated (50)')
    parser.add_argument('--json', action='store_true', help='also print the figures as JSON')
    parser.add_argument('--trace', metavar='DIR',
                        help='run both targets traced (bench/latency_trace.py: each message\'s time in, in the '
                             "target's callback and out, files in DIR) and print where the latency goes")
    args = parser.parse_args(argv)
    for option in ('rounds', 'tries'):
        if getattr(args, option) < 1:
            parser.error('--%s: expected an integer >= 1, got %d' % (option, getattr(args, option)))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 101 + 1))
    return run(args)


if __name__ == '__main__':
    sys.exit(main())
