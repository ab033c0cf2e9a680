#!/usr/bin/env bash
# Run the benchmark (robot_dynamics against Pinocchio).
#
# Usage: scripts/bench.sh [benchmark options, see bench/benchmark.py --help]
# With no option it regenerates the tables of docs/PERFORMANCE.md (--write-docs).
# Creates/reuses .venv with the dev requirements, then runs bench/benchmark.py
# from the checkout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup-venv.sh" --dev

# The package keys its numba cache on its kernel sources (robot_dynamics/cache.py)
# and is installed in .venv (editable): no PYTHONPATH needed.
cd "$root"
[ "$#" -gt 0 ] || set -- --write-docs
exec "$root/.venv/bin/python" bench/benchmark.py "$@"
