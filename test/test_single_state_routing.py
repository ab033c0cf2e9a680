"""No slow path by surprise (issue 34, point 4): every public call with one state runs on the
calling thread, through a single-state kernel (an Algorithm's ``one``, or its ``serial`` loop
for a batch of one), never through a batch kernel and its thread pool (whose start-up costs
milliseconds on a loaded machine: ``Simulator.step`` with one applied wrench took 231 us
against 32 us without, a single-state ``aba`` with external forces on the batch kernel).

Every batch kernel of every Algorithm (``batch``, ``root_batch``) is replaced by one that
fails the test; each single-state call, with and without external wrenches, on a fixed,
mimic and floating model, must then give what the batch kernel gives for the same state
(a batch of two copies, computed before the replacement) to 1e-12.
"""
import sys

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import aba as aba_module, dispatch, rnea as rnea_module
from robot_dynamics.tools.sample import random_urdf

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])

MODELS = {
    "fixed": lambda: rd.load_urdf("urdf/panda_arm.urdf"),
    "mimic": lambda: rd.load_urdf(random_urdf(11, 9, mimic=True, p_massless=0.0)),
    "floating": lambda: rd.load_urdf(random_urdf(7, 7, p_massless=0.0), root_joint="floating"),
}


def algorithms():
    """Every Algorithm the algorithm modules declare, with its fext and mimic variants."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("robot_dynamics.algorithms."):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, dispatch.Algorithm):
                label = "%s.%s" % (name.rsplit(".", 1)[1], attr)
                for sub, a in (("", value), (".fext", value.fext), (".mimic", value.mimic),
                               (".mimic.fext", value.mimic.fext if value.mimic else None)):
                    if a is not None:
                        found.setdefault(id(a), (label + sub, a))
    return list(found.values())


@pytest.fixture
def no_batch_kernel(monkeypatch):
    """Replace every batch kernel by one that fails the test, naming it."""
    def refuse(label):
        def kernel(*args):
            pytest.fail("a single state reached the batch kernel %s (the thread pool)" % label)
        return kernel
    for label, a in algorithms():
        for slot in ("batch", "root_batch"):
            if getattr(a, slot) is not None:
                monkeypatch.setattr(a, slot, refuse(label + "." + slot))


def calls(model, q, qd, x, W, link):
    """name -> call(q, qd, x, W): the public single-state entries (x: qdd, tau; W: link wrenches)."""
    calls = {
        "rnea": lambda q, qd, x, W: rd.rnea(model, q, qd, x),
        "rnea f_ext": lambda q, qd, x, W: rd.rnea(model, q, qd, x, W),
        "gravity_torques": lambda q, qd, x, W: rd.gravity_torques(model, q),
        "nonlinear_effects": lambda q, qd, x, W: rd.nonlinear_effects(model, q, qd),
        "mass_matrix": lambda q, qd, x, W: rd.mass_matrix(model, q),
        "coriolis_matrix": lambda q, qd, x, W: rd.coriolis_matrix(model, q, qd),
        "aba": lambda q, qd, x, W: rd.aba(model, q, qd, x),
        "aba f_ext": lambda q, qd, x, W: rd.aba(model, q, qd, x, W),
        "forward_kinematics": lambda q, qd, x, W: rd.forward_kinematics(model, q)[link],
        "jacobian": lambda q, qd, x, W: rd.jacobian(model, q, link),
        "kinetic_energy": lambda q, qd, x, W: rd.kinetic_energy(model, q, qd),
        "potential_energy": lambda q, qd, x, W: rd.potential_energy(model, q),
        "center_of_mass": lambda q, qd, x, W: rd.center_of_mass(model, q),
        "rnea_derivatives": lambda q, qd, x, W: np.stack(rd.rnea_derivatives(model, q, qd, x), -3),
        "rnea_derivatives f_ext": lambda q, qd, x, W: np.stack(rd.rnea_derivatives(model, q, qd, x, W), -3),
        "gravity_derivatives": lambda q, qd, x, W: rd.gravity_derivatives(model, q),
        "coriolis_derivatives": lambda q, qd, x, W: np.stack(rd.coriolis_derivatives(model, q, qd), -3),
        "aba_derivatives": lambda q, qd, x, W: np.stack(rd.aba_derivatives(model, q, qd, x), -3),
        "aba_derivatives f_ext": lambda q, qd, x, W: np.stack(rd.aba_derivatives(model, q, qd, x, W), -3),
    }
    if model.root_joint is None:
        calls["regressor"] = lambda q, qd, x, W: rd.regressor(model, q, qd, x)
    return calls


def _state(model, seed):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, model.nq)
    if model.root_joint is not None:
        q = rd.normalize(model, q)
    qd, x = rng.uniform(-1, 1, (2, model.nv))
    W = rng.uniform(-5, 5, (len(model.link_names), 6))
    return q, qd, x, W


def _batch_of_two(call, q, qd, x, W):
    """The call on a batch of two copies of the state (the batch kernel), its first result."""
    two = lambda a: np.stack([a, a])                                           # noqa: E731
    return np.asarray(call(two(q), two(qd), two(x), two(W)))[0]


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_one_state_never_reaches_a_batch_kernel(kind, request):
    model = MODELS[kind]()
    q, qd, x, W = _state(model, 1)
    link = model.link_names[-1]
    entries = calls(model, q, qd, x, W, link)
    reference = {name: _batch_of_two(call, q, qd, x, W) for name, call in entries.items()}
    request.getfixturevalue("no_batch_kernel")
    for name, call in entries.items():
        for form, args in (("array", (q, qd, x, W)), ("list", (list(q), list(qd), list(x), W.tolist()))):
            got = np.asarray(call(*args))
            np.testing.assert_allclose(got, reference[name], rtol=1e-12, atol=1e-12,
                                       err_msg="%s (%s, %s)" % (name, form, kind))


def test_a_single_state_with_wrenches_takes_the_single_state_kernel(monkeypatch):
    """rd.aba and rd.rnea with f_ext at one state call the Algorithms' fext.one (the compiled
    single-state entry with the body wrenches), once, and give the batch kernel's result bit
    for bit; with data and out given too."""
    model = rd.load_urdf("urdf/panda_arm.urdf")
    q, qd, x, W = _state(model, 2)
    f_ext = {"panda_link7": W[7], "panda_link3": W[3]}
    batch = {"aba": rd.aba(model, np.stack([q, q]), qd, x, f_ext)[0],
             "rnea": rd.rnea(model, np.stack([q, q]), qd, x, f_ext)[0]}
    used = []
    for name, algorithm in (("aba", aba_module.ABA.fext), ("rnea", rnea_module.RNEA.fext)):
        one = algorithm.one
        rd.aba(model, q, qd, x, f_ext) if name == "aba" else rd.rnea(model, q, qd, x, f_ext)   # compiled
        one = algorithm.one

        def spy(*args, one=one, name=name):
            used.append(name)
            return one(*args)
        monkeypatch.setattr(algorithm, "one", spy)
        monkeypatch.setattr(algorithm, "batch", lambda *a: pytest.fail("the batch kernel ran"))
        monkeypatch.setattr(algorithm, "serial", lambda *a: pytest.fail("the one-state loop ran"))
    data = rd.Data(model)
    for function in (rd.aba, rd.rnea):
        name = function.__name__
        np.testing.assert_array_equal(function(model, q, qd, x, f_ext), batch[name])
        out = np.empty(model.nv)
        assert function(model, q, qd, x, f_ext, data=data, out=out) is out
        np.testing.assert_array_equal(out, batch[name])
    assert used == ["aba", "aba", "rnea", "rnea"]


def test_a_simulator_step_with_a_wrench_stays_off_the_batch_kernels(request):
    """Link-frame and base-frame wrenches, every integrator (the compiled step and, explicit
    Euler, the plug-in path): the steps run on single-state kernels. (Building a Simulator
    runs batches: the position stops' stiffness from M over sampled poses.)"""
    model = rd.load_urdf("urdf/panda_arm.urdf")
    sims = [rd.Simulator(model, q0=READY, integrator=integrator)
            for integrator in ("rk4", "semi_implicit_euler", "implicit_euler", "explicit_euler")]
    request.getfixturevalue("no_batch_kernel")
    for sim in sims:
        sim.apply_wrench("panda_link7", [0.0, 0.0, -10.0, 0.0, 0.5, 0.0])
        sim.apply_wrench("panda_link5", [2.0, 0.0, 0.0, 0.0, 0.0, 0.0], frame="base")
        sim.step()
        sim.step(3)
        assert sim.time == pytest.approx(4e-3) and np.all(np.isfinite(sim.q))
