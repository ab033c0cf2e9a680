"""Where numba keeps the compiled kernels: a folder keyed on every source file.

numba's own cache checks only the timestamp of the file that defines a
kernel, and misses a change to a helper inlined from another file. So the
package keys the whole cache on the hash of every ``.py`` file of the
layers that hold compiled code (:data:`KERNEL_LAYERS`; a test checks that
no other file defines a kernel):
``<package>/__pycache__/numba-<hash>``, or
``~/.cache/robot_dynamics/numba-<hash>`` where the package folder is not
writable. An explicit ``NUMBA_CACHE_DIR`` in the environment wins.
"""
import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
KERNEL_LAYERS = ("model", "algorithms", "simulation")


def source_hash():
    """First 16 hex digits of the sha256 of every .py file of the kernel layers (sorted by path)."""
    h = hashlib.sha256()
    for path in sorted(p for layer in KERNEL_LAYERS for p in (PACKAGE / layer).rglob("*.py")):
        h.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir():
    """The folder this source tree's kernels are cached in (created if needed)."""
    name = "numba-" + source_hash()
    for base in (PACKAGE / "__pycache__", Path.home() / ".cache" / "robot_dynamics"):
        folder = base / name
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    return None


def configure():
    """Point numba's cache at :func:`cache_dir` unless NUMBA_CACHE_DIR is set.
    Must run before the first kernel is defined (numba reads it then)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    folder = cache_dir()
    if folder is not None:
        from numba.core import config
        config.CACHE_DIR = str(folder)
