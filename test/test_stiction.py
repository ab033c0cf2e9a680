"""The friction laws in the simulator (docs/SIMULATION.md, "Friction and
stiction"): the stick-slip switch holds a joint under a torque below its
static level and lets it break away above, stops a sliding joint without
chatter, never adds energy; the compiled path and the plug-in path agree;
the armature in every integrator."""
import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.simulation import JointFriction, Simulator

PANDA = "urdf/panda_arm.urdf"
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
STRIBECK = {"law": "stribeck", "static": 1.0, "coulomb": 0.6, "stribeck_velocity": 0.05, "viscous": 0.1}
SIGMOID = {"law": "sigmoid", "phi1": 2.0, "phi2": 1.0e5, "phi3": 0.0}     # a step of +-1 N m at 0
INTEGRATORS = ("rk4", "semi_implicit_euler", "implicit_euler", "explicit_euler")
# (integrator, plug_in): every integrator on the plug-in path, and on the compiled step where it has one
# (explicit Euler has none).
PATHS = [pytest.param(i, p, id="%s-%s" % (i, "plug_in" if p else "compiled"))
         for i in INTEGRATORS for p in (False, True) if p or i != "explicit_euler"]


class Nothing:
    """A force model that adds nothing: its presence sends the simulator down the plug-in path."""

    def generalized_force(self, model, t, q, qd, command):
        return None


def _arm(law, gravity=(0.0, 0.0, 0.0)):
    model = rd.load_urdf(PANDA).with_gravity(list(gravity))
    return model.with_actuators({n: {"friction": dict(law)} for n in model.joint_names})


def _run(model, integrator, tau, steps=1000, plug_in=False, q0=READY, qd0=None):
    forces = [JointFriction(model)] + ([Nothing()] if plug_in else [])
    sim = Simulator(model, dt=1e-3, integrator=integrator, forces=forces, constraints=[], q0=q0, qd0=qd0)
    sim.set_command(tau)
    Q, QD = [], []
    for _ in range(steps):
        _, q, qd = sim.step()
        Q.append(q)
        QD.append(qd)
    return np.array(Q), np.array(QD), sim


@pytest.mark.parametrize("integrator, plug_in", PATHS)
@pytest.mark.parametrize("law", (STRIBECK, SIGMOID), ids=("stribeck", "sigmoid"))
def test_stuck_below_the_static_level_and_breaks_away_above(law, integrator, plug_in):
    """Joint 1 (vertical axis, no gravity torque) pushed by 0.9 N m against a
    static level of 1 N m stays put (drift < 1e-9 rad over 1 s); at 1.2 N m it moves."""
    model = _arm(law)
    Q, QD, sim = _run(model, integrator, np.r_[0.9, np.zeros(6)], plug_in=plug_in)
    assert sim.forces[0].stiction and sim._fused.usable == (not plug_in and integrator != "explicit_euler")
    assert np.abs(Q - READY).max() < 1e-9 and np.abs(QD).max() < 1e-9
    Q, QD, _ = _run(model, integrator, np.r_[1.2, np.zeros(6)], plug_in=plug_in)
    assert Q[-1, 0] - READY[0] > 0.01 and np.all(QD[-1, 0] > 0.0)
    assert np.abs(Q[:, 1:] - READY[1:]).max() < 1e-9           # the others stay held against the coupling


def test_breakaway_then_the_coulomb_level():
    """Above the static level the joint slides and the friction is the law's:
    past the Stribeck dip the joint accelerates as (tau - coulomb - viscous v) / I."""
    model = _arm(STRIBECK)
    tau = 1.2
    Q, QD, _ = _run(model, "rk4", np.r_[tau, np.zeros(6)], steps=300)
    q, qd = Q[-1], QD[-1]
    M = rd.mass_matrix(model, q)
    # joints 2..7 held: joint 1 sees the inertia M11 and the law at qd1 (v >> stribeck_velocity)
    want = (tau - rd.friction_law_torque(model.friction_laws[0], qd[0])) / M[0, 0]
    got = (QD[-1, 0] - QD[-2, 0]) / 1e-3
    assert got == pytest.approx(want, rel=2e-2)


@pytest.mark.parametrize("integrator", INTEGRATORS[:3])
def test_a_sliding_joint_stops_without_chattering(integrator):
    """Joint 1 launched at 1 rad/s stops by friction and stays stopped: its
    velocity never changes sign beyond round-off (|qd| > 1e-12 rad/s), and
    once stopped stays below 1e-12 rad/s."""
    model = _arm(STRIBECK)
    qd0 = np.r_[1.0, np.zeros(6)]
    Q, QD, _ = _run(model, integrator, np.zeros(7), steps=2000, qd0=qd0)
    v = QD[:, 0]
    assert np.all(v > -1e-12)
    stop = np.argmax(v < 1e-12)
    assert 0 < stop < 1900 and np.abs(v[stop:]).max() < 1e-12


def test_under_gravity_the_sign_of_the_velocity_changes_at_most_once_per_joint():
    """The arm released under gravity with static friction below the gravity torques
    of some joints: the velocities change sign a few times (no 1 kHz chatter)."""
    model = _arm({"law": "coulomb", "coulomb": 3.0, "viscous": 0.5}, gravity=(0, 0, -9.81))
    sim = Simulator(model, dt=1e-3, integrator="rk4", forces=[JointFriction(model, stiction=True)], constraints=[],
                    q0=READY)
    QD = np.array([sim.step()[2] for _ in range(1000)])
    flips = [np.count_nonzero(np.diff(np.sign(QD[:, j][np.abs(QD[:, j]) > 1e-12])) != 0) for j in range(7)]
    assert max(flips) <= 3, flips
    g = np.abs(rd.gravity_torques(model, READY))
    assert (g < 3.0).any() and (g > 3.0).any()            # some joints held, some sliding


@pytest.mark.parametrize("integrator", INTEGRATORS[:3])
def test_friction_never_adds_energy(integrator):
    """No gravity, no motor: the kinetic energy (armature included) never grows."""
    model = _arm(STRIBECK).with_actuators({n: {"armature": 0.05} for n in rd.load_urdf(PANDA).joint_names})
    qd0 = np.array([1.0, -0.8, 0.6, 0.9, -1.2, 0.7, 1.5])
    Q, QD, _ = _run(model, integrator, np.zeros(7), steps=1500, qd0=qd0)
    T = rd.kinetic_energy(model, Q, QD)
    assert T[-1] < 0.2 * T[0] and np.all(np.diff(T) <= 1e-12 * T[0])


@pytest.mark.parametrize("integrator", INTEGRATORS[:2])
def test_compiled_and_plug_in_paths_agree_with_stiction(integrator):
    """Within 1e-5 rad over 0.5 s: the switch is discontinuous, so a round-off
    difference can end a slide one step apart. The plug-in implicit Euler
    differentiates by finite differences (its own method), so it is not compared."""
    model = _arm(STRIBECK, gravity=(0, 0, -9.81))
    tau = rd.gravity_torques(model, READY) + np.array([1.5, -0.5, 0.3, 0.8, -1.3, 0.2, 0.9])
    Qf, QDf, _ = _run(model, integrator, tau, steps=500)
    Qp, QDp, _ = _run(model, integrator, tau, steps=500, plug_in=True)
    assert np.abs(Qf - Qp).max() < 1e-5 and np.abs(Qf[-1] - READY).max() > 0.1


def test_the_smoothed_laws_without_the_switch_are_friction_torques():
    model = _arm(SIGMOID)
    f = JointFriction(model, stiction=False, smoothing=0.02)
    qd = np.linspace(-0.3, 0.4, 7)
    np.testing.assert_allclose(f.generalized_force(model, 0.0, READY, qd, None),
                               -rd.friction_torques(model, qd, smoothing=0.02), rtol=1e-13)
    assert not JointFriction(rd.load_urdf(PANDA)).stiction            # URDF laws: as before
    with pytest.raises(rd.InputError, match="stick_velocity"):
        JointFriction(model, stick_velocity=0.0)


@pytest.mark.parametrize("integrator, plug_in", PATHS)
def test_every_integrator_takes_the_armature(integrator, plug_in):
    """One step from rest with no force model: qd1 = dt qdd with qdd =
    aba(model with armature) (RK4: its four stages by hand), not the plain model's."""
    plain = rd.load_urdf(PANDA)
    model = plain.with_actuators({n: {"armature": 0.2} for n in plain.joint_names})
    tau = np.array([3.0, -2.0, 1.0, 4.0, -1.0, 0.5, 0.8])
    forces = [Nothing()] if plug_in else []
    sim = Simulator(model, dt=1e-3, integrator=integrator, forces=forces, constraints=[], q0=READY)
    sim.set_command(tau)
    _, q1, qd1 = sim.step()
    dt, qd0 = 1e-3, np.zeros(7)
    f = lambda q, qd: rd.aba(model, q, qd, tau)                      # noqa: E731
    if integrator == "rk4":
        a1 = f(READY, qd0)
        v2 = qd0 + dt / 2 * a1
        a2 = f(READY + dt / 2 * qd0, v2)
        v3 = qd0 + dt / 2 * a2
        a3 = f(READY + dt / 2 * v2, v3)
        v4 = qd0 + dt * a3
        a4 = f(READY + dt * v3, v4)
        want = dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    else:
        want = dt * f(READY, qd0)
    # the plug-in implicit Euler also holds dt^2 dqdd/dq (finite differences): O(dt^2) apart
    np.testing.assert_allclose(qd1, want, rtol=1e-4 if integrator == "implicit_euler" and plug_in else 1e-10)
    assert np.abs(qd1 - dt * rd.aba(plain, READY, qd0, tau)).max() > 1e-3 * np.abs(qd1).max()
