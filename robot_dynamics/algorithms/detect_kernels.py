"""Compiled kernels of contact detection (issue 35): the broad phase and the closed forms.

They live here, in a layer the numba cache is keyed on (robot_dynamics/cache.py),
and are documented with the modules that use them: :class:`robot_dynamics.contact.detect.Detector`
(the broad phase: each shape's local box placed with its pose, world centre ``R c + p``, half
extents ``|R| h``; a box against a plane by its lowest corner) and :mod:`robot_dynamics.contact.plane`
(sphere, capsule and box on a plane; a box resting inside another box's face), whose numpy and
plain-Python functions are the reference these kernels are tested against (same results to 1e-12).

Struct of arrays, no allocation: every kernel writes into the caller's preallocated arrays and
returns a count. Contact rows are written as ``points (k, 3)``, ``depths (k,)``, ``features (k,)``
and, for a box on a face, the face's outward normal ``normal (3,)``.
"""
import numpy as np

from .kernels import jit

#: the shape kinds of the plane closed forms (plane.KINDS' order)
SPHERE, CAPSULE, BOX = 0, 1, 2
#: _corners_over_face's outcomes (plane.NOT_FACE, GENERAL, DONE)
NOT_FACE, GENERAL, DONE = 0, 1, 2
FACE_COS = np.cos(1e-2)


@jit
def candidate_pairs(pose, centre, half, box_pairs, box_a, box_b, plane_pairs, plane_a, plane_k,
                    planes_n, planes_d, world, out):
    """Broad phase: the indices of the pairs whose world boxes overlap, in ``out``; returns their count.

    Args:
        pose: (S, 4, 4) world <- shape. centre, half: (S, 3) the local box's centre and half extents [m].
        box_pairs, box_a, box_b: (P,) pair index and its two shapes, for the pairs tested box against box.
        plane_pairs, plane_a, plane_k: (Q,) pair index, its shape and its plane's row in planes_n / planes_d.
        planes_n: (K, 3) unit normals; planes_d: (K,) offsets n . origin [m].
        world: (S, 6) scratch, each shape's world box [centre, half extents].
        out: (>= P + Q,) int64, the overlapping pairs (box pairs first, then plane pairs, each in order).
    """
    for s in range(pose.shape[0]):
        for i in range(3):
            c = pose[s, i, 0] * centre[s, 0] + pose[s, i, 1] * centre[s, 1] + pose[s, i, 2] * centre[s, 2]
            h = abs(pose[s, i, 0]) * half[s, 0] + abs(pose[s, i, 1]) * half[s, 1] + abs(pose[s, i, 2]) * half[s, 2]
            world[s, i] = c + pose[s, i, 3]
            world[s, 3 + i] = h
    n = 0
    for p in range(box_pairs.shape[0]):
        a, b = box_a[p], box_b[p]
        overlap = True
        for i in range(3):
            if not (world[a, i] - world[a, 3 + i] <= world[b, i] + world[b, 3 + i]
                    and world[b, i] - world[b, 3 + i] <= world[a, i] + world[a, 3 + i]):
                overlap = False
        if overlap:
            out[n] = box_pairs[p]
            n += 1
    for p in range(plane_pairs.shape[0]):
        a, k = plane_a[p], plane_k[p]
        lowest = world[a, 0] * planes_n[k, 0] + world[a, 1] * planes_n[k, 1] + world[a, 2] * planes_n[k, 2]
        reach = (world[a, 3] * abs(planes_n[k, 0]) + world[a, 4] * abs(planes_n[k, 1])
                 + world[a, 5] * abs(planes_n[k, 2]))
        if lowest - reach <= planes_d[k]:
            out[n] = plane_pairs[p]
            n += 1
    return n


@jit
def plane_contacts(kind, size, T, plane, points, depths, features, normal):
    """A sphere, capsule or box (``kind``: SPHERE, CAPSULE, BOX) of ``size`` at T (4, 4) on the plane
    whose frame is ``plane`` (4, 4): its sunk features (:func:`robot_dynamics.contact.plane.plane_contacts`).
    Writes ``normal`` (3,) and up to 8 rows; returns their count."""
    for i in range(3):
        normal[i] = plane[i, 2]
    d = normal[0] * plane[0, 3] + normal[1] * plane[1, 3] + normal[2] * plane[2, 3]
    k = 0
    if kind == BOX:
        for corner in range(8):
            x0 = (1.0 if corner & 1 else -1.0) * 0.5 * size[0]
            x1 = (1.0 if corner & 2 else -1.0) * 0.5 * size[1]
            x2 = (1.0 if corner & 4 else -1.0) * 0.5 * size[2]
            for i in range(3):
                points[k, i] = x0 * T[i, 0] + x1 * T[i, 1] + x2 * T[i, 2] + T[i, 3]
            s = points[k, 0] * normal[0] + points[k, 1] * normal[1] + points[k, 2] * normal[2] - d
            if s <= 0.0:
                for i in range(3):
                    points[k, i] -= 0.5 * s * normal[i]
                depths[k] = -s
                features[k] = corner
                k += 1
        return k
    r = size[0]
    ends = 1 if kind == SPHERE else 2
    for e in range(ends):
        for i in range(3):
            if kind == SPHERE:
                points[k, i] = T[i, 3]
            elif e == 0:
                points[k, i] = T[i, 3] - 0.5 * size[1] * T[i, 2]
            else:
                points[k, i] = T[i, 3] + 0.5 * size[1] * T[i, 2]
        s = points[k, 0] * normal[0] + points[k, 1] * normal[1] + points[k, 2] * normal[2] - d - r
        if s <= 0.0:
            for i in range(3):
                points[k, i] -= (r + 0.5 * s) * normal[i]
            depths[k] = -s
            features[k] = e
            k += 1
    return k


@jit
def corners_over_face(Ta, size_a, Tb, size_b, normal, corners, points, depths, features, face):
    """The common box-on-box case, box a resting inside the face of box b facing along ``normal`` (3,)
    (:func:`robot_dynamics.contact.plane._corners_over_face`).

    Args:
        Ta, Tb: (4, 4) world <- box; size_a, size_b: (3,) full edges [m].
        corners: (8, 4) scratch: per corner of a, its height above the face and its point in b's frame.
        points, depths, features: (>= 8, 3), (>= 8,), (>= 8,) the contacts; face: (3,) the face's
            outward normal, world.

    Returns:
        (status, count): NOT_FACE (no face of b within FACE_COS of ``normal``), GENERAL (a's four
        lowest corners are not all over the face: clip it) or DONE, with the rows written.
    """
    k, best, ck = 0, -1.0, 0.0
    for i in range(3):
        c = Tb[0, i] * normal[0] + Tb[1, i] * normal[1] + Tb[2, i] * normal[2]
        if abs(c) > best:
            k, best, ck = i, abs(c), c
    if best < FACE_COS:
        return NOT_FACE, 0
    sk = 1.0 if ck > 0 else -1.0
    u = 1 if k == 0 else 0
    v = 1 if k == 2 else 2
    hu, hv, hk = 0.5 * size_b[u], 0.5 * size_b[v], 0.5 * size_b[k]
    for corner in range(8):
        x = (1.0 if corner & 1 else -1.0) * 0.5 * size_a[0]
        y = (1.0 if corner & 2 else -1.0) * 0.5 * size_a[1]
        z = (1.0 if corner & 4 else -1.0) * 0.5 * size_a[2]
        for i in range(3):
            o = Tb[0, i] * (Ta[0, 3] - Tb[0, 3]) + Tb[1, i] * (Ta[1, 3] - Tb[1, 3]) + Tb[2, i] * (Ta[2, 3] - Tb[2, 3])
            M0 = Tb[0, i] * Ta[0, 0] + Tb[1, i] * Ta[1, 0] + Tb[2, i] * Ta[2, 0]
            M1 = Tb[0, i] * Ta[0, 1] + Tb[1, i] * Ta[1, 1] + Tb[2, i] * Ta[2, 1]
            M2 = Tb[0, i] * Ta[0, 2] + Tb[1, i] * Ta[1, 2] + Tb[2, i] * Ta[2, 2]
            corners[corner, 1 + i] = o + M0 * x + M1 * y + M2 * z
        corners[corner, 0] = sk * corners[corner, 1 + k] - hk
    for i in range(8):                          # the four lowest (ties by index) must lie over the face
        rank = 0
        for j in range(8):
            if corners[j, 0] < corners[i, 0] or (corners[j, 0] == corners[i, 0] and j < i):
                rank += 1
        if rank < 4 and not _over(corners, i, u, v, hu, hv):
            return GENERAL, 0
    for i in range(3):
        face[i] = sk * Tb[i, k]
    n = 0
    for i in range(8):
        s = corners[i, 0]
        if s <= 0.0 and _over(corners, i, u, v, hu, hv):
            for r in range(3):
                x = corners[i, 1] * Tb[r, 0] + corners[i, 2] * Tb[r, 1] + corners[i, 3] * Tb[r, 2]
                points[n, r] = x + Tb[r, 3] - 0.5 * s * face[r]
            depths[n] = -s
            features[n] = i
            n += 1
    return DONE, n


@jit
def _over(corners, i, u, v, hu, hv):
    return abs(corners[i, 1 + u]) <= hu + 1e-12 and abs(corners[i, 1 + v]) <= hv + 1e-12
