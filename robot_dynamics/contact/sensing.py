"""What a simulation with contact shows: the contacts and their forces, the free
bodies' poses, and a force-torque sensor at a named link (issue 35, point 3).

Everything is read at the simulator's committed state (after ``sim.step()``),
from its :class:`~.stepping.ContactStepper` (``sim.contact``):

- :func:`contact_list`: per contact the two bodies by name, the point, the
  unit normal and the force on body a, world frame (the arm's base frame);
- :func:`free_body_poses`: each free body's name, position and quaternion;
- :class:`ForceTorqueSensor`: the wrench the contacts exert on the part of the
  arm beyond a link, at that link's origin in its axes.

A body of the arm is named by its link (the child link of its joint; links
fixed to it are the same body), a free body by its world-file name, the
static world (ground, static boxes) ``world``.
"""
from dataclasses import dataclass

import numpy as np

from ..algorithms.kinematics import link_pose
from ..errors import InputError

WORLD = "world"


@dataclass(frozen=True)
class Contact:
    """One contact at the committed state, world frame.

    ``body_a``, ``body_b``: names (module docstring); ``point`` (3,) [m] midway
    between the surfaces; ``normal`` (3,) unit, from b towards a; ``force``
    (3,) [N] on a (``-force`` on b); ``depth`` [m] >= 0.
    """
    body_a: str
    body_b: str
    point: np.ndarray
    normal: np.ndarray
    force: np.ndarray
    depth: float


def body_names(stepper):
    """Names of the stepper's bodies: the arm's (nb, by link), then the free bodies' (nf)."""
    m = stepper.model
    return tuple(m.link_names[l] for l in m.body_link) + tuple(stepper.bodies.names)


def _name(names, b):
    return WORLD if b < 0 else names[b]


def contact_list(stepper):
    """The contacts of the committed state as :class:`Contact` records (a list, possibly empty)."""
    names = body_names(stepper)
    a, b, point, normal, force = stepper.wrenches()
    depth = stepper.contacts.depth[:len(a)]
    return [Contact(_name(names, a[i]), _name(names, b[i]), point[i], normal[i], force[i], float(depth[i]))
            for i in range(len(a))]


def free_body_poses(stepper):
    """[(name, position (3,) [m], quaternion (4,) (x, y, z, w))] of the free bodies, world frame."""
    bodies = stepper.bodies
    return [(name, bodies.p[j].copy(), quat) for j, (name, quat) in enumerate(zip(bodies.names, bodies.quaternions()))]


class ForceTorqueSensor:
    """A simulated force-torque sensor at a link of the arm.

    It reads the wrench the contacts exert on the bodies at and beyond the
    link's body (its subtree: every body whose chain to the base passes
    through it), about the link's origin, components in the link's axes:
    ``f = sum R^T F_i``, ``tau = sum R^T (x_i - o) x F_i`` with ``F_i`` the
    contact force on that side. It is the wrench of the environment on the
    tool, as a wrist sensor between flange and tool reports it once its
    tool's weight is tared: not the joint reaction (gravity and inertia of
    the links beyond are not in it). A contact between two bodies that are
    both beyond the link cancels. Links fixed to the link's body on the
    near side of the link (for the Panda's ``panda_link8``: ``panda_link7``)
    are counted as beyond it: the sensor sits in the body, not in a joint.

    With ``subtree=False`` only the contacts on the link's own body count:
    the contact wrench on that body (simulator_node's ``~/contacts/<link>``).

    Args:
        model: the arm (fixed base).
        link: the link's name.
        subtree: count the bodies beyond the link's body too (a sensor), or that body only.
    """

    def __init__(self, model, link, subtree=True):
        if link not in model.link_names:
            raise InputError("ft sensor: no link %r in robot %r (links: %s)"
                             % (link, model.name, ", ".join(model.link_names)))
        self.model, self.link = model, link
        body = int(model.link_body[model.link_index(link)])
        if body < 0:
            raise InputError("ft sensor: link %r is fixed to the base; a sensor there would carry the whole arm's "
                             "contacts (give a link that moves)" % link)
        beyond = np.zeros(model.nb, dtype=bool)
        for b in range(model.nb):                        # parents come before children in model order
            beyond[b] = b == body or (subtree and model.parent[b] >= 0 and beyond[model.parent[b]])
        self.beyond = beyond

    def wrench(self, stepper, q):
        """(6,) ``[fx, fy, fz, tx, ty, tz]`` [N, N m] at the link's origin in its axes,
        from ``stepper``'s contacts at the arm's configuration ``q`` (the committed one)."""
        a, b, point, _, force = stepper.wrenches()
        nb = self.model.nb
        side = np.zeros(len(a))
        for sign, bodies in ((1.0, a), (-1.0, b)):
            arm = (bodies >= 0) & (bodies < nb)
            side[arm] += sign * self.beyond[bodies[arm]]
        T = link_pose(self.model, q, self.link)
        F = side[:, None] * force
        f = F.sum(axis=0)
        tau = np.cross(point - T[:3, 3], F).sum(axis=0)
        R = T[:3, :3]
        return np.concatenate([R.T @ f, R.T @ tau])
