"""The model layer: URDF loading, the immutable :class:`Model`, the
:class:`Data` work arrays, and the spatial and inertia algebra."""
from .data import Data
from .model import PRISMATIC, REVOLUTE, Joint, Model
from .urdf import load_urdf

__all__ = ["Data", "Joint", "Model", "PRISMATIC", "REVOLUTE", "load_urdf"]
