"""The torque loop's messages in their serialized form (CDR), without rclpy's conversion to Python objects.

dynamics_node takes ``joint_states`` as serialized bytes (``raw=True``) and
publishes its torque topics and its command as bytes (``Publisher.publish``
of ``bytes``): rclpy's conversion of a JointState to Python objects and back
(a list of name strings, three arrays, a header) costs more CPU at 1 kHz than
the dynamics. ``bench/ros_latency.py`` measures the node against a bare rclpy
relay; docs/PERFORMANCE.md has the figures.

The form read and written here is plain CDR (XCDR1), little endian: a
4-byte encapsulation header ``00 01 00 00``, then the fields in order, each
aligned to its size (strings and counts to 4, float64 to 8) from the end of
the encapsulation header; a string is its length (with the NUL) and its
UTF-8 bytes and a NUL; a sequence is its count, then (if not empty) its
elements, aligned. It is what rmw_fastrtps and rmw_cyclonedds put on the
wire for these types (OMG DDS-XTypes 1.3, Extended CDR, encoding version
1; ``rclpy.serialization`` gives the same bytes, padding aside), and the
tests check both directions against ``rclpy.serialization``. A message in any other form (big endian,
XCDR2) is converted by rclpy (:func:`rclpy.serialization.deserialize_message`).

    sensor_msgs/JointState:  Header header (Time stamp (int32 sec, uint32 nanosec), string frame_id),
                             string[] name, float64[] position, float64[] velocity, float64[] effort
    std_msgs/Float64MultiArray: MultiArrayLayout layout (MultiArrayDimension[] dim (string label,
                             uint32 size, uint32 stride), uint32 data_offset), float64[] data
"""
import struct

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState

from ..errors import CdrError

#: Encapsulation of plain CDR, little endian (and its two option bytes, zero).
CDR_LE = b'\x00\x01\x00\x00'
_ZEROS = bytes(8)
_U32 = struct.Struct('<I')
_STAMP = struct.Struct('<iI')
_EMPTY = np.empty(0)
_EMPTY.flags.writeable = False
#: Distinct name lists kept, so that each is one tuple object (see :meth:`JointStateReader.read`).
MAX_NAME_LISTS = 16


def _pad(offset, size):
    """Padding [bytes] that aligns payload ``offset`` (counted after the encapsulation) to ``size``."""
    return -offset & (size - 1)


def string(text):
    """CDR string: length with the NUL (uint32), the UTF-8 bytes, the NUL (unaligned end)."""
    raw = text.encode('utf-8') + b'\x00'
    return _U32.pack(len(raw)) + raw


class Stamped:
    """A received JointState, decoded: what the torque loop reads of it.

    Attributes:
        sec, nanosec: header.stamp.
        frame_id: header.frame_id (str).
        head: header as serialized (stamp and frame_id string, no encapsulation),
            copied into the outputs as it is.
        name: the joint names (a tuple; the same object for the same list).
        position, velocity, effort: (n,) or (0,) float64 arrays, to be read only
            (views of the received bytes; copies for a message rclpy converted).
    """
    __slots__ = ('sec', 'nanosec', 'frame_id', 'head', 'name', 'position', 'velocity', 'effort')


def header_bytes(sec, nanosec, frame_id):
    """Serialized std_msgs/Header (no encapsulation): what :attr:`Stamped.head` holds."""
    return _STAMP.pack(sec, nanosec) + string(frame_id)


class JointStateReader:
    """Decode serialized sensor_msgs/JointState messages (:meth:`read`)."""

    def __init__(self):
        self._names = {}          # name tuple -> the same tuple: one object per distinct list
        self._last = (None, None)  # (serialized names, their tuple) of the last message
        self.names_end = 0         # offset in the last plain CDR LE message after its names (and their padding)

    def read(self, data):
        """The :class:`Stamped` of ``data`` (bytes of a serialized sensor_msgs/JointState).

        Plain CDR little endian is decoded here; any other form by rclpy.

        Raises:
            CdrError: ``data`` is not a JointState (truncated, a length past its end,
                names that are not UTF-8); rclpy's own error for another form.
        """
        if data[:2] != CDR_LE[:2]:
            return self._from_message(data)
        try:
            return self._read_le(data)
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise CdrError('not a serialized sensor_msgs/JointState (%d bytes): %s' % (len(data), exc)) from None

    def _read_le(self, data):
        out = Stamped()
        out.sec, out.nanosec = _STAMP.unpack_from(data, 4)
        out.frame_id, end = _string(data, 12, -1)
        out.head = data[4:end]
        p = end + _pad(end - 4, 4)
        block, names = self._last
        if block is not None and data.startswith(block, p):       # the names of the last message
            out.name = names
            p += len(block)
        else:
            out.name, end = self._names_at(data, p)
            if end <= len(data):        # (a message cut in the last name's padding is no layout to keep)
                self._last = (data[p:end], out.name)
            p = end
        self.names_end = p
        out.position, p = _doubles(data, p)
        out.velocity, p = _doubles(data, p)
        out.effort, p = _doubles(data, p)
        return out

    def _names_at(self, data, p):
        """(The names at offset ``p`` as a tuple, the same object for the same list; the offset after them
        and their padding)."""
        count, = _U32.unpack_from(data, p)
        p += 4
        if 4 * count > len(data) - p:
            raise ValueError('%d names in %d bytes' % (count, len(data) - p))
        names = []
        for k in range(count):
            name, end = _string(data, p, k)
            names.append(name)
            p = end + _pad(end - 4, 4)
        names = tuple(names)
        cached = self._names.get(names)
        if cached is None:
            if len(self._names) >= MAX_NAME_LISTS:
                self._names.clear()
            cached = self._names[names] = names
        return cached, p

    def _from_message(self, data):
        msg = deserialize_message(data, JointState)
        out = Stamped()
        out.sec, out.nanosec = msg.header.stamp.sec, msg.header.stamp.nanosec
        out.frame_id = msg.header.frame_id
        out.head = header_bytes(out.sec, out.nanosec, out.frame_id)
        out.name = tuple(msg.name)
        out.position, out.velocity, out.effort = (np.array(x, dtype=np.float64) for x in
                                                  (msg.position, msg.velocity, msg.effort))
        return out


def _string(data, p, k):
    """(The string at offset ``p``, the offset after it): header.frame_id (k -1) or name[k]. Its
    trailing NUL is not part of it."""
    n, = _U32.unpack_from(data, p)
    end = p + 4 + n
    if end > len(data):
        raise ValueError('%s: a string of %d bytes past the end' % ('name[%d]' % k if k >= 0 else 'header.frame_id', n))
    raw = data[p + 4:end - 1] if n and data[end - 1] == 0 else data[p + 4:end]
    return raw.decode('utf-8'), end


def _doubles(data, p):
    """(The float64 sequence at payload-aligned offset ``p`` (its count), the offset after it)."""
    p += _pad(p - 4, 4)
    count, = _U32.unpack_from(data, p)
    p += 4
    if not count:
        return _EMPTY, p
    p += _pad(p - 4, 8)
    return np.frombuffer(data, '<f8', count, p), p + 8 * count


class JointStateWriter:
    """Serialized sensor_msgs/JointState with fixed names, only efforts (no positions, velocities).

    Args:
        names: the joints, in the order of the efforts.
    """

    def __init__(self, names):
        self.n = len(names)
        block = _U32.pack(len(names))
        for name in names:
            block += string(name)
            block += _ZEROS[:_pad(len(block), 4)]
        # After the names: position and velocity empty, the effort count. The offsets below are
        # relative to the start of this block, which is 4-aligned; the float64 alignment depends
        # on where the block starts modulo 8, so both cases are kept.
        self._tail = block + _U32.pack(0) + _U32.pack(0) + _U32.pack(self.n)

    def serialize(self, head, effort):
        """The bytes of the message with header ``head`` (:func:`header_bytes` or
        :attr:`Stamped.head`) and efforts ``effort`` ((n,) float64)."""
        start = len(head) + _pad(len(head), 4)           # payload offset of the names
        end = start + len(self._tail)
        pad = _pad(end, 8) if self.n else 0
        return b''.join((CDR_LE, head, _ZEROS[:start - len(head)], self._tail, _ZEROS[:pad],
                         effort.astype('<f8', copy=False).tobytes()))


class Float64ArrayWriter:
    """Serialized std_msgs/Float64MultiArray of n values, the layout one dimension ``label``
    (size and stride n), data_offset 0: what a forward_command_controller takes."""

    def __init__(self, n, label='joints'):
        self.n = n
        head = _U32.pack(1) + string(label)
        head += _ZEROS[:_pad(len(head), 4)]
        head += _U32.pack(n) + _U32.pack(n) + _U32.pack(0) + _U32.pack(n)
        if n:
            head += _ZEROS[:_pad(len(head), 8)]
        self._head = CDR_LE + head

    def serialize(self, values):
        """The bytes of the message with data ``values`` ((n,) float64)."""
        return self._head + values.astype('<f8', copy=False).tobytes()


class DiagnosticArrayWriter:
    """Serialized diagnostic_msgs/DiagnosticArray of one DiagnosticStatus, its values as (key, value) pairs.

        DiagnosticArray:  Header header, DiagnosticStatus[] status
        DiagnosticStatus: byte level, string name, string message, string hardware_id, KeyValue[] values
        KeyValue:         string key, string value

    A node's status has some 60 values, most of them the same every period (its parameters, its model): rclpy's
    conversion of that many KeyValue objects costs more than the values themselves. Here a value is written as
    ``str(value)``, and its KeyValue is serialized again only when that text differs from the last one of its key.
    """

    #: Keys remembered at most (a node has a fixed set of keys; more would be a key made of changing text).
    MAX_KEYS = 512

    def __init__(self):
        self._last = {}         # key -> (its last text, its KeyValue serialized and padded to 4, the padding)

    def serialize(self, stamp_ns, status, values):
        """The bytes of the array stamped ``stamp_ns`` [ns] (frame_id empty) with one status: the ``level``
        (DiagnosticStatus.OK etc., one byte), ``name``, ``message`` and ``hardware_id`` of ``status`` (a
        DiagnosticStatus, or an object with these attributes) and ``values``, (key, value) pairs in their order."""
        parts = [CDR_LE, _STAMP.pack(*divmod(stamp_ns, 1_000_000_000)), _EMPTY_FRAME_ONE_STATUS, status.level,
                 _ZEROS[:3], _padded(status.name)[0], _padded(status.message)[0], _padded(status.hardware_id)[0], None]
        last, pad, count = self._last, 0, 0
        if len(last) > self.MAX_KEYS:
            last.clear()
        for key, value in values:
            text = str(value)
            known = last.get(key)
            if known is None or known[0] != text:
                block, pad = _padded(key)
                value_block, pad = _padded(text)
                known = last[key] = (text, block + value_block, pad)
            parts.append(known[1])
            pad = known[2]
            count += 1
        parts[8] = _U32.pack(count)
        data = b''.join(parts)
        return data[:len(data) - pad] if pad else data      # as rclpy: no padding after the last field


#: header.frame_id '' (its length and NUL, padded to 4), then the count of statuses: 1.
_EMPTY_FRAME_ONE_STATUS = _U32.pack(1) + b'\x00' + _ZEROS[:3] + _U32.pack(1)


def _padded(text):
    """(:func:`string` of ``text`` padded to 4 bytes, the padding [bytes]): a string that starts 4-aligned."""
    raw = string(text)
    pad = _pad(len(raw), 4)
    return raw + _ZEROS[:pad], pad
