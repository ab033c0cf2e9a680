#!/usr/bin/env bash
# Run the robot_dynamics demo (no ROS installation needed): the bundled arm
# simulated by simulator_node and held by dynamics_node's gravity
# compensation over ROS 2 topics, with a report and a PNG plot.
#
# Usage: scripts/demo.sh [demo options, e.g. --duration 30 | --forever | --mode cartesian_impedance |
#        --mode contact --force 10 | --help]
# Creates/reuses .venv (runtime requirements and the interfaces), then runs
# `python -m robot_dynamics.tools.demo` from the checkout. DDS discovery stays on
# this machine unless ROS_AUTOMATIC_DISCOVERY_RANGE is set.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup-venv.sh"

# The package keys its numba cache on its kernel sources (robot_dynamics/cache.py)
# and is installed in .venv (editable): no PYTHONPATH needed.
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
exec "$root/.venv/bin/python" -m robot_dynamics.tools.demo "$@"
