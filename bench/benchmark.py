#!/usr/bin/env python3
"""Benchmark robot_dynamics against Pinocchio, side by side in one run (not a test).

Three tables, on the bundled Panda (urdf/panda_arm.urdf, 7 DOF) and UR5
(urdf/ur5.urdf, 6 DOF), and on example-robot-data's Talos (reduced, 32
joints) with a floating base (Pinocchio: a free-flyer root joint; its
joints come in another order there, the states are permuted to match):

1. Single calls with a reused work buffer: ``rd.rnea(model, q, qd, qdd,
   data=data, out=tau)`` (and gravity_torques, mass_matrix, aba,
   nonlinear_effects) against pinocchio.rnea (computeGeneralizedGravity,
   crba, aba, nonLinearEffects) with a reused pinocchio Data. The two are
   timed in alternation, many short loops each; a row reports the median
   of the per-loop times and the median of the per-pair ratios (a pair is
   one loop of each, back to back, so load that comes and goes cancels out
   of the ratio). Raw call times: Pinocchio's crba fills the upper
   triangle of M, ours the whole matrix. Target: ratio ours / Pinocchio
   <= 1.3, aim 1.0.
2. Batches of 10,000 states on all cores (``rd.get_num_threads()``
   threads) against Pinocchio's own parallel batch with the same number of
   threads (``rneaInParallel`` / ``abaInParallel`` with a ``ModelPool``);
   gravity and mass matrix have no parallel call in Pinocchio, so they are
   compared with a Python loop of Pinocchio calls (marked "loop"). Target:
   ratio <= 0.6, aim 0.5; states per second for both. OpenMP threads sleep
   between batches (``OMP_WAIT_POLICY=PASSIVE`` unless set: see below).
3. Cold start in fresh subprocesses (median of 9): ``import numba``,
   ``import robot_dynamics`` (with the kernel cache warm) and ``import
   pinocchio``. Target: robot_dynamics costs at most 0.2 s more than numba.

Usage:
    .venv/bin/python bench/benchmark.py [--quick] [--write-docs] [--json PATH] [--threads N]
    .venv/bin/python bench/benchmark.py --from-json PATH [--write-docs]     # tables of a saved run

``--write-docs`` replaces the text between ``<!-- bench:begin -->`` and
``<!-- bench:end -->`` in docs/PERFORMANCE.md with the tables (``make bench``
and scripts/bench.sh pass it when given no option). Before timing, each
pair of calls is checked to give the same result.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import timeit
import warnings
from pathlib import Path

import numpy as np

# Both libraries run their batches on OpenMP threads (Pinocchio's ModelPool calls,
# numba's "omp" threading layer). By default an OpenMP thread spins for a while after
# its parallel region, and in the paired alternation below the spinning threads of one
# library take the two cores from the other's next batch: measured here, every batch
# of either library then took 7-15 ms instead of 2-8 ms. Sleeping threads (set before
# either library is imported) let each batch have the machine, as in a real program
# that runs one of them.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"panda_arm (7 DOF)": (ROOT / "urdf" / "panda_arm.urdf", None),
          "ur5 (6 DOF)": (ROOT / "urdf" / "ur5.urdf", None),
          "talos_reduced, free-flyer (6 + 32 DOF)": ("talos_data/robots/talos_reduced.urdf", "floating")}
BATCH = 10_000
TARGET_SINGLE, TARGET_BATCH, TARGET_IMPORT = 1.3, 0.6, 0.2      # met when the figure is at most this
AIM_SINGLE, AIM_BATCH = 1.0, 0.5


def same(name, ours, pin, tol=1e-8):
    """Stop when robot_dynamics and Pinocchio disagree: the timings would compare different work."""
    ours, pin = np.asarray(ours), np.asarray(pin)
    err = np.max(np.abs(ours - pin)) / max(1.0, np.max(np.abs(pin)))
    if not err <= tol:
        raise SystemExit("benchmark: %s differs from Pinocchio (relative error %.2e)" % (name, err))


def paired(f_ours, f_pin, loops, number=500):
    """Two functions timed in alternation: median per-call times [s] and median ratio of the pairs.

    Each pair (one loop of each, back to back) sees about the same machine
    load, so the median of the per-pair ratios is steadier than the ratio of
    the medians on a busy machine; the order within a pair alternates.
    """
    ours, pin = [], []
    for k in range(loops):
        if k % 2:
            pin.append(timeit.timeit(f_pin, number=number) / number)
            ours.append(timeit.timeit(f_ours, number=number) / number)
        else:
            ours.append(timeit.timeit(f_ours, number=number) / number)
            pin.append(timeit.timeit(f_pin, number=number) / number)
    return statistics.median(ours), statistics.median(pin), statistics.median(a / b for a, b in zip(ours, pin))


def load(rd, pin, spec):
    """(our model, Pinocchio's model, pq, pv): Pinocchio's q = ours[pq], v = ours[pv]
    (the joints of a floating robot come in another order there)."""
    path, root = spec
    if root is None:
        model, pm = rd.load_urdf(str(path)), pin.buildModelFromUrdf(str(path))
        return model, pm, np.arange(model.nq), np.arange(model.nv)
    from robot_dynamics.tools.sample import example_robot_data_dir
    full = str(example_robot_data_dir() / path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rd.load_urdf(full, root_joint=root)
    pm = pin.buildModelFromUrdf(full, pin.JointModelFreeFlyer())
    ours = {n: i for i, n in enumerate(model.joint_names)}
    joints = [ours[pm.names[j]] for j in range(2, pm.njoints)]
    return (model, pm, np.r_[np.arange(7), 7 + np.array(joints)], np.r_[np.arange(6), 6 + np.array(joints)])


def random_states(model, rng, count):
    """(count, nq) configurations (unit quaternions) and two (count, nv) arrays."""
    q = rng.uniform(-1, 1, (count, model.nq))
    if model.root_joint == "floating":
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    qd, qdd = rng.uniform(-1, 1, (2, count, model.nv))
    return q, qd, qdd


def single_calls(rd, pin, spec, loops):
    model, pm, pq, pv = load(rd, pin, spec)
    data, pd = rd.Data(model), pm.createData()
    (q,), (qd,), (qdd,) = random_states(model, np.random.default_rng(1), 1)
    Pq, Pqd, Pqdd = q[pq], qd[pv], qdd[pv]                     # the same state in Pinocchio's order
    tau, M = np.empty(model.nv), np.empty((model.nv, model.nv))
    upper = np.triu_indices(model.nv)                          # Pinocchio's crba fills the upper triangle
    calls = [
        ("rnea", "rnea", lambda: rd.rnea(model, q, qd, qdd, data=data, out=tau),
         lambda: pin.rnea(pm, pd, Pq, Pqd, Pqdd)),
        ("gravity_torques", "computeGeneralizedGravity", lambda: rd.gravity_torques(model, q, data=data, out=tau),
         lambda: pin.computeGeneralizedGravity(pm, pd, Pq)),
        ("mass_matrix", "crba", lambda: rd.mass_matrix(model, q, data=data, out=M), lambda: pin.crba(pm, pd, Pq)),
        ("aba", "aba", lambda: rd.aba(model, q, qd, qdd, data=data, out=tau),
         lambda: pin.aba(pm, pd, Pq, Pqd, Pqdd)),
        ("nonlinear_effects", "nonLinearEffects", lambda: rd.nonlinear_effects(model, q, qd, data=data, out=tau),
         lambda: pin.nonLinearEffects(pm, pd, Pq, Pqd)),
    ]
    rows = []
    for name, how, ours, theirs in calls:
        a, b = ours(), theirs()                             # compiled / loaded, warm
        a = a[np.ix_(pv, pv)] if a.ndim == 2 else a[pv]
        if a.ndim == 2:
            a, b = a[upper], np.asarray(b)[upper]
        same("%s, %s" % (spec[0], name), a, b)
        a, b, ratio = paired(ours, theirs, loops)
        rows.append(dict(function=name, pinocchio=how, ours_us=a * 1e6, pin_us=b * 1e6, ratio=ratio,
                         target=TARGET_SINGLE))
    return rows


def batches(rd, pin, spec, repeats):
    model, pm, pq, pv = load(rd, pin, spec)
    pd, threads = pm.createData(), rd.get_num_threads()
    pool = pin.ModelPool(pm, threads)
    Q, QD, QDD = random_states(model, np.random.default_rng(2), BATCH)
    PQ = np.ascontiguousarray(Q[:, pq])
    Qc, QDc, QDDc = (np.asfortranarray(x.T) for x in (PQ, QD[:, pv], QDD[:, pv]))   # Pinocchio: one state per column
    out, out_M = np.empty((BATCH, model.nv)), np.empty((BATCH, model.nv, model.nv))
    res = np.empty((model.nv, BATCH), order="F")                        # written in place, no copy
    upper = np.triu_indices(model.nv)

    def pin_loop(f):
        return lambda: [f(PQ[k]) for k in range(BATCH)]

    def check(name, how, ours):
        if how != "loop":                           # Pinocchio's parallel batch has just written res
            return same(name, ours[:, pv], res.T)
        for k in (0, BATCH // 2, BATCH - 1):        # a few states of the loop
            if ours.ndim == 3:
                same(name, ours[k][np.ix_(pv, pv)][upper], pin.crba(pm, pd, PQ[k])[upper])
            else:
                same(name, ours[k][pv], pin.computeGeneralizedGravity(pm, pd, PQ[k]))

    calls = [
        ("rnea", "rneaInParallel", lambda: rd.rnea(model, Q, QD, QDD, out=out),
         lambda: pin.rneaInParallel(threads, pool, Qc, QDc, QDDc, res)),
        ("gravity_torques", "loop", lambda: rd.gravity_torques(model, Q, out=out),
         pin_loop(lambda q: pin.computeGeneralizedGravity(pm, pd, q))),
        ("aba", "abaInParallel", lambda: rd.aba(model, Q, QD, QDD, out=out),
         lambda: pin.abaInParallel(threads, pool, Qc, QDc, QDDc, res)),
        ("mass_matrix", "loop", lambda: rd.mass_matrix(model, Q, out=out_M), pin_loop(lambda q: pin.crba(pm, pd, q))),
    ]
    rows = []
    for name, how, ours, theirs in calls:
        result = ours()
        theirs()
        check("%s, batch %s" % (spec[0], name), how, result)
        a, b, ratio = paired(ours, theirs, repeats, number=1)
        rows.append(dict(function=name, pinocchio=how, ours_ms=a * 1e3, pin_ms=b * 1e3, ratio=ratio,
                         ours_per_s=BATCH / a, pin_per_s=BATCH / b, target=TARGET_BATCH, threads=threads))
    return rows


def cold_import(repeats):
    def once(module):
        code = "import time; t = time.perf_counter(); import %s; print(time.perf_counter() - t)" % module
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True)
        return float(out.stdout.strip())
    once("robot_dynamics")                                  # the kernel cache exists (set-up compiled it)
    times = {m: [] for m in ("numba", "robot_dynamics", "pinocchio")}
    for _ in range(repeats):
        for m in times:
            times[m].append(once(m))
    return dict({m: statistics.median(t) for m, t in times.items()}, repeats=repeats)


def markdown(single, batch, cold, meta):
    ok = lambda r, t: "yes" if r <= t else "no"        # noqa: E731
    lines = ["Measured %(date)s on %(machine)s, Python %(python)s, numba %(numba)s, Pinocchio %(pinocchio)s; "
             "%(threads)d threads for the batches (robot_dynamics and Pinocchio alike; OpenMP threads "
             "sleep between batches, OMP_WAIT_POLICY=%(omp_wait)s). "
             "Times are medians of alternating timing loops; a ratio is the median of the ratios of "
             "back-to-back pairs of loops." % meta, "",
             "Single calls with a reused `Data` and `out=` against Pinocchio with a reused `Data` "
             "(raw call times; Pinocchio's `crba` fills the upper triangle of M, ours the whole matrix). "
             "Target: ratio <= %.1f, aim %.1f." % (TARGET_SINGLE, AIM_SINGLE), "",
             "| model | function | Pinocchio call | robot_dynamics | Pinocchio | ratio | target | met |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for model, rows in single.items():
        for r in rows:
            lines.append("| %s | `%s` | `%s` | %.2f us | %.2f us | %.2f | <= %.1f | %s |" % (
                model, r["function"], r["pinocchio"], r["ours_us"], r["pin_us"], r["ratio"], r["target"],
                ok(r["ratio"], r["target"])))
    lines += ["", "Batches of %d states on %d threads against Pinocchio's parallel batch (`ModelPool`, same "
              "thread count). Pinocchio has no parallel gravity or mass matrix: those rows compare with a "
              "Python loop of its calls (one thread), as the note says. Target: ratio <= %.1f, aim %.1f."
              % (BATCH, meta["threads"], TARGET_BATCH, AIM_BATCH), "",
              "| model | function | Pinocchio call | robot_dynamics | Pinocchio | ratio | target | met | "
              "robot_dynamics states/s | Pinocchio states/s |", "|---|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for model, rows in batch.items():
        for r in rows:
            lines.append("| %s | `%s` | %s | %.2f ms | %.2f ms | %.2f | <= %.1f | %s | %s | %s |" % (
                model, r["function"], r["pinocchio"], r["ours_ms"], r["pin_ms"], r["ratio"], r["target"],
                ok(r["ratio"], r["target"]), _rate(r["ours_per_s"]), _rate(r["pin_per_s"])))
    extra = cold["robot_dynamics"] - cold["numba"]
    lines += ["", "Cold start: `import` in a fresh process, median of %d, kernel cache warm. Target: "
              "`import robot_dynamics` at most %.1f s more than `import numba`." % (cold["repeats"], TARGET_IMPORT),
              "", "| import | time |", "|---|---:|"]
    lines += ["| `%s` | %.3f s |" % (m, cold[m]) for m in ("numba", "robot_dynamics", "pinocchio")]
    lines += ["", "| cost | robot_dynamics - numba | target | met |", "|---|---:|---:|---|",
              "| `import robot_dynamics` beyond `import numba` | %.3f s | <= %.1f s | %s |" % (
                  extra, TARGET_IMPORT, ok(extra, TARGET_IMPORT))]
    return "\n".join(lines)


def _rate(x):
    return "{:,.0f}".format(x)


def write_docs(text):
    path = ROOT / "docs" / "PERFORMANCE.md"
    doc = path.read_text()
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    if begin not in doc or end not in doc:
        raise SystemExit("benchmark: %s has no %s ... %s markers" % (path, begin, end))
    head, rest = doc.split(begin, 1)
    path.write_text(head + begin + "\n" + text + "\n" + end + rest.split(end, 1)[1])
    print("benchmark: table written to %s" % path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer timing loops")
    ap.add_argument("--write-docs", action="store_true", help="write the tables into docs/PERFORMANCE.md")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    ap.add_argument("--threads", type=int, metavar="N", help="threads for the batches (default: all cores)")
    ap.add_argument("--from-json", metavar="PATH", help="print (and with --write-docs write) the tables of an "
                    "earlier run's JSON instead of measuring")
    args = ap.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        saved["meta"].setdefault("omp_wait", "default")
        text = markdown(saved["single"], saved["batch"], saved["cold"], saved["meta"])
        print(text)
        if args.write_docs:
            write_docs(text)
        return
    import numba
    import pinocchio as pin

    import robot_dynamics as rd
    if args.threads:
        rd.set_num_threads(args.threads)
    print("benchmark: %d threads for the batches (robot_dynamics and Pinocchio's ModelPool)" % rd.get_num_threads(),
          flush=True)
    loops = 15 if args.quick else 101
    single = {name: single_calls(rd, pin, spec, loops) for name, spec in MODELS.items()}
    batch = {name: batches(rd, pin, spec, 5 if args.quick else 21) for name, spec in MODELS.items()}
    cold = cold_import(3 if args.quick else 9)
    meta = dict(date=datetime.date.today().isoformat(), machine=_machine(),
                python=platform.python_version(), numba=numba.__version__, pinocchio=pin.__version__,
                threads=rd.get_num_threads(), omp_wait=os.environ.get("OMP_WAIT_POLICY", "default"))
    text = markdown(single, batch, cold, meta)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(meta=meta, single=single, batch=batch, cold=cold), indent=1))
    if args.write_docs:
        write_docs(text)


def _machine():
    import os
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "%s (%s), %d cores" % (cpu, platform.machine(), cores)


if __name__ == "__main__":
    main()
