"""``rd.simulate``: a :class:`~robot_dynamics.simulation.Simulator` run for a
duration, its trajectory recorded (a controller ``tau(t, q, qd)`` at the
physics rate, constant wrenches, a progress bar)."""
import sys
import time

import numpy as np

from ..algorithms.energy import kinetic_energy, potential_energy
from ..errors import InputError
from .result import ProgressBar, SimulationResult
from .simulator import Simulator


def simulate(model, q0, qd0=None, *, duration, dt=1e-3, integrator="rk4", tau=None, f_ext=None,
             forces=None, constraints=None, actuator=None, record_every=1, progress=None, actuated=None,
             baumgarte=(0.0, 0.0)):
    """Simulate the arm for ``duration`` seconds and record its trajectory.

    Args:
        model: the robot.
        q0, qd0: (nq,) initial state (qd0 default zeros).
        duration: simulated time [s]; ``round(duration / dt)`` steps.
        dt: physics step [s].
        integrator: ``'rk4'``, ``'semi_implicit_euler'``, ``'explicit_euler'`` or an
            :class:`~robot_dynamics.simulation.Integrator` object.
        tau: joint effort commands [N m or N]: None (zero), an (nq,) array
            (constant) or a callable ``tau(t, q, qd) -> (nq,)`` evaluated
            once per step at its start and held over the step (a controller
            running at the physics rate). Clamped to the effort limits. With
            ``actuated``: one value per actuated joint, in its order.
        f_ext: constant external wrenches on links, ``{link: (6,)}`` in the
            link frames (the convention of :func:`robot_dynamics.aba`).
        forces, constraints, actuator: as for :class:`Simulator`; None gives
            the URDF's damping, friction, position stops and velocity limits,
            ``[]`` none of them.
        record_every: keep every n-th step (the last one is always kept).
        progress: show a text progress bar on stderr: True, False, or None
            (shown for runs of 50,000 steps or more when stderr is a terminal).
        actuated, baumgarte: as for :class:`Simulator` (a model with loops
            starts on them, ``q0`` closed keeping the actuated joints).

    Returns:
        :class:`~robot_dynamics.simulation.SimulationResult` (t, q, qd, tau, energy).

    Raises:
        ValueError: bad arguments or a bad command from ``tau``.
        SimulationError: the state would become non-finite.
    """
    if not (np.isfinite(duration) and duration >= 0):
        raise InputError("duration must be a finite time >= 0 [s], got %r" % (duration,))
    if int(record_every) != record_every or record_every < 1:
        raise InputError("record_every must be an integer >= 1, got %r" % (record_every,))
    sim = Simulator(model, dt=dt, integrator=integrator, forces=forces, constraints=constraints,
                    actuator=actuator, q0=q0, qd0=qd0, actuated=actuated, baumgarte=baumgarte)
    for link, w in (f_ext or {}).items():
        sim.apply_wrench(link, w, "link")
    control = tau if callable(tau) else None
    if tau is not None and control is None:
        sim.set_command(tau)
    steps = int(round(duration / sim.dt))
    keep = list(range(0, steps + 1, int(record_every)))
    if keep[-1] != steps:
        keep.append(steps)
    n = len(keep)
    T, Q, QD, TAU = np.empty(n), np.empty((n, model.nq)), np.empty((n, model.nq)), np.empty((n, model.nq))
    if progress is None:
        progress = steps >= 50_000 and sys.stderr.isatty()
    bar = ProgressBar(steps) if progress else None
    start = time.perf_counter()
    j = 0
    try:
        for k in range(steps + 1):
            if control is not None:
                try:
                    sim.set_command(control(sim.time, sim.q, sim.qd))
                except ValueError as err:
                    raise InputError("tau(t = %.6f s): %s" % (sim.time, err)) from None
            if k == keep[j]:
                T[j], Q[j], QD[j], TAU[j] = sim.time, sim.q, sim.qd, sim.effort
                j += 1
            if k == steps:
                break
            sim.step()
            if bar is not None and k % 1000 == 0:
                bar.update(k, sim.time)
    finally:
        if bar is not None:
            bar.update(steps, sim.time)
            bar.close()
    wall = time.perf_counter() - start
    energy = kinetic_energy(model, Q, QD) + potential_energy(model, Q)
    return SimulationResult(T, Q, QD, TAU, np.atleast_1d(energy), tuple(model.joint_names), sim.dt,
                            sim.integrator.name, wall)
