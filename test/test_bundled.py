"""The files shipped with the package, found wherever it is installed (robot_dynamics/bundled.py).

- setup.py ships every file under urdf/ and config/ (READMEs aside), so the list
  rd.bundled_models() / bundled_files() gives from an installed prefix is the checkout's.
- The share folder is looked up in order: the ament index, <sys.prefix>/share/robot_dynamics,
  the checkout; each case is built here (an installed copy made by test/shipped.py from
  setup.py's data_files) and the path found is the one of that case, from an empty working folder.
- A name is a path inside the share folder or a file name one shipped file has; an unknown or
  ambiguous one is refused naming what there is.
- package://robot_dynamics/PATH is the shipped file PATH; package://OTHER/PATH another ROS
  package's (the ament index).
"""
import os
import sys
from pathlib import Path

import pytest

import robot_dynamics as rd
from robot_dynamics import bundled
from shipped import data_files, install_share

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    return install_share(tmp_path_factory.mktemp("install"))


@pytest.fixture
def empty_folder(tmp_path, monkeypatch):
    """An empty working folder and no ROS environment (AMENT_PREFIX_PATH unset)."""
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def checkout_files():
    return sorted(p.relative_to(ROOT).as_posix() for folder in ("urdf", "config") for p in (ROOT / folder).rglob("*")
                  if p.is_file() and p.name != "README.md")


def test_setup_py_ships_every_file_of_urdf_and_config():
    share = "share/robot_dynamics/"
    shipped = sorted("%s/%s" % (folder[len(share):], Path(f).name) for folder, files in data_files()
                     if folder.startswith(share) and folder[len(share):].split("/")[0] in ("urdf", "config")
                     for f in files)
    assert shipped == checkout_files()


def test_the_ament_index_comes_first(installed, empty_folder, monkeypatch):
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(installed))
    share = installed / "share" / "robot_dynamics"
    assert bundled.share_directory() == share
    assert rd.bundled_path("panda_arm.urdf") == share / "urdf" / "panda_arm.urdf"
    assert list(rd.bundled_models()) == [n for n in checkout_files() if n.startswith("urdf/")
                                         and n.endswith((".urdf", ".xml"))]
    assert "urdf/examples/two_link.xml" in rd.bundled_models() and "config/sros2_policy.xml" not in rd.bundled_models()
    assert rd.load_urdf(rd.bundled_path("ur5.urdf")).nq == 6                   # a relative path would fail here


def test_then_the_python_prefix_then_the_checkout(installed, empty_folder, monkeypatch):
    """pip install puts the data files under sys.prefix; an editable install has only the checkout."""
    monkeypatch.setattr(sys, "prefix", str(installed))
    assert bundled.share_directory() == installed / "share" / "robot_dynamics"
    monkeypatch.setattr(sys, "prefix", str(empty_folder))                      # no share/robot_dynamics there
    assert bundled.share_directory() == ROOT
    assert rd.bundled_path("urdf/textbook/scara.urdf") == ROOT / "urdf" / "textbook" / "scara.urdf"


def test_an_ament_prefix_without_the_package_is_passed_over(tmp_path, empty_folder, monkeypatch):
    (tmp_path / "other" / "share").mkdir(parents=True)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "other"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "other"))
    assert bundled.share_directory() == ROOT


def test_names_are_paths_inside_the_share_folder_or_unique_file_names(empty_folder):
    assert rd.bundled_path("four_bar.loops.yaml") == rd.bundled_path("urdf/examples/four_bar.loops.yaml")
    assert rd.bundled_path(Path("config") / "robots" / "franka.yaml").read_bytes() == \
        (ROOT / "config" / "robots" / "franka.yaml").read_bytes()
    with pytest.raises(rd.InputError, match="'franka.yaml' is ambiguous: give one of config/controllers/franka.yaml, "
                                            "config/robots/franka.yaml"):
        rd.bundled_path("franka.yaml")
    with pytest.raises(FileNotFoundError, match=r"no file 'kuka.urdf' is shipped with robot_dynamics .*"
                                                r"the robot descriptions are: .*urdf/panda_arm.urdf"):
        rd.bundled_path("kuka.urdf")
    with pytest.raises(FileNotFoundError):
        rd.bundled_path("README.md")                                           # not installed by setup.py


def test_package_uris(installed, empty_folder, monkeypatch):
    assert bundled.resolve_uri("arm.urdf") == "arm.urdf"                       # a path stays as it is
    assert bundled.resolve_uri("package://robot_dynamics/urdf/ur5.urdf") == str(ROOT / "urdf" / "ur5.urdf")
    with pytest.raises(FileNotFoundError, match="no file 'ur5.urdf' is shipped"):
        bundled.resolve_uri("package://robot_dynamics/ur5.urdf")               # a URI is a path, as in ROS
    with pytest.raises(FileNotFoundError, match="package 'no_such_package' not found"):
        bundled.resolve_uri("package://no_such_package/urdf/arm.urdf")
    other = empty_folder.parent / "my_ws"                                     # another package's workspace
    (other / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (other / "share" / "ament_index" / "resource_index" / "packages" / "my_robot").touch()
    (other / "share" / "my_robot" / "urdf").mkdir(parents=True)
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join([str(other), str(installed)]))
    assert bundled.resolve_uri("package://my_robot/urdf/arm.urdf") == str(other / "share" / "my_robot" / "urdf"
                                                                          / "arm.urdf")
    assert bundled.resolve_uri("package://robot_dynamics/urdf/ur5.urdf") == str(
        installed / "share" / "robot_dynamics" / "urdf" / "ur5.urdf")


def test_missing_data_files_are_named(tmp_path, empty_folder, monkeypatch):
    """An installation without its data files (the checkout's files gone too) says where it looked."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setattr(bundled, "__file__", str(tmp_path / "site-packages" / "robot_dynamics" / "bundled.py"))
    with pytest.raises(FileNotFoundError, match="the files shipped with robot_dynamics were not found; looked in "
                                                + str(tmp_path)):
        rd.bundled_path("panda_arm.urdf")
