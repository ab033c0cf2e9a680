"""The files shipped with robot_dynamics, wherever the package is installed.

setup.py installs the checkout's ``urdf/`` (the bundled arms, the textbook
robots of ``urdf/textbook/``, the examples of ``urdf/examples/`` with their
loops, actuators and waypoints files) and ``config/`` (the nodes' parameter
files) into ``share/robot_dynamics/``, the ament layout. The first of these
folders that holds the package's ``package.xml`` is used:

1. the ament index: ``get_package_share_directory('robot_dynamics')``
   (after ``colcon build`` and ``source install/setup.bash``, or a ROS
   distribution's package);
2. ``<sys.prefix>/share/robot_dynamics`` (``pip install`` into a venv or a
   conda environment, no ROS environment sourced);
3. the checkout this module runs from (an editable install,
   ``scripts/setup-venv.sh``), whose ``urdf/`` and ``config/`` are the files
   that would be installed.

Quick use::

    >>> import robot_dynamics as rd
    >>> rd.load_urdf(rd.bundled_path("panda_arm.urdf")).nq          # from any working folder
    7
    >>> rd.bundled_path("urdf/examples/four_bar.loops.yaml").name     # a path inside the share folder
    'four_bar.loops.yaml'
    >>> "urdf/examples/two_link.xml" in rd.bundled_models()           # URDFs and MJCFs
    True

The command line takes the same files as ``package://robot_dynamics/NAME``
and lists them with ``robot-dynamics models`` (docs/CLI.md).
"""
import os
import sys
from pathlib import Path

PACKAGE = "robot_dynamics"
URI_PREFIX = "package://"
FOLDERS = ("urdf", "config")                 # what setup.py installs into share/robot_dynamics
MODEL_SUFFIXES = (".urdf", ".xml")           # robot descriptions: URDF, MJCF (under urdf/ only)


def share_directory():
    """The folder holding the shipped files (``urdf/``, ``config/``), as a
    :class:`pathlib.Path`: the ament share directory, else
    ``<sys.prefix>/share/robot_dynamics``, else the checkout (module docstring).

    Raises:
        FileNotFoundError: none of them holds the package (an installation
            without its data files), naming the folders looked in.
    """
    candidates = _candidates()
    for folder in candidates:
        if (folder / "package.xml").is_file():
            return folder
    raise FileNotFoundError("the files shipped with %s were not found; looked in %s"
                            % (PACKAGE, ", ".join(str(c) for c in candidates)))


def _candidates():
    found = []
    try:
        from ament_index_python.packages import get_package_share_directory
        found.append(Path(get_package_share_directory(PACKAGE)))
    except Exception:                  # no ament_index_python, no AMENT_PREFIX_PATH, package not indexed
        pass
    found.append(Path(sys.prefix) / "share" / PACKAGE)
    found.append(Path(__file__).resolve().parents[1])     # a checkout: robot_dynamics/bundled.py -> its root
    return found


def bundled_files():
    """Names of every shipped file, relative to :func:`share_directory` with
    ``/`` separators (``'urdf/examples/four_bar.loops.yaml'``), sorted."""
    return _files(share_directory())


def _files(root):
    names = [p.relative_to(root).as_posix() for folder in FOLDERS for p in (root / folder).rglob("*")
             if p.is_file() and p.name != "README.md"]
    return tuple(sorted(names))


def bundled_models():
    """Names of the shipped robot descriptions (URDF ``.urdf`` and MJCF ``.xml``
    under ``urdf/``), relative to the share folder, sorted; give one to
    :func:`bundled_path`."""
    return _models(bundled_files())


def _models(files):
    return tuple(n for n in files if n.startswith("urdf/") and n.endswith(MODEL_SUFFIXES))


def bundled_path(name):
    """Absolute path (:class:`pathlib.Path`) of a file shipped with the package.

    Args:
        name: its path inside the share folder (``'urdf/textbook/scara.urdf'``,
            ``'config/robots/franka.yaml'``), or its file name alone when only one
            shipped file has it (``'panda_arm.urdf'``, ``'four_bar.loops.yaml'``).

    Raises:
        FileNotFoundError: no shipped file has that name (the message lists the
            robot descriptions); or the shipped files are missing altogether.
        robot_dynamics.InputError: a file name that several shipped files have
            (``'franka.yaml'``), naming them.
    """
    from .errors import InputError
    text = os.fspath(name).replace(os.sep, "/")
    root = share_directory()
    files = _files(root)
    if text in files:
        return root / text
    same = [f for f in files if f.rsplit("/", 1)[-1] == text]
    if len(same) == 1:
        return root / same[0]
    if same:
        raise InputError("bundled file name %r is ambiguous: give one of %s" % (text, ", ".join(same)))
    raise _not_shipped(text, root, files)


def _not_shipped(text, root, files):
    return FileNotFoundError("no file %r is shipped with %s (in %s); the robot descriptions are: %s"
                             % (text, PACKAGE, root, ", ".join(_models(files))))


def resolve_uri(path):
    """A file path for ``path``: ``package://robot_dynamics/NAME`` is the shipped
    file NAME, its path inside the share folder (found as :func:`share_directory`
    says, with or without a ROS environment);
    ``package://OTHER/NAME`` is NAME in that package's ament share directory;
    anything else is returned as it is.

    Raises:
        FileNotFoundError: a package that is not found, or a shipped file that is not.
    """
    text = os.fspath(path)
    if not text.startswith(URI_PREFIX):
        return text
    package, _, rest = text[len(URI_PREFIX):].partition("/")
    if package == PACKAGE:
        root = share_directory()
        files = _files(root)
        if rest not in files:
            raise _not_shipped(rest, root, files)
        return str(root / rest)
    try:
        from ament_index_python.packages import get_package_share_directory
        return os.path.join(get_package_share_directory(package), rest)
    except Exception as exc:           # PackageNotFoundError, or no ament index at all
        raise FileNotFoundError("%s: package %r not found in the ament index (%s)"
                                % (text, package, exc)) from None
