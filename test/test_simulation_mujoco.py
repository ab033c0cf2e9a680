"""The simulator against MuJoCo (an independent engine) on the bundled arms.

MuJoCo loads the same URDF files (with a <mujoco><compiler .../></mujoco>
block so that it keeps every inertia as written: no rebalancing, no fusing of
fixed links, no visual geoms). Joint limits, damping, friction loss, armature
and contacts are switched off on its side and ours, both integrate at 1 kHz,
and the torque input is held over each step (MuJoCo's qfrc_applied; our
callable tau). MuJoCo's "Euler" integrator is semi-implicit Euler, so both of
our integrators have a MuJoCo twin. Joints are matched by name.

Two kinds of runs, 1 s each. A servoed run (a PD loop tracks a 0.5 rad
sine on every joint) is insensitive to tiny parameter differences. A free
run (sinusoidal torques, gravity, no limits: the arm falls and whips its
wrist through 48 rad) is chaotic: it amplifies a 1e-8 difference in the
mass matrix to 1e-2 rad in 1 s, so it is only a fair test if MuJoCo read
the inertias exactly. MuJoCo 4.0 does (M agrees to 1e-15); MuJoCo 3.3
rounds the principal axes of full inertia tensors to ~2e-7 (the Panda's),
and the free run is then skipped with that reason.

Measured agreement (MuJoCo 4.0.0), largest joint position difference over
1 s: servoed, both arms, 1e-15 rad; free, Panda 3e-10 rad, UR5 5e-13 rad;
with joint damping, 3e-14 rad. The tests allow 1e-7 rad.
"""
import os
import re

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.simulation import JointFriction, simulate

if os.environ.get("CI"):            # in CI a missing reference is a failure, not a skip
    import mujoco  # noqa: E402
else:
    mujoco = pytest.importorskip("mujoco")

URDF = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "urdf")
COMPILER = '<mujoco><compiler discardvisual="true" balanceinertia="false" fusestatic="false"/></mujoco>'
ARMS = {
    "panda_arm.urdf": [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
    "ur5.urdf": [0.3, -1.2, 1.4, -1.0, 0.5, 0.2],
}
INTEGRATORS = {"rk4": "mjINT_RK4", "semi_implicit_euler": "mjINT_EULER"}
TOLERANCE = 1e-7          # [rad] largest joint position difference over 1 s


def load_mujoco(name, integrator, damping=0.0):
    text = open(os.path.join(URDF, name)).read()
    text = re.sub(r"<\?xml[^>]*\?>", "", text)               # from_xml_string wants no declaration
    text = re.sub(r"(<robot[^>]*>)", lambda m: m.group(1) + COMPILER, text, count=1)
    m = mujoco.MjModel.from_xml_string(text)
    m.opt.timestep = 1e-3
    m.opt.integrator = getattr(mujoco.mjtIntegrator, integrator)
    m.opt.gravity[:] = (0.0, 0.0, -9.81)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT) | int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    m.dof_damping[:] = damping
    m.dof_frictionloss[:] = 0.0
    m.dof_armature[:] = 0.0
    return m


def addresses(m, model):
    """qpos and dof addresses of our joints, by name."""
    return ([m.joint(n).qposadr[0] for n in model.joint_names], [m.joint(n).dofadr[0] for n in model.joint_names])


def full_mass_matrix(m, d):
    M = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, M)                                 # MuJoCo >= 3.4
    except TypeError:
        mujoco.mj_fullM(m, M, d.qM)                              # older releases
    return M


def mass_matrix_difference(name):
    """Largest relative difference of MuJoCo's M(q) from ours over 10 random poses."""
    model = rd.load_urdf(os.path.join(URDF, name))
    m = load_mujoco(name, "mjINT_RK4")
    d = mujoco.MjData(m)
    qa, va = addresses(m, model)
    worst = 0.0
    for q in np.random.default_rng(4).uniform(-2, 2, (10, model.nq)):
        d.qpos[qa] = q
        mujoco.mj_forward(m, d)
        M = rd.mass_matrix(model, q)
        worst = max(worst, np.abs(full_mass_matrix(m, d)[np.ix_(va, va)] - M).max() / np.abs(M).max())
    return worst


@pytest.mark.parametrize("name", ARMS)
def test_mujoco_reads_the_same_inertias(name):
    """First make sure MuJoCo's URDF import kept the inertias: M(q) and h(q, qd) agree
    (to 1e-15 with MuJoCo 4.0; 1e-6 allows MuJoCo 3's rounding of principal axes)."""
    model = rd.load_urdf(os.path.join(URDF, name))
    m = load_mujoco(name, "mjINT_RK4")
    d = mujoco.MjData(m)
    qa, va = addresses(m, model)
    rng = np.random.default_rng(4)
    for _ in range(10):
        q, qd = rng.uniform(-2, 2, model.nq), rng.uniform(-1, 1, model.nq)
        d.qpos[qa], d.qvel[va] = q, qd
        mujoco.mj_forward(m, d)
        M = full_mass_matrix(m, d)[np.ix_(va, va)]
        np.testing.assert_allclose(M, rd.mass_matrix(model, q), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(d.qfrc_bias[va], rd.nonlinear_effects(model, q, qd), rtol=1e-6, atol=1e-8)


def run_both(name, integrator, tau, damping=0.0):
    """1 s from the arm's start pose: (our result, MuJoCo's qpos after each step, by joint name).
    tau(t, q, qd) is evaluated on each engine's own state at the start of each step and
    clamped to the effort limits on both sides."""
    model = rd.load_urdf(os.path.join(URDF, name))
    q0, qd0 = np.array(ARMS[name]), np.linspace(0.5, -0.5, model.nq)
    forces = [JointFriction(model, damping=np.full(model.nq, damping))] if damping else []
    ours = simulate(model, q0, qd0, duration=1.0, integrator=integrator, tau=tau, forces=forces, constraints=[])
    m = load_mujoco(name, INTEGRATORS[integrator], damping)
    d = mujoco.MjData(m)
    qa, va = addresses(m, model)
    d.qpos[qa], d.qvel[va] = q0, qd0
    theirs = np.empty((1000, model.nq))
    for k in range(1000):
        u = tau(d.time, d.qpos[qa].copy(), d.qvel[va].copy())
        d.qfrc_applied[va] = np.clip(u, -model.effort_limit, model.effort_limit)
        mujoco.mj_step(m, d)
        theirs[k] = d.qpos[qa]
    assert d.time == pytest.approx(ours.t[-1])
    return ours, theirs


def servo(name):
    """A PD loop (fixed gains, no model) tracking a 0.5 rad sine on every joint."""
    q0 = np.array(ARMS[name])
    phase = np.arange(len(q0))
    return lambda t, q, qd: 100.0 * (q0 + 0.5 * np.sin(np.pi * t + phase) - q) - 5.0 * qd


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("name", ARMS)
def test_servoed_trajectory_agrees_with_mujoco(name, integrator):
    ours, theirs = run_both(name, integrator, servo(name))
    assert np.abs(ours.q - ARMS[name]).max() > 0.4                 # it did move
    assert np.abs(theirs - ours.q[1:]).max() < TOLERANCE


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("name", ARMS)
def test_free_trajectory_agrees_with_mujoco(name, integrator):
    difference = mass_matrix_difference(name)
    if difference > 1e-12:
        pytest.skip("MuJoCo %s read the inertias of %s to %.0e (relative M): the chaotic free run "
                    "would amplify that, not test the simulator" % (mujoco.__version__, name, difference))
    model = rd.load_urdf(os.path.join(URDF, name))
    amplitude, phase = 0.2 * model.effort_limit, np.arange(model.nq)
    ours, theirs = run_both(name, integrator, lambda t, q, qd: amplitude * np.sin(2 * np.pi * t + phase))
    assert np.abs(ours.q[-1] - ARMS[name]).max() > 1.0             # the arm did move
    assert np.abs(theirs - ours.q[1:]).max() < TOLERANCE


@pytest.mark.parametrize("name", ARMS)
def test_joint_damping_agrees_with_mujoco(name):
    """Viscous joint damping of 0.5 N m s/rad on every joint, RK4 on both sides, servoed run."""
    ours, theirs = run_both(name, "rk4", servo(name), damping=0.5)
    assert np.abs(theirs - ours.q[1:]).max() < TOLERANCE
    undamped, _ = run_both(name, "rk4", servo(name))
    assert np.abs(undamped.q - ours.q).max() > 1e3 * TOLERANCE      # the damping matters
