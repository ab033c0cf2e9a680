"""Joint-name mapping between ROS messages and model order (no ROS needed).

ROS messages carry joints by name, in any order, sometimes only some of them
(a gripper published by another driver) and sometimes joints the model does
not have. The model wants ``(nq,)`` arrays in ``model.joint_names`` order.
This module does that conversion with plain numpy, so it is unit-tested
without DDS and costs a few microseconds per message:

- :class:`JointStateMerger` merges a stream of partial ``JointState``-like
  messages into one state (positions, velocities, and efforts on request)
  and says when every model joint has a known position (effort). The name -> index map of a message layout is
  built once and cached; it is rebuilt only when a new layout of names comes.
- :func:`state_from_names` converts one complete request (services) and says
  exactly what is wrong with it.
- :func:`reorder_indices` maps an output order (a controller's ``joints``
  parameter) onto model order.

Arrays from messages may be ``array.array('d')`` (what rclpy gives), lists
or numpy arrays.
"""
import math

import numpy as np

from ..algorithms.vectors import all_finite, copy_finite
from ..errors import JointMapError  # noqa: F401

# Distinct name layouts remembered per merger. A robot has a handful (arm,
# gripper, all joints); garbage input must not grow the cache without bound.
_MAX_LAYOUTS = 32
# Layouts of longer name lists are built for the message and not remembered,
# so the cache holds at most _MAX_LAYOUTS * _MAX_CACHED_NAMES names.
_MAX_CACHED_NAMES = 1024




class _Layout:
    """How one message's name list maps onto model order."""

    __slots__ = ('n', 'src', 'dst', 'identity', 'error')

    def __init__(self, names, index, nq):
        self.n = len(names)
        self.error = None
        seen = set()
        src, dst = [], []
        for k, name in enumerate(names):
            if name in seen:
                self.error = 'joint %r appears twice in the message' % (name,)
            seen.add(name)
            i = index.get(name)
            if i is not None:
                src.append(k)
                dst.append(i)
        self.src = np.array(src, dtype=np.intp)
        self.dst = np.array(dst, dtype=np.intp)
        # The common case: exactly the model's joints in model order (never with held joints, which no
        # message sets: ``index`` lacks them).
        self.identity = (nq == self.n and src == dst and len(dst) == self.n)


def _as_float_array(x):
    """Zero-copy float64 view of an array.array('d') / ndarray; copy otherwise."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x
    try:
        return np.frombuffer(x, dtype=np.float64)
    except (TypeError, ValueError):
        return np.asarray(x, dtype=np.float64)


class JointStateMerger:
    """Merge partial joint states, by name, into model-order arrays.

    Args:
        joint_names: the model's joints in q order (``model.joint_names``).

    Attributes (read them, do not replace them; they are updated in place):
        q, qd: (nq,) last known positions and velocities in model order.
        known: (nq,) bool, True for joints whose position has been received.
        ready: True once every model joint has a known position.
        updates: number of accepted messages that set at least one model
            joint (a watchdog's sign of life; rejected messages and messages
            naming no model joint do not count).
        effort: (nq,) last known efforts in model order (:meth:`update_effort`).
        efforts_ready: True once every model joint has a known effort.

    A message's velocities may be empty: the joints it names then get zero
    velocity. Names the model does not have are ignored, and so are held
    joints (:meth:`hold`).
    """

    def __init__(self, joint_names):
        self.joint_names = tuple(joint_names)
        self.nq = len(self.joint_names)
        self._index = {name: i for i, name in enumerate(self.joint_names)}
        self.held = {}                       # model index -> position held (hold())
        self.q = np.zeros(self.nq)
        self.qd = np.zeros(self.nq)
        self.known = np.zeros(self.nq, dtype=bool)
        self.ready = self.nq == 0
        self.updates = 0
        self.effort = np.zeros(self.nq)
        self.effort_known = np.zeros(self.nq, dtype=bool)
        self.efforts_ready = self.nq == 0
        self._used = None                    # layout of the last message update() accepted
        self._stream_index = self._index     # the joints messages set: all but the held ones
        self._layouts = {}
        self._last_names = None
        self._last_layout = None

    def missing(self):
        """Names of the model joints whose position has not been received yet."""
        return [n for n, k in zip(self.joint_names, self.known) if not k]

    def reset(self):
        """Forget every received value (e.g. after a timeout); held joints keep their positions."""
        self.q[:] = 0.0
        self.qd[:] = 0.0
        self.known[:] = False
        self.ready = self.nq == 0
        self.effort[:] = 0.0
        self.effort_known[:] = False
        self.efforts_ready = self.nq == 0
        self._apply_held()

    def hold(self, positions):
        """Hold joints at fixed positions, at rest, whatever the messages say of them.

        Args:
            positions: {joint name: position [rad or m]}; names the model does not have are left out.

        Returns:
            the names of ``positions`` that are not joints of the merger (sorted).

        A held joint is known from now on (and after :meth:`reset`), with zero velocity and effort; a message
        that names it does not change it. Each call replaces the held joints of the last one.
        """
        unknown = sorted(n for n in positions if n not in self._index)
        for name in positions:
            if name in self._index and not math.isfinite(positions[name]):
                raise JointMapError('held position of %s is not finite: %r' % (name, positions[name]))
        held = {self._index[n]: float(x) for n, x in positions.items() if n in self._index}
        if held == self.held:
            return unknown
        for i in self.held:                 # joints held no more: unknown until a message sets them
            if i not in held:
                self.known[i] = self.effort_known[i] = False
        self.held = held
        self._stream_index = {n: i for n, i in self._index.items() if i not in held}
        self._layouts.clear()
        self._last_names = self._last_layout = self._used = None
        self._apply_held()
        return unknown

    def _apply_held(self):
        for i, x in self.held.items():
            self.q[i], self.qd[i], self.effort[i] = x, 0.0, 0.0
            self.known[i] = self.effort_known[i] = True
        self.ready = bool(self.known.all())
        self.efforts_ready = bool(self.effort_known.all())

    def _layout(self, names):
        if names is self._last_names or names == self._last_names:
            return self._last_layout
        key = tuple(names)
        if len(key) > _MAX_CACHED_NAMES:
            return _Layout(key, self._stream_index, self.nq)
        layout = self._layouts.get(key)
        if layout is None:
            if len(self._layouts) >= _MAX_LAYOUTS:
                self._layouts.clear()
            layout = self._layouts[key] = _Layout(key, self._stream_index, self.nq)
        # A tuple (cdr.JointStateReader's, one object per list) is kept as it is; a list may change later.
        self._last_names = key if type(names) is tuple else list(key)
        self._last_layout = layout
        return layout

    def update(self, names, position, velocity=()):
        """Merge one message; returns ``self.ready``.

        Args:
            names: sequence of joint names of the message.
            position: one position per name [rad or m].
            velocity: one velocity per name, or empty (zeros).

        Raises:
            JointMapError: duplicate names, array lengths that do not match
                the names, or a non-finite value of a model joint. The merged
                state is left unchanged.
        """
        # Lengths first: free to check, while the layout of a long name list
        # costs milliseconds.
        n = len(names)
        if len(position) != n:
            raise JointMapError('position has %d values for %d names' % (len(position), n))
        nv = len(velocity)
        if nv and nv != n:
            raise JointMapError('velocity has %d values for %d names (expected %d or none)'
                                % (nv, n, n))
        layout = self._layout(names)
        if layout.error:
            raise JointMapError(layout.error)
        if layout.identity:
            p = _as_float_array(position)
            if not all_finite(p):
                raise JointMapError(_non_finite('position', names, p))
            if nv:
                v = _as_float_array(velocity)
                if not copy_finite(v, self.qd):
                    raise JointMapError(_non_finite('velocity', names, v))
            else:
                self.qd[:] = 0.0
            self.q[:] = p
            self._used = layout
            self.updates += 1
            if not self.ready:
                self.known[:] = True
                self.ready = True
            return True
        if not layout.dst.size:
            self._used = layout
            return self.ready
        p = _as_float_array(position)[layout.src]
        if not math.isfinite(p.sum()):
            raise JointMapError(_non_finite('position', [names[k] for k in layout.src], p))
        if nv:
            v = _as_float_array(velocity)[layout.src]
            if not math.isfinite(v.sum()):
                raise JointMapError(_non_finite('velocity', [names[k] for k in layout.src], v))
            self.qd[layout.dst] = v
        else:
            self.qd[layout.dst] = 0.0
        self.q[layout.dst] = p
        self._used = layout
        self.updates += 1
        if not self.ready:
            self.known[layout.dst] = True
            self.ready = bool(self.known.all())
        return self.ready

    def full_layout(self):
        """The layout of the message :meth:`update` accepted last if it set every joint (its ``n`` names, ``src`` and
        ``dst``: the message index and model index of each joint), else None: the layout a compiled merge
        (:func:`robot_dynamics.algorithms.cdr_merge.merge_known`) may write into :attr:`q` and :attr:`qd` directly,
        then call :meth:`merged`."""
        layout = self._used
        if layout is None or layout.dst.size != self.nq or self.held:
            return None
        return layout

    def merged(self, layout):
        """A message of ``layout`` (from :meth:`full_layout`) was written into :attr:`q` and :attr:`qd` (finite
        values, every joint): what :meth:`update` does besides."""
        self._used = layout
        self.updates += 1
        if not self.ready:
            self.known[:] = True
            self.ready = True

    def last_indices(self):
        """Model-order indices of the joints the message :meth:`update` accepted last set:
        ``slice(None)`` for all of them, an int array (maybe empty) for a subset."""
        layout = self._used
        if layout is None:
            return np.zeros(0, dtype=np.intp)
        return slice(None) if layout.identity else layout.dst

    def update_effort(self, effort):
        """Merge the efforts of the message :meth:`update` accepted last; returns ``efforts_ready``.

        Args:
            effort: one effort per name of that message [N m or N].

        Raises:
            JointMapError: no accepted message yet, a length that does not
                match the names, or a non-finite effort of a model joint. The
                merged efforts are left unchanged.
        """
        layout = self._used
        if layout is None:
            raise JointMapError('no joint state accepted yet')
        if len(effort) != layout.n:
            raise JointMapError('effort has %d values for %d names' % (len(effort), layout.n))
        e = _as_float_array(effort)
        if not layout.identity:
            e = e[layout.src]
        if not math.isfinite(e.sum()):
            names = self.joint_names if layout.identity else [self.joint_names[i] for i in layout.dst]
            raise JointMapError(_non_finite('effort', names, e))
        if layout.identity:
            self.effort[:] = e
        else:
            self.effort[layout.dst] = e
        if not self.efforts_ready:
            self.effort_known[layout.dst] = True
            self.efforts_ready = bool(self.effort_known.all())
        return self.efforts_ready


def _non_finite(what, names, values):
    bad = [n for n, x in zip(names, values) if not math.isfinite(x)]
    return 'non-finite %s for joint(s) %s' % (what, ', '.join(bad))


def state_from_names(joint_names, names, position, velocity=(), extra=(), *, what=('position', 'velocity')):
    """Convert one complete request into model-order arrays.

    Args:
        joint_names: the model's joints in q order.
        names: joint names of the request, any order; unknown names are ignored.
        position: one value per name; every model joint must be named.
        velocity: one value per name, or empty (zeros).
        extra: more per-name arrays (e.g. accelerations, efforts), each one
            value per name or empty (zeros).
        what: labels of position, velocity, then each extra array, for errors.

    Returns:
        list of (nq,) arrays: [q, qd, *extra] in model order.

    Raises:
        JointMapError: naming the missing joints, the array whose length is
            wrong, duplicate names or the joints with non-finite values.
    """
    names = list(names)
    n = len(names)
    if len(set(names)) != n:
        dup = sorted({x for x in names if names.count(x) > 1})
        raise JointMapError('joint(s) named twice: %s' % ', '.join(dup))
    index = {name: k for k, name in enumerate(names)}
    missing = [j for j in joint_names if j not in index]
    if missing:
        raise JointMapError('missing joint(s): %s (the model has: %s)'
                            % (', '.join(missing), ', '.join(joint_names)))
    src = np.array([index[j] for j in joint_names], dtype=np.intp)
    arrays = [position, velocity] + list(extra)
    out = []
    for k, (label, values) in enumerate(zip(what, arrays)):
        a = np.asarray(_as_float_array(values), dtype=np.float64)
        if a.size == 0 and k > 0:
            out.append(np.zeros(len(joint_names)))
            continue
        if a.shape != (n,):
            raise JointMapError('%s has %d values for %d names' % (label, a.size, n))
        a = a[src]
        if not np.all(np.isfinite(a)):
            raise JointMapError(_non_finite(label, joint_names, a))
        out.append(a)
    return out


def reorder_indices(joint_names, order, *, what='joints'):
    """Indices into model order for an output order (e.g. a controller's joints).

    Args:
        joint_names: the model's joints in q order.
        order: the names wanted, in output order; each must be a model joint,
            none twice.
        what: name of the parameter, for errors.

    Returns:
        (len(order),) int array ``idx`` with ``out = tau[idx]``.

    Raises:
        JointMapError: naming the unknown or repeated entries.
    """
    order = list(order)
    index = {name: i for i, name in enumerate(joint_names)}
    unknown = [n for n in order if n not in index]
    if unknown:
        raise JointMapError('%s entry(ies) %s not in the model (its joints: %s)'
                            % (what, ', '.join(repr(u) for u in unknown), ', '.join(joint_names)))
    dup = sorted({n for n in order if order.count(n) > 1})
    if dup:
        raise JointMapError('%s names %s more than once' % (what, ', '.join(dup)))
    return np.array([index[n] for n in order], dtype=np.intp)
