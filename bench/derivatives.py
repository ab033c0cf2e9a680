#!/usr/bin/env python3
"""Benchmark the analytical derivatives against Pinocchio, side by side in one run (not a test).

On the bundled Panda (urdf/panda_arm.urdf, 7 DOF) and UR5 (urdf/ur5.urdf, 6 DOF):

1. Single calls: ``rd.rnea_derivatives(model, q, qd, qdd, data=data)`` and
   ``rd.aba_derivatives(model, q, qd, tau, data=data)`` against
   ``pinocchio.computeRNEADerivatives`` / ``computeABADerivatives`` with a
   reused pinocchio Data (both return three new (nq, nq) arrays). Timed in
   alternation, many short loops each (``paired`` of bench/benchmark.py):
   median per-call times and the median of the per-pair ratios. Target:
   ours / Pinocchio <= 1.5, aim 1.0.
2. A batch of 10,000 states on all cores (``rd.get_num_threads()``
   threads) against a Python loop of the same Pinocchio calls (Pinocchio
   has no parallel derivative call). Target: ours / loop <= 0.5 (at least
   2x faster).

Before timing, each pair of calls is checked to give the same result.

Usage:
    .venv/bin/python bench/derivatives.py [--quick]
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import MODELS, _machine, paired, same  # noqa: E402  (the same timing as the main benchmark)

BATCH = 10_000
TARGET_SINGLE, AIM_SINGLE, TARGET_BATCH = 1.5, 1.0, 0.5


def pin_upper(M):
    """Pinocchio may fill only the upper triangle of M / M^-1."""
    M = np.array(M)
    return np.triu(M) + np.triu(M, 1).T


def single_calls(rd, pin, path, loops):
    model, pm = rd.load_urdf(str(path)), pin.buildModelFromUrdf(str(path))
    assert list(pm.names)[1:] == list(model.joint_names)       # the same coordinate order
    data, pd = rd.Data(model), pm.createData()
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(-1, 1, (3, model.nq))
    calls = [
        ("rnea_derivatives", "computeRNEADerivatives", lambda: rd.rnea_derivatives(model, q, qd, qdd, data=data),
         lambda: pin.computeRNEADerivatives(pm, pd, q, qd, qdd)),
        ("aba_derivatives", "computeABADerivatives", lambda: rd.aba_derivatives(model, q, qd, qdd, data=data),
         lambda: pin.computeABADerivatives(pm, pd, q, qd, qdd)),
    ]
    rows = []
    for name, how, ours, theirs in calls:
        a, b = ours(), theirs()
        for k in range(3):
            same("%s, %s [%d]" % (path.name, name, k), a[k], pin_upper(b[k]) if k == 2 else b[k])
        a, b, ratio = paired(ours, theirs, loops)
        rows.append((name, how, a * 1e6, b * 1e6, ratio))
    return rows


def batches(rd, pin, path, repeats):
    model, pm = rd.load_urdf(str(path)), pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    rng = np.random.default_rng(2)
    Q, QD, QDD = rng.uniform(-1, 1, (3, BATCH, model.nq))
    rnea_d, aba_d = pin.computeRNEADerivatives, pin.computeABADerivatives
    calls = [
        ("rnea_derivatives", rnea_d, lambda: rd.rnea_derivatives(model, Q, QD, QDD),
         lambda: [rnea_d(pm, pd, Q[k], QD[k], QDD[k]) for k in range(BATCH)]),
        ("aba_derivatives", aba_d, lambda: rd.aba_derivatives(model, Q, QD, QDD),
         lambda: [aba_d(pm, pd, Q[k], QD[k], QDD[k]) for k in range(BATCH)]),
    ]
    rows = []
    for name, f, ours, theirs in calls:
        a = ours()
        for k in (0, BATCH // 2, BATCH - 1):       # Pinocchio's arrays live in its Data: compare at once
            b = f(pm, pd, Q[k], QD[k], QDD[k])
            for j in range(3):
                same("%s, batch %s [%d]" % (path.name, name, j), a[j][k], pin_upper(b[j]) if j == 2 else b[j])
        how = f.__name__
        a, b, ratio = paired(ours, theirs, repeats, number=1)
        rows.append((name, "loop of " + how, a * 1e3, b * 1e3, ratio))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer loops (a rough figure)")
    args = parser.parse_args()
    import pinocchio as pin
    import robot_dynamics as rd
    loops, repeats = (20, 3) if args.quick else (200, 9)
    print("robot_dynamics derivatives against Pinocchio %s; %s; %d threads for batches"
          % (pin.__version__, _machine(), rd.get_num_threads()))
    for label, (path, root) in MODELS.items():
        if root is not None:           # the targets are the fixed-base arms' (Panda, UR5)
            continue
        print("\n%s, single calls (median us per call; ratio = median of paired loops; target <= %.1f, aim %.1f)"
              % (label, TARGET_SINGLE, AIM_SINGLE))
        print("  %-18s %-24s %9s %9s %7s  %s" % ("function", "Pinocchio", "ours", "Pinocchio", "ratio", "met"))
        for name, how, a, b, r in single_calls(rd, pin, path, loops):
            print("  %-18s %-24s %9.2f %9.2f %7.2f  %s" % (name, how, a, b, r, "yes" if r <= TARGET_SINGLE else "no"))
        print("%s, batch of %d states (median ms; ratio = ours / loop; target <= %.1f)" % (label, BATCH, TARGET_BATCH))
        print("  %-18s %-32s %9s %9s %7s  %s" % ("function", "Pinocchio", "ours", "loop", "ratio", "met"))
        for name, how, a, b, r in batches(rd, pin, path, repeats):
            print("  %-18s %-32s %9.2f %9.2f %7.3f  %s" % (name, how, a, b, r, "yes" if r <= TARGET_BATCH else "no"))


if __name__ == "__main__":
    main()
