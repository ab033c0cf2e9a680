"""The simulator's compiled stage under contact (simulation/fused.py's stage_accel: the actuator, friction,
stops and forward dynamics of each integrator stage in one call, the contact wrenches as f_ext) against the
plug-in path it replaces (each force model from Python, rd.aba), on example-robot-data's Panda (its mimic
finger joint: the CRBA route) pressing on a table among three free boxes: the same trajectory to 1e-12."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.contact.free_bodies import FreeBodies
from robot_dynamics.contact.stepping import ContactStepper
from robot_dynamics.tools.sample import PANDA_READY as READY, panda_table_scene as panda_scene

@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_compiled_stages_under_contact_equal_the_plug_in_path(integrator):
    """0.2 s held at the ready pose (the boxes settling), then 0.5 s with the servo's target 10 cm below the
    hand: arm, boxes and contact forces the same on both paths."""
    model, world, detector = panda_scene()
    assert model.has_mimic
    q0 = READY.copy()
    J = rd.jacobian(model, q0, "panda_hand", (0.0, 0.0, 0.1))[:3]
    target = q0 + np.linalg.pinv(J) @ [0.0, 0.0, -0.10]
    runs = []
    for compiled in (True, False):
        stepper = ContactStepper(model, detector, FreeBodies.from_world(world))
        sim = rd.Simulator(model, q0=q0, integrator=integrator, contact=stepper)
        assert sim._plug_ins.stages
        sim._plug_ins.stages = compiled
        sim.set_command(q0, mode="position")
        sim.step(200)
        sim.set_command(target, mode="position")
        sim.step(500)
        runs.append((sim.q, sim.qd, stepper.bodies.p.copy(), stepper.bodies.v.copy(), stepper.wrenches()))
    (q, qd, p, v, w), (q_, qd_, p_, v_, w_) = runs
    hand = [k for k in range(len(w[0])) if w[0][k] < model.nb or w[1][k] < model.nb]
    assert len(hand) >= 4 and np.linalg.norm(w[4][hand].sum(axis=0)) > 20.0      # the hand presses
    assert np.abs(q - q_).max() < 1e-12 and np.abs(qd - qd_).max() < 1e-12
    assert np.abs(p - p_).max() < 1e-12 and np.abs(v - v_).max() < 1e-12
    assert len(w[0]) == len(w_[0]) and np.abs(w[4] - w_[4]).max() < 1e-9
