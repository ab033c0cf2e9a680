"""The simulator: forward dynamics integrated at a fixed step, with force models,
joint commands and step constraints plugged in.

One step from ``t`` to ``t + dt``:

1. the integrator advances ``(q, qd)`` with ``qdd = aba(q, qd, tau, f_ext)``,
   where ``tau`` sums the actuator's motor torques (from the current
   :class:`~robot_dynamics.simulation.Command`) and every force model's
   generalized force, and ``f_ext`` their link wrenches, all evaluated at each
   integrator stage;
2. each constraint (the velocity limits by default) corrects the new state;
3. the new state is committed only if it is finite. Otherwise the step
   raises :class:`SimulationError` and the simulator keeps its previous
   state and time, so it never holds NaN.

A floating or planar base (``model.root_joint``): q has nq entries and qd
nv (:mod:`robot_dynamics.model.configuration`); the positions move on the
manifold (:func:`.integrators.lie_step`: semi-implicit Euler or RK4 as
Runge-Kutta-Munthe-Kaas, the quaternion kept unit). The root is not
actuated: the actuator, the force models and commands see the joints only
(``q[root_nq:]``, ``qd[root_nv:]``) and return joint torques; external
wrenches act on any link (``frame='base'`` then means the world frame). No
step constraint by default.

Closed loops (``model.loops``, docs/LOOPS.md): the accelerations come from
:func:`robot_dynamics.constrained_forward_dynamics` (the Handbook's sec.
3.6.1 method 3, optional Baumgarte gains) with the same torques and link
wrenches (as joint torques ``J^T f``), and after the step constraints the
state is projected back onto the loops (:class:`.constraints.LoopClosure`),
which keeps the residual at 1e-12 for any duration; every loop step runs
its kernels on one thread. ``actuated`` names the joints with motors: the
commands are for them only, the passive joints get no motor torque (the
force models, friction and stops, act on every joint).
"""
from typing import NamedTuple

import numpy as np

from .. import checks
from ..algorithms.kernels import jit
from ..algorithms.energy import kinetic_energy, potential_energy
from ..constraints.assembly import assemble
from ..constraints.closure import one_thread
from .commands import Command, JointActuator
from .constraints import LoopClosure, VelocityLimits
from .forces import ExternalWrenches, JointFriction, PositionLimits
from .fused_path import FusedPath
from .integrators import RK4, SemiImplicitEuler, get_integrator, lie_step
from .plugin_sum import PlugIns, check_plug_ins
from ..errors import InputError, SimulationError


@jit
def _finite(q, qd):
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return False
    for i in range(qd.shape[0]):
        if not np.isfinite(qd[i]):
            return False
    return True


class SimState(NamedTuple):
    """A snapshot: time [s], joint positions and velocities (nq,) (copies)."""
    t: float
    q: np.ndarray
    qd: np.ndarray


def default_forces(model, dt=1e-3):
    """The passive force models from the URDF: joint damping and friction,
    position-limit stops (see :class:`JointFriction`, :class:`PositionLimits`)."""
    return [JointFriction(model), PositionLimits(model, dt=dt)]


def default_constraints(model):
    """The step constraints from the URDF: velocity limits (:class:`VelocityLimits`);
    none on a floating or planar base."""
    return [] if model.root_joint is not None else [VelocityLimits(model)]


def _actuated_joints(model, actuated):
    """The tuple of actuated joint names of ``model``: all its joints for None,
    else the names ``actuated`` (one name or several), checked distinct and known."""
    names = model.joint_names
    if actuated is None:
        return tuple(names)
    actuated = [actuated] if isinstance(actuated, str) else list(actuated)
    unknown = [j for j in actuated if j not in names]
    if unknown or len(set(actuated)) != len(actuated) or not actuated:
        raise InputError("actuated must name distinct joints of the model (%s), got %r"
                         % (", ".join(names), actuated))
    return tuple(actuated)


def _one_state(model, x, name):
    """A copy of ``x``, one state's ``q`` (nq,) or ``qd`` (nv,) of ``model``
    (``name``: 'q' or 'qd'), checked finite; InputError for a batch."""
    if model.root_joint is not None and name == "q":          # nq entries (checked), not nv
        from ..model.configuration import _config
        a = _config(model, x, "q")
        shape, a = a.shape[:-1], a.reshape(1, -1)
    else:
        shape, (a,) = checks.batch(model, **{name: x})
    if shape:
        raise InputError("%s must be one state (%d,), got shape %s"
                         % (name, model.nq if name == "q" else model.nv, np.shape(x)))
    checks.check_finite(**{name: a[0]})
    return a[0].copy()


class Simulator:
    """A robot arm simulated at a fixed physics step, usable without ROS.

    Example (a doctest, run from the repository root by test/test_docs.py)::

        >>> import numpy as np, robot_dynamics as rd
        >>> model = rd.load_urdf("urdf/panda_arm.urdf")
        >>> q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
        >>> sim = rd.Simulator(model, dt=1e-3, integrator="rk4")
        >>> sim.reset(q0)
        >>> sim.set_command(q0 + 0.1, mode="position")
        >>> for _ in range(1000):
        ...     _ = sim.step()
        >>> t, q, qd = sim.state
        >>> round(t, 9), bool(np.abs(q - (q0 + 0.1)).max() < 1e-6)
        (1.0, True)

    (``rd.Simulator`` is ``robot_dynamics.simulation.Simulator``.)

    Args:
        model: the robot (:class:`robot_dynamics.Model`).
        dt: physics step [s] (default 1e-3: 1 kHz).
        integrator: a name from :data:`~robot_dynamics.simulation.INTEGRATORS`
            (``'rk4'``, ``'semi_implicit_euler'``, ...) or an object with the
            :class:`~robot_dynamics.simulation.Integrator` interface.
        forces: force models (:class:`~robot_dynamics.simulation.ForceModel`);
            None: :func:`default_forces` (URDF damping and friction, position
            stops); ``[]``: none (a conservative arm).
        constraints: step constraints; None: :func:`default_constraints`
            (velocity limits); ``[]``: none.
        actuator: turns commands into motor torques; None: a
            :class:`~robot_dynamics.simulation.JointActuator` with default
            gains (clamped to the effort limits).
        q0, qd0: initial state, (nq,); default ``model.neutral()`` at rest.
        actuated: names of the joints with motors; the commands are for
            them only (``set_command`` refuses the others) and the other
            joints get no motor torque. None: every joint.
        baumgarte: ``(Kv, Kp)`` [1/s, 1/s^2] of a model with loops
            (:func:`robot_dynamics.constrained_forward_dynamics`); default
            none: the projection after each step holds the loops
            (docs/LOOPS.md, "Simulator and nodes").
        contact: a :class:`robot_dynamics.contact.ContactStepper`: its free
            bodies step with the arm (its integrator wraps ``integrator``)
            and its contact wrenches act on the links (one more force model).

    A model with loops starts on them: ``q0`` is closed by
    :func:`robot_dynamics.assemble` keeping the actuated joints (all of
    them free when every joint is actuated) and ``qd0`` projected onto the
    loops (as :meth:`reset` does).

    The external wrenches (:meth:`apply_wrench`) are one more force model,
    always present (:attr:`wrenches`).
    """

    def __init__(self, model, *, dt=1e-3, integrator="rk4", forces=None, constraints=None, actuator=None,
                 q0=None, qd0=None, actuated=None, baumgarte=(0.0, 0.0), contact=None):
        if not (isinstance(dt, (int, float, np.floating)) and np.isfinite(dt) and dt > 0):
            raise InputError("dt must be a finite time step > 0 [s], got %r" % (dt,))
        self.model = model
        self.dt = float(dt)
        self.integrator = get_integrator(integrator)
        self._root = model.root_joint is not None
        if self._root and type(self.integrator) not in (SemiImplicitEuler, RK4):
            raise InputError("a %s base moves on a manifold: the integrator must be 'semi_implicit_euler' or "
                             "'rk4' (Lie-group versions), got %r" % (model.root_joint, self.integrator.name))
        self.actuator = JointActuator(model) if actuator is None else actuator
        self.forces = tuple(default_forces(model, self.dt) if forces is None else forces)
        self.constraints = tuple(default_constraints(model) if constraints is None else constraints)
        self.contact = contact                 # free bodies and contacts: robot_dynamics.contact.ContactStepper
        if contact is not None:
            self.integrator, self.forces = contact.integrator(self.integrator, self.dt), self.forces + (contact,)
        check_plug_ins(self.actuator, self.forces, self.constraints)
        self.wrenches = ExternalWrenches(model)
        self._command = Command.zero(len(model.joint_names))
        self.actuated = _actuated_joints(model, actuated)
        self._all_actuated = self.actuated == tuple(model.joint_names)
        self._loops = bool(model.loops)
        if self._loops:
            self.loop_closure = LoopClosure(model)
        own = tuple(f for f in self.forces if f is not contact)
        self._fused = FusedPath(model, self.integrator, self.actuator, own)       # whole steps compiled
        self._plug_ins = PlugIns(model, self.dt, self.actuator, self.forces, self.wrenches, self._fused, contact,
                                 baumgarte)                                        # their sum: _accel
        self.reset(q0, qd0)

    # --- state -------------------------------------------------------------

    def reset(self, q=None, qd=None, t=0.0, keep=None):
        """Set the state and the time; commands and wrenches are kept.

        Args:
            q: (nq,) joint positions, default ``model.neutral()``.
            qd: (nq,) joint velocities, default zeros.
            t: time [s].
            keep: a model with loops: the joints held at their ``q`` while
                :func:`robot_dynamics.assemble` closes the loops (default the
                actuated joints; none when every joint is actuated). The
                velocity is then projected onto the loops (the closest one in
                the kinetic-energy metric).

        Raises:
            InputError: bad values; AssemblyError: the loops cannot be closed
                from ``q`` with the ``keep`` joints held.
        """
        q = self.model.neutral() if q is None else _one_state(self.model, q, "q")
        qd = np.zeros(self.model.nv) if qd is None else _one_state(self.model, qd, "qd")
        if self._root:
            from ..model.configuration import normalize
            q = normalize(self.model, q)
        if not np.isfinite(t):
            raise InputError("t must be a finite time [s], got %r" % (t,))
        if self._loops:
            q, qd = self._close(t, q, qd, keep)
        self._q, self._qd = q, qd
        self._t0, self._k = float(t), 0
        if self.contact is not None:
            self.contact.reset()                  # its contacts' anchors were the old state's

    @one_thread
    def _close(self, t, q, qd, keep):
        """(q, qd) of a model with loops moved onto them (see :meth:`reset`)."""
        if keep is None:
            keep = () if self._all_actuated else self.actuated
        q = assemble(self.model, q, keep=keep, tol=self.loop_closure.tol)      # the kept joints exactly
        return self.loop_closure.apply(self.model, t, q, qd)

    @property
    def time(self):
        """Simulated time [s]: reset time + steps * dt (no accumulated rounding)."""
        return self._t0 + self._k * self.dt

    @property
    def q(self):
        """(nq,) joint positions (a copy)."""
        return self._q.copy()

    @property
    def qd(self):
        """(nq,) joint velocities (a copy)."""
        return self._qd.copy()

    @property
    def state(self):
        """:class:`SimState` ``(t, q, qd)``."""
        return SimState(self.time, self._q.copy(), self._qd.copy())

    @property
    def command(self):
        """The :class:`~robot_dynamics.simulation.Command` in force (change it with :meth:`set_command`)."""
        return self._command

    @property
    def effort(self):
        """(nq,) motor torques the actuator applies at the current state [N m or N]
        (the ``effort`` state interface)."""
        return self._plug_ins.effort(self.time, self._q, self._qd, self._command)

    def energy(self):
        """Total mechanical energy ``T + U`` [J] at the current state."""
        return kinetic_energy(self.model, self._q, self._qd) + potential_energy(self.model, self._q)

    def acceleration(self):
        """(nq,) joint accelerations at the current state and inputs."""
        if self._loops:
            return one_thread(self._accel)(self.time, self._q, self._qd)
        return self._accel(self.time, self._q, self._qd)

    # --- inputs ------------------------------------------------------------

    def set_command(self, values, mode="effort", joints=None):
        """Set joint commands (ros2_control convention: effort, position or velocity per joint).

        Args:
            values: one value per joint of ``joints``, or a dict {joint: value}.
            mode: ``'effort'`` [N m], ``'position'`` [rad] or ``'velocity'``
                [rad/s], or one mode per joint.
            joints: the joint names (default: the :attr:`actuated` ones, all
                joints unless the simulator was given ``actuated``, in that
                order); the other joints keep their commands.

        Raises:
            ValueError: unknown or passive (not actuated) joint or mode, wrong
                length, non-finite value. The previous command stays in force.
        """
        if not self._all_actuated:
            names = list(values) if isinstance(values, dict) else (
                list(self.actuated) if joints is None else [joints] if isinstance(joints, str) else list(joints))
            passive = [j for j in names if j in self.model.joint_names and j not in self.actuated]
            if passive:
                raise InputError("joint(s) %s are passive: the simulator drives only the actuated joints (%s)"
                                 % (", ".join(passive), ", ".join(self.actuated)))
            if joints is None and not isinstance(values, dict):
                joints = list(self.actuated)
        self._command = self._command.updated(self.model, values, mode, joints)

    def apply_wrench(self, link, wrench, frame="link"):
        """Apply a constant wrench ``[fx fy fz nx ny nz]`` [N, N m] to ``link``
        until replaced or cleared (see :class:`~robot_dynamics.simulation.ExternalWrenches`).

        Args:
            link: a name from ``model.link_names``.
            wrench: (6,) acting ON the link at its origin.
            frame: ``'link'`` (components in the link frame, the f_ext convention)
                or ``'base'`` (components in the base frame).
        """
        self.wrenches.set(link, wrench, frame)

    def clear_wrenches(self, link=None):
        """Remove the wrench on ``link``, or all of them."""
        self.wrenches.clear(link)

    # --- stepping ----------------------------------------------------------

    def _accel(self, t, q, qd):
        """qdd = aba(q, qd, sum of generalized forces, sum of link wrenches) (:class:`.plugin_sum.PlugIns`)."""
        return self._plug_ins.acceleration(t, q, qd, self._command)

    def step(self, n=1):
        """Advance ``n`` physics steps of ``dt``; returns the new :class:`SimState`.

        With the built-in plug-ins only and no constraint, the ``n`` steps
        run in one compiled call (:func:`.fused.fused_step`), with the same
        arithmetic as ``n`` calls of ``step()``.

        Raises:
            SimulationError: a step produced a non-finite state (or a force
                model or constraint failed); the state and time stay those
                before that step.
        """
        fast = self._fast_path() if n > 1 and not self.constraints else None
        if fast is not None:
            self._advance_fused(n, fast)
        elif self._loops:
            self._advance_loops(n)
        else:
            for _ in range(n):
                self._advance()
        return self.state

    @one_thread
    def _advance_loops(self, n):
        """``n`` steps of a model with loops: the plug-in path, then the projection onto the loops."""
        for _ in range(n):
            self._advance()

    def _advance_fused(self, n, fast):
        """``n`` steps in one compiled call; on a non-finite state, keep the
        last finite one and raise as :meth:`_advance` does."""
        self._q, self._qd, done = self._fused.advance(self._q, self._qd, self.dt, fast, n, self.wrenches.compiled())
        self._k += done
        if done != n:
            raise SimulationError("step at t = %.6f s would give a non-finite state (the dynamics are too "
                                  "stiff for dt = %g s or a force is unbounded); state kept%s"
                                  % (self.time, self.dt, self._culprit(self.time)))

    def _advance(self):
        t = self.time
        try:
            fast = self._fast_path()
            if self._root:
                q, qd = lie_step(self.integrator, self.model, self._accel, t, self._q, self._qd, self.dt)
            elif fast is None:
                q, qd = self.integrator.step(self._accel, t, self._q, self._qd, self.dt)
            else:
                q, qd, done = self._fused.advance(self._q, self._qd, self.dt, fast, 1, self.wrenches.compiled())
                if done != 1:
                    q[0] = np.nan                      # reported below, state kept
            for c in self.constraints:
                q, qd = c.apply(self.model, t + self.dt, q, qd)
            if self._loops and _finite(q, qd):
                q, qd = self.loop_closure.apply(self.model, t + self.dt, q, qd)
            ok = q.shape == self._q.shape and qd.shape == self._qd.shape and _finite(q, qd)
        except (ValueError, ArithmeticError) as err:
            raise SimulationError("step at t = %.6f s failed, state kept: %s%s"
                                  % (t, err, self._culprit(t))) from err
        if not ok:
            raise SimulationError("step at t = %.6f s would give a non-finite state (the dynamics are too "
                                  "stiff for dt = %g s or a force is unbounded); state kept%s"
                                  % (t, self.dt, self._culprit(t)))
        self._q, self._qd = q, qd
        self._k += 1

    def _fast_path(self):
        """Arguments of :func:`.fused.fused_step` for the current command, or None
        (a plug-in is not built in). The applied wrenches go with them
        (:meth:`.forces.ExternalWrenches.compiled`)."""
        if not self._fused.usable:
            return None
        return self._fused.arguments(self._command)

    def _culprit(self, t):
        """Name the first force model with a non-finite output at the current state, if any."""
        return self._plug_ins.culprit(t, self._q, self._qd, self._command)
