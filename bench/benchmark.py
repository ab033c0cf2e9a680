#!/usr/bin/env python3
"""Benchmark robot_dynamics against Pinocchio's Python bindings (not a test).

Prints, in one run:

1. Hot timings, side by side, on the bundled 7-DOF arm (urdf/panda_arm.urdf)
   and on example-robot-data's panda.urdf (7 arm joints + 2 finger joints,
   the second finger a <mimic> of the first: nq = 8 for robot_dynamics,
   nq = 9 for Pinocchio, which ignores mimic tags): microseconds per call for
   rnea, gravity_torques (vs computeGeneralizedGravity), mass_matrix (vs crba),
   aba, nonlinear_effects (vs nonLinearEffects), and the time of a 10,000-state
   rnea batch (ours: one call with q of shape (10000, nq); Pinocchio: a Python
   loop of 10,000 pinocchio.rnea calls). Each number is the median over
   several repeats of a timeit loop sized to last ~0.2 s. Both libraries get
   the same contiguous float64 inputs (for the mimic model Pinocchio gets the
   equivalent 9-vectors, finger_joint2 = finger_joint1) and are warmed up
   first. Ratio = ours / Pinocchio; target: single calls <= 2.0, batch <= 0.67.

2. Cold start, in fresh subprocesses: `import robot_dynamics`, load_urdf, and
   the first call of each function (numba compilation or cache load), run
   twice: run 1 starts from an empty numba cache (a fresh temporary
   NUMBA_CACHE_DIR, so the repository's __pycache__ is not touched) and fills
   it, run 2 shows the cached start. With --installed-cache both runs use the
   normal numba cache location instead (run 1 is then only cold if that cache
   is empty or stale).

Usage:
    PYTHONPATH=. .venv/bin/python bench/benchmark.py [--quick] [--markdown] [--json PATH]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import timeit
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BATCH = 10_000
TARGET_SINGLE = 2.0
TARGET_BATCH = 0.67




# ---------------------------------------------------------------------------
# timing helpers


def loop_size(timer, target=0.2):
    """Number of calls for a timeit loop lasting ~target seconds (like Timer.autorange)."""
    n = 1
    while True:
        dt = timer.timeit(n)
        if dt >= target / 5:
            return max(1, int(round(n * target / dt)))
        n *= 2 if dt <= 0 else max(2, min(10, int(target / 5 / dt) + 1))


def paired_us(f_ours, f_pin, repeats=7, target=0.2):
    """Median microseconds per call of both functions: `repeats` timeit loops of
    ~target s each, alternating ours / Pinocchio so that drifting machine load
    affects both."""
    t_o, t_p = timeit.Timer(f_ours), timeit.Timer(f_pin)
    n_o, n_p = loop_size(t_o, target), loop_size(t_p, target)
    res_o, res_p = [], []
    for _ in range(repeats):
        res_o.append(t_o.timeit(n_o) / n_o)
        res_p.append(t_p.timeit(n_p) / n_p)
    return statistics.median(res_o) * 1e6, statistics.median(res_p) * 1e6


def mimic_map(path, rd_model, pin_model):
    """G (nv_pin, nq) and offsets so that q_pin = G q + off (joints matched by name)."""
    mimic = {}
    for j in ET.parse(path).getroot().findall("joint"):
        m = j.find("mimic")
        if m is not None:
            mimic[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)),
                                    float(m.get("offset", 0.0)))
    idx = {n: i for i, n in enumerate(rd_model.joint_names)}
    G = np.zeros((pin_model.nv, rd_model.nq))
    off = np.zeros(pin_model.nv)
    for jid, name in enumerate(list(pin_model.names)[1:], start=1):
        jm = pin_model.joints[jid]
        if jm.nq != 1 or jm.nv != 1:
            raise SystemExit(f"{path}: joint {name} is not 1-dof in Pinocchio's q")
        if name in idx:
            G[jm.idx_v, idx[name]] = 1.0
        else:
            src, mul, o = mimic[name]
            G[jm.idx_v, idx[src]] = mul
            off[jm.idx_v] = o
    return G, off


def hot_benchmarks(label, path, repeats, rd, pin):
    with warnings.catch_warnings():
        # example-robot-data's panda.urdf has non-URDF <dynamics D= K= mu_*> attributes
        warnings.filterwarnings("ignore", message="URDF: Unknown", category=UserWarning)
        model = rd.load_urdf(str(path))
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    G, off = mimic_map(str(path), model, pm)
    rng = np.random.default_rng(12345)
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    nq = model.nq
    q = np.ascontiguousarray(rng.uniform(lo, hi), dtype=np.float64)
    qd = np.ascontiguousarray(rng.uniform(-2, 2, nq), dtype=np.float64)
    qdd = np.ascontiguousarray(rng.uniform(-2, 2, nq), dtype=np.float64)
    tau = np.ascontiguousarray(rng.uniform(-2, 2, nq), dtype=np.float64)
    # same inputs for Pinocchio (identical arrays when G is the identity)
    if G.shape[0] == G.shape[1] and np.array_equal(G, np.eye(nq)) and not off.any():
        pq, pv, pa, pt = q, qd, qdd, tau
    else:
        pq = np.ascontiguousarray(G @ q + off)
        pv = np.ascontiguousarray(G @ qd)
        pa = np.ascontiguousarray(G @ qdd)
        pt = np.ascontiguousarray(np.linalg.lstsq(G.T, tau, rcond=None)[0])  # G^T pt = tau
    Q = np.ascontiguousarray(rng.uniform(lo, hi, size=(BATCH, nq)))
    QD = np.ascontiguousarray(rng.uniform(-2, 2, size=(BATCH, nq)))
    QDD = np.ascontiguousarray(rng.uniform(-2, 2, size=(BATCH, nq)))
    PQ = np.ascontiguousarray(Q @ G.T + off)
    PQD = np.ascontiguousarray(QD @ G.T)
    PQDD = np.ascontiguousarray(QDD @ G.T)
    PQ_rows, PQD_rows, PQDD_rows = list(PQ), list(PQD), list(PQDD)

    def pin_batch():
        for k in range(BATCH):
            pin.rnea(pm, pd, PQ_rows[k], PQD_rows[k], PQDD_rows[k])

    cases = [
        ("rnea", "rnea", lambda: rd.rnea(model, q, qd, qdd),
         lambda: pin.rnea(pm, pd, pq, pv, pa), TARGET_SINGLE),
        ("gravity_torques", "computeGeneralizedGravity", lambda: rd.gravity_torques(model, q),
         lambda: pin.computeGeneralizedGravity(pm, pd, pq), TARGET_SINGLE),
        ("mass_matrix", "crba", lambda: rd.mass_matrix(model, q),
         lambda: pin.crba(pm, pd, pq), TARGET_SINGLE),
        ("aba", "aba", lambda: rd.aba(model, q, qd, tau),
         lambda: pin.aba(pm, pd, pq, pv, pt), TARGET_SINGLE),
        ("nonlinear_effects", "nonLinearEffects", lambda: rd.nonlinear_effects(model, q, qd),
         lambda: pin.nonLinearEffects(pm, pd, pq, pv), TARGET_SINGLE),
        (f"rnea batch {BATCH}", f"{BATCH} x rnea (loop)", lambda: rd.rnea(model, Q, QD, QDD),
         pin_batch, TARGET_BATCH),
    ]
    rows = []
    for ours_name, pin_name, f_ours, f_pin, target in cases:
        for _ in range(3):            # warm-up (JIT / cache load, allocator)
            f_ours()
            f_pin()
        t_ours, t_pin = paired_us(f_ours, f_pin, repeats=repeats)
        ratio = t_ours / t_pin
        rows.append(dict(model=label, nq=nq, nq_pin=pm.nq, function=ours_name, pinocchio=pin_name,
                         ours_us=t_ours, pin_us=t_pin, ratio=ratio, target=target,
                         status="PASS" if ratio <= target else "MISS"))
    return rows


def fmt_us(us):
    if us >= 1e5:
        return f"{us / 1e3:,.1f} ms"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.2f} us"


def print_hot(rows, markdown):
    if markdown:
        print("| model | function (ours vs Pinocchio) | robot_dynamics | Pinocchio | ratio | target | |")
        print("|---|---|---:|---:|---:|---:|---|")
        for r in rows:
            print(f"| {r['model']} | `{r['function']}` vs `{r['pinocchio']}` | {fmt_us(r['ours_us'])} "
                  f"| {fmt_us(r['pin_us'])} | {r['ratio']:.2f} | <= {r['target']} | {r['status']} |")
        return
    hdr = f"{'model':<22s} {'function':<19s} {'Pinocchio':<27s} {'ours':>11s} {'Pinocchio':>11s} {'ratio':>6s} {'target':>7s}  status"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['model']:<22s} {r['function']:<19s} {r['pinocchio']:<27s} {fmt_us(r['ours_us']):>11s} "
              f"{fmt_us(r['pin_us']):>11s} {r['ratio']:6.2f} {'<= ' + str(r['target']):>7s}  {r['status']}")


# ---------------------------------------------------------------------------
# cold start

COLD_SCRIPT = textwrap.dedent(r"""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    t_np = time.perf_counter()
    import robot_dynamics as rd
    t1 = time.perf_counter()
    out = {"import numpy": t_np - t0, "import robot_dynamics": t1 - t_np}
    path = sys.argv[1]
    t = time.perf_counter(); m = rd.load_urdf(path); out["load_urdf"] = time.perf_counter() - t
    nq = m.nq
    rng = np.random.default_rng(0)
    q, qd, qdd = (np.ascontiguousarray(rng.uniform(-1, 1, nq)) for _ in range(3))
    Q = np.ascontiguousarray(rng.uniform(-1, 1, (100, nq)))
    link = m.link_names[-1]
    calls = [
        ("rnea", lambda: rd.rnea(m, q, qd, qdd)),
        ("gravity_torques", lambda: rd.gravity_torques(m, q)),
        ("nonlinear_effects", lambda: rd.nonlinear_effects(m, q, qd)),
        ("mass_matrix", lambda: rd.mass_matrix(m, q)),
        ("aba", lambda: rd.aba(m, q, qd, qdd)),
        ("coriolis_matrix", lambda: rd.coriolis_matrix(m, q, qd)),
        ("forward_kinematics", lambda: rd.forward_kinematics(m, q)),
        ("jacobian", lambda: rd.jacobian(m, q, link)),
        ("kinetic_energy", lambda: rd.kinetic_energy(m, q, qd)),
        ("potential_energy", lambda: rd.potential_energy(m, q)),
        ("rnea f_ext", lambda: rd.rnea(m, q, qd, qdd, f_ext={link: np.ones(6)})),
        ("rnea batch (100, nq)", lambda: rd.rnea(m, Q, Q, Q)),
    ]
    for name, f in calls:
        t = time.perf_counter(); f(); out["first " + name] = time.perf_counter() - t
    t = time.perf_counter(); rd.rnea(m, q, qd, qdd); out["second rnea"] = time.perf_counter() - t
    out["total (process)"] = time.perf_counter() - t0
    try:
        t = time.perf_counter()
        import pinocchio as pin
        out["[pinocchio] import"] = time.perf_counter() - t
        t = time.perf_counter(); pm = pin.buildModelFromUrdf(path); pdata = pm.createData()
        out["[pinocchio] buildModelFromUrdf"] = time.perf_counter() - t
        qp = pin.neutral(pm); vp = np.zeros(pm.nv)
        t = time.perf_counter(); pin.rnea(pm, pdata, qp, vp, vp)
        out["[pinocchio] first rnea"] = time.perf_counter() - t
    except ImportError:
        pass
    print("@@COLD@@" + json.dumps(out))
""")


def cold_start(path, installed_cache):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    tmp = None
    if not installed_cache:
        tmp = tempfile.TemporaryDirectory(prefix="rd-numba-cache-")
        env["NUMBA_CACHE_DIR"] = tmp.name
    runs = []
    try:
        for _ in range(2):
            p = subprocess.run([sys.executable, "-c", COLD_SCRIPT, str(path)], env=env, cwd=str(ROOT),
                               capture_output=True, text=True, timeout=1800)
            line = [x for x in p.stdout.splitlines() if x.startswith("@@COLD@@")]
            if p.returncode != 0 or not line:
                raise RuntimeError(f"cold-start subprocess failed (rc={p.returncode}):\n{p.stderr[-3000:]}")
            runs.append(json.loads(line[0][len("@@COLD@@"):]))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return runs


def print_cold(runs, markdown, path, installed_cache):
    where = "normal numba cache location" if installed_cache else "fresh temporary NUMBA_CACHE_DIR"
    print(f"\nCold start in fresh subprocesses ({Path(path).relative_to(ROOT)}; {where}):")
    keys = list(runs[0])
    first = "run 1 (installed cache)" if installed_cache else "run 1 (empty cache: compile)"
    if markdown:
        print(f"| step | {first} | run 2 (cached) |")
        print("|---|---:|---:|")
        for k in keys:
            print(f"| {k} | {runs[0][k] * 1e3:.1f} ms | {runs[1][k] * 1e3:.1f} ms |")
        return
    print(f"{'step':<34s} {first:>28s} {'run 2 (cached)':>16s}")
    print("-" * 80)
    for k in keys:
        print(f"{k:<34s} {runs[0][k] * 1e3:25.1f} ms {runs[1][k] * 1e3:13.1f} ms")


# ---------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (3 instead of 7)")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument("--json", metavar="PATH", help="also write all results as JSON")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-start subprocess runs")
    ap.add_argument("--no-hot", action="store_true", help="skip the hot timings (cold start only)")
    ap.add_argument("--installed-cache", action="store_true",
                    help="cold start with the normal numba cache location instead of a fresh temporary one")
    args = ap.parse_args()
    repeats = 3 if args.quick else 7

    import robot_dynamics as rd
    import pinocchio as pin
    import numba

    models = [("panda_arm (bundled)", ROOT / "urdf" / "panda_arm.urdf")]
    from robot_dynamics.tools.sample import example_robot_data_dir
    erd = example_robot_data_dir()
    if erd is not None:
        models.append(("erd panda.urdf (mimic)", erd / "panda_description" / "urdf" / "panda.urdf"))
    else:
        print("example-robot-data not found: only the bundled arm is benchmarked", file=sys.stderr)

    info = dict(python=platform.python_version(), machine=platform.machine(), processor=platform.processor(),
                numpy=np.__version__, numba=numba.__version__, pinocchio=pin.__version__,
                cpu_count=os.cpu_count(), repeats=repeats)
    print("robot_dynamics vs Pinocchio  ({})".format(", ".join(f"{k} {v}" for k, v in info.items())))
    print("median of {} repeats of ~0.2 s timeit loops; ratio = ours / Pinocchio; "
          "targets: single call <= {}, {}-state batch <= {}\n".format(repeats, TARGET_SINGLE, BATCH, TARGET_BATCH))

    rows = []
    if not args.no_hot:
        for label, path in models:
            rows += hot_benchmarks(label, path, repeats, rd, pin)
        print_hot(rows, args.markdown)

    cold = None
    if not args.no_cold:
        cold = cold_start(models[0][1], args.installed_cache)
        print_cold(cold, args.markdown, models[0][1], args.installed_cache)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(info=info, hot=rows, cold_start=cold,
                           cold_start_cache=("installed" if args.installed_cache else "fresh-temporary")),
                      f, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
