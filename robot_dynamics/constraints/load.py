"""``robot_dynamics.load_urdf``: the model layer's loader plus the assembly check of the loops.

The model layer reads and checks a loop declaration against the tree
(:mod:`robot_dynamics.model.loops`); whether the loops can be closed needs
the kinematics above it, so the public loader lives here, one layer up,
and the model layer never imports upwards.
"""
import functools

from ..model import urdf as _urdf
from .assembly import check_assembles

NOTE = """
    Loops (``loops=``): ``robot_dynamics.load_urdf`` also checks that the
    mechanism can be assembled (:func:`robot_dynamics.assemble` from the
    neutral configuration and seeded random guesses within the joint
    limits); a closure that cannot be assembled raises :class:`URDFError`
    naming the loop. ``robot_dynamics.model.load_urdf`` skips that check.
"""


@functools.wraps(_urdf.load_urdf)
def load_urdf(source, *, loops=None, **options):
    model = _urdf.load_urdf(source, loops=loops, **options)
    if model.loops:
        check_assembles(model)
    return model


load_urdf.__doc__ = (_urdf.load_urdf.__doc__ or "") + NOTE
