"""The contacts' springs: each contact's stiffness and damping from the inverse mass
its bodies show at its point, kept within what the step allows when contacts couple.

For contact i with normal n_i, its bodies' velocity at the point answers an
impulse through the inverse mass matrix (Handbook of Robotics, sec. 3.3.4,
eq. 3.55's ``Lambda^-1``): in the generalized coordinates ``y = (qd, v_1,
w_1, ..., v_nf, w_nf)`` of the arm and the free bodies, contact i's
direction t is the row ``g = t^T (J_a - J_b)`` (``J`` the point's
Jacobian: the arm's ``J_p(q)``, a free body's ``[1, -[r]]``), and
``W = G M^-1 G^T`` with ``M = blkdiag(M_arm(q), m_1 1, I_1, ...)`` (I the
world-frame inertia about the COM). Then:

- the normal spring of contact i rests on ``m_i = 1 / W_ii`` (n_i's rows):
  ``k_i = m_i w^2``, ``c_i = 2 zeta m_i w`` (:meth:`.ContactParameters.spring`),
  ``m_i`` at most the arm's and the free bodies' total mass (a direction
  the bodies can hardly move along, ``W_ii ~ 0``, a link turning about the
  normal, would otherwise get an unbounded spring);
- the tangential one on the lightest tangential mass, ``1 / max eig`` of
  contact i's own 3 x 3 block projected on its tangent plane;
- contacts that share bodies couple: their normal springs together have
  modes ``w^2 eig(D^-1/2 W D^-1/2)``, ``D = diag(W)``, up to ``w^2 chi``
  with chi the largest eigenvalue of each group of contacts moving the
  same bodies (the arm is one). Where ``chi > CHI`` (4: the step's margin,
  ``w = 0.2 / dt`` leaves ``2 w`` stable), the group's springs are scaled
  by ``CHI / chi`` and their dampers by its square root, so the stiffest
  mode stays at ``2 w`` with ``zeta`` at most 2 (a flat box's four
  corners have chi = 1.5 and keep ``m_i w^2``; a mesh pressed on a table,
  twenty points of one patch, would otherwise ring at ``4.5 w``).
"""
import numpy as np

from ..algorithms.crba import mass_matrix
from ..algorithms.task_space import jacobian

CHI = 4.0


def contact_springs(stepper, q):
    """(k, c), each (capacity, 2) [N/m], [N s/m]: ``[normal, tangential]`` for every
    row of ``stepper.contacts`` (the committed contacts, their bodies at q (nq,))."""
    s, c = stepper, stepper.contacts
    n, N = c.n, c.capacity
    k, cc = np.zeros((N, 2)), np.zeros((N, 2))
    if n == 0:
        return k, cc
    G = _rows(s, q)                                          # (3 n, nv + 6 nf): normal, then 2 tangents
    Minv = _inverse_mass(s, q)
    W = G @ Minv @ G.T
    Wn = W[0::3, 0::3]                                       # the normals' block
    scale = _group_scale(s, Wn)
    prm, dt = s.parameters, s.dt
    heaviest = s.model.total_mass + float(np.sum(s.bodies.mass))          # the most any contact can carry
    for i in range(n):
        w_n = Wn[i, i]
        w_t = np.linalg.eigvalsh(W[3 * i + 1:3 * i + 3, 3 * i + 1:3 * i + 3]).max()
        for col, w in ((0, w_n), (1, w_t)):
            k[i, col], cc[i, col] = prm.spring(1.0 / max(w, 1.0 / heaviest), dt)
        k[i] *= scale[i]
        cc[i] *= np.sqrt(scale[i])
    return k, cc


def _tangents(n):
    """Two unit vectors completing n (3,) to an orthonormal frame."""
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


def _rows(s, q):
    """G (3 n, nv + 6 nf): each contact's normal and two tangent rows t^T (J_a - J_b)."""
    c, model, nb = s.contacts, s.model, s.model.nb
    nv, nf = model.nv, len(s.bodies)
    G = np.zeros((3 * c.n, nv + 6 * nf))
    cache = {}
    for i in range(c.n):
        n = c.normal[i]
        T = np.array([n, *_tangents(n)])                     # (3, 3) rows: n, t1, t2
        x = c.point[i]
        for b, sign in ((c.body_a[i], 1.0), (c.body_b[i], -1.0)):
            if b < 0:
                continue
            if b < nb:
                if b not in cache:
                    link = model.link_names[model.body_link[b]]
                    L = model.link_pose_rows[model.body_link[b]]
                    origin = s.Rw[b] @ L[[3, 7, 11]] + s.pw[b]
                    cache[b] = (jacobian(model, q, link), origin)     # (6, nv) at the link origin
                J, origin = cache[b]
                r = x - origin
                Jp = J[:3] - _skew(r) @ J[3:]                # v_x = v_o + w x r
                G[3 * i:3 * i + 3, :nv] += sign * T @ Jp
            else:
                f = b - nb
                r = x - s.bodies.p[f]
                G[3 * i:3 * i + 3, nv + 6 * f:nv + 6 * f + 3] += sign * T
                G[3 * i:3 * i + 3, nv + 6 * f + 3:nv + 6 * f + 6] += sign * T @ -_skew(r)
    return G


def _inverse_mass(s, q):
    """blkdiag(M_arm(q)^-1, 1/m_1, I_1^-1, ...) over (qd, v_1, w_1, ...)."""
    nv, nf = s.model.nv, len(s.bodies)
    Minv = np.zeros((nv + 6 * nf, nv + 6 * nf))
    Minv[:nv, :nv] = np.linalg.inv(mass_matrix(s.model, q))
    b = s.bodies
    for f in range(nf):
        o = nv + 6 * f
        Minv[o:o + 3, o:o + 3] = np.eye(3) / b.mass[f]
        Minv[o + 3:o + 6, o + 3:o + 6] = b.R[f] @ b.inertia_inv[f] @ b.R[f].T
    return Minv


def _group_scale(s, Wn):
    """(n,) each contact's factor min(1, CHI / chi) of its group (module docstring)."""
    c, nb = s.contacts, s.model.nb
    n = c.n
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    owner = {}
    for i in range(n):                                       # group contacts that move a body in common
        for b in (c.body_a[i], c.body_b[i]):
            if b < 0:
                continue
            key = -1 if b < nb else b                        # the arm's bodies are one
            if key in owner:
                parent[root(i)] = root(owner[key])
            else:
                owner[key] = i
    scale = np.ones(n)
    groups = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    for rows in groups.values():
        d = np.sqrt(np.diag(Wn)[rows])
        live = d > 1e-6 * max(d.max(), 1e-300)
        if live.sum() < 2:
            continue
        idx = np.array(rows)[live]
        B = Wn[np.ix_(idx, idx)] / np.outer(d[live], d[live])
        chi = np.linalg.eigvalsh(B).max()
        if chi > CHI:
            scale[rows] = CHI / chi
    return scale


def _skew(r):
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
