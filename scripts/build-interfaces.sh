#!/usr/bin/env bash
# Build the robot_dynamics_interfaces package (.msg/.srv) into .venv/.
#
# Usage: scripts/build-interfaces.sh [--force]
#   --force   rebuild even when the stamp matches.
# Called by scripts/setup-venv.sh after the requirements are installed; the
# ROS 2 wheels in requirements.txt (ament_cmake, rosidl generators) provide
# the build tools, cmake and a C/C++ compiler come from the system.
#
# A plain cmake configure/build/install of the standard ament_cmake package
# with the venv as install prefix (no colcon, no system ROS), so afterwards
# `import robot_dynamics_interfaces.srv` works in the venv with no environment
# variables. Idempotent: .venv/.stamp-interfaces holds the sha256 of the
# interface files, this script, the CMake fix and the requirement files;
# when it matches nothing is built (about 0.1 s); a build takes 20-40 s on 2 cores.
# On a real ROS 2 installation use colcon instead (README.md).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
vpy="$venv/bin/python"
pkg="$root/robot_dynamics_interfaces"
fix="$root/scripts/cmake/wheel-prefix-fixes.cmake"
build="$venv/build/robot_dynamics_interfaces"
stamp="$venv/.stamp-interfaces"

force=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        -h|--help) sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "build-interfaces.sh: unknown argument '$arg' (expected --force)" >&2; exit 2 ;;
    esac
done

say() { echo "build-interfaces: $*" >&2; }
die() { echo "build-interfaces: error: $*" >&2; exit 1; }

[ -x "$vpy" ] || die "$venv does not exist; run scripts/setup-venv.sh first"

# --- 1. Stamp: skip when nothing that feeds the build changed ---------------
want="$(cd "$root" && "$vpy" - scripts/build-interfaces.sh scripts/cmake/wheel-prefix-fixes.cmake requirements.txt constraints.txt \
        $(find robot_dynamics_interfaces -type f \( -name '*.msg' -o -name '*.srv' \
          -o -name 'CMakeLists.txt' -o -name 'package.xml' \) | LC_ALL=C sort) <<'PY'
import hashlib, sys
h = hashlib.sha256(sys.version.encode())
for path in sys.argv[1:]:
    h.update(path.encode() + b'\0')
    with open(path, 'rb') as f:
        h.update(hashlib.sha256(f.read()).digest())
print(h.hexdigest())
PY
)"
have=""
[ -f "$stamp" ] && have="$(cat "$stamp")"
if [ "$force" = 0 ] && [ "$want" = "$have" ]; then
    say "robot_dynamics_interfaces up to date (.venv/.stamp-interfaces)"
    exit 0
fi

# --- 2. Tools ----------------------------------------------------------------
command -v cmake >/dev/null 2>&1 ||
    die "cmake not found. Install it (Debian/Ubuntu: sudo apt-get install cmake g++)."
cmake_version="$(cmake --version | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')"
"$vpy" -c 'import sys; v = tuple(int(x) for x in sys.argv[1].split(".")[:2]); sys.exit(v < (3, 19))' "$cmake_version" ||
    die "cmake >= 3.19 is required (cmake_language DEFER), found $cmake_version"
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 ||
    die "no C++ compiler found. Install one (Debian/Ubuntu: sudo apt-get install g++)."
[ -f "$venv/share/rosidl_default_generators/cmake/rosidl_default_generatorsConfig.cmake" ] ||
    die "the rosidl generators are not installed in $venv (they come with requirements.txt); run scripts/setup-venv.sh"

# --- 3. Configure, build, install into the venv prefix -----------------------
say "building robot_dynamics_interfaces into $venv (about 20-40 s)"
rm -f "$stamp"
start=$(date +%s)
# Files of a previous install (a removed .srv must not linger in the venv).
if [ -f "$build/install_manifest.txt" ]; then
    while IFS= read -r file; do
        case "$file" in "$venv"/*) rm -f "$file" ;; esac
    done < "$build/install_manifest.txt"
fi
rm -rf "$build"
export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
# ament_index_get_resources() (which type supports exist) reads this variable.
export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
log="$venv/build/robot_dynamics_interfaces.log"
mkdir -p "$venv/build"
{
    cmake -S "$pkg" -B "$build" \
        -DCMAKE_PROJECT_INCLUDE="$fix" \
        -DCMAKE_INSTALL_PREFIX="$venv" \
        -DCMAKE_PREFIX_PATH="$venv" \
        -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_TESTING=OFF \
        -DPython3_EXECUTABLE="$vpy" &&
    cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" &&
    cmake --install "$build"
} > "$log" 2>&1 || {
    tail -n 40 "$log" >&2
    die "building robot_dynamics_interfaces failed; full log: $log"
}
"$vpy" -c 'import robot_dynamics_interfaces.srv, robot_dynamics_interfaces.msg' ||
    die "robot_dynamics_interfaces was installed but does not import; build log: $log"
echo "$want" > "$stamp"
say "robot_dynamics_interfaces built and installed in $(( $(date +%s) - start )) s (log: $log)"
