"""The simulator's compiled path: whole steps (ABA and the integrator, the
built-in actuator, friction and stops) in one call of
:func:`.fused.fused_step`, when the simulator holds only what that kernel
implements (its docstring); or, with the contact stepper's integrator, each
stage's acceleration in one call of :func:`.fused.stage_accel`."""
import numpy as np

from . import fused as F
from .commands import JointActuator
from .forces import JointFriction, PositionLimits
from .integrators import RK4, ImplicitEuler, SemiImplicitEuler

_METHODS = {SemiImplicitEuler: F.SEMI_IMPLICIT_EULER, RK4: F.RK4, ImplicitEuler: F.IMPLICIT_EULER}


def built_in_only(model, integrator, actuator, forces):
    """True if integrator, actuator and force models are the built-in ones
    that :mod:`.fused` implements (see its docstring): a fixed base without
    loops; with mimic joints, RK4 or semi-implicit Euler."""
    integrators = (RK4, SemiImplicitEuler) if model.has_mimic else (RK4, SemiImplicitEuler, ImplicitEuler)
    return type(integrator) in integrators and built_in_forces(model, actuator, forces)


def built_in_forces(model, actuator, forces):
    """True if the actuator and force models are the built-in ones that
    :func:`.fused.stage_accel` evaluates (a fixed base without loops)."""
    kinds = [type(f) for f in forces]
    return (model.root_joint is None and not model.loops
            and type(actuator) is JointActuator
            and len(set(kinds)) == len(kinds)
            and kinds in ([], [JointFriction], [PositionLimits], [JointFriction, PositionLimits]))


class FusedPath:
    """The arguments of :func:`.fused.fused_step` for a simulator's plug-ins,
    made again only when its command changes; ``usable`` False when a plug-in
    is not built in, ``stages`` False when the actuator or a force model is
    not (:meth:`acceleration`)."""

    def __init__(self, model, integrator, actuator, forces):
        self.model, self.integrator, self.actuator, self.forces = model, integrator, actuator, forces
        self.usable = built_in_only(model, integrator, actuator, forces)
        self.stages = built_in_forces(model, actuator, forces)      # acceleration() applies
        self._key, self._args = None, None

    def arguments(self, command):
        """(P, L, flags, smoothing, method) for ``command`` (a Command)."""
        if self._key is not command:
            self._key, self._args = command, self._fill(command)
        return self._args

    def advance(self, q, qd, dt, args, n, wrenches):
        """(q, qd, steps done) after ``n`` steps of ``dt`` from (q, qd), with
        the applied ``wrenches`` (:meth:`.forces.ExternalWrenches.compiled`);
        fewer steps done when the next would give a non-finite state (the last
        finite one returned)."""
        q1, qd1 = np.empty_like(q), np.empty_like(qd)
        done = F.fused_step(self.model.packed, q, qd, dt, *args, *wrenches, n, q1, qd1)
        return q1, qd1, done

    def acceleration(self, q, qd, dt, args, fext):
        """qdd (nq,) at (q, qd) under the plug-ins' torques (``args`` of
        :meth:`arguments`) and the body wrenches ``fext`` (nb, 6) or (0, 6):
        one stage in one compiled call (:func:`.fused.stage_accel`)."""
        qdd = np.empty_like(qd)
        F.stage_accel(self.model.packed, q, qd, dt, *args[:4], fext, qdd)
        return qdd

    def _fill(self, command):
        """The plug-ins' coefficients in the rows of P, the friction laws in L;
        the force rows are filled once, the actuator rows for each new command."""
        if self._args is None:
            P = np.zeros((F.NROWS, self.model.nq))
            L = np.zeros((F.LROWS, self.model.nb if self.model.has_mimic else self.model.nq))
            smoothing, friction, stops, stiction = 0.0, False, False, False
            for f in self.forces:
                c = f.coefficients()
                if isinstance(f, JointFriction):
                    L, smoothing, friction, stiction = c.laws, c.smoothing, c.active, c.stiction
                else:
                    P[F.LOWER], P[F.UPPER], P[F.STIFF], P[F.DAMP_STOP] = c.lower, c.upper, c.stiffness, c.damping
                    stops = c.active
            flags = np.array([False, friction, stops, stiction, self.model.has_mimic])
        else:
            P, L, flags, smoothing, _ = self._args
            P, flags = P.copy(), flags.copy()
        a = self.actuator.coefficients(command)
        P[F.EFFORT], P[F.SERVO], P[F.A0], P[F.KQ], P[F.KQD] = a.effort, a.servo, a.a0, a.Kq, a.Kqd
        P[F.LO], P[F.HI] = a.lower, a.upper
        flags[0] = a.servoed
        return P, L, flags, float(smoothing), _METHODS.get(type(self.integrator), -1)
