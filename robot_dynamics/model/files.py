"""Reading the files a model is built from (URDF, loops and actuators files), with a bound on their size."""
import os
import sys

import numpy as np

from ..errors import URDFError


def read_bounded(path, max_bytes, what):
    """The bytes of file ``path``, at most ``max_bytes + 1`` of them (the caller
    refuses more); a file that cannot be read raises URDFError naming ``what``."""
    try:
        with open(path, "rb") as fh:
            return fh.read(max_bytes + 1)
    except OSError as exc:
        raise URDFError("cannot read %s %r: %s" % (what, path, exc.strerror or exc)) from None


#: Nesting of YAML flow collections ([ and {) refused before parsing: PyYAML's scanner keeps a possible key
#: per level and walks them all at each token (quadratic: 0.9 s of CPU before its composer hits Python's
#: recursion limit at about 500 levels); no loops, actuators or world file nests more than a few.
MAX_FLOW_DEPTH = 50


def flow_depth(text):
    """The deepest nesting of ``[`` and ``{`` in ``text`` (str), brackets in quotes and comments counted
    too (an over-estimate), in one vectorised pass."""
    b = np.frombuffer(text.encode("utf-8", "replace"), dtype=np.uint8)
    step = (b == ord("[")).astype(np.int64) + (b == ord("{")) - (b == ord("]")) - (b == ord("}"))
    return int(np.cumsum(step).max(initial=0))


def read_yaml(source, max_bytes, what, is_text):
    """The YAML document of ``source`` (parsed with ``yaml.safe_load``; None for an empty one).

    Args:
        source: bytes (YAML), a str for which ``is_text(str)`` is true (YAML text), or
            else a path (str or os.PathLike) to a file of at most ``max_bytes`` bytes.
        what: the kind of file, for the messages (``"loops"``, ``"actuators"``).

    Raises:
        URDFError: an unreadable or larger file, malformed YAML; naming ``what``.
    """
    if isinstance(source, bytes):
        text = source.decode("utf-8", "replace")
    elif isinstance(source, str) and is_text(source):
        text = source
    else:
        path = os.fspath(source)
        data = read_bounded(path, max_bytes, "%s file" % what)
        if len(data) > max_bytes:
            raise URDFError("%s file %r is larger than %d bytes" % (what, path, max_bytes))
        text = data.decode("utf-8", "replace")
    depth = flow_depth(text)
    if depth > MAX_FLOW_DEPTH:
        raise URDFError("%s: YAML nested %d levels deep in [ and { (at most %d)" % (what, depth, MAX_FLOW_DEPTH))
    import yaml
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise URDFError("%s: malformed YAML: %s" % (what, " ".join(str(exc).split()))) from None
    except RecursionError:                  # PyYAML's composer recurses once per level of nesting
        raise URDFError("%s: YAML nested deeper than Python's recursion limit (%d levels)"
                        % (what, sys.getrecursionlimit())) from None
