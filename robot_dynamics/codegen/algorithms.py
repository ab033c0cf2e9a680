"""The book's algorithms, run once per model on folded expressions: each
function emits the unrolled C statements of one algorithm for one tree.

Same conventions and results as the compiled kernels
(:mod:`robot_dynamics.algorithms.rnea`, ``crba``, ``aba``): body frames,
Featherstone's spatial order (angular first), gravity as the fictitious
base acceleration ``a_0 = [0; -g]`` (Handbook eq. 3.39). Mimic joints:
body i's joint position is ``multiplier_i * q[k_i] + offset_i``, its
velocity and acceleration ``multiplier_i * qd[k_i]``; torques map back as
``tau = G^T tau_bodies`` and ``M = G^T M_bodies G`` (``G = model.coupling``).
The rotors' reflected inertia ``model.body_armature`` (a literal, folded
away where zero) adds ``I_a qdd_i`` to body i's joint torque, ``I_a`` to
``M_ii`` and to the ABA's ``D_i`` (docs/ACTUATORS.md).
A floating or planar root as the kernels run it (:mod:`robot_dynamics.model.configuration`):
the root chain at zero, the root's accelerations shifted by ``g_root(q) + b(v)``.
"""
import math

from .expr import ONE, ZERO, add, call, const, div, dot, mul, neg, sub, var
from .spatial import (Joint, XT_force, X_motion, constants, crf, crm, cross, inertia_times, matmul, matvec,
                      rotate_full, rotate_sym, rotation, skew, sym, transpose)


def inputs(name, n):
    """The C array argument ``name`` as n expressions name[0] .. name[n-1]."""
    return [var("%s[%d]" % (name, k)) for k in range(n)]


def zeros(n):
    return [ZERO] * n


def coordinate(model, i, x):
    """Body i's share of a velocity-like vector x (nq,): multiplier_i * x[k_i]."""
    return mul(const(model.body_multiplier[i]), x[int(model.body_coordinate[i])])


def joints(model, em, q, bodies=None):
    """Emit every body's joint transform at q (nv,), the kernels' coordinates
    (:func:`kernel_positions`): sin and cos of revolute joint angles (one pair
    per body; folded for a literal angle, the root chain's zeros), Rot(a, q)
    or the translation a q. Returns the list of
    :class:`~robot_dynamics.codegen.spatial.Joint` (None for a body not in
    ``bodies``, when given: a frame's path)."""
    out, keep = [], None if bodies is None else set(bodies)
    for i in range(model.nb):
        if keep is not None and i not in keep:
            out.append(None)
            continue
        X = model.joint_placement[i]
        prismatic = int(model.joint_type[i]) == 1
        J = Joint(X[:3, :3], X[:3, 3], model.axis[i], prismatic)
        qi = em.let(add(coordinate(model, i, q), const(model.body_offset[i])))
        if prismatic:
            J.d = em.lets([mul(a, qi) for a in J.a])
        elif qi.value is not None:
            s, c = const(math.sin(qi.value)), const(math.cos(qi.value))
            J.Rot = [em.lets(row) for row in rotation(model.axis[i], s, c, const(1.0 - c.value))]
        else:
            s, c = em.let(call("sin", qi)), em.let(call("cos", qi))
            t = em.let(sub(ONE, c))
            J.Rot = [em.lets(row) for row in rotation(model.axis[i], s, c, t)]
        out.append(J)
    return out


# --- a floating or planar root (robot_dynamics.model.configuration) ------------------------------
def kernel_positions(model, q):
    """The kernels' coordinates (nv,) of q (nq,): the root chain at zero, then the
    joints. A fixed base: q itself."""
    return [ZERO] * model.root_nv + list(q[model.root_nq:])


def root_gravity(model, em, q):
    """(nv_root,) the gravity acceleration in the root's coordinates, ``R^T g``
    (linear; zero angular), with R the base's rotation from q: the unit
    quaternion (x, y, z, w) at q[3:7], normalised here, or the planar angle
    q[2]. The planar root's part along the plane normal is the kernels' own
    gravity (:func:`kernel_gravity`). The Python side of
    :func:`robot_dynamics.model.configuration.root_gravity`."""
    gp = model.root_placement[:3, :3].T @ model.gravity            # Rp^T g, a literal
    if model.root_joint == "floating":
        R = base_rotation(em, q)
        return em.lets([dot([R[r][k] for r in range(3)], constants(gp)) for k in range(3)]) + [ZERO] * 3
    s, c = em.let(call("sin", q[2])), em.let(call("cos", q[2]))
    return em.lets([add(mul(c, const(gp[0])), mul(s, const(gp[1]))),
                    sub(mul(c, const(gp[1])), mul(s, const(gp[0]))), ZERO])


def base_rotation(em, q):
    """The rotation world <- base of a floating root: the quaternion (x, y, z, w)
    at q[3:7], normalised here (:func:`robot_dynamics.model.configuration.quaternion_matrix`)."""
    x, y, z, w = q[3:7]
    inv = em.let(div(ONE, call("sqrt", dot(q[3:7], q[3:7]))))
    x, y, z, w = em.lets([mul(e, inv) for e in (x, y, z, w)])
    two = const(2.0)
    R = [[sub(ONE, mul(two, add(mul(y, y), mul(z, z)))), mul(two, sub(mul(x, y), mul(z, w))),
          mul(two, add(mul(x, z), mul(y, w)))],
         [mul(two, add(mul(x, y), mul(z, w))), sub(ONE, mul(two, add(mul(x, x), mul(z, z)))),
          mul(two, sub(mul(y, z), mul(x, w)))],
         [mul(two, sub(mul(x, z), mul(y, w))), mul(two, add(mul(y, z), mul(x, w))),
          sub(ONE, mul(two, add(mul(x, x), mul(y, y))))]]
    return [em.lets(row) for row in R]


def root_bias(model, em, v):
    """(nv_root,) b(v), the root chain's velocity-product acceleration that a 6-DOF
    (3-DOF) joint does not have (:func:`robot_dynamics.model.configuration.root_bias`)."""
    if model.root_joint == "floating":
        u, w = v[:3], v[3:6]
        return em.lets(cross(u, w) + [mul(w[1], w[2]), neg(mul(w[0], w[2])), mul(w[0], w[1])])
    return em.lets([mul(v[1], v[2]), neg(mul(v[0], v[2])), ZERO])


def kernel_gravity(model):
    """(3,) the gravity the kernels apply in the base frame: the model's gravity
    for a fixed base, none for a floating root (it enters through the root's
    acceleration), the part along the plane normal for a planar root."""
    if model.root_joint is None:
        return [float(x) for x in model.gravity]
    if model.root_joint == "floating":
        return [0.0, 0.0, 0.0]
    return [0.0, 0.0, float((model.root_placement[:3, :3].T @ model.gravity)[2])]


def shifted(model, em, qdd, shift):
    """qdd with the root's coordinates less ``shift`` (nv_root,): the kernels'
    accelerations ``qdd_root - (g_root + b(v))``."""
    nr = model.root_nv
    return [em.let(sub(qdd[k], shift[k])) for k in range(nr)] + list(qdd[nr:])


def body_inertia(model, i):
    """(m, h, I_O) of body i as literals (body frame; kg, kg m, kg m^2)."""
    P = model.body_parameters[i]
    return const(P[0]), constants(P[1:4]), [[const(x) for x in row] for row in model.body_inertia[i]]


def rnea(model, em, J, qd, qdd, gravity):
    """Emit tau = RNEA(q, qd, qdd) (Featherstone Table 5.1, Handbook Algorithm 3.1).

    Args:
        J: the joints at q (:func:`joints`); qd, qdd: (nq,) expressions
        (zeros fold the velocity or acceleration terms away); gravity:
        (3,) floats in the base frame [m/s^2], zeros for none.
    Returns (nq,) expressions of the joint torques [N m | N].
    """
    nb, lets = model.nb, em.lets
    v, a, f = {}, {}, {}
    v[-1], a[-1] = zeros(6), [ZERO] * 3 + [const(-g) for g in gravity]      # a_0 = [0; -g]
    for i in range(nb):
        p = int(model.parent[i])
        vJ = [mul(s, coordinate(model, i, qd)) for s in J[i].S]                 # vJ = S qd_i
        v[i] = lets([add(x, y) for x, y in zip(X_motion(J[i], v[p], lets), vJ)])   # v_i = X_i v_p + vJ
        a[i] = lets([add(x, mul(s, coordinate(model, i, qdd)), z)                # a_i = X_i a_p + S qdd_i + v_i x vJ
                     for x, s, z in zip(X_motion(J[i], a[p], lets), J[i].S, crm(v[i], vJ))])
        m, h, I = body_inertia(model, i)
        Iv = lets(inertia_times(m, h, I, v[i]))
        f[i] = lets([add(x, y) for x, y in zip(inertia_times(m, h, I, a[i]), crf(v[i], Iv))])  # f_i = I a + v x* I v
    tau = zeros(model.nv)
    for i in range(nb - 1, -1, -1):
        k = int(model.body_coordinate[i])
        ti = add(dot(J[i].S, f[i]), mul(const(model.body_armature[i]), coordinate(model, i, qdd)))  # S^T f + I_a qdd_i
        tau[k] = em.let(add(tau[k], mul(const(model.body_multiplier[i]), ti)))                  # tau = G^T tau_bodies
        p = int(model.parent[i])
        if p >= 0:
            f[p] = lets([add(x, y) for x, y in zip(f[p], XT_force(J[i], f[i], lets))])       # f_p += X_i^T f_i
    return tau


def inertia_to_parent(J, m, h, I, em):
    """The rigid-body inertia (m, h, I_O) of body coordinates in parent coordinates
    (Featherstone eq. 2.66, ``X^T I X``; :func:`robot_dynamics.model.inertia.transform_inertia`)."""
    if J.prismatic:
        h, I = _shift_rigid(m, h, I, J.d, em)
    else:
        h, I = em.lets(matvec(J.Rot, h)), _lets_sym(em, rotate_sym(J.Rot, I))
    h, I = em.lets(matvec(J.R0, h)), _lets_sym(em, rotate_sym(J.R0, I))
    return _shift_rigid(m, h, I, J.p0, em)


def _shift_rigid(m, h, I, p, em):
    """h' = h + m p; I' = I + m ((p.p) 1 - p p^T) + 2 (p.h) 1 - p h^T - h p^T."""
    pp, ph = em.let(dot(p, p)), em.let(dot(p, h))
    diag = em.let(add(mul(m, pp), mul(const(2.0), ph)))
    entries = [add(I[r][c], diag if r == c else ZERO, neg(mul(m, mul(p[r], p[c]))), neg(mul(p[r], h[c])),
                   neg(mul(h[r], p[c]))) for r, c in _UPPER]
    return em.lets([add(x, mul(m, y)) for x, y in zip(h, p)]), _lets_sym(em, sym(entries))


_UPPER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


def _lets_sym(em, S):
    return sym(em.lets([S[r][c] for r, c in _UPPER]))


def crba(model, em, J):
    """Emit the bodies' joint-space inertia (Featherstone Table 6.2, composite
    rigid bodies). Returns {(i, j): expression} for j == i or j an ancestor of i."""
    IC = {i: body_inertia(model, i) for i in range(model.nb)}
    Mb = {}
    for i in range(model.nb - 1, -1, -1):
        F = em.lets(inertia_times(*IC[i], J[i].S))                  # F = IC_i S_i
        Mb[i, i] = em.let(add(dot(J[i].S, F), const(model.body_armature[i])))   # M_ii = S_i^T F + I_a
        j = i
        while int(model.parent[j]) >= 0:
            F = XT_force(J[j], F, em.lets)                           # F = X_j^T F
            j = int(model.parent[j])
            Mb[i, j] = em.let(dot(J[j].S, F))                        # M_ij = S_j^T F
        p = int(model.parent[i])
        if p >= 0:                                                   # IC_p += X_i^T IC_i X_i
            m, h, I = IC[i]
            h1, I1 = inertia_to_parent(J[i], m, h, I, em)
            mp, hp, Ip = IC[p]
            IC[p] = (em.let(add(mp, m)), em.lets([add(x, y) for x, y in zip(hp, h1)]),
                     _lets_sym(em, [[add(Ip[r][c], I1[r][c]) for c in range(3)] for r in range(3)]))
    return Mb


def joint_space(model, Mb):
    """M = G^T M_bodies G as an (nq, nq) list of lists (symmetric, exact zeros folded)."""
    n = model.nv
    M = [[ZERO] * n for _ in range(n)]
    for (i, j), e in Mb.items():
        ki, kj = int(model.body_coordinate[i]), int(model.body_coordinate[j])
        w = const(model.body_multiplier[i] * model.body_multiplier[j])
        M[ki][kj] = add(M[ki][kj], mul(w, e))
        if i != j:
            M[kj][ki] = add(M[kj][ki], mul(w, e))
    return M


def aba(model, em, J, qd, tau, gravity):
    """Emit qdd = ABA(q, qd, tau) for a tree without mimic joints
    (Featherstone Table 7.1, Handbook Algorithm 3.4). Returns (nq,) expressions."""
    nb, lets, coord = model.nb, em.lets, [int(k) for k in model.body_coordinate]
    v, c, IA, pA = {-1: zeros(6)}, {}, {}, {}
    for i in range(nb):                                              # pass 1: velocities, bias forces
        p = int(model.parent[i])
        vJ = [mul(s, qd[coord[i]]) for s in J[i].S]
        v[i] = lets([add(x, y) for x, y in zip(X_motion(J[i], v[p], lets), vJ)])
        c[i] = lets(crm(v[i], vJ))                                   # c_i = v_i x vJ
        m, h, I = body_inertia(model, i)
        IA[i] = (I, skew(h), [[m if r == k else ZERO for k in range(3)] for r in range(3)])
        pA[i] = lets(crf(v[i], inertia_times(m, h, I, v[i])))        # pA_i = v_i x* I_i v_i
    U, D, u = {}, {}, {}
    for i in range(nb - 1, -1, -1):                                  # pass 2: articulated inertias
        U[i] = lets(_ia_times(IA[i], J[i].S))                         # U_i = IA_i S_i
        D[i] = em.let(add(dot(J[i].S, U[i]), const(model.body_armature[i])))   # D_i = S_i^T U_i + I_a
        u[i] = em.let(sub(tau[coord[i]], dot(J[i].S, pA[i])))          # u_i = tau_i - S_i^T pA_i
        p = int(model.parent[i])
        if p < 0:
            continue
        Dinv = em.let(div(ONE, D[i]))
        W = lets([mul(x, Dinv) for x in U[i]])
        A, B, C = IA[i]
        Ia = (_lets_sym(em, [[sub(A[r][k], mul(U[i][r], W[k])) for k in range(3)] for r in range(3)]),
              [lets([sub(B[r][k], mul(U[i][r], W[3 + k])) for k in range(3)]) for r in range(3)],
              _lets_sym(em, [[sub(C[r][k], mul(U[i][3 + r], W[3 + k])) for k in range(3)] for r in range(3)]))
        uD = em.let(mul(u[i], Dinv))
        pa = [add(x, y, mul(z, uD)) for x, y, z in zip(pA[i], _ia_times(Ia, c[i]), U[i])]  # pa = pA + Ia c + U u / D
        A1, B1, C1 = articulated_to_parent(J[i], Ia, em)                                     # IA_p += X^T Ia X
        Ap, Bp, Cp = IA[p]
        IA[p] = (_lets_sym(em, _plus(Ap, A1)), [lets(r) for r in _plus(Bp, B1)], _lets_sym(em, _plus(Cp, C1)))
        pA[p] = lets([add(x, y) for x, y in zip(pA[p], XT_force(J[i], lets(pa), lets))])     # pA_p += X^T pa
    a, qdd = {-1: [ZERO] * 3 + [const(-g) for g in gravity]}, zeros(model.nv)
    for i in range(nb):                                              # pass 3: accelerations
        p = int(model.parent[i])
        a1 = lets([add(x, y) for x, y in zip(X_motion(J[i], a[p], lets), c[i])])           # a' = X_i a_p + c_i
        qdd[coord[i]] = em.let(div(sub(u[i], dot(U[i], a1)), D[i]))                         # qdd_i = (u_i - U_i^T a') / D_i
        a[i] = lets([add(x, mul(s, qdd[coord[i]])) for x, s in zip(a1, J[i].S)])            # a_i = a' + S_i qdd_i
    return qdd


def _plus(X, Y):
    return [[add(X[r][k], Y[r][k]) for k in range(3)] for r in range(3)]


def _ia_times(IA, m):
    """IA m for the articulated inertia [[A, B], [B^T, C]] (angular block first)."""
    A, B, C = IA
    w, v = m[:3], m[3:]
    return ([add(dot(A[r], w), dot(B[r], v)) for r in range(3)]
            + [add(dot([B[0][r], B[1][r], B[2][r]], w), dot(C[r], v)) for r in range(3)])


def articulated_to_parent(J, Ia, em):
    """X_i^T Ia X_i for a symmetric 6x6 inertia given as blocks (A, B, C):
    X_J then X_T, each a rotation (A' = R A R^T, B' = R B R^T, C' = R C R^T)
    or a shift by p (A'' = A - B [p] - (B [p])^T - [p] C [p], B'' = B + [p] C)."""
    A, B, C = Ia
    if J.prismatic:
        A, B, C = _rotate(*_shift(A, B, C, J.d, em), J.R0, em)
    elif _axis_aligned(J.R0):                    # R0 a signed permutation: two cheap rotations
        A, B, C = _rotate(*_rotate(A, B, C, J.Rot, em), J.R0, em)
    else:                                        # one rotation by R = R0 Rot (as the kernels' jcalc)
        A, B, C = _rotate(A, B, C, [em.lets(r) for r in matmul(J.R0, J.Rot)], em)
    return _shift(A, B, C, J.p0, em)


def _axis_aligned(R):
    """True when every row of the literal rotation R has one nonzero entry."""
    return all(sum(e.value != 0.0 for e in row) == 1 for row in R)


def _rotate(A, B, C, R, em):
    return (_lets_sym(em, rotate_sym(R, A)), [em.lets(r) for r in rotate_full(R, B)],
            _lets_sym(em, rotate_sym(R, C)))


def _shift(A, B, C, p, em):
    px = skew(p)
    Bp = [em.lets(r) for r in matmul(B, px)]
    pC = [em.lets(r) for r in matmul(px, C)]
    pCp = matmul(pC, px)
    BpT = transpose(Bp)
    A2 = [[sub(sub(A[r][k], Bp[r][k]), add(BpT[r][k], pCp[r][k])) for k in range(3)] for r in range(3)]
    return _lets_sym(em, A2), [em.lets([add(x, y) for x, y in zip(B[r], pC[r])]) for r in range(3)], C


def cholesky_solve(em, M, b):
    """Emit x = M^-1 b by M = L L^T (Cholesky, unrolled; exact zeros of M
    fold away where they fill in no entry of L). Featherstone sec. 6.1 ("FDcrb")."""
    n = len(b)
    L, inv = [[ZERO] * n for _ in range(n)], [None] * n
    for j in range(n):
        d = sub(M[j][j], add(*(mul(L[j][k], L[j][k]) for k in range(j))))
        L[j][j] = em.let(call("sqrt", d))
        inv[j] = em.let(div(ONE, L[j][j]))
        for i in range(j + 1, n):
            L[i][j] = em.let(mul(sub(M[i][j], add(*(mul(L[i][k], L[j][k]) for k in range(j)))), inv[j]))
    y = [None] * n
    for i in range(n):                                               # L y = b
        y[i] = em.let(mul(sub(b[i], add(*(mul(L[i][k], y[k]) for k in range(i)))), inv[i]))
    x = [None] * n
    for i in range(n - 1, -1, -1):                                   # L^T x = y
        x[i] = em.let(mul(sub(y[i], add(*(mul(L[k][i], x[k]) for k in range(i + 1, n)))), inv[i]))
    return x
