"""Headless simulation speed: the simulator core without ROS, real-time factors.

Usage (from the checkout, after scripts/setup-venv.sh):
    .venv/bin/python bench/simulation.py [--duration 10] [--repeats 3] [--markdown]

Runs :func:`robot_dynamics.simulation.simulate` on the bundled 7-DOF Panda
(urdf/panda_arm.urdf) from its ready pose, 1 kHz physics, URDF damping,
position stops and velocity limits on (the defaults), in four cases:

- ``hold``: a gravity + Coriolis compensation controller called at every
  physics step (``tau = callable(t, q, qd)``), the arm at rest;
- ``servo``: every joint position-servoed to a pose 0.3 rad away (the
  simulator's computed-torque drive, one RNEA per evaluation);
- ``fall``: zero torque, the arm falls onto its stops and velocity limits
  (the costliest case: the velocity limiter acts at most steps);
- ``free``: zero torque with the stops, limits and damping off (ABA alone).

For each integrator (RK4, semi-implicit Euler) it prints the best of
``--repeats`` wall times and the real-time factor (simulated time / wall
time). Target: >= 20x real time at 1 kHz.

Then the time of one physics step side by side with MuJoCo in the same
run (``--no-mujoco`` leaves it out): MuJoCo compiles the same URDF itself,
with its joint damping, friction loss, contacts and joint limits switched
off so that both integrate the free arm (zero torque, gravity); our
``Simulator.step(n)`` (forces and constraints off: one compiled call for
the n steps) against ``mujoco.mj_step(model, data, nstep=n)`` (n steps in
C), semi-implicit Euler against MuJoCo's Euler (semi-implicit too), RK4
against RK4 and our linearly implicit Euler against MuJoCo's implicitfast
(with no stiff force in this case both reduce to semi-implicit Euler, but
each does the work of its implicit step: ours a CRBA, an RNEA and a solve). Both start from the same state and are checked to reach the
same state after 0.1 s. Timing loops alternate; a ratio is the median of
the ratios of back-to-back pairs. Target: ratio <= 1.0.

Then ``Simulator.step()`` (one step a call, as the simulator node calls it;
RK4, the default forces and velocity limits, the arm servoed at its ready
pose) without a wrench and with one applied wrench on panda_link7, in the
link frame and in the base frame, side by side: ``--loops`` alternating
loops of 200 steps each, the median time per step and the median of the
paired ratios (issue 34: a wrench used to send each stage's ABA to the
thread pool, 231 us against 32 us). Target: ratio <= 1.5.
``--only-wrench`` runs this table alone.
"""
import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.simulation import simulate  # noqa: E402

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


def cases(model):
    def hold(t, q, qd):
        return rd.nonlinear_effects(model, q, qd)
    return {
        'hold': dict(tau=hold),
        'servo': dict(command=('position', READY + 0.3)),
        'fall': dict(),
        'free': dict(forces=[], constraints=[]),
    }


def run_case(model, integrator, duration, options):
    options = dict(options)
    command = options.pop('command', None)
    if command is not None:
        from robot_dynamics.simulation import Simulator
        sim = Simulator(model, dt=1e-3, integrator=integrator, q0=READY)
        sim.set_command(command[1], mode=command[0])
        start = time.perf_counter()
        sim.step(int(round(duration / 1e-3)))
        return time.perf_counter() - start
    start = time.perf_counter()
    simulate(model, READY, duration=duration, integrator=integrator, **options)
    return time.perf_counter() - start


def mujoco_steps(model, loops, n=1000):
    """Per-step times [us] of our compiled steps and MuJoCo's, and their paired ratios."""
    import mujoco
    from robot_dynamics.simulation import Simulator
    mj = mujoco.MjModel.from_xml_path(str(ROOT / 'urdf' / 'panda_arm.urdf'))
    mj.dof_damping[:] = 0.0
    mj.dof_frictionloss[:] = 0.0
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    mj.opt.timestep = 1e-3
    data = mujoco.MjData(mj)
    rows = []
    for ours, theirs in (('semi_implicit_euler', mujoco.mjtIntegrator.mjINT_EULER),
                         ('rk4', mujoco.mjtIntegrator.mjINT_RK4),
                         ('implicit_euler', mujoco.mjtIntegrator.mjINT_IMPLICITFAST)):
        mj.opt.integrator = theirs
        sim = Simulator(model, dt=1e-3, integrator=ours, q0=READY, forces=[], constraints=[])
        mujoco.mj_resetData(mj, data)
        data.qpos[:] = READY
        sim.step(100)
        mujoco.mj_step(mj, data, nstep=100)
        err = np.abs(sim.q - data.qpos).max()
        if not err < 1e-6:
            raise SystemExit('simulation benchmark: %s and MuJoCo differ by %.2e rad after 0.1 s' % (ours, err))

        def step_ours():                     # n steps from READY at rest (a long free fall goes wild)
            sim.reset(READY)
            start = time.perf_counter()
            sim.step(n)
            return time.perf_counter() - start

        def step_mujoco():
            mujoco.mj_resetData(mj, data)
            data.qpos[:] = READY
            start = time.perf_counter()
            mujoco.mj_step(mj, data, nstep=n)
            return time.perf_counter() - start
        a, b = [], []
        for k in range(loops):
            pair = (step_ours(), step_mujoco()) if k % 2 == 0 else tuple(reversed((step_mujoco(), step_ours())))
            a.append(pair[0] / n * 1e6)
            b.append(pair[1] / n * 1e6)
        rows.append((ours, theirs.name, statistics.median(a), statistics.median(b),
                     statistics.median(x / y for x, y in zip(a, b))))
    return rows


WRENCHES = {'link': [0.0, 0.0, -10.0, 0.0, 0.5, 0.0], 'base': [0.0, 0.0, -10.0, 0.0, 0.5, 0.0]}


def wrench_steps(model, loops, n=200):
    """Per-step times [us] of Simulator.step() without and with one applied wrench
    (link frame, base frame): rows (frame, without, with, median paired ratio)."""
    from robot_dynamics.simulation import Simulator
    rows = []
    for frame, wrench in WRENCHES.items():
        plain, loaded = (Simulator(model, dt=1e-3, integrator='rk4', q0=READY) for _ in range(2))
        for sim in (plain, loaded):
            sim.set_command(READY, mode='position')
        loaded.apply_wrench('panda_link7', wrench, frame)

        def steps(sim):
            sim.reset(READY)
            start = time.perf_counter()
            for _ in range(n):
                sim.step()
            return (time.perf_counter() - start) / n * 1e6
        steps(plain), steps(loaded)                         # compile / load
        a, b = [], []
        for k in range(loops):
            pair = (steps(plain), steps(loaded)) if k % 2 == 0 else tuple(reversed((steps(loaded), steps(plain))))
            a.append(pair[0])
            b.append(pair[1])
        rows.append((frame, statistics.median(a), statistics.median(b), statistics.median(y / x for x, y in zip(a, b))))
    return rows


def print_wrench_steps(rows, markdown):
    if markdown:
        print('| Simulator.step (RK4, Panda) | no wrench [us] | one wrench [us] | ratio | target | met |')
        print('|---|---:|---:|---:|---:|---|')
        for frame, a, b, r in rows:
            print('| wrench in the %s frame | %.1f | %.1f | %.2f | <= 1.5 | %s |' % (frame, a, b, r, 'yes' if r <= 1.5 else 'no'))
    else:
        for frame, a, b, r in rows:
            print('step without wrench %7.1f us   with one (%s frame) %7.1f us   ratio %.2f' % (a, frame, b, r))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=10.0, help='simulated seconds per run (default 10)')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--no-mujoco', action='store_true', help='leave out the step-time comparison with MuJoCo')
    parser.add_argument('--loops', type=int, default=41, help='timing loops per step comparison (default 41)')
    parser.add_argument('--only-wrench', action='store_true', help='only the step with and without a wrench')
    args = parser.parse_args(argv)
    model = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'))
    if args.only_wrench:
        print_wrench_steps(wrench_steps(model, args.loops), args.markdown)
        return 0
    for integrator in ('rk4', 'semi_implicit_euler'):       # compile / load every kernel first
        for options in cases(model).values():
            run_case(model, integrator, 0.05, options)
    rows = []
    for name, options in cases(model).items():
        for integrator in ('rk4', 'semi_implicit_euler'):
            wall = min(run_case(model, integrator, args.duration, options) for _ in range(args.repeats))
            rows.append((name, integrator, wall, args.duration / wall))
    if args.markdown:
        print('| case | integrator | wall time for %g s | real-time factor |' % args.duration)
        print('|---|---|---:|---:|')
        for name, integ, wall, rtf in rows:
            print('| %s | %s | %.2f s | %.1fx |' % (name, integ, wall, rtf))
    else:
        for name, integ, wall, rtf in rows:
            print('%-6s %-20s %7.2f s  %6.1fx real time' % (name, integ, wall, rtf))
    print()
    print_wrench_steps(wrench_steps(model, args.loops), args.markdown)
    if args.no_mujoco:
        return 0
    steps = mujoco_steps(model, args.loops)
    if args.markdown:
        print()
        print('| our step | MuJoCo step | ours [us] | MuJoCo [us] | ratio | target | met |')
        print('|---|---|---:|---:|---:|---:|---|')
        for ours, theirs, a, b, r in steps:
            print('| %s | %s | %.2f | %.2f | %.2f | <= 1.0 | %s |' % (ours, theirs, a, b, r, 'yes' if r <= 1.0 else 'no'))
    else:
        for ours, theirs, a, b, r in steps:
            print('step %-20s %6.2f us   MuJoCo %-12s %6.2f us   ratio %.2f' % (ours, a, theirs, b, r))
    return 0


if __name__ == '__main__':
    sys.exit(main())
