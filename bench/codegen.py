#!/usr/bin/env python3
"""Benchmark the generated C (rd.compile) against Pinocchio, side by side in one run (not a test).

On the bundled Panda (7 DOF) and UR5 (6 DOF):

1. Per state in a C loop over 10,000 states on one core: the generated
   ``NAME_rnea_batch`` / ``NAME_aba_batch`` / ``NAME_mass_matrix_batch``
   (through ``CompiledModel.rnea(Q, QD, QDD, out=...)``: one call, the loop
   runs in C) against Pinocchio's own batch on one thread
   (``rneaInParallel`` / ``abaInParallel`` with a ``ModelPool`` of 1).
   Pinocchio has no batch mass matrix: that row compares with single
   ``pin.crba`` calls from Python (its per-call time, Python overhead
   included, marked "per call"). Target (issue 24): ratio <= 0.5.
2. Per call through Python: ``rd.compile(model).rnea(q, qd, qdd)`` against
   ``pin.rnea(model, data, q, qd, qdd)``. Target: ratio <= 1.0.
3. The 10,000-state rnea batch on all cores: ``rd.compile``'s batch on
   ``rd.set_num_threads(os.cpu_count())`` threads (chunks of the C batch
   function, ctypes releases the GIL) against ``rneaInParallel`` with
   ``os.cpu_count()`` threads and a pool of as many models. Target: ratio <= 0.3.
   This section reports the median of the alternating loops as well as
   the fastest.

The two are timed in alternating loops (as bench/benchmark.py's
``paired``); a row reports the fastest loop of each and their ratio (the
machine this was written on is shared: medians measured the neighbours'
load). Before timing, each pair is checked to give the same result.

Usage:
    .venv/bin/python bench/codegen.py [--quick]
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchmark as B  # noqa: E402  (its helpers: paired, same, load, random_states; sets OMP_WAIT_POLICY)

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
MODELS = {k: v for k, v in B.MODELS.items() if v[1] is None}          # the fixed-base arms
TARGET_STATE, TARGET_CALL, TARGET_ALL_CORES = 0.5, 1.0, 0.3


def paired_min(f_ours, f_pin, loops, number=1):
    """B.paired's alternation, reporting the fastest loop of each and their ratio:
    on a shared machine (load average 6 on 2 cores here) the medians of 10 ms
    batches measure the neighbours; the minimum is the cost of the work."""
    import timeit
    ours, pin = [], []
    for k in range(loops):
        pair = ((ours, f_ours), (pin, f_pin)) if k % 2 == 0 else ((pin, f_pin), (ours, f_ours))
        for times, f in pair:
            times.append(timeit.timeit(f, number=number) / number)
    return min(ours), min(pin), min(ours) / min(pin)


def per_state(rd, pin, spec, repeats):
    """Rows of time per state of the C batch loop and of Pinocchio's one-thread batch."""
    model, pm, _, _ = B.load(rd, pin, spec)
    c = rd.compile(model)
    pool, pd = pin.ModelPool(pm, 1), pm.createData()
    Q, QD, QDD = B.random_states(model, np.random.default_rng(2), B.BATCH)
    Qc, QDc, QDDc = (np.asfortranarray(x.T) for x in (Q, QD, QDD))        # Pinocchio: one state per column
    out, out_M = np.empty((B.BATCH, model.nv)), np.empty((B.BATCH, model.nv, model.nv))
    res = np.empty((model.nv, B.BATCH), order="F")
    calls = [("rnea", "rneaInParallel, 1 thread", lambda: c.rnea(Q, QD, QDD, out=out),
              lambda: pin.rneaInParallel(1, pool, Qc, QDc, QDDc, res), B.BATCH),
             ("aba", "abaInParallel, 1 thread", lambda: c.aba(Q, QD, QDD, out=out),
              lambda: pin.abaInParallel(1, pool, Qc, QDc, QDDc, res), B.BATCH)]
    rows = []
    for name, how, ours, theirs, count in calls:
        ours()
        theirs()
        B.same("%s %s" % (spec[0].name, name), out, res.T)
        a, b, ratio = paired_min(ours, theirs, repeats)
        rows.append((name, how, a / B.BATCH, b / count, ratio))
    q0 = Q[0]
    c.mass_matrix(Q, out=out_M)
    B.same("%s mass_matrix" % spec[0].name, np.triu(out_M[0]), np.triu(pin.crba(pm, pd, q0)))
    ours = lambda: c.mass_matrix(Q, out=out_M)                                     # noqa: E731
    theirs = lambda: [pin.crba(pm, pd, q0) for _ in range(1000)]                   # noqa: E731
    a, b, ratio = paired_min(ours, theirs, repeats)
    rows.append(("mass_matrix", "crba, per call", a / B.BATCH, b / 1000, ratio * 1000 / B.BATCH))
    return rows


def paired_both(f_ours, f_pin, loops):
    """Alternating loops: (min ours, min pin, min ratio, median ours, median pin, median ratio)."""
    import timeit
    ours, pin = [], []
    for k in range(loops):
        pair = ((ours, f_ours), (pin, f_pin)) if k % 2 == 0 else ((pin, f_pin), (ours, f_ours))
        for times, f in pair:
            times.append(timeit.timeit(f, number=1))
    mo, mp = float(np.median(ours)), float(np.median(pin))
    return min(ours), min(pin), min(ours) / min(pin), mo, mp, mo / mp


def all_cores(rd, pin, spec, loops):
    """The rnea batch on every core, ours against Pinocchio's."""
    threads = os.cpu_count() or 1
    model, pm, _, _ = B.load(rd, pin, spec)
    c = rd.compile(model)
    pool = pin.ModelPool(pm, threads)
    Q, QD, QDD = B.random_states(model, np.random.default_rng(3), B.BATCH)
    Qc, QDc, QDDc = (np.asfortranarray(x.T) for x in (Q, QD, QDD))
    out, res = np.empty((B.BATCH, model.nv)), np.empty((model.nv, B.BATCH), order="F")
    before = rd.get_num_threads()
    rd.set_num_threads(threads)
    try:
        ours, theirs = lambda: c.rnea(Q, QD, QDD, out=out), lambda: pin.rneaInParallel(threads, pool, Qc, QDc, QDDc, res)
        ours()
        theirs()
        B.same("%s rnea all cores" % spec[0].name, out, res.T)
        return threads, paired_both(ours, theirs, loops)
    finally:
        rd.set_num_threads(before)


def per_call(rd, pin, spec, loops):
    model, pm, _, _ = B.load(rd, pin, spec)
    c, pd = rd.compile(model), pm.createData()
    (q,), (qd,), (qdd,) = B.random_states(model, np.random.default_rng(1), 1)
    B.same("%s rnea" % spec[0].name, c.rnea(q, qd, qdd), pin.rnea(pm, pd, q, qd, qdd))
    a, b, ratio = paired_min(lambda: c.rnea(q, qd, qdd), lambda: pin.rnea(pm, pd, q, qd, qdd), loops, number=500)
    return [("rnea", "pin.rnea", a, b, ratio)]


def markdown(states, calls, meta, cores=None):
    ok = lambda r, t: "yes" if r <= t else "no"           # noqa: E731
    lines = ["Measured %(date)s on %(machine)s, Pinocchio %(pinocchio)s." % meta, "",
             "Per state, a C loop over %d states on one core (the generated batch functions) against "
             "Pinocchio's batch on one thread; fastest of alternating loops. Target: ratio <= %.1f." % (B.BATCH, TARGET_STATE), "",
             "| model | function | Pinocchio | generated C | Pinocchio | ratio | met |", "|---|---|---|---:|---:|---:|---|"]
    for model, rows in states.items():
        for name, how, a, b, r in rows:
            lines.append("| %s | `%s` | %s | %.3f us | %.3f us | %.2f | %s |" % (
                model, name, how, a * 1e6, b * 1e6, r, ok(r, TARGET_STATE) if "per call" not in how else "-"))
    lines += ["", "Per call through Python: `rd.compile(model).rnea(q, qd, qdd)` against `pin.rnea`. "
              "Target: ratio <= %.1f." % TARGET_CALL, "",
              "| model | function | Pinocchio | rd.compile | Pinocchio | ratio | met |", "|---|---|---|---:|---:|---:|---|"]
    for model, rows in calls.items():
        for name, how, a, b, r in rows:
            lines.append("| %s | `%s` | `%s` | %.2f us | %.2f us | %.2f | %s |" % (
                model, name, how, a * 1e6, b * 1e6, r, ok(r, TARGET_CALL)))
    if cores:
        lines += ["", "The %d-state rnea batch on all cores (%d threads each): `rd.compile` against "
                  "`rneaInParallel`, per batch; fastest and median of alternating loops. Target: ratio <= %.1f."
                  % (B.BATCH, next(iter(cores.values()))[0], TARGET_ALL_CORES), "",
                  "| model | rd.compile min | Pinocchio min | ratio | rd.compile median | Pinocchio median | ratio | met |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for model, (_, (a, b, r, am, bm, rm)) in cores.items():
            lines.append("| %s | %.3f ms | %.3f ms | %.2f | %.3f ms | %.3f ms | %.2f | %s |" % (
                model, a * 1e3, b * 1e3, r, am * 1e3, bm * 1e3, rm, ok(rm, TARGET_ALL_CORES)))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer timing loops")
    args = ap.parse_args(argv)
    import datetime

    import pinocchio as pin

    import robot_dynamics as rd
    states = {name: per_state(rd, pin, spec, 5 if args.quick else 21) for name, spec in MODELS.items()}
    calls = {name: per_call(rd, pin, spec, 15 if args.quick else 101) for name, spec in MODELS.items()}
    cores = {name: all_cores(rd, pin, spec, 7 if args.quick else 31) for name, spec in MODELS.items()}
    meta = dict(date=datetime.date.today().isoformat(), machine=B._machine(), pinocchio=pin.__version__)
    print(markdown(states, calls, meta, cores))


if __name__ == "__main__":
    main()
