"""The static map ``tau = J^T F``: the torques that let the robot exert a wrench.

Convention (also in the package docstring): a wrench is
``[fx, fy, fz, nx, ny, nz]``, force then moment [N, N m].
"""
import numpy as np

from .. import checks
from ..algorithms.task_space import jacobian
from ..errors import InputError, old_argument_order


def _old_order(args, kwargs):
    """(model, q, link, wrench, point) -> (model, q, wrench, link, point)."""
    model, q, link, rest = args[0], args[1], args[2], args[3:]
    wrench = rest[0] if rest else kwargs.pop("wrench")
    point = rest[1] if len(rest) > 1 else kwargs.pop("point", (0.0, 0.0, 0.0))
    return (model, q, wrench, link, point), kwargs


@old_argument_order(2, _old_order, "static_torques(model, q, wrench, link, point)")
def static_torques(model, q, wrench, link, point=(0.0, 0.0, 0.0)):
    """Joint torques that balance a wrench applied by the robot at a point:
    ``tau = J(q)^T F`` (Craig eq. 5.105; Handbook eq. 3.6).

    Args:
        q: (..., nq) joint positions.
        wrench: (..., 6) ``[fx, fy, fz, nx, ny, nz]`` that the robot exerts on
            its environment at ``point``, in the base frame [N, N m].
        link: link on which the point sits (e.g. the tool flange).
        point: (3,) point in the link frame [m].

    Returns:
        (..., nq) torques [N m] / forces [N]; add them to the gravity torques
        for the total static load.
    """
    J = jacobian(model, q, link, point)
    F = checks.as_float_array(wrench, "wrench")
    if F.shape[-1:] != (6,):
        raise InputError("wrench must have 6 values [fx fy fz nx ny nz], got shape %s" % (F.shape,))
    return np.einsum("...ij,...i->...j", J, F)
