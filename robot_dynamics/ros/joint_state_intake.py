"""dynamics_node's joint states into its torque pipeline: the driver's usual message in one compiled call.

A driver sends the same joint names in every message. After a message whose names set every joint of the model
went through the general path (:class:`.cdr.JointStateReader`, then
:meth:`robot_dynamics.control.torque_loop.TorqueLoop.step`), its serialized names are known: a message that
repeats them (whatever its frame_id) is merged by
:func:`robot_dynamics.algorithms.cdr_merge.merge_known` (stamp, positions, velocities, the place of its efforts)
and goes on with :meth:`~robot_dynamics.control.torque_loop.TorqueLoop.step_merged`. Every other message, and
any the compiled merge does not take (a non-finite value, a stamp past ``max_state_age``, a count that does not
match), takes the general path, which says what is wrong: the outputs are the same either way (tests).
"""
import struct
from typing import NamedTuple

import numpy as np

from ..algorithms.cdr_merge import MERGED, OUT_SIZE, merge_known, padding_mask
from .cdr import _EMPTY, CDR_LE, JointStateReader, Stamped, _string


class KnownLayout(NamedTuple):
    """The names of a message that set every joint of ``pipeline``'s merger."""
    pipeline: object            # the TorqueLoop it was learnt with (another pipeline learns again)
    layout: object              # the merger's layout of the names (full_layout())
    block: np.ndarray           # (k,) uint8: the serialized name sequence (count, strings, padding)
    mask: np.ndarray            # (k,) uint8: 255, 0 for the padding in block (cdr_merge.padding_mask)
    names: tuple


class JointStateIntake:
    """Serialized sensor_msgs/JointState messages into a TorqueLoop (:meth:`step`).

    Attributes:
        reader: the general path's :class:`.cdr.JointStateReader`.
        compiled: the number of messages merged by the compiled call.
        merges_compiled: False: every message takes the general path (for side-by-side figures and tests).
    """

    def __init__(self):
        self.merges_compiled = True
        self.reader = JointStateReader()
        self.known = None                               # KnownLayout, or None
        self.frame = (b'', '')                          # (serialized, decoded) frame_id of the last compiled merge
        self.out = np.zeros(OUT_SIZE, dtype=np.int64)
        self.compiled = 0

    def step(self, data, pipeline, now_ns):
        """(msg, step): the :class:`.cdr.Stamped` of ``data`` (bytes) and ``pipeline``'s Step of it at node clock
        ``now_ns`` [ns]. A message merged compiled has ``position`` and ``velocity`` None (they are in the
        merger's q and qd).

        Raises:
            CdrError (or rclpy's error): ``data`` is not a JointState (the general path's reader).
        """
        known = self.known
        if known is not None and known.pipeline is pipeline and self.merges_compiled and not pipeline.merger.held:
            msg = self._merge(data, known, pipeline, now_ns)
            if msg is not None:
                return msg, pipeline.step_merged(known.layout, now_ns)
        msg = self.reader.read(data)
        step = pipeline.step(msg.name, msg.position, msg.velocity, msg.sec * 1_000_000_000 + msg.nanosec, now_ns)
        if step.fresh and self.merges_compiled and pipeline.merges_compiled:
            self._learn(data, msg, pipeline)
        return msg, step

    def _merge(self, data, known, pipeline, now_ns):
        frame = self._frame_id(data)                    # before the merge: nothing is written for a message refused
        if frame is None:
            return None
        merger, layout, out = pipeline.merger, known.layout, self.out
        if merge_known(np.frombuffer(data, np.uint8), known.block, known.mask, layout.n, layout.src, layout.dst,
                       merger.q, merger.qd, now_ns, pipeline.max_age_ns, out) != MERGED:
            return None
        msg = Stamped()
        msg.sec, msg.nanosec, head_end, p_effort, n_effort = out.tolist()
        msg.frame_id, msg.name, msg.head = frame, known.names, data[4:head_end]
        msg.position = msg.velocity = None
        msg.effort = np.frombuffer(data, '<f8', n_effort, p_effort) if n_effort else _EMPTY
        self.compiled += 1
        return msg

    def _frame_id(self, data):
        """header.frame_id of ``data`` as the general path decodes it, or None when that refuses it (not UTF-8)
        or the message is too short for its length (the compiled merge then refuses it too)."""
        raw = data[16:16 + int.from_bytes(data[12:16], 'little')]
        if raw == self.frame[0]:
            return self.frame[1]
        try:
            text, _ = _string(data, 12, -1)             # the general path's reading of a string
        except (ValueError, struct.error):              # (UnicodeDecodeError is a ValueError)
            return None
        self.frame = (raw, text)
        return text

    def _learn(self, data, msg, pipeline):
        """After the general path merged ``msg`` (of ``data``): know its names if they set every joint."""
        layout = pipeline.merger.full_layout()
        if layout is None or data[:2] != CDR_LE[:2]:
            return
        head_end = 4 + len(msg.head)
        block = data[head_end + (-head_end & 3):self.reader.names_end]      # (4-aligned in the payload, at 4)
        known = self.known
        if (known is not None and known.pipeline is pipeline and known.layout is layout
                and len(block) == len(known.block)
                and not ((np.frombuffer(block, np.uint8) ^ known.block) & known.mask).any()):
            return                                      # the same names, padding aside
        self.known = KnownLayout(pipeline, layout, np.frombuffer(block, np.uint8),
                                 np.frombuffer(padding_mask(block), np.uint8), msg.name)
