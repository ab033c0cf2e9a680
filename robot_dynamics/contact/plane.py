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


FACE_COS = np.cos(1e-2)           # a contact normal within 10 mrad of a box face's normal is that face's
#: the corners of a box face, in cyclic order, as signs of its two in-plane axes
FACE = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
NEXT = np.array([1, 2, 3, 0])     # the next corner of a face: edge i runs from corner i to NEXT[i]


def box_on_face(a, b, normal):
    """A box resting on a face of another box, or None when the contact is not face on.

    In MuJoCo's manner (``mjc_BoxBox``), which the tests compare with: the polygon where
    the top box's face meets the base's face, each vertex a contact with its own depth:
    the top's corners inside the base's face (``feature`` 0..7, the corner), the base
    face's corners inside the top's face (8..15) and the crossings of the two faces' edges
    (16 + 4 edge + side). The base is the box one of whose faces is within 10 mrad of the
    normal: b if it has one, else a.

    Args:
        a, b: (pose (4, 4) world <- box, full edges (3,)) of the two boxes.
        normal: (3,) the contact normal from b towards a (coal's, negated).

    Returns:
        None, or (points (k, 3), normal (3,) from b towards a, depths (k,), features (k,)).
    """
    found = _face_on_face(a, b, normal)
    if found is not None:
        return found
    found = _face_on_face(b, a, -normal)               # a is the base
    if found is None:
        return None
    points, n, depths, features = found
    return points, -n, depths, features


def _face(T, size, direction):
    """(axis k, outward unit normal, offset n . x on the face, half extents) of the face of box
    (T, size) whose normal is nearest ``direction``, or None beyond FACE_COS."""
    R, h = T[:3, :3], 0.5 * np.asarray(size)
    c = R.T @ direction
    k = int(np.argmax(np.abs(c)))
    if abs(c[k]) < FACE_COS:
        return None
    f = np.sign(c[k]) * R[:, k]
    return k, f, f @ T[:3, 3] + h[k], h


SIGNS = CORNERS.tolist()
NOT_FACE, GENERAL, DONE = range(3)


def _corners_over_face(Ta, size_a, Tb, size_b, normal):
    """The common case, a box resting inside a face of another (on a table), in plain Python
    floats (eight corners: each numpy call would cost more than its arithmetic).

    Returns:
        (NOT_FACE, None): no face of the base within FACE_COS of ``normal``;
        (GENERAL, None): the top's four lowest corners are not all over the face (clip it);
        (DONE, contacts or None): the top's sunk corners, as :func:`box_on_face` returns them.
    """
    A, B = Ta.tolist(), Tb.tolist()
    nx, ny, nz = normal.tolist()
    c = [B[0][i] * nx + B[1][i] * ny + B[2][i] * nz for i in range(3)]          # the normal, base frame
    k = max(range(3), key=lambda i: abs(c[i]))
    if abs(c[k]) < FACE_COS:
        return NOT_FACE, None
    sk = 1.0 if c[k] > 0 else -1.0
    hb, ha = [0.5 * x for x in size_b], [0.5 * x for x in size_a]
    d = [A[r][3] - B[r][3] for r in range(3)]
    M = [[B[0][i] * A[0][j] + B[1][i] * A[1][j] + B[2][i] * A[2][j] for j in range(3)] for i in range(3)]
    o = [B[0][i] * d[0] + B[1][i] * d[1] + B[2][i] * d[2] for i in range(3)]     # top's origin, base frame
    u, v = OTHER[k]
    corners = []                                                                # (height, over the face, L)
    for sx, sy, sz in SIGNS:
        x, y, z = sx * ha[0], sy * ha[1], sz * ha[2]
        L = [o[i] + M[i][0] * x + M[i][1] * y + M[i][2] * z for i in range(3)]
        corners.append((sk * L[k] - hb[k], abs(L[u]) <= hb[u] + 1e-12 and abs(L[v]) <= hb[v] + 1e-12, L))
    if not all(corners[i][1] for i in sorted(range(8), key=lambda i: corners[i][0])[:4]):
        return GENERAL, None
    sunk = [i for i in range(8) if corners[i][0] <= 0.0 and corners[i][1]]
    if not sunk:
        return DONE, None
    Rb = Tb[:3, :3]
    f = sk * Rb[:, k]
    s = np.array([corners[i][0] for i in sunk])
    points = np.array([corners[i][2] for i in sunk]) @ Rb.T + Tb[:3, 3] - 0.5 * s[:, None] * f
    return DONE, (points, f, -s, np.array(sunk))


def _face_on_face(top, base, normal):
    """The contacts of box ``top`` sunk into the face of box ``base`` facing along ``normal``."""
    (Ta, size_a), (Tb, size_b) = top, base
    status, found = _corners_over_face(Ta, size_a, Tb, size_b, normal)
    if status != GENERAL:
        return found
    Ra, Rb, pb = Ta[:3, :3], Tb[:3, :3], Tb[:3, 3]
    c = Rb.T @ normal                                                       # the normal in the base's frame
    k = int(np.argmax(np.abs(c)))
    if abs(c[k]) < FACE_COS:
        return None
    hb, ha = 0.5 * np.asarray(size_b), 0.5 * np.asarray(size_a)
    sk = 1.0 if c[k] > 0 else -1.0
    f = sk * Rb[:, k]                                                       # the face's outward normal, world
    local = (CORNERS * ha) @ (Rb.T @ Ra).T + (Ta[:3, 3] - pb) @ Rb          # top's corners, base frame
    s = sk * local[:, k] - hb[k]                                            # their height above the face
    inside = _inside(local, k, hb)
    keep = (s <= 0.0) & inside
    x = local[keep] @ Rb.T + pb
    points, depths, features = x - 0.5 * s[keep, None] * f, -s[keep], np.flatnonzero(keep)
    points, depths, features = [points], [depths], [features]
    d = f @ pb + hb[k]
    j, g, e, _ = _face(Ta, size_a, -f) or (None, None, None, None)      # the top's face, if face on
    if j is not None:
        on_face = np.flatnonzero(CORNERS[:, k] * sk > 0)                    # the base face's 4 corners
        y = (CORNERS[on_face] * hb) @ Rb.T + pb
        t = (e - y @ g) / (g @ f)                                           # along f to the top's face
        z = y + t[:, None] * f
        keep = (t <= 0.0) & _inside((z - Ta[:3, 3]) @ Ra, j, ha)
        points.append(y[keep] + 0.5 * t[keep, None] * f)
        depths.append(-t[keep])
        features.append(8 + on_face[keep])
        crossings = _crossings(Ta, ha, j, g, Tb, hb, k, f, d)
        if crossings is not None:
            points.append(crossings[0])
            depths.append(crossings[1])
            features.append(crossings[2])
    depths = np.concatenate(depths)
    if not len(depths):
        return None
    return np.concatenate(points), f, depths, np.concatenate(features)


OTHER = ((1, 2), (0, 2), (0, 1))   # the two axes other than k


def _inside(local, k, h):
    """(n,) bool: points (n, 3) in a box's frame lie within its face across axis k (edges included)."""
    u, v = OTHER[k]
    return (np.abs(local[:, u]) <= h[u] + 1e-12) & (np.abs(local[:, v]) <= h[v] + 1e-12)


def _crossings(Ta, ha, j, g, Tb, hb, k, f, d):
    """Where the edges of the top's face (axis j, outward g) cross the edges of the base's face
    (axis k, outward f, offset d), sunk: (points, depths, features) or None."""
    u, v = [i for i in range(3) if i != j]
    corners = np.empty((4, 3))
    corners[:, j] = np.sign(Ta[:3, :3][:, j] @ g) * ha[j]
    corners[:, u], corners[:, v] = FACE[:, 0] * ha[u], FACE[:, 1] * ha[v]
    x0 = corners @ Ta[:3, :3].T + Ta[:3, 3]                                 # the face's 4 corners, world
    dx = x0[NEXT] - x0                                                      # edge i: x0[i] + t dx[i], t in [0, 1]
    L0, dL = (x0 - Tb[:3, 3]) @ Tb[:3, :3], dx @ Tb[:3, :3]                 # in the base's frame
    p, q = [i for i in range(3) if i != k]
    across = np.array([p, p, q, q])                                         # the base face's 4 edge lines:
    along = np.array([q, q, p, p])                                          # coordinate across = value,
    value = np.array([-hb[p], hb[p], -hb[q], hb[q]])                        # |coordinate along| <= its half
    den = dL[:, across]                                                     # (4 edges, 4 lines)
    t = np.divide(value - L0[:, across], den, out=np.full((4, 4), -1.0), where=np.abs(den) > 1e-15)
    w = L0[:, along] + t * dL[:, along]
    edge, line = np.nonzero((t >= 0.0) & (t <= 1.0) & (np.abs(w) <= hb[along]))
    X = x0[edge] + t[edge, line, None] * dx[edge]
    s = X @ f - d
    keep = s <= 0.0
    if not keep.any():
        return None
    return X[keep] - 0.5 * s[keep, None] * f, -s[keep], 16 + 4 * edge[keep] + line[keep]
