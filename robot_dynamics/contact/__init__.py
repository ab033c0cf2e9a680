"""Contact: collision geometry, the world file, the narrow phase and the contact dynamics (issue 35).

:mod:`.contacts` holds the record shared by the detector and the dynamics
(:class:`Contacts`: bodies, point, normal, depth in the world frame).
"""
from .contacts import Contacts

__all__ = ["Contacts"]
