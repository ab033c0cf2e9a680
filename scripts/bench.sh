#!/usr/bin/env bash
# Run the benchmark (robot_dynamics against Pinocchio).
#
# Usage: scripts/bench.sh [benchmark options, see bench/benchmark.py --help]
# Creates/reuses .venv with the dev requirements, then runs bench/benchmark.py
# from the checkout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup-venv.sh" --dev

# numba caches compiled kernels per source file and misses changes to the
# helpers a kernel inlines from another file: key the cache on all sources.
src_hash="$(cat "$root"/robot_dynamics/*.py | sha256sum | cut -c1-16)"
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$root/.venv/numba-cache/$src_hash}"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
cd "$root"
exec "$root/.venv/bin/python" bench/benchmark.py "$@"
