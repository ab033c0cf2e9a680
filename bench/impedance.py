"""Per-call cost of the impedance laws against the same laws written plainly on Pinocchio.

Usage (from the checkout, after scripts/setup-venv.sh):
    .venv/bin/python bench/impedance.py [--calls 2000] [--repeats 15]

On the bundled Panda (urdf/panda_arm.urdf), flange point ``panda_hand_tcp``, one state
away from singularities, in one process:

- ``rd.CartesianImpedance(...).torque(q, qd, position, quaternion)``: with the default
  modal damping (ratio 1 per mode of (K, Lambda(q))) and with a given damping matrix;
- the plain Cartesian law on Pinocchio, as issue 34 states it: ``computeAllTerms``, the
  frame Jacobian and classical frame acceleration (LOCAL_WORLD_ALIGNED), two matrix
  inverses (M^-1 and Lambda), the null-space projector, a given damping matrix, the
  orientation error by ``log3``;
- ``rd.JointImpedance(...).torque(q, qd, q_d)``: modal damping and given damping;
- the plain joint law on Pinocchio: ``K e + D de + nonLinearEffects``.

Each row: ``--repeats`` runs of ``--calls`` calls, the median and the fastest run's
time per call [us]; the ratio is the median against the plain Pinocchio law's. The load
average is printed with the table: on a loaded machine every figure grows, the ratios
less so. Issue 34's targets (idle machine): the Cartesian law at most 0.3x the plain
one, the joint law at most 5 us.
"""
import argparse
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # this checkout's robot_dynamics, installed or not
import robot_dynamics as rd  # noqa: E402

PANDA = ROOT / 'urdf' / 'panda_arm.urdf'
TCP = 'panda_hand_tcp'
Q = np.array([0.1, -0.3, 0.05, -2.0, 0.1, 1.8, 0.8])
QD = np.array([0.2, -0.1, 0.3, 0.2, -0.2, 0.1, 0.3])
K6 = np.array([500.0, 500.0, 500.0, 30.0, 30.0, 30.0])
D6 = 2.0 * np.sqrt(K6)
KN, DN = 5.0, 2.0 * np.sqrt(5.0)


def per_call(f, calls, repeats):
    """(median, fastest) time per call [us] over ``repeats`` runs of ``calls`` calls."""
    f()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        runs.append((time.perf_counter() - t) / calls * 1e6)
    return float(np.median(runs)), float(np.min(runs))


def plain_cartesian(pin, pm, pd, fid, q0):
    """The Cartesian law written plainly on Pinocchio (issue 34's reference): a function of
    (q, qd, position, R_d) -> tau."""
    from numpy.linalg import inv

    def law(q, qd, position, R_d):
        pin.computeAllTerms(pm, pd, q, qd)
        pin.updateFramePlacements(pm, pd)
        J = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
        a = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector
        M = np.triu(pd.M) + np.triu(pd.M, 1).T
        Minv = inv(M)
        Lambda = inv(J @ Minv @ J.T)
        oMf = pd.oMf[fid]
        e = np.concatenate([position - oMf.translation, pin.log3(R_d @ oMf.rotation.T)])
        F = K6 * e - D6 * (J @ qd) - Lambda @ a
        tau0 = KN * (q0 - q) - DN * qd
        P = np.eye(7) - J.T @ (Lambda @ J @ Minv)
        return J.T @ F + P @ tau0 + pd.nle
    return law


def plain_joint(pin, pm, pd, K, D):
    def law(q, qd, q_d):
        return K * (q_d - q) - D * qd + pin.nonLinearEffects(pm, pd, q, qd)
    return law


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--calls', type=int, default=2000)
    ap.add_argument('--repeats', type=int, default=15)
    args = ap.parse_args()
    import pinocchio as pin

    model = rd.load_urdf(str(PANDA))
    pm = pin.buildModelFromUrdf(str(PANDA))
    pd = pm.createData()
    fid = pm.getFrameId(TCP)
    cart = rd.CartesianImpedance(model, TCP, K6, nullspace_stiffness=KN, q_nullspace=Q)
    cart_d = rd.CartesianImpedance(model, TCP, K6, np.diag(D6), nullspace_stiffness=KN, q_nullspace=Q)
    position = cart.pose(Q)[0] + np.array([0.01, -0.02, 0.015])
    R_d = rd.link_pose(model, Q, TCP)[:3, :3] @ pin.exp3(np.array([0.02, -0.03, 0.01]))
    quaternion = pin.Quaternion(R_d).coeffs().copy()            # (x, y, z, w)
    plain_c = plain_cartesian(pin, pm, pd, fid, Q)
    Kj = np.full(7, 100.0)
    joint, joint_d = rd.JointImpedance(model, Kj), rd.JointImpedance(model, Kj, 2.0 * np.sqrt(Kj))
    plain_j = plain_joint(pin, pm, pd, Kj, 2.0 * np.sqrt(Kj))
    q_d = Q + 0.05

    # the plain laws compute what ours do (same damping): a check, not a benchmark
    np.testing.assert_allclose(cart_d.torque(Q, QD, position, quaternion),
                               plain_c(Q, QD, position, R_d), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(joint_d.torque(Q, QD, q_d), plain_j(Q, QD, q_d), rtol=1e-9, atol=1e-9)

    c, r = args.calls, args.repeats
    rows = [('CartesianImpedance.torque, modal damping', per_call(lambda: cart.torque(Q, QD, position, quaternion), c, r)),
            ('CartesianImpedance.torque, given damping',
             per_call(lambda: cart_d.torque(Q, QD, position, quaternion), c, r)),
            ('plain Cartesian law on Pinocchio', per_call(lambda: plain_c(Q, QD, position, R_d), c, r)),
            ('JointImpedance.torque, modal damping', per_call(lambda: joint.torque(Q, QD, q_d), c, r)),
            ('JointImpedance.torque, given damping', per_call(lambda: joint_d.torque(Q, QD, q_d), c, r)),
            ('plain joint law on Pinocchio', per_call(lambda: plain_j(Q, QD, q_d), c, r))]
    ref = {'Cartesian': rows[2][1][0], 'Joint': rows[5][1][0]}
    load = os.getloadavg()
    print('bundled Panda, %d x %d calls, load average %.2f %.2f %.2f, %d cores'
          % (r, c, *load, os.cpu_count()))
    print('| law | median [us] | fastest [us] | median / plain Pinocchio law |')
    print('|---|---:|---:|---:|')
    for name, (med, fast) in rows:
        base = ref['Cartesian'] if 'Cartesian' in name else ref['Joint']
        print('| %s | %.1f | %.1f | %.2f |' % (name, med, fast, med / base))


if __name__ == '__main__':
    main()
