"""dynamics_node's torque laws for a floating or planar robot: the full state in, the joints out (no ROS needed).

The laws of :mod:`.compensation`, computed by the library on the full state
``q = (base pose, joints)``, ``v = (base twist, joint rates)`` (the base part
from the base-state topic, :mod:`.base_state`; the joints from joint_states),
of which only the joint part is published: the base is not actuated (its
part of ``rnea`` is the wrench that the ground, the wheels or the feet
must give it). The base's acceleration is taken as zero (Odometry carries
none; the joints are what the node commands):

- gravity ``g = gravity_torques(q)[root_nv:] = rnea(q, 0, 0)[root_nv:]``:
  the joint torques that hold the arm still on its base at rest in the
  measured pose (gravity ``R^T g`` in the base frame: a tilted base changes
  them);
- Coriolis ``nonlinear_effects(q, v)[root_nv:] - g``, with the base's twist
  in ``v``;
- friction ``friction_torques(v)[root_nv:]`` (joint friction only);
- feedforward ``rnea(q_d, v_d, a_d)[root_nv:]`` with the reference's
  joints and the measured base (twist included, acceleration zero);
- computed torque ``rnea(q, v, a)[root_nv:]``, ``a`` the joints'
  ``qdd_d + Kd (qd_d - qd) + Kp (q_d - q)`` and zero for the base.

For a fixed base these are exactly the laws of :mod:`.compensation`.
"""
import numpy as np

import robot_dynamics as rd
from .compensation import Compensation


class FullStateCompensation(Compensation):
    """:class:`.compensation.Compensation` of a floating or planar model.

    Args: as :class:`.compensation.Compensation`.

    :meth:`state` assembles the full ``(q (nq,), v (nv,))`` in buffers of its
    own; :meth:`compute` takes it and fills ``gravity``, ``coriolis``,
    ``friction`` and ``total``, each (n,) for the ``n`` joints of
    ``model.joint_names`` [N m or N].
    """

    def __init__(self, model, mode, friction_smoothing=0.0):
        super().__init__(model, mode, friction_smoothing)
        n = len(model.joint_names)
        self.gravity, self.coriolis, self.friction, self.total = (np.zeros(n) for _ in range(4))
        self.q = model.neutral()
        self.v = np.zeros(model.nv)
        self._g, self._h = np.zeros(model.nv), np.zeros(model.nv)     # full-state results (data=, out=)

    def state(self, q_root, v_root, q_joints, v_joints):
        """The full state of a root state (root_nq,), (root_nv,) and the joints' (n,), (n,)."""
        m = self.model
        self.q[:m.root_nq], self.q[m.root_nq:] = q_root, q_joints
        self.v[:m.root_nv], self.v[m.root_nv:] = v_root, v_joints
        return self.q, self.v

    def compute(self, q, v):
        """Fill gravity, coriolis, friction and total (joint parts) at the full state (q, v); returns total."""
        model, data = self.model, self.data
        r = model.root_nv
        g = rd.gravity_torques(model, q, data=data, out=self._g)
        self.gravity[:] = g[r:]
        if self.with_coriolis:
            h = rd.nonlinear_effects(model, q, v, data=data, out=self._h)
            np.subtract(h[r:], g[r:], out=self.coriolis)
            self.total[:] = h[r:]
        else:
            self.total[:] = self.gravity
        if self.with_friction:
            self.friction[:] = rd.friction_torques(model, v, smoothing=self.smoothing)[r:]
            self.total += self.friction
        return self.total


def feedforward(model, q, v, q_d, qd_d, qdd_d):
    """Joint part of ``rnea`` at the measured base (in the full state ``q``, ``v``) and the desired joints
    ``q_d``, ``qd_d``, ``qdd_d`` (n,), the base's acceleration zero."""
    q_full, v_full = q.copy(), v.copy()
    q_full[model.root_nq:], v_full[model.root_nv:] = q_d, qd_d
    a = np.zeros(model.nv)
    a[model.root_nv:] = qdd_d
    return rd.rnea(model, q_full, v_full, a)[model.root_nv:]


def computed_torque(model, q, v, q_d, qd_d, qdd_d, kp, kd):
    """Joint part of ``rnea(q, v, a)``: ``a`` = ``qdd_d + Kd (qd_d - qd) + Kp (q_d - q)`` for the joints
    (n,), zero for the base; ``q``, ``v`` the measured full state."""
    a = np.zeros(model.nv)
    a[model.root_nv:] = qdd_d + kd * (qd_d - v[model.root_nv:]) + kp * (q_d - q[model.root_nq:])
    return rd.rnea(model, q, v, a)[model.root_nv:]
