"""One name and one unit for each option of the impedance laws (issue 34, point 4): the library
takes dynamics_node's names, ``max_pose_error`` and ``max_torque_rate`` [N m/s] (times the call's
``dt``, or ``period``), and the joint law a scalar stiffness like the node; the former names
``max_error`` and ``max_torque_step`` [N m per call] warn, naming the new one, and give the same
torques.

The torque-rate limit is checked against its definition: between two single-state calls each
torque moves by at most ``rate * dt``, and by exactly that on a joint whose free torque moves
further (the limit binds).
"""
import warnings

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.impedance_target import TorqueRate

PANDA = rd.load_urdf("urdf/panda_arm.urdf")
TCP = "panda_hand_tcp"
K6 = [500.0, 500.0, 500.0, 30.0, 30.0, 30.0]
Q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
ZERO = np.zeros(7)
S = 1_000_000_000


def joint_targets():
    """A state, then a target 0.4 rad away on every joint: the free torque jumps by tens of N m."""
    return [Q0, Q0 + 0.4, Q0 - 0.3, Q0 + 0.1]


def joint_run(law, dts=None):
    dts = dts or [None] * 4
    return np.array([law.torque(Q0, ZERO, q_d, dt=dt) for q_d, dt in zip(joint_targets(), dts)])


# --- the former names ----------------------------------------------------------------------------

def test_the_joint_laws_former_names_warn_naming_the_new_ones_and_give_the_same_torques():
    with pytest.warns(DeprecationWarning, match="use max_pose_error"):
        old = rd.JointImpedance(PANDA, 80.0, max_error=0.1)
    with pytest.warns(DeprecationWarning, match="use max_torque_rate"):
        old_step = rd.JointImpedance(PANDA, 80.0, max_torque_step=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)          # the new names do not warn
        new = rd.JointImpedance(PANDA, 80.0, max_pose_error=0.1)
        new_rate = rd.JointImpedance(PANDA, 80.0, max_torque_rate=500.0)       # 0.5 N m per 1 ms call
        np.testing.assert_array_equal(joint_run(old), joint_run(new))
        np.testing.assert_array_equal(joint_run(old_step), joint_run(new_rate))
    assert old_step.step.limited == new_rate.step.limited == 3
    with pytest.warns(DeprecationWarning, match="max_pose_error"):
        np.testing.assert_array_equal(old.max_error, new.max_pose_error)


def test_the_cartesian_laws_former_step_warns_and_gives_the_same_torques():
    with pytest.warns(DeprecationWarning, match="use max_torque_rate"):
        old = rd.CartesianImpedance(PANDA, TCP, K6, max_torque_step=1.0)
    new = rd.CartesianImpedance(PANDA, TCP, K6, max_torque_rate=1000.0)
    p, Q = new.pose(Q0)
    for law in (old, new):
        law.out = [law.torque(Q0, ZERO, p + d, Q) for d in ([0, 0, 0], [0.05, 0, 0], [0, -0.05, 0.02])]
    np.testing.assert_array_equal(old.out, new.out)
    assert old.step.limited == new.step.limited >= 1


def test_a_former_and_a_new_name_together_are_refused():
    with pytest.raises(rd.InputError, match="give max_pose_error only"):
        rd.JointImpedance(PANDA, 80.0, max_error=0.1, max_pose_error=0.1)
    with pytest.raises(rd.InputError, match="give max_torque_rate only"):
        rd.CartesianImpedance(PANDA, TCP, K6, max_torque_step=1.0, max_torque_rate=1000.0)


# --- the rate in N m/s ------------------------------------------------------------------------------

def test_the_rate_times_the_calls_dt_is_the_former_per_call_step():
    with pytest.warns(DeprecationWarning):
        stepped = rd.JointImpedance(PANDA, 80.0, max_torque_step=0.5)             # 0.5 N m per call
    by_dt = rd.JointImpedance(PANDA, 80.0, max_torque_rate=250.0)                  # x 2 ms = 0.5 N m
    by_period = rd.JointImpedance(PANDA, 80.0, max_torque_rate=250.0, period=2e-3)
    a, b, c = joint_run(stepped), joint_run(by_dt, [2e-3] * 4), joint_run(by_period)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_each_torque_moves_by_at_most_rate_times_dt_and_by_that_where_the_limit_binds():
    rate = np.linspace(100.0, 700.0, 7)                                            # per joint [N m/s]
    law = rd.JointImpedance(PANDA, 80.0, max_torque_rate=rate)
    free = rd.JointImpedance(PANDA, 80.0)
    dts = [None, 1e-3, 3e-3, 0.5e-3]
    taus = joint_run(law, dts)
    for k in range(1, 4):
        move, bound = taus[k] - taus[k - 1], rate * dts[k]
        want = free.torque(Q0, ZERO, joint_targets()[k]) - taus[k - 1]            # the unlimited move
        assert np.all(np.abs(move) <= bound * (1 + 1e-12))
        binds = np.abs(want) > bound
        assert binds.any()
        np.testing.assert_allclose(np.abs(move[binds]), bound[binds], rtol=1e-12)
        np.testing.assert_allclose(move[~binds], want[~binds], rtol=1e-12, atol=1e-12)


def test_a_bad_dt_or_rate_is_refused_with_the_reason():
    law = rd.JointImpedance(PANDA, 80.0, max_torque_rate=100.0)
    law.torque(Q0, ZERO, Q0)
    for dt in (-1e-3, np.nan):
        with pytest.raises(rd.InputError, match="dt must be the time since the last torque"):
            law.torque(Q0, ZERO, Q0 + 0.1, dt=dt)
    with pytest.raises(rd.InputError, match="max_torque_rate must be a positive number"):
        rd.JointImpedance(PANDA, 80.0, max_torque_rate=0.0)
    with pytest.raises(rd.InputError, match="period must be a positive number"):
        rd.JointImpedance(PANDA, 80.0, max_torque_rate=100.0, period=0.0)


def test_the_nodes_torque_rate_is_the_librarys_limit_with_the_clocks_time():
    law = rd.JointImpedance(PANDA, 80.0, max_torque_rate=400.0)
    node = TorqueRate(400.0, int(0.1 * S))
    free = rd.JointImpedance(PANDA, 80.0)
    clock = [0, 1_000_000, 3_500_000, 4_500_000]                                     # [ns]
    for q_d, now, dt in zip(joint_targets(), clock, [None, 1e-3, 2.5e-3, 1e-3]):
        np.testing.assert_allclose(node.apply(free.torque(Q0, ZERO, q_d), now), law.torque(Q0, ZERO, q_d, dt=dt),
                                   rtol=1e-12, atol=1e-12)
    assert node.limited == law.step.limited == 3


# --- the scalar stiffness -----------------------------------------------------------------------

def test_a_scalar_stiffness_and_damping_are_the_per_joint_vectors():
    scalar = rd.JointImpedance(PANDA, 80.0, 5.0)
    vector = rd.JointImpedance(PANDA, [80.0] * 7, [5.0] * 7)
    np.testing.assert_array_equal(scalar.K, 80.0 * np.eye(7))
    np.testing.assert_array_equal(joint_run(scalar), joint_run(vector))
    modal = rd.JointImpedance(PANDA, 80.0), rd.JointImpedance(PANDA, [80.0] * 7)       # damping=None: modal
    np.testing.assert_array_equal(joint_run(modal[0]), joint_run(modal[1]))
    with pytest.raises(rd.InputError, match="stiffness must be positive definite"):
        rd.JointImpedance(PANDA, -1.0)
    with pytest.raises(rd.InputError, match="stiffness must be 6 values"):       # N/m and N m/rad: no one value
        rd.CartesianImpedance(PANDA, TCP, 500.0)


def test_the_nodes_one_value_stiffness_and_pose_error_are_the_librarys():
    from robot_dynamics.control.compensation import JOINT_IMPEDANCE
    from robot_dynamics.control.impedance_target import ImpedanceTarget, build_impedance
    target = ImpedanceTarget(PANDA.joint_names, PANDA.base_link, 0, 'joints')
    control = build_impedance(PANDA, JOINT_IMPEDANCE, target, stiffness=[60.0], damping=[4.0],
                              max_pose_error=(0.05, 0.3))
    law = rd.JointImpedance(PANDA, 60.0, 4.0, max_pose_error=0.3)          # the Panda's joints are revolute
    np.testing.assert_array_equal(control.law.K, law.K)
    np.testing.assert_array_equal(control.law.max_pose_error, np.full(7, 0.3))
    np.testing.assert_array_equal(joint_run(control.law), joint_run(law))
