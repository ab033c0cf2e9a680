"""Errors raised by robot_dynamics.

Every error the package raises on purpose is a ``ValueError`` subclass (or a
plain ``ValueError`` for array shapes), so callers can catch one type.
"""


class URDFError(ValueError):
    """A URDF that cannot be turned into a model.

    The message names the element at fault (link or joint name and the
    attribute), never a traceback from inside the XML parser.
    """


class InertiaWarning(UserWarning):
    """A link's inertia is physically implausible (not positive definite or
    violates the triangle inequality); the model is still built."""
