#!/usr/bin/env bash
# Build the repository's ROS 2 interface packages (.msg/.srv/.action) into .venv/.
#
# Usage: scripts/build-interfaces.sh [--force] [PACKAGE...]
#   --force   rebuild even when the stamp matches.
#   PACKAGE   build only these (default: all of them, in this order):
#     robot_dynamics_interfaces  robot_dynamics_interfaces/  the nodes' own types
#     controller_manager_msgs    wheel_interfaces/controller_manager_msgs/
#                                ros2_control's SwitchController and
#                                ControllerManagerActivity alone, which the
#                                wheels lack (wheel_interfaces/README.md)
#     control_msgs               wheel_interfaces/control_msgs/
#                                FollowJointTrajectory, JointTolerance and
#                                JointTrajectoryControllerState alone (idem)
#     tf2_msgs                   wheel_interfaces/tf2_msgs/
#                                TFMessage alone (idem): /tf and /tf_static
# Called by scripts/setup-venv.sh after the requirements are installed; the
# ROS 2 wheels in requirements.txt (ament_cmake, rosidl generators) provide
# the build tools, cmake and a C/C++ compiler come from the system.
#
# For each package a plain cmake configure/build/install of the standard
# ament_cmake package with the venv as install prefix (no colcon, no system
# ROS), so afterwards `import <package>.srv` works in the venv with no
# environment variables. Idempotent: .venv/.stamp-interfaces-<package> holds
# the sha256 of the package's interface files, this script, the CMake fix and
# the requirement files; when it matches nothing is built (about 0.1 s); a
# build takes 15-40 s on 2 cores.
# On a real ROS 2 installation use colcon and rosdep instead (README.md).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
vpy="$venv/bin/python"
fix="$root/scripts/cmake/wheel-prefix-fixes.cmake"

# name -> folder (relative to the root) and the modules that must import afterwards.
declare -A folder=(
    [robot_dynamics_interfaces]=robot_dynamics_interfaces
    [controller_manager_msgs]=wheel_interfaces/controller_manager_msgs
    [control_msgs]=wheel_interfaces/control_msgs
    [tf2_msgs]=wheel_interfaces/tf2_msgs
)
declare -A modules=(
    [robot_dynamics_interfaces]="robot_dynamics_interfaces.srv robot_dynamics_interfaces.msg"
    [controller_manager_msgs]="controller_manager_msgs.srv controller_manager_msgs.msg"
    [control_msgs]="control_msgs.action control_msgs.msg"
    [tf2_msgs]="tf2_msgs.msg"
)
all=(robot_dynamics_interfaces controller_manager_msgs control_msgs tf2_msgs)

force=0
wanted=()
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        -h|--help) sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) echo "build-interfaces.sh: unknown option '$arg' (expected --force or a package name)" >&2; exit 2 ;;
        *)
            [ -n "${folder[$arg]+x}" ] || {
                echo "build-interfaces.sh: unknown package '$arg' (expected one of: ${all[*]})" >&2; exit 2; }
            wanted+=("$arg") ;;
    esac
done
[ "${#wanted[@]}" -gt 0 ] || wanted=("${all[@]}")

say() { echo "build-interfaces: $*" >&2; }
die() { echo "build-interfaces: error: $*" >&2; exit 1; }

[ -x "$vpy" ] || die "$venv does not exist; run scripts/setup-venv.sh first"

# The sha256 of what feeds the build of package $1.
fingerprint() {
    local dir="${folder[$1]}"
    (cd "$root" && "$vpy" - scripts/build-interfaces.sh scripts/cmake/wheel-prefix-fixes.cmake requirements.txt constraints.txt \
        $(find "$dir" -type f \( -name '*.msg' -o -name '*.srv' -o -name '*.action' -o -name 'CMakeLists.txt' -o -name 'package.xml' \) \
          | LC_ALL=C sort) <<'PY'
import hashlib, sys
h = hashlib.sha256(sys.version.encode())
for path in sys.argv[1:]:
    h.update(path.encode() + b'\0')
    with open(path, 'rb') as f:
        h.update(hashlib.sha256(f.read()).digest())
print(h.hexdigest())
PY
    )
}

tools_checked=0
check_tools() {
    [ "$tools_checked" = 0 ] || return 0
    command -v cmake >/dev/null 2>&1 ||
        die "cmake not found. Install it (Debian/Ubuntu: sudo apt-get install cmake g++)."
    local cmake_version
    cmake_version="$(cmake --version | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')"
    "$vpy" -c 'import sys; v = tuple(int(x) for x in sys.argv[1].split(".")[:2]); sys.exit(v < (3, 19))' "$cmake_version" ||
        die "cmake >= 3.19 is required (cmake_language DEFER), found $cmake_version"
    command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 ||
        die "no C++ compiler found. Install one (Debian/Ubuntu: sudo apt-get install g++)."
    [ -f "$venv/share/rosidl_default_generators/cmake/rosidl_default_generatorsConfig.cmake" ] ||
        die "the rosidl generators are not installed in $venv (they come with requirements.txt); run scripts/setup-venv.sh"
    tools_checked=1
}

# Configure, build and install package $1 into the venv prefix, unless its stamp matches.
build_package() {
    local name="$1"
    local pkg="$root/${folder[$name]}" build="$venv/build/$name" stamp="$venv/.stamp-interfaces-$name"
    local log="$venv/build/$name.log" want have="" start module
    want="$(fingerprint "$name")"
    [ -f "$stamp" ] && have="$(cat "$stamp")"
    if [ "$force" = 0 ] && [ "$want" = "$have" ]; then
        say "$name up to date (.venv/.stamp-interfaces-$name)"
        return 0
    fi
    check_tools
    say "building $name into $venv (about 15-40 s)"
    rm -f "$stamp"
    start=$(date +%s)
    # Files of a previous install (a removed .srv must not linger in the venv).
    if [ -f "$build/install_manifest.txt" ]; then
        while IFS= read -r file; do
            case "$file" in "$venv"/*) rm -f "$file" ;; esac
        done < "$build/install_manifest.txt"
    fi
    rm -rf "$build"
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
        die "building $name failed; full log: $log"
    }
    for module in ${modules[$name]}; do
        "$vpy" -c "import $module" ||
            die "$name was installed but $module does not import; build log: $log"
    done
    echo "$want" > "$stamp"
    say "$name built and installed in $(( $(date +%s) - start )) s (log: $log)"
}

export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
# ament_index_get_resources() (which type supports exist) reads this variable.
export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
rm -f "$venv/.stamp-interfaces"          # the single stamp of the script's first version
for name in "${wanted[@]}"; do
    build_package "$name"
done
