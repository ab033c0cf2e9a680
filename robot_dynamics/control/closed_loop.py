"""The nodes' view of a closed-loop robot (``loops_file``): its actuated joints in, their torques out (no ROS needed).

A closed-loop mechanism's state is fixed by its actuated joints when they
drive every degree of freedom, and a real one (a palletiser) reports its
motor positions only. So :class:`ClosedLoop` always computes the passive
joints from the actuated ones, whether a joint state names them or not:

- positions: :func:`robot_dynamics.assemble` keeping the actuated joints
  (to a residual of 1e-12, the simulator's projection tolerance), from the
  passive positions of the message when it has them, else from
  the last state it completed (so the mechanism stays on its branch: a
  four-bar's open or crossed circuit), else from the neutral configuration
  moved into the joint limits;
- velocities: the velocity on the loops (``J qd = 0``) whose actuated part
  is the measured one, ``qd = Gamma qd_a`` with ``Gamma = K (S^T K)^+``
  (K the free directions, ``J K = 0``; S selects the actuated joints; the
  least-squares fit when the actuation is redundant);
- accelerations (desired motions): ``qdd = qdd_0 + Gamma (qdd_a - S^T qdd_0)``
  with ``J qdd_0 = -Jdot qd`` (eq. 3.109 of the Handbook).

The torque laws (the modes of :mod:`.compensation`) on the completed state,
for the actuated joints (``n_a`` values, in ``actuated`` order), each the
actuated torques of ``rd.constrained_inverse_dynamics(q, qd, qdd,
actuated)`` (Handbook sec. 3.6.1):

- gravity: ``qd = qdd = 0``, the torques that hold the mechanism at rest;
- gravity + Coriolis: the measured ``qd`` and the actuated joints'
  acceleration zero (``qdd = qdd_0 - Gamma S^T qdd_0``): a tree's
  ``rnea(q, qd, 0)`` cannot be had, ``J qdd = -Jdot qd`` forbids ``qdd = 0``
  while the loops move; Coriolis = that - gravity;
- friction ``Gamma^T friction_torques(qd)``: the friction of every joint,
  passive ones included, as actuated torques of the same power;
- feedforward: the desired actuated motion completed as above;
- computed torque: the measured state with the actuated joints'
  acceleration ``qdd_d + Kd (qd_d - qd) + Kp (q_d - q)``.

At the measured state the torques are computed as ``Gamma^T rnea(q, qd,
qdd)``: ``Gamma^T = (K^T S)^+ K^T`` is exactly the map
``constrained_inverse_dynamics`` applies to the tree's torques (its
minimum-norm ``tau_a`` of ``K^T S tau_a = K^T rnea``), and the completion has
Gamma already: one loop-kinematics pass a message, 0.1-0.2 ms on the
palletiser (gravity; gravity + Coriolis), where calling
``constrained_inverse_dynamics`` for the laws took 0.3-0.5 ms (it redoes
the kinematics and the SVD per state); tested equal to it within 1e-9
over DDS (test/ros/test_ros_loops.py). The feedforward,
at a desired state of its own, calls ``constrained_inverse_dynamics``.

Errors (nothing is computed): :class:`~robot_dynamics.AssemblyError` when
the actuated positions cannot close the loops, and
:class:`~robot_dynamics.SingularityError` at a singular pose (the loops'
Jacobian loses rank, or the actuated joints cannot move the mechanism:
``S^T K`` loses rank).
"""
import numpy as np

import robot_dynamics as rd
from ..constraints import loop_kinematics, mechanism_rank
from ..errors import InputError, SingularityError
from .compensation import GRAVITY, GRAVITY_CORIOLIS_FRICTION, MODES

MAX_CONDITION = 1e8          # as constrained_forward_dynamics: sigma_1 / sigma_r above it is singular
TOL = 1e-12                  # |loop_residual|_inf [m, rad] the passive positions are assembled to


def check_actuated(model, actuated, drive=True):
    """The problem with ``actuated`` (joint names) for ``model``, or None: unknown or repeated names, or
    (with ``drive``: the torque laws need it) fewer than the closed mechanism's degrees of freedom."""
    names = model.joint_names
    unknown = [j for j in actuated if j not in names]
    if unknown:
        return "actuated_joints: %s not joint(s) of the model (its joints: %s)" % (
            ", ".join(repr(j) for j in unknown), ", ".join(names))
    if len(set(actuated)) != len(actuated):
        return "actuated_joints names a joint more than once: %s" % list(actuated)
    if drive and model.loops and len(actuated) < rd.mobility(model):
        return ("actuated_joints: %d joint(s) (%s) cannot drive the closed mechanism of %r, which has %d degrees "
                "of freedom" % (len(actuated), ", ".join(actuated), model.name, rd.mobility(model)))
    return None


class ClosedLoop:
    """State completion and torque laws of a closed-loop robot (see the module docstring).

    Args:
        model: a model with loops (payloads included).
        actuated: the joints with motors, names of ``model.joint_names``.
        mode: one of :data:`.compensation.MODES`.
        friction_smoothing: as :class:`.compensation.Compensation`.

    After :meth:`compute`, ``gravity``, ``coriolis``, ``friction`` and
    ``total`` are (n_a,) arrays [N m or N] in ``actuated`` order (the terms of
    the mode; the others stay zero). ``q``, ``qd`` hold the last completed
    state (nq,).
    """

    def __init__(self, model, actuated, mode, friction_smoothing=0.0):
        if mode not in MODES:
            raise InputError('mode must be one of %s, got %r' % (', '.join(MODES), mode))
        problem = check_actuated(model, actuated)
        if problem:
            raise InputError(problem)
        self.model, self.mode = model, mode
        self.smoothing = float(friction_smoothing)
        self.actuated = list(actuated)
        self.a = np.array([model.joint_names.index(j) for j in actuated], dtype=np.intp)
        self.p = np.array([i for i in range(model.nq) if i not in set(self.a.tolist())], dtype=np.intp)
        self.passive = [model.joint_names[i] for i in self.p]
        self.r = mechanism_rank(model)
        n = len(actuated)
        self.gravity, self.coriolis, self.friction, self.total = (np.zeros(n) for _ in range(4))
        lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.inf)
        hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.inf)
        self.q = np.clip(model.neutral(), lo, hi)        # the first guess of the passive positions
        self.qd = np.zeros(model.nq)
        self._zero = np.zeros(model.nq)
        self._kin = self._U = self._s = self._Vt = self._Gamma = None

    # --- the state ---------------------------------------------------------------
    def complete(self, q_a, qd_a, passive_guess=None):
        """(q, qd) (nq,) of the mechanism from the actuated positions and velocities (n_a,).

        ``passive_guess``: (n_p,) passive positions to start the assembly
        from (a message's), or None (the last completed state's).
        """
        q = self.q.copy()
        q[self.a] = q_a
        if passive_guess is not None:
            q[self.p] = passive_guess
        kin = loop_kinematics(self.model, q)
        if np.abs(kin.residual()).max() > TOL:
            q = rd.assemble(self.model, q, keep=self.actuated, tol=TOL)
            kin = loop_kinematics(self.model, q)
        self._free(kin)
        self.q, self.qd = q, self._Gamma @ qd_a
        return self.q, self.qd

    def _free(self, kin):
        """J and Gamma = K (S^T K)^+ at the kinematics ``kin``; SingularityError at a singular pose."""
        J = kin.jacobian()
        U, s, Vt = np.linalg.svd(J)
        r = self.r
        if r and (s[r - 1] * MAX_CONDITION < s[0] or not np.isfinite(s[0])):
            raise SingularityError('singular pose of the closed loops: the loop Jacobian has lost rank (singular '
                                   'values %s)' % np.array2string(s[:r + 1], precision=3))
        K = Vt[r:].T
        Ua, sa, Vta = np.linalg.svd(K[self.a], full_matrices=False)           # S^T K (n_a, d)
        d = K.shape[1]
        if d and sa[d - 1] * MAX_CONDITION < 1.0:
            raise SingularityError('the actuated joints (%s) cannot move the mechanism at this pose (singular '
                                   'values of S^T K: %s): an actuation singularity'
                                   % (', '.join(self.actuated), np.array2string(sa, precision=3)))
        self._kin, self._U, self._s, self._Vt = kin, U[:, :r], s[:r], Vt[:r]
        self._Gamma = K @ (Vta.T @ (Ua.T / sa[:, None]))                       # K (S^T K)^+

    def accelerations(self, q, qd, qdd_a):
        """(nq,) accelerations on the loops (J qdd = -Jdot qd) with actuated part qdd_a, at the state
        :meth:`complete` (or :meth:`desired`) gave last."""
        l = -self._kin.bias(qd)
        qdd0 = self._Vt.T @ ((self._U.T @ l) / self._s)                      # J qdd_0 = l
        return qdd0 + self._Gamma @ (qdd_a - qdd0[self.a])

    # --- the laws ----------------------------------------------------------------
    def compute(self, q, qd):
        """Fill gravity, coriolis, friction and total at the completed (q, qd); returns total."""
        model, GammaT = self.model, self._Gamma.T
        np.dot(GammaT, rd.gravity_torques(model, q), out=self.gravity)          # constrained ID at rest
        if self.mode == GRAVITY:
            self.total[:] = self.gravity
        else:
            qdd = self.accelerations(q, qd, np.zeros(len(self.a)))
            np.dot(GammaT, rd.rnea(model, q, qd, qdd), out=self.total)
            np.subtract(self.total, self.gravity, out=self.coriolis)
        if self.mode == GRAVITY_CORIOLIS_FRICTION:
            self.friction[:] = self._Gamma.T @ rd.friction_torques(model, qd, smoothing=self.smoothing)
            self.total += self.friction
        return self.total

    def feedforward(self, q, qd, q_d, qd_d, qdd_d):
        """(n_a,) ``constrained_inverse_dynamics`` of the desired actuated motion (n_a,) each, completed
        from the measured state's branch; the measured state's completion is kept."""
        saved = self.q, self.qd, self._kin, self._U, self._s, self._Vt, self._Gamma
        try:
            qf, qdf = self.complete(q_d, qd_d, passive_guess=q[self.p])
            qddf = self.accelerations(qf, qdf, qdd_d)
            tau, _ = rd.constrained_inverse_dynamics(self.model, qf, qdf, qddf, self.actuated)
        finally:
            self.q, self.qd, self._kin, self._U, self._s, self._Vt, self._Gamma = saved
        return tau[self.a]

    def computed_torque(self, q, qd, q_d, qd_d, qdd_d, kp, kd):
        """(n_a,) ``constrained_inverse_dynamics(q, qd, qdd)`` (as ``Gamma^T rnea``) at the completed measured
        state, with the actuated joints' acceleration ``qdd_d + Kd (qd_d - qd_a) + Kp (q_d - q_a)`` (gains (n_a,))."""
        a = qdd_d + kd * (qd_d - qd[self.a]) + kp * (q_d - q[self.a])
        return self._Gamma.T @ rd.rnea(self.model, q, qd, self.accelerations(q, qd, a))
