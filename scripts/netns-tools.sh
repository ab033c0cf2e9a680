#!/usr/bin/env bash
# The network tools of test/ros/test_ros_lossy_network.py: ip (iproute2), tc and iptables.
#
# Usage: scripts/netns-tools.sh
# Prints the iptables command to use (iptables-legacy if present, else iptables)
# on its last line. When iptables is missing and this runs as root on a
# Debian/Ubuntu machine (CI), installs the distribution's `iptables` package with
# apt-get (about 2 MB; `apt-get update` first only if the package is not known
# yet). Exits 1 with a message naming what is missing otherwise. Needs no network
# when everything is there already.
set -euo pipefail

for tool in ip tc; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "netns-tools.sh: '$tool' is missing: install iproute2" >&2
        exit 1
    fi
done

find_iptables() {
    local c
    for c in iptables-legacy iptables; do
        if command -v "$c" >/dev/null 2>&1; then
            command -v "$c"
            return 0
        fi
    done
    return 1
}

if ! find_iptables >/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "netns-tools.sh: iptables is missing and this is not root: install the 'iptables' package" >&2
        exit 1
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "netns-tools.sh: iptables is missing and there is no apt-get: install iptables" >&2
        exit 1
    fi
    echo "netns-tools.sh: installing iptables with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends iptables >&2; then
        apt-get update -q >&2
        apt-get install -y -q --no-install-recommends iptables >&2
    fi
fi
find_iptables || { echo "netns-tools.sh: iptables still missing after the install" >&2; exit 1; }
