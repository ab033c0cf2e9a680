#!/usr/bin/env bash
# Run the benchmarks, side by side with the references in one run each.
#
# Usage: scripts/bench.sh [benchmark options, see bench/benchmark.py --help]
# With no option: bench/benchmark.py --write-docs (the kernels against
# Pinocchio; regenerates the tables of docs/PERFORMANCE.md), then
# bench/derivatives.py (the analytical derivatives against Pinocchio),
# bench/simulation.py (simulation steps against MuJoCo), bench/impedance.py (the
# impedance laws against the same laws written plainly on Pinocchio) and
# bench/load_time.py (loading every example-robot-data URDF against Pinocchio),
# which print their tables. With options: bench/benchmark.py with them, alone.
# Creates/reuses .venv with the dev requirements and runs from the checkout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup-venv.sh" --dev

cd "$root"
if [ "$#" -gt 0 ]; then
    exec "$root/.venv/bin/python" bench/benchmark.py "$@"
fi
"$root/.venv/bin/python" bench/benchmark.py --write-docs
"$root/.venv/bin/python" bench/derivatives.py
"$root/.venv/bin/python" bench/simulation.py
"$root/.venv/bin/python" bench/impedance.py
"$root/.venv/bin/python" bench/load_time.py
