"""The sum of a simulator's plug-ins: the generalized forces of its actuator
and force models, their link wrenches, and the accelerations they give.

At each integrator stage ``(t, q, qd)`` (docs/SIMULATION.md):

    tau = sum_m tau_m(t, q, qd, command)        the actuator first, then the force models, in order
    W   = sum_m W_m(t, q, qd)                   the link wrenches, ExternalWrenches last
    qdd = aba(q, qd, tau, f_ext = W)            on a tree (Featherstone 2008, sec. 7.3),

with stiction's hold on top (:meth:`.forces.JointFriction.hold`); with
closed loops the Handbook's sec. 3.6.1 forward dynamics
(:func:`robot_dynamics.constrained_forward_dynamics`), the wrenches as joint
torques ``J^T f``; under contact with the built-in plug-ins only, each stage
in one compiled call (:meth:`.fused_path.FusedPath.acceleration`).
"""
import numpy as np

from ..algorithms.aba import aba
from ..algorithms.rnea import gravity_torques, rnea
from ..algorithms.wrench import _to_bodies
from ..constraints.dynamics import _gains as baumgarte_gains, forward as loop_forward
from ..errors import InputError
from .forces import ForceModel, JointFriction

_NO_WRENCH = np.empty((0, 6))            # the kernels' f_ext of no wrench


def check_plug_ins(actuator, forces, constraints):
    """Raise InputError naming the first object that is not a force model
    (``actuator`` and ``forces``) or not a step constraint (``constraints``)."""
    for f in (actuator,) + forces:
        if not isinstance(f, ForceModel):
            raise InputError("%r is not a force model: it needs generalized_force(model, t, q, qd, command)"
                             % (f,))
    for c in constraints:
        if not callable(getattr(c, "apply", None)):
            raise InputError("%r is not a constraint: it needs apply(model, t, q, qd)" % (c,))


class PlugIns:
    """A simulator's force plug-ins summed, and the forward dynamics under them.

    Args:
        model: the robot (:class:`robot_dynamics.Model`).
        dt: the physics step [s] (stiction's hold looks one step ahead).
        actuator: the motor torques (a :class:`.forces.ForceModel`), first in the sum.
        forces: the force models (a tuple), summed in this order.
        wrenches: the :class:`.forces.ExternalWrenches`, last among the link wrenches.
        fused: the simulator's :class:`.fused_path.FusedPath` (its compiled stage).
        contact: the contact stepper among ``forces``, or None; the compiled
            stage serves its integrator only.
        baumgarte: ``(Kv, Kp)`` [1/s, 1/s^2] of a model with loops.

    Attributes:
        generalized: the ``generalized_force`` methods summed into tau.
        wrench_models: the ``link_wrenches`` methods summed into f_ext.
        stick: the :class:`.forces.JointFriction` with the stick-slip switch on, or None.
        stages: each stage's acceleration in one compiled call (settable:
            False gives the plug-in path, test_contact_stages.py).
    """

    def __init__(self, model, dt, actuator, forces, wrenches, fused, contact=None, baumgarte=(0.0, 0.0)):
        self.model, self.dt, self.actuator, self.fused = model, dt, actuator, fused
        models = (actuator,) + forces + (wrenches,)
        self.generalized = [f.generalized_force for f in models if f is not wrenches]
        self.wrench_models = [f.link_wrenches for f in models if callable(getattr(f, "link_wrenches", None))]
        self.zero = np.zeros(len(model.joint_names))
        self.root, self.loops = model.root_joint is not None, bool(model.loops)
        if self.loops:
            self.kv, self.kp = baumgarte_gains(baumgarte)
        self.stick = next((f for f in forces if isinstance(f, JointFriction) and f.stiction), None)
        self.stages = contact is not None and fused.stages

    def acceleration(self, t, q, qd, command):
        """qdd (nv,) [rad/s^2 or m/s^2] at time ``t`` [s] and the state ``q``
        (nq,), ``qd`` (nv,), under ``command`` (a :class:`.commands.Command`)
        and every plug-in: ``aba(q, qd, tau, W)`` (the module's sums)."""
        if self.stages:
            return self.fused.acceleration(q, qd, self.dt, self.fused.arguments(command),
                                           self.body_wrenches(t, q, qd))
        tau = self.generalized_force(t, q, qd, command)
        W = self.link_wrenches(t, q, qd)
        if self.loops:
            return self._loop_acceleration(q, qd, tau, W)
        tau = self.zero if tau is None else tau
        qdd = aba(self.model, q, qd, tau, W)
        return qdd if self.stick is None else self.stick.hold(self.model, q, qd, tau, qdd, self.dt, W)

    def _loop_acceleration(self, q, qd, tau, W):
        """qdd (nq,) of a model with loops: the wrenches W (nl, 6) or None as
        joint torques ``J^T f = g - rnea(q, 0, 0, f)`` added to ``tau`` (nq,) or None."""
        tau = self.zero if tau is None else tau
        if W is not None:
            tau = tau + (gravity_torques(self.model, q) - rnea(self.model, q, self.zero, self.zero, W))
        return loop_forward(self.model, q, qd, tau, self.kv, self.kp, forces=False)[0]

    def generalized_force(self, t, q, qd, command):
        """tau (nv,) [N m or N]: the generalized forces summed in order, each
        evaluated at the joints' ``q[root_nq:]``, ``qd[root_nv:]``; the root's
        rows zero. None when nothing contributes on a fixed base."""
        tau = None
        qj, qdj = (q[self.model.root_nq:], qd[self.model.root_nv:]) if self.root else (q, qd)
        for gf in self.generalized:
            f = gf(self.model, t, qj, qdj, command)
            if f is not None:
                tau = f if tau is None else tau + f
        if self.root:
            tau = np.concatenate([np.zeros(self.model.root_nv), self.zero if tau is None else tau])
        return tau

    def link_wrenches(self, t, q, qd):
        """W (nl, 6) [N, N m]: the link wrenches summed in order (each in its
        link's frame, the f_ext convention of :func:`robot_dynamics.aba`), or None."""
        W = None
        for lw in self.wrench_models:
            w = lw(self.model, t, q, qd)
            if w is not None:
                W = w if W is None else W + w
        return W

    def body_wrenches(self, t, q, qd):
        """(nb, 6) the link wrenches' sum as the kernels' body wrenches, or (0, 6) for none."""
        W = self.link_wrenches(t, q, qd)
        if W is None:
            return _NO_WRENCH
        out = np.empty((1, self.model.nb, 6))            # (nl, 6) arrays of the contact and ExternalWrenches
        _to_bodies(self.model.link_body, self.model.link_pose_rows, W.reshape(1, -1, 6), out)
        return out[0]

    def effort(self, t, q, qd, command):
        """(nj,) the actuator's motor torques [N m or N] at ``q`` (nq,), ``qd`` (nv,)."""
        m = self.model
        tau = self.actuator.generalized_force(m, t, q[m.root_nq:], qd[m.root_nv:], command)
        return self.zero.copy() if tau is None else np.array(tau, dtype=float)

    def culprit(self, t, q, qd, command):
        """Name the first force model with a non-finite output at ``(q, qd)`` (evaluated, as in
        :meth:`generalized_force`, at the joints' part of a moving base's state), if any."""
        qj, qdj = (q[self.model.root_nq:], qd[self.model.root_nv:]) if self.root else (q, qd)
        for gf in self.generalized:
            try:
                f = gf(self.model, t, qj, qdj, command)
            except Exception as err:                      # diagnostic only
                return " (%s raised %r)" % (_owner(gf), err)
            if f is not None and not np.all(np.isfinite(f)):
                return " (%s returned %s)" % (_owner(gf), np.asarray(f))
        return ""


def _owner(method):
    """Class name of a bound method's object (the force model), else the callable's name."""
    owner = getattr(method, "__self__", None)
    return type(owner).__name__ if owner is not None else getattr(method, "__qualname__", repr(method))
