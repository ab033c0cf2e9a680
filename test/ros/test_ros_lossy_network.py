"""dynamics_node behind a lossy link: two network namespaces, a veth pair, 5 % loss and 1 ms of jitter.

Namespace A holds the joint-state publisher (test/ros/lossy_peer.py publish,
500 Hz, reliable, as a driver); namespace B holds two dynamics_node
processes on the bundled Panda (``on_timeout`` zero and hold,
``joint_state_timeout`` 0.1 s, the command on) and an observer
(lossy_peer.py observe) of their torque topics, commands and diagnostics.
The only way between A and B is the veth pair. Fast DDS runs over UDPv4
alone (an XML profile without the shared-memory transport, which would
bypass the link), discovery by multicast on the veth
(ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET).

The link: 5 % loss and a uniform 0-1 ms delay per packet in each
direction. With the netem qdisc (``netem loss 5% delay 0.5ms 0.5ms`` on both
ends) if the kernel has it; else (CONFIG_NET_SCH_NETEM unset, as on the
development machine) iptables in namespace A: ``-m statistic --mode random
--probability 0.05 -j DROP`` and ``-j NFQUEUE`` to test/ros/nfqueue_jitter.py,
which holds each packet for a random 0-1 ms before accepting it. The test
says which it used. A missing kernel feature fails the test with its name;
it needs root (CI runs as root) and installs iptables through
scripts/netns-tools.sh if missing.

Sequence: 5 s of lossy streaming; the link down for 0.6 s (``ip link set
down`` on A's end) and up again; 3 s of streaming; the publisher stopped.
Checked:

- every torque message (the node copies the input's header) is received in
  B at most ``joint_state_timeout`` after its joint state's stamp, so no
  torque, and no command, which the node publishes with it, was computed
  from an older state; each equals the library's torque of that state;
- the loss seen by the node while streaming is 5 % within statistics (the
  link did lose packets);
- the watchdog as docs/NODES.md says: after the link went down and after
  the publisher stopped, on_timeout zero sends one all-zero command
  ``joint_state_timeout`` (+20 %, + scheduling) after the last state, then
  nothing until states resume; hold keeps sending the last command at the
  watchdog's rate; both resume when the link is back;
- the node's own figure (diagnostics ``input_latency_max_ms``: the age of
  a state when its torque was computed) stays under the timeout;
- every process is alive at the end.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import robot_dynamics as rd

from conftest import PANDA, READY_TIMEOUT, ROOT, wait_for
import node_process

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
TIMEOUT = 0.1                   # joint_state_timeout [s]
RATE = 500.0                    # joint states [Hz]
LOSS = 0.05
MAX_HOLD_MS = 1.0               # the jitter: a uniform delay in [0, 1] ms
STREAM, OUTAGE, RESUME = 5.0, 0.6, 3.0    # [s]
NS = '/lossy'
SLACK = 0.06                    # scheduling on a loaded 2-core machine [s]

FASTDDS_UDP_ONLY = """<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <profiles>
    <transport_descriptors>
      <transport_descriptor>
        <transport_id>udp_only</transport_id>
        <type>UDPv4</type>
      </transport_descriptor>
    </transport_descriptors>
    <participant profile_name="udp_only_participant" is_default_profile="true">
      <rtps>
        <userTransports><transport_id>udp_only</transport_id></userTransports>
        <useBuiltinTransports>false</useBuiltinTransports>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


def run(*cmd, what=None):
    """Run a command; fail the test with ``what`` (the missing feature) and its output if it fails."""
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60)
    if done.returncode:
        pytest.fail('%s%s failed (%d): %s' % ('%s: ' % what if what else '', ' '.join(map(str, cmd)),
                                              done.returncode, (done.stderr or done.stdout).strip()))
    return done.stdout


class Link:
    """Namespaces A and B joined by a veth pair (10.213.0.1 in A, 10.213.0.2 in B), removed by close()."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.a, self.b = 'rdlossA%d' % tag, 'rdlossB%d' % tag
        self.va, self.vb = 'rdvA%d' % tag, 'rdvB%d' % tag
        self.made = []
        for ns in (self.a, self.b):
            run('ip', 'netns', 'add', ns, what='network namespaces (CONFIG_NET_NS, root)')
            self.made.append(ns)
        run('ip', 'link', 'add', self.va, 'type', 'veth', 'peer', 'name', self.vb, what='veth (CONFIG_VETH)')
        run('ip', 'link', 'set', self.va, 'netns', self.a)
        run('ip', 'link', 'set', self.vb, 'netns', self.b)
        for ns, dev, addr in ((self.a, self.va, '10.213.0.1/24'), (self.b, self.vb, '10.213.0.2/24')):
            run('ip', '-n', ns, 'addr', 'add', addr, 'dev', dev)
            run('ip', '-n', ns, 'link', 'set', 'lo', 'up')
            run('ip', '-n', ns, 'link', 'set', dev, 'multicast', 'on', 'up')
        self.routes()

    def routes(self):
        """DDS discovery's multicast goes out through the veth (removed with the link, so set again)."""
        for ns, dev in ((self.a, self.va), (self.b, self.vb)):
            run('ip', '-n', ns, 'route', 'replace', '224.0.0.0/4', 'dev', dev)

    def set_up(self, up):
        run('ip', '-n', self.a, 'link', 'set', self.va, 'up' if up else 'down')
        if up:
            deadline = time.monotonic() + 5
            while 'NO-CARRIER' in run('ip', '-n', self.b, 'link', 'show', self.vb) and time.monotonic() < deadline:
                time.sleep(0.01)
            self.routes()

    def exec(self, ns, argv):
        return ['ip', 'netns', 'exec', ns] + list(argv)

    def close(self):
        for ns in self.made:                  # takes the veth pair and the namespaces' iptables rules with it
            subprocess.run(['ip', 'netns', 'del', ns], capture_output=True, timeout=30)


def impair(link, start, log):
    """5 % loss and 0-1 ms of jitter each way; returns (how, the jitter process or None)."""
    netem = ['loss', '%g%%' % (100 * LOSS), 'delay', '%gms' % (MAX_HOLD_MS / 2), '%gms' % (MAX_HOLD_MS / 2)]
    first = subprocess.run(['ip', 'netns', 'exec', link.a, 'tc', 'qdisc', 'add', 'dev', link.va, 'root', 'netem']
                           + netem, capture_output=True, text=True, timeout=30)
    if first.returncode == 0:
        run(*link.exec(link.b, ['tc', 'qdisc', 'add', 'dev', link.vb, 'root', 'netem'] + netem), what='netem')
        return 'netem (%s on both veth ends)' % ' '.join(netem), None
    log('netem qdisc not available (%s): iptables statistic match for the loss, an NFQUEUE handler '
        '(test/ros/nfqueue_jitter.py) for the jitter' % first.stderr.strip())
    tools = subprocess.run([str(ROOT / 'scripts' / 'netns-tools.sh')], capture_output=True, text=True, timeout=600)
    if tools.returncode:
        pytest.fail('no netem qdisc (CONFIG_NET_SCH_NETEM) and no iptables for the fallback: %s'
                    % tools.stderr.strip())
    iptables = tools.stdout.strip().splitlines()[-1]
    jitter = start(link.exec(link.a, [sys.executable, str(ROOT / 'test' / 'ros' / 'nfqueue_jitter.py'),
                                      '--queue', '0', '--max-delay-ms', str(MAX_HOLD_MS)]), 'nfqueue_jitter')
    if not wait_for(lambda: 'BOUND' in jitter.read_log() or jitter.poll() is not None, 10, 0.05) \
            or jitter.poll() is not None:
        pytest.fail('no netem qdisc (CONFIG_NET_SCH_NETEM) and the NFQUEUE fallback cannot run '
                    '(CONFIG_NETFILTER_NETLINK_QUEUE?): %s' % jitter.read_log().strip())
    for chain, flag, dev in (('OUTPUT', '-o', link.va), ('INPUT', '-i', link.va)):
        run(*link.exec(link.a, [iptables, '-A', chain, flag, dev, '-m', 'statistic', '--mode', 'random',
                                '--probability', str(LOSS), '-j', 'DROP']),
            what='no netem qdisc, and the loss needs the iptables statistic match (CONFIG_NETFILTER_XT_MATCH_STATISTIC)')
        run(*link.exec(link.a, [iptables, '-A', chain, flag, dev, '-j', 'NFQUEUE', '--queue-num', '0',
                                '--queue-bypass']),
            what='no netem qdisc, and the jitter needs the NFQUEUE target (CONFIG_NETFILTER_XT_TARGET_NFQUEUE)')
    return ('iptables (%s) statistic DROP p=%g + NFQUEUE hold uniform 0-%g ms, in namespace A both ways'
            % (os.path.basename(iptables), LOSS, MAX_HOLD_MS)), jitter


def parse(log):
    """The observer's lines: torques {topic: [(recv_ns, stamp_ns, k, effort)]}, commands {topic: [(recv_ns,
    data)]}, diagnostics [(recv_ns, {status name: values})]."""
    torques, commands, diags = {}, {}, []
    for line in log.splitlines():
        kind, _, rest = line.partition(' ')
        if kind == 'T':
            topic, recv, stamp, frame, effort = rest.split(' ')
            k = int(frame.split(':')[1]) if frame.startswith('js:') else -1
            torques.setdefault(topic, []).append((int(recv), int(stamp), k,
                                                  np.array([float(x) for x in effort.split(',')])))
        elif kind == 'C':
            topic, recv, data = rest.split(' ')
            commands.setdefault(topic, []).append((int(recv), np.array([float(x) for x in data.split(',')])))
        elif kind == 'D':
            recv, text = rest.split(' ', 1)
            diags.append((int(recv), json.loads(text)))
    return torques, commands, diags


def test_dynamics_node_over_a_lossy_link(tmp_path, capsys):
    if os.geteuid() != 0:
        pytest.fail('this test needs root (CAP_NET_ADMIN) for network namespaces, veth and the link impairment; '
                    'CI runs as root')
    for tool in ('ip', 'tc'):
        if shutil.which(tool) is None:
            pytest.fail("'%s' (iproute2) is missing" % tool)
    t_test = time.monotonic()
    profile = tmp_path / 'fastdds_udp_only.xml'
    profile.write_text(FASTDDS_UDP_ONLY)
    env = {'FASTRTPS_DEFAULT_PROFILES_FILE': profile, 'FASTDDS_DEFAULT_PROFILES_FILE': profile,
           'RMW_IMPLEMENTATION': 'rmw_fastrtps_cpp', 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET',
           'ROS_STATIC_PEERS': None, 'ROS_LOCALHOST_ONLY': None}
    procs = {}
    notes = []

    def start(argv, label, params=None, ros_args=()):
        proc = node_process.start_node(argv, params, name=label, ros_args=ros_args, env=env,
                                       log_path=tmp_path / ('%s.log' % label), cwd=ROOT)
        procs[label] = proc
        return proc

    link = None
    try:
        link = Link()
        how, jitter = impair(link, start, notes.append)
        peer = [sys.executable, str(ROOT / 'test' / 'ros' / 'lossy_peer.py')]
        topics = {p: ('%s/dyn_%s/compensation_torque' % (NS, p), '%s/cmd_%s' % (NS, p)) for p in ('zero', 'hold')}
        observer = start(link.exec(link.b, peer + ['observe'] + sum((['--torque', t, '--command', c]
                                                                   for t, c in topics.values()), [])), 'observer')
        for policy in ('zero', 'hold'):
            start(link.exec(link.b, [sys.executable, '-m', 'robot_dynamics.ros.dynamics_node']), 'dyn_' + policy,
                  {'urdf_path': str(PANDA), 'publish_command': True, 'command_topic': 'cmd_' + policy,
                   'joint_state_timeout': TIMEOUT, 'on_timeout': policy, 'diagnostics_period': 0.5},
                  ros_args=['-r', '__node:=dyn_' + policy, '-r', '__ns:=' + NS])
        publisher = start(link.exec(link.a, peer + ['publish', '--topic', NS + '/joint_states', '--names',
                                                   ','.join(NAMES), '--q', ','.join(map(str, Q0)),
                                                   '--rate', str(RATE)]), 'publisher')

        def flowing():
            dead = [p.label for p in procs.values() if p.poll() is not None]
            assert not dead, 'exited: %s\n%s' % (dead, '\n'.join('--- %s\n%s' % (p.label, p.log_tail(30))
                                                                 for p in procs.values()))
            text = observer.read_log()
            return all(('T %s ' % t) in text for t, _ in topics.values())
        assert wait_for(flowing, READY_TIMEOUT, 0.1), 'no torques across the link:\n%s' % '\n'.join(
            '--- %s\n%s' % (p.label, p.log_tail(20)) for p in procs.values())
        t_ready = time.monotonic()
        time.sleep(STREAM)
        t_down = time.time_ns()
        link.set_up(False)
        time.sleep(OUTAGE)
        t_up = time.time_ns()                # from here states may come again
        link.set_up(True)
        time.sleep(RESUME)
        t_stop = time.time_ns()
        publisher.send_signal(signal.SIGINT)
        time.sleep(0.6)
        t_end = time.time_ns()
        alive = {label: p.poll() is None for label, p in procs.items() if label != 'publisher'}
        publisher.wait(10)
        observer.send_signal(signal.SIGINT)
        observer.wait(10)
        if jitter is not None:
            jitter.send_signal(signal.SIGTERM)
            jitter.wait(10)
        sent = int(next((ln.split()[1] for ln in publisher.read_log().splitlines() if ln.startswith('SENT')), -1))
        torques, commands, diags = parse(observer.read_log())
        jitter_stats = (json.loads(next(ln[6:] for ln in jitter.read_log().splitlines() if ln.startswith('STATS ')))
                        if jitter is not None else None)
    finally:
        node_process.stop_all(list(procs.values()))
        if link is not None:
            link.close()

    report = ['link: %s' % how] + notes
    report.append('joint states sent: %d at %g Hz; ready after %.1f s' % (sent, RATE, t_ready - t_test))
    problems = []
    if jitter_stats is not None:
        report.append('NFQUEUE handler: %(packets)d packets held, mean %(hold_mean_ms).3f ms, max %(hold_max_ms).3f ms, '
                      'receive errors %(receive_errors)d' % jitter_stats)
        if jitter_stats['packets'] < 0.5 * RATE * STREAM:
            problems.append('the jitter handler saw %d packets: the joint states did not go through it'
                            % jitter_stats['packets'])
    for policy, (torque_topic, cmd_topic) in topics.items():
        ts, cs = torques.get(torque_topic, []), commands.get(cmd_topic, [])
        recv = np.array([t[0] for t in ts])
        age = (recv - np.array([t[1] for t in ts])) * 1e-9
        ks = np.array([t[2] for t in ts])
        # Computed from that state: the torque of q(k) at rest (the publisher's positions, zero velocities).
        want = rd.gravity_torques(MODEL, Q0 + 1e-4 * ks[:, None])
        err = np.abs(np.array([t[3] for t in ts]) - want).max()
        window = ks[(recv < t_down) & (recv >= t_down - int(STREAM * 1e9) + int(0.5e9))]
        loss = 1 - np.unique(window).size / (window.max() - window.min() + 1)
        ages = [float(v.get('input_latency_max_ms', 'nan')) for _, d in diags for name, v in d.items()
                if name.startswith('%s/dyn_%s:' % (NS.strip('/'), policy))]
        node_age = np.nanmax(ages) if ages else float('nan')
        report.append('dyn_%s (on_timeout %s): %d torques, %d commands received; loss while streaming %.1f %%; '
                      'state age at receipt p50 %.2f ms, p99 %.2f ms, max %.2f ms; node input_latency_max %.2f ms'
                      % (policy, policy, len(ts), len(cs), 100 * loss, 1e3 * np.median(age),
                         1e3 * np.percentile(age, 99), 1e3 * age.max(), node_age))
        if age.max() > TIMEOUT:
            problems.append('dyn_%s: a torque (and its command) computed from a state %.3f s old, over '
                            'joint_state_timeout %.3f s' % (policy, age.max(), TIMEOUT))
        if not node_age <= TIMEOUT * 1e3:
            problems.append('dyn_%s: diagnostics input_latency_max_ms %s (over the timeout, or no diagnostics)'
                            % (policy, node_age))
        if err > 1e-9:
            problems.append('dyn_%s: a torque differs from the library\'s for its state by %.3g' % (policy, err))
        if not 0.015 <= loss <= 0.12:        # the link's 5 %, plus what a busy machine drops locally
            problems.append('dyn_%s: %.1f %% of the joint states lost while streaming; the link loses %g %%'
                            % (policy, 100 * loss, 100 * LOSS))
        c_recv = np.array([c[0] for c in cs])
        for event, t0, t1 in (('link down', t_down, t_up), ('publisher stopped', t_stop, t_end)):
            last = recv[(recv < t1) & (recv >= t0 - int(0.5e9))]
            if not last.size:
                problems.append('dyn_%s, %s: no torque before it' % (policy, event))
                continue
            t_last = last.max() if event == 'publisher stopped' else recv[recv < t0 + int(0.05e9)].max()
            # The last state's own command follows its torque within microseconds; a watchdog's comes later.
            t_own = t_last + int(0.02e9)
            after = [(r, d) for r, d in cs if t_own < r < (t1 if event == 'publisher stopped' else t_up)]
            before = [d for r, d in cs if r <= t_own]
            if policy == 'zero':
                zeros = [(r, d) for r, d in after if not d.any()]
                delay = (after[0][0] - t_last) * 1e-9 if after else float('nan')
                report.append('dyn_zero, %s: %d command(s) after the last state, the first %.3f s after it'
                              % (event, len(after), delay))
                if len(after) != 1 or len(zeros) != 1:
                    problems.append('dyn_zero, %s: expected one all-zero command then silence, got %d command(s) '
                                    '(%d zero)' % (event, len(after), len(zeros)))
                elif not TIMEOUT - 0.005 <= delay <= 1.2 * TIMEOUT + SLACK:
                    problems.append('dyn_zero, %s: the zero command came %.3f s after the last state; '
                                    'joint_state_timeout %.3f s (+20 %%)' % (event, delay, TIMEOUT))
            else:
                span = ((t1 if event == 'publisher stopped' else t_up) - t_last) * 1e-9 - TIMEOUT
                held = [d for r, d in after if (r - t_last) * 1e-9 > TIMEOUT + SLACK]
                report.append('dyn_hold, %s: %d command(s) held over %.2f s past the timeout' % (event, len(held),
                                                                                             span))
                if len(held) < 0.3 * span / (TIMEOUT / 10) or not before \
                        or any(not np.array_equal(d, before[-1]) for d in held):
                    problems.append('dyn_hold, %s: %d held commands in %.2f s (watchdog every %.3f s), equal to the '
                                    'last one: %s' % (event, len(held), span, TIMEOUT / 10,
                                                      all(np.array_equal(d, before[-1]) for d in held) if before
                                                      else 'no command before'))
        resumed = recv[recv > t_up]
        if not resumed.size or (resumed.min() - t_up) * 1e-9 > 2.0:
            problems.append('dyn_%s: torques did not resume within 2 s of the link coming back' % policy)
        elif not any(r > resumed.min() and d.any() for r, d in cs):
            problems.append('dyn_%s: no command after the link came back' % policy)
    dead = [label for label, ok in alive.items() if not ok]
    if dead:
        problems.append('not alive at the end: %s' % ', '.join(dead))
    report.append('wall time %.1f s' % (time.monotonic() - t_test))
    with capsys.disabled():
        print('\n[lossy network] ' + '\n[lossy network] '.join(report))
    assert not problems, '\n'.join(problems + report)
