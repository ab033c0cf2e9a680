"""Closed-form contacts of a sphere, a capsule and a box with a plane (the ground).

The commonest pairs of a simulated workcell, written out as MuJoCo writes
them (``mjc_PlaneSphere``, ``mjc_PlaneCapsule``, ``mjc_PlaneBox``): exact,
one contact per penetrating sphere, capsule end or box corner, each with
its own depth, so a tilted box gets the depths of its corners (a contact
patch gives every point one depth) and each contact keeps its feature
(corner index 0..7, capsule end 0..1) from step to step.

Plane: the half-space below its frame's x-y plane, normal n = the frame's z
axis, offset d = n . origin. For a point x, s = n . x - d is its height
above the surface. A contact of a convex point x (sphere: centre - r n) at
height s < 0 has depth -s, normal n (from the plane, body b, towards the
shape, body a) and point x - (s / 2) n, midway between x and the plane.
"""
import numpy as np

#: box corners in units of the half extents, corner k = bits of k (x: bit 0, y: bit 1, z: bit 2)
CORNERS = np.array([[1 if k & 1 else -1, 1 if k & 2 else -1, 1 if k & 4 else -1] for k in range(8)], dtype=float)
KINDS = ("sphere", "capsule", "box")


def plane_contacts(kind, size, T, plane):
    """The penetrating features of a shape on a plane, or None.

    Args:
        kind: "sphere", "capsule" or "box"; size: as in :mod:`.geometry`.
        T: (4, 4) world <- shape. plane: (4, 4) world <- plane frame.

    Returns:
        None, or (points (k, 3) [m] world, normal (3,) unit world from the
        plane towards the shape, depths (k,) [m] >= 0, features (k,) int).
    """
    n = plane[:3, 2]
    d = n @ plane[:3, 3]
    if kind == "box":
        x = (CORNERS * (0.5 * np.asarray(size))) @ T[:3, :3].T + T[:3, 3]      # (8, 3) corners, world
        s = x @ n - d
        k = np.flatnonzero(s <= 0.0)
        if not len(k):
            return None
        return x[k] - np.outer(0.5 * s[k], n), n, -s[k], k
    r = size[0]
    if kind == "sphere":
        c = T[:3, 3][None, :]
    else:                                                                        # capsule: both end spheres
        half = 0.5 * size[1] * T[:3, 2]
        c = np.array([T[:3, 3] - half, T[:3, 3] + half])
    s = c @ n - d - r                                                            # height of each lowest point
    k = np.flatnonzero(s <= 0.0)
    if not len(k):
        return None
    return c[k] - np.outer(r + 0.5 * s[k], n), n, -s[k], k
