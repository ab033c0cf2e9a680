"""Where the package keeps what it compiles: numba's kernels and ``rd.compile``'s shared objects.

One per-user folder, following the XDG Base Directory Specification:
``$XDG_CACHE_HOME/robot_dynamics`` when ``XDG_CACHE_HOME`` is an absolute
path (a relative one is ignored, as the specification says), else
``~/.cache/robot_dynamics`` (:func:`user_cache_dir`); folders made there
are private to the user (mode 0700), and an existing one is used only if
it is the user's own (:func:`writable`).

- The shared objects of ``rd.compile`` (and the node's ``backend:
  compiled``) always go there, in ``codegen/`` (:func:`compiled_dir`):
  they are made from a model, not from the package, so they are the
  user's data and never written into the package, which an installed
  package may not allow. Where that folder cannot be written, a fresh
  private temporary folder of the process takes them (never a shared
  one: a shared object found there would be loaded and run).
- numba's kernels are keyed on the package's sources: numba's own cache
  checks only the timestamp of the file that defines a kernel and misses
  a change to a helper inlined from another file, so the package keys the
  whole cache on the hash of every ``.py`` file of the layers that hold
  compiled code (:data:`KERNEL_LAYERS`; a test checks that no other file
  defines a kernel). Like Python's own bytecode, they are kept beside the
  sources when the package folder is writable,
  ``<package>/__pycache__/numba-<hash>`` (numba names each entry after the
  full path of its source folder, and the set-up and the packaging test
  seed the cache there), else in the per-user folder,
  ``<user cache>/numba-<hash>``. An explicit ``NUMBA_CACHE_DIR`` in the
  environment wins.
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


def user_cache_dir():
    """``$XDG_CACHE_HOME/robot_dynamics`` (an absolute XDG_CACHE_HOME), else
    ``~/.cache/robot_dynamics``; None when there is no home folder either."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        try:
            base = Path.home() / ".cache"
        except RuntimeError:                         # no HOME and no password entry
            return None
    return Path(base) / "robot_dynamics"


def writable(folder):
    """``folder``, made if needed (mode 0700), or None where it cannot be written or is not private.

    What is found there is loaded and run (numba's kernels, shared objects), so an existing folder
    must be the user's own: owned by another user, it is not used; the user's own with write access
    for the group or others (an older folder, a umask) is made 0700 first, or not used.
    """
    if folder is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
        if info.st_uid != os.getuid():
            return None
        if info.st_mode & 0o022:
            os.chmod(folder, 0o700)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def cache_dir():
    """The folder this source tree's numba kernels are cached in (made if
    needed): beside the sources if writable, else in the per-user folder;
    None if neither can be written."""
    name = "numba-" + source_hash()
    user = user_cache_dir()
    for base in (PACKAGE / "__pycache__", user):
        folder = writable(base / name) if base is not None else None
        if folder is not None:
            return folder
    return None


def compiled_dir():
    """The folder of ``rd.compile``'s shared objects, ``<user cache>/codegen``
    (made if needed), or None if it cannot be written."""
    user = user_cache_dir()
    return writable(user / "codegen") if user is not None else None


def configure():
    """Point numba's cache at :func:`cache_dir` unless NUMBA_CACHE_DIR is set.
    Must run before the first kernel is defined (numba reads it then)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    folder = cache_dir()
    if folder is not None:
        from numba.core import config
        config.CACHE_DIR = str(folder)
