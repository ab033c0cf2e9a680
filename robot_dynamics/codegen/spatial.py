"""Spatial algebra on folded expressions (Featherstone, *Rigid Body Dynamics
Algorithms*, ch. 2), for the C generators.

Same conventions as the compiled kernels (:mod:`robot_dynamics.algorithms.kernels`):
motion vectors ``[w; v]`` and force vectors ``[n; f]`` (angular first, at
the frame origin), 6-lists of :class:`~robot_dynamics.codegen.expr.Expr`.
Body i's transform from its parent is Featherstone's ``X_i = X_J(q_i) X_T``:
the tree transform ``X_T`` (the constant placement ``(R0, p0)`` of the
joint frame in the parent body frame) then the joint's own motion
``X_J`` (a rotation ``Rot(a, q)`` about the axis a, or a translation
``a q``); the body frame is the joint frame. Rotations map child
coordinates to parent coordinates, ``p`` is the child origin in parent
coordinates.
"""
from .expr import ONE, ZERO, add, const, dot, mul, neg, sub


def cross(a, b):
    """a x b for 3-lists."""
    return [sub(mul(a[1], b[2]), mul(a[2], b[1])),
            sub(mul(a[2], b[0]), mul(a[0], b[2])),
            sub(mul(a[0], b[1]), mul(a[1], b[0]))]


def matvec(R, x):
    """R x for a 3x3 list of lists R."""
    return [dot(R[r], x) for r in range(3)]


def matTvec(R, x):
    """R^T x."""
    return [dot([R[0][c], R[1][c], R[2][c]], x) for c in range(3)]


def constants(a):
    return [const(x) for x in a]


SNAP = 4 * 2.0 ** -52          # rotation entries this close to 0 or +-1 are taken as exact


def constant_matrix(R):
    """A placement's rotation as literals. An entry within 4 eps (8.9e-16) of 0
    or +-1 is taken as exactly that: a URDF rpy of pi/2 leaves cos(pi/2) =
    6.1e-17, which would otherwise cost a multiplication per use (474 in the
    Panda's code) for a change of the results near 1e-16 relative."""
    def snap(x):
        x = float(x)
        if abs(x) < SNAP:
            return 0.0
        if abs(abs(x) - 1.0) < SNAP:
            return 1.0 if x > 0 else -1.0
        return x
    return [[const(snap(R[r][c])) for c in range(3)] for r in range(3)]


def rotation(axis, s, c, t):
    """Rot(a, q) = c 1 + s [a x] + t a a^T (Rodrigues, t = 1 - c), 3x3 of
    expressions; an axis along +-x, +-y, +-z gives the exact planar rotation."""
    a = [float(x) for x in axis]
    for k in range(3):
        if abs(a[k]) == 1.0 and a[(k + 1) % 3] == 0.0 and a[(k + 2) % 3] == 0.0:
            sk = s if a[k] > 0 else neg(s)
            i, j = (k + 1) % 3, (k + 2) % 3
            R = [[ZERO] * 3 for _ in range(3)]
            R[k][k] = ONE
            R[i][i], R[j][j], R[i][j], R[j][i] = c, c, neg(sk), sk
            return R
    K = [[ZERO, const(-a[2]), const(a[1])], [const(a[2]), ZERO, const(-a[0])], [const(-a[1]), const(a[0]), ZERO]]
    return [[add(c if r == col else ZERO, mul(s, K[r][col]), mul(t, const(a[r] * a[col])))
             for col in range(3)] for r in range(3)]


class Joint:
    """Body i's joint in expressions: its tree transform (R0, p0), the joint
    rotation ``Rot`` (revolute) or translation ``d`` (prismatic), the motion
    subspace S = [a; 0] or [0; a] (body frame)."""

    def __init__(self, R0, p0, axis, prismatic, Rot=None, d=None):
        self.R0, self.p0, self.prismatic = constant_matrix(R0), constants(p0), prismatic
        self.a = constants(axis)
        self.Rot, self.d = Rot, d
        self.S = ([ZERO] * 3 + self.a) if prismatic else (self.a + [ZERO] * 3)


def X_motion(J, m, lets):
    """X_i m: a motion vector from parent to body coordinates.
    X_T: w1 = R0^T w, v1 = R0^T (v + w x p0); X_J: rotated by Rot^T, or
    v2 = v1 + w1 x d for a prismatic joint. ``lets`` names intermediate results."""
    w, v = m[:3], m[3:]
    w1 = lets(matTvec(J.R0, w))
    v1 = lets(matTvec(J.R0, [add(x, y) for x, y in zip(v, cross(w, J.p0))]))
    if J.prismatic:
        return lets(w1 + [add(x, y) for x, y in zip(v1, cross(w1, J.d))])
    return lets(matTvec(J.Rot, w1) + matTvec(J.Rot, v1))


def XT_force(J, f, lets):
    """X_i^T f: a force from body to parent coordinates (n' = R n + p x f', f' = R f)."""
    n, g = f[:3], f[3:]
    if J.prismatic:
        n = lets([add(x, y) for x, y in zip(n, cross(J.d, g))])
    else:
        n, g = lets(matvec(J.Rot, n)), lets(matvec(J.Rot, g))
    g1 = lets(matvec(J.R0, g))
    n1 = [add(x, y) for x, y in zip(matvec(J.R0, n), cross(J.p0, g1))]
    return lets(n1 + g1)


def crm(v, m):
    """v x m (motion cross product): [w x mw; w x mv + v x mw]."""
    w, u = v[:3], v[3:]
    return cross(w, m[:3]) + [add(x, y) for x, y in zip(cross(w, m[3:]), cross(u, m[:3]))]


def crf(v, f):
    """v x* f (force cross product): [w x n + u x f; w x f]."""
    w, u = v[:3], v[3:]
    return [add(x, y) for x, y in zip(cross(w, f[:3]), cross(u, f[3:]))] + cross(w, f[3:])


def inertia_times(m, h, I, v):
    """I v for the spatial inertia (m, h, I_O): n = I_O w + h x u, f = m u - h x w.
    ``I`` is a symmetric 3x3 list of lists (shared entries)."""
    w, u = v[:3], v[3:]
    hu, hw = cross(h, u), cross(h, w)
    return ([add(dot(I[r], w), hu[r]) for r in range(3)]
            + [sub(mul(m, u[r]), hw[r]) for r in range(3)])


def sym(entries):
    """A symmetric 3x3 list of lists from its upper entries (00, 01, 02, 11, 12, 22)."""
    s00, s01, s02, s11, s12, s22 = entries
    return [[s00, s01, s02], [s01, s11, s12], [s02, s12, s22]]


def rotate_sym(R, S):
    """R S R^T for symmetric S, as a symmetric 3x3 (upper entries computed once)."""
    T = [[dot(S[r], R[c]) for c in range(3)] for r in range(3)]        # T = S R^T
    return sym([dot(R[r], [T[0][c], T[1][c], T[2][c]]) for r, c in _UPPER])


def rotate_full(R, B):
    """R B R^T for a general 3x3 B."""
    T = [[dot(B[r], R[c]) for c in range(3)] for r in range(3)]
    return [[dot(R[r], [T[0][c], T[1][c], T[2][c]]) for c in range(3)] for r in range(3)]


_UPPER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


def skew(p):
    return [[ZERO, neg(p[2]), p[1]], [p[2], ZERO, neg(p[0])], [neg(p[1]), p[0], ZERO]]


def matmul(A, B):
    return [[dot(A[r], [B[0][c], B[1][c], B[2][c]]) for c in range(3)] for r in range(3)]


def transpose(A):
    return [[A[c][r] for c in range(3)] for r in range(3)]
