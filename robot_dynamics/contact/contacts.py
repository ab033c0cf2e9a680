"""Contacts: the record the narrow phase fills and the contact dynamics reads.

One preallocated struct of arrays, capacity ``N``, ``n`` rows in use
(rows ``0..n-1``; the rest are stale and never read). Filled once per step
by :func:`robot_dynamics.contact.detect.detect` (or any detector that
emits the same record), read by the contact force model.

Conventions (row ``i``):

- ``body_a[i]``, ``body_b[i]`` (int): the two bodies in contact.
  ``0..nb-1`` are the model's bodies in model order (links joined by fixed
  joints are one body), ``nb..nb+nf-1`` the world's free bodies in world
  file order, ``-1`` the static world (ground plane, static boxes).
  A detector puts the static world, if involved, in ``body_b``.
- ``point[i]`` (3,) [m], world frame: midway between the two surfaces,
  i.e. the deepest point of a on b's surface moved by ``depth/2`` along
  ``normal``.
- ``normal[i]`` (3,), world frame, unit, from body_b towards body_a: the
  normal force on a is ``+f_n normal``, on b ``-f_n normal``.
- ``depth[i]`` [m] >= 0: penetration along ``normal`` (0 at touching).
- ``geom_a[i]``, ``geom_b[i]`` (int): the shapes in the collision model
  (index into its shape list; ``-1`` where the detector has none).
- ``pair[i]`` (int): index of the shape pair in the detector's pair list,
  the same index every step for the same two shapes (``-1`` if none).
- ``radius_a[i]``, ``radius_b[i]`` [m]: each surface's radius of curvature
  at the point, which tells the dynamics how the point moves with the
  bodies within a step (:mod:`.dynamics`, "Where the force acts"):
  ``r`` for a sphere or a capsule (its centre or axis lies ``r`` inside
  along the normal), ``inf`` for a flat face (a plane, a box face that a
  corner or a round shape rests on), ``0`` for a corner or an edge, and
  where the detector cannot tell (coal's patches; the default).
- ``feature[i]`` (int): which contact of that pair, kept between steps
  while the contact persists (a box corner's index 0..7 on a plane, the
  order of the narrow phase's contacts otherwise; 0 for a single contact).
  ``(pair, feature)`` is the contact's identity from one step to the next
  (:meth:`Contacts.key`), which a friction model with tangential springs or
  warm starts needs.

Filling beyond the capacity does not raise: the row is dropped and counted
in ``dropped`` so a caller can grow the capacity; ``add`` returns False.
"""
import numpy as np

from ..errors import InputError


class Contacts:
    """Preallocated contact rows (see the module docstring for the conventions).

    Args:
        capacity: N, the most contacts one step can hold (int > 0).
    """

    def __init__(self, capacity=256):
        if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool) or capacity <= 0:
            raise InputError(f"capacity must be a positive integer, got {capacity!r}")
        N = int(capacity)
        self.capacity = N
        self.n = 0
        self.dropped = 0
        self.body_a = np.full(N, -1, dtype=np.int64)
        self.body_b = np.full(N, -1, dtype=np.int64)
        self.point = np.zeros((N, 3))
        self.normal = np.zeros((N, 3))
        self.depth = np.zeros(N)
        self.geom_a = np.full(N, -1, dtype=np.int64)
        self.geom_b = np.full(N, -1, dtype=np.int64)
        self.pair = np.full(N, -1, dtype=np.int64)
        self.feature = np.zeros(N, dtype=np.int64)
        self.radius_a = np.zeros(N)
        self.radius_b = np.zeros(N)

    def clear(self):
        """Empty the record (n = 0, dropped = 0); the arrays stay allocated."""
        self.n = 0
        self.dropped = 0

    def add(self, body_a, body_b, point, normal, depth, geom_a=-1, geom_b=-1, pair=-1, feature=0, radius_a=0.0,
            radius_b=0.0):
        """Append one contact; returns False (and counts it in ``dropped``) when full.

        Args:
            body_a, body_b: body indices (module docstring), int.
            point: (3,) [m] world frame, midway between the surfaces.
            normal: (3,) world frame, unit, from b towards a.
            depth: penetration [m] >= 0.
            geom_a, geom_b, pair, feature: identity of the contact (module docstring).
            radius_a, radius_b: the surfaces' radii of curvature [m] (0, r or inf; module docstring).
        """
        i = self.n
        if i >= self.capacity:
            self.dropped += 1
            return False
        self.body_a[i] = body_a
        self.body_b[i] = body_b
        self.point[i] = point
        self.normal[i] = normal
        self.depth[i] = depth
        self.geom_a[i] = geom_a
        self.geom_b[i] = geom_b
        self.pair[i] = pair
        self.feature[i] = feature
        self.radius_a[i] = radius_a
        self.radius_b[i] = radius_b
        self.n = i + 1
        return True

    def add_rows(self, body_a, body_b, points, normal, depths, geom_a, geom_b, pair, features, radius_a=0.0,
                 radius_b=0.0):
        """Append k contacts of one shape pair at once (one normal); the rows beyond
        the capacity are dropped and counted. Returns the number of rows added.

        Args:
            points: (k, 3) [m] world; normal: (3,) unit, from b towards a;
            depths: (k,) [m] >= 0; features: (k,) int; radius_a, radius_b: [m] a float
            for all, or a (k,) array; the rest as :meth:`add`.
        """
        i, k = self.n, len(depths)
        m = min(k, self.capacity - i)
        self.dropped += k - m
        j = i + m
        self.body_a[i:j] = body_a
        self.body_b[i:j] = body_b
        self.point[i:j] = points[:m]
        self.normal[i:j] = normal
        self.depth[i:j] = depths[:m]
        self.geom_a[i:j] = geom_a
        self.geom_b[i:j] = geom_b
        self.pair[i:j] = pair
        self.feature[i:j] = features[:m]
        self.radius_a[i:j] = radius_a[:m] if isinstance(radius_a, np.ndarray) else radius_a
        self.radius_b[i:j] = radius_b[:m] if isinstance(radius_b, np.ndarray) else radius_b
        self.n = j
        return m

    def key(self, i):
        """The identity of row i between steps: (pair, feature)."""
        return int(self.pair[i]), int(self.feature[i])

    def __len__(self):
        return self.n

    def __repr__(self):
        return f"Contacts(n={self.n}, capacity={self.capacity}, dropped={self.dropped})"
