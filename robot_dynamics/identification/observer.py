"""Generalised-momentum observer of external joint torques and collisions.

With the generalised momentum ``p = M(q) qd``, the equations of motion
``M qdd + C qd + g = tau + tau_ext`` give ``pdot = tau + C^T qd - g +
tau_ext`` (``Mdot = C + C^T``). The residual

    r(t) = K_O [p(t) - p(0) - int_0^t (tau + C^T qd - g + r) ds]

obeys ``rdot = K_O (tau_ext - r)``: each component is a first-order
low-pass filter of the external torque with time constant ``1 / K_O,j``,
and needs no joint acceleration (De Luca and Mattone, *Sensorless robot
collision detection and hybrid force/motion control*, ICRA 2005;
Haddadin, De Luca and Albu-Schaeffer, *Robot collisions: a survey on
detection, isolation, and identification*, IEEE T-RO 2017, the
momentum-observer section).

Sampled form used here: over the interval from sample k-1 to k the
momentum changes by ``M_{k-1} (qd_k - qd_{k-1}) + (M_k - M_{k-1}) qd_k``;
the first part is ``int M qdd = int (tau - h + tau_ext)`` (h = C qd + g,
values at the start of the interval, the torque a sampled controller
held), the second is ``int Mdot qd``. So

    r_k = K_O [sum_i M_{i-1} (qd_i - qd_{i-1}) - sum_i (tau_{i-1} - h_{i-1} + r_{i-1}) dt_i]

which is the residual above with ``C^T qd - g = Mdot qd - h`` and the
momentum integrated along the samples: only M and h are needed (no
Coriolis matrix), and data from a semi-implicit Euler step are matched
exactly up to the filter lag.

That sum is Euler's step of the filter, ``r_k = r_{k-1} + K_O dt_k
(tau_ext,k - r_{k-1})`` with ``tau_ext,k = M_{k-1} (qd_k - qd_{k-1}) /
dt_k - (tau - h)_{k-1}`` the interval's mean external torque; it turns
unstable once ``K_O dt_k > 2`` (a late sample: at K_O = 50 1/s, 150 ms
multiplies r by -6.5). The filter is taken exactly instead, for an input
held over the interval:

    r_k = exp(-K_O dt_k) r_{k-1} + (1 - exp(-K_O dt_k)) tau_ext,k

the same to first order in ``K_O dt`` (at 1 kHz and K_O = 50 1/s the
step's weight is 0.04877 for Euler's 0.05), and for any gap a weighted
mean of the previous estimate and the interval's torque.

Which torque acted over the interval depends on where the samples come
from: ``torque_at="start"`` (the default) takes the torque given with
sample k-1, the command a sampled controller held from it on;
``torque_at="end"`` takes the torque given with sample k, a torque
reported as what acted up to that sample (a measured joint torque, or a
simulator's effort of its last step: robot_dynamics' simulator_node). The
wrong choice shifts the torque by one sample: the residual is then off by
the torque's change over one sample, low-passed by the observer's filter.

Sign: ``tau_ext`` is the joint torque the environment applies (a wrench
F on a link gives ``tau_ext = J^T F``), so the motors see ``tau = M qdd
+ C qd + g - tau_ext``, as :func:`~robot_dynamics.rnea` with ``f_ext``.
"""
import math

import numpy as np

from .. import checks
from ..algorithms.crba import mass_matrix
from ..algorithms.task_space import jacobian
from ..algorithms.rnea import nonlinear_effects
from ..errors import InputError
from ..algorithms.floating import require_fixed


class MomentumObserver:
    """External joint torques from measured q, qd and motor torque, without qdd.

    Args:
        model: the :class:`~robot_dynamics.Model` of the arm (payload included).
        gains: K_O [1/s], a number or (nq,) per joint; the residual follows
            the external torque with time constant 1 / K_O (larger: faster
            and noisier).
        thresholds: optional (nq,) collision thresholds [N m or N] on |r|;
            default: infinite (no collision flag).
        torque_at: ``"start"``: the torque of a sample acted from it to the
            next (a controller's held command); ``"end"``: it acted from
            the previous sample up to it (a measured or applied torque).

    Attributes:
        residual: (nq,) the latest estimate of the external joint torque.
        collision: True when some ``|residual_j| > thresholds_j``.
        joints: indices of the joints over threshold at the last update.
        time: seconds integrated since the first update (or :meth:`reset`).
    """

    def __init__(self, model, gains, thresholds=None, *, torque_at="start"):
        require_fixed(model, "MomentumObserver")
        if torque_at not in ("start", "end"):
            raise InputError("torque_at must be 'start' or 'end', got %r" % (torque_at,))
        self.torque_at = torque_at
        self.model = model
        nq = model.nq
        K = np.broadcast_to(np.asarray(gains, dtype=float), (nq,)).copy()
        if not np.all(np.isfinite(K)) or np.any(K <= 0):
            raise InputError("gains must be positive finite numbers [1/s], one or %d, got %r" % (nq, gains))
        self.gains = K
        self._gain = float(K[0]) if np.all(K == K[0]) else None      # one gain: its weight is one exp()
        th = np.full(nq, np.inf) if thresholds is None else \
            np.broadcast_to(np.asarray(thresholds, dtype=float), (nq,)).copy()
        if np.any(np.isnan(th)) or np.any(th <= 0):
            raise InputError("thresholds must be positive numbers [N m or N], one or %d, got %r" % (nq, thresholds))
        self.thresholds = th
        self.reset()

    def reset(self):
        """Forget the past: the next :meth:`update` starts the integral again (r = 0)."""
        self.residual = np.zeros(self.model.nq)
        self.collision = False
        self.joints = np.zeros(0, dtype=np.int64)
        self.time = 0.0
        self._last = None                      # (M, qd, tau, h) of the previous sample

    def update(self, q, qd, tau, dt):
        """Take one sample and return the external-torque estimate.

        Args:
            q, qd: (nq,) measured joint positions and velocities.
            tau: (nq,) motor torque acting on the joints [N m or N]
                (friction already removed if it matters).
            dt: time since the previous sample [s] (ignored on the first).

        Returns:
            (nq,) the residual r, the estimate of ``tau_ext`` [N m or N].
        """
        _, (q, qd, tau) = checks.batch(self.model, q=q, qd=qd, tau=tau)
        if q.shape[0] != 1:
            raise InputError("update takes one sample (nq,), got %d" % q.shape[0])
        q, qd, tau = q[0], qd[0], tau[0]
        checks.check_finite(q=q, qd=qd, tau=tau)
        if self._last is not None and not (np.isfinite(dt) and dt > 0):
            raise InputError("dt must be a positive time step [s], got %r" % (dt,))
        return self.step(q, qd, tau, dt).copy()

    def step(self, q, qd, tau, dt):
        """:meth:`update` without its input checks, for a caller that made them (a node's hot path).

        Args:
            q, qd, tau: (nq,) finite float64 arrays (copied where kept).
            dt: > 0 [s] (ignored on the first sample).

        Returns:
            :attr:`residual` itself (the next step replaces it).
        """
        M = mass_matrix(self.model, q)
        h = nonlinear_effects(self.model, q, qd)
        if self._last is not None:
            M0, qd0, tau0, h0 = self._last
            drive = (tau0 if self.torque_at == "start" else tau) - h0
            # the interval's external torque: momentum gained over what tau - h explains (module text)
            step = M0 @ (qd - qd0)
            step /= dt
            step -= drive                           # tau_ext,k
            step -= self.residual
            step *= 1.0 - (math.exp(-self._gain * dt) if self._gain is not None else np.exp(-self.gains * dt))
            self.residual = self.residual + step    # a r + (1 - a) tau_ext,k, a = exp(-K dt)
            self.time += dt
        self._last = (M, np.array(qd, dtype=float), np.array(tau, dtype=float), h)
        over = np.abs(self.residual) > self.thresholds
        self.collision = bool(over.any())
        self.joints = np.flatnonzero(over)
        return self.residual

    def wrench(self, q, link, point=(0.0, 0.0, 0.0), tau_ext=None):
        """The wrench at ``link`` that explains the external torque: ``pinv(J^T) r``.

        Args:
            q: (nq,) joint positions.
            link: the link the contact is assumed on.
            point: (3,) contact point in the link frame [m].
            tau_ext: (nq,) external torque (default: the latest residual).

        Returns:
            (6,) ``[fx, fy, fz, nx, ny, nz]`` in the base frame, moment about
            the point [N, N m]: the least-squares wrench (minimum norm where
            J^T has a null space; fewer than 6 joints determine only part of it).
        """
        r = self.residual if tau_ext is None else np.asarray(tau_ext, dtype=float)
        J = jacobian(self.model, q, link, point)
        return np.linalg.pinv(J.T) @ r
