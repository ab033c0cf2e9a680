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


def plane_contacts(kind, size, T, plane, add):
    """Call ``add(point, normal, depth, feature)`` for each penetrating feature of a shape.

    Args:
        kind: "sphere", "capsule" or "box"; size: as in :mod:`.geometry`.
        T: (4, 4) world <- shape. plane: (4, 4) world <- plane frame.
        add: the sink (point (3,) [m] world, normal (3,) unit world, depth [m] >= 0, feature int).
    """
    n = plane[:3, 2]
    d = n @ plane[:3, 3]
    if kind == "box":
        x = (CORNERS * (0.5 * np.asarray(size))) @ T[:3, :3].T + T[:3, 3]      # (8, 3) corners, world
        s = x @ n - d
        for k in np.flatnonzero(s <= 0.0):
            add(x[k] - 0.5 * s[k] * n, n, -s[k], int(k))
        return
    r = size[0]
    if kind == "sphere":
        ends = (T[:3, 3],)
    else:                                                                        # capsule: both end spheres
        half = 0.5 * size[1] * T[:3, 2]
        ends = (T[:3, 3] - half, T[:3, 3] + half)
    for k, c in enumerate(ends):
        s = n @ c - d - r                                                        # height of the lowest point
        if s <= 0.0:
            add(c - (r + 0.5 * s) * n, n, -s, k)
