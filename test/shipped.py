"""The package's files as setup.py installs them, for the tests that run the documented examples
as an installed user does: from an empty folder, with no link to the checkout.

:func:`install_share` copies exactly setup.py's ``data_files`` into a prefix laid out as after
``colcon build`` (``share/robot_dynamics/urdf/...``, ``share/ament_index/.../robot_dynamics``);
with ``AMENT_PREFIX_PATH`` set to it, ``rd.bundled_path`` and ``package://robot_dynamics/...``
find the files there, and a file the docs use that setup.py does not ship is missing.
"""
import os
import runpy
import shutil
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup_arguments():
    """The keyword arguments setup.py gives ``setuptools.setup``, read by running setup.py with a
    stand-in ``setuptools`` whose ``setup`` keeps its arguments."""
    kept = {}
    stand_in = types.SimpleNamespace(setup=lambda **kwargs: kept.update(kwargs), find_packages=lambda **kwargs: [])
    real, old = sys.modules.get("setuptools"), os.getcwd()
    sys.modules["setuptools"] = stand_in
    os.chdir(ROOT)                                   # setup.py globs relative to its folder
    try:
        runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    finally:
        if real is None:
            del sys.modules["setuptools"]
        else:
            sys.modules["setuptools"] = real
        os.chdir(old)
    return kept


def data_files():
    """setup.py's ``data_files``: [(install folder, [checkout file, ...])]."""
    return setup_arguments()["data_files"]


def install_share(prefix):
    """Copy setup.py's data files into ``prefix`` (a new folder); returns ``prefix`` as a Path."""
    prefix = Path(prefix)
    for folder, files in data_files():
        (prefix / folder).mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copy2(ROOT / name, prefix / folder / Path(name).name)
    return prefix
