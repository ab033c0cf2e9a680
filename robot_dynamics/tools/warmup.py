"""Compile every kernel once into the numba cache, so no later run pays for it.

Run by the set-up script (``scripts/setup-venv.sh``) after the package is
installed; ``python -m robot_dynamics.tools.warmup`` does it by hand. A
plain tree and a coupled (mimic) one, one state and a batch, cover every
specialisation the library compiles.

``--part first`` and ``--part second`` split the work in two halves of
about the same compile time (the fixed-base algorithms, the ABA's
derivatives and the regressor; the RNEA's and the Coriolis matrix's
derivatives, the floating-base kernels and the simulator's compiled step:
about 290 s each on a loaded 2-core machine), which the set-up runs as two
processes at once on a machine with two or more cores: numba writes each
cache file atomically, so the two may meet on a shared helper.
"""
import argparse
import time

import numpy as np

PARTS = ("all", "first", "second")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=PARTS, default="all", help="which kernels (default: all)")
    part = ap.parse_args(argv).part
    import robot_dynamics as rd
    from robot_dynamics.cache import cache_dir
    from robot_dynamics.tools.sample import random_urdf

    from robot_dynamics.simulation import simulate

    t0 = time.perf_counter()
    arm = rd.load_urdf(random_urdf(0, 7, branching=0.0, p_fixed=0.0, p_massless=0.0))
    coupled = rd.load_urdf(random_urdf(1, 6, mimic=True, p_massless=0.0))
    for model in (arm, coupled):
        if part in ("all", "first"):
            exercise(rd, model)
            exercise_derivatives(rd, model, ("aba", "regressor"))
        if part in ("all", "second"):
            exercise_derivatives(rd, model, ("rnea", "coriolis"))
    panda = rd.load_urdf(rd.bundled_path("panda_arm.urdf"))
    if part in ("all", "first"):
        exercise_task_space(rd, panda)
    if part in ("all", "second"):
        exercise_laws(rd, panda)
        floating = rd.load_urdf(random_urdf(2, 4, p_massless=0.0), root_joint="floating")
        exercise_root(rd, floating)
        for integrator in ("rk4", "semi_implicit_euler", "implicit_euler"):   # the simulator's compiled step
            simulate(arm, np.zeros(arm.nq), duration=0.002, dt=0.001, integrator=integrator)
            sim = rd.Simulator(arm, dt=0.001, integrator=integrator)           # ... with an applied wrench
            sim.apply_wrench(arm.link_names[-1], np.ones(6))
            sim.step(2)
    print("robot_dynamics: kernels (%s) compiled into %s in %.0f s" % (part, cache_dir(), time.perf_counter() - t0))


def exercise(rd, model):
    """Call every algorithm but the derivatives on one state (with and without Data) and on a batch."""
    data, n = rd.Data(model), model.nq
    one, many = np.full(n, 0.1), np.full((3, n), 0.1)
    link = model.link_names[-1]
    for x in (one, many):
        rd.rnea(model, x, x, x)
        rd.rnea(model, x, x, x, f_ext={link: np.ones(6)})
        rd.gravity_torques(model, x)
        rd.nonlinear_effects(model, x, x)
        rd.mass_matrix(model, x)
        rd.aba(model, x, x, x)
        rd.aba(model, x, x, x, f_ext={link: np.ones(6)})
        rd.coriolis_matrix(model, x, x)
        rd.kinetic_energy(model, x, x)
        rd.potential_energy(model, x)
        rd.forward_kinematics(model, x)
        rd.jacobian(model, x, link)
    rd.rnea(model, one, one, one, data=data)
    rd.gravity_torques(model, one, data=data)
    rd.nonlinear_effects(model, one, one, data=data)
    rd.mass_matrix(model, one, data=data)
    rd.aba(model, one, one, one, data=data)


#: A state of the bundled Panda away from singularities (its flange moves in 6 DOF).
PANDA_Q = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8])


def exercise_task_space(rd, model):
    """The task-space kinematics on the bundled Panda: one state, with and without Data; a batch."""
    data, link = rd.Data(model), model.link_names[-1]
    one, many = PANDA_Q, np.tile(PANDA_Q, (3, 1))
    for x in (one, many):
        rd.link_pose(model, x, link)
        rd.jacobian(model, x, link)
        rd.operational_space_inertia(model, x, link)
    rd.link_pose(model, one, link, data=data)
    rd.jacobian(model, one, link, data=data)
    rd.jacobian_derivative_times_qd(model, one, one, link, (0.0, 0.0, 0.0))


def exercise_laws(rd, model):
    """The impedance laws' kernels on the bundled Panda (modal and given damping), which dynamics_node's
    impedance modes call per joint state; in the second part, to even the parts' compile times (with the
    laws and the task space both in the first, CI at d124e44 took 515 s for it and 273 s for the second)."""
    from robot_dynamics.model.configuration import matrix_quaternion
    one, n, link = PANDA_Q, model.nq, model.link_names[-1]
    for damping in (None, np.eye(n)):
        rd.JointImpedance(model, 10.0, damping).torque(one, one, one + 0.01)
    T = rd.link_pose(model, one, link)
    quaternion = matrix_quaternion(T[:3, :3])
    for damping in (None, np.eye(6)):
        law = rd.CartesianImpedance(model, link, [100.0] * 3 + [10.0] * 3, damping, max_condition=1e12)
        law.torque(one, one, T[:3, 3], quaternion)


def exercise_derivatives(rd, model, which=("rnea", "aba", "coriolis", "regressor")):
    """The derivatives named in ``which`` (and the regressor) on one state
    (with and without Data) and on a batch."""
    data, n = rd.Data(model), model.nq
    one, many = np.full(n, 0.1), np.full((3, n), 0.1)
    for x in (one, many):
        if "rnea" in which:
            rd.rnea_derivatives(model, x, x, x)
        if "aba" in which:
            rd.aba_derivatives(model, x, x, x)
        if "coriolis" in which:
            rd.coriolis_derivatives(model, x, x)
        if "regressor" in which:
            rd.regressor(model, x, x, x)
    if "rnea" in which:
        rd.rnea_derivatives(model, one, one, one, data=data)
    if "aba" in which:
        rd.aba_derivatives(model, one, one, one, data=data)


def exercise_root(rd, model):
    """The floating-base entry points and batches (the root variants in rnea, crba, aba), the centroidal kernel and the
    derivatives (the fixed-base derivative kernels on the root chain)."""
    data = rd.Data(model)
    q, v = model.neutral(), np.full(model.nv, 0.1)
    Q, V = np.tile(q, (3, 1)), np.tile(v, (3, 1))
    for x, y in ((q, v), (Q, V)):
        rd.rnea(model, x, y, y)
        rd.gravity_torques(model, x)
        rd.nonlinear_effects(model, x, y)
        rd.mass_matrix(model, x)
        rd.aba(model, x, y, y)
        rd.centroidal_momentum_matrix(model, x)
        rd.rnea_derivatives(model, x, y, y)
        rd.rnea_derivatives(model, x, y, y, f_ext={model.link_names[-1]: np.ones(6)})
        rd.aba_derivatives(model, x, y, y)
    rd.rnea(model, q, v, v, data=data)
    rd.gravity_torques(model, q, data=data)
    rd.nonlinear_effects(model, q, v, data=data)
    rd.mass_matrix(model, q, data=data)
    rd.aba(model, q, v, v, data=data)


if __name__ == "__main__":
    main()
