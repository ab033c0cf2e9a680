"""The impedance laws' ``out=`` and their single-state fast path (dynamics_node's impedance modes call them
once a joint state, writing into the torque loop's own array).

A single state of C-contiguous float64 vectors goes to the compiled kernel as it is; anything else
(lists, float32, strided rows, batches) is checked and copied. Both run the same kernel on the same
values, so the torques are equal to the last bit; ``out`` holds the torque the call returns, the
rate-limited one where the limit binds; a bad state through the fast path gets the checked path's
error.
"""
import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError, SingularityError

PANDA = rd.load_urdf("urdf/panda_arm.urdf")
TCP = "panda_hand_tcp"
K6 = [500.0, 500.0, 500.0, 30.0, 30.0, 30.0]
Q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
QD = np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.2, 0.15])


def laws():
    """(name, law, target arguments) of each law: the Cartesian target 3 cm and a small turn away."""
    cart = rd.CartesianImpedance(PANDA, TCP, K6, nullspace_stiffness=5.0)
    p, Q = cart.pose(Q0)
    turn = np.array([0.0, 0.0, np.sin(0.05), np.cos(0.05)])
    Q_d = rd.model.configuration.quaternion_multiply(turn, Q)
    return [("joint", rd.JointImpedance(PANDA, 60.0, max_pose_error=0.3), (Q0 + 0.1,)),
            ("cartesian", cart, (p + [0.03, -0.02, 0.01], Q_d))]


@pytest.mark.parametrize("case", range(2), ids=["joint", "cartesian"])
def test_out_holds_the_torque_and_the_fast_path_equals_the_checked_one(case):
    name, law, target = laws()[case]
    fast = law.torque(Q0, QD, *target)                          # arrays: straight into the kernel
    checked = law.torque(Q0.tolist(), QD.tolist(), *(np.asarray(t).tolist() for t in target))
    np.testing.assert_array_equal(fast, checked)
    strided = np.zeros((7, 2))
    strided[:, 0] = QD                                          # a column: not contiguous, copied
    np.testing.assert_array_equal(law.torque(Q0, strided[:, 0], *target), fast)
    out = np.full(7, np.nan)
    assert law.torque(Q0, QD, *target, out=out) is out
    np.testing.assert_array_equal(out, fast)
    many = np.full((3, 7), np.nan)
    assert law.torque(np.stack([Q0] * 3), np.stack([QD, QD, -QD]), *target, out=many) is many
    np.testing.assert_array_equal(many[0], fast)
    np.testing.assert_array_equal(many[2], law.torque(Q0, -QD, *target))


@pytest.mark.parametrize("case", range(2), ids=["joint", "cartesian"])
def test_out_holds_the_rate_limited_torque_where_the_limit_binds(case):
    name, free, target = laws()[case]
    law = (rd.JointImpedance(PANDA, 60.0, max_pose_error=0.3, max_torque_rate=1000.0) if name == "joint" else
           rd.CartesianImpedance(PANDA, TCP, K6, nullspace_stiffness=5.0, max_torque_rate=1000.0))
    first = law.torque(Q0, QD, *target, dt=1e-3)                 # no last torque yet: not limited
    out = np.empty(7)
    got = law.torque(Q0, -QD, *target, dt=1e-3, out=out)        # 1 N m at most from the first
    assert got is out and law.step.limited == 1
    want = np.clip(free.torque(Q0, -QD, *target), first - 1.0, first + 1.0)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
    assert np.abs(out - first).max() == pytest.approx(1.0, abs=1e-12)


def test_a_bad_state_through_the_fast_path_names_the_problem():
    for name, law, target in laws():
        bad = Q0.copy()
        bad[3] = np.nan
        with pytest.raises(InputError, match="finite"):
            law.torque(bad, QD, *target, out=np.empty(7))
        with pytest.raises(InputError):
            law.torque(Q0[:6].copy(), QD[:6].copy(), *target)
    name, law, target = laws()[1]
    with pytest.raises(InputError, match="unit norm"):
        law.torque(Q0, QD, target[0], target[1] * 1.01)
    stiff = rd.CartesianImpedance(PANDA, TCP, K6, max_condition=1.0 + 1e-9)     # every pose too near
    stiff.q_nullspace = Q0.copy()                                # the fast path from the first call
    with pytest.raises(SingularityError, match="cond"):
        stiff.torque(Q0, QD, *target)
