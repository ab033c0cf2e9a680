"""robot_dynamics.ros.joint_state_intake: the compiled merge of a known joint-state layout gives what the general
path gives (cdr.JointStateReader, then TorqueLoop.step), message for message, on random streams that mix the
driver's usual message with every kind of message the compiled merge must leave to the general path (one
process, no DDS; messages serialized by rclpy)."""
import pathlib

import numpy as np
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState

import robot_dynamics as rd
from robot_dynamics.algorithms.cdr_merge import GENERAL, MERGED, OUT_SIZE, merge_known, padding_mask
from robot_dynamics.control import profiles
from robot_dynamics.control.compensation import CARTESIAN_IMPEDANCE, GRAVITY_CORIOLIS, TorqueLimiter
from robot_dynamics.control.impedance_target import ImpedanceTarget, build_impedance
from robot_dynamics.control.joint_map import JointStateMerger
from robot_dynamics.control.laws import gains, laws_of
from robot_dynamics.control.settings import PipelineSettings
from robot_dynamics.control.staleness import JointStaleness
from robot_dynamics.control.torque_loop import TorqueLoop
from robot_dynamics.ros.joint_state_intake import JointStateIntake

ROOT = pathlib.Path(__file__).resolve().parents[2]
PANDA = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'))
NAMES = tuple(PANDA.joint_names)
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])
MS = 1_000_000                      # [ns]
T0 = 1_795_900_000 * 1000 * MS      # node clock at the first message [ns]


def pipeline(mode, max_age_ns):
    """A TorqueLoop of the Panda as dynamics_node builds it (the Cartesian law with a torque-rate limit)."""
    cmd = list(NAMES)
    laws = laws_of(PANDA, NAMES, mode, 0.0, gains([], NAMES, cmd), gains([], NAMES, cmd), int(0.1e9))
    control = None
    if mode == CARTESIAN_IMPEDANCE:
        holder = ImpedanceTarget(NAMES, PANDA.base_link, int(0.5e9), 'pose')
        control = build_impedance(PANDA, mode, holder, link='panda_hand_tcp', max_torque_rate=2000.0)
    return TorqueLoop(PipelineSettings(mode=mode, max_state_age=max_age_ns * 1e-9, diagnostic_torque_rate=-1),
                      JointStateMerger(NAMES), JointStaleness(NAMES, 50 * MS), laws, TorqueLimiter(PANDA.effort_limit),
                      profiles.CommandTerms(False, False, 7), list(range(7)), impedance=control,
                      target=None if control is None else control.target)


def message(rng, k, now_ns):
    """A serialized JointState: mostly the driver's usual one, else one of the cases the compiled merge leaves to
    the general path; (its kind, its bytes)."""
    kind = rng.choice(['usual'] * 12 + ['permuted', 'extra_joint', 'partial', 'nan_position', 'inf_velocity',
                                        'no_velocity', 'short_velocity', 'efforts', 'short_effort', 'old', 'ahead',
                                        'unstamped', 'other_frame', 'truncated', 'nan_other_joint', 'numbered_frame',
                                        'bad_utf8_frame'])
    names = list(NAMES)
    q = Q0 + 0.05 * np.sin(0.01 * k + np.arange(7))
    qd = 0.2 * np.cos(0.01 * k + np.arange(7))
    msg = JointState(name=names, position=list(q), velocity=list(qd))
    msg.header.frame_id = {'other_frame': 'other', 'numbered_frame': str(k)}.get(kind, 'panda_link0')
    stamp = now_ns - int(rng.integers(0, 3 * MS))
    if kind == 'permuted':
        order = rng.permutation(7)
        msg.name, msg.position, msg.velocity = [names[i] for i in order], list(q[order]), list(qd[order])
    elif kind in ('extra_joint', 'nan_other_joint'):
        msg.name = names + ['panda_finger_joint1']
        msg.position, msg.velocity = list(q) + [np.nan if kind == 'nan_other_joint' else 0.04], list(qd) + [0.0]
    elif kind == 'partial':
        msg.name, msg.position, msg.velocity = names[:4], list(q[:4]), list(qd[:4])
    elif kind == 'nan_position':
        msg.position[int(rng.integers(7))] = float('nan')
    elif kind == 'inf_velocity':
        msg.velocity[int(rng.integers(7))] = float('inf')
    elif kind == 'no_velocity':
        msg.velocity = []
    elif kind == 'short_velocity':
        msg.velocity = list(qd[:6])
    elif kind == 'efforts':
        msg.effort = list(rng.normal(size=7))
    elif kind == 'short_effort':
        msg.effort = [1.0, 2.0]
    elif kind == 'old':
        stamp = now_ns - 80 * MS
    elif kind == 'ahead':
        stamp = now_ns + 80 * MS
    elif kind == 'unstamped':
        stamp = 0
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
    data = serialize_message(msg)
    if kind == 'truncated':
        data = data[:int(rng.integers(20, len(data) - 8))]
    elif kind == 'bad_utf8_frame':
        data = data.replace(b'panda_link0', b'panda_l\xffnk0')
    return kind, data


def run(intake, loop, data, now_ns):
    """What one message gives: the error's text, or everything the node reads of the message and the loop."""
    try:
        msg, step = intake.step(data, loop, now_ns)
    except Exception as exc:
        return ('error', type(exc).__name__, str(exc))
    return ((msg.sec, msg.nanosec, msg.frame_id, msg.head, msg.name, msg.effort.tolist()),
            (step.refused, step.outputs, step.clamped, step.fresh, step.command.tolist()),
            {key: step.torques[key].tolist() for key in step.outputs},
            (loop.merger.q.tolist(), loop.merger.qd.tolist(), loop.merger.updates, loop.merger.ready,
             loop.staleness.stamp.tolist(), loop.fresh))


@pytest.mark.parametrize('mode', [GRAVITY_CORIOLIS, CARTESIAN_IMPEDANCE])
@pytest.mark.parametrize('max_age_ms', [0, 40])
def test_the_compiled_merge_gives_what_the_general_path_gives(mode, max_age_ms):
    rng = np.random.default_rng(7 + max_age_ms)
    compiled, general = JointStateIntake(), JointStateIntake()
    general.merges_compiled = False                    # the general path only
    a, b = pipeline(mode, max_age_ms * MS), pipeline(mode, max_age_ms * MS)
    kinds = {}
    for k in range(3000):
        now = T0 + k * MS
        kind, data = message(rng, k, now)
        before = compiled.compiled
        got, want = run(compiled, a, data, now), run(general, b, data, now)
        assert got == want, (k, kind)
        kinds.setdefault(kind, set()).add(compiled.compiled > before)
    assert general.compiled == 0
    # The usual message went compiled, whatever its frame_id (and a longer name list, after it was known: the
    # stream switches between them); the others never did.
    assert compiled.compiled > 1000, (kinds, compiled.compiled)
    for kind in ('usual', 'other_frame', 'numbered_frame', 'extra_joint', 'efforts', 'no_velocity', 'short_effort'):
        assert True in kinds[kind], (kind, kinds)
    # (A NaN of a joint the model does not have is ignored on either path.)
    for kind in ('partial', 'nan_position', 'inf_velocity', 'short_velocity', 'truncated', 'bad_utf8_frame') + (
            ('old', 'ahead', 'unstamped') if max_age_ms else ()):
        assert kinds.get(kind, {False}) == {False}, (kind, kinds)


def test_merge_known_reads_a_message_written_by_hand():
    """Two joints, frame_id 'xyz', stamp (5 s, 7 ns), positions (1, 2), no velocities, efforts (3, 4): the bytes
    by the CDR rules (offsets from the end of the 4-byte encapsulation), names swapped against the model."""
    data = bytes.fromhex(
        '00010000' '05000000' '07000000'          # encapsulation; 0: sec 5, 4: nanosec 7
        '04000000' '78797a00'                      # 8: frame_id 'xyz\\0'
        '02000000' '02000000' '62000000' '02000000' '61000000'   # 16: names ['b', 'a']
        '02000000'                                 # 36: 2 positions, at 40 (8-aligned: no padding)
        '000000000000f03f' '0000000000000040'      # 40: 1.0, 2.0
        '00000000'                                 # 56: no velocities
        '02000000'                                 # 60: 2 efforts, at 64
        '0000000000000840' '0000000000001040')     # 64: 3.0, 4.0
    u8 = np.frombuffer(data, np.uint8)
    names = u8[20:40]                              # the name sequence: payload offsets 16 .. 36
    mask = np.frombuffer(padding_mask(names.tobytes()), np.uint8)
    assert mask.tolist() == [255] * 4 + [255] * 6 + [0] * 2 + [255] * 6 + [0] * 2
    q, qd, out = np.zeros(2), np.full(2, 9.0), np.zeros(OUT_SIZE, dtype=np.int64)
    src, dst = np.array([0, 1], dtype=np.intp), np.array([1, 0], dtype=np.intp)   # 'b' is joint 1, 'a' joint 0
    assert merge_known(u8, names, mask, 2, src, dst, q, qd, 0, 0, out) == MERGED
    assert q.tolist() == [2.0, 1.0] and qd.tolist() == [0.0, 0.0]
    assert out.tolist() == [5, 7, 4 + 16, 4 + 64, 2]
    assert np.frombuffer(data, '<f8', 2, 68).tolist() == [3.0, 4.0]
    # Other padding bytes: the same message.
    padded = bytearray(data)
    padded[4 + 26:4 + 28] = padded[4 + 34:4 + 36] = b'\xaa\x55'     # after 'b\0' and 'a\0'
    assert merge_known(np.frombuffer(bytes(padded), np.uint8), names, mask, 2, src, dst, q, qd, 0, 0, out) == MERGED
    # Another name list, big endian, a stamp out of max_state_age: nothing written.
    other = np.frombuffer(data.replace(b'b\x00', b'c\x00'), np.uint8)
    big = np.frombuffer(b'\x00\x00' + data[2:], np.uint8)
    q[:] = -1.0
    for args in ((other, 0, 0), (big, 0, 0), (u8, 5 * 10**9 + 7 + 10**6 + 1, 10**6)):
        assert merge_known(args[0], names, mask, 2, src, dst, q, qd, args[1], args[2], out) == GENERAL
    assert q.tolist() == [-1.0, -1.0]
    assert merge_known(u8, names, mask, 2, src, dst, q, qd, 5 * 10**9 + 7 + 10**6, 10**6, out) == MERGED


def test_every_example_robot_data_robot_gives_the_same_on_either_path():
    """Each example-robot-data URDF (as dynamics_node builds its gravity_coriolis loop): a stream of its own joint
    names, usual, permuted, partial, NaN and truncated, gives the same on the compiled and the general path, and
    the usual message goes compiled. Bounded: the 66 robots with joints x 60 messages in a few seconds."""
    import time
    import warnings
    from robot_dynamics import control
    from robot_dynamics.tools.sample import example_robot_data_dir
    erd = example_robot_data_dir()
    assert erd is not None, 'example-robot-data is a test dependency'
    t0, robots = time.monotonic(), 0
    for path in sorted(erd.rglob('*.urdf')):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                model = rd.load_urdf(str(path))
        except Exception:                   # ur3.urdf: an empty xacro leftover (test_example_robot_data)
            continue
        if not model.joint_names:           # a quadrotor's base alone: no joint state to take
            continue
        loops = [control.build(model, PipelineSettings(mode=GRAVITY_CORIOLIS, diagnostic_torque_rate=-1))
                 for _ in range(2)]
        assert not isinstance(loops[0], str), (path, loops[0])
        names, rng = list(model.joint_names), np.random.default_rng(robots)
        compiled, general = JointStateIntake(), JointStateIntake()
        general.merges_compiled = False
        for k in range(60):
            kind = rng.choice(['usual'] * 6 + ['permuted', 'partial', 'nan', 'truncated'])
            order = rng.permutation(len(names)) if kind == 'permuted' else np.arange(len(names))
            q = 0.1 * np.sin(0.1 * k + np.arange(len(names)))
            if kind == 'partial':
                order = order[:max(1, len(names) // 2)]
            msg = JointState(name=[names[i] for i in order], position=list(q[order]), velocity=list(0.5 * q[order]))
            if kind == 'nan':
                msg.position[0] = float('nan')
            now = T0 + k * MS
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
            data = serialize_message(msg)
            if kind == 'truncated':
                data = data[:len(data) // 2]
            assert run(compiled, loops[0], data, now) == run(general, loops[1], data, now), (path, k, kind)
        assert compiled.compiled > 0, path
        robots += 1
    assert robots >= 66 and time.monotonic() - t0 < 120, (robots, time.monotonic() - t0)
