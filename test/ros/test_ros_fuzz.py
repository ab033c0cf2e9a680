"""Message fuzzing through real DDS: hostile input never crashes a node, never
makes it publish a non-finite or over-limit torque, and is counted.

``test_dynamics_node_survives_10000_malformed_messages`` starts dynamics_node
(mode gravity_coriolis, publish_command, the bundled Panda from a
description topic, effort_limit_scale 0.5) as a separate process and sends
it, from this process, 10,000 joint states drawn with a fixed seed from the
categories of ``JS_CATEGORIES`` (about half valid, the rest malformed:
NaN/inf, length mismatches, duplicate and unknown names, empty messages,
100,000-element arrays, stamps out of order / from the future), interleaved
with malformed trajectories on ``~/trajectory`` and ``~/reference``, garbage
descriptions (every erroneous URDF of test/urdf_corpus/ and more) and twice
another robot's URDF (UR5, whose joints do not fit the node's ``joints``).

Accounting rule: the joint states go over reliable QoS (the node's
``joint_states_reliability: reliable``, this publisher reliable with a deep
history) in batches of 40, each closed by a valid state whose answer is
awaited before the next batch is sent, so the node never has more than one
batch queued (its subscription holds 100): no message may be lost, and none
is. An independent oracle (the merge-by-name rules of docs/NODES.md and the
library) says for every message whether it must be answered and with which
torques; the test asserts the exact set of answered messages (matched by
``header.frame_id``, which the node copies), the values, the names of every
output, zero non-finite and zero over-limit values, and that the node's
/diagnostics counters (messages in / out, bad messages, commands, clamp
events, rejected descriptions) equal what was sent. ``joint_state_timeout``
is 30 s there so the test's pauses do not trigger on_timeout (that is
test_ros_faults.py's subject).

The services get a few hundred malformed requests each
(``test_services_answer_every_malformed_request``); a description that is
a file path is never opened (``test_a_description_is_never_opened_as_a_file``).

The simulator node, when its module exists, is one more target of the
service fuzz and of ``test_simulator_survives_malformed_commands``
(``SIMULATOR`` below is the hook).
"""
import array
import importlib.util
import json
import os
import threading
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import (CheckTrajectory, ForwardDynamics, GravityCompensation, InverseDynamics,
                                           MassMatrix, RetimeTrajectory, SetPayload, TrajectoryEfforts)

from conftest import LATCHED, PANDA, ROOT, UR5, wait_for
from probes import Diagnostics, FastPeer

SEED = 20240611
N_JOINT_STATES = 10_000
BATCH = 40
SCALE = 0.5                       # effort_limit_scale: clamping is exercised
BIG = 100_000                     # elements of the oversized arrays
MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
LIMIT = MODEL.effort_limit * SCALE
CORPUS = ROOT / 'test' / 'urdf_corpus'

# The simulator node (another helper's module): fuzzed here once it exists.
SIMULATOR = 'simulator_node'
HAVE_SIMULATOR = importlib.util.find_spec('robot_dynamics.ros.%s' % SIMULATOR) is not None

DEEP_RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                           history=HistoryPolicy.KEEP_LAST)
DEEP_SUB = QoSProfile(depth=20000, reliability=ReliabilityPolicy.RELIABLE)


# --- what is received ---------------------------------------------------------------
class ById:
    """JointState outputs keyed by header.frame_id (the input's id), plus totals."""

    def __init__(self):
        self.by_id = {}
        self.duplicates = 0
        self.count = 0
        self.bad_names = []
        self.non_finite = 0
        self.over_limit = 0
        self._cond = threading.Condition()

    def __call__(self, msg):
        effort = np.array(msg.effort)
        with self._cond:
            self.count += 1
            if list(msg.name) != NAMES:
                self.bad_names.append(list(msg.name))
            self.non_finite += int(np.count_nonzero(~np.isfinite(effort)))
            if effort.shape == LIMIT.shape:
                self.over_limit += int(np.count_nonzero(np.abs(effort) > LIMIT))
            fid = msg.header.frame_id
            if fid in self.by_id:
                self.duplicates += 1
            self.by_id[fid] = effort
            self._cond.notify_all()

    def wait_id(self, fid, timeout):
        deadline = time.monotonic() + timeout
        with self._cond:
            while fid not in self.by_id:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True


class Commands:
    """Float64MultiArray commands in arrival order."""

    def __init__(self):
        self.data = []
        self._lock = threading.Lock()

    def __call__(self, msg):
        with self._lock:
            self.data.append(np.array(msg.data))


# --- the oracle ------------------------------------------------------------------------
class Oracle:
    """What dynamics_node must do with each joint state, from the rules of docs/NODES.md
    and the library, independent of the node's code:

    - a message whose position (or non-empty velocity) length differs from its
      names, or that names a joint twice, is dropped (bad);
    - values of model joints must be finite (bad otherwise); unknown joints
      are ignored, their values too; missing velocities are zeros;
    - nothing is published until every model joint has a position; after
      that every accepted message is answered from the merged state, also one
      that names no model joint (an empty message, another driver's joints);
    - a merged state whose torques the library cannot compute (overflow) is
      dropped (bad); every output is clamped to SCALE x the URDF limit.
    - while the model does not fit the node's ``joints`` nothing happens.
    """

    def __init__(self, model):
        self.model = model
        self.index = {n: i for i, n in enumerate(model.joint_names)}
        self.q = np.zeros(model.nq)
        self.qd = np.zeros(model.nq)
        self.known = np.zeros(model.nq, dtype=bool)
        self.usable = True

    def __call__(self, msg):
        """('answered', {output: torques}, clamped) | ('bad', ...) | ('silent', ...)."""
        if not self.usable:
            return 'silent', None, False
        names = list(msg.name)
        n = len(names)
        if len(msg.position) != n or len(msg.velocity) not in (0, n) or len(set(names)) != n:
            return 'bad', None, False
        pairs = [(k, self.index[x]) for k, x in enumerate(names) if x in self.index]
        if pairs:
            ks, js = (list(t) for t in zip(*pairs))
            p = np.array([msg.position[k] for k in ks])
            v = np.array([msg.velocity[k] for k in ks]) if len(msg.velocity) else np.zeros(len(ks))
            if not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
                return 'bad', None, False
            self.q[js], self.qd[js], self.known[js] = p, v, True
        if not self.known.all():
            return 'silent', None, False
        try:
            g = rd.gravity_torques(self.model, self.q)
            h = rd.nonlinear_effects(self.model, self.q, self.qd)
        except ValueError:                                  # overflow
            return 'bad', None, False
        clip = lambda x: np.clip(x, -LIMIT, LIMIT)          # noqa: E731
        out = {'gravity': clip(g), 'coriolis': clip(h - g), 'total': clip(h)}
        return 'answered', out, bool(np.any(np.abs(h) > LIMIT))


# --- joint-state generators ---------------------------------------------------------------
LOWER, UPPER = MODEL.lower_limit, MODEL.upper_limit


def _state(r):
    return r.uniform(LOWER, UPPER), r.uniform(-1.0, 1.0, len(NAMES))


def _full(r, **kw):
    q, qd = _state(r)
    d = dict(name=list(NAMES), position=q.tolist(), velocity=qd.tolist())
    d.update(kw)
    return d


def _spoil(values, r, bad):
    values = list(values)
    values[int(r.integers(len(values)))] = bad
    return values


def _g_partial(r):
    q, qd = _state(r)
    idx = r.permutation(len(NAMES))[:int(r.integers(3, 7))]
    return dict(name=[NAMES[i] for i in idx], position=q[idx].tolist(), velocity=qd[idx].tolist())


def _g_with_unknown(r):
    q, qd = _state(r)
    order = list(r.permutation(len(NAMES)))
    names = [NAMES[i] for i in order] + ['gripper_finger_1', 'gripper_finger_2']
    return dict(name=names, position=q[order].tolist() + [0.01, 0.02],
                velocity=qd[order].tolist() + [0.0, 0.0])


def _g_length(r, field):
    d = _full(r)
    n = len(NAMES) + int(r.choice([-6, -3, -1, 1, 4]))
    d[field] = r.uniform(-1, 1, n).tolist()
    return d


def _g_duplicate(r):
    d = _full(r)
    k = int(r.integers(1, len(NAMES)))
    d['name'][k] = d['name'][int(r.integers(k))]
    return d


def _g_big(r, kind):
    if kind == 'names':                    # 100,000 joints, the model's among them: valid
        q, qd = _state(r)
        salt = int(r.integers(1 << 30))                                   # a new name list each time
        names = ['x%06d_%d' % (k, salt) for k in range(BIG - len(NAMES))] + list(NAMES)
        pos = array.array('d', bytes(8 * BIG))
        pos[BIG - len(NAMES):] = array.array('d', q)
        return dict(name=names, position=pos)
    d = _full(r)
    d[kind] = array.array('d', r.uniform(-1, 1, BIG))      # 100,000 values for 7 names: bad
    return d


#: name, weight (of 100), generator(r) -> JointState fields. Categories whose
#: name starts with "valid" or that carry only odd metadata must be answered.
JS_CATEGORIES = [
    ('valid', 37, lambda r: _full(r)),
    ('valid, no velocity', 4, lambda r: _full(r, velocity=[])),
    ('valid partial (3-6 joints, shuffled)', 5, _g_partial),
    ('valid + unknown joints, shuffled', 4, _g_with_unknown),
    ('NaN/inf effort (not an input)', 3,
     lambda r: _full(r, effort=_spoil(np.zeros(7), r, float(r.choice([np.nan, np.inf]))))),
    ('NaN in an unknown joint', 2,
     lambda r: dict(name=NAMES + ['tool'], position=_state(r)[0].tolist() + [float('nan')])),
    ('unknown joints only', 3,
     lambda r: dict(name=['a%d' % k for k in range(3)], position=[float('nan'), 1e308, -1.0])),
    ('empty message', 3, lambda r: dict(name=[], position=[])),
    ('stamp out of order (older)', 3, lambda r: _full(r, stamp=(1000, 5))),
    ('stamp from the future', 2, lambda r: _full(r, stamp=(2**31 - 1, 999_999_999))),
    ('stamp zero or negative', 1, lambda r: _full(r, stamp=(int(r.choice([0, -5])), 0))),
    ('huge velocity (|qd| 1e3): clamped', 2,
     lambda r: _full(r, velocity=r.choice([-1e3, 1e3], 7).tolist())),
    ('overflow (|qd| 1e200)', 1, lambda r: _full(r, velocity=[1e200] * 7)),
    ('NaN position', 5, lambda r: _full(r, position=_spoil(_state(r)[0], r, float('nan')))),
    ('inf position', 2, lambda r: _full(r, position=_spoil(_state(r)[0], r, float('-inf')))),
    ('NaN velocity', 3, lambda r: _full(r, velocity=_spoil(_state(r)[1], r, float('nan')))),
    ('inf velocity', 2, lambda r: _full(r, velocity=_spoil(_state(r)[1], r, float('inf')))),
    ('position length != names', 4, lambda r: _g_length(r, 'position')),
    ('velocity length != names', 4, lambda r: _g_length(r, 'velocity')),
    ('duplicate names', 4, _g_duplicate),
]
BIG_CATEGORIES = [
    ('100,000 names (model joints among them)', 4, lambda r: _g_big(r, 'names')),
    ('100,000 positions for 7 names', 4, lambda r: _g_big(r, 'position')),
    ('100,000 velocities for 7 names', 4, lambda r: _g_big(r, 'velocity')),
]
SYNC = 'valid (closes a batch)'


def joint_state_msg(fields, fid, k):
    msg = JointState()
    sec, nsec = fields.get('stamp', (1_700_000_000 + k // 1000, (k % 1000) * 1_000_000))
    msg.header.stamp = Time(sec=int(sec), nanosec=int(nsec))
    msg.header.frame_id = fid
    msg.name = fields['name']
    msg.position = fields['position']
    msg.velocity = fields.get('velocity', [])
    msg.effort = fields.get('effort', [])
    return msg


def joint_state_plan(r):
    """The N_JOINT_STATES (category, fields) to send, in order; every BATCH-th closes a batch."""
    names = [c[0] for c in JS_CATEGORIES]
    weights = np.array([c[1] for c in JS_CATEGORIES], dtype=float)
    gens = {c[0]: c[2] for c in JS_CATEGORIES + BIG_CATEGORIES}
    n_batches = N_JOINT_STATES // BATCH
    big = [c[0] for c in BIG_CATEGORIES for _ in range(c[1])]
    big_at = {int(b): cat for b, cat in zip(r.choice(np.arange(5, n_batches), len(big), replace=False), big)}
    plan = []
    for b in range(n_batches):
        cats = list(r.choice(names, BATCH - 1, p=weights / weights.sum()))
        if b in big_at:
            cats[int(r.integers(len(cats)))] = big_at[b]
        plan += [(c, gens[c](r)) for c in cats]
        plan.append((SYNC, _full(r)))
    return plan


# --- trajectories --------------------------------------------------------------------------
def _traj(r, k=3, names=None, spoil=None):
    names = list(NAMES if names is None else names)
    m = len(names)
    t = JointTrajectory(joint_names=names)
    pts = []
    for i in range(k):
        p = JointTrajectoryPoint(positions=r.uniform(-1, 1, m).tolist(), velocities=r.uniform(-1, 1, m).tolist(),
                                 accelerations=r.uniform(-1, 1, m).tolist(),
                                 time_from_start=Duration(sec=i, nanosec=500_000_000))
        pts.append(p)
    if spoil:
        spoil(pts[0])
    t.points = pts
    return t


def _set(field, index, value):
    def spoil(p):
        values = list(getattr(p, field))
        values[index] = value
        setattr(p, field, values)
    return spoil


def _t_equal_times(r):
    t = _traj(r, 3)
    t.points[2].time_from_start = t.points[1].time_from_start
    return t


def _t_many_points(r):
    pts = [JointTrajectoryPoint(positions=[0.0] * 7, time_from_start=Duration(sec=k)) for k in range(BIG)]
    return JointTrajectory(joint_names=list(NAMES), points=pts)


#: name, weight, topics, generator, bad?  (~/reference uses only the first point)
TRAJ_CATEGORIES = [
    ('valid trajectory', 5, ('~/trajectory',), lambda r: _traj(r, 3), False),
    ('valid set-point', 5, ('~/reference',), lambda r: _traj(r, 1), False),
    ('no points (clears)', 2, ('~/trajectory', '~/reference'), lambda r: JointTrajectory(joint_names=NAMES), False),
    ('missing joint', 3, ('~/trajectory', '~/reference'), lambda r: _traj(r, 2, NAMES[:6]), True),
    ('NaN position', 3, ('~/trajectory', '~/reference'),
     lambda r: _traj(r, 2, spoil=_set('positions', 3, float('nan'))), True),
    ('inf velocity', 3, ('~/trajectory', '~/reference'),
     lambda r: _traj(r, 2, spoil=_set('velocities', 0, float('inf'))), True),
    ('NaN acceleration', 2, ('~/trajectory', '~/reference'),
     lambda r: _traj(r, 2, spoil=_set('accelerations', 6, float('nan'))), True),
    ('positions length != joint_names', 3, ('~/trajectory', '~/reference'),
     lambda r: _traj(r, 2, spoil=lambda p: setattr(p, 'positions', [0.1] * 5)), True),
    ('duplicate joint names', 2, ('~/trajectory', '~/reference'),
     lambda r: _traj(r, 2, NAMES[:6] + NAMES[:1]), True),
    ('time_from_start not increasing', 2, ('~/trajectory',), _t_equal_times, True),
]
BIG_TRAJ = [
    ('100,000-element positions (too large)', 2, ('~/trajectory', '~/reference'),
     lambda r: _traj(r, 1, spoil=lambda p: setattr(p, 'positions', array.array('d', bytes(8 * BIG)))), True),
    ('100,000 points (too large)', 2, ('~/trajectory',), _t_many_points, True),
]


# --- descriptions --------------------------------------------------------------------------
def garbage_descriptions():
    """(label, text) of descriptions that must be rejected, the model kept."""
    manifest = json.loads((CORPUS / 'manifest.json').read_text())
    out = [('corpus: %s' % name, (CORPUS / name).read_text(errors='replace'))
           for name in sorted(manifest) if manifest[name]['outcome'] == 'error']
    panda = PANDA.read_text()
    out += [
        ('plain text', 'this is not a robot'),
        ('empty string', ''),
        ('truncated Panda', panda[:len(panda) // 2]),
        ('a file path (/etc/hostname)', '/etc/hostname'),
        ('17 MB description', '<robot name="big"><link name="a"/><!--' + 'x' * (17 << 20) + '--></robot>'),
        ('random bytes', bytes(np.random.default_rng(SEED).integers(1, 255, 4096, dtype=np.uint8))
         .decode('latin-1')),
    ]
    return out


# --- the fuzz test ----------------------------------------------------------------------------
def _start_fuzz_target(ros, start_node, desc_topic, cmd_topic):
    proc = start_node('dynamics_node', {
        'robot_description_topic': desc_topic, 'mode': 'gravity_coriolis', 'publish_command': True,
        'command_topic': cmd_topic, 'joints': NAMES, 'effort_limit_scale': SCALE,
        'joint_states_reliability': 'reliable', 'joint_state_timeout': 30.0,
        'diagnostics_period': 0.05, 'diagnostic_torque_rate': -1.0})   # every diagnostic torque, checked
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    return proc


def _table(rows, header):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]

    def fmt(row):                      # numbers to the right, text to the left
        return '| ' + ' | '.join(str(x).rjust(w) if isinstance(x, (int, float)) else str(x).ljust(w)
                                 for x, w in zip(row, widths)) + ' |'
    return '\n'.join([fmt(header), '|' + '|'.join('-' * (w + 2) for w in widths) + '|'] + [fmt(r) for r in rows])


def test_dynamics_node_survives_10000_malformed_messages(ros, start_node, capsys):
    t_start = time.monotonic()
    r = np.random.default_rng(SEED)
    tag = '%d_%d' % (os.getpid(), time.monotonic_ns())
    desc_topic, cmd_topic = '/rd_fuzz_desc_%s' % tag, '/rd_fuzz_cmd_%s/commands' % tag
    desc_pub = ros.publisher(String, desc_topic, LATCHED)
    desc_pub.publish(String(data=PANDA.read_text()))
    proc = _start_fuzz_target(ros, start_node, desc_topic, cmd_topic)
    fqn = proc.fqn

    outputs = {k: ById() for k in ('gravity', 'coriolis', 'total', 'ff', 'ct')}
    topics = {'gravity': '~/gravity_torque', 'coriolis': '~/coriolis_torque', 'total': '~/compensation_torque',
              'ff': '~/feedforward_torque', 'ct': '~/computed_torque'}
    peer = FastPeer()
    for k in outputs:
        peer.node.create_subscription(JointState, proc.topic(topics[k]), outputs[k], DEEP_SUB)
    commands = Commands()
    peer.node.create_subscription(Float64MultiArray, cmd_topic, commands, DEEP_SUB)
    diag = Diagnostics(peer, fqn)
    pub = peer.node.create_publisher(JointState, proc.topic('joint_states'), DEEP_RELIABLE)
    traj_pubs = {t: peer.node.create_publisher(JointTrajectory, proc.topic(t), DEEP_RELIABLE)
                 for t in ('~/trajectory', '~/reference')}
    try:
        # Warm-up: a valid state until it is answered (connections established).
        warm_fields = _full(r)
        total = outputs['total']
        deadline = time.monotonic() + 20
        n_warm = 0
        while not total.by_id and time.monotonic() < deadline:
            warm = joint_state_msg(warm_fields, 'warm-up%d' % n_warm, 0)
            pub.publish(warm)
            n_warm += 1
            time.sleep(0.02)
        assert total.by_id, 'the node never answered a valid joint state'
        assert wait_for(lambda: all(p.get_subscription_count() for p in traj_pubs.values()), 10)
        base = diag.stable()
        assert base is not None, 'no diagnostics from %s' % fqn
        n_cmd0 = len(commands.data)
        rss0 = proc.rss_mb()
        oracle = Oracle(MODEL)
        oracle(warm)

        plan = joint_state_plan(r)
        garbage = garbage_descriptions()
        traj_weights = np.array([c[1] for c in TRAJ_CATEGORIES], dtype=float)
        n_batches = len(plan) // BATCH
        big_traj_at = dict(zip((int(b) for b in r.choice(np.arange(3, n_batches), 4, replace=False)),
                               [c for c in BIG_TRAJ for _ in range(c[1])]))
        desc_every = max(1, n_batches // (len(garbage) + 1))
        ur5_at = {n_batches // 3, 2 * n_batches // 3}

        sent = {}                  # category -> [sent, answered by the oracle]
        cat_of = {}                # frame_id -> category, of every message sent
        expect = {}                # frame_id -> (category, outputs)
        expect_cmds = []
        n_bad = n_clamped = 0
        traj_sent, traj_bad = {}, 0
        desc_sent = []
        misfit = {'sent': 0, 'outputs': 0, 'commands': 0}
        k = 0
        waits = {'batch answers': 0.0, 'trajectory room': 0.0}
        t_fuzz = time.monotonic()

        def room():
            return (sum(traj_sent.values()) - (int(diag.get()['references_in']) - int(base['references_in']))
                    <= 6)
        for b in range(n_batches):
            if b in ur5_at:
                # Another robot's description: its joints do not fit `joints`;
                # the node must publish nothing until the Panda comes back.
                assert diag.wait(lambda v: int(v['descriptions_rejected']) == len(desc_sent), 10)
                assert wait_for(lambda: len(commands.data) - n_cmd0 == len(expect_cmds), 10)
                # Every trajectory taken first: one handled while the UR5 is the model
                # would be judged against the UR5's joints.
                assert diag.wait(lambda v: int(v['references_in']) - int(base['references_in'])
                                 == sum(traj_sent.values()), 10), 'trajectories not taken before the UR5'
                n_out = total.count
                n_cmd = len(commands.data)
                desc_pub.publish(String(data=UR5.read_text()))
                v = diag.wait(lambda v: v['robot'] == 'ur5' and v['model_status'] == 'error', 10)
                assert v is not None, 'the UR5 description was not taken'
                assert 'does not fit the controller' in v['_message'], v['_message']
                oracle.usable = False
                for i in range(BATCH):
                    cat, fields = plan[b * BATCH + i]
                    pub.publish(joint_state_msg(fields, 'misfit%d' % k, k))
                    k += 1
                    misfit['sent'] += 1
                # Every misfit state handled before the Panda comes back.
                assert diag.wait(lambda v: int(v['messages_in']) - int(base['messages_in']) == k, 10), \
                    'the joint states sent while the model was UR5 were not all taken'
                time.sleep(0.1)
                misfit['outputs'] += total.count - n_out
                misfit['commands'] += len(commands.data) - n_cmd
                desc_pub.publish(String(data=PANDA.read_text()))
                v = diag.wait(lambda v: v['robot'] == 'panda' and v['model_status'] == 'ok', 10)
                assert v is not None, 'the Panda description was not taken back'
                oracle.usable = True
                continue
            if b % desc_every == 0 and len(desc_sent) < len(garbage):
                # One garbage description at a time: the last must be counted first
                # (the description subscription keeps only the latest message).
                assert diag.wait(lambda v: int(v['descriptions_rejected']) == len(desc_sent), 10), \
                    'description %r not counted' % (desc_sent[-1:],)
                label, text = garbage[len(desc_sent)]
                desc_pub.publish(String(data=text))
                desc_sent.append(label)
            for i in range(BATCH):
                cat, fields = plan[b * BATCH + i]
                fid = 'f%d' % k
                msg = joint_state_msg(fields, fid, k)
                outcome, outs, clamped = oracle(msg)
                pub.publish(msg)
                cat_of[fid] = cat
                k += 1
                entry = sent.setdefault(cat, [0, 0])
                entry[0] += 1
                if outcome == 'answered':
                    entry[1] += 1
                    expect[fid] = (cat, outs)
                    expect_cmds.append(outs['total'])
                    n_clamped += clamped
                elif outcome == 'bad':
                    n_bad += 1
                if i in (BATCH // 3, 2 * BATCH // 3):                    # trajectories in between
                    if b in big_traj_at and i == BATCH // 3:
                        name, _, tops, gen, bad = big_traj_at[b]
                    else:
                        name, _, tops, gen, bad = TRAJ_CATEGORIES[int(r.choice(len(TRAJ_CATEGORIES),
                                                                               p=traj_weights / traj_weights.sum()))]
                    top = tops[int(r.integers(len(tops)))]
                    # The node keeps the latest 10 messages of each trajectory topic
                    # (set-points: the latest wins) and under this load it handles them
                    # later than the joint states: at most 6 outstanding by its count.
                    if not room():
                        t_wait = time.monotonic()
                        assert wait_for(room, 10), 'the node does not take trajectories'
                        waits['trajectory room'] += time.monotonic() - t_wait
                    traj_pubs[top].publish(gen(r))
                    key = '%s on %s' % (name, top)
                    traj_sent[key] = traj_sent.get(key, 0) + 1
                    traj_bad += bad
            t_wait = time.monotonic()
            assert total.wait_id(fid, 20), 'batch %d: no answer to its closing valid state %s' % (b, fid)
            waits['batch answers'] += time.monotonic() - t_wait
            assert proc.poll() is None, 'node died'
        t_fuzz = time.monotonic() - t_fuzz
        n_js = k

        # Everything answered has arrived (the last closing state was answered,
        # the commands and the other outputs follow on their own writers).
        wait_for(lambda: len(commands.data) - n_cmd0 >= len(expect_cmds)
                 and all(outputs[x].count >= total.count for x in ('gravity', 'coriolis')), 10)
        assert diag.wait(lambda v: int(v['descriptions_rejected']) == len(desc_sent), 10)
        # Trajectories run on their own topics and may trail the joint states:
        # wait until the node's counts settle (all equal, or 10 s).
        t_settle = time.monotonic()
        final = diag.wait(lambda v: int(v['messages_in']) - int(base['messages_in']) == n_js
                          and int(v['bad_messages']) - int(base['bad_messages']) == n_bad + traj_bad, 10)
        t_settle = time.monotonic() - t_settle
        final = final or diag.get()
        rss1 = proc.rss_mb()
        alive = proc.poll() is None

        # --- the summary table -------------------------------------------------------------
        fuzz_ids = {fid for fid in total.by_id if not fid.startswith('warm-up')}
        answered = {}
        for fid in fuzz_ids:
            cat = cat_of.get(fid, 'while the model was UR5')
            answered[cat] = answered.get(cat, 0) + 1
        rows = [(cat, s, e, answered.get(cat, 0), s - answered.get(cat, 0))
                for cat, (s, e) in sorted(sent.items(), key=lambda kv: -kv[1][0])]
        rows.append(('while the model was UR5 (joints do not fit)', misfit['sent'], 0, misfit['outputs'],
                     misfit['sent'] - misfit['outputs']))
        rows.append(('total', n_js, len(expect), len(fuzz_ids), n_js - len(fuzz_ids)))
        node_counts = lambda key: int(final[key]) - int(base[key])  # noqa: E731
        totals = [
            ('joint states sent / node messages_in', n_js, node_counts('messages_in')),
            ('answered (oracle) / node messages_out', len(expect), node_counts('messages_out')),
            ('commands expected / received', len(expect_cmds), len(commands.data) - n_cmd0),
            ('bad joint states + bad trajectories / node bad_messages', n_bad + traj_bad,
             node_counts('bad_messages')),
            ('clamped commands (oracle) / node clamp_events', n_clamped, node_counts('clamp_events')),
            ('garbage descriptions sent / node descriptions_rejected', len(desc_sent),
             int(final['descriptions_rejected'])),
            ('trajectories sent / node references_in', sum(traj_sent.values()),
             node_counts('references_in')),
            ('non-finite torques published', 0, sum(o.non_finite for o in outputs.values())
             + int(sum(np.count_nonzero(~np.isfinite(c)) for c in commands.data))),
            ('values beyond the scaled effort limit', 0, sum(o.over_limit for o in outputs.values())
             + int(sum(np.count_nonzero(np.abs(c) > LIMIT) for c in commands.data))),
            ('node timeouts', 0, int(final['timeouts'])),
        ]
        report = ['', 'dynamics_node fuzz (seed %d): %d joint states in %.1f s (%.0f msg/s), %d trajectories, '
                  '%d descriptions; node RSS %.0f -> %.0f MB; node alive: %s'
                  % (SEED, n_js, t_fuzz, n_js / t_fuzz, sum(traj_sent.values()), len(desc_sent) + 4,
                     rss0, rss1, alive),
                  _table(rows, ('joint-state category', 'sent', 'must be answered', 'answered', 'no output')),
                  '',
                  _table(sorted(traj_sent.items()), ('trajectory category', 'sent')),
                  '',
                  _table(totals, ('count', 'expected', 'observed')),
                  'descriptions: %d garbage (%s, ...) and 2 x UR5 + Panda back; total test time %.1f s; '
                  'waits: %s' % (len(desc_sent), ', '.join(desc_sent[-6:]), time.monotonic() - t_start,
                                 ', '.join('%s %.1f s' % kv for kv in waits.items()))]
        with capsys.disabled():
            print('\n'.join(report))

        # --- the assertions --------------------------------------------------------------------
        assert alive, 'the node died:\n' + proc.read_log()[-3000:]
        for key, o in outputs.items():
            assert o.bad_names == [], '%s: outputs with other joint names: %s' % (key, o.bad_names[:3])
            assert o.non_finite == 0 and o.over_limit == 0, key
            assert o.duplicates == 0, key
        assert outputs['ff'].count == outputs['ct'].count == 0, 'feedforward output in gravity_coriolis mode'
        assert misfit['outputs'] == 0 and misfit['commands'] == 0, 'published while the model did not fit'
        missing = sorted(set(expect) - fuzz_ids)
        extra = sorted(fuzz_ids - set(expect))
        assert not missing, '%d answers missing, e.g. %s' % (
            len(missing), [(f, expect[f][0]) for f in missing[:5]])
        assert not extra, '%d unexpected answers, e.g. %s' % (len(extra), extra[:5])
        for key in ('gravity', 'coriolis', 'total'):
            got = outputs[key].by_id
            assert set(expect) <= set(got), key
            for fid, (cat, outs) in expect.items():
                np.testing.assert_allclose(got[fid], outs[key], rtol=1e-12, atol=1e-9,
                                           err_msg='%s of %s (%s)' % (key, fid, cat))
        cmds = commands.data[n_cmd0:]
        assert len(cmds) == len(expect_cmds)
        for got, want in zip(cmds, expect_cmds):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
        for label, want, got in totals:
            assert want == got, '%s: expected %s, node/test observed %s' % (label, want, got)
    finally:
        peer.close()


# --- services ----------------------------------------------------------------------------------
N_SERVICE_REQUESTS = 420          # ~75 % of them for the services before the two retiming ones (300 then)

#: Nodes that offer the dynamics services, with the parameters to start them.
SERVICE_TARGETS = [('dynamics_node', {'urdf_path': str(PANDA)}),
                   ('dynamics_services', {'urdf_path': str(PANDA)})]
if HAVE_SIMULATOR:
    SERVICE_TARGETS.append((SIMULATOR, {'urdf_path': str(PANDA), 'marker_rate': 0.0, 'publish_rate': 100.0}))


def _named(js, names, **fields):
    js.name = list(names)
    for field, values in fields.items():
        setattr(js, field, values if isinstance(values, array.array) else [float(x) for x in values])


def _q(r):
    return _state(r)[0]


def _state_faults(r, with_velocity):
    """(label, fill(joint_state)) faults of a request's joint_state."""
    q = _q(r)
    faults = [
        ('missing joint', lambda js: _named(js, NAMES[:6], position=q[:6])),
        ('NaN position', lambda js: _named(js, NAMES, position=_spoil(q, r, float('nan')))),
        ('inf position', lambda js: _named(js, NAMES, position=_spoil(q, r, float('inf')))),
        ('position length != names', lambda js: _named(js, NAMES, position=q[:4])),
        ('duplicate names', lambda js: _named(js, NAMES[:6] + NAMES[:1], position=q)),
        ('empty joint_state', lambda js: _named(js, [], position=[])),
        ('100,000 positions', lambda js: _named(js, NAMES, position=array.array('d', bytes(8 * BIG)))),
        ('unknown joints only', lambda js: _named(js, ['a', 'b'], position=[0.0, 1.0])),
    ]
    if with_velocity:
        faults += [
            ('NaN velocity', lambda js: _named(js, NAMES, position=q, velocity=_spoil(q, r, float('nan')))),
            ('velocity length != names', lambda js: _named(js, NAMES, position=q, velocity=q[:2])),
            ('overflow (qd 1e200)', lambda js: _named(js, NAMES, position=q, velocity=[1e200] * 7)),
        ]
    return faults


def _waypoints(r, k=4, names=None, spoil=None, **fields):
    """A RetimeTrajectory request of ``k`` waypoints within the Panda's joint ranges (``spoil(W)`` first)."""
    mid, half = 0.5 * (MODEL.upper_limit + MODEL.lower_limit), 0.5 * (MODEL.upper_limit - MODEL.lower_limit)
    W = mid + 0.5 * half * r.uniform(-1, 1, (k, 7))
    if spoil:
        spoil(W)
    names = list(NAMES if names is None else names)
    req = RetimeTrajectory.Request(**fields)
    req.waypoints = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(positions=w[:len(names)].tolist())
                                                               for w in W])
    return req


def _retime_faults(r):
    """(label, request) faults of ~/retime_trajectory: each request is valid but for its label."""
    nan, inf = float('nan'), float('inf')
    return [
        ('no waypoints', RetimeTrajectory.Request()),
        ('one waypoint', _waypoints(r, 1)),
        ('missing joint', _waypoints(r, names=NAMES[:6])),
        ('duplicate joint names', _waypoints(r, names=NAMES[:6] + NAMES[:1])),
        ('NaN waypoint', _waypoints(r, spoil=lambda W: W.__setitem__((2, 4), nan))),
        ('two equal waypoints', _waypoints(r, spoil=lambda W: W.__setitem__(2, W[1]))),
        ('waypoint outside the limits', _waypoints(r, spoil=lambda W: W.__setitem__((1, 3), 1.0))),
        ('1,001 waypoints', _waypoints(r, 1001)),
        ('velocity_limits length != joint_names', _waypoints(r, velocity_limits=[1.0] * 3)),
        ('zero velocity limit', _waypoints(r, velocity_limits=[1.0] * 6 + [0.0])),
        ('NaN acceleration limit', _waypoints(r, acceleration_limits=[nan] + [1.0] * 6)),
        ('negative effort_scale', _waypoints(r, effort_scale=-1.0)),
        ('inf effort_scale', _waypoints(r, effort_scale=inf)),
        ('gravity beyond the limit (effort_scale 0.01)', _waypoints(r, effort_scale=0.01)),
        ('gridpoints 1', _waypoints(r, gridpoints=1)),
        ('gridpoints over the bound', _waypoints(r, gridpoints=4_000_000_000)),
        ('inf rate', _waypoints(r, rate=inf)),
        ('negative rate', _waypoints(r, rate=-10.0)),
    ]


def _check_faults(r):
    """(label, request) faults of ~/check_trajectory."""
    def check(t, **fields):
        return CheckTrajectory.Request(trajectory=t, **fields)
    one = _traj(r, 1)
    return [
        ('no points', check(JointTrajectory(joint_names=NAMES))),
        ('one point', check(one)),
        ('missing joint', check(_traj(r, 3, NAMES[:6]))),
        ('NaN velocity', check(_traj(r, 3, spoil=_set('velocities', 4, float('nan'))))),
        ('inf position', check(_traj(r, 3, spoil=_set('positions', 0, float('inf'))))),
        ('time_from_start not increasing', check(_t_equal_times(r))),
        ('acceleration_limits length != joint_names', check(_traj(r, 3), acceleration_limits=[1.0])),
        ('negative acceleration limit', check(_traj(r, 3), acceleration_limits=[1.0] * 6 + [-1.0])),
    ]


def service_requests(r, simulator=False):
    """(service, type, label, request) malformed requests, N_SERVICE_REQUESTS of them
    (with the simulator's ~/set_state too if ``simulator``)."""
    def js_requests(srv_type, with_velocity, extra=()):
        out = []
        for label, fill in _state_faults(r, with_velocity):
            req = srv_type.Request()
            fill(req.joint_state)
            out.append((label, req))
        for label, fill in extra:
            req = srv_type.Request()
            _named(req.joint_state, NAMES, position=_q(r), velocity=np.zeros(7))
            fill(req)
            out.append((label, req))
        return out

    def acc(values):
        return lambda req: setattr(req, 'acceleration', [float(x) for x in values])

    def eff(values):
        return lambda req: setattr(req.joint_state, 'effort', [float(x) for x in values])

    def traj(t):
        def fill(req):
            req.trajectory = t
        return fill

    def payload(link='panda_link8', m=1.0, com=(0, 0, 0), inertia=(0.01, 0.01, 0.01, 0, 0, 0), clear=False):
        def fill(req):
            req.clear = clear
            req.payload.link = link
            i = req.payload.inertia
            i.m = float(m)
            i.com.x, i.com.y, i.com.z = (float(c) for c in com)
            i.ixx, i.iyy, i.izz, i.ixy, i.ixz, i.iyz = (float(c) for c in inertia)
        return fill

    nan, inf = float('nan'), float('inf')
    pools = {
        ('~/gravity_compensation', GravityCompensation): js_requests(GravityCompensation, False),
        ('~/mass_matrix', MassMatrix): js_requests(MassMatrix, False),
        ('~/inverse_dynamics', InverseDynamics): js_requests(InverseDynamics, True, [
            ('acceleration length != names', acc([1.0, 2.0])),
            ('NaN acceleration', acc([0, 0, nan, 0, 0, 0, 0])),
            ('100,000 accelerations', acc(np.zeros(BIG)))]),
        ('~/forward_dynamics', ForwardDynamics): js_requests(ForwardDynamics, True, [
            ('effort length != names', eff([1.0] * 3)),
            ('NaN effort', eff([0, 0, 0, inf, 0, 0, 0])),
            ('overflow (tau 1e308)', eff([1e308] * 7))]),
        ('~/fill_trajectory_efforts', TrajectoryEfforts): [
            ('no points', traj(JointTrajectory(joint_names=NAMES))),
            ('missing joint', traj(_traj(r, 2, NAMES[:6]))),
            ('NaN position', traj(_traj(r, 2, spoil=_set('positions', 1, nan)))),
            ('inf acceleration', traj(_traj(r, 2, spoil=_set('accelerations', 1, inf)))),
            ('positions length != joint_names', traj(_traj(r, 2, spoil=lambda p: setattr(p, 'positions', [0.0])))),
            ('duplicate joint names', traj(_traj(r, 2, NAMES[:6] + NAMES[:1]))),
            ('time_from_start not increasing', traj(_t_equal_times(r)))],
        ('~/retime_trajectory', RetimeTrajectory): _retime_faults(r),
        ('~/check_trajectory', CheckTrajectory): _check_faults(r),
        ('~/set_payload', SetPayload): [
            ('unknown link', payload(link='no_such_link')),
            ('NaN mass', payload(m=nan)),
            ('negative mass', payload(m=-2.0)),
            ('inf com', payload(com=(0, inf, 0))),
            ('NaN inertia', payload(inertia=(nan, 0.01, 0.01, 0, 0, 0))),
            ('negative-definite inertia', payload(inertia=(-1.0, -1.0, -1.0, 0, 0, 0))),
            ('inertia breaks the triangle inequality', payload(inertia=(0.01, 0.01, 0.05, 0, 0, 0))),
            ('clear an unknown link', payload(link='no_such_link', clear=True)),
            ('overflowing payload (1e308 kg at 1e308 m)', payload(m=1e308, com=(1e308, 0, 0)))],
    }
    if simulator:
        from robot_dynamics_interfaces.srv import SetState
        q = _q(r)
        pools[('~/set_state', SetState)] = [
            (label, (lambda fill: lambda req: fill(req.joint_state))(fill)) for label, fill in [
                ('unknown joint', lambda js: _named(js, ['gripper'], position=[0.0])),
                ('NaN position', lambda js: _named(js, NAMES, position=_spoil(q, r, nan))),
                ('position outside the limits', lambda js: _named(js, NAMES[:1], position=[10.0])),
                ('velocity over the limit', lambda js: _named(js, NAMES[:1], position=[0.0], velocity=[100.0])),
                ('position length != names', lambda js: _named(js, NAMES, position=q[:3])),
                ('duplicate names', lambda js: _named(js, NAMES[:1] * 2, position=[0.0, 0.0])),
                ('no name', lambda js: _named(js, [], position=[])),
                ('100,000 positions', lambda js: _named(js, NAMES, position=array.array('d', bytes(8 * BIG))))]]
    # The fill functions build requests lazily: a fresh request per draw.
    flat = []
    for (name, srv_type), entries in pools.items():
        for label, item in entries:
            flat.append((name, srv_type, label, item))
    out = []
    for k in range(N_SERVICE_REQUESTS):
        name, srv_type, label, item = flat[k % len(flat)] if k < len(flat) else flat[int(r.integers(len(flat)))]
        if callable(item):
            req = srv_type.Request()
            item(req)
        else:
            req = item
        out.append((name, srv_type, label, req))
    return out


@pytest.mark.parametrize('module, params', SERVICE_TARGETS, ids=[t[0] for t in SERVICE_TARGETS])
def test_services_answer_every_malformed_request(ros, start_node, capsys, module, params):
    # dynamics_node's read-only services: dynamics_services beside it, under its names (as the launch files do).
    proc = start_node.with_services(params) if module == 'dynamics_node' else start_node(module, params)
    ros.wait_for_service(proc.topic('~/set_payload'), process=proc)
    r = np.random.default_rng(SEED + 1)
    requests = service_requests(r, simulator=module == SIMULATOR)
    clients = {}
    results = {}                                  # (service, label) -> [sent, success false, example]
    try:
        for name, srv_type, label, req in requests:
            client = clients.get(name)
            if client is None:
                client = clients[name] = ros.node.create_client(srv_type, proc.topic(name))
                assert client.wait_for_service(timeout_sec=10), name
            future = client.call_async(req)
            assert wait_for(future.done, 10), '%s did not answer a request with %s' % (name, label)
            res = future.result()
            entry = results.setdefault((name, label), [0, 0, ''])
            entry[0] += 1
            if not res.success and res.message:
                entry[1] += 1
                entry[2] = res.message
            else:
                entry[2] = 'ANSWERED success=%s message=%r' % (res.success, res.message)
        assert proc.poll() is None, 'node died:\n' + proc.read_log()[-3000:]
        # Still serving correct answers, and no rejected payload stuck.
        ok = GravityCompensation.Request()
        q = _q(r)
        _named(ok.joint_state, NAMES, position=q)
        res = ros.call(GravityCompensation, proc.topic('~/gravity_compensation'), ok)
        assert res.success
        np.testing.assert_allclose(res.torques.effort, rd.gravity_torques(MODEL, q), atol=1e-9)
        res = ros.call(SetPayload, proc.topic('~/set_payload'), SetPayload.Request(clear=True))
        assert res.success and res.total_payload_mass == 0.0, res
    finally:
        for client in clients.values():
            ros.node.destroy_client(client)
    per_service = {}
    for (name, label), (n_sent, n_refused, _) in results.items():
        row = per_service.setdefault(name[2:], [0, 0, 0])
        row[0] += 1
        row[1] += n_sent
        row[2] += n_refused
    rows = [(name,) + tuple(v) for name, v in sorted(per_service.items())]
    with capsys.disabled():
        print('\n%s service fuzz (seed %d): %d malformed requests, %d answered success=false with a message'
              % (module, SEED + 1, len(requests), sum(x[3] for x in rows)))
        print(_table(rows, ('service', 'kinds of fault', 'requests', 'success false + message')))
    wrong = [(name, label, msg) for (name, label), (n_sent, n_refused, msg) in sorted(results.items())
             if n_sent != n_refused]
    assert not wrong, 'requests not refused with a message: %s' % wrong


# --- a description is text, never a path -----------------------------------------------------
def test_a_description_is_never_opened_as_a_file(ros, start_node, tmp_path):
    """A description from the network that looks like a path (here a FIFO, which
    would block the node in open(), and a real file) is parsed as XML text and
    rejected; the node keeps its model and keeps serving."""
    topic = '/rd_fuzz_path_%d' % time.monotonic_ns()
    desc_pub = ros.publisher(String, topic, LATCHED)
    desc_pub.publish(String(data=PANDA.read_text()))
    proc = start_node('dynamics_services', {'robot_description_topic': topic, 'diagnostics_period': 0.1})
    ros.wait_for_service(proc.topic('~/gravity_compensation'), process=proc)
    diag = Diagnostics(ros, proc.fqn)
    try:
        assert diag.wait(lambda v: v['model_status'] == 'ok', 10)
        fifo = tmp_path / 'description.fifo'
        os.mkfifo(fifo)
        for k, path in enumerate((str(fifo), '/etc/hostname', str(PANDA))):
            desc_pub.publish(String(data=path))
            v = diag.wait(lambda v: int(v['descriptions_rejected']) == k + 1, 10)
            assert v is not None, 'description %r not rejected: %s' % (path, diag.get())
            assert v['model_status'] == 'error (previous model kept)' and v['robot'] == 'panda'
            assert 'not well-formed XML' in v['_message'] and 'cannot read' not in v['_message'], v['_message']
            req = GravityCompensation.Request()
            _named(req.joint_state, NAMES, position=np.zeros(7))
            assert ros.call(GravityCompensation, proc.topic('~/gravity_compensation'), req, timeout=5).success
        assert proc.poll() is None
    finally:
        ros.node.destroy_subscription(diag.sub)


# --- the simulator ------------------------------------------------------------------------------
N_SIM_COMMANDS = 10_000
SIM_PARAMS = {'urdf_path': str(PANDA), 'publish_rate': 250.0, 'marker_rate': 0.0, 'diagnostics_period': 0.05,
              'effort_commands_topic': 'effort_controller/commands', 'joint_commands_topic': 'joint_commands'}


def _effort(r, values):
    return Float64MultiArray(data=array.array('d', np.asarray(values, dtype=float)))


def _jc(names, **fields):
    msg = JointState(name=list(names))
    for field, values in fields.items():
        setattr(msg, field, array.array('d', np.asarray(values, dtype=float)))
    return msg


def _wrench(link, force=(0.0, 0.0, 0.0), torque=(0.0, 0.0, 0.0)):
    from geometry_msgs.msg import WrenchStamped
    msg = WrenchStamped()
    msg.header.frame_id = link
    (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z) = (float(x) for x in force)
    (msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = (float(x) for x in torque)
    return msg


def _in_limits(r, n=7):
    return r.uniform(LOWER[:n] * 0.8, UPPER[:n] * 0.8)


nan, inf = float('nan'), float('inf')
#: (topic, category, weight, generator(r) -> message, rejected?)
SIM_CATEGORIES = [
    ('effort', 'valid (|tau| < 0.2 limit)', 10,
     lambda r: _effort(r, r.uniform(-0.2, 0.2, 7) * MODEL.effort_limit), False),
    ('effort', 'huge but finite (1e300, clamped)', 2, lambda r: _effort(r, np.full(7, 1e300)), False),
    ('effort', 'wrong length', 4, lambda r: _effort(r, np.zeros(int(r.choice([0, 3, 6, 8])))), True),
    ('effort', 'NaN', 3, lambda r: _effort(r, _spoil(np.zeros(7), r, nan)), True),
    ('effort', 'inf', 2, lambda r: _effort(r, _spoil(np.zeros(7), r, -inf)), True),
    ('effort', '100,000 values', 0, lambda r: _effort(r, np.zeros(BIG)), True),
    ('joint', 'valid position command', 6, lambda r: _jc(NAMES, position=_in_limits(r)), False),
    ('joint', 'valid velocity command, 3 joints', 4,
     lambda r: _jc(NAMES[:3], velocity=r.uniform(-0.3, 0.3, 3)), False),
    ('joint', 'valid mixed modes (NaN = no value)', 3,
     lambda r: _jc(NAMES[:2], position=[nan, 0.1], velocity=[0.2, nan]), False),
    ('joint', 'unknown joint', 3, lambda r: _jc(['gripper'], position=[0.0]), True),
    ('joint', 'duplicate joint', 3, lambda r: _jc(NAMES[:1] * 2, position=[0.0, 0.1]), True),
    ('joint', 'position length != names', 3, lambda r: _jc(NAMES, position=np.zeros(4)), True),
    ('joint', 'inf', 2, lambda r: _jc(NAMES[:1], effort=[inf]), True),
    ('joint', 'NaN in every field', 2, lambda r: _jc(NAMES[:1], position=[nan], velocity=[nan]), True),
    ('joint', 'no name', 2, lambda r: _jc([], position=[]), True),
    ('joint', 'no values', 1, lambda r: _jc(NAMES), True),
    ('joint', '100,000 names', 0, lambda r: _jc(['j%d' % k for k in range(BIG)], position=np.zeros(BIG)), True),
    ('wrench', 'valid, on panda_link7', 5,
     lambda r: _wrench('panda_link7', r.uniform(-5, 5, 3), r.uniform(-0.5, 0.5, 3)), False),
    ('wrench', 'all zeros (removes it)', 2, lambda r: _wrench('panda_link7'), False),
    ('wrench', 'huge but finite (1e300 N)', 1, lambda r: _wrench('panda_link7', (1e300, 0, 0)), False),
    ('wrench', 'unknown link', 3, lambda r: _wrench('no_such_link', (1.0, 0, 0)), True),
    ('wrench', 'empty frame_id', 2, lambda r: _wrench('', (1.0, 0, 0)), True),
    ('wrench', 'NaN force', 2, lambda r: _wrench('panda_link5', (nan, 0, 0)), True),
    ('wrench', 'inf torque', 2, lambda r: _wrench('panda_link5', torque=(0, inf, 0)), True),
]
SIM_BIG = [('effort', '100,000 values', 3), ('joint', '100,000 names', 3)]


@pytest.mark.skipif(not HAVE_SIMULATOR, reason='robot_dynamics/ros/%s.py does not exist yet' % SIMULATOR)
def test_simulator_survives_malformed_commands(ros, start_node, capsys):
    """The simulator gets N_SIM_COMMANDS efforts, joint commands and wrenches, about
    half malformed: it stays alive, every joint_states message it publishes is
    finite and names the model's joints, and its diagnostics count every
    command in and every rejected one. Each command topic keeps the latest 10
    messages, so at most 6 are outstanding by the node's own count."""
    proc = start_node(SIMULATOR, SIM_PARAMS)
    ros.wait_for_subscriber(proc.topic('effort_controller/commands'), process=proc)
    peer = FastPeer()
    try:
        states = ById()
        peer.node.create_subscription(JointState, proc.topic('joint_states'), states, DEEP_SUB)
        diag = Diagnostics(peer, proc.fqn, status='simulator')
        topics = {'effort': (Float64MultiArray, 'effort_controller/commands', 'effort_commands_in'),
                  'joint': (JointState, 'joint_commands', 'joint_commands_in'),
                  'wrench': (None, '~/wrench', 'wrenches_in')}
        from geometry_msgs.msg import WrenchStamped
        pubs = {k: peer.node.create_publisher(t or WrenchStamped, proc.topic(name), DEEP_RELIABLE)
                for k, (t, name, _) in topics.items()}
        assert wait_for(lambda: all(p.get_subscription_count() for p in pubs.values()), 10)
        base = diag.wait(lambda v: v['state'] == 'running', 20)
        assert base is not None, 'the simulator does not run: %s' % diag.get()
        r = np.random.default_rng(SEED + 2)
        weights = np.array([c[2] for c in SIM_CATEGORIES], dtype=float)
        plan = [SIM_CATEGORIES[i] for i in r.choice(len(SIM_CATEGORIES), N_SIM_COMMANDS, p=weights / weights.sum())]
        by_name = {(c[0], c[1]): c for c in SIM_CATEGORIES}
        for topic, cat, count in SIM_BIG:
            for at in r.choice(len(plan), count, replace=False):
                plan[int(at)] = by_name[(topic, cat)]
        sent = {k: 0 for k in topics}
        per_cat = {}
        n_rejected = 0
        t0 = time.monotonic()

        def room(topic):
            v = diag.get()
            return sent[topic] - (int(v[topics[topic][2]]) - int(base[topics[topic][2]])) <= 6

        for topic, cat, _, gen, rejected in plan:
            if not room(topic):
                assert wait_for(lambda: room(topic), 10), 'the simulator does not take %s commands' % topic
            pubs[topic].publish(gen(r))
            sent[topic] += 1
            per_cat[(topic, cat)] = per_cat.get((topic, cat), 0) + 1
            n_rejected += rejected
            if proc.poll() is not None:
                break
        t_fuzz = time.monotonic() - t0

        def settled(v):
            return all(int(v[key]) - int(base[key]) == sent[k] for k, (_, _, key) in topics.items()) \
                and int(v['commands_rejected']) - int(base['commands_rejected']) == n_rejected
        final = diag.wait(settled, 10) or diag.get()
        n_states = states.count
        time.sleep(0.3)
        alive = proc.poll() is None and states.count > n_states
        rows = [(topic, cat, n, 'rejected' if by_name[(topic, cat)][4] else 'accepted')
                for (topic, cat), n in sorted(per_cat.items())]
        counts = lambda key: int(final[key]) - int(base[key])  # noqa: E731
        totals = [('%s in' % key, sent[k], counts(key)) for k, (_, _, key) in topics.items()]
        totals += [('commands rejected', n_rejected, counts('commands_rejected')),
                   ('non-finite joint_states published', 0, states.non_finite),
                   ('joint_states with other names', 0, len(states.bad_names))]
        with capsys.disabled():
            print('\nsimulator fuzz (seed %d): %d commands in %.1f s; %d joint_states received; alive: %s; '
                  'simulation_errors %s, non_finite_outputs (not published) %s, last rejection: %s'
                  % (SEED + 2, sum(sent.values()), t_fuzz, states.count, alive, final['simulation_errors'],
                     final['non_finite_outputs'], final['last_rejection'][:80]))
            print(_table(rows, ('topic', 'category', 'sent', 'expected')))
            print(_table(totals, ('count', 'expected', 'observed')))
        assert alive, 'the simulator died or stopped publishing:\n' + proc.read_log()[-3000:]
        for label, want, got in totals:
            assert want == got, '%s: expected %s, observed %s' % (label, want, got)
    finally:
        peer.close()
