"""Compiled physics step for the built-in force models: the simulator's fast path.

:class:`~robot_dynamics.simulation.Simulator` is built from plug-ins
(integrator, force models, actuator), and each evaluation of the dynamics
calls each of them from Python. When every plug-in is a built-in one, the
whole step (all integrator stages) runs here in one compiled call instead,
with the same formulas in the same order:

    tau = clip(effort + servo * rnea(q, qd, a), -effort_limit, effort_limit)   # JointActuator
          - tau_f(qd)                                                          # JointFriction: the laws
          + stops(q, qd)                                                       # PositionLimits
    qdd = aba(q, qd, tau, f_ext)              # then the stick-slip switch (stiction.py), if on

with ``a = a0 - Kq q - Kqd qd`` the servo's reference acceleration. The
plug-ins hand over these coefficients through their public methods
(:meth:`JointActuator.coefficients`, :meth:`JointFriction.coefficients`,
:meth:`PositionLimits.coefficients`), which the simulator packs into the
rows of ``P`` below, and the friction laws in the table ``L`` of
:mod:`.stiction`.

The fast path applies when the integrator is RK4, semi-implicit Euler or
linearly implicit Euler (:func:`_implicit_euler`; not with mimic joints),
the force models are (a subset of) ``[JointFriction, PositionLimits]`` in
that order and the actuator is the built-in :class:`JointActuator`;
otherwise the plug-in path runs. A model with mimic joints (coupled
joints, ``Model.coupling``) takes the same step with the CRBA route for
the forward dynamics (what ``rd.aba`` runs for it: ``M qdd = tau - h``,
Cholesky) and each body's friction law at its joint's velocity
(:func:`_body_friction`); the servo's RNEA and the stops act on the
independent coordinates, as in the plug-in path. The applied
wrenches (:class:`.forces.ExternalWrenches`) come as ``f_ext`` of every
stage (:func:`stage_wrenches`): the link-frame ones as constant body
wrenches, the base-frame ones turned into their bodies' frames at the
stage's q, as the plug-in path does.
``test/test_simulation.py`` checks that both paths give the same
trajectories. About 3x faster with RK4 on the Panda (4 ABA and, for servoed
joints, 4 RNEA per step).
"""
import numpy as np

from ..algorithms.aba import _aba, _fd_crb
from ..algorithms.crba import _crba
from ..algorithms.kernels import (add_torque, jcalc, jit, joint_coordinate, joint_position, nbodies, parent_row,
                                  work, work_size)
from ..algorithms.rnea import _rnea
from .forces import stop_torques
from .stiction import LROWS, candidates, hold, law_slope, law_torque, solve  # noqa: F401 (LROWS: L's rows)

# Integration methods of fused_step.
SEMI_IMPLICIT_EULER, RK4, IMPLICIT_EULER = 0, 1, 2

# Rows of the per-joint parameter array P (nrows, nq).
(EFFORT, SERVO, A0, KQ, KQD, LO, HI, LOWER, UPPER, STIFF, DAMP_STOP) = range(11)
NROWS = 11


@jit
def stage_wrenches(D, q, F0, BW, BB, BP, fext, w):
    """fext (nb, 6) = F0 + the base-frame wrenches at q, body-frame [n; f]
    about the body origins (the kernels' ``f_ext``), or nothing when F0 is
    (0, 6) (no wrench applied).

    F0 (nb, 6): the link-frame wrenches as body wrenches (constant); BW (k, 6)
    base-frame wrenches [f; n] on the bodies BB (k,) at the link origins BP
    (k, 3), body frame: ``f_b = R^T f``, ``n_b = R^T n + p x f_b`` with R the
    body's orientation in the base frame (its joints' rotations chained)."""
    if F0.shape[0] == 0:
        return
    fext[:, :] = F0
    if BW.shape[0] == 0:
        return
    R, p, Rw = w.R, w.p, w.Rw
    n = nbodies(D)
    for i in range(n):
        jcalc(D, i, joint_position(D, i, q), R, p)
        par = parent_row(D, i)                      # n: the base
        for r in range(3):
            for c in range(3):
                if par == n:
                    Rw[i, r, c] = R[i, r, c]
                else:
                    Rw[i, r, c] = Rw[par, r, 0] * R[i, 0, c] + Rw[par, r, 1] * R[i, 1, c] + Rw[par, r, 2] * R[i, 2, c]
    for k in range(BW.shape[0]):
        i = BB[k]
        f0 = Rw[i, 0, 0] * BW[k, 0] + Rw[i, 1, 0] * BW[k, 1] + Rw[i, 2, 0] * BW[k, 2]
        f1 = Rw[i, 0, 1] * BW[k, 0] + Rw[i, 1, 1] * BW[k, 1] + Rw[i, 2, 1] * BW[k, 2]
        f2 = Rw[i, 0, 2] * BW[k, 0] + Rw[i, 1, 2] * BW[k, 1] + Rw[i, 2, 2] * BW[k, 2]
        px, py, pz = BP[k, 0], BP[k, 1], BP[k, 2]
        for r in range(3):
            fext[i, r] += Rw[i, 0, r] * BW[k, 3] + Rw[i, 1, r] * BW[k, 4] + Rw[i, 2, r] * BW[k, 5]
        fext[i, 0] += py * f2 - pz * f1
        fext[i, 1] += pz * f0 - px * f2
        fext[i, 2] += px * f1 - py * f0
        fext[i, 3] += f0
        fext[i, 4] += f1
        fext[i, 5] += f2


@jit
def _body_friction(D, L, qd, smoothing, out):
    """out (nq,) = G^T tau_f(G qd): each body's law (column of L) at its joint's
    velocity ``multiplier * qd[source]``, mapped back onto the source joint
    (:func:`robot_dynamics.friction_torques` for a model with mimic joints)."""
    out[:] = 0.0
    for i in range(nbodies(D)):
        add_torque(D, i, law_torque(L, i, joint_coordinate(D, i, qd), smoothing), out)


@jit
def _forward(D, q, qd, tau, fext, qdd, w, mimic):
    """qdd = FD(q, qd, tau, fext): the ABA, or for a model with mimic joints
    the CRBA route (``aba.FD_CRB``, what ``rd.aba`` runs for it); NaN where
    M is singular."""
    if not mimic:
        _aba(D, q, qd, tau, fext, qdd, w)
    elif not _fd_crb(D, q, qd, tau, fext, qdd, w):
        qdd[:] = np.nan


@jit
def _accel(D, q, qd, dt, P, L, flags, smoothing, qdd, tau, tmp, a, w, S, C, u, fext):
    """qdd = aba(q, qd, motor + friction + stop torques, fext); flags = (servo,
    friction, stops, stiction, mimic). With stiction, the candidates of
    :func:`.stiction.candidates` are held by :func:`.stiction.hold` (the
    columns of M^-1 from ABA, affine in the torque). With mimic joints (no
    stiction), the friction of each body (L over the bodies) and the CRBA
    route (:func:`_forward`)."""
    n = q.shape[0]
    if flags[0]:
        for i in range(n):
            a[i] = P[A0, i] - P[KQ, i] * q[i] - P[KQD, i] * qd[i]
        _rnea(D, q, qd, a, np.empty((0, 6)), tmp, w.R, w.p, w.v, w.a, w.f)
        for i in range(n):
            tau[i] = min(max(P[EFFORT, i] + P[SERVO, i] * tmp[i], P[LO, i]), P[HI, i])
    else:
        for i in range(n):
            tau[i] = P[EFFORT, i]
    if flags[1] and flags[4]:
        _body_friction(D, L, qd, smoothing, tmp)
        for i in range(n):
            tau[i] = tau[i] - tmp[i]
    elif flags[1]:
        for i in range(n):
            tau[i] = tau[i] - law_torque(L, i, qd[i], smoothing)
    if flags[2] and stop_torques(q, qd, P[LOWER], P[UPPER], P[STIFF], P[DAMP_STOP], tmp):
        for i in range(n):
            tau[i] = tau[i] + tmp[i]
    _forward(D, q, qd, tau, fext, qdd, w, flags[4])
    if flags[3]:
        m = candidates(L, qd, qdd, dt, S)
        if m > 0:
            for k in range(m):                      # the candidates' friction is solved for
                tau[S[k]] += law_torque(L, S[k], qd[S[k]], smoothing)
            _aba(D, q, qd, tau, fext, qdd, w)
            for k in range(m):                      # column k of M^-1
                tau[S[k]] += 1.0
                _aba(D, q, qd, tau, fext, tmp, w)
                tau[S[k]] -= 1.0
                for j in range(n):
                    C[j, k] = tmp[j] - qdd[j]
            for j in range(n):
                a[j] = -qd[j] / dt                  # the held joints stop at the step's end
            hold(L, qdd, C, S, m, a, u)


@jit
def _implicit_euler(D, q, qd, dt, P, L, flags, smoothing, q_out, qd_out, h, a, rhs, w, S, C, u, fext):
    """One linearly implicit Euler step (see :class:`.integrators.ImplicitEuler`):

        (M + dt Dv + dt^2 Kq) dv = dt (tau - h) - dt^2 Kq qd,
        qd_out = qd + dv,  q_out = q + dt qd_out,

    with M = crba(q), h = rnea(q, qd, 0, fext), tau the forces of :func:`_accel`
    (the servo's computed torque with the h of no wrench, as the actuator's),
    and Dv = -dtau/dqd, Kq = -dtau/dq the exact derivatives of the built-in
    force models: the servo (computed torque ``M a + h``, ``a = a0 - Kq q -
    Kqd qd``, differentiated with M and h held; zero where the effort limit
    clips), the friction laws (their velocity slope) and the stops. The
    derivatives of M and h themselves are left out, as in MuJoCo's
    ``implicitfast`` (and so are those of the wrenches' ``J^T f``). With stiction, the candidates are held on the step's
    velocity change (:func:`_implicit_hold`). False if the step's matrix is
    singular."""
    n = q.shape[0]
    M = w.M
    _crba(D, q, M, w.R, w.p, w.IC, 0)
    for i in range(n):
        a[i] = 0.0
    _rnea(D, q, qd, a, np.empty((0, 6)), h, w.R, w.p, w.v, w.a, w.f)     # h = C qd + g (the servo's)
    if fext.shape[0] > 0:                                      # rhs = h - J^T f, read row by row below
        _rnea(D, q, qd, a, fext, rhs, w.R, w.p, w.v, w.a, w.f)
    else:
        rhs[:] = h
    if flags[0]:
        for j in range(n):
            a[j] = P[A0, j] - P[KQ, j] * q[j] - P[KQD, j] * qd[j]
    for i in range(n):
        tau = P[EFFORT, i]
        Kqd_i = 0.0                                            # (Kq qd)_i of the servo
        if flags[0]:
            s, kv = h[i], 0.0
            for j in range(n):
                s += M[i, j] * a[j]
                kv += M[i, j] * P[KQ, j] * qd[j]
            t = P[EFFORT, i] + P[SERVO, i] * s                 # the servo: M a + h, clipped
            tau = min(max(t, P[LO, i]), P[HI, i])
            g = P[SERVO, i]
            if g != 0.0 and P[LO, i] <= t <= P[HI, i]:         # -dtau_i/d(q_j, qd_j) = g M_ij (Kq_j, Kqd_j)
                Kqd_i = g * kv
                for j in range(n):
                    M[i, j] += g * M[i, j] * (dt * P[KQD, j] + dt * dt * P[KQ, j])
        dv, kq = 0.0, 0.0                                      # diagonal derivatives
        if flags[1]:
            tau -= law_torque(L, i, qd[i], smoothing)
            dv += law_slope(L, i, qd[i], smoothing)
        if flags[2]:                                           # the stops of forces.stop_torques
            f = 0.0
            if q[i] > P[UPPER, i]:
                f = P[STIFF, i] * (q[i] - P[UPPER, i]) + P[DAMP_STOP, i] * qd[i]
                f = f if f > 0.0 else 0.0
            elif q[i] < P[LOWER, i]:
                f = P[STIFF, i] * (q[i] - P[LOWER, i]) + P[DAMP_STOP, i] * qd[i]
                f = f if f < 0.0 else 0.0
            if f != 0.0:
                tau -= f
                kq += P[STIFF, i]
                dv += P[DAMP_STOP, i]
        M[i, i] += dt * dv + dt * dt * kq
        rhs[i] = dt * (tau - rhs[i]) - dt * dt * (Kqd_i + kq * qd[i])
    if flags[3]:
        if not _implicit_hold(M, rhs, qd, dt, L, smoothing, S, C, u):
            return False
    elif not solve(M, rhs):
        return False
    for i in range(n):
        qd_out[i] = qd[i] + rhs[i]
        q_out[i] = q[i] + dt * qd_out[i]
    return True


@jit
def _implicit_hold(A, rhs, qd, dt, L, smoothing, S, C, u):
    """rhs <- dv of the implicit step ``A dv = rhs`` with the stick-slip switch:
    the candidates (from the slipping dv) lose their slipping friction and
    its slope, and are held so that ``dv_S = -qd_S`` within their bounds.
    False if A is singular."""
    n = qd.shape[0]
    B, dv = A.copy(), rhs.copy()
    if not solve(B, dv):
        return False
    m = candidates(L, qd, dv, 1.0, S)
    if m == 0:
        rhs[:] = dv
        return True
    for k in range(m):
        i = S[k]
        rhs[i] += dt * law_torque(L, i, qd[i], smoothing)
        A[i, i] -= dt * law_slope(L, i, qd[i], smoothing)
    B[:, :] = A
    if not solve(B, rhs):
        return False
    e = np.empty(n)
    for k in range(m):                              # dv's response to a unit friction torque on S[k]
        B[:, :] = A
        e[:] = 0.0
        e[S[k]] = dt
        if not solve(B, e):
            return False
        C[:, k] = e
    for j in range(n):
        dv[j] = -qd[j]
    hold(L, rhs, C, S, m, dv, u)
    return True


@jit
def stage_accel(D, q, qd, dt, P, L, flags, smoothing, fext, qdd):
    """qdd (nq,) of one integrator stage: :func:`_accel` alone, with the body
    wrenches fext (nb, 6) or (0, 6); for a simulator whose integrator is
    not compiled (the contact stepper's, which adds the contact wrenches)."""
    n = q.shape[0]
    w = work(np.empty(work_size(D.shape[0] - 1, n)), D.shape[0], n)
    tau, tmp, a = np.empty(n), np.empty(n), np.empty(n)
    S, C, u = np.empty(n, dtype=np.int64), np.empty((n, n)), np.empty(n)
    _accel(D, q, qd, dt, P, L, flags, smoothing, qdd, tau, tmp, a, w, S, C, u, fext)


@jit
def fused_step(D, q, qd, dt, P, L, flags, smoothing, method, F0, BW, BB, BP, steps, q_out, qd_out):
    """``steps`` physics steps of ``method`` (SEMI_IMPLICIT_EULER, RK4 or
    IMPLICIT_EULER) from (q, qd), with the wrenches F0, BW, BB, BP of
    :func:`stage_wrenches` (F0 (0, 6): none).

    Writes the final state to q_out, qd_out (nq,). Returns the number of
    steps done: fewer than ``steps`` if a step gave a non-finite state (the
    outputs then hold the last finite state).
    """
    n = q.shape[0]
    w = work(np.empty(work_size(D.shape[0] - 1, n)), D.shape[0], n)
    tau, tmp, a = np.empty(n), np.empty(n), np.empty(n)
    a1, a2, a3, a4 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    qs, v2, v3, v4 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    S, C, u = np.empty(n, dtype=np.int64), np.empty((n, n)), np.empty(n)
    fext = np.empty((F0.shape[0], 6))
    x, xd = q.copy(), qd.copy()
    h = 0.5 * dt
    s = dt / 6.0
    for k in range(steps):
        if method == IMPLICIT_EULER:
            stage_wrenches(D, x, F0, BW, BB, BP, fext, w)
            if not _implicit_euler(D, x, xd, dt, P, L, flags, smoothing, q_out, qd_out, tmp, a, tau, w, S, C, u,
                                   fext):
                q_out[:] = x
                qd_out[:] = xd
                return k
        elif method == RK4:                         # same arithmetic as integrators.RK4
            stage_wrenches(D, x, F0, BW, BB, BP, fext, w)
            _accel(D, x, xd, dt, P, L, flags, smoothing, a1, tau, tmp, a, w, S, C, u, fext)
            for i in range(n):
                v2[i] = xd[i] + h * a1[i]
                qs[i] = x[i] + h * xd[i]
            stage_wrenches(D, qs, F0, BW, BB, BP, fext, w)
            _accel(D, qs, v2, dt, P, L, flags, smoothing, a2, tau, tmp, a, w, S, C, u, fext)
            for i in range(n):
                v3[i] = xd[i] + h * a2[i]
                qs[i] = x[i] + h * v2[i]
            stage_wrenches(D, qs, F0, BW, BB, BP, fext, w)
            _accel(D, qs, v3, dt, P, L, flags, smoothing, a3, tau, tmp, a, w, S, C, u, fext)
            for i in range(n):
                v4[i] = xd[i] + dt * a3[i]
                qs[i] = x[i] + dt * v3[i]
            stage_wrenches(D, qs, F0, BW, BB, BP, fext, w)
            _accel(D, qs, v4, dt, P, L, flags, smoothing, a4, tau, tmp, a, w, S, C, u, fext)
            for i in range(n):
                q_out[i] = x[i] + s * (xd[i] + 2.0 * (v2[i] + v3[i]) + v4[i])
                qd_out[i] = xd[i] + s * (a1[i] + 2.0 * (a2[i] + a3[i]) + a4[i])
        else:                                       # semi-implicit Euler
            stage_wrenches(D, x, F0, BW, BB, BP, fext, w)
            _accel(D, x, xd, dt, P, L, flags, smoothing, a1, tau, tmp, a, w, S, C, u, fext)
            for i in range(n):
                qd_out[i] = xd[i] + dt * a1[i]
                q_out[i] = x[i] + dt * qd_out[i]
        for i in range(n):
            if not (np.isfinite(q_out[i]) and np.isfinite(qd_out[i])):
                q_out[:] = x
                qd_out[:] = xd
                return k
        x[:] = q_out
        xd[:] = qd_out
    return steps
