"""Compiled kernels of the contact dynamics (issue 35): the free bodies' chart and
Newton-Euler equations, the contact law at a stage and between steps, and the
closed-form plane detector.

They live here, in a layer the numba cache is keyed on (robot_dynamics/cache.py),
and are documented with the modules that use them:
:mod:`robot_dynamics.contact.free_bodies` (the chart ``R = exp([xi]) R0``, ``w =
J_l(xi) xi'``, Newton-Euler at the centre of mass), :mod:`robot_dynamics.contact.dynamics`
(the law: ``f_n = max(0, k d - c v_n)``, the anchored tangential spring clipped to
``mu f_n``; the body and array conventions) and :mod:`robot_dynamics.contact.analytic`.
Each kernel works in the caller's preallocated arrays; a call makes a few (3,) scratch vectors, none
per contact or per body.
"""
import numpy as np

from .kernels import jit, joint_coordinate, parent_row, world_poses
from ..model.packed import AXIS, JTYPE, PRISMATIC


# --- free bodies: SO(3) chart and Newton-Euler (robot_dynamics.contact.free_bodies) ---

@jit
def _coefficients(t):
    """(1 - cos t) / t^2 and (t - sin t) / t^3, by their series below t = 0.1."""
    if t < 0.1:
        t2 = t * t
        return (0.5 - t2 / 24.0 + t2 * t2 / 720.0 - t2 * t2 * t2 / 40320.0,
                1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0 - t2 * t2 * t2 / 362880.0)
    return (1.0 - np.cos(t)) / (t * t), (t - np.sin(t)) / (t * t * t)


@jit
def _hat_mul(A, a, b, xi, x, out):
    """out = (1 + a [xi] + b [xi]^2) x, with A a scratch (3,)."""
    A[0] = xi[1] * x[2] - xi[2] * x[1]
    A[1] = xi[2] * x[0] - xi[0] * x[2]
    A[2] = xi[0] * x[1] - xi[1] * x[0]
    out[0] = x[0] + a * A[0] + b * (xi[1] * A[2] - xi[2] * A[1])
    out[1] = x[1] + a * A[1] + b * (xi[2] * A[0] - xi[0] * A[2])
    out[2] = x[2] + a * A[2] + b * (xi[0] * A[1] - xi[1] * A[0])


@jit
def left_jacobian(xi, x, out, A):
    """out = J_l(xi) x = (1 + (1 - cos t)/t^2 [xi] + (t - sin t)/t^3 [xi]^2) x, t = |xi| (dexp of SO(3))."""
    t = np.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    a, b = _coefficients(t)
    _hat_mul(A, a, b, xi, x, out)


@jit
def left_jacobian_inv(xi, x, out, A):
    """out = J_l(xi)^-1 x = (1 - [xi]/2 + (1/t^2 - (1 + cos t)/(2 t sin t)) [xi]^2) x."""
    t = np.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    if t < 0.1:
        t2 = t * t
        b = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0 + t2 * t2 * t2 / 1209600.0
    else:
        b = 1.0 / (t * t) - (1.0 + np.cos(t)) / (2.0 * t * np.sin(t))
    _hat_mul(A, -0.5, b, xi, x, out)


@jit
def exp_so3(xi, R0, R, E):
    """R = exp([xi]) R0 (Rodrigues), all (3, 3) but xi (3,); E (3, 3) scratch."""
    t = np.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    s_t = 1.0 - t * t / 6.0 + t ** 4 / 120.0 if t < 1e-3 else np.sin(t) / t
    a, _ = _coefficients(t)
    for r in range(3):
        for c in range(3):
            E[r, c] = a * xi[r] * xi[c]
        E[r, r] += 1.0 - a * t * t
    E[0, 1] -= s_t * xi[2]
    E[1, 0] += s_t * xi[2]
    E[0, 2] += s_t * xi[1]
    E[2, 0] -= s_t * xi[1]
    E[1, 2] -= s_t * xi[0]
    E[2, 1] += s_t * xi[0]
    for r in range(3):
        for c in range(3):
            R[r, c] = E[r, 0] * R0[0, c] + E[r, 1] * R0[1, c] + E[r, 2] * R0[2, c]


@jit
def chart_state(x, xd, R0, p, R, v, w):
    """Poses and twists (world) of the free bodies at chart coordinates x, xd (6 nf,):
    ``p = x[6j:6j+3]``, ``R = exp(xi) R0``, ``v = xd[6j:6j+3]``, ``w = J_l(xi) u``."""
    A, E = np.empty(3), np.empty((3, 3))
    for j in range(R0.shape[0]):
        o = 6 * j
        p[j, :] = x[o:o + 3]
        v[j, :] = xd[o:o + 3]
        exp_so3(x[o + 3:o + 6], R0[j], R[j], E)
        left_jacobian(x[o + 3:o + 6], xd[o + 3:o + 6], w[j], A)


@jit
def chart_accelerations(x, xd, R, w, mass, inertia, inertia_inv, gravity, W, xdd):
    """xdd (6 nf,) at chart coordinates: Newton-Euler (module docstring) under the
    world wrenches W (nf, 6) = [f; n about the COM] and gravity (3,), then
    ``u' = J_l^-1 (w' - J_l' u)`` on the chart."""
    A, t, a, b, xi = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    Iw = np.empty((3, 3))
    for j in range(mass.shape[0]):
        o = 6 * j
        for r in range(3):
            xdd[o + r] = W[j, r] / mass[j] + gravity[r]                       # m v' = f + m g
        for r in range(3):                                                   # I_w = R I_c R^T
            for c in range(3):
                s = 0.0
                for k in range(3):
                    s += R[j, r, k] * (inertia[j, k, 0] * R[j, c, 0] + inertia[j, k, 1] * R[j, c, 1]
                                       + inertia[j, k, 2] * R[j, c, 2])
                Iw[r, c] = s
        for r in range(3):                                                   # t = n - w x I_w w
            a[r] = Iw[r, 0] * w[j, 0] + Iw[r, 1] * w[j, 1] + Iw[r, 2] * w[j, 2]
        t[0] = W[j, 3] - (w[j, 1] * a[2] - w[j, 2] * a[1])
        t[1] = W[j, 4] - (w[j, 2] * a[0] - w[j, 0] * a[2])
        t[2] = W[j, 5] - (w[j, 0] * a[1] - w[j, 1] * a[0])
        for r in range(3):                                                   # w' = R I_c^-1 R^T t
            b[r] = R[j, 0, r] * t[0] + R[j, 1, r] * t[1] + R[j, 2, r] * t[2]
        for r in range(3):
            a[r] = inertia_inv[j, r, 0] * b[0] + inertia_inv[j, r, 1] * b[1] + inertia_inv[j, r, 2] * b[2]
        for r in range(3):
            t[r] = R[j, r, 0] * a[0] + R[j, r, 1] * a[1] + R[j, r, 2] * a[2]
        u = xd[o + 3:o + 6]                                                  # J_l' u, central difference
        nu = np.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
        if nu > 0.0:
            h = 1e-5 / nu
            for r in range(3):
                xi[r] = x[o + 3 + r] + h * u[r]
            left_jacobian(xi, u, a, A)
            for r in range(3):
                xi[r] = x[o + 3 + r] - h * u[r]
            left_jacobian(xi, u, b, A)
            for r in range(3):
                t[r] -= (a[r] - b[r]) / (2.0 * h)
        left_jacobian_inv(x[o + 3:o + 6], t, b, A)
        xdd[o + 3:o + 6] = b


@jit
def orthonormalize(R):
    """Gram-Schmidt on the columns of each (3, 3) in R (nf, 3, 3), in place (rounding drift)."""
    for j in range(R.shape[0]):
        for c in range(3):
            for k in range(c):
                d = R[j, 0, c] * R[j, 0, k] + R[j, 1, c] * R[j, 1, k] + R[j, 2, c] * R[j, 2, k]
                for r in range(3):
                    R[j, r, c] -= d * R[j, r, k]
            n = np.sqrt(R[j, 0, c] ** 2 + R[j, 1, c] ** 2 + R[j, 2, c] ** 2)
            for r in range(3):
                R[j, r, c] /= n


# --- the contact law (robot_dynamics.contact.dynamics) ---

@jit
def body_motion(D, q, qd, R, p, Rw, pw, wa, va):
    """The arm's body poses (Rw, pw) and twists (wa: angular velocity, va: velocity
    of the body origin), world frame, (nb + 1, ...) with the base's last:
    ``w_i = w_par + Rw_i S_w qd_i``, ``v_i = v_par + w_par x (p_i - p_par) (+ Rw_i S_v qd_i)``."""
    world_poses(D, q, R, p, Rw, pw)
    n = D.shape[0] - 1
    for r in range(3):
        wa[n, r], va[n, r] = 0.0, 0.0
    for i in range(n):
        par = parent_row(D, i)
        qdi = joint_coordinate(D, i, qd)
        d0, d1, d2 = pw[i, 0] - pw[par, 0], pw[i, 1] - pw[par, 1], pw[i, 2] - pw[par, 2]
        w0, w1, w2 = wa[par, 0], wa[par, 1], wa[par, 2]
        va[i, 0] = va[par, 0] + w1 * d2 - w2 * d1
        va[i, 1] = va[par, 1] + w2 * d0 - w0 * d2
        va[i, 2] = va[par, 2] + w0 * d1 - w1 * d0
        for r in range(3):
            s = (Rw[i, r, 0] * D[i, AXIS] + Rw[i, r, 1] * D[i, AXIS + 1] + Rw[i, r, 2] * D[i, AXIS + 2]) * qdi
            wa[i, r] = wa[par, r] + (0.0 if D[i, JTYPE] == PRISMATIC else s)
            va[i, r] += s if D[i, JTYPE] == PRISMATIC else 0.0


def arm_motion(model, q, qd, R, p, Rw, pw, wa, va):
    """:func:`body_motion` of ``model`` at (q, qd) (nq,): the arm's body poses and twists, world frame,
    into Rw, pw, wa, va (nb + 1, ...); R, p (nb + 1, ...) scratch."""
    body_motion(model.packed, q, qd, R, p, Rw, pw, wa, va)


@jit
def _frame(b, nb, Rw, pw, wa, va, Rf, pf, wf, vf):
    """(R, p, w, v) of body b (-1: the static world, the arm's base row)."""
    if b < 0:
        return Rw[nb], pw[nb], wa[nb], va[nb]
    if b < nb:
        return Rw[b], pw[b], wa[b], va[b]
    return Rf[b - nb], pf[b - nb], wf[b - nb], vf[b - nb]


@jit
def _material(R, p, w, v, x, r_local, xw, vx):
    """xw = R r_local + p (a body-fixed point) and vx = v + w x (x - p) (the velocity
    of the body's material point at x)."""
    for r in range(3):
        xw[r] = p[r] + R[r, 0] * r_local[0] + R[r, 1] * r_local[1] + R[r, 2] * r_local[2]
    d0, d1, d2 = x[0] - p[0], x[1] - p[1], x[2] - p[2]
    vx[0] = v[0] + w[1] * d2 - w[2] * d1
    vx[1] = v[1] + w[2] * d0 - w[0] * d2
    vx[2] = v[2] + w[0] * d1 - w[1] * d0


@jit
def match(pair, feature, n, mem_pair, mem_feature, m, found):
    """found[i] = the memory row of contact i (same (pair, feature)), -1 for a new one."""
    for i in range(n):
        found[i] = -1
        for j in range(m):
            if mem_pair[j] == pair[i] and mem_feature[j] == feature[i]:
                found[i] = j
                break


@jit
def _law(i, j, body_a, body_b, point, normal, depth, side, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu, nb,
         Rw, pw, wa, va, Rf, pf, wf, vf, F, s_t, X):
    """Contact i with memory row j: its force on a, F[i] (3,) world, and the
    tangential stretch s_t (3,) of the spring (before the cone's clip); X (5, 3) scratch. Returns f_n.
    The relative velocity is the bodies' at the point ``x - side (d / 2) n`` (side: 1 on a's
    surface, a round a on a flat b; -1 on b's; 0 midway: :func:`_curvature`); the stretch follows
    the material points anchored there (mem_ra, mem_rb)."""
    Ra, pa, wA, vA = _frame(body_a[i], nb, Rw, pw, wa, va, Rf, pf, wf, vf)
    Rb, pb, wB, vB = _frame(body_b[i], nb, Rw, pw, wa, va, Rf, pf, wf, vf)
    xa, xb, ua, ub, y = X[0], X[1], X[2], X[3], X[4]
    x, n = point[i], normal[i]
    for r in range(3):
        y[r] = x[r] - side * 0.5 * depth[i] * n[r]
    _material(Ra, pa, wA, vA, y, mem_ra[j], xa, ua)
    _material(Rb, pb, wB, vB, y, mem_rb[j], xb, ub)
    sn, vn = 0.0, 0.0
    for r in range(3):
        s_t[r] = mem_s[j, r] + xa[r] - xb[r]                       # s = s0 + (anchor_a - anchor_b)
        ua[r] -= ub[r]                                             # v = v_a - v_b at x
        sn += s_t[r] * n[r]
        vn += ua[r] * n[r]
    f_n = mem_k[j, 0] * depth[i] - mem_c[j, 0] * vn                # f_n = k d - c v_n
    k, c = mem_k[j, 1], mem_c[j, 1]                                # k_t, c_t
    if f_n <= 0.0:
        for r in range(3):
            F[i, r] = 0.0
            s_t[r] -= sn * n[r]
        return 0.0
    ft2 = 0.0
    for r in range(3):
        s_t[r] -= sn * n[r]                                        # tangential parts
        F[i, r] = -k * s_t[r] - c * (ua[r] - vn * n[r])            # f_t = -k_t s - c_t v_t
        ft2 += F[i, r] * F[i, r]
    scale = 1.0
    if ft2 > (mu * f_n) ** 2:                                      # |f_t| <= mu f_n: slide on the cone
        scale = mu * f_n / np.sqrt(ft2)
    for r in range(3):
        F[i, r] = f_n * n[r] + scale * F[i, r]
    return f_n


@jit
def _add_wrench(W, row, F, i, x, p, sign):
    """W[row] += sign [F; (x - p) x F] (world, moment about p)."""
    f0, f1, f2 = sign * F[i, 0], sign * F[i, 1], sign * F[i, 2]
    d0, d1, d2 = x[0] - p[0], x[1] - p[1], x[2] - p[2]
    W[row, 0] += f0
    W[row, 1] += f1
    W[row, 2] += f2
    W[row, 3] += d1 * f2 - d2 * f1
    W[row, 4] += d2 * f0 - d0 * f2
    W[row, 5] += d0 * f1 - d1 * f0


@jit
def _place(R, p, r_local, x):
    """x = R r_local + p: a body-fixed point in the world."""
    for r in range(3):
        x[r] = p[r] + R[r, 0] * r_local[0] + R[r, 1] * r_local[1] + R[r, 2] * r_local[2]


@jit
def _curvature(radius_a, radius_b, d):
    """(h_a, h_b, w_a, side) of a contact whose surfaces have radii of curvature radius_a, radius_b
    (0, r or inf) [m], depth d: each side's anchor height above (a) or below (b) the contact point
    along n (its centre of curvature ``r - d / 2``, 0 for a corner or a flat face), a's share of
    the point across n (``r_b / (r_a + r_b)``: 1 on a flat face, 1/2 for equal radii), and where
    the bodies' velocities are taken (:func:`_law`): on the round surface of a round shape against
    one that is not (1: a's, -1: b's; its radius is the rolling radius), else midway (0)."""
    round_a, round_b = 0.0 < radius_a < np.inf, 0.0 < radius_b < np.inf
    h_a = radius_a - 0.5 * d if round_a else 0.0
    h_b = radius_b - 0.5 * d if round_b else 0.0
    side = 0.0
    if round_a and not round_b:
        side = 1.0
    elif round_b and not round_a:
        side = -1.0
    if radius_a == radius_b:
        w = 0.5
    elif radius_b == np.inf:
        w = 1.0
    elif radius_a == np.inf:
        w = 0.0
    else:
        w = radius_b / (radius_a + radius_b)
    return h_a, h_b, w, side


@jit
def stage_forces(body_a, body_b, normal, depth0, m, mem_s, mem_ra, mem_rb, mem_ca, mem_cb, mem_g, mem_k, mem_c,
                 mu, Rw, pw, wa, va, Rf, pf, wf, vf, point, depth, F, Warm, Wf):
    """The contact forces at one integrator stage, for the m contacts of the step's start (rows of
    the committed Contacts and of the memory). Each point moves with its surfaces' centres of
    curvature (:mod:`robot_dynamics.contact.dynamics`, "Where the force acts"): with ``y_a = c_a -
    h_a n``, ``y_b = c_b + h_b n`` (c the body-fixed anchors mem_ca, mem_cb; both y at the point at
    the step's start; ``h_a, h_b, w = mem_g[:, :3]``) and ``g = n . (y_a - y_b)`` (n held over the
    step), the stage depth (N,) is ``d0 - g`` and the point (N, 3) ``w y_a + (1 - w) y_b + (1/2 - w)
    g n`` (across n a's share w, along n midway). Fills F[i] (3,) on a (world), and the wrenches
    they sum to: Warm (nb, 6) on the arm's bodies ([f; n] world, moment about the body origin), Wf
    (nf, 6) on the free bodies (moment about the COM). Returns the number of contacts that load the arm."""
    nb = Rw.shape[0] - 1
    Warm[:, :] = 0.0
    Wf[:, :] = 0.0
    s_t, ya, yb = np.empty(3), np.empty(3), np.empty(3)
    X = np.empty((5, 3))
    arm = 0
    for i in range(m):
        Ra, pa, wA, vA = _frame(body_a[i], nb, Rw, pw, wa, va, Rf, pf, wf, vf)
        Rb, pb, wB, vB = _frame(body_b[i], nb, Rw, pw, wa, va, Rf, pf, wf, vf)
        _place(Ra, pa, mem_ca[i], ya)
        _place(Rb, pb, mem_cb[i], yb)
        h_a, h_b, w = mem_g[i, 0], mem_g[i, 1], mem_g[i, 2]
        g = 0.0
        for r in range(3):
            ya[r] -= h_a * normal[i, r]
            yb[r] += h_b * normal[i, r]
            g += normal[i, r] * (ya[r] - yb[r])
        depth[i] = depth0[i] - g
        for r in range(3):
            point[i, r] = w * ya[r] + (1.0 - w) * yb[r] + (0.5 - w) * g * normal[i, r]
        f_n = _law(i, i, body_a, body_b, point, normal, depth, mem_g[i, 3], mem_s, mem_ra, mem_rb, mem_k, mem_c, mu, nb,
                   Rw, pw, wa, va, Rf, pf, wf, vf, F, s_t, X)
        if f_n == 0.0:
            continue
        for side in range(2):
            b, sign = (body_a[i], 1.0) if side == 0 else (body_b[i], -1.0)
            if 0 <= b < nb:
                _add_wrench(Warm, b, F, i, point[i], pw[b], sign)
                arm += 1
            elif b >= nb:
                _add_wrench(Wf, b - nb, F, i, point[i], pf[b - nb], sign)
    return arm


@jit
def link_wrenches(Warm, body_link, link_pose_rows, Rw, pw, W):
    """W (nl, 6) = the arm bodies' world wrenches Warm (nb, 6) as f_ext: on each
    body's own link (body_link), ``[R^T f; R^T (n - (p_l - p_i) x f)]`` in the link frame."""
    W[:, :] = 0.0
    d = np.empty(3)
    for i in range(Warm.shape[0]):
        l = body_link[i]
        P = link_pose_rows[l]
        f, m = Warm[i, 0:3], Warm[i, 3:6]
        for r in range(3):                                         # p_l - p_i = Rw_i p_place
            d[r] = Rw[i, r, 0] * P[3] + Rw[i, r, 1] * P[7] + Rw[i, r, 2] * P[11]
        mm0 = m[0] - (d[1] * f[2] - d[2] * f[1])
        mm1 = m[1] - (d[2] * f[0] - d[0] * f[2])
        mm2 = m[2] - (d[0] * f[1] - d[1] * f[0])
        for c in range(3):                                         # R_l = Rw_i R_place
            R0 = Rw[i, 0, 0] * P[c] + Rw[i, 0, 1] * P[4 + c] + Rw[i, 0, 2] * P[8 + c]
            R1 = Rw[i, 1, 0] * P[c] + Rw[i, 1, 1] * P[4 + c] + Rw[i, 1, 2] * P[8 + c]
            R2 = Rw[i, 2, 0] * P[c] + Rw[i, 2, 1] * P[4 + c] + Rw[i, 2, 2] * P[8 + c]
            W[l, c] += R0 * f[0] + R1 * f[1] + R2 * f[2]
            W[l, 3 + c] += R0 * mm0 + R1 * mm1 + R2 * mm2


@jit
def remember(body_a, body_b, point, normal, depth, pair, feature, radius_a, radius_b, n, found, new_k, new_c,
             mem_pair, mem_feature, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu,
             Rw, pw, wa, va, Rf, pf, wf, vf, F,
             out_pair, out_feature, out_s, out_ra, out_rb, out_ca, out_cb, out_g, out_k, out_c):
    """The contacts' memory after a step (at the committed state): each contact's
    stretch ``s`` carried (new: 0, with new_k, new_c) and moved onto the cone
    when it slides, anchored at its current point in both bodies' frames; the
    force each exerts there in F. Writes the out_* rows 0..n-1, returns n
    (the stretch is kept in out_s, both material anchors where :func:`_law` takes the
    velocities; out_ca, out_cb the anchors of the point's motion, each surface's centre
    of curvature, and out_g (h_a, h_b, w, side) of :func:`_curvature`: :func:`stage_forces`)."""
    nb = Rw.shape[0] - 1
    s_t, X = np.empty(3), np.empty((5, 3))
    for i in range(n):
        j = found[i]
        out_pair[i], out_feature[i] = pair[i], feature[i]
        h_a, h_b, w, at = _curvature(radius_a[i], radius_b[i], depth[i])
        out_g[i, 0], out_g[i, 1], out_g[i, 2], out_g[i, 3] = h_a, h_b, w, at
        if j >= 0:
            out_k[i, :], out_c[i, :] = mem_k[j], mem_c[j]
            f_n = _law(i, j, body_a, body_b, point, normal, depth, at, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu,
                       nb, Rw, pw, wa, va, Rf, pf, wf, vf, F, s_t, X)
        else:
            out_k[i, :], out_c[i, :] = new_k[i], new_c[i]
            f_n = 0.0
            F[i, :] = 0.0
            s_t[:] = 0.0
        k = out_k[i, 1]
        if f_n == 0.0:
            s_t[:] = 0.0                                           # unloaded: the anchor follows the point
        else:
            ft2 = 0.0
            for r in range(3):
                ft = F[i, r] - f_n * normal[i, r]
                ft2 += ft * ft
            if ft2 >= (mu * f_n) ** 2 * (1.0 - 1e-12) and ft2 > 0.0:    # sliding: the spring onto the cone
                a = mu * f_n / (k * np.sqrt(ft2))
                for r in range(3):
                    s_t[r] = -a * (F[i, r] - f_n * normal[i, r])
        out_s[i] = s_t
        e = -at * 0.5 * depth[i]                                   # the velocities' point y = x + e n
        for side in range(2):
            b = body_a[i] if side == 0 else body_b[i]
            R, p, _, _ = _frame(b, nb, Rw, pw, wa, va, Rf, pf, wf, vf)
            out, centre, h = (out_ra, out_ca, h_a) if side == 0 else (out_rb, out_cb, -h_b)
            for c in range(3):                                     # r = R^T (y - p); the centre x + h_a n, x - h_b n
                nc = R[0, c] * normal[i, 0] + R[1, c] * normal[i, 1] + R[2, c] * normal[i, 2]
                x = R[0, c] * (point[i, 0] - p[0]) + R[1, c] * (point[i, 1] - p[1]) + R[2, c] * (point[i, 2] - p[2])
                out[i, c] = x + e * nc
                centre[i, c] = x + h * nc
    return n


# --- spheres and boxes on planes (robot_dynamics.contact.analytic) ---

@jit
def _add(k, N, body, s, pair, feature, x, n, d, rho, body_a, body_b, point, normal, depth, geom_a, geom_b,
         pairs, features, radius_a, radius_b):
    """Row k (if k < N): shape s of ``body`` at its deepest point x, normal n, depth d, its
    surface's radius of curvature rho there (the plane's: inf)."""
    if k >= N:
        return
    body_a[k], body_b[k], geom_a[k], geom_b[k] = body, -1, s, -1
    radius_a[k], radius_b[k] = rho, np.inf
    pairs[k], features[k], depth[k] = pair, feature, d
    for r in range(3):
        point[k, r] = x[r] + 0.5 * d * n[r]
        normal[k, r] = n[r]


@jit
def detect_planes(body, kind, size, Rs, ps, plane_point, plane_normal, Rw, pw, Rf, pf,
                  body_a, body_b, point, normal, depth, geom_a, geom_b, pairs, features, radius_a, radius_b):
    """The compiled detector: (rows filled, rows dropped)."""
    nb, N, P = Rw.shape[0] - 1, body_a.shape[0], plane_point.shape[0]
    k = 0
    R, p, c, x = np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3)
    for s in range(body.shape[0]):
        b = body[s]
        if b < nb:
            Rb, pb = Rw[b], pw[b]
        else:
            Rb, pb = Rf[b - nb], pf[b - nb]
        for r in range(3):                                   # the shape's pose in the world: R, c
            c[r] = pb[r] + Rb[r, 0] * ps[s, 0] + Rb[r, 1] * ps[s, 1] + Rb[r, 2] * ps[s, 2]
            for q in range(3):
                R[r, q] = Rb[r, 0] * Rs[s, 0, q] + Rb[r, 1] * Rs[s, 1, q] + Rb[r, 2] * Rs[s, 2, q]
        for j in range(P):
            n = plane_normal[j]
            h = 0.0
            for r in range(3):
                h += (c[r] - plane_point[j, r]) * n[r]       # height of the centre above the plane
            if kind[s] == 0:                                  # sphere
                d = size[s, 0] - h
                if d >= 0.0:
                    for r in range(3):
                        x[r] = c[r] - size[s, 0] * n[r]
                    _add(k, N, b, s, s * P + j, 0, x, n, d, size[s, 0], body_a, body_b, point, normal, depth,
                         geom_a, geom_b, pairs, features, radius_a, radius_b)
                    k += 1
                continue
            for corner in range(8):                           # box: each corner below the plane
                hc = h
                for a in range(3):
                    sgn = 1.0 if (corner >> a) & 1 else -1.0
                    for r in range(3):
                        p[r] = 0.5 * sgn * size[s, a] * R[r, a]
                    hc += p[0] * n[0] + p[1] * n[1] + p[2] * n[2]
                    if a == 0:
                        for r in range(3):
                            x[r] = c[r] + p[r]
                    else:
                        for r in range(3):
                            x[r] += p[r]
                if hc <= 0.0:
                    _add(k, N, b, s, s * P + j, corner, x, n, -hc, 0.0, body_a, body_b, point, normal, depth,
                         geom_a, geom_b, pairs, features, radius_a, radius_b)
                    k += 1
    return min(k, N), max(k - N, 0)
