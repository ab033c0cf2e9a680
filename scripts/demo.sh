#!/usr/bin/env bash
# Run the robot_dynamics demo (no ROS installation needed).
#
# Usage: scripts/demo.sh [demo options, e.g. --urdf PATH | --help]
# Creates/reuses .venv (runtime requirements only), then runs
# `python -m robot_dynamics.demo` from the checkout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup-venv.sh"

# numba caches compiled kernels per source file and misses changes to the
# helpers a kernel inlines from another file: key the cache on all sources.
src_hash="$(cat "$root"/robot_dynamics/*.py | sha256sum | cut -c1-16)"
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$root/.venv/numba-cache/$src_hash}"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "$root/.venv/bin/python" -m robot_dynamics.demo "$@"
