"""The torque loop's common joint state merged in one compiled call, from its serialized bytes.

A driver publishes the same joint names, in the same order, with the same
frame_id, a thousand times a second. When a serialized sensor_msgs/JointState
(plain CDR, little endian: robot_dynamics.ros.cdr has the layout) repeats,
byte for byte, the frame_id and the name sequence of an earlier one whose
names set every joint of the model, :func:`merge_known` takes its stamp, its
positions and its velocities into the model-order state in one call, and
says where its efforts are: what the general path (cdr.JointStateReader, then
control.joint_map.JointStateMerger.update) does in some 4 us of Python. Any
other message, and any message the general path would refuse (a length past
the end, a count that does not match the names, a non-finite value, a stamp
older than ``max_state_age``), is left to the general path, which says why;
nothing is written then.
"""
import math

import numba
import numpy as np
from numba import types

#: merge_known's status: merged; not the known layout (or not plain CDR LE, or a stamp out of bounds):
#: the general path decodes it.
MERGED, GENERAL = 0, 1
#: merge_known's ``out``: header.stamp sec, nanosec, the offset and count of the efforts.
OUT_SIZE = 4


def padding_mask(prefix):
    """The ``mask`` of :func:`merge_known` for ``prefix`` (bytes from offset 12 of a plain CDR LE JointState to the
    end of its names): 255 for each byte of a count, a length or a string (its NUL too), 0 for the padding
    after a string. Raises ValueError when ``prefix`` is not a frame_id string and a name sequence."""
    mask = bytearray(b'\xff') * len(prefix)

    def string_at(p):                       # the offset after the string at p and its padding (to 4)
        end = p + 4 + int.from_bytes(prefix[p:p + 4], 'little')
        pad = -end & 3                      # prefix offset 0 is payload offset 8: the same alignment to 4
        if end + pad > len(prefix) or p + 4 > len(prefix):
            raise ValueError('not a frame_id and names: a string past the end')
        mask[end:end + pad] = bytes(pad)
        return end + pad

    p = string_at(0)
    count = int.from_bytes(prefix[p:p + 4], 'little')
    p += 4
    for _ in range(count):
        p = string_at(p)
    if p != len(prefix):
        raise ValueError('not a frame_id and names: %d bytes for %d' % (len(prefix), p))
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
def _sequence(data, p, n, size):
    """(offset of the first value, count) of the float64 sequence whose count is at payload-aligned ``p`` (4);
    count -1 when it is neither 0 nor ``n`` or runs past the end."""
    if p + 4 > size:
        return p, -1
    count = _u32(data, p)
    p += 4
    if count == 0:
        return p, 0
    if count != n:
        return p, -1
    p += -(p - 4) & 7
    if p + 8 * n > size:
        return p, -1
    return p, n


@numba.njit([types.int64(_BYTES, _BYTES, _BYTES, types.int64, _INDEX, _INDEX, _STATE, _STATE, types.int64,
                         types.int64, _INTS)], cache=True)
def merge_known(data, prefix, mask, n, src, dst, q, qd, now_ns, max_age_ns, out):
    """Merge the serialized JointState ``data`` (its bytes, encapsulation included) if its frame_id and names are
    ``prefix`` (the bytes from offset 12, the frame_id's length, to the end of the name sequence, as a known
    message had them) where ``mask`` (as long) is 255, its alignment padding 0 (a writer need not clear it:
    rclpy's serialize_message leaves what the buffer held); ``n`` names, ``src``/``dst`` (k,): the message
    index and model index of each model joint.

    ``q``, ``qd`` (nq,) <- the positions and velocities (zero when the message has none) of the model joints;
    ``out`` (OUT_SIZE,) <- stamp sec, nanosec, the offset of the first effort in ``data`` and their count (0: none).
    With ``max_age_ns`` > 0 the stamp must be non-zero and at most that far from ``now_ns`` [ns], either way.

    Returns MERGED, or GENERAL with nothing written: not plain CDR little endian, not this prefix, a count
    that is not the names' (velocities and efforts: or none), a length past the end, a non-finite position or
    velocity of a model joint, or the stamp out of bounds.
    """
    size, m = data.shape[0], prefix.shape[0]
    if size < 12 + m or data[0] != 0 or data[1] != 1:
        return GENERAL
    if mask.shape[0] != m:
        return GENERAL
    for k in range(m):
        if (data[12 + k] ^ prefix[k]) & mask[k]:
            return GENERAL
    sec = _u32(data, 4)
    if sec >= 2 ** 31:                                   # int32 seconds
        sec -= 2 ** 32
    nanosec = _u32(data, 8)
    if max_age_ns > 0:
        stamp = sec * 1_000_000_000 + nanosec
        if stamp == 0 or abs(now_ns - stamp) > max_age_ns:
            return GENERAL
    p_pos, count = _sequence(data, 12 + m, n, size)
    if count != n:
        return GENERAL
    p_vel, n_vel = _sequence(data, p_pos + 8 * n, n, size)
    if n_vel < 0:
        return GENERAL
    p_eff, n_eff = _sequence(data, p_vel + 8 * n_vel, n, size)
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
    out[0], out[1], out[2], out[3] = sec, nanosec, p_eff, n_eff
    return MERGED
