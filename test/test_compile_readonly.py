"""rd.compile with the package installed read-only: the shared object goes to the per-user
cache folder (XDG), never into the package (issue 34, point 4).

The package is copied to a temporary folder and made read-only (``chmod -R a-w``); a child
Python imports it from there (PYTHONPATH), with XDG_CACHE_HOME pointing at a temporary folder,
compiles the bundled Panda, calls it and prints the result, which is compared with the
library's ``rd.gravity_torques`` here. The copy's files are listed (paths, sizes, times)
before and after: the same list (as root the mode bits do not stop a write, so the listing
is what proves it). The rule itself (cache.py): an absolute XDG_CACHE_HOME, else
~/.cache, a relative XDG_CACHE_HOME ignored.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics import cache
from robot_dynamics.codegen.compiled import find_compiler
from reporting import require

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "urdf" / "panda_arm.urdf"
Q = [0.1, -0.7, 0.2, -2.3, 0.1, 1.6, 0.8]

CHILD = """
import json, sys
import robot_dynamics as rd
model = rd.load_urdf(sys.argv[1])
c = rd.compile(model)
print(json.dumps({"package": rd.__file__, "path": str(c.path),
                  "g": c.gravity_torques(__import__("numpy").array(%r)).tolist()}))
""" % (Q,)


def listing(folder):
    """{relative path: (size, mtime_ns)} of every file and folder under ``folder``."""
    return {str(p.relative_to(folder)): (p.stat().st_size if p.is_file() else -1, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def read_only(folder):
    for p in [folder, *folder.rglob("*")]:
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def writable_again(folder):
    for p in [folder, *folder.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_rd_compile_works_with_the_package_read_only_and_writes_only_the_user_cache(tmp_path):
    try:
        find_compiler()
    except rd.RobotDynamicsError:
        require("a C compiler (cc)", False)
    site = tmp_path / "site"
    package = site / "robot_dynamics"
    shutil.copytree(ROOT / "robot_dynamics", package, ignore=shutil.ignore_patterns("__pycache__"))
    read_only(package)
    before = listing(package)
    xdg = tmp_path / "xdg"
    env = dict(os.environ, PYTHONPATH=str(site), XDG_CACHE_HOME=str(xdg), PYTHONDONTWRITEBYTECODE="1",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))        # numba's kernels: where the caller says
    try:
        run = subprocess.run([sys.executable, "-c", CHILD, str(PANDA)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        got = json.loads(run.stdout.strip().splitlines()[-1])
        assert listing(package) == before                           # nothing written in the package
    finally:
        writable_again(package)
    assert Path(got["package"]).resolve().parent == package.resolve()       # the copy was imported
    so = Path(got["path"])
    assert so.parent == xdg / "robot_dynamics" / "codegen" and so.is_file()
    assert stat.S_IMODE(so.parent.stat().st_mode) == 0o700               # private to the user
    model = rd.load_urdf(str(PANDA))
    np.testing.assert_allclose(got["g"], rd.gravity_torques(model, np.array(Q)), rtol=1e-12, atol=1e-12)


def test_the_user_cache_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.user_cache_dir() == tmp_path / "xdg" / "robot_dynamics"
    assert cache.compiled_dir() == tmp_path / "xdg" / "robot_dynamics" / "codegen"
    assert cache.compiled_dir().is_dir()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")                 # ignored (the specification)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.user_cache_dir() == tmp_path / "home" / ".cache" / "robot_dynamics"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.user_cache_dir() == tmp_path / "home" / ".cache" / "robot_dynamics"


def test_no_writable_cache_folder_means_a_private_temporary_one(monkeypatch, tmp_path):
    """Where the user cache cannot be written, rd.compile builds in a fresh folder of its own
    (mode 0700), never in a shared one where a planted file would be loaded."""
    try:
        find_compiler()
    except rd.RobotDynamicsError:
        require("a C compiler (cc)", False)
    monkeypatch.setattr(cache, "compiled_dir", lambda: None)
    model = rd.load_urdf(str(PANDA))
    from robot_dynamics.codegen import compiled
    path, _ = compiled.build(model)
    try:
        assert path.parent.name.startswith("robot_dynamics-codegen-")
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(path.parent)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes whatever the mode bits say")
def test_a_folder_that_cannot_be_written_is_not_a_cache(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert cache.writable(folder / "sub") is None
    finally:
        folder.chmod(0o700)


def test_a_cache_folder_that_is_not_private_is_made_private_or_not_used(monkeypatch, tmp_path):
    """What the cache holds is loaded and run: the user's own folder open to the group or others is
    made 0700 before use; a folder owned by another user is not used (here: as if every folder
    belonged to another uid)."""
    folder = tmp_path / "codegen"
    folder.mkdir()
    os.chmod(folder, 0o777)
    assert cache.writable(folder) == folder
    assert folder.stat().st_mode & 0o777 == 0o700
    monkeypatch.setattr(os, "getuid", lambda: folder.stat().st_uid + 1)
    assert cache.writable(folder) is None
    assert cache.writable(tmp_path / "new") is None              # made, but still not the user's
