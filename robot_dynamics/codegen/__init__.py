"""C code generation: dependency-free C99 dynamics of one robot (docs/CODEGEN.md)."""
from .writer import check_prefix, generate, write


def codegen(model, prefix, folder, source=None, date=None):
    """Write ``folder/prefix.h`` and ``folder/prefix.c``: the model's RNEA,
    gravity, Coriolis, mass matrix and ABA as unrolled C99 (docs/CODEGEN.md).

    Args:
        model: a :class:`robot_dynamics.Model` (fixed base, or a floating or planar root).
        prefix: C identifier starting every generated name (``prefix_rnea``).
        folder: where to write (created if needed).
        source: the model's origin for the comments (e.g. the URDF path).
        date: date written in the comments (default: today, UTC).

    Returns:
        (header path, source path).

    Raises:
        InputError: a prefix that is not a C identifier, a model without
            moving joints.
    """
    return write(model, prefix, folder, source=source, date=date)


from .compiled import CompiledModel, compile  # noqa: E402,A001  (rd.compile, as the issue names it)

__all__ = ["codegen", "compile", "CompiledModel", "generate", "check_prefix"]
