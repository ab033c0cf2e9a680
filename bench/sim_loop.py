"""Soak and real-time benchmark of the simulated arm over real DDS.

Usage (from the checkout, after scripts/setup-venv.sh):
    .venv/bin/python bench/sim_loop.py [--duration 60] [--window 10] [--no-controller] [--json]
    .venv/bin/python bench/sim_loop.py --duration 600          # the 10-minute soak

Starts, as separate processes on the bundled 7-DOF Panda (urdf/panda_arm.urdf):

- ``simulator_node``: 1 kHz physics (RK4), joint_states at 1 kHz, real-time
  factor 1, started paused at the Panda's ready pose;
- ``dynamics_node`` (unless ``--no-controller``): gravity + Coriolis
  compensation of every joint state, sent back to the simulator as its effort
  command (``publish_command``), so the arm is held in a closed loop. Its
  joint_states subscription is best-effort (the node's default) unless
  ``--joint-states-reliability reliable``: only then is a joint state
  guaranteed to arrive, so only then is a lost one a fault of the loop.

This process subscribes (reliable) to joint_states, to the dynamics node's
``~/compensation_torque`` (stamped with the joint state it answers) and to
the command topic, resumes the simulator, and every ``--window`` seconds
records: joint states and torques received, latency from a joint state's
publication to the receipt of its torque (p50 / p99 / max), the simulator's
real-time factor (simulated time over wall time, from its diagnostics), the
resident memory (VmRSS) and CPU share of each node.

At the end it stops the dynamics node first (so the command count is final),
waits for the simulator's next diagnostics, then counts what was lost:

- joint states without a torque answer (published more than 0.5 s before the
  dynamics node was stopped);
- commands the dynamics node sent (seen here) that the simulator did not
  count as received.

With ``--no-controller`` only the simulator runs, pinned to one core
(``--cpu``, default the last one): the real-time factor it holds while
publishing joint_states at 1 kHz. Exits 1 if a target is missed (no loss,
real-time factor >= 0.99, memory growth < 5 MB after the first window).
"""
import argparse
import json
import os
import pathlib
import signal
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # this checkout's robot_dynamics, installed or not
sys.path.insert(1, str(ROOT / 'test' / 'ros'))   # the tests' node-process harness, node_process.py
from node_process import call_until_answered, start_node, stop_all, wait_until  # noqa: E402

PANDA = ROOT / 'urdf' / 'panda_arm.urdf'
READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
JOINTS = ['panda_joint%d' % i for i in range(1, 8)]
TARGETS = {'lost': 0, 'real_time_factor': 0.99, 'memory_growth_mb': 5.0}


class Monitor:
    """Subscriptions of this process; plain lists appended from spin_once callbacks."""

    def __init__(self, node, ns):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.ns = ns
        self.states = []            # (stamp ns) of every joint state received
        self.answers = {}           # stamp ns -> latency [s]
        self.answer_times = []      # (receipt wall time, latency) for windows
        self.commands = 0
        self.diag = {}              # node name -> (receipt wall time, {key: value})
        node.create_subscription(JointState, ns + '/joint_states', self._on_state, qos)
        node.create_subscription(JointState, ns + '/dynamics_node/compensation_torque', self._on_torque, qos)
        node.create_subscription(Float64MultiArray, ns + '/effort_controller/commands', self._on_command, qos)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 50)

    def _on_state(self, msg):
        self.states.append(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)

    def _on_torque(self, msg):
        now = time.time_ns()
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        latency = (now - stamp) * 1e-9
        self.answers[stamp] = latency
        self.answer_times.append((now * 1e-9, latency))

    def _on_command(self, msg):
        self.commands += 1

    def _on_diag(self, msg):
        for status in msg.status:
            if status.name.startswith(self.ns.lstrip('/') + '/'):
                node = status.name.split(':')[0]
                self.diag[node] = (time.time(), {kv.key: kv.value for kv in status.values})

    def value(self, node, key):
        entry = self.diag.get(self.ns.lstrip('/') + '/' + node)
        return None if entry is None else entry[1].get(key)


def run(args):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))    # run the cleanup below
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    from std_srvs.srv import SetBool

    from robot_dynamics.ros.model_node import make_executor

    ns = '/rd_soak_%d' % os.getpid()
    logs = tempfile.mkdtemp(prefix='rd_sim_loop_')
    # The loop closes on the nodes' default topics, relative to the namespace.
    sim_params = dict(urdf_path=str(PANDA), initial_positions=READY, start_paused=True, joints=JOINTS)
    dyn_params = dict(urdf_path=str(PANDA), mode='gravity_coriolis', publish_command=True, joints=JOINTS,
                      joint_states_reliability=args.joint_states_reliability)
    procs = {'simulator': start_node('simulator_node', sim_params, name='simulator', namespace=ns,
                                     log_path=os.path.join(logs, 'sim.log'))}
    if not args.no_controller:
        procs['dynamics_node'] = start_node('dynamics_node', dyn_params, name='dynamics_node', namespace=ns,
                                            log_path=os.path.join(logs, 'dyn.log'))
    else:
        os.sched_setaffinity(procs['simulator'].pid, {args.cpu})

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('rd_sim_loop_monitor')
    mon = Monitor(node, ns)
    executor = make_executor()
    executor.add_node(node)

    def spin(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)

    def wait(predicate, timeout, what):
        wait_until(predicate, timeout, what, processes=list(procs.values()),
                   step=lambda: executor.spin_once(timeout_sec=0.01))

    try:
        wait(lambda: mon.answers if not args.no_controller else mon.states, 180, 'the loop to start')
        client = node.create_client(SetBool, ns + '/simulator/pause')
        wait(client.service_is_ready, 30, 'the ~/pause service')   # a request sent before discovery is lost
        answer = call_until_answered(client, SetBool.Request(data=False), 30, 'the answer of ~/pause',
                                     processes=list(procs.values()),
                                     step=lambda: executor.spin_once(timeout_sec=0.01))
        if not answer.success:
            raise RuntimeError('the simulator did not resume: %s' % answer.message)
        t_start = time.time()
        mon.states.clear()
        mon.answers.clear()
        mon.answer_times.clear()
        spin(1.5)                                   # a diagnostics period after the start
        rtf0 = (float(mon.value('simulator', 'sim_time')), mon.diag[ns.lstrip('/') + '/simulator'][0])
        windows = []
        cpu0 = {n: p.cpu_seconds() for n, p in procs.items()}
        w_start = time.time()
        n_windows = max(1, int(round(args.duration / args.window)))
        for w in range(n_windows):
            spin(args.window)
            for p in procs.values():
                p.check()
            now = time.time()
            lat = np.array([l for (t, l) in mon.answer_times if w_start <= t < now])
            row = {'t_end': round(now - t_start, 1), 'joint_states': len(mon.states),
                   'torques': len(mon.answers)}
            if lat.size:
                row.update(p50_ms=float(np.percentile(lat, 50) * 1e3), p99_ms=float(np.percentile(lat, 99) * 1e3),
                           max_ms=float(lat.max() * 1e3))
            for name, p in procs.items():
                cpu = p.cpu_seconds()
                row['cpu_%s' % name] = (cpu - cpu0[name]) / (now - w_start)
                cpu0[name] = cpu
                row['rss_mb_%s' % name] = p.rss_mb()
            sim_entry = mon.diag[ns.lstrip('/') + '/simulator']
            row['real_time_factor'] = ((float(sim_entry[1]['sim_time']) - rtf0[0]) / (sim_entry[0] - rtf0[1]))
            windows.append(row)
            _print_row(row, args)
            w_start = now
        # Stop the controller first: its command count is then final.
        sim_entry = mon.diag[ns.lstrip('/') + '/simulator']
        result = {'duration_s': round(time.time() - t_start, 1), 'windows': windows,
                  'real_time_factor': (float(sim_entry[1]['sim_time']) - rtf0[0]) / (sim_entry[0] - rtf0[1])}
        if 'dynamics_node' in procs:
            t_stop = time.time_ns()
            procs['dynamics_node'].stop(timeout=10)
            spin(2.5)                                  # in-flight messages and the next simulator diagnostics
            answered = set(mon.answers)
            considered = [s for s in mon.states if s < t_stop - 500_000_000]
            result['joint_states_considered'] = len(considered)
            result['joint_states_unanswered'] = sum(1 for s in considered if s not in answered)
            result['commands_sent'] = mon.commands
            received = int(mon.value('simulator', 'effort_commands_in'))
            result['commands_received_by_simulator'] = received
            # Both counts run from the start (this monitor subscribed before the nodes were up).
            result['commands_lost'] = max(0, mon.commands - received)
            result['lost'] = result['joint_states_unanswered'] + result['commands_lost']
            lat = np.array(list(mon.answers.values()))
            result.update(p50_ms=float(np.percentile(lat, 50) * 1e3), p99_ms=float(np.percentile(lat, 99) * 1e3),
                          max_ms=float(lat.max() * 1e3))
        else:
            result['lost'] = 0
        result['commands_rejected'] = int(mon.value('simulator', 'commands_rejected') or 0)
        result['commands_superseded'] = int(mon.value('simulator', 'commands_superseded') or 0)
        base = windows[0]
        result['memory_growth_mb'] = {n: windows[-1]['rss_mb_%s' % n] - base['rss_mb_%s' % n] for n in procs}
        result['p99_ms_by_window'] = [round(w.get('p99_ms', float('nan')), 3) for w in windows]
        return result
    finally:
        stop_all(list(procs.values()), timeout=10)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


def _print_row(row, args):
    if args.json_only:
        return
    lat = ('p50 %.2f ms  p99 %.2f ms  max %.1f ms' % (row['p50_ms'], row['p99_ms'], row['max_ms'])
           if 'p50_ms' in row else '')
    mem = '  '.join('%s %.1f MB %.0f%%' % (k[7:], v, 100 * row['cpu_' + k[7:]])
                    for k, v in row.items() if k.startswith('rss_mb_'))
    print('t=%6.1f s  states %7d  torques %7d  rtf %.4f  %s  %s' % (
        row['t_end'], row['joint_states'], row['torques'], row['real_time_factor'], lat, mem), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=60.0, help='seconds measured (default 60)')
    parser.add_argument('--window', type=float, default=10.0, help='seconds per reported window (default 10)')
    parser.add_argument('--no-controller', action='store_true', help='the simulator alone, pinned to --cpu')
    parser.add_argument('--cpu', type=int, default=(os.cpu_count() or 1) - 1, help='core for --no-controller')
    parser.add_argument('--joint-states-reliability', choices=('best_effort', 'reliable'), default='best_effort',
                        help="dynamics_node's joint_states subscription (its parameter; default best_effort, "
                             "the node's default, which DDS may drop from under load)")
    parser.add_argument('--json', action='store_true', help='print the result as JSON at the end')
    parser.add_argument('--json-only', action='store_true', help='print only the JSON result')
    args = parser.parse_args(argv)
    if not (args.duration > 0 and args.window > 0):
        parser.error('--duration and --window must be > 0')
    args.json = args.json or args.json_only
    result = run(args)
    growth = max(result['memory_growth_mb'].values())
    ok = (result['lost'] == 0 and result['real_time_factor'] >= TARGETS['real_time_factor']
          and growth < TARGETS['memory_growth_mb'])
    result['targets_met'] = ok
    if not args.json_only:
        print('\nover %.0f s: real-time factor %.4f, lost %d, memory growth %s MB%s' % (
            result['duration_s'], result['real_time_factor'], result['lost'],
            ', '.join('%s %+.2f' % kv for kv in result['memory_growth_mb'].items()),
            '' if 'p99_ms' not in result else ', latency p50 %.2f ms p99 %.2f ms max %.1f ms; '
            'joint states answered %d of %d; commands sent %d, simulator received %d in all' % (
                result['p50_ms'], result['p99_ms'], result['max_ms'],
                result['joint_states_considered'] - result['joint_states_unanswered'],
                result['joint_states_considered'], result['commands_sent'],
                result['commands_received_by_simulator'])))
        print('targets (no loss, real-time factor >= 0.99, memory growth < 5 MB): %s'
              % ('met' if ok else 'MISSED'))
    if args.json:
        print(json.dumps(result, indent=1))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
