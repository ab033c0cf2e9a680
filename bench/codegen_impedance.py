#!/usr/bin/env python3
"""Benchmark one Cartesian impedance torque of the Panda from the generated C (not a test).

docs/REALTIME.md's law (``cartesian_impedance.hpp``, taken from the page
as it is) on the code ``rd.codegen`` writes for the bundled Panda: frame
pose, Jacobian and Jdot qd of ``panda_hand_tcp``, M, h = C qd + g, the
Cholesky factors of M and J M^-1 J^T, Lambda and the law. A C++ program
(``cc -O2`` for the generated C, ``g++ -O2`` for the law) times, in a loop
over 1,000 states near the ready pose, per call:

- ``law``: ``CartesianImpedance::compute`` (everything above);
- ``generated``: the five generated calls alone (pose, Jacobian, Jdot qd,
  mass matrix, rnea), the rest being the law's own arithmetic.

Each repeat times the whole loop in the thread's CPU time
(``CLOCK_THREAD_CPUTIME_ID``: on a shared machine the wall clock measures
the neighbours, who take the core away mid-loop; the CPU time still pays
for the caches they empty); a run reports the median and the fastest
repeat; the program runs ``--runs`` times and the table gives the median of
the runs' medians, the fastest repeat seen and the load average. Target
(issue 34): law <= 3 us.

Usage:
    .venv/bin/python bench/codegen_impedance.py [--runs 5] [--repeats 200]
"""
import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET_US = 3.0
DRIVER = r"""
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include "cartesian_impedance.hpp"

static double now()                                  // the thread's CPU time: not the neighbours' share
{
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double median(std::vector<double> x)
{
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
}

int main(int argc, char **argv)
{
    const int states = 1000, repeats = argc > 1 ? std::atoi(argv[1]) : 200, n = panda_NQ;
    const double ready[panda_NQ] = {0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785};
    std::vector<double> q(states * n), qd(states * n), tau(n), R(9);
    std::srand(1);
    for (int k = 0; k < states * n; ++k) {
        q[k] = ready[k % n] + (std::rand() / (double)RAND_MAX - 0.5);
        qd[k] = 4.0 * (std::rand() / (double)RAND_MAX - 0.5);
    }
    CartesianImpedance law;                           // the gains of docs/REALTIME.md's check program
    const double kx[6] = {200.0, 200.0, 200.0, 10.0, 10.0, 10.0};
    for (int i = 0; i < 6; ++i) {
        law.K[i * 6 + i] = kx[i];
        law.D[i * 6 + i] = 2.0 * std::sqrt(kx[i]);
    }
    for (int i = 0; i < n; ++i) {
        law.q_0[i] = ready[i];
        law.k_0[i] = 10.0;
        law.d_0[i] = 2.0 * std::sqrt(10.0);
    }
    if (!law.set_frame("panda_hand_tcp"))
        return 2;
    panda_frame_pose(ready, law.frame, law.p_d.data(), R.data());
    law.p_d[0] += 0.05;
    CartesianImpedance::quaternion(R.data(), law.Q_d.data());
    std::vector<double> t_law, t_gen;
    double sum = 0.0;
    double p[3], Rm[9], J[6 * panda_NV], a[6], M[panda_NV * panda_NV], h[panda_NV], zero[panda_NV] = {0.0};
    for (int r = 0; r < repeats; ++r) {
        double t0 = now();
        for (int s = 0; s < states; ++s) {
            if (!law.compute(&q[s * n], &qd[s * n], tau.data()))
                return 3;
            sum += tau[0];
        }
        double t1 = now();
        for (int s = 0; s < states; ++s) {
            panda_frame_pose(&q[s * n], law.frame, p, Rm);
            panda_frame_jacobian(&q[s * n], law.frame, J);
            panda_frame_jdot_qd(&q[s * n], &qd[s * n], law.frame, a);
            panda_mass_matrix(&q[s * n], M);
            panda_rnea(&q[s * n], &qd[s * n], zero, h);
            sum += p[0] + Rm[0] + J[0] + a[0] + M[0] + h[0];
        }
        double t2 = now();
        t_law.push_back((t1 - t0) / states);
        t_gen.push_back((t2 - t1) / states);
    }
    std::printf("law %.6e %.6e generated %.6e %.6e checksum %.6e\n", median(t_law),
                *std::min_element(t_law.begin(), t_law.end()), median(t_gen),
                *std::min_element(t_gen.begin(), t_gen.end()), sum);
    return std::isfinite(sum) ? 0 : 1;
}
"""


def build(folder):
    """Generate the Panda's code, take the law from docs/REALTIME.md, compile the driver."""
    import robot_dynamics as rd
    model = rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))
    rd.codegen(model, "panda", folder)
    law = re.findall(r"```cpp\n(.*?)```", (ROOT / "docs" / "REALTIME.md").read_text(), re.S)[0]
    (folder / "cartesian_impedance.hpp").write_text(law)
    (folder / "driver.cpp").write_text(DRIVER)
    cc, gxx = os.environ.get("CC") or "cc", shutil.which("g++")
    if gxx is None:
        sys.exit("g++ is needed")
    for cmd in ([cc, "-O2", "-std=c99", "-c", "panda.c", "-o", "panda.o"],
                [gxx, "-O2", "-std=c++17", "-Wall", "-Werror", "driver.cpp", "panda.o", "-lm", "-o", "driver"]):
        subprocess.run(cmd, cwd=folder, check=True)
    return folder / "driver"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="invocations of the timing program")
    ap.add_argument("--repeats", type=int, default=200, help="timed loops over the 1,000 states per run")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        driver = build(Path(tmp))
        load = [os.getloadavg()[0]]
        runs = []
        for _ in range(args.runs):
            out = subprocess.run([str(driver), str(args.repeats)], capture_output=True, text=True, check=True)
            words = out.stdout.split()
            runs.append([float(words[k]) * 1e6 for k in (1, 2, 4, 5)])
            load.append(os.getloadavg()[0])
    runs = np.array(runs)
    cpu = platform.processor() or platform.machine()
    print("Measured on %s, %d cores, load average %.1f-%.1f (1 min) during the runs." % (
        cpu, os.cpu_count(), min(load), max(load)))
    print()
    print("Per call, thread CPU time of a C++ loop over 1,000 Panda states; %d runs of %d repeats; median of "
          "the runs' medians (fastest repeat). Target: law <= %.1f us." % (args.runs, args.repeats, TARGET_US))
    print()
    print("| what | per call | fastest | runs' medians | met |")
    print("|---|---:|---:|---|---|")
    for name, col, target in (("law: `CartesianImpedance::compute`", 0, TARGET_US),
                              ("generated calls alone (pose, Jacobian, Jdot qd, M, rnea)", 2, None)):
        med = float(np.median(runs[:, col]))
        print("| %s | %.2f us | %.2f us | %s | %s |" % (
            name, med, runs[:, col + 1].min(), ", ".join("%.2f" % x for x in runs[:, col]),
            "-" if target is None else ("yes" if med <= target else "no")))


if __name__ == "__main__":
    main()
