"""The compiled backend of the torque laws (control/backend.py), without ROS: the laws computed by a
model's generated C equal the library's, and CompiledModels compiles in the background, once per model,
and reports a failure instead of raising it."""
import threading
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.backend import CompiledModels, covers
from robot_dynamics.control.compensation import Compensation, computed_torque, feedforward
from robot_dynamics.control.laws import laws_of

PANDA = Path(__file__).resolve().parents[2] / "urdf" / "panda_arm.urdf"


@pytest.fixture(scope="module")
def panda():
    model = rd.load_urdf(str(PANDA))
    return model, rd.compile(model)


def test_the_laws_on_compiled_code_equal_the_library(panda):
    model, fast = panda
    rng = np.random.default_rng(0)
    kp, kd = np.full(7, 100.0), np.full(7, 20.0)
    for mode in ("gravity", "gravity_coriolis", "gravity_coriolis_friction"):
        lib, comp = Compensation(model, mode, 0.01), Compensation(model, mode, 0.01, fast)
        for _ in range(5):
            q, qd = rng.uniform(-1, 1, 7), rng.uniform(-2, 2, 7)
            np.testing.assert_allclose(comp.compute(q, qd).copy(), lib.compute(q, qd), rtol=0, atol=1e-10)
            for part in ("gravity", "coriolis", "friction"):
                np.testing.assert_allclose(getattr(comp, part), getattr(lib, part), rtol=0, atol=1e-10)
    q, qd, q_d, qd_d, qdd_d = rng.uniform(-1, 1, (5, 7))
    np.testing.assert_allclose(feedforward(model, q_d, qd_d, qdd_d, dynamics=fast), feedforward(model, q_d, qd_d, qdd_d),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd, dynamics=fast),
                               computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd), rtol=0, atol=1e-9)
    laws = laws_of(model, model.joint_names, "computed_torque", 0.0, kp, kd, 10**8, dynamics=fast)
    assert laws.dynamics is fast and laws.base is None and laws.loop is None
    np.testing.assert_allclose(laws.computed_torque(q, qd, q_d, qd_d, qdd_d),
                               computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd),
                               rtol=0, atol=1e-9)


def test_the_compiled_backend_covers_fixed_base_trees_only():
    model = rd.load_urdf(str(PANDA))
    assert covers(model)
    assert not covers(rd.load_urdf(str(PANDA), root_joint="floating"))


def test_models_compile_once_in_the_background_and_a_failure_is_reported():
    model = rd.load_urdf(str(PANDA))
    other = model.with_payload("panda_link8", 1.0)
    ready, gate, calls = [], threading.Event(), []

    def slow_compile(m):
        calls.append(m)
        gate.wait(10)
        if m is other:
            raise rd.RobotDynamicsError("cc failed: no space left")
        return "code of %s" % m.total_mass

    models = CompiledModels(ready.append, compile=slow_compile)
    assert models.get(model) is None and models.state(model) == "compiling"   # never blocks
    assert models.get(model) is None and models.get(other) is None
    gate.set()
    for _ in range(200):
        if len(ready) == 2:
            break
        threading.Event().wait(0.01)
    assert sorted(map(id, ready)) == sorted((id(model), id(other)))
    assert calls.count(model) == 1 and calls.count(other) == 1             # each model compiled once
    assert models.get(model) == "code of %s" % model.total_mass and models.state(model) == "compiled"
    assert models.get(other) is None and models.state(other) == "failed"
    assert "cc failed: no space left" in models.error(other) and models.error(model) is None
