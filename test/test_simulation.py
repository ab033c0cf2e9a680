"""Simulator: integrators against closed forms, energy behaviour,
limits, commands, plug-ins and bad input. Figures quoted in docs/SIMULATION.md."""
import io
import os
import warnings

import numpy as np
import pytest
from scipy.special import ellipk

import robot_dynamics as rd
from robot_dynamics.tools.sample import random_urdf
from robot_dynamics.simulation import (RK4, Command, ExternalWrenches, JointActuator, JointFriction,
                                       PositionLimits, ProgressBar, SimulationError, SimulationResult,
                                       Simulator, VelocityLimits, get_integrator, project_velocity, simulate)

HERE = os.path.dirname(os.path.abspath(__file__))
URDF = os.path.join(HERE, os.pardir, "urdf")
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])      # Panda "ready" pose
INTEGRATORS = ["rk4", "semi_implicit_euler"]


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(os.path.join(URDF, "panda_arm.urdf"))


@pytest.fixture(scope="module")
def ur5():
    return rd.load_urdf(os.path.join(URDF, "ur5.urdf"))


def pendulum_urdf(length, mass):
    """A point mass on a massless rod, hinge about y, hanging along -z at q = 0."""
    return """<robot name="pendulum"><link name="base"/>
      <joint name="hinge" type="continuous"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/></joint>
      <link name="bob"><inertial><origin xyz="0 0 %r"/><mass value="%r"/>
        <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>""" % (-length, mass)


def measured_period(result, centre=0.0):
    """Mean time between upward crossings of q = centre (linear interpolation)."""
    q, t = result.q[:, 0] - centre, result.t
    k = np.flatnonzero((q[:-1] < 0) & (q[1:] >= 0))
    crossings = t[k] - q[k] * (t[k + 1] - t[k]) / (q[k + 1] - q[k])
    assert len(crossings) >= 4
    return np.diff(crossings).mean()


# --- pendulum periods --------------------------------------------------------------------------

L, G = 0.8, 9.81


@pytest.fixture(scope="module")
def pendulum():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)       # a point mass has zero inertia, on purpose
        return rd.load_urdf(pendulum_urdf(L, 1.5), gravity=(0, 0, -G))


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_small_amplitude_period_is_2pi_sqrt_l_over_g(pendulum, integrator):
    T0 = 2 * np.pi * np.sqrt(L / G)
    r = simulate(pendulum, [0.01], duration=6 * T0, integrator=integrator)
    assert measured_period(r) == pytest.approx(T0, rel=1e-3)      # measured: 6e-6 (= amplitude^2 / 16)


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("amplitude", [1.5, 2.8])
def test_large_amplitude_period_is_the_elliptic_integral(pendulum, integrator, amplitude):
    T = 4 * np.sqrt(L / G) * ellipk(np.sin(amplitude / 2) ** 2)   # scipy's ellipk takes m = k^2
    r = simulate(pendulum, [amplitude], duration=5 * T, integrator=integrator)
    assert measured_period(r) == pytest.approx(T, rel=1e-3)       # measured: < 1e-6


def test_compound_pendulum_rod(pendulum):
    """The one-axis arm (thin rod, a = 0.43 m): T0 = 2 pi sqrt(I / (m g a/2)) = 2 pi sqrt(2 a / (3 g))."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)       # a thin rod: no inertia about its axis
        model = rd.load_urdf(os.path.join(URDF, "textbook", "one_axis_arm.urdf"), gravity=(0, -9.81, 0))
    T0 = 2 * np.pi * np.sqrt(2 * 0.43 / (3 * 9.81))
    down = -np.pi / 2                                             # rod along -y0: hanging
    r = simulate(model, [down + 0.005], duration=6 * T0, forces=[], constraints=[])
    assert measured_period(r, centre=down) == pytest.approx(T0, rel=1e-3)


# --- energy ------------------------------------------------------------------------------------

def energy_drift(result):
    """Largest |E(t) - E(0)| relative to the energy scale max(|E0|, max kinetic energy)."""
    E = result.energy
    return np.abs(E - E[0]).max() / max(abs(E[0]), np.ptp(E), 1e-12)


def test_rk4_conserves_energy_of_the_7_dof_arm(panda):
    """No damping, no input, 10 s at 1 kHz from the ready pose with 0.3 rad/s on every joint: the
    arm falls through its (disabled) limits and whips its wrist up to ~90 rad/s."""
    r = simulate(panda, READY, np.full(7, 0.3), duration=10.0, forces=[], constraints=[])
    assert r.t[-1] == pytest.approx(10.0)
    assert np.abs(r.qd).max() > 20                                # a demanding run, not a quiet one
    assert energy_drift(r) < 1e-3                                 # measured: 9e-7 (7.5e-5 J of 85 J)


@pytest.mark.parametrize("integrator, bound", [("rk4", 1e-9), ("semi_implicit_euler", 0.03)])
def test_energy_error_at_realistic_speeds(panda, integrator, bound):
    """Zero gravity, joint speeds up to 1 rad/s, 10 s. RK4: 1e-11 relative. Semi-implicit Euler
    is not symplectic with a configuration-dependent M: its error is O(dt) and drifts
    (measured: 2 % after 10 s, 13 % after 100 s; half that at dt = 0.5 ms)."""
    model = rd.load_urdf(os.path.join(URDF, "panda_arm.urdf"), gravity=(0, 0, 0))
    qd0 = np.array([0.5, -0.4, 0.6, 0.5, -0.7, 0.8, 1.0])
    r = simulate(model, READY, qd0, duration=10.0, integrator=integrator, forces=[], constraints=[])
    assert energy_drift(r) < bound


def test_damping_dissipates_energy_monotonically(panda):
    b = np.full(7, 0.5)
    r = simulate(panda, READY, np.full(7, 0.5), duration=3.0, forces=[JointFriction(panda, damping=b)],
                 constraints=[])
    dE = np.diff(r.energy)
    assert np.all(dE < 1e-9)                                       # never increases (RK4 error ~1e-12 J)
    assert r.energy[-1] < r.energy[0] - 1.0
    # Energy balance: what was lost is the work of the dampers, integral of qd^T B qd dt.
    power = np.einsum("ij,j,ij->i", r.qd, b, r.qd)
    dissipated = np.sum(0.5 * (power[1:] + power[:-1]) * np.diff(r.t))
    assert r.energy[0] - r.energy[-1] == pytest.approx(dissipated, rel=1e-6)


def test_urdf_damping_is_on_by_default(panda):
    sim = Simulator(panda, constraints=[])
    assert isinstance(sim.forces[0], JointFriction)
    np.testing.assert_array_equal(sim.forces[0].damping, panda.damping)
    qd = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(sim.forces[0].generalized_force(panda, 0.0, READY, qd, sim.command),
                               -rd.friction_torques(panda, qd))


def test_coulomb_friction_matches_friction_torques():
    text = open(os.path.join(URDF, "panda_arm.urdf")).read().replace('friction="0.0"', 'friction="0.8"')
    model = rd.load_urdf(text)
    fr = JointFriction(model, smoothing=0.02)
    qd = np.linspace(-0.1, 0.1, 7)
    np.testing.assert_allclose(fr.generalized_force(model, 0, READY, qd, None),
                               -rd.friction_torques(model, qd, smoothing=0.02), rtol=1e-14, atol=1e-15)


def test_coulomb_friction_creeps_below_breakaway():
    """Smoothed Coulomb friction, no stiction: a hinge (no gravity) pushed at half the friction
    level creeps at the velocity where f_c tanh(qd / smoothing) balances the push."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)
        model = rd.load_urdf(pendulum_urdf(L, 1.5), gravity=(0, 0, 0))
    friction = JointFriction(model, smoothing=0.02, friction=[0.8])
    r = simulate(model, [0.0], duration=1.0, tau=[0.4], forces=[friction])
    assert r.qd[-1, 0] == pytest.approx(0.02 * np.arctanh(0.5), rel=1e-6)


# --- limits ------------------------------------------------------------------------------------

STOP_BOUND = 0.05      # [rad] largest penetration past a position limit allowed by the tests


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("joint", range(7))
def test_full_effort_into_a_position_limit_does_not_tunnel(panda, integrator, joint):
    """Joint driven at +effort_limit, then at -effort_limit, for 3 s each while the other joints
    hang limp under gravity (and hit their own stops): every joint stays within STOP_BOUND of
    its limits the whole time (measured worst: 0.034 rad)."""
    q0 = np.clip(panda.neutral(), panda.lower_limit + 0.2, panda.upper_limit - 0.2)
    for sign in (1, -1):
        tau = np.zeros(7)
        tau[joint] = sign * panda.effort_limit[joint]
        r = simulate(panda, q0, duration=3.0, integrator=integrator, tau=tau)
        past = np.maximum(r.q - panda.upper_limit, panda.lower_limit - r.q)
        assert past.max() < STOP_BOUND
        assert past[-1, joint] > 0                                # it did reach the stop


@pytest.mark.parametrize("joint", range(7))
def test_a_joint_held_against_its_stop_rests_at_the_static_overshoot(panda, joint):
    """The other joints hold their positions: the driven joint settles at (effort - g) / k."""
    stops = PositionLimits(panda)
    q0 = np.clip(READY, panda.lower_limit + 0.2, panda.upper_limit - 0.2)
    sim = Simulator(panda, q0=q0)
    sim.set_command(q0, mode="position")
    sim.set_command([panda.effort_limit[joint]], joints=[panda.joint_names[joint]])
    sim.step(3000)
    g = rd.gravity_torques(panda, sim.q)[joint]
    assert sim.q[joint] - panda.upper_limit[joint] == pytest.approx(
        (panda.effort_limit[joint] - g) / stops.stiffness[joint], rel=1e-3)


def test_default_stops_are_as_stiff_as_stable_integration_allows(panda):
    stops = PositionLimits(panda, dt=1e-3)
    assert np.all(stops.overshoot_at_full_effort < 0.03)
    assert np.all(stops.overshoot_at_full_effort > 0)
    stiffer = PositionLimits(panda, dt=1e-4)                     # 10x smaller step: 100x stiffer
    np.testing.assert_allclose(stiffer.stiffness, 100 * stops.stiffness)


def test_stops_push_but_never_pull(panda):
    stops = PositionLimits(panda)
    q = panda.upper_limit + 1e-4
    assert np.all(stops.generalized_force(panda, 0, q, np.zeros(7), None) < 0)
    # Leaving fast: k e + c qd < 0 would pull the joint back into the stop; it gives zero instead.
    assert stops.generalized_force(panda, 0, q, np.full(7, -10.0), None) is None
    assert stops.generalized_force(panda, 0, panda.neutral(), np.ones(7), None) is None


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_velocity_limits_hold_exactly(ur5, integrator):
    """Full effort on every joint, no stops in the way: each joint speed saturates at its limit."""
    r = simulate(ur5, [0, -1.57, 1.0, -1.57, 0.0, 0.0], duration=1.0, integrator=integrator,
                 tau=ur5.effort_limit, forces=[])
    ratio = np.abs(r.qd) / ur5.velocity_limit
    assert ratio.max() <= 1 + 1e-12
    assert np.all(ratio[-1] > 0.999)                              # they do reach it


def test_velocity_projection_is_an_impulse_on_the_limited_joints_and_never_adds_energy():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = rng.integers(2, 8)
        A = rng.normal(size=(n, n))
        M = A @ A.T + 0.05 * np.eye(n)
        qd = rng.normal(scale=3.0, size=n)
        vmax = rng.uniform(0.5, 2.0, size=n)
        v = project_velocity(M, qd, -vmax, vmax)
        assert np.all(np.abs(v) <= vmax + 1e-12)
        assert v @ M @ v <= qd @ M @ qd + 1e-9                    # kinetic energy never grows
        impulse = M @ (v - qd)
        free = np.abs(v) < vmax - 1e-9
        np.testing.assert_allclose(impulse[free], 0, atol=1e-8)  # the drives of free joints do nothing
        at = ~free                                                # KKT: the impulse brakes, never pushes
        assert np.all(impulse[at] * np.sign(v[at]) <= 1e-8)
        # It is the optimum: no feasible random perturbation is closer in the M-norm.
        for _ in range(20):
            w = np.clip(v + rng.normal(scale=0.1, size=n), -vmax, vmax)
            assert (w - qd) @ M @ (w - qd) >= (v - qd) @ M @ (v - qd) - 1e-9


def test_velocity_limits_leave_slow_motion_alone(panda):
    vl = VelocityLimits(panda)
    q, qd = READY, np.full(7, 0.1)
    q1, qd1 = vl.apply(panda, 0.0, q, qd)
    assert q1 is q and qd1 is qd
    assert not vl.last_impulse.any()


# --- commands ----------------------------------------------------------------------------------

def test_position_servo_is_critically_damped_at_its_bandwidth(panda):
    """All joints in position mode, no friction or stops: each error follows
    e(t) = e0 (1 + w t) exp(-w t) exactly (inverse-dynamics servo), whatever the coupling."""
    w = 20.0
    sim = Simulator(panda, q0=READY, forces=[], constraints=[])
    target = READY + np.array([0.02, -0.02, 0.03, 0.02, -0.03, 0.02, 0.04])
    sim.set_command(target, mode="position")
    for t in (0.05, 0.1, 0.3):
        sim.step(int(round(t / sim.dt)) - int(round(sim.time / sim.dt)))
        e = (READY - target) * (1 + w * t) * np.exp(-w * t)
        np.testing.assert_allclose(target - sim.q, -e, atol=1e-9)


def test_position_commands_are_tracked_with_the_default_forces(panda):
    sim = Simulator(panda, q0=READY)
    target = READY + np.array([0.3, -0.2, 0.2, 0.3, -0.3, 0.2, 0.4])
    sim.set_command(target, mode="position")
    sim.step(1000)
    np.testing.assert_allclose(sim.q, target, atol=1e-5)          # friction offsets only
    np.testing.assert_allclose(sim.qd, 0, atol=1e-4)


def test_velocity_commands_are_tracked(panda):
    """Velocity servo: qd(t) = u (1 - exp(-kv t)); the URDF damping (off here) would leave
    a steady error b u / (kv I), 1 % on the light wrist."""
    sim = Simulator(panda, q0=READY, forces=[])
    sim.set_command({"panda_joint1": 0.5, "panda_joint7": -1.0}, mode="velocity")
    sim.set_command(READY[1:6], mode="position", joints=panda.joint_names[1:6])
    sim.step(50)
    kv = sim.actuator.kv
    assert sim.qd[0] == pytest.approx(0.5 * (1 - np.exp(-kv[0] * 0.05)), rel=1e-6)
    assert sim.qd[6] == pytest.approx(-1.0 * (1 - np.exp(-kv[6] * 0.05)), rel=1e-6)
    sim.step(450)
    np.testing.assert_allclose(sim.qd[[0, 6]], [0.5, -1.0], rtol=1e-6)
    np.testing.assert_allclose(sim.q[1:6], READY[1:6], atol=1e-9)
    assert sim.command.modes(panda)["panda_joint1"] == "velocity"
    assert sim.command.modes(panda)["panda_joint2"] == "position"


def test_commands_are_clamped_to_the_limits(panda):
    sim = Simulator(panda, q0=READY)
    sim.set_command(np.full(7, 1e4))
    np.testing.assert_array_equal(sim.effort, panda.effort_limit)
    sim.set_command(np.full(7, 10.0), mode="position")
    np.testing.assert_array_equal(sim.command.value, panda.upper_limit)
    sim.set_command(np.full(7, -10.0), mode="velocity")
    np.testing.assert_array_equal(sim.command.value, -panda.velocity_limit)
    assert np.all(np.abs(sim.effort) <= panda.effort_limit)


def test_effort_commands_are_applied_as_is(panda):
    tau = np.linspace(-5, 5, 7)
    sim = Simulator(panda, q0=READY, forces=[], constraints=[])
    sim.set_command(tau)
    np.testing.assert_allclose(sim.acceleration(), rd.aba(panda, READY, np.zeros(7), tau), rtol=1e-12)
    r = simulate(panda, READY, duration=0.01, tau=tau)
    np.testing.assert_array_equal(r.tau, np.tile(tau, (len(r.t), 1)))


def test_callable_effort_is_a_controller_at_the_physics_rate(panda):
    """A gravity-compensating PD in Python holds the arm: tau(t, q, qd) once per step."""
    calls = []

    def control(t, q, qd):
        calls.append(t)
        return rd.gravity_torques(panda, q) + 50 * (READY - q) - 5 * qd

    r = simulate(panda, READY + 0.05, duration=2.0, tau=control)
    assert len(calls) == 2001 and calls[1] == pytest.approx(1e-3)
    np.testing.assert_allclose(r.q[-1], READY, atol=1e-3)


# --- external wrenches -------------------------------------------------------------------------

def test_link_wrench_matches_aba_f_ext(panda):
    w = np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    sim = Simulator(panda, q0=READY, qd0=np.full(7, 0.2), forces=[], constraints=[])
    sim.apply_wrench("panda_hand", w)
    expected = rd.aba(panda, READY, np.full(7, 0.2), np.zeros(7), {"panda_hand": w})
    np.testing.assert_allclose(sim.acceleration(), expected, rtol=1e-12)
    sim.clear_wrenches()
    np.testing.assert_allclose(sim.acceleration(), rd.aba(panda, READY, np.full(7, 0.2), np.zeros(7)),
                               rtol=1e-12)


def test_base_frame_wrench_is_J_transpose_F(panda):
    """A force fixed in space on a link acts as tau = J(q)^T F (J of the link origin)."""
    F = np.array([0.0, 0.0, -20.0, 0.0, 1.0, 0.0])
    sim = Simulator(panda, q0=READY, forces=[], constraints=[])
    sim.apply_wrench("panda_link7", F, frame="base")
    sim.step(37)
    q, qd = sim.q, sim.qd
    tau = rd.jacobian(panda, q, "panda_link7").T @ F
    np.testing.assert_allclose(sim.acceleration(), rd.aba(panda, q, qd, tau), rtol=1e-9, atol=1e-9)
    assert sim.wrenches.wrenches["panda_link7"][0] == "base"


def test_simulate_f_ext(panda):
    w = {"panda_link5": [0, 5.0, 0, 0, 0, 0]}
    a = simulate(panda, READY, duration=0.2, f_ext=w, forces=[], constraints=[])
    sim = Simulator(panda, q0=READY, forces=[], constraints=[])
    sim.apply_wrench("panda_link5", w["panda_link5"])
    sim.step(200)
    np.testing.assert_array_equal(a.q[-1], sim.q)


# --- plug-ins ----------------------------------------------------------------------------------

class Midpoint:
    """Explicit midpoint rule: a plug-in integrator written outside the package."""
    name = "midpoint"
    evaluations = 2

    def step(self, accel, t, q, qd, dt):
        a = accel(t, q, qd)
        qm, vm = q + 0.5 * dt * qd, qd + 0.5 * dt * a
        return q + dt * vm, qd + dt * accel(t + 0.5 * dt, qm, vm)


class Spring:
    """A plug-in force model: a torsion spring on one joint, and it counts its calls."""

    def __init__(self, joint, k):
        self.joint, self.k, self.calls = joint, k, 0

    def generalized_force(self, model, t, q, qd, command):
        self.calls += 1
        tau = np.zeros(model.nq)
        tau[self.joint] = -self.k * q[self.joint]
        return tau


def test_plug_in_integrator_and_force_model(pendulum):
    """A second-order method and an extra spring: the pendulum's period becomes
    2 pi / sqrt(g/L + k / (m L^2)), with no change to the simulator."""
    spring = Spring(0, k=3.0)
    r = simulate(pendulum, [0.01], duration=8.0, integrator=Midpoint(), forces=[spring])
    assert r.integrator == "midpoint"
    assert spring.calls == 2 * 8000
    T = 2 * np.pi / np.sqrt(G / L + 3.0 / (1.5 * L ** 2))
    assert measured_period(r) == pytest.approx(T, rel=1e-3)


def test_integrator_registry():
    assert isinstance(get_integrator("rk4"), RK4)
    assert get_integrator("symplectic_euler").evaluations == 1
    with pytest.raises(ValueError, match="unknown integrator 'verlet'.*rk4"):
        get_integrator("verlet")
    with pytest.raises(ValueError, match="integrator must be"):
        get_integrator(42)


def test_explicit_euler_gains_energy_semi_implicit_does_not(pendulum):
    """With a constant inertia (one joint) semi-implicit Euler is symplectic: bounded error."""
    kw = dict(duration=20.0, forces=[], constraints=[])
    e = simulate(pendulum, [1.0], integrator="explicit_euler", **kw).energy
    s = simulate(pendulum, [1.0], integrator="semi_implicit_euler", **kw).energy
    assert e[-1] - e[0] > 0.01
    assert np.abs(s - s[0]).max() < 0.01 * abs(s[0])
    half = len(s) // 2
    assert np.abs(s[half:] - s[0]).max() < 1.1 * np.abs(s[:half] - s[0]).max()   # no growth


# --- state, time, results ----------------------------------------------------------------------

def test_time_and_state(panda):
    sim = Simulator(panda, dt=2e-3)
    assert sim.time == 0.0
    state = sim.step(250)
    assert state.t == sim.time == pytest.approx(0.5, abs=1e-15)
    state.q[:] = 99                                               # a snapshot, not a view
    assert np.all(sim.q < 99)
    sim.reset(READY, np.ones(7), t=10.0)
    assert sim.time == 10.0
    np.testing.assert_array_equal(sim.state.qd, np.ones(7))
    assert sim.energy() == pytest.approx(rd.kinetic_energy(panda, READY, np.ones(7))
                                         + rd.potential_energy(panda, READY))


def test_result_arrays_and_energy(panda):
    r = simulate(panda, READY, np.full(7, 0.1), duration=0.5, record_every=10)
    assert r.t.shape == (51,) and r.q.shape == r.qd.shape == r.tau.shape == (51, 7)
    np.testing.assert_allclose(np.diff(r.t), 0.01)
    np.testing.assert_allclose(r.energy, rd.kinetic_energy(panda, r.q, r.qd) + rd.potential_energy(panda, r.q))
    assert r.joint_names == panda.joint_names
    assert r.real_time_factor > 0
    odd = simulate(panda, READY, duration=0.011, record_every=4)    # the last step is always kept
    assert odd.t[-1] == pytest.approx(0.011) and len(odd.t) == 4


@pytest.mark.parametrize("ext", [".npz", ".csv"])
def test_result_save_and_load(panda, tmp_path, ext):
    r = simulate(panda, READY, np.full(7, 0.1), duration=0.05, integrator="semi_implicit_euler")
    path = tmp_path / ("run" + ext)
    r.save(path)
    back = SimulationResult.load(path)
    for name in ("t", "q", "qd", "tau", "energy"):
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name))
    assert back.joint_names == r.joint_names and back.dt == r.dt and back.integrator == r.integrator
    if ext == ".csv":
        header = open(path).read().splitlines()[1]
        assert header.startswith("t,q[panda_joint1],") and header.endswith(",tau[panda_joint7],energy")
    with pytest.raises(ValueError, match=".npz or .csv"):
        r.save(tmp_path / "run.txt")


def test_progress_bar(panda, capsys):
    simulate(panda, READY, duration=0.2, progress=True)
    err = capsys.readouterr().err
    assert "100%" in err and "real time" in err and err.endswith("\n")
    simulate(panda, READY, duration=0.2)                          # auto: short run, not a terminal
    assert capsys.readouterr().err == ""
    out = io.StringIO()
    bar = ProgressBar(10, stream=out)
    bar.update(10, 1.0)
    bar.close()
    assert "[" + "#" * 30 + "]" in out.getvalue()


def test_faster_than_real_time(panda):
    """Loose floor for CI; docs/SIMULATION.md has the measured figures (RK4: ~20-40x)."""
    simulate(panda, READY, duration=0.05)                        # compile / load caches
    for integrator in INTEGRATORS:
        r = simulate(panda, READY, np.full(7, 0.2), duration=1.0, integrator=integrator)
        assert r.real_time_factor > 3


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("values, kwargs, message", [
    ([0.0] * 6, {}, r"command has 6 values, expected 7 \(one per joint: panda_joint1, "),
    ([0, 0, np.nan, 0, 0, 0, 0], {}, r"command for panda_joint3 is nan: commands must be finite"),
    ([0, 0, 0, np.inf, 0, 0, 0], {"mode": "position"}, r"panda_joint4 is inf"),
    (["a"] * 7, {}, r"command values must be numbers"),
    ([0.0] * 7, {"mode": "torque"}, r"unknown command mode 'torque' for panda_joint1; expected 'effort'"),
    ([1.0], {"joints": ["elbow"]}, r"unknown joint 'elbow' in the command; the model's joints are: panda_joint1"),
    ([1.0, 2.0], {"joints": ["panda_joint1"]}, r"command has 2 values, expected 1"),
    ([1.0, 2.0], {"joints": ["panda_joint1"] * 2}, r"appears twice"),
    ({"panda_joint1": float("nan")}, {}, r"command for panda_joint1 is nan"),
])
def test_bad_commands_are_rejected_and_change_nothing(panda, values, kwargs, message):
    sim = Simulator(panda, q0=READY)
    sim.set_command(np.full(7, 1.0))
    before, state = sim.command, sim.state
    with pytest.raises(ValueError, match=message):
        sim.set_command(values, **kwargs)
    assert sim.command is before
    sim.step()                                                    # still runs, on the old command
    assert np.all(np.isfinite(sim.q)) and sim.time == state.t + sim.dt


def test_bad_wrenches_and_states_are_rejected(panda):
    sim = Simulator(panda, q0=READY)
    with pytest.raises(ValueError, match="unknown link 'hand'"):
        sim.apply_wrench("hand", np.zeros(6))
    with pytest.raises(ValueError, match="must have 6 values"):
        sim.apply_wrench("panda_hand", np.zeros(3))
    with pytest.raises(ValueError, match="not finite"):
        sim.apply_wrench("panda_hand", [0, 0, np.nan, 0, 0, 0])
    with pytest.raises(ValueError, match="frame must be 'link' or 'base'"):
        sim.apply_wrench("panda_hand", np.zeros(6), frame="world")
    assert sim.wrenches.wrenches == {}
    with pytest.raises(ValueError, match="q has 6 values, model nq is 7"):
        sim.reset(np.zeros(6))
    with pytest.raises(ValueError, match=r"qd\[1\] is nan"):
        sim.reset(READY, [0, np.nan, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(sim.q, READY)
    with pytest.raises(ValueError, match="dt must be"):
        Simulator(panda, dt=0.0)
    with pytest.raises(ValueError, match="not a force model"):
        Simulator(panda, forces=[object()])
    with pytest.raises(ValueError, match="duration must be"):
        simulate(panda, READY, duration=-1.0)
    with pytest.raises(ValueError, match=r"tau\(t = 0.002000 s\): command for panda_joint1 is nan"):
        simulate(panda, READY, duration=0.01, tau=lambda t, q, qd: np.full(7, np.nan if t > 0.0015 else 0.0))


class Faulty:
    """A force model that misbehaves while armed."""

    def __init__(self, value):
        self.value, self.armed = value, False

    def generalized_force(self, model, t, q, qd, command):
        return np.full(model.nq, self.value) if self.armed else None


@pytest.mark.parametrize("value, message", [(np.nan, "state kept.*Faulty returned"), (1e308, "state kept")])
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_step_that_would_give_nan_raises_and_keeps_the_state(panda, value, message, integrator):
    faulty = Faulty(value)
    sim = Simulator(panda, q0=READY, qd0=np.full(7, 0.1), integrator=integrator, forces=[faulty])
    sim.step(10)
    before = sim.state
    faulty.armed = True
    with pytest.raises(SimulationError, match=message):
        sim.step()
    after = sim.state
    assert after.t == before.t
    np.testing.assert_array_equal(after.q, before.q)
    np.testing.assert_array_equal(after.qd, before.qd)
    faulty.armed = False
    sim.step()                                                    # and it goes on from there
    assert sim.time == pytest.approx(before.t + sim.dt)


class JointsOnly(Faulty):
    """A misbehaving force model that, as every force model, takes the joints' (q, qd), never the base's."""

    def generalized_force(self, model, t, q, qd, command):
        if len(q) != len(model.joint_names) or len(qd) != len(model.joint_names):
            raise ValueError("expected the joints' q and qd, got %d and %d values" % (len(q), len(qd)))
        return np.full(len(model.joint_names), self.value) if self.armed else None


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_the_culprit_on_a_floating_base_is_found_at_the_joints_state(integrator):
    """The error names what the model returned, evaluated as the step evaluates it (the joints' part of
    the state), not an error of its own arguments."""
    from pathlib import Path
    model = rd.load_urdf(str(Path(__file__).resolve().parents[1] / "test" / "data" / "mobile_manipulator.urdf"))
    assert model.root_joint == "floating"
    faulty = JointsOnly(np.nan)
    sim = Simulator(model, integrator=integrator, forces=[faulty])
    sim.step(5)
    faulty.armed = True
    with pytest.raises(SimulationError, match=r"state kept.*\(JointsOnly returned \[nan"):
        sim.step()


def test_command_zero_and_actuator_defaults(panda):
    c = Command.zero(7)
    assert not c.mode.flags.writeable and not c.value.flags.writeable
    act = JointActuator(panda)
    assert np.all(act.kp > 0) and np.all(act.kd > 0) and np.all(act.kv > 0)
    assert act.generalized_force(panda, 0.0, READY, np.zeros(7), c) is None
    with pytest.raises(ValueError, match="kp must be finite gains"):
        JointActuator(panda, kp=-1.0)
    assert isinstance(ExternalWrenches(panda).link_wrenches(panda, 0, READY, READY), type(None))


# --- the compiled fast path (simulation/fused.py) --------------------------------

def _run_both(model, q0, integrator, drive, steps, forces=None):
    """The same run on the fused path and on the plug-in path: (q, qd) of each, and whether fused ran."""
    out = []
    for fused in (True, False):
        sim = Simulator(model, integrator=integrator, q0=q0, forces=forces)
        sim._fused.usable = sim._fused.usable and fused
        used = sim._fast_path() is not None
        for k in range(steps):
            drive(sim, k)
            sim.step()
        out.append((sim.q, sim.qd, used))
    return out


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_fused_step_equals_the_plug_in_path(panda, integrator):
    """Effort, position and velocity commands, stops and damping: both paths agree to round-off."""
    rng = np.random.default_rng(3)
    q_target = READY + rng.uniform(-0.3, 0.3, panda.nq)

    def drive(sim, k):
        if k == 0:
            sim.set_command(rd.gravity_torques(panda, READY) * 0.5)             # effort: sags
        elif k == 150:
            sim.set_command(q_target, mode="position")                          # servo
        elif k == 300:
            sim.set_command({"panda_joint1": 1.5}, mode="velocity")
        elif k == 350:
            sim.set_command({"panda_joint4": 87.0})                             # into its stop
    (qf, qdf, used), (qp, qdp, unused) = _run_both(panda, READY, integrator, drive, 500)
    assert used and not unused
    assert np.abs(qf - qp).max() < 1e-10 and np.abs(qdf - qdp).max() < 1e-8


def test_fused_step_with_coulomb_friction_and_no_stops():
    model = rd.load_urdf(random_urdf(5, 6))
    q0 = np.full(model.nq, 0.2)
    forces = [JointFriction(model, damping=0.3, friction=0.5)]
    (qf, qdf, used), (qp, qdp, _) = _run_both(model, q0, "rk4", lambda sim, k: None, 400, forces)
    assert used
    assert np.abs(qf - qp).max() < 1e-10 and np.abs(qdf - qdp).max() < 1e-8


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_fused_step_with_wrenches_equals_the_plug_in_path(panda, integrator):
    """Link-frame and base-frame wrenches, changed during the run, a servo and the stops: the
    compiled step (the wrenches as f_ext of every stage) and the plug-in path agree to round-off."""
    def drive(sim, k):
        if k == 0:
            sim.set_command(READY + 0.2, mode="position")
            sim.apply_wrench("panda_link7", [0.0, 3.0, -10.0, 0.2, 0.5, 0.0])
        elif k == 100:
            sim.apply_wrench("panda_link5", [5.0, 0.0, 2.0, 0.0, -0.3, 0.1], frame="base")
        elif k == 200:
            sim.apply_wrench("panda_link7", [0.0, 0.0, -30.0, 0.0, 0.0, 0.0], frame="base")
        elif k == 300:
            sim.clear_wrenches("panda_link5")
    (qf, qdf, used), (qp, qdp, unused) = _run_both(panda, READY, integrator, drive, 400)
    assert used and not unused
    assert np.abs(qf - qp).max() < 1e-10 and np.abs(qdf - qdp).max() < 1e-8


def test_fused_path_is_kept_for_wrenches_and_mimic_models_and_left_for_custom_plug_ins(panda):
    sim = Simulator(panda)
    assert sim._fast_path() is not None
    sim.apply_wrench("panda_link7", [0, 0, -5, 0, 0, 0])
    assert sim._fast_path() is not None                  # the wrenches go into the compiled step
    sim.clear_wrenches()
    assert sim._fast_path() is not None
    assert Simulator(panda, integrator="explicit_euler")._fast_path() is None
    assert Simulator(panda, forces=[PositionLimits(panda), JointFriction(panda)])._fast_path() is None
    link = ('<link name="%s"><inertial><mass value="1"/>'
            '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    mimic = rd.load_urdf(
        '<robot name="m"><link name="base"/>' + link % "a" + link % "b" +
        '<joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>'
        '<limit effort="1" velocity="1" lower="-1" upper="1"/></joint>'
        '<joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.3 0 0"/>'
        '<axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/><mimic joint="j1"/></joint>'
        '</robot>')
    assert mimic.has_mimic and Simulator(mimic)._fast_path() is not None          # the CRBA route, compiled
    assert Simulator(mimic, integrator="implicit_euler")._fast_path() is None     # its derivatives: not coupled
    assert Simulator(mimic, forces=[PositionLimits(mimic), JointFriction(mimic)])._fast_path() is None


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_fused_step_on_example_robot_data_panda_with_its_mimic_finger_equals_the_plug_in_path(integrator):
    """example-robot-data's Panda (panda_finger_joint2 mimics panda_finger_joint1, damping 0.3 on
    both): the compiled step (the CRBA route, each body's friction law) and the plug-in path
    (rd.aba's FD_CRB, rd.friction_torques) give the same trajectory to 1e-12 over 0.5 s, with the
    servo, an effort on the finger and a wrench on the hand."""
    from robot_dynamics.tools.sample import example_robot_data_dir
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # the URDF's unknown <dynamics> attributes
        model = rd.load_urdf(str(example_robot_data_dir() / "panda_description/urdf/panda.urdf"))
    assert model.has_mimic and model.nb == model.nq + 1
    q0 = np.r_[READY, 0.02]
    target = q0 + np.r_[np.random.default_rng(5).uniform(-0.3, 0.3, 7), 0.01]

    def drive(sim, k):
        if k == 0:
            sim.set_command(target, mode="position")
        elif k == 200:
            sim.set_command({"panda_finger_joint1": 20.0})                       # the fingers into a stop
            sim.apply_wrench("panda_hand", [0.0, 0.0, -20.0, 0.0, 0.5, 0.0], frame="base")
    (qf, qdf, used), (qp, qdp, unused) = _run_both(model, q0, integrator, drive, 500)
    assert used and not unused
    assert np.abs(qp - q0).max() > 0.2                                            # it moved
    assert np.abs(qf - qp).max() < 1e-12 and np.abs(qdf - qdp).max() < 1e-12


def test_fused_step_keeps_the_state_when_it_blows_up(panda):
    sim = Simulator(panda, forces=[], constraints=[], dt=50.0)       # absurd step: diverges
    sim.set_command(np.full(panda.nq, 80.0))
    with pytest.raises(SimulationError):
        for _ in range(50):
            sim.step()
    assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.qd))


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_step_n_in_one_compiled_call_equals_n_single_steps(panda, integrator):
    """step(n) on the fused path (no constraint) is bit for bit n calls of step()."""
    one, many = (Simulator(panda, integrator=integrator, q0=READY, constraints=[]) for _ in range(2))
    for sim in (one, many):
        sim.set_command(READY + 0.2, mode="position")
    for _ in range(300):
        one.step()
    many.step(300)
    assert many.time == one.time
    assert np.array_equal(many.q, one.q) and np.array_equal(many.qd, one.qd)


def test_step_n_keeps_the_last_finite_state_when_it_blows_up(panda):
    sim = Simulator(panda, forces=[], constraints=[], dt=50.0)       # absurd step: diverges
    sim.set_command(np.full(panda.nq, 80.0))
    with pytest.raises(SimulationError, match="non-finite"):
        sim.step(50)
    assert 0 < sim.time < 50 * 50.0
    assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.qd))
    replay = Simulator(panda, forces=[], constraints=[], dt=50.0)
    replay.set_command(np.full(panda.nq, 80.0))
    replay.step(int(round(sim.time / 50.0)))                         # the same steps, all finite
    assert np.array_equal(replay.q, sim.q)


# --- linearly implicit Euler --------------------------------------------------------

ROTOR = ('<robot name="rotor"><link name="base"/><link name="disc"><inertial><mass value="2"/>'
         '<inertia ixx="0.1" iyy="0.1" izz="%g" ixy="0" ixz="0" iyz="0"/></inertial></link>'
         '<joint name="spin" type="continuous"><parent link="base"/><child link="disc"/><axis xyz="0 0 1"/>'
         '<limit effort="1000" velocity="1000"/></joint></robot>')


@pytest.mark.parametrize("fused", [True, False])
def test_implicit_euler_on_a_damped_rotor_is_backward_euler(fused):
    """A disc spinning about its vertical axis (inertia I, gravity along the axis: no torque)
    with damping b: I qd' = -b qd is linear, so one linearly implicit step is backward Euler,
    qd_k = qd_0 / (1 + dt b / I)^k and q_k = q_{k-1} + dt qd_k (derived by hand). With
    dt b / I = 50 semi-implicit Euler multiplies qd by (1 - 50) each step and blows up."""
    I, b, dt = 0.02, 1000.0, 1e-3
    model = rd.load_urdf(ROTOR % I)
    sim = Simulator(model, dt=dt, integrator="implicit_euler", q0=[0.0], qd0=[3.0],
                    forces=[JointFriction(model, damping=b, friction=0.0)], constraints=[])
    sim._fused.usable = sim._fused.usable and fused
    assert (sim._fast_path() is not None) == fused
    r, q = 1.0 / (1.0 + dt * b / I), 0.0
    for k in range(1, 21):
        sim.step()
        q += dt * 3.0 * r ** k
        assert sim.qd[0] == pytest.approx(3.0 * r ** k, rel=1e-6, abs=1e-300)
        assert sim.q[0] == pytest.approx(q, rel=1e-6)
    explicit = Simulator(model, dt=dt, integrator="semi_implicit_euler", q0=[0.0], qd0=[3.0],
                         forces=[JointFriction(model, damping=b, friction=0.0)], constraints=[])
    with pytest.raises(SimulationError):
        explicit.step(400)


def test_implicit_euler_holds_a_servo_too_stiff_for_semi_implicit_euler(panda):
    """Position servos at 2500 rad/s (dt w = 2.5 > 2) on every Panda joint, 1e-5 rad from the
    target (the efforts stay within the limits): semi-implicit Euler's error grows by about
    9.7 per step (eigenvalue of its step matrix, see the test's comment), the implicit step
    settles on the target."""
    w, target = 2500.0, READY + 1e-5
    errors = {}
    for integrator in ("implicit_euler", "semi_implicit_euler"):
        sim = Simulator(panda, dt=1e-3, integrator=integrator, q0=READY, forces=[], constraints=[],
                        actuator=JointActuator(panda, kp=w * w, kd=2 * w))
        sim.set_command(target, mode="position")
        try:
            sim.step(200)
            errors[integrator] = np.abs(sim.q - target).max()
        except SimulationError:
            errors[integrator] = np.inf
    assert errors["implicit_euler"] < 1e-12
    assert not errors["semi_implicit_euler"] < 1e-4


def test_implicit_euler_without_stiff_forces_is_semi_implicit_euler(panda):
    """No force model, an effort command: the implicit step's matrix is M, so it is
    semi-implicit Euler (CRBA and a solve instead of the ABA: equal to round-off)."""
    runs = []
    for integrator in ("implicit_euler", "semi_implicit_euler"):
        sim = Simulator(panda, dt=1e-3, integrator=integrator, q0=READY, forces=[], constraints=[])
        sim.set_command(0.3 * rd.gravity_torques(panda, READY))
        sim.step(300)
        runs.append((sim.q, sim.qd))
    assert np.abs(runs[0][0] - runs[1][0]).max() < 1e-10 and np.abs(runs[0][1] - runs[1][1]).max() < 1e-8


def test_implicit_euler_fused_and_plug_in_paths_agree_to_first_order_with_friction_and_stops():
    """The compiled step (exact force-model derivatives, M and h held over the step) and the
    plug-in step (forward differences of the whole acceleration) are two first-order schemes
    for the same motion: on a random arm with friction and stops each stays within 1e-3 rad
    of an RK4 reference over 0.2 s, and their difference halves when dt halves."""
    model = rd.load_urdf(random_urdf(5, 4))
    q0 = np.clip(np.full(model.nq, 0.2), model.lower_limit + 0.05, model.upper_limit - 0.05)
    forces = lambda: [JointFriction(model, damping=2.0, friction=0.3), PositionLimits(model)]  # noqa: E731
    reference = Simulator(model, dt=1e-4, integrator="rk4", q0=q0, forces=forces(), constraints=[])
    reference.step(2000)
    gaps = []
    for dt in (1e-3, 5e-4):
        out = []
        for fused in (True, False):
            sim = Simulator(model, dt=dt, integrator="implicit_euler", q0=q0, forces=forces(), constraints=[])
            sim._fused.usable = sim._fused.usable and fused
            assert (sim._fast_path() is not None) == fused
            sim.step(int(round(0.2 / dt)))
            assert np.abs(sim.q - reference.q).max() < 1e-3
            out.append(sim.q)
        gaps.append(np.abs(out[0] - out[1]).max())
    assert 1.6 < gaps[0] / gaps[1] < 2.5
