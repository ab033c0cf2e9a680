"""Recorded joint data for identification: positions, velocities, accelerations and torques.

:func:`load_joint_data` reads a recording and returns a :class:`JointData`
with ``t`` (N,) and ``q``, ``qd``, ``qdd``, ``tau`` (N, nq), columns in the
order of a model's joints (or of the names asked for, or of the file).

Formats (chosen by the path):

- rosbag2 (a bag folder with its ``metadata.yaml``, or a ``.db3`` or
  ``.mcap`` file inside one; sqlite3 and MCAP storage), read with the
  ``rosbags`` library, no ROS installation needed: every
  ``sensor_msgs/msg/JointState`` on ``topic``; ``position``, ``velocity``
  and ``effort`` are mapped by joint NAME, message by message (joints may
  come in any order, and joints not asked for, e.g. a gripper's, are
  ignored); messages that name none of the joints asked for (another
  publisher on the topic) are skipped. The time of a sample is the
  message's ``header.stamp``, or the time the bag recorded it when the
  stamp is zero.
- ``.npz``: arrays ``t`` (N,), ``q``, ``qd``, ``tau`` (N, n) (``effort`` is
  accepted for ``tau``), optionally ``qdd``, and ``joint_names`` (n,) naming
  the columns: what :meth:`JointData.save` and
  :meth:`robot_dynamics.simulation.SimulationResult.save` write.
- ``.csv``: comma-separated, lines starting with ``#`` are comments, then a
  header row naming the columns ``t``, ``q[joint]``, ``qd[joint]``,
  ``tau[joint]`` (or ``effort[joint]``) and optionally ``qdd[joint]`` for
  every joint, in any order; other columns (``energy``) are ignored; one
  row per sample, t in seconds. The same as ``robot-dynamics simulate -o
  run.csv`` writes.

Accelerations (and velocities when asked to differentiate) come from a
zero-phase filter, :class:`ZeroPhaseFilter`: a Butterworth low-pass of
order ``order`` and cutoff ``cutoff`` [Hz] applied forwards and backwards
(:func:`scipy.signal.filtfilt`: no phase lag, magnitude response squared,
so -6 dB at the cutoff), then a central difference
(:func:`numpy.gradient`) on the actual sample times. ``q``, ``qd`` and
``tau`` are returned as recorded (not filtered). A file's own ``qdd`` is
used as it is.

Sampling: the filter needs a steady rate. Sample intervals may jitter
(up to ``max_jitter`` of the median interval, default 50 %); a larger
gap or a time going backwards is refused with the time and size of the
worst interval, unless ``resample=True``, which interpolates every
signal linearly onto a uniform grid at the median interval.
"""
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from ..errors import InputError

TOPIC = "/joint_states"
JOINT_STATE = "sensor_msgs/msg/JointState"
KINDS = ("q", "qd", "qdd", "tau")


@dataclass(frozen=True)
class ZeroPhaseFilter:
    """Butterworth low-pass applied forwards and backwards, then a central difference.

    Args:
        cutoff: cutoff frequency [Hz] of the Butterworth design (filtfilt
            squares its magnitude: -6 dB there). Must be below half the
            sampling rate. Default 10 Hz: an excitation trajectory's
            harmonics are well below 2 Hz, a joint torque loop's noise above.
        order: order of the Butterworth design (the forward-backward
            filter has twice that).
    """
    cutoff: float = 10.0
    order: int = 4

    def __post_init__(self):
        if not (math.isfinite(self.cutoff) and self.cutoff > 0):
            raise InputError("filter cutoff must be a frequency > 0 [Hz], got %r" % (self.cutoff,))
        if int(self.order) != self.order or not 1 <= self.order <= 10:
            raise InputError("filter order must be an integer 1..10, got %r" % (self.order,))

    def smooth(self, t, x):
        """``x`` (N, n) low-passed without phase lag; ``t`` (N,) nearly uniform sample times [s]."""
        import scipy.signal
        dt = float(np.median(np.diff(t)))
        nyquist = 0.5 / dt
        if self.cutoff >= nyquist:
            raise InputError("filter cutoff %g Hz is not below half the sampling rate (%g Hz): lower the cutoff"
                             % (self.cutoff, nyquist))
        b, a = scipy.signal.butter(int(self.order), self.cutoff / nyquist)
        minimum = 3 * max(len(a), len(b))
        if x.shape[0] <= minimum:
            raise InputError("%d samples are too few for the order-%d filter (need more than %d)"
                             % (x.shape[0], self.order, minimum))
        # odd extension at both ends over about three time constants of the filter (1 / cutoff each),
        # so that the start-up transients fall outside the data and linear trends pass unchanged
        padlen = min(x.shape[0] - 1, max(minimum, int(round(3.0 / (self.cutoff * dt)))))
        return scipy.signal.filtfilt(b, a, x, axis=0, padtype="odd", padlen=padlen)

    def derivative(self, t, x):
        """d/dt of the smoothed ``x``: central differences on ``t`` (one-sided at the ends)."""
        return np.gradient(self.smooth(t, x), t, axis=0)

    def __str__(self):
        return "Butterworth order %d, cutoff %g Hz, forward-backward (filtfilt), central difference" % (
            self.order, self.cutoff)


@dataclass(frozen=True)
class JointData:
    """Samples of a recording, in one joint order.

    Fields:
        t: (N,) sample times [s] from the first sample's (0 at the start).
        q, qd, qdd, tau: (N, nq) positions [rad | m], velocities, accelerations
            and motor torques [N m | N], columns in ``joint_names`` order.
        joint_names: names of the columns.
        source: the file read.
        derived: which of ``"qd"``, ``"qdd"`` were computed by ``filter``
            (not in the file).
        filter: the :class:`ZeroPhaseFilter` used (None if nothing derived).
        resampled: True when the samples were interpolated onto a uniform grid.
        skipped: number of messages skipped (a bag's messages naming none of the joints).
    """
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    joint_names: Tuple[str, ...]
    source: str = ""
    derived: Tuple[str, ...] = ()
    filter: Optional[ZeroPhaseFilter] = None
    resampled: bool = False
    skipped: int = field(default=0, repr=False)

    def __len__(self):
        return self.t.shape[0]

    @property
    def rate(self):
        """Mean sampling rate [Hz]."""
        return (len(self) - 1) / (self.t[-1] - self.t[0]) if len(self) > 1 else float("nan")

    def save(self, path):
        """Write the data as ``.npz`` or ``.csv`` in the format :func:`load_joint_data` reads."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext == ".npz":
            np.savez(path, t=self.t, q=self.q, qd=self.qd, qdd=self.qdd, tau=self.tau,
                     joint_names=np.array(self.joint_names))
        elif ext == ".csv":
            cols = ["t"] + ["%s[%s]" % (k, n) for k in KINDS for n in self.joint_names]
            table = np.column_stack([self.t, self.q, self.qd, self.qdd, self.tau])
            np.savetxt(path, table, delimiter=",", fmt="%.17g", comments="",
                       header="# robot_dynamics joint data\n" + ",".join(cols))
        else:
            raise InputError("joint data path must end in .npz or .csv, got %r" % path)


def load_joint_data(path, *, joints=None, topic=TOPIC, filter=None, velocities="measured", resample=False,
                    max_jitter=0.5, progress=None):
    """Read recorded joint data (rosbag2, .npz or .csv; see the module text).

    Args:
        path: a rosbag2 folder (or a ``.db3`` / ``.mcap`` file in it), a
            ``.npz`` or a ``.csv`` file.
        joints: a :class:`~robot_dynamics.Model` (columns in
            ``model.joint_names`` order), a sequence of joint names, or None
            (every joint of the file, in the file's order: the first message's
            for a bag).
        topic: the bag topic of the ``sensor_msgs/msg/JointState`` messages.
        filter: the :class:`ZeroPhaseFilter` for derivatives (default
            ``ZeroPhaseFilter()``: order 4, 10 Hz).
        velocities: ``"measured"`` (the recording must hold velocities) or
            ``"differentiate"`` (velocities from the filtered positions, e.g.
            for a recording without them; the recorded ones are then ignored).
        resample: interpolate irregular samples onto a uniform grid instead of
            refusing them.
        max_jitter: largest accepted deviation of a sample interval from the
            median interval, as a fraction of it.
        progress: show reading progress on stderr (default: when stderr is a
            terminal and the bag holds more than 20000 messages).

    Returns:
        :class:`JointData`.

    Raises:
        InputError: a missing file, topic, joint, velocity or effort (named),
            a malformed message, irregular sampling; FileNotFoundError for a
            path that does not exist.
    """
    if velocities not in ("measured", "differentiate"):
        raise InputError("velocities must be 'measured' or 'differentiate', got %r" % (velocities,))
    filt = ZeroPhaseFilter() if filter is None else filter
    if not isinstance(filt, ZeroPhaseFilter):
        raise InputError("filter must be a ZeroPhaseFilter, got %r" % (filter,))
    names = _requested(joints)
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError("no such file or folder: %s" % path)
    ext = path.suffix.lower()
    skipped = 0
    if ext == ".npz":
        raw, file_names = _read_npz(path)
    elif ext == ".csv":
        raw, file_names = _read_csv(path)
    elif path.is_dir() or ext in (".db3", ".mcap"):
        raw, file_names, skipped = _read_bag(path, names, topic, progress)
    else:
        raise InputError("%s: expected a rosbag2 folder, a .db3 or .mcap file, a .npz or a .csv file" % path)
    # columns in the order asked for
    if names is None:
        names = file_names
    missing = [n for n in names if n not in file_names]
    if missing:
        raise InputError("%s has no joint %s; it has: %s" % (path, ", ".join(repr(n) for n in missing),
                                                              ", ".join(file_names)))
    cols = [file_names.index(n) for n in names]
    out = {k: (None if v is None else np.asarray(v, dtype=float)[:, cols]) for k, v in raw.items() if k in KINDS}
    t = np.asarray(raw["t"], dtype=float)
    what = "%s (%s)" % (path, topic) if raw.get("bag") else str(path)
    _require(out, "tau", "efforts", what, names, "record the joint efforts (torques)")
    if velocities == "measured":
        _require(out, "qd", "velocities", what, names, "record them, or pass velocities='differentiate' "
                                                      "(robot-dynamics identify --differentiate) to differentiate "
                                                      "the positions")
    if t.ndim != 1 or t.shape[0] < 2:
        raise InputError("%s: expected at least 2 samples, got %d" % (what, t.size))
    for k in ("q", "qd", "qdd", "tau"):
        if out.get(k) is not None and not np.all(np.isfinite(out[k])):
            i, j = np.argwhere(~np.isfinite(out[k]))[0]
            raise InputError("%s: %s of %r is %r at t = %.6g s: inputs must be finite"
                             % (what, k, names[j], out[k][i, j], t[i]))
    t, out, resampled = _regular(t, out, what, resample, max_jitter)
    derived = []
    if velocities == "differentiate":
        out["qd"] = filt.derivative(t, out["q"])
        derived.append("qd")
    if out.get("qdd") is None:
        out["qdd"] = filt.derivative(t, out["qd"])
        derived.append("qdd")
    return JointData(t=t - t[0], q=out["q"], qd=out["qd"], qdd=out["qdd"], tau=out["tau"], joint_names=tuple(names),
                     source=str(path), derived=tuple(derived), filter=filt if derived else None,
                     resampled=resampled, skipped=skipped)


def _requested(joints):
    if joints is None:
        return None
    if hasattr(joints, "joint_names"):
        return list(joints.joint_names)
    if isinstance(joints, str):
        joints = [joints]
    names = [str(n) for n in joints]
    if not names or len(set(names)) != len(names):
        raise InputError("joints must be distinct joint names, got %r" % (joints,))
    return names


def _require(out, key, what_plural, where, names, hint):
    if out.get(key) is None:
        raise InputError("%s has no joint %s for %s: %s" % (where, what_plural, ", ".join(names), hint))


def _regular(t, out, what, resample, max_jitter):
    """(t, signals, resampled): check the sampling, or interpolate onto a uniform grid."""
    d = np.diff(t)
    if np.all(d > 0):
        dt = float(np.median(d))
        dev = np.abs(d - dt)
        k = int(np.argmax(dev))
        if dev[k] <= max_jitter * dt:
            return t, out, False
        problem = "the interval at t = %.6g s is %.6g s, the median %.6g s (more than %g %% off)" % (
            t[k] - t[0], d[k], dt, 100 * max_jitter)
    else:
        k = int(np.argmin(d))
        problem = "time does not increase at t = %.6g s (interval %.6g s)" % (t[k] - t[0], d[k])
    if not resample:
        raise InputError("%s: irregular sampling: %s; pass resample=True (robot-dynamics identify --resample) "
                         "to interpolate onto a uniform grid" % (what, problem))
    order = np.argsort(t, kind="stable")
    t, keep = np.unique(t[order], return_index=True)
    if t.size < 2:
        raise InputError("%s: all samples have the same time" % what)
    dt = float(np.median(np.diff(t)))
    grid = t[0] + dt * np.arange(int(np.floor((t[-1] - t[0]) / dt + 1e-9)) + 1)
    res = {}
    for k, v in out.items():
        if v is None:
            res[k] = None
            continue
        v = v[order][keep]
        res[k] = np.column_stack([np.interp(grid, t, v[:, j]) for j in range(v.shape[1])])
    return grid, res, True


# --- formats -------------------------------------------------------------------------------------

def _read_npz(path):
    with np.load(path, allow_pickle=False) as f:
        keys = set(f.files)
        if "joint_names" not in keys or "t" not in keys or "q" not in keys:
            raise InputError("%s: expected arrays t, q, qd, tau and joint_names, found %s" % (path, sorted(keys)))
        names = [str(n) for n in f["joint_names"].tolist()]
        raw = {"t": f["t"]}
        for k, alts in (("q", ("q",)), ("qd", ("qd",)), ("qdd", ("qdd",)), ("tau", ("tau", "effort"))):
            key = next((a for a in alts if a in keys), None)
            raw[k] = None if key is None else np.atleast_2d(f[key].astype(float))
    n = len(raw["t"])
    for k in KINDS:
        if raw[k] is not None and raw[k].shape != (n, len(names)):
            raise InputError("%s: %s has shape %s, expected (%d, %d) for %d samples of %s"
                             % (path, k, raw[k].shape, n, len(names), n, ", ".join(names)))
    return raw, names


def _read_csv(path):
    with open(path) as f:
        header = None
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                header = [c.strip() for c in line.strip().split(",")]
                break
        if header is None:
            raise InputError("%s: no header row (t, q[joint], qd[joint], tau[joint], ...)" % path)
        table = np.loadtxt(f, delimiter=",", ndmin=2, comments="#")
    if "t" not in header:
        raise InputError("%s: no column 't' in the header row %s" % (path, ",".join(header)))
    if table.size == 0:
        raise InputError("%s: no samples after the header row" % path)
    if table.shape[1] != len(header):
        raise InputError("%s: %d columns in the header, %d in the rows" % (path, len(header), table.shape[1]))
    cols = {}
    for i, c in enumerate(header):
        if c.endswith("]") and "[" in c:
            kind, _, name = c[:-1].partition("[")
            kind = "tau" if kind == "effort" else kind
            if kind in KINDS:
                cols.setdefault(kind, {})[name] = i
    names = list(cols.get("q", {}))
    if not names:
        raise InputError("%s: no q[joint] columns in the header row" % path)
    raw = {"t": table[:, header.index("t")]}
    for k in KINDS:
        have = cols.get(k, {})
        if not have:
            raw[k] = None
            continue
        lost = [n for n in names if n not in have]
        if lost:
            raise InputError("%s: no %s column for %s" % (path, k, ", ".join("%s[%s]" % (k, n) for n in lost)))
        raw[k] = table[:, [have[n] for n in names]]
    return raw, names


def _bag_folder(path):
    folder = path if path.is_dir() else path.parent
    if not (folder / "metadata.yaml").exists():
        raise InputError("%s: not a rosbag2 bag (no metadata.yaml in %s)" % (path, folder))
    return folder


def _read_bag(path, names, topic, progress):
    """(raw, joint names, skipped) of every JointState on ``topic``, mapped by name."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    folder = _bag_folder(path)
    store = get_typestore(Stores.ROS2_JAZZY)
    with Reader(folder) as reader:
        conns = [c for c in reader.connections if c.topic == topic]
        if not conns:
            topics = sorted({"%s (%s)" % (c.topic, c.msgtype) for c in reader.connections})
            raise InputError("%s has no topic %r; its topics: %s" % (folder, topic, ", ".join(topics) or "none"))
        wrong = [c.msgtype for c in conns if c.msgtype != JOINT_STATE]
        if wrong:
            raise InputError("%s: topic %r carries %s, expected %s" % (folder, topic, wrong[0], JOINT_STATE))
        total = sum(c.msgcount for c in conns)
        if total == 0:
            raise InputError("%s: topic %r has no messages" % (folder, topic))
        show = (sys.stderr.isatty() and total > 20000) if progress is None else bool(progress)
        bar = _Progress(total, "reading %s" % topic) if show else None
        t, rows, skipped = [], {k: [] for k in ("q", "qd", "tau")}, 0
        has = {"qd": True, "tau": True}
        index_of = {}                       # names tuple -> (columns in the message for each joint) or None
        try:
            for n, (conn, stamp, raw) in enumerate(reader.messages(connections=conns)):
                msg = store.deserialize_cdr(raw, conn.msgtype)
                key = tuple(msg.name)
                if names is None:
                    names = list(key)
                idx = index_of.get(key)
                if idx is None:
                    idx = index_of[key] = _columns(key, names, folder, topic)
                if idx is False:
                    skipped += 1
                    continue
                rows["q"].append(_field(msg.position, idx, key, "position", folder, stamp))
                for k, fld in (("qd", "velocity"), ("tau", "effort")):
                    values = getattr(msg, fld)
                    if len(values) == 0:
                        has[k] = False
                    elif has[k]:
                        rows[k].append(_field(values, idx, key, fld, folder, stamp))
                s = msg.header.stamp
                t.append(s.sec * 10 ** 9 + s.nanosec if (s.sec or s.nanosec) else stamp)     # integer ns
                if bar is not None:
                    bar.update(n + 1)
        finally:
            if bar is not None:
                bar.close()
    if not t:
        raise InputError("%s: no JointState on %r names any of %s" % (folder, topic, ", ".join(names)))
    ns = np.array(t, dtype=np.int64)
    # seconds from the first sample, from integer nanoseconds: a float of epoch seconds keeps only ~0.2 us
    raw = {"t": (ns - ns[0]) * 1e-9, "q": np.array(rows["q"]), "qdd": None, "bag": True}
    for k in ("qd", "tau"):
        raw[k] = np.array(rows[k]) if has[k] else None
    return raw, list(names), skipped


def _columns(key, names, folder, topic):
    """Index in a message with joint names ``key`` of each joint of ``names``; False when it names
    none of them (a message of another publisher); InputError when it names some but not all."""
    where = {n: i for i, n in enumerate(key)}
    idx = [where.get(n) for n in names]
    if all(i is None for i in idx):
        return False
    lost = [n for n, i in zip(names, idx) if i is None]
    if lost:
        raise InputError("%s: a JointState on %r has no joint %s; it names: %s"
                         % (folder, topic, ", ".join(repr(n) for n in lost), ", ".join(key)))
    return np.array(idx)


def _field(values, idx, key, what, folder, stamp):
    values = np.asarray(values, dtype=float)
    if values.shape[0] != len(key):
        raise InputError("%s: a JointState (bag time %d ns) has %d names but %d %s values"
                         % (folder, stamp, len(key), values.shape[0], what))
    return values[idx]


class _Progress:
    """One line on stderr: label, bar, percentage; redrawn at most every 0.2 s."""

    def __init__(self, total, label, width=30):
        self.total, self.label, self.width = max(int(total), 1), label, width
        self._last = 0.0

    def update(self, done, text=""):
        now = time.perf_counter()
        if now - self._last < 0.2 and done < self.total:
            return
        self._last = now
        frac = min(done / self.total, 1.0)
        fill = int(round(frac * self.width))
        sys.stderr.write("\r%s [%s%s] %3d%% %s" % (self.label, "#" * fill, "." * (self.width - fill),
                                                    int(100 * frac), text))
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")
        sys.stderr.flush()
