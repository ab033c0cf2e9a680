#!/usr/bin/env bash
# Create (or reuse) the checkout's .venv/ and install the pinned requirements.
#
# Usage: scripts/setup-venv.sh [--dev]
#   --dev   also install requirements-dev.txt (pytest, hypothesis, Pinocchio, colcon).
# Environment: PYTHON  interpreter used to create the venv (default python3).
#
# Then builds the interface packages (.msg/.srv/.action: robot_dynamics_interfaces,
# and wheel_interfaces/controller_manager_msgs, control_msgs and tf2_msgs, which the ROS 2 wheels lack)
# into .venv with scripts/build-interfaces.sh (cmake and a C++ compiler needed).
# Idempotent: stamp files in .venv record the sha256 of the requirement
# files and of the interface files; when they match, nothing is installed or
# built and the run takes about 1 s.
# Writes nothing outside the checkout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
python="${PYTHON:-python3}"

dev=0
for arg in "$@"; do
    case "$arg" in
        --dev) dev=1 ;;
        -h|--help) sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "setup-venv.sh: unknown argument '$arg' (expected --dev)" >&2; exit 2 ;;
    esac
done

say() { echo "setup-venv: $*" >&2; }
die() { echo "setup-venv: error: $*" >&2; exit 1; }

# --- 1. A usable Python >= 3.10 with a working venv module ------------------
command -v "$python" >/dev/null 2>&1 ||
    die "'$python' not found. Install Python >= 3.10 (Debian/Ubuntu: sudo apt-get install python3 python3-venv) or set PYTHON=/path/to/python3."
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "Python >= 3.10 is required, '$python' is $("$python" -c 'import platform; print(platform.python_version())'). Set PYTHON=/path/to/python3.X."
# Debian and Ubuntu strip ensurepip out of the interpreter; `python3 -m venv`
# then fails half-way. Detect it first and name the package to install.
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    if [ -f /etc/debian_version ]; then
        die "'$python -m venv' cannot work: ensurepip is missing. Install it with:
    sudo apt-get install python${pyver}-venv"
    fi
    die "'$python -m venv' cannot work: the venv/ensurepip modules are missing from Python $pyver. Install your distribution's venv package for Python $pyver."
fi

# --- 2. The venv: create it, or recreate it if it is broken ----------------
vpy="$venv/bin/python"
if [ -d "$venv" ] && ! "$vpy" -c 'import pip' >/dev/null 2>&1; then
    say "$venv is broken (no working python/pip); recreating it"
    rm -rf "$venv"
fi
if [ ! -d "$venv" ]; then
    say "creating $venv with $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    if ! "$python" -m venv "$venv"; then
        rm -rf "$venv"
        die "'$python -m venv $venv' failed (see above)"
    fi
fi

# --- 3. Requirements, skipped when the stamp matches ------------------------
# The stamp covers every file pip reads and the venv's interpreter version.
install() {  # install <name> <requirements file> <files that feed it...>
    local name="$1" req="$2"; shift 2
    local stamp="$venv/.stamp-$name" want have=""
    want="$("$vpy" - "$@" <<'PY'
import hashlib, sys
h = hashlib.sha256(sys.version.encode())
for path in sys.argv[1:]:
    h.update(path.encode() + b'\0')
    with open(path, 'rb') as f:
        h.update(hashlib.sha256(f.read()).digest())
print(h.hexdigest())
PY
)"
    [ -f "$stamp" ] && have="$(cat "$stamp")"
    if [ "$want" = "$have" ]; then
        say "$name requirements up to date (.venv/.stamp-$name)"
        return
    fi
    say "installing $name requirements from $(basename "$req") (first run: about 1 minute)"
    rm -f "$stamp"
    (cd "$root" && "$vpy" -m pip install --disable-pip-version-check --quiet -r "$req")
    echo "$want" > "$stamp"
    say "$name requirements installed"
}

cd "$root"
install runtime requirements.txt requirements.txt constraints.txt
if [ "$dev" = 1 ]; then
    install dev requirements-dev.txt requirements.txt requirements-dev.txt constraints.txt
fi

# --- 4. The interface packages (a stamp each, keyed on their interface files) -
"$root/scripts/build-interfaces.sh"

# --- 5. The package itself, installed editable (own stamp) -------------------
# After this, .venv/bin/robot-dynamics, .venv/bin/dynamics_node, ... exist and
# `import robot_dynamics` works from any folder with .venv/bin/python.
stamp="$venv/.stamp-package"
want="$(cat "$root/setup.py" "$root/setup.cfg" "$root/package.xml" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$vpy" -c 'import robot_dynamics' >/dev/null 2>&1 \
        || [ ! -x "$venv/bin/robot-dynamics" ]; then
    say "installing robot_dynamics into $venv (editable)"
    (cd "$root" && "$vpy" -m pip install --disable-pip-version-check --quiet --no-deps \
        --no-build-isolation -e .)
    # setup.cfg puts the node executables in lib/robot_dynamics, where
    # `ros2 run` looks; link them into bin/ too.
    for exe in "$venv"/lib/robot_dynamics/*; do ln -sf "$exe" "$venv/bin/$(basename "$exe")"; done
    echo "$want" > "$stamp"
fi

# --- 6. Compile the kernels once (the cache folder is keyed on the sources) ---
if ! "$vpy" -c 'import sys; from robot_dynamics.cache import cache_dir; sys.exit(not (cache_dir() / "warm").exists())' \
        >/dev/null 2>&1; then
    say "compiling the numba kernels into the cache (first run: about 3 minutes)"
    if [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then
        # Two halves of about the same compile time, one per core.
        (cd /tmp && "$vpy" -m robot_dynamics.tools.warmup --part first) & first=$!
        (cd /tmp && "$vpy" -m robot_dynamics.tools.warmup --part second) & second=$!
        wait "$first"
        wait "$second"
    else
        (cd /tmp && "$vpy" -m robot_dynamics.tools.warmup)
    fi
    "$vpy" -c 'from robot_dynamics.cache import cache_dir; (cache_dir() / "warm").touch()'
fi
