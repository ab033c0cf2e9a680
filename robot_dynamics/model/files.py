"""Reading the files a model is built from (URDF, loops and actuators files), with a bound on their size."""
import os

from ..errors import URDFError


def read_bounded(path, max_bytes, what):
    """The bytes of file ``path``, at most ``max_bytes + 1`` of them (the caller
    refuses more); a file that cannot be read raises URDFError naming ``what``."""
    try:
        with open(path, "rb") as fh:
            return fh.read(max_bytes + 1)
    except OSError as exc:
        raise URDFError("cannot read %s %r: %s" % (what, path, exc.strerror or exc)) from None


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
    import yaml
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise URDFError("%s: malformed YAML: %s" % (what, " ".join(str(exc).split()))) from None
