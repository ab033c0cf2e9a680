"""Demo: load an arm from a URDF and print its dynamics at one pose.

Usage: ``python -m robot_dynamics.demo [--urdf PATH] [--duration S] [--dt S]``
(``scripts/demo.sh`` or ``ros2 run robot_dynamics robot_dynamics_demo``).

Prints the joints and their limits, the total mass, then at the "mid" pose
(each joint at the midpoint of its position limits, 0 for an unlimited
joint) the gravity torques and the mass matrix, and finally a short free
fall: zero motor torque, joint damping and friction only, integrated with
semi-implicit Euler (1 kHz by default). The energy balance at the end checks the
integration: E_end = E_start - (work done by damping) up to the
integrator's error.
"""
import argparse
import os
import sys
import time

import numpy as np

import robot_dynamics as rd

# The bundled 7-DOF arm (Franka Emika Panda, without the hand's fingers).
BUNDLED_ARM = 'panda_arm.urdf'
PRINT_EVERY = 0.2   # [s] simulated time between printed states


def bundled_urdf(name=BUNDLED_ARM):
    """Path of a URDF shipped with the package: checkout first, then ROS share dir."""
    checkout = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'urdf', name)
    if os.path.isfile(checkout):
        return os.path.normpath(checkout)
    try:  # installed with colcon: share/robot_dynamics/urdf/
        from ament_index_python.packages import get_package_share_directory
        shared = os.path.join(get_package_share_directory('robot_dynamics'), 'urdf', name)
        if os.path.isfile(shared):
            return shared
    except (ImportError, LookupError, OSError):  # no ament_index, prefix path or package
        pass
    raise FileNotFoundError(
        f'bundled URDF {name!r} not found in the checkout nor in the robot_dynamics share '
        f'directory; pass --urdf PATH')


def mid_pose(model):
    """Midpoint of each joint's position limits; 0 where a limit is infinite."""
    lower, upper = np.asarray(model.lower_limit), np.asarray(model.upper_limit)
    finite = np.isfinite(lower) & np.isfinite(upper)
    q = np.zeros(model.nq)
    q[finite] = 0.5 * (lower[finite] + upper[finite])
    return q


def energy(model, q, qd):
    """Total mechanical energy T + U [J]."""
    return float(rd.kinetic_energy(model, q, qd) + rd.potential_energy(model, q))


def print_joints(model):
    """Table of the joints with their limits and dynamics parameters."""
    width = max((len(n) for n in model.joint_names), default=5)
    print(f'{"joint":<{width}}  {"lower":>8} {"upper":>8} {"vel max":>8} {"effort":>8} '
          f'{"damping":>8} {"friction":>8}')
    print(f'{"":<{width}}  {"[rad]":>8} {"[rad]":>8} {"[rad/s]":>8} {"[N m]":>8} '
          f'{"[N m s]":>8} {"[N m]":>8}')
    for i, name in enumerate(model.joint_names):
        print(f'{name:<{width}}  {model.lower_limit[i]:8.3f} {model.upper_limit[i]:8.3f} '
              f'{model.velocity_limit[i]:8.3f} {model.effort_limit[i]:8.1f} '
              f'{model.damping[i]:8.4f} {model.friction[i]:8.4f}')


def free_fall(model, q0, duration, dt=1e-3):
    """Zero motor torque from rest at q0; semi-implicit Euler, damping and friction on.

    Returns the final (q, qd) and the energy dissipated by the joint
    damping and friction [J]. Joint limits are not enforced.
    """
    q, qd = q0.copy(), np.zeros_like(q0)
    steps = int(round(duration / dt))
    every = max(1, int(round(PRINT_EVERY / dt)))
    dissipated = 0.0
    print(f'{"t [s]":>6}  q [rad]')
    for k in range(steps + 1):
        if k % every == 0:
            print(f'{k * dt:6.2f}  {q}')
        if k == steps:
            break
        tau_f = rd.friction_torques(model, qd)       # damping*qd + friction*sign(qd)
        qdd = rd.aba(model, q, qd, -tau_f)           # M qdd + h = tau - tau_f, tau = 0
        dissipated += dt * float(tau_f @ qd)         # power lost in the joints
        qd = qd + dt * qdd                           # semi-implicit Euler: velocity first,
        q = q + dt * qd                              # then position with the new velocity
    return q, qd, dissipated


def main(argv=None):
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog='robot_dynamics_demo',
        description='Print the dynamics of a robot arm loaded from a URDF.')
    parser.add_argument('--urdf', metavar='PATH',
                        help=f'URDF file (default: the bundled 7-DOF arm, {BUNDLED_ARM})')
    parser.add_argument('--duration', type=float, default=1.0, metavar='S',
                        help='seconds of simulated free fall (default: %(default)s)')
    parser.add_argument('--dt', type=float, default=1e-3, metavar='S',
                        help='integration time step (default: %(default)s, i.e. 1 kHz)')
    args = parser.parse_args(argv)
    if not args.duration >= 0:
        parser.error(f'--duration must be >= 0, got {args.duration}')
    if not 0 < args.dt <= PRINT_EVERY:
        parser.error(f'--dt must be in (0, {PRINT_EVERY}], got {args.dt}')

    try:
        path = args.urdf or bundled_urdf()
        model = rd.load_urdf(path)
    except (OSError, ValueError) as err:    # missing file, rd.URDFError
        print(f'robot_dynamics_demo: error: {err}', file=sys.stderr)
        return 1

    with np.printoptions(precision=3, suppress=True, linewidth=120):
        print(f'URDF: {path}')
        print(f'{model.nq} joints, {len(model.link_names)} links, total mass '
              f'{model.total_mass:.3f} kg, gravity {np.asarray(model.gravity)} m/s^2\n')
        print_joints(model)

        q0 = mid_pose(model)
        print(f'\nPose q0 (midpoint of the limits) [rad]:\n{q0}')
        print(f'\nGravity torques g(q0) [N m] (what the motors apply to hold q0):\n'
              f'{rd.gravity_torques(model, q0)}')
        print(f'\nMass matrix M(q0) [kg m^2]:\n{rd.mass_matrix(model, q0)}')

        print(f'\nFree fall from q0 for {args.duration:g} s: tau = 0, joint damping on, '
              f'semi-implicit Euler at {1 / args.dt:g} Hz (limits not enforced)')
        e0 = energy(model, q0, np.zeros(model.nq))
        start = time.perf_counter()
        q, qd, dissipated = free_fall(model, q0, args.duration, args.dt)
        wall = time.perf_counter() - start
        e1 = energy(model, q, qd)
        print(f'\nEnergy T + U [J]: start {e0:.4f}, end {e1:.4f}; dissipated by damping '
              f'{dissipated:.4f}; integration error {e1 - (e0 - dissipated):+.2e}')
        print(f'(semi-implicit Euler is first order: halving --dt halves the error; '
              f'{wall:.2f} s wall time)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
