"""Payload identification from joint-state samples, for dynamics_node's ``~/identify_payload`` (no ROS needed).

The node collects samples (time, q, qd, motor effort, model order) or gets
them in the request; :func:`fit_payload` turns them into what
:func:`robot_dynamics.identify_payload` needs:

- static poses (``static=True``): only the samples at rest, every joint
  slower than ``rest_velocity``, with qd = qdd = 0 (gravity alone: mass and
  centre of mass);
- motion (``static=False``): the samples in time order onto a uniform grid
  at their median interval (linear interpolation: a dropped message leaves a
  gap), accelerations from the velocities by
  :class:`robot_dynamics.identification.data.ZeroPhaseFilter` (Butterworth
  low-pass forwards and backwards, then central differences), as
  ``robot-dynamics identify`` does for a recording.
"""
import numpy as np

import robot_dynamics as rd
from ..errors import InputError
from ..identification.data import ZeroPhaseFilter
from .joint_map import state_from_names

#: Fewest samples a fit takes (a static fit needs 4 parameters from poses, a dynamic one 10 and a filter).
MIN_SAMPLES = 3


def parallel_is_exclusive():
    """True when numba's threading layer may not be entered by two threads at once: its
    workqueue layer (the fallback when neither TBB nor OpenMP is installed) aborts the
    process then. A fit thread must then be the only one to run the batch kernels."""
    import numba
    try:
        return numba.threading_layer() == 'workqueue'
    except ValueError:                      # no parallel kernel has run yet
        return False


def samples_from_messages(joint_names, messages):
    """(t [s] (N,), q, qd, tau (N, nq)) of sensor_msgs/JointState-like messages, model order.

    Raises:
        InputError, JointMapError (ValueErrors): naming the message and what is wrong with it.
    """
    n = len(messages)
    t = np.empty(n)
    q, qd, tau = (np.empty((n, len(joint_names))) for _ in range(3))
    for k, msg in enumerate(messages):
        if len(msg.effort) == 0:
            raise InputError('samples[%d] has no efforts: the fit needs the motor torque of every joint' % k)
        try:
            q[k], qd[k], tau[k] = state_from_names(joint_names, msg.name, msg.position, msg.velocity,
                                                   [msg.effort], what=('position', 'velocity', 'effort'))
        except ValueError as exc:
            raise type(exc)('samples[%d]: %s' % (k, exc)) from None
        t[k] = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
    return t, q, qd, tau


def fit_payload(model, link, t, q, qd, tau, *, static, rest_velocity):
    """:class:`robot_dynamics.identification.payload.PayloadEstimate` of samples (see the module text).

    Args:
        model: the model without the payload on ``link``.
        link: link name.
        t: (N,) sample times [s]; q, qd, tau: (N, nq) in model order.
        static: fit mass and centre of mass from the samples at rest.
        rest_velocity: largest |qd| [rad/s or m/s] of a sample at rest.

    Returns:
        (estimate, number of samples used).

    Raises:
        InputError: too few (resting) samples, irregular or too slow sampling
            for the filter, or data that do not determine the payload.
    """
    n = len(t)
    if static:
        rest = np.all(np.abs(qd) <= rest_velocity, axis=1)
        if rest.sum() < MIN_SAMPLES:
            raise InputError('%d of %d samples are at rest (every joint slower than %g rad/s): need %d or '
                             'more, at poses that tilt the link differently'
                             % (rest.sum(), n, rest_velocity, MIN_SAMPLES))
        zero = np.zeros_like(q[rest])
        return rd.identify_payload(model, q[rest], zero, zero, tau[rest], link, static=True), int(rest.sum())
    t, (q, qd, tau) = uniform(t, (q, qd, tau))
    qdd = ZeroPhaseFilter().derivative(t, qd)
    return rd.identify_payload(model, q, qd, qdd, tau, link, static=False), len(t)


def uniform(t, signals):
    """(t, signals) on a uniform grid at the median interval of the sorted, distinct times ``t``."""
    order = np.argsort(t, kind='stable')
    t, keep = np.unique(np.asarray(t)[order], return_index=True)
    if t.size < MIN_SAMPLES:
        raise InputError('%d samples with distinct stamps: need %d or more, stamped at a steady rate'
                         % (t.size, MIN_SAMPLES))
    dt = float(np.median(np.diff(t)))
    grid = t[0] + dt * np.arange(int(np.floor((t[-1] - t[0]) / dt + 1e-9)) + 1)
    out = []
    for x in signals:
        x = x[order][keep]
        out.append(np.column_stack([np.interp(grid, t, x[:, j]) for j in range(x.shape[1])]))
    return grid, out


def payload_entry(estimate):
    """(mass, com (3,), inertia (3, 3)) of an estimate, as :meth:`PayloadEstimate.apply` sets it
    (mass at least 0, inertia symmetrised, a point mass in static mode)."""
    inertia = np.zeros((3, 3)) if estimate.inertia is None else 0.5 * (estimate.inertia + estimate.inertia.T)
    return max(estimate.mass, 0.0), np.array(estimate.com, dtype=float), inertia


class SampleBuffer:
    """Joint-state samples collected in the node's thread: ``add`` costs one small copy."""

    def __init__(self):
        self._t = []
        self._x = []

    def __len__(self):
        return len(self._t)

    def add(self, t_ns, q, qd, tau):
        """One sample: time [integer ns], (nq,) q, qd, tau in model order (copied)."""
        self._t.append(t_ns)
        self._x.append(np.concatenate((q, qd, tau)))

    def arrays(self):
        """(t [s] from the first sample (N,), q, qd, tau (N, nq))."""
        if not self._t:
            return np.empty(0), np.empty((0, 0)), np.empty((0, 0)), np.empty((0, 0))
        t = (np.array(self._t, dtype=np.int64) - self._t[0]) * 1e-9
        X = np.array(self._x)
        n = X.shape[1] // 3
        return t, X[:, :n], X[:, n:2 * n], X[:, 2 * n:]


class PayloadJob:
    """One payload fit in a thread of its own, so that the node's thread keeps computing torques.

    Args:
        model: the model without the payload on ``link``.
        link: link name.
        static, rest_velocity: as for :func:`fit_payload`.

    After :meth:`start`, ``done`` (a threading.Event) is set when
    ``estimate`` and ``used`` (or ``error``, a text) are there. While it runs,
    the caller's thread must not run the library's batch kernels if
    :func:`parallel_is_exclusive` (dynamics_node skips its wrench then).
    """

    def __init__(self, model, link, *, static, rest_velocity):
        import threading
        self.model, self.link, self.static, self.rest_velocity = model, link, static, rest_velocity
        self.estimate = self.used = self.error = None
        self.done = threading.Event()
        self._thread = None

    def start(self, samples=None, messages=None):
        """Fit ``samples`` (t, q, qd, tau) or sensor_msgs/JointState ``messages`` in a daemon thread."""
        import threading
        self._thread = threading.Thread(target=self._run, args=(samples, messages), daemon=True,
                                        name='identify_payload')
        self._thread.start()

    def _run(self, samples, messages):
        try:
            if messages is not None:
                samples = samples_from_messages(self.model.joint_names, messages)
            self.estimate, self.used = fit_payload(self.model, self.link, *samples, static=self.static,
                                                   rest_velocity=self.rest_velocity)
        except ValueError as exc:
            self.error = str(exc)
        except Exception as exc:                 # a bug must answer the client, not leave it waiting
            self.error = 'identification failed: %s: %s' % (type(exc).__name__, exc)
        finally:
            self.done.set()
