"""The package as ROS 2 tools see it: package.xml keys, declared imports, the licence, colcon.

- Every ``*depend`` of both package.xml files is a rosdep key of ROS 2 Jazzy
  (test/data/jazzy-rosdep-keys.txt: ros/rosdistro's rosdep/base.yaml,
  rosdep/python.yaml and the package names of jazzy/distribution.yaml) or a
  package of this repository.
- Every third-party import of robot_dynamics/ and launch/ is an exec_depend,
  every one of test/ an exec_depend or test_depend (:data:`MODULE_KEYS`).
- The visualisation packages are optional: a headless robot gets no Qt.
- LICENSE is the Apache License 2.0 that package.xml and setup.py name.
- colcon (from PyPI, requirements-dev.txt) builds a copy of the repository
  in a fresh workspace, and the installed dynamics_node comes up from it.
"""
import ast
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from catkin_pkg.package import parse_package

# catkin_pkg's condition parser uses pyparsing names that pyparsing 3.3 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:catkin_pkg.condition", "ignore::DeprecationWarning:pyparsing.util")

ROOT = Path(__file__).resolve().parents[1]
KEYS_FILE = ROOT / "test" / "data" / "jazzy-rosdep-keys.txt"
INTERFACES = "robot_dynamics_interfaces"
PACKAGE_XMLS = [ROOT / "package.xml", ROOT / INTERFACES / "package.xml"]
OWN_PACKAGES = {"robot_dynamics", INTERFACES}       # built from this repository, not resolved by rosdep

#: Top-level module -> rosdep key of the package that provides it. A new
#: third-party import needs a line here and the key in package.xml.
MODULE_KEYS = {
    # Python libraries (rosdep/python.yaml)
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "numba": "python3-numba",
    "lxml": "python3-lxml",
    "urdf_parser_py": "urdfdom_py",          # ROS 2's urdfdom-py; PyPI: urdfdom-py
    "sympy": "python3-sympy",
    "mpmath": "python3-sympy",               # sympy's own dependency (pip and Debian); no rosdep key of its own
    "matplotlib": "python3-matplotlib",
    "rosbags": "python3-rosbags-pip",        # rosbag2 reader/writer, pip-only like mujoco
    "toppra": "python3-toppra-pip",          # time-optimal retiming (rd.retime), pip-only
    "yaml": "python3-yaml",
    "pytest": "python3-pytest",
    "hypothesis": "python3-hypothesis",
    "pinocchio": "pinocchio",                # the ROS package ships the Python bindings; PyPI: pin
    "mujoco": "python3-mujoco-pip",
    "coal": "coal",                          # contact geometry; the ROS package as the PyPI wheel
    "catkin_pkg": "python3-catkin-pkg",      # this test's package.xml parser
    # ROS 2 packages: the module is the package
    **{name: name for name in (
        "ament_index_python", "rclpy", "rcl_interfaces", "builtin_interfaces", "std_msgs", "std_srvs",
        "sensor_msgs", "trajectory_msgs", "geometry_msgs", "diagnostic_msgs", "visualization_msgs",
        "rosgraph_msgs", "lifecycle_msgs", "nav_msgs", "launch", "launch_ros", "xacro", INTERFACES,
        "controller_manager_msgs", "control_msgs", "tf2_msgs", "action_msgs")},
}

#: Packages that bring a display (Qt) or exist only to feed one: never an
#: unconditional run dependency.
VISUALIZATION = {"rviz2", "robot_state_publisher", "xacro", "joint_state_publisher_gui",
                 "rqt_gui", "rqt_plot", "rqt_robot_steering"}
VISUALIZATION_SWITCH = "ROBOT_DYNAMICS_VISUALIZATION"


def in_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def require(what, present):
    """In CI a missing tool fails the test; elsewhere it skips it."""
    if not present:
        if in_ci():
            pytest.fail("%s is missing (CI=%s: a missing tool is a failure)" % (what, os.environ["CI"]))
        pytest.skip("%s is missing" % what)


@pytest.fixture(scope="module")
def keys():
    lines = KEYS_FILE.read_text().splitlines()
    assert lines[0].startswith("# rosdep keys") and "ros/rosdistro" in lines[0]
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def depends(package):
    """{dependency name: [(kind, condition), ...]} of a parsed package.xml (``depend`` counts as all three)."""
    found = {}
    for kind in ("build_depends", "buildtool_depends", "build_export_depends", "buildtool_export_depends",
                 "exec_depends", "test_depends", "doc_depends"):
        for dep in getattr(package, kind):
            found.setdefault(dep.name, []).append((kind, dep.condition))
    return found


# --- package.xml -------------------------------------------------------------------------------

def test_keys_file_is_the_full_list(keys):
    assert len(keys) > 4000                       # every key of the distribution, not a trimmed list
    assert {"rclpy", "python3-numpy", "ament_cmake", "rviz2"} <= keys
    assert "ament_python" not in keys             # the reason the list exists


@pytest.mark.parametrize("path", PACKAGE_XMLS, ids=lambda p: p.parent.name)
def test_every_depend_is_a_rosdep_key(path, keys):
    package = parse_package(str(path))           # catkin_pkg: the parser rosdep and colcon use
    package.validate()
    unknown = sorted(set(depends(package)) - keys - OWN_PACKAGES)
    assert not unknown, ("%s declares %s, not rosdep keys of ROS 2 Jazzy (%s)"
                         % (path.relative_to(ROOT), unknown, KEYS_FILE.relative_to(ROOT)))


def test_build_types():
    python = parse_package(str(ROOT / "package.xml"))
    assert python.get_build_type() == "ament_python"
    assert not python.buildtool_depends           # ament_python is no rosdep key; <build_type> says it
    interfaces = parse_package(str(ROOT / INTERFACES / "package.xml"))
    assert interfaces.get_build_type() == "ament_cmake"
    assert [g.name for g in interfaces.member_of_groups] == ["rosidl_interface_packages"]


def third_party_imports(folders):
    """{top-level module: [files]} of every absolute import in the .py files under ``folders``
    that is neither the standard library, this repository's packages, nor a local test helper (or a
    bench module a test imports from bench/, e.g. latency_trace)."""
    files = [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]
    local = {p.stem for p in files if p.is_relative_to(ROOT / "test")}     # conftest, probes, ...
    local |= {p.stem for p in (ROOT / "bench").glob("*.py")}
    found = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in local or top in ("__future__", "robot_dynamics"):
                    continue
                found.setdefault(top, []).append(str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize("folders, kinds", [
    (("robot_dynamics", "launch"), {"exec_depends", "build_export_depends"}),
    (("test",), {"exec_depends", "build_export_depends", "test_depends"}),
], ids=["runtime", "tests"])
def test_every_import_is_declared(folders, kinds):
    declared = {name for name, uses in depends(parse_package(str(ROOT / "package.xml"))).items()
                if any(kind in kinds for kind, _ in uses)}
    imports = third_party_imports(folders)
    assert {"numpy", "rclpy", "pytest" if "test" in folders else "lxml"} <= set(imports)   # the scan works
    unmapped = {m: f[:3] for m, f in imports.items() if m not in MODULE_KEYS}
    assert not unmapped, "imports with no rosdep key in MODULE_KEYS (add the key here and to package.xml): %s" % unmapped
    missing = {m: (MODULE_KEYS[m], f[:3]) for m, f in imports.items() if MODULE_KEYS[m] not in declared}
    assert not missing, "imported but not declared in package.xml (%s): %s" % (" or ".join(sorted(kinds)), missing)


def test_visualisation_is_optional():
    """rviz2 and friends pull Qt onto a headless robot computer: declared only under a
    condition that is false unless ROBOT_DYNAMICS_VISUALIZATION=1 is set for rosdep."""
    path = str(ROOT / "package.xml")
    default = {k: v for k, v in os.environ.items() if k != VISUALIZATION_SWITCH}
    for environment, wanted in ((default, False), (dict(default, **{VISUALIZATION_SWITCH: "1"}), True)):
        package = parse_package(path)
        package.evaluate_conditions(environment)
        run = {d.name for d in package.exec_depends + package.build_export_depends
               if d.evaluated_condition is not False}
        assert (VISUALIZATION & run == {"rviz2", "robot_state_publisher", "xacro"}) is wanted, run & VISUALIZATION


# --- wheel_interfaces/ -------------------------------------------------------------------------

WHEEL_INTERFACES = sorted(p.parent for p in (ROOT / "wheel_interfaces").glob("*/package.xml"))


def interface_files(folder):
    return sorted(p.relative_to(folder).as_posix() for kind in ("msg", "srv", "action")
                  for p in (folder / kind).glob("*.%s" % kind))


def declared_fields(path):
    """Field names of each part of a .msg/.srv/.action file, in order (constants left out)."""
    parts = [[]]
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line == "---":
            parts.append([])
        elif line and "=" not in line:
            parts[-1].append(line.split()[1])
    return parts


def test_wheel_interfaces_are_the_rosdep_packages_and_never_a_workspace_package(keys):
    """Each folder of wheel_interfaces/ is a ROS 2 Jazzy package of the same name (rosdep gives the
    real one with ROS installed), hidden from colcon, its CMakeLists names every interface file,
    and the package.xml of robot_dynamics declares it."""
    assert [p.name for p in WHEEL_INTERFACES] == ["control_msgs", "controller_manager_msgs", "tf2_msgs"]
    assert (ROOT / "wheel_interfaces" / "COLCON_IGNORE").is_file()
    ours = depends(parse_package(str(ROOT / "package.xml")))
    for folder in WHEEL_INTERFACES:
        package = parse_package(str(folder / "package.xml"))
        package.validate()
        assert package.name == folder.name and package.name in keys and package.name in ours
        assert set(depends(package)) <= keys, folder
        cmake = (folder / "CMakeLists.txt").read_text()
        listed_files = sorted(re.findall(r'"((?:msg|srv|action)/\w+\.(?:msg|srv|action))"', cmake))
        assert listed_files == interface_files(folder), folder


@pytest.mark.parametrize("folder", WHEEL_INTERFACES, ids=lambda p: p.name)
def test_wheel_interfaces_installed_in_the_venv_are_the_files(folder):
    """The venv's Python types (scripts/build-interfaces.sh) have the fields of the files, in order:
    a stale build of an edited file fails here."""
    import importlib
    for name in interface_files(folder):
        kind, stem = name.split("/")[0], Path(name).stem
        interface = getattr(importlib.import_module("%s.%s" % (folder.name, kind)), stem)
        parts = [getattr(interface, part) for part in {"msg": [], "srv": ["Request", "Response"],
                                                         "action": ["Goal", "Result", "Feedback"]}[kind]]
        parts = parts or [interface]
        for part, fields in zip(parts, declared_fields(folder / name), strict=True):
            assert list(part.get_fields_and_field_types()) == fields, (name, part.__name__)


#: Type hashes of ROS 2 Jazzy's own builds (``ros2 topic info -v /tf`` on a Jazzy installation): a wheel
#: interface built from the unchanged files has the same, so that its topics match real nodes'.
JAZZY_TYPE_HASHES = {
    "tf2_msgs/msg/TFMessage": "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087",
}


@pytest.mark.parametrize("name", sorted(JAZZY_TYPE_HASHES))
def test_wheel_interfaces_have_jazzy_type_hashes(name):
    """The type description the rosidl generators installed in the venv carries Jazzy's hash."""
    import json
    path = VENV / "share" / (name + ".json")
    require("%s built into the venv (scripts/build-interfaces.sh)" % path, path.is_file())
    hashes = {t["type_name"]: t["hash_string"] for t in json.loads(path.read_text())["type_hashes"]}
    assert hashes[name] == JAZZY_TYPE_HASHES[name]


# --- licence -----------------------------------------------------------------------------------

#: sha256 of the Apache License 2.0 text (https://www.apache.org/licenses/LICENSE-2.0.txt)
#: with runs of white space made one space.
APACHE_2_SHA256 = "0ffddef9e48f8a09aed5caf2d44f7ba1c1be2d9b8e0a6f693b1635b2d5566645"


def test_license_is_apache_2_everywhere():
    text = (ROOT / "LICENSE").read_text()
    assert hashlib.sha256(" ".join(text.split()).encode()).hexdigest() == APACHE_2_SHA256, \
        "LICENSE is not the Apache License 2.0 text"
    for path in PACKAGE_XMLS:
        assert parse_package(str(path)).licenses == ["Apache-2.0"], path
    setup = ast.parse((ROOT / "setup.py").read_text())
    licence = [k.value.value for node in ast.walk(setup) if isinstance(node, ast.Call)
               for k in node.keywords if k.arg == "license"]
    assert licence == ["Apache-2.0"]


# --- colcon ------------------------------------------------------------------------------------

VENV = Path(sys.prefix)
BASE_PATHS = ["src/robot_dynamics", "src/robot_dynamics/" + INTERFACES]   # the README's quick start
#: The wheels' CMake exports need scripts/cmake/wheel-prefix-fixes.cmake (docs/NODES.md); with
#: a ROS installation these arguments are not needed.
CMAKE_ARGS = ["-DCMAKE_PROJECT_INCLUDE=%s" % (ROOT / "scripts" / "cmake" / "wheel-prefix-fixes.cmake"),
              "-DPython3_EXECUTABLE=%s" % sys.executable, "-DBUILD_TESTING=OFF"]


def test_documented_commands_name_both_packages():
    """The README and docs/INSTALL.md give rosdep and colcon the paths this test builds with."""
    for doc in ("README.md", "docs/INSTALL.md"):
        text = (ROOT / doc).read_text()
        assert "colcon build --base-paths " + " ".join(BASE_PATHS) in text, doc
        assert "rosdep install --from-paths " + " ".join(BASE_PATHS) in text, doc


def copy_repository(dest):
    """The files of the checkout that a clone would hold (tracked, plus new ones not ignored)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, check=True).stdout
    for name in sorted(set(out.decode().split("\0")) - {""}):
        src = ROOT / name
        if src.is_file():                         # a tracked file deleted in the working tree is gone
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def seed_numba_cache(installed):
    """Copy the checkout's compiled kernels next to the installed package, under the names numba
    gives the installed source folders, so that the node starts in seconds instead of compiling
    for minutes. numba checks each entry against the sha256 of its source file, so an entry whose
    source differs is simply recompiled. Returns the number of files copied."""
    from robot_dynamics.cache import cache_dir, source_hash
    sources = Path(cache_dir())
    if source_hash() != sources.name.split("-", 1)[1]:
        return 0
    target = installed / "__pycache__" / sources.name

    def subpath(folder):                          # numba.core.caching._CacheLocator.get_suitable_cache_subpath
        return "%s_%s" % (folder.name, hashlib.sha1(str(folder).encode()).hexdigest())

    package = sources.parent.parent
    names = {subpath(d): subpath(installed / d.relative_to(package))
             for d in [package, *package.rglob("*")] if d.is_dir() and "__pycache__" not in d.parts}
    copied = 0
    for entry in sources.iterdir():
        if entry.name in names:
            shutil.copytree(entry, target / names[entry.name], dirs_exist_ok=True)
            copied += sum(1 for _ in entry.iterdir())
    return copied


def run(cmd, cwd, env, timeout, what):
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - start
    assert done.returncode == 0, "%s failed (exit %d):\n%s\n%s" % (what, done.returncode, done.stdout[-4000:],
                                                                 done.stderr[-4000:])
    return done.stdout, seconds


def listed(out):
    return [line.split("\t")[0] for line in out.splitlines() if line.strip()]


def test_colcon_builds_both_packages_and_the_installed_node_starts(tmp_path):
    colcon = VENV / "bin" / "colcon"
    require("colcon (requirements-dev.txt)", colcon.is_file())
    require("cmake", shutil.which("cmake"))
    require("a C++ compiler", shutil.which("c++") or shutil.which("g++"))
    require("git and a git checkout", shutil.which("git") and (ROOT / ".git").exists())

    ws = tmp_path / "ws"
    copy_repository(ws / "src" / "robot_dynamics")
    env = dict(os.environ, PATH="%s%s%s" % (VENV / "bin", os.pathsep, os.environ.get("PATH", "")),
               AMENT_PREFIX_PATH=str(VENV), CMAKE_PREFIX_PATH=str(VENV))
    for name in ("PYTHONPATH", "COLCON_PREFIX_PATH", "NUMBA_CACHE_DIR"):
        env.pop(name, None)

    # colcon does not crawl the folders of a package (colcon-recursive-crawl stops at a
    # package.xml), so a plain `colcon list` sees the package at the root only; the README's
    # quick start names the interfaces' folder too.
    out, _ = run([str(colcon), "list"], ws, env, 60, "colcon list")
    assert listed(out) == ["robot_dynamics"], out
    paths = ["--base-paths", *BASE_PATHS]
    out, _ = run([str(colcon), "list", "--topological-order", *paths], ws, env, 60, "colcon list")
    assert listed(out) == [INTERFACES, "robot_dynamics"], out
    # wheel_interfaces/ (controller_manager_msgs, control_msgs, tf2_msgs for a venv of ROS 2 wheels) is never a
    # workspace package: its COLCON_IGNORE hides it even when colcon is pointed at it; rosdep gives the real one.
    out, _ = run([str(colcon), "list", "--base-paths", "src/robot_dynamics/wheel_interfaces"], ws, env, 60,
                 "colcon list")
    assert listed(out) == [], out

    out, build_seconds = run([str(colcon), "build", "--event-handlers", "console_direct-", *paths,
                              "--cmake-args", *CMAKE_ARGS], ws, env, 150, "colcon build")
    finished = re.findall(r"^Finished <<< (\S+)", out, re.M)
    print("colcon build: %s finished in %.0f s" % (", ".join(finished), build_seconds))
    assert sorted(finished) == ["robot_dynamics", INTERFACES], out
    install = ws / "install"
    node = install / "robot_dynamics" / "lib" / "robot_dynamics" / "dynamics_node"
    urdf = install / "robot_dynamics" / "share" / "robot_dynamics" / "urdf" / "panda_arm.urdf"
    assert node.is_file() and urdf.is_file()
    site = install / "robot_dynamics" / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"
    print("numba cache: %d files seeded from the checkout" % seed_numba_cache(site / "robot_dynamics"))

    # The installed node, in the environment install/setup.bash makes: the packages of the
    # install space first on PYTHONPATH and AMENT_PREFIX_PATH.
    log = tmp_path / "dynamics_node.log"
    command = 'source install/setup.bash && exec "%s" --ros-args -p urdf_path:="%s"' % (node, urdf)
    start = time.monotonic()
    with open(log, "w") as out_file:
        proc = subprocess.Popen(["bash", "-c", command], cwd=ws, env=env, stdout=out_file,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while "configured; spinning" not in log.read_text():
            assert proc.poll() is None, "dynamics_node exited with %s:\n%s" % (proc.returncode, log.read_text()[-3000:])
            assert time.monotonic() - start < 150, "dynamics_node not up after 150 s:\n%s" % log.read_text()[-3000:]
            time.sleep(0.2)
        print("dynamics_node up in %.1f s" % (time.monotonic() - start))
        maps = Path("/proc/%d/maps" % proc.pid).read_text()
        assert str(install / INTERFACES) in maps, "the node did not load the interfaces of the install space"
        text = log.read_text()
        assert "model 'panda' from file %s in " % urdf in text and ' s: 7 joints' in text, text
    finally:
        proc.send_signal(signal.SIGINT)           # the node's clean shutdown (model_node.StopSignals)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, "dynamics_node did not stop cleanly on SIGINT (%s):\n%s" % (
        proc.returncode, log.read_text()[-3000:])
