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
time). Target of the simulated-arm issue: >= 20x real time at 1 kHz.
"""
import argparse
import pathlib
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=10.0, help='simulated seconds per run (default 10)')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--markdown', action='store_true')
    args = parser.parse_args(argv)
    model = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'))
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
    return 0


if __name__ == '__main__':
    sys.exit(main())
