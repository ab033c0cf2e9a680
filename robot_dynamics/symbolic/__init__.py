"""Closed-form equations of motion derived symbolically (sympy).

- :mod:`.exact`: URDF numbers as exact rationals, trigonometric sums in one form;
- :mod:`.bodies`: the symbolic model, a Model's bodies with parameters as symbols;
- :mod:`.derive`: the Lagrange-Euler derivation, :func:`derive` -> :class:`Equations`;
- :mod:`.printers`: the equations as text, LaTeX or a numpy module.
"""
from .bodies import CHECK_RTOL, JOINT_ATTRS, LINK_ATTRS
from .derive import MAX_DOF, Equations, derive
from .exact import (CHOP_REL, RATIONAL_TOL, SNAP_TOL, axis_rotation, chop, exact, exact_matrix, exact_unit,
                    exact_vector, reduce_trig, skew, tidy)

__all__ = [
    "derive", "Equations", "MAX_DOF",
    "exact", "exact_unit", "exact_vector", "exact_matrix", "skew", "axis_rotation",
    "reduce_trig", "chop", "tidy",
    "LINK_ATTRS", "JOINT_ATTRS", "RATIONAL_TOL", "SNAP_TOL", "CHECK_RTOL", "CHOP_REL",
]
