"""Reading the files a model is built from (URDF, loops file), with a bound on their size."""
from ..errors import URDFError


def read_bounded(path, max_bytes, what):
    """The bytes of file ``path``, at most ``max_bytes + 1`` of them (the caller
    refuses more); a file that cannot be read raises URDFError naming ``what``."""
    try:
        with open(path, "rb") as fh:
            return fh.read(max_bytes + 1)
    except OSError as exc:
        raise URDFError("cannot read %s %r: %s" % (what, path, exc.strerror or exc)) from None
