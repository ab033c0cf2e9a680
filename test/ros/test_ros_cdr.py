"""robot_dynamics.ros.cdr: the torque loop's serialized messages, against rclpy.serialization (the rmw's own
type support) and against bytes written out by hand from the CDR rules (one process, no DDS)."""
import struct

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_dynamics.ros.cdr import (CdrError, DiagnosticArrayWriter, Float64ArrayWriter, JointStateReader,
                                    JointStateWriter, header_bytes)

#: sensor_msgs/JointState{stamp (5 s, 7 ns), frame_id 'xyz', name ['a', 'bb'], position [], velocity [],
#: effort [1.0, 2.0]}, written out by hand: plain CDR little endian, each field aligned to its size from the
#: end of the 4-byte encapsulation header (offsets below are from that end), padding zero.
HAND_JOINT_STATE = bytes.fromhex(
    '00010000'            # encapsulation: CDR, little endian; options 0
    '05000000 07000000'   # 0: stamp.sec (int32) 5, 8: stamp.nanosec (uint32) 7
    '04000000 78797a00'   # 8: frame_id: length 4 (with the NUL), 'xyz\\0'
    '02000000'            # 16: name: 2 strings
    '02000000 61000000'   # 20: 'a\\0' (length 2), padded to 4
    '03000000 62620000'   # 28: 'bb\\0' (length 3), padded to 4
    '00000000 00000000'   # 36: position: 0 values; 40: velocity: 0 values (nothing aligned, nothing follows)
    '02000000'            # 44: effort: 2 values, the first at 48 (8-aligned, no padding)
    '000000000000f03f 0000000000000040'.replace(' ', ''))  # 48: 1.0, 56: 2.0
#: std_msgs/Float64MultiArray{layout.dim [{label 'joints', size 2, stride 2}], data_offset 0, data [1.0, 2.0]}.
HAND_COMMAND = bytes.fromhex(
    '00010000'
    '01000000'            # 0: dim: 1 MultiArrayDimension
    '07000000 6a6f696e747300 00'.replace(' ', '') +   # 4: label: length 7, 'joints\\0', padded to 16
    '02000000 02000000'   # 16: size 2, 20: stride 2
    '00000000'            # 24: data_offset 0
    '02000000'            # 28: data: 2 values, the first at 32 (8-aligned, no padding)
    '000000000000f03f 0000000000000040'.replace(' ', ''))


#: diagnostic_msgs/DiagnosticArray{stamp (5 s, 7 ns), frame_id '', status [{level WARN, name 'n', message 'ab',
#: hardware_id '', values [{key 'k', value 'xyz'}]}]}, written out by hand like HAND_JOINT_STATE.
HAND_DIAGNOSTICS = bytes.fromhex(
    '00010000'
    '05000000 07000000'   # 0: stamp.sec 5, 4: stamp.nanosec 7
    '01000000 00000000'   # 8: frame_id: length 1, '\\0', padded to 16
    '01000000'            # 16: status: 1 DiagnosticStatus
    '01000000'            # 20: level 1 (WARN, one byte), padded to 24
    '02000000 6e000000'   # 24: name: length 2, 'n\\0', padded to 32
    '03000000 61620000'   # 32: message: length 3, 'ab\\0', padded to 40
    '01000000 00000000'   # 40: hardware_id: length 1, '\\0', padded to 48
    '01000000'            # 48: values: 1 KeyValue
    '02000000 6b000000'   # 52: key: length 2, 'k\\0', padded to 60
    '04000000 78797a00'.replace(' ', ''))  # 60: value: length 4, 'xyz\\0' (the end: no padding after it)


def random_joint_state(rng):
    msg = JointState()
    msg.header.frame_id = ''.join(rng.choice(list('abcé🙂/_'), int(rng.integers(0, 10))))
    msg.header.stamp.sec = int(rng.integers(-2**31, 2**31))
    msg.header.stamp.nanosec = int(rng.integers(0, 2**32))
    n = int(rng.integers(0, 10))
    msg.name = [''.join(rng.choice(list('xyzü_1'), int(rng.integers(0, 13)))) for _ in range(n)]
    for field in ('position', 'velocity', 'effort'):
        size = int(rng.choice([0, n, int(rng.integers(0, 10))]))
        setattr(msg, field, rng.uniform(-5, 5, size).tolist())
    return msg


def check_same(stamped, msg):
    assert (stamped.sec, stamped.nanosec, stamped.frame_id) == (msg.header.stamp.sec, msg.header.stamp.nanosec,
                                                                 msg.header.frame_id)
    assert list(stamped.name) == list(msg.name)
    for field in ('position', 'velocity', 'effort'):
        assert np.array_equal(getattr(stamped, field), np.array(getattr(msg, field), dtype=float)), field


def test_joint_states_decode_as_rclpy_decodes_them():
    """3,000 random messages (unicode and empty strings, empty and mismatched arrays): the reader gives what
    rclpy's deserialization gives, also for a list of names seen before (its cached tuple) and for the same
    content with other padding bytes (rclpy's serializer leaves them as they were, the writer zeroes them)."""
    rng = np.random.default_rng(11)
    reader = JointStateReader()
    for _ in range(3000):
        msg = random_joint_state(rng)
        data = serialize_message(msg)
        assert deserialize_message(data, JointState) == msg
        first = reader.read(data)
        check_same(first, msg)
        again = reader.read(data)
        check_same(again, msg)
        assert again.name is first.name
        # The same header, names and efforts, serialized by the writer (padding zero).
        effort = np.resize(np.array(msg.effort, dtype=float), len(msg.name))     # one per name
        written = JointStateWriter(msg.name).serialize(first.head, effort)
        other = reader.read(written)
        assert other.name == first.name and other.head == first.head
        assert np.array_equal(other.effort, effort) and not other.position.size and not other.velocity.size


def test_the_hand_written_message_is_read_and_written():
    stamped = JointStateReader().read(HAND_JOINT_STATE)
    assert (stamped.sec, stamped.nanosec, stamped.frame_id, stamped.name) == (5, 7, 'xyz', ('a', 'bb'))
    assert stamped.position.size == stamped.velocity.size == 0 and stamped.effort.tolist() == [1.0, 2.0]
    assert stamped.head == header_bytes(5, 7, 'xyz')
    assert JointStateWriter(['a', 'bb']).serialize(header_bytes(5, 7, 'xyz'), np.array([1.0, 2.0])) == \
        HAND_JOINT_STATE
    msg = deserialize_message(HAND_JOINT_STATE, JointState)                       # and rclpy agrees
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (5, 7, 'xyz')
    assert list(msg.name) == ['a', 'bb'] and list(msg.effort) == [1.0, 2.0]
    assert Float64ArrayWriter(2).serialize(np.array([1.0, 2.0])) == HAND_COMMAND
    cmd = deserialize_message(HAND_COMMAND, Float64MultiArray)
    assert list(cmd.data) == [1.0, 2.0] and cmd.layout.data_offset == 0
    assert [(d.label, d.size, d.stride) for d in cmd.layout.dim] == [('joints', 2, 2)]


@pytest.mark.parametrize('n', [0, 1, 6, 7, 12])
def test_the_writers_give_what_rclpy_reads(n):
    """Every header length modulo 8 (the efforts' alignment depends on it) and several joint counts."""
    rng = np.random.default_rng(n)
    names = ['joint_%d%s' % (k, 'x' * k) for k in range(n)]
    writer, command = JointStateWriter(names), Float64ArrayWriter(n)
    for frame_length in range(12):
        effort = rng.uniform(-100, 100, n)
        frame = 'f' * frame_length
        msg = deserialize_message(writer.serialize(header_bytes(-3, 999_999_999, frame), effort), JointState)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (-3, 999_999_999, frame)
        assert list(msg.name) == names and list(msg.effort) == effort.tolist()
        assert len(msg.position) == len(msg.velocity) == 0
        cmd = deserialize_message(command.serialize(effort), Float64MultiArray)
        assert list(cmd.data) == effort.tolist()
        assert [(d.label, d.size, d.stride) for d in cmd.layout.dim] == [('joints', n, n)]


def big_endian_joint_state(sec, nanosec, frame, names, position):
    """A JointState in big-endian CDR (encapsulation 00 00), written by hand: what a big-endian
    host's rmw would send."""
    out = bytearray(b'\x00\x00\x00\x00')

    def put(fmt, *values, align):
        out.extend(bytes(-(len(out) - 4) % align))
        out.extend(struct.pack('>' + fmt, *values))

    def text(s):
        raw = s.encode() + b'\x00'
        put('I', len(raw), align=4)
        out.extend(raw)
    put('iI', sec, nanosec, align=4)
    text(frame)
    put('I', len(names), align=4)
    for name in names:
        text(name)
    put('I', len(position), align=4)
    put('%dd' % len(position), *position, align=8)
    put('I', 0, align=4)
    put('I', 0, align=4)
    return bytes(out)


def test_big_endian_messages_are_read_through_rclpy():
    data = big_endian_joint_state(12, 34, 'base', ['j1', 'j22', 'j333'], [0.5, -1.25, 3.0])
    stamped = JointStateReader().read(data)
    assert (stamped.sec, stamped.nanosec, stamped.frame_id, stamped.name) == (12, 34, 'base', ('j1', 'j22', 'j333'))
    assert stamped.position.tolist() == [0.5, -1.25, 3.0] and not stamped.velocity.size
    assert stamped.head == header_bytes(12, 34, 'base')          # the outputs stay little endian


def test_malformed_bytes_raise_a_cdr_error():
    """Every truncation of a message, lengths and counts past the end, and names that are not UTF-8:
    CdrError naming the type, never a crash or another exception (the node counts them as bad messages)."""
    reader = JointStateReader()
    whole = JointStateWriter(['a', 'bb']).serialize(header_bytes(1, 2, 'frame'), np.array([1.0, 2.0]))
    reader.read(whole)
    for size in range(2, len(whole)):
        with pytest.raises(CdrError, match='sensor_msgs/JointState'):
            reader.read(whole[:size])
    # Offsets in the bytes: the frame_id's length at 12; 'frame\0' ends at 22, the name count at 24 (4-aligned
    # after the encapsulation); the effort count is the last 2 before the efforts (its padding is zero).
    frame_at, names_at = 12, 24
    effort_at = whole.rindex(struct.pack('<I', 2), 0, len(whole) - 16)
    assert whole[names_at:names_at + 4] == struct.pack('<I', 2) and effort_at > names_at + 20
    spoiled = {
        'a frame_id length past the end': whole[:frame_at] + struct.pack('<I', 0xFFFFFFF0) + whole[frame_at + 4:],
        'two billion names': whole[:names_at] + struct.pack('<I', 2_000_000_000) + whole[names_at + 4:],
        'a name that is not UTF-8': whole.replace(b'bb\x00', b'\xff\xfe\x00'),
        'an effort count past the end': whole[:effort_at] + struct.pack('<I', 3) + whole[effort_at + 4:],
    }
    for what, data in spoiled.items():
        with pytest.raises(CdrError):
            reader.read(data)
    assert reader.read(whole).name == ('a', 'bb')          # and the next good message is read


def test_the_hand_written_diagnostics_are_written_and_read():
    status = DiagnosticStatus(level=DiagnosticStatus.WARN, name='n', message='ab', hardware_id='')
    data = DiagnosticArrayWriter().serialize(5_000_000_007, status, [('k', 'xyz')])
    assert data == HAND_DIAGNOSTICS
    msg = deserialize_message(data, DiagnosticArray)
    status, = msg.status
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (5, 7, '')
    assert (status.level, status.name, status.message, status.hardware_id) == (b'\x01', 'n', 'ab', '')
    assert [(kv.key, kv.value) for kv in status.values] == [('k', 'xyz')]


def test_diagnostics_are_what_rclpy_reads_period_after_period():
    """One writer, 500 periods of random statuses: strings of every length modulo 4 (unicode, empty), values that
    change, stay or come back, keys that come and go, values that are not text (written as str(value)). Each
    period's bytes are rclpy's message of the same content, and as long as rclpy's (no padding at the end)."""
    rng = np.random.default_rng(5)
    writer = DiagnosticArrayWriter()
    keys = ['k%d%s' % (k, 'é' * k) for k in range(12)]

    def text():
        return ''.join(rng.choice(list('ab🙂_ /é'), int(rng.integers(0, 9))))
    levels = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR, DiagnosticStatus.STALE)
    choices = [text() for _ in range(6)] + [0, 12345, 2.5, True, None]
    for _ in range(500):
        values = [(key, choices[int(rng.integers(len(choices)))]) for key in keys if rng.random() < 0.8]
        head = dict(level=levels[int(rng.integers(4))], name=text(), message=text(), hardware_id=text())
        sec, nanosec = int(rng.integers(-2**31, 2**31)), int(rng.integers(0, 10**9))
        status = DiagnosticStatus(**head)
        data = writer.serialize(sec * 1_000_000_000 + nanosec, status, values)
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        assert deserialize_message(data, DiagnosticArray) == msg
        assert len(data) == len(serialize_message(msg))
