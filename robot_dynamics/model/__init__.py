"""The model layer: URDF parsing, the immutable :class:`Model`, the
:class:`Data` work arrays, and the spatial and inertia algebra."""
import warnings

from .data import Data
from .model import PRISMATIC, REVOLUTE, Joint, Model
from .urdf import read_urdf

__all__ = ["Data", "Joint", "Model", "PRISMATIC", "REVOLUTE"]


def __getattr__(name):
    """``robot_dynamics.model.load_urdf``: deprecated, one release."""
    if name == "load_urdf":
        warnings.warn("robot_dynamics.model.load_urdf is deprecated and goes in the next release; call "
                      "robot_dynamics.load_urdf(..., check_assembly=False) (the one loader)",
                      DeprecationWarning, stacklevel=2)
        return read_urdf
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
