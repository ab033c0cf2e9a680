"""The torque loop's common joint state merged in one compiled call, from its serialized bytes.

A driver publishes the same joint names, in the same order, a thousand times
a second. When a serialized sensor_msgs/JointState (plain CDR, little endian:
robot_dynamics.ros.cdr has the layout) repeats, byte for byte, the name
sequence of an earlier one whose names set every joint of the model,
:func:`merge_known` takes its stamp, its positions and its velocities into
the model-order state in one call, and says where its header ends and where
its efforts are: what the general path (cdr.JointStateReader, then
control.joint_map.JointStateMerger.update) does in some 4 us of Python. Any
other message, and any message the general path would refuse (a length past
the end, a count that does not match the names, a non-finite value, a stamp
older than ``max_state_age``), is left to the general path, which says why;
nothing is written then. The frame_id may change from one message to the
next (it is not compared; the caller checks that it is UTF-8, as the general
path does).
"""
import math

import numba
import numpy as np
from numba import types

#: merge_known's status: merged; not the known layout (or not plain CDR LE, or a stamp out of bounds):
#: the general path decodes it.
MERGED, GENERAL = 0, 1
#: merge_known's ``out``: header.stamp sec, nanosec, the offset after the header (its frame_id), the offset and
#: count of the efforts.
OUT_SIZE = 5


def padding_mask(names):
    """The ``mask`` of :func:`merge_known` for ``names`` (a serialized name sequence, from its count to the end of
    its last string's padding, as it lies 4-aligned in a message): 255 for each byte of the count, a length or a
    string (its NUL too), 0 for the padding after a string. Raises ValueError when ``names`` is not that."""
    mask = bytearray(b'\xff') * len(names)
    count, p = int.from_bytes(names[0:4], 'little'), 4
    for _ in range(count):
        if p + 4 > len(names):
            raise ValueError('not a name sequence: a string past the end')
        end = p + 4 + int.from_bytes(names[p:p + 4], 'little')
        pad = -end & 3
        if end + pad > len(names):
            raise ValueError('not a name sequence: a string past the end')
        mask[end:end + pad] = bytes(pad)
        p = end + pad
    if p != len(names):
        raise ValueError('not a name sequence: %d bytes for %d' % (len(names), p))
    return bytes(mask)

_BYTES = types.Array(types.uint8, 1, 'C', readonly=True)
_INDEX = types.Array(types.intp, 1, 'C')
_STATE = types.Array(types.float64, 1, 'C')
_INTS = types.Array(types.int64, 1, 'C')


@numba.njit(cache=True)
def _u32(data, p):
    return (np.int64(data[p]) | (np.int64(data[p + 1]) << 8) | (np.int64(data[p + 2]) << 16)
            | (np.int64(data[p + 3]) << 24))


@numba.njit(cache=True)
def _f64(data, p):
    return data[p:p + 8].view(np.float64)[0]


@numba.njit(cache=True)
def _sequence(data, p, size):
    """(offset of the first value, count) of the float64 sequence whose count is at payload-aligned ``p`` (4);
    count -1 when it runs past the end."""
    if p + 4 > size:
        return p, -1
    count = _u32(data, p)
    p += 4
    if count == 0:
        return p, 0
    p += -(p - 4) & 7
    if p + 8 * count > size:
        return p, -1
    return p, count


@numba.njit([types.int64(_BYTES, _BYTES, _BYTES, types.int64, _INDEX, _INDEX, _STATE, _STATE, types.int64,
                         types.int64, _INTS)], cache=True)
def merge_known(data, names, mask, n, src, dst, q, qd, now_ns, max_age_ns, out):
    """Merge the serialized JointState ``data`` (its bytes, encapsulation included) if its name sequence is
    ``names`` (from its count to the end of the last string's padding, as a known message had it) where
    ``mask`` (as long) is 255, its alignment padding 0 (a writer need not clear it: rclpy's serialize_message
    leaves what the buffer held); ``n`` names, ``src``/``dst`` (k,): the message index and model index of
    each model joint.

    ``q``, ``qd`` (nq,) <- the positions and velocities (zero when the message has none) of the model joints;
    ``out`` (OUT_SIZE,) <- stamp sec, nanosec, the offset after the header (the end of the frame_id string),
    the offset of the first effort in ``data`` and their count (any: the caller checks it).
    With ``max_age_ns`` > 0 the stamp must be non-zero and at most that far from ``now_ns`` [ns], either way.

    Returns MERGED, or GENERAL with nothing written: not plain CDR little endian, not these names, a count
    that is not the names' (positions; velocities: or none), a length past the end, a non-finite position or
    velocity of a model joint, or the stamp out of bounds.
    """
    size, m = data.shape[0], names.shape[0]
    if size < 16 or data[0] != 0 or data[1] != 1 or mask.shape[0] != m:
        return GENERAL
    head_end = 16 + _u32(data, 12)                       # after the frame_id string
    p = head_end + (-(head_end - 4) & 3)
    if p + m > size:
        return GENERAL
    for k in range(m):
        if (data[p + k] ^ names[k]) & mask[k]:
            return GENERAL
    sec = _u32(data, 4)
    if sec >= 2 ** 31:                                   # int32 seconds
        sec -= 2 ** 32
    nanosec = _u32(data, 8)
    if max_age_ns > 0:
        stamp = sec * 1_000_000_000 + nanosec
        if stamp == 0 or abs(now_ns - stamp) > max_age_ns:
            return GENERAL
    p_pos, count = _sequence(data, p + m, size)
    if count != n:
        return GENERAL
    p_vel, n_vel = _sequence(data, p_pos + 8 * n, size)
    if n_vel != 0 and n_vel != n:
        return GENERAL
    p_eff, n_eff = _sequence(data, p_vel + 8 * n_vel, size)
    if n_eff < 0:
        return GENERAL
    for k in range(src.shape[0]):
        if not math.isfinite(_f64(data, p_pos + 8 * src[k])):
            return GENERAL
        if n_vel and not math.isfinite(_f64(data, p_vel + 8 * src[k])):
            return GENERAL
    for k in range(src.shape[0]):
        q[dst[k]] = _f64(data, p_pos + 8 * src[k])
        qd[dst[k]] = _f64(data, p_vel + 8 * src[k]) if n_vel else 0.0
    out[0], out[1], out[2], out[3], out[4] = sec, nanosec, head_end, p_eff, n_eff
    return MERGED
