"""robot_dynamics.control.build without DDS: the torque pipeline of a model and its settings, and the one
Step each joint state gives, against the library's own algorithms (rd.gravity_torques, rd.rnea) on the
bundled Panda."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics import control
from robot_dynamics.control.compensation import COMPUTED_TORQUE, GRAVITY, GRAVITY_CORIOLIS
from robot_dynamics.control.settings import PipelineSettings, from_params
from robot_dynamics.control.torque_loop import COMPENSATION, WAITING, TorqueLoop

ROOT = Path(__file__).resolve().parents[1]
PANDA = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'))
NAMES = list(PANDA.joint_names)
UR5 = rd.load_urdf(str(ROOT / 'urdf' / 'ur5.urdf'))
Q = np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.6, 0.7])
QD = np.array([0.3, -0.2, 0.4, 0.1, -0.5, 0.2, 0.6])
EVERY = dict(diagnostic_torque_rate=-1)            # every output with every joint state


def step(loop, q=Q, qd=QD, now=1_000_000_000):
    return loop.step(NAMES, q, qd, now, now)


def test_build_gives_a_torque_loop_whose_command_is_the_gravity_torque():
    loop = control.build(PANDA, PipelineSettings(mode=GRAVITY, **EVERY))
    assert isinstance(loop, TorqueLoop)
    result = step(loop)
    assert result.refused is None and result.outputs == COMPENSATION and result.fresh
    np.testing.assert_allclose(result.command, rd.gravity_torques(PANDA, Q), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.torques['gravity'], rd.rnea(PANDA, Q, np.zeros(7), np.zeros(7)), atol=1e-12)
    np.testing.assert_array_equal(result.torques['coriolis'], 0.0)       # gravity mode: no Coriolis


def test_gravity_coriolis_is_rnea_at_zero_acceleration_and_the_step_result_is_reused():
    loop = control.build(PANDA, PipelineSettings(mode=GRAVITY_CORIOLIS, **EVERY))
    first = step(loop)
    h = rd.rnea(PANDA, Q, QD, np.zeros(7))
    np.testing.assert_allclose(first.command, h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(first.torques['coriolis'], h - rd.gravity_torques(PANDA, Q), atol=1e-12)
    second = step(loop, Q + 0.1, -QD)
    assert second is first                               # one Step, refilled
    np.testing.assert_allclose(second.command, rd.rnea(PANDA, Q + 0.1, -QD, np.zeros(7)), rtol=1e-12, atol=1e-12)


def test_the_command_follows_the_order_of_joints_and_a_partial_state_waits():
    loop = control.build(PANDA, PipelineSettings(mode=GRAVITY, joints=tuple(reversed(NAMES)), **EVERY))
    assert loop.cmd_joints == NAMES[::-1]
    assert loop.step(NAMES[:3], Q[:3], [], 0, 0).refused is WAITING
    result = step(loop)
    np.testing.assert_allclose(result.command, rd.gravity_torques(PANDA, Q)[::-1], rtol=1e-12, atol=1e-12)


def test_a_clamped_command_is_said_and_held_at_the_scaled_limit():
    scale = 1e-3
    loop = control.build(PANDA, PipelineSettings(mode=GRAVITY, effort_limit_scale=scale, **EVERY))
    result = step(loop)
    g = rd.gravity_torques(PANDA, Q)
    limit = PANDA.effort_limit * scale
    assert result.clamped and np.any(np.abs(g) > limit)
    np.testing.assert_allclose(result.command, np.clip(g, -limit, limit), rtol=1e-12)
    assert not step(control.build(PANDA, PipelineSettings(mode=GRAVITY, **EVERY))).clamped


def test_computed_torque_and_feedforward_laws_are_rnea_of_the_desired_motion():
    kp, kd = 100.0, 20.0
    loop = control.build(PANDA, PipelineSettings(mode=COMPUTED_TORQUE, kp=(kp,), kd=(kd,), friction_smoothing=0.0))
    q_d, qd_d, qdd_d = Q + 0.05, QD[::-1].copy(), np.linspace(-1, 1, 7)
    np.testing.assert_allclose(loop.laws.feedforward(Q, QD, q_d, qd_d, qdd_d), rd.rnea(PANDA, q_d, qd_d, qdd_d),
                               rtol=1e-12, atol=1e-12)
    a = qdd_d + kd * (qd_d - QD) + kp * (q_d - Q)
    np.testing.assert_allclose(loop.laws.computed_torque(Q, QD, q_d, qd_d, qdd_d), rd.rnea(PANDA, Q, QD, a),
                               rtol=1e-12, atol=1e-12)


def test_a_rebuild_keeps_the_merged_state_and_computes_with_the_new_model():
    settings = PipelineSettings(mode=GRAVITY, **EVERY)
    old = control.build(PANDA, settings)
    step(old)
    loaded = PANDA.with_payload('panda_link7', 2.0, [0.0, 0.0, 0.1], np.eye(3) * 1e-3)
    new = control.build(loaded, settings, old, base_model=PANDA, payloads={'panda_link7': None})
    assert new.merger is old.merger and new.limiter.clamp_events == old.limiter.clamp_events
    result = new.step([], [], [], 0, 0)             # no joint named: the merged state of the old pipeline
    assert result.refused is None and not result.fresh
    np.testing.assert_allclose(result.command, rd.gravity_torques(loaded, Q), rtol=1e-12, atol=1e-12)
    assert not np.allclose(result.command, rd.gravity_torques(PANDA, Q))


@pytest.mark.parametrize('settings, model, words', [
    (PipelineSettings(joints=('panda_joint1', 'nope')), PANDA, ['does not fit the controller', 'nope']),
    (PipelineSettings(actuated_joints=('panda_joint1',)), PANDA, ['actuated_joints', 'no loops']),
    (PipelineSettings(mode='joint_impedance'), rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'),
                                                            root_joint='floating'), ['fixed-base', 'joint_impedance']),
    (PipelineSettings(observer_gains=(10.0,), external_wrench_link='nowhere'), PANDA, ['observer', 'nowhere']),
    (PipelineSettings(mode=COMPUTED_TORQUE, kp=(100.0, 100.0)), PANDA, ["'kp' has 2 values", "expected 1", "(7)"]),
    (PipelineSettings(mode=COMPUTED_TORQUE, kd=(1.0,) * 8), PANDA, ["'kd' has 8 values"]),
    (PipelineSettings(effort_limit_scale=1.5), PANDA, ['effort_limit_scale', '(0, 1]', '1.5']),
    # the UR5's last link is 'base': no joint moves it, every state would be a 'singularity' (cond(J) = inf)
    (PipelineSettings(mode='cartesian_impedance'), UR5, ['cartesian_impedance', "'base' is fixed to the base",
                                                         "'tool0'"]),
])
def test_a_model_that_does_not_fit_gives_the_reason(settings, model, words):
    problem = control.build(model, settings)
    assert isinstance(problem, str) and all(w in problem for w in words), problem


def test_a_moving_base_without_a_base_state_is_refused_naming_the_topic():
    model = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'), root_joint='floating')
    loop = control.build(model, PipelineSettings(mode=GRAVITY, base_topic='/odom'))
    assert loop.laws.kind == 'base' and loop.base is not None
    result = loop.step(NAMES, Q, QD, 0, 0)
    assert result.refused.kind == 'no_base' and result.refused.reason.endswith('no base state on /odom yet')
    assert result.outputs == ()


def test_from_params_reads_the_node_parameters_and_defaults_agree():
    """PipelineSettings' defaults are dynamics_node's parameter defaults (the schema), and from_params reads
    each field by the parameter's name."""
    from robot_dynamics.ros.dynamics_params import NODE_PARAMS
    from robot_dynamics.ros.model_node import MODEL_PARAMS
    defaults = {p.name: p.default for p in tuple(MODEL_PARAMS) + tuple(NODE_PARAMS)}
    settings = from_params(SimpleNamespace(**defaults), '/odom')
    assert settings == PipelineSettings(base_topic='/odom')
    changed = from_params(SimpleNamespace(**dict(defaults, mode=GRAVITY, kp=[5.0], effort_limit_scale=0.5)))
    assert (changed.mode, changed.kp, changed.effort_limit_scale) == (GRAVITY, (5.0,), 0.5)
    with pytest.raises(Exception):
        changed.mode = 'gravity_coriolis'           # frozen


@pytest.mark.parametrize('mode', ['joint_impedance', 'cartesian_impedance'])
def test_an_impedance_law_rebuilt_for_a_robot_with_other_joints_starts_afresh(mode):
    """A new description with other joints (the Panda's 7, then the UR5's 6): the last torque and the
    posture of the old law are not carried over (they were, and every joint state was then refused:
    'operands could not be broadcast together with shapes (6,) (7,)')."""
    settings = PipelineSettings(mode=mode, max_torque_rate=1000.0, impedance_link='' if mode == 'joint_impedance'
                                else 'panda_link8', **EVERY)
    old = control.build(PANDA, settings)
    assert step(old).refused is None
    if mode == 'cartesian_impedance':
        settings = PipelineSettings(mode=mode, max_torque_rate=1000.0, impedance_link='tool0', **EVERY)
    new = control.build(UR5, settings, old, base_model=UR5, payloads={})
    assert isinstance(new, TorqueLoop), new
    names, q = list(UR5.joint_names), np.array([0.1, -1.2, 1.5, -0.3, 0.4, 0.2])
    result = new.step(names, q, np.zeros(6), 2_000_000_000, 2_000_000_000)
    assert result.refused is None, result.refused
    assert result.command.shape == (6,) and np.all(np.isfinite(result.command))


def test_after_a_zero_command_an_impedance_torque_ramps_up_from_zero_at_the_rate_limit():
    """The watchdog sent a zero command (or the node was deactivated): the actuator holds zero. The torque
    after the silence starts from zero and grows by at most max_torque_rate per second; it used to start
    from the torque before the silence (a jump of the whole gravity torque on resuming). A target taken
    from a state (none was given) is taken again where the arm is now."""
    rate = 100.0                                                          # [N m/s]
    loop = control.build(PANDA, PipelineSettings(mode='joint_impedance', max_torque_rate=rate, **EVERY))
    t = 1_000_000_000
    before = loop.step(NAMES, Q, np.zeros(7), t, t).command.copy()
    assert np.max(np.abs(before)) > 5.0                                   # the gravity torque, held
    np.testing.assert_allclose(loop.impedance.target.q, Q)
    loop.resume(zeroed=True)
    assert np.all(np.isnan(loop.impedance.target.q))                      # the implicit target is forgotten
    q_now, t = Q + 0.2, t + 5_000_000_000                                 # 5 s later, elsewhere
    np.testing.assert_array_equal(loop.step(NAMES, q_now, np.zeros(7), t, t).command, 0.0)
    np.testing.assert_allclose(loop.impedance.target.q, q_now)            # holds where it is now
    for k in range(1, 4):
        t += 1_000_000                                                    # 1 kHz
        command = loop.step(NAMES, q_now, np.zeros(7), t, t).command
        assert np.max(np.abs(command)) <= rate * 1e-3 * k * (1 + 1e-12)
    loop.resume(zeroed=False)                     # a stopped publisher: the actuator keeps the last torque
    last = command.copy()
    t += 2_000_000_000
    np.testing.assert_array_equal(loop.step(NAMES, q_now, np.zeros(7), t, t).command, last)


def test_a_joint_state_too_old_to_use_is_no_sign_of_life():
    """A message refused as older than max_state_age sets no joint: its Step says not fresh, so the
    watchdog (which counts fresh steps) times out on a stream of them. After a fresh message it said
    fresh, and a stream of old messages kept the watchdog content while no torque went out."""
    loop = control.build(PANDA, PipelineSettings(mode=GRAVITY, max_state_age=0.01))
    t = 10_000_000_000
    assert loop.step(NAMES, Q, QD, t, t).fresh
    old = loop.step(NAMES, Q, QD, t - 50_000_000, t + 1_000_000)          # stamped 51 ms before now
    assert old.refused.kind == 'too_old' and not old.fresh
