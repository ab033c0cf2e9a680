"""One version everywhere, written once: package.xml's <version> (what ROS reads), which setup.py
reads (pip, colcon) and ``robot_dynamics.__version__`` reports (the installed metadata)."""
from importlib import metadata
from pathlib import Path

from catkin_pkg.package import parse_package

import robot_dynamics as rd
from shipped import setup_arguments

ROOT = Path(__file__).resolve().parents[1]


def test_package_xml_setup_py_and_version_agree():
    version = parse_package(str(ROOT / "package.xml")).version          # catkin_pkg, as rosdep and colcon read it
    assert version.count(".") == 2 and all(part.isdigit() for part in version.split("."))
    assert setup_arguments()["version"] == version
    assert rd.__version__ == version
    assert metadata.version("robot_dynamics") == version


def test_setup_py_writes_no_version_of_its_own():
    text = (ROOT / "setup.py").read_text() + (ROOT / "robot_dynamics" / "__init__.py").read_text()
    version = parse_package(str(ROOT / "package.xml")).version
    assert version not in text
