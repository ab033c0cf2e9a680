"""The compiled impedance laws (analysis/impedance.py on algorithms/impedance_kernels.py) give
the torques of the numpy laws they replaced (issue 34, point 2), to 1e-12.

``Frozen*`` below are the laws' torque computations as they were before the compiled
kernels (commit 6a2b48a), kept here as the reference, with one deliberate change: the
Cartesian law's ``Jdot qd`` was a central difference of two Jacobians (accurate to
about 1e-8 relative); the compiled law takes the exact recursion, so the reference takes
the library's exact Python recursion ``rd.jacobian_derivative_times_qd`` (checked
against Pinocchio in test_floating_base.py and test_task_space.py). The difference the
change makes is bounded separately (the central difference's own error).
"""
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.analysis.impedance import (jdot_qd_by_difference, modal_damping, quaternion_conjugate,
                                               quaternion_log, quaternion_multiply)
from robot_dynamics.algorithms.kinematics import jacobian, link_pose
from robot_dynamics.model.configuration import matrix_quaternion

PANDA = rd.load_urdf(str(Path(__file__).resolve().parents[1] / "urdf" / "panda_arm.urdf"))
TCP = "panda_hand_tcp"
K6 = np.array([500.0, 400.0, 600.0, 30.0, 25.0, 35.0])
RTOL = 1e-12


def _bias(model, q, qd, gravity, coriolis):
    if gravity and coriolis:
        return rd.nonlinear_effects(model, q, qd)
    if gravity:
        return rd.gravity_torques(model, q)
    if coriolis:
        return rd.nonlinear_effects(model, q, qd) - rd.gravity_torques(model, q)
    return 0.0


def _matvec(A, x):
    return np.einsum('...ij,...j->...i', A, x)


def _clip_norm(x, limit):
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x * np.minimum(1.0, limit / np.maximum(n, 1e-300))


def frozen_joint_torque(law, q, qd, q_d, qd_d=None, qdd_d=None):
    """JointImpedance.torque before the kernels (without the torque-step limit)."""
    model = law.model
    e = q_d - q
    if law.max_pose_error is not None:
        e = np.clip(e, -law.max_pose_error, law.max_pose_error)
    de = -qd if qd_d is None else qd_d - qd
    D = law.D if law.D is not None else modal_damping(rd.mass_matrix(model, q), law.K, law.zeta)
    tau = _matvec(law.K, e) + _matvec(D, de)
    if qdd_d is not None:
        tau = tau + _matvec(rd.mass_matrix(model, q), qdd_d)
    return tau + _bias(model, q, qd, law.include_gravity, law.include_coriolis)


def frozen_cartesian_torque(law, q, qd, position, quaternion, twist=None, acceleration=None, wrench=None,
                            jdot_qd=None):
    """CartesianImpedance.torque before the kernels (without the torque-step limit); ``jdot_qd``:
    the function giving Jdot qd (default: the exact recursion, see the module doc)."""
    model = law.model
    jdot_qd = jdot_qd or (lambda m, q, qd, link, point:         # rows as a list: the Python recursion
                          rd.jacobian_derivative_times_qd(m, q, qd, link, point, rows=[0, 1, 2, 3, 4, 5]))
    J = jacobian(model, q, law.link, law.point)
    Jt = np.swapaxes(J, -1, -2)
    Minv_Jt = np.linalg.solve(rd.mass_matrix(model, q), Jt)
    Lambda = np.linalg.inv(J @ Minv_Jt)
    T = link_pose(model, q, law.link)
    p, Q = T[..., :3, :3] @ law.point + T[..., :3, 3], matrix_quaternion(T[..., :3, :3])
    e = np.concatenate([position - p, quaternion_log(quaternion_multiply(quaternion, quaternion_conjugate(Q)))],
                       axis=-1)
    if law.max_pose_error is not None:
        e = np.concatenate([_clip_norm(e[..., :3], law.max_pose_error[0]),
                            _clip_norm(e[..., 3:], law.max_pose_error[1])], axis=-1)
    v = _matvec(J, qd)
    de = -v if twist is None else twist - v
    shaped = law.inertia if law.inertia is not None else Lambda
    D = law.D if law.D is not None else modal_damping(shaped, law.K, law.zeta)
    F = _matvec(law.K, e) + _matvec(D, de)
    if law.inertia is not None:
        F = _matvec(Lambda, np.linalg.solve(law.inertia, (F + wrench)[..., None])[..., 0]) - wrench
    a_d = 0.0 if acceleration is None else acceleration
    if law.include_coriolis:
        a_d = a_d - jdot_qd(model, q, qd, law.link, law.point)
    if law.include_coriolis or acceleration is not None:
        F = F + _matvec(Lambda, a_d)
    tau0 = law.K0 * (law.q_nullspace - q) - law.D0 * qd
    Jbar_t = np.swapaxes(Minv_Jt @ Lambda, -1, -2)
    tau0 = tau0 - _matvec(Jt, _matvec(Jbar_t, tau0))
    return _matvec(Jt, F) + tau0 + _bias(model, q, qd, law.include_gravity, law.include_coriolis)


def close(got, want, rtol=RTOL):
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got - want).max()) / scale
    assert err <= rtol, "relative error %.2e > %.0e" % (err, rtol)
    return err


def random_states(rng, count, speed=1.5):
    lo, hi = PANDA.lower_limit, PANDA.upper_limit
    for _ in range(count):
        yield rng.uniform(lo + 0.2, hi - 0.2), rng.uniform(-speed, speed, PANDA.nq)


def unit(x):
    return x / np.linalg.norm(x)


JOINT_CASES = {
    "modal damping": dict(),
    "given damping": dict(damping=np.full(7, 3.0)),
    "matrix stiffness, clipped": dict(stiffness=np.diag(np.arange(1.0, 8.0) * 20) + 1.0, max_pose_error=0.1),
    "gravity only": dict(include_coriolis=False),
    "coriolis only": dict(include_gravity=False),
    "nothing compensated": dict(include_gravity=False, include_coriolis=False),
}


@pytest.mark.parametrize("case", JOINT_CASES)
def test_the_compiled_joint_law_gives_the_numpy_laws_torque(case):
    kw = dict(JOINT_CASES[case])
    law = rd.JointImpedance(PANDA, kw.pop("stiffness", np.linspace(50.0, 200.0, 7)), kw.pop("damping", None), **kw)
    rng = np.random.default_rng(1)
    for q, qd in random_states(rng, 20):
        q_d = q + rng.normal(scale=0.3, size=7)
        qd_d, qdd_d = rng.normal(size=7), rng.normal(size=7)
        close(law.torque(q, qd, q_d), frozen_joint_torque(law, q, qd, q_d))
        close(law.torque(q, qd, q_d, qd_d, qdd_d), frozen_joint_torque(law, q, qd, q_d, qd_d, qdd_d))


CARTESIAN_CASES = {
    "modal damping, null space": dict(nullspace_stiffness=5.0),
    "given damping, point": dict(damping=np.full(6, 20.0), point=(0.01, -0.02, 0.05)),
    "clipped error": dict(max_pose_error=(0.02, 0.1), nullspace_stiffness=np.linspace(1, 7, 7)),
    "gravity only": dict(include_coriolis=False),
    "nothing compensated": dict(include_gravity=False, include_coriolis=False),
    "inertia shaping": dict(inertia_shaping=True, inertia=np.array([2.0, 2.0, 2.0, 0.1, 0.1, 0.1])),
}


@pytest.mark.parametrize("case", CARTESIAN_CASES)
def test_the_compiled_cartesian_law_gives_the_numpy_laws_torque(case):
    kw = dict(CARTESIAN_CASES[case])
    law = rd.CartesianImpedance(PANDA, TCP, kw.pop("stiffness", K6), kw.pop("damping", None), max_condition=1e6,
                                **kw)
    rng = np.random.default_rng(2)
    shaping = law.inertia is not None
    for q, qd in random_states(rng, 20):
        position = law.pose(q)[0] + rng.normal(scale=0.05, size=3)
        quaternion = unit(rng.normal(size=4))
        twist, acceleration, wrench = rng.normal(size=(3, 6))
        if not shaping:
            close(law.torque(q, qd, position, quaternion), frozen_cartesian_torque(law, q, qd, position, quaternion))
        close(law.torque(q, qd, position, quaternion, twist, acceleration, wrench),
              frozen_cartesian_torque(law, q, qd, position, quaternion, twist, acceleration, wrench))


def test_the_exact_jdot_qd_changes_the_torque_by_the_central_differences_error_only():
    """The one change from the numpy law: against the reference with the central difference,
    the torques differ by about 1e-9 of their size (the difference's error), not more."""
    law = rd.CartesianImpedance(PANDA, TCP, K6, nullspace_stiffness=5.0)
    rng = np.random.default_rng(3)
    worst = 0.0
    for q, qd in random_states(rng, 10):
        position, quaternion = law.pose(q)
        got = law.torque(q, qd, position + 0.01, quaternion)
        want = frozen_cartesian_torque(law, q, qd, position + 0.01, quaternion, jdot_qd=jdot_qd_by_difference)
        worst = max(worst, close(got, want, rtol=1e-7))
    assert worst > 1e-15                 # the central difference is not exact: the change is real


def test_a_batch_and_lists_give_the_one_by_one_torques():
    law = rd.CartesianImpedance(PANDA, TCP, K6, nullspace_stiffness=5.0, q_nullspace=np.zeros(7))
    joint = rd.JointImpedance(PANDA, np.full(7, 100.0))
    rng = np.random.default_rng(4)
    Q, QD = zip(*random_states(rng, 5))
    Q, QD = np.array(Q), np.array(QD)
    P = np.array([law.pose(q)[0] for q in Q]) + 0.02
    quat = unit(np.array([0.9, 0.1, 0.0, 0.2]))
    batch = law.torque(Q, QD, P, quat)
    for k in range(5):
        np.testing.assert_array_equal(batch[k], law.torque(Q[k], QD[k], P[k], quat))
        np.testing.assert_array_equal(batch[k], law.torque(list(Q[k]), list(QD[k]), list(P[k]), list(quat)))
    jb = joint.torque(Q, QD, Q[::-1])
    for k in range(5):
        np.testing.assert_array_equal(jb[k], joint.torque(Q[k], QD[k], Q[4 - k]))


def test_bad_states_are_refused_with_the_reason_on_the_compiled_path():
    law = rd.CartesianImpedance(PANDA, TCP, K6)
    q = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])
    p, Q = law.pose(q)
    with pytest.raises(rd.InputError, match="not finite|finite"):
        law.torque(np.r_[np.nan, q[1:]], np.zeros(7), p, Q)
    with pytest.raises(rd.InputError, match="unit norm"):
        law.torque(q, np.zeros(7), p, 2 * Q)
    with pytest.raises(rd.InputError, match="7 values"):
        law.torque(q[:6], np.zeros(7), p, Q)
    with pytest.raises(rd.SingularityError, match="cond"):
        law.torque(np.zeros(7), np.zeros(7), p, Q)
    joint = rd.JointImpedance(PANDA, np.full(7, 100.0))
    with pytest.raises(rd.InputError, match="finite"):
        joint.torque(q, np.full(7, np.inf), q)


def test_the_single_state_call_keeps_no_memory_per_call():
    """The laws' hot path (arrays of the right shape) works in the law's own buffers: over 500
    calls nothing accumulates (each call allocates its result only)."""
    import tracemalloc
    law = rd.CartesianImpedance(PANDA, TCP, K6, nullspace_stiffness=5.0)
    joint = rd.JointImpedance(PANDA, np.full(7, 100.0))
    q, qd = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8]), np.full(7, 0.2)
    p, Q = law.pose(q)
    for _ in range(3):
        law.torque(q, qd, p, Q)
        joint.torque(q, qd, q)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(500):
        law.torque(q, qd, p, Q)
        joint.torque(q, qd, q)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename") if s.size_diff > 0)
    assert grown < 4000, "the laws kept %d bytes over 500 calls" % grown
