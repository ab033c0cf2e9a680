"""dynamics_node's momentum observer, between joint-state messages and its outputs (no ROS needed).

:class:`ExternalTorqueMonitor` feeds :class:`robot_dynamics.MomentumObserver`
one sample per joint state: positions, velocities and the measured efforts
(motor torques), at the time of the message's stamp. It adds what a stream
of messages needs and the library class does not do:

- the effort of a joint state taken as the torque that acted up to it
  (``torque_at="end"``): what a driver measures, and what simulator_node
  publishes (the torque of its last physics step);
- time from integer nanosecond stamps (a float of seconds since 1970 keeps
  only 0.24 us, a quarter of a per mille of a 1 kHz interval);
- a sample whose stamp is not after the previous one is skipped (two
  drivers stamping alike, a replayed message); after a gap longer than
  ``max_gap`` the observer starts again from zero (its integral assumes
  the torque held over the gap);
- URDF friction removed from the efforts on request (the observer wants the
  torque that reaches the links);
- the collision flag as edges: :attr:`event` is True on the sample where
  some joint goes over its threshold, False where all are back under,
  else None;
- the wrench at one link that explains the external torque, in that link's
  frame at its origin (the convention of the simulator's ``~/wrench``).

Sign: the external torque is what the environment applies to the joints
(a wrench F on a link gives ``J^T F``), see :mod:`robot_dynamics.identification.observer`.
"""
import math

import numpy as np

import robot_dynamics as rd
from ..errors import InputError


class ExternalTorqueMonitor:
    """Momentum observer over a stream of joint states.

    Args:
        model: :class:`robot_dynamics.Model` (payloads included).
        gains: K_O [1/s], one number or (nq,), all > 0.
        thresholds: (nq,) collision thresholds [N m or N] on the external
            torque, or None (no collision events).
        link: name of the link whose wrench :meth:`wrench` gives, or None.
        max_gap: longest time between two samples [s] the observer integrates
            over; after a longer one it restarts (residual 0).
        friction_smoothing: None: the efforts go to the observer as they come;
            a number: the URDF friction ``friction_torques(qd, smoothing)`` is
            subtracted first.

    Attributes:
        residual: (nq,) the latest external-torque estimate [N m or N].
        in_collision: some joint over its threshold at the latest sample.
        event: True / False on the sample where ``in_collision`` became
            True / False, else None.
        samples, skipped, restarts: samples used; samples skipped (stamp not
            after the previous one, or a non-finite result); restarts after a gap.
    """

    def __init__(self, model, gains, thresholds=None, link=None, *, max_gap, friction_smoothing=None):
        self.observer = rd.MomentumObserver(model, gains, thresholds, torque_at='end')
        self.model = model
        self.link = link
        if link is not None and model.link_body[model.link_index(link)] < 0:
            raise InputError('link %r is fixed to the base: no joint torque shows a wrench on it' % link)
        if not (max_gap > 0):
            raise InputError('max_gap must be > 0 [s], got %r' % (max_gap,))
        self.max_gap_ns = int(max_gap * 1e9)
        self.smoothing = friction_smoothing
        self.thresholds = self.observer.thresholds
        self.in_collision = False
        self.event = None
        self.samples = self.skipped = self.restarts = 0
        self._t = None

    @property
    def residual(self):
        return self.observer.residual

    def reset(self):
        """Start again: the next sample gives residual 0 (a collision clears on it)."""
        self.observer.reset()
        self._t = None

    def update(self, t_ns, q, qd, tau):
        """Take one sample; True if :attr:`residual` is new.

        Args:
            t_ns: time of the sample [integer ns] (a message's stamp).
            q, qd, tau: (nq,) finite positions, velocities and motor efforts,
                model order (read, not kept).
        """
        self.event = None
        dt = 0.0
        if self._t is not None:
            gap = t_ns - self._t
            if gap <= 0:
                self.skipped += 1
                return False
            if gap > self.max_gap_ns:
                self.observer.reset()
                self.restarts += 1
            else:
                dt = gap * 1e-9
        if self.smoothing is not None:
            tau = tau - rd.friction_torques(self.model, qd, smoothing=self.smoothing)
        r = self.observer.step(q, qd, tau, dt)
        if not math.isfinite(r.sum()):
            self.reset()
            self.skipped += 1
            return False
        self._t = t_ns
        self.samples += 1
        if self.observer.collision != self.in_collision:
            self.in_collision = self.event = self.observer.collision
        return True

    def over(self):
        """Indices of the joints over their threshold at the latest sample."""
        return self.observer.joints

    def wrench(self, q):
        """(6,) ``[fx, fy, fz, nx, ny, nz]`` at :attr:`link`'s origin, in its frame [N, N m]:
        the least-squares wrench ``pinv(J^T) r`` of the latest residual, turned into link axes.

        The Jacobian and the link pose come from the library's batch kernels, which hand a
        state to numba's thread pool; for one state the calling thread does it alone here.
        Measured on the 2-core development machine, one call every millisecond: with the
        pool's 2 threads the two kernels took 0.2 ms (median) to 11 ms (p90), waking the
        sleeping pool, on the calling thread 0.04-0.06 ms.
        """
        threads = rd.get_num_threads()
        rd.set_num_threads(1)                               # the calling thread only
        try:
            w = self.observer.wrench(q, self.link)          # base axes, about the link origin
            R = rd.link_pose(self.model, q, self.link)[:3, :3]
        finally:
            rd.set_num_threads(threads)
        return np.concatenate([R.T @ w[:3], R.T @ w[3:]])


def warm_up(model):
    """Compile (or load from numba's cache) what a monitor with a wrench link calls, on ``model``."""
    link = model.link_names[-1]
    monitor = ExternalTorqueMonitor(model, 1.0, np.ones(model.nq), link, max_gap=1.0, friction_smoothing=0.01)
    q = np.full(model.nq, 0.1)
    for k in range(2):
        monitor.update(k * 1_000_000, q, q, q)
    monitor.wrench(q)
