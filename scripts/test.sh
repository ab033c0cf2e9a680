#!/usr/bin/env bash
# Run the test suite (no ROS installation needed).
#
# Usage: scripts/test.sh [pytest options, e.g. -k aba -x]
# Creates/reuses .venv with the dev requirements, then runs pytest on test/
# from the checkout. With no option: the library tests (test/, not test/ros)
# in one pytest per core (pytest-xdist), a RuntimeWarning failing its test,
# then the ROS tests alone, since they
# time DDS delivery and a busy core makes them late; with options: one
# pytest run with those options. Each run gets its own ROS_DOMAIN_ID (1..101, from the
# PID) unless the caller set one, and keeps DDS discovery on loopback, so
# parallel runs on one machine do not see each other's nodes.
# Exits non-zero when pytest collects no test (pytest exit code 5).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup-venv.sh" --dev

# The package keys its numba cache on its kernel sources (robot_dynamics/cache.py)
# and is installed in .venv (editable): no PYTHONPATH needed.
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 101 + 1 ))}"
# Fast DDS otherwise announces itself by multicast on every interface.
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
echo "test.sh: ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=$ROS_AUTOMATIC_DISCOVERY_RANGE" >&2

cd "$root"
run() {
    local s=0
    "$root/.venv/bin/python" -m pytest "$@" || s=$?
    if [ "$s" -eq 5 ]; then
        echo "test.sh: error: pytest collected no tests" >&2
        s=1
    fi
    return "$s"
}
status=0
if [ "$#" -gt 0 ]; then
    run "$@" || status=$?               # no path given: pytest.ini's testpaths (test/) applies
else
    workers="$(nproc 2>/dev/null || echo 2)"
    # A RuntimeWarning (overflow, invalid value) in the library is a bug, not a warning to live with.
    run -n "$workers" --durations=15 -W error::RuntimeWarning --ignore=test/ros test || status=$?
    # The 1 kHz closed-loop tracking test (issue 36) in a pytest of its own: run in the same session,
    # the tests after it saw their watchdogs switch fed controllers (2026-11-28; cause not found yet).
    isolated=test/ros/test_ros_trajectory_tracking.py
    run --durations=15 --ignore="$isolated" test/ros || { s=$?; [ "$status" -eq 0 ] && status=$s; }
    run "$isolated" || { s=$?; [ "$status" -eq 0 ] && status=$s; }
fi
exit "$status"
