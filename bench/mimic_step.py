"""A free-arm step of example-robot-data's Panda (a mimic finger joint) against the bundled Panda's (issue 35).

Usage (from the checkout, after scripts/setup-venv.sh --dev; needs example-robot-data):
    .venv/bin/python bench/mimic_step.py [--repeats 7] [--block 200]

Both arms held at their ready pose by the position servo, no contact, dt = 1 ms, the default plug-ins
(URDF damping, stops): ``rd.Simulator.step()`` one step a call, and ``step(block)`` (``block`` steps in
one compiled call), with RK4 and semi-implicit Euler. Per robot: the median over ``--repeats`` blocks,
the two robots interleaved (the machine is shared: the load moves both alike); the ratio is the median
of the per-repeat ratios. Whether each simulator takes the compiled step is printed with it.
"""
import argparse
import os
import statistics
import time
import warnings

import numpy as np

import robot_dynamics as rd
from robot_dynamics.tools.sample import example_robot_data_dir

READY = np.array([0.0, -0.785398, 0.0, -2.35619, 0.0, 1.5707, 0.785398, 0.02])


def robots():
    """{name: model}: example-robot-data's Panda and the bundled one."""
    erd = example_robot_data_dir()
    if erd is None:
        raise SystemExit("example-robot-data is not installed (pip install -r requirements-dev.txt)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mimic = rd.load_urdf(str(erd / "panda_description/urdf/panda.urdf"))
    return {"example-robot-data": mimic, "bundled": rd.load_urdf(rd.bundled_path("panda_arm.urdf"))}


def simulator(model, integrator):
    q0 = READY[:model.nq].copy()
    sim = rd.Simulator(model, q0=q0, integrator=integrator)
    sim.set_command(q0, mode="position")
    sim.step(100)
    return sim


def per_step(sim, block, single):
    """CPU time [us] of one step over ``block`` steps."""
    cpu = time.thread_time()
    if single:
        for _ in range(block):
            sim.step()
    else:
        sim.step(block)
    return (time.thread_time() - cpu) / block * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--block", type=int, default=200)
    args = ap.parse_args(argv)
    models = robots()
    load = os.getloadavg()
    for integrator in ("rk4", "semi_implicit_euler"):
        sims = {name: simulator(m, integrator) for name, m in models.items()}
        for single in (True, False):
            times = {name: [] for name in sims}
            for k in range(args.repeats):
                for name in (list(sims) if k % 2 == 0 else list(sims)[::-1]):
                    times[name].append(per_step(sims[name], args.block, single))
            ratio = statistics.median(a / b for a, b in zip(*times.values()))
            print("%-19s %-12s %s" % (integrator, "step()" if single else "step(%d)" % args.block, "  ".join(
                "%s %.1f us (compiled %s)" % (name, statistics.median(t), sims[name]._fast_path() is not None)
                for name, t in times.items())) + "  ratio %.2f" % ratio)
    print("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after" % (load + os.getloadavg()))


if __name__ == "__main__":
    main()
