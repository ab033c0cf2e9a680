"""Forward kinematics and geometric Jacobians, in the base (root link) frame.

Handbook of Robotics, sec. 2.8 (Jacobians); Craig, *Introduction to
Robotics*, ch. 5. Jacobian rows are ``[vx, vy, vz, wx, wy, wz]``: the linear
velocity of the chosen point and the angular velocity of its link, both in
base-frame coordinates, so ``[v; w] = J(q) qd``.
"""
import numba as nb
import numpy as np

from .. import checks
from . import floating
from .dispatch import Algorithm, chain, route
from .kernels import all_finite, chunks, jit, nbodies, parallel, work, work_size, world_poses
from ..model.packed import AXIS, JTYPE, PARENT, PRISMATIC, QIDX, QMUL


@parallel
def fk_batch(D, Q, link_body, link_pose, T):
    """Q (B, nq) -> T (B, nlinks, 4, 4) link poses in the base frame, on all threads."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        fk_states(D, Q[lo:hi], link_body, link_pose, T[lo:hi], np.empty(size))
    return all_finite(T)


@jit
def fk_states(D, Q, link_body, link_pose, T, W):
    w = work(W, nbodies(D) + 1, Q.shape[1])
    R, p, Rw, pw = w.R, w.p, w.Rw, w.pw
    for b in range(Q.shape[0]):
        world_poses(D, Q[b], R, p, Rw, pw)
        for l in range(link_body.shape[0]):
            i, P = link_body[l], link_pose[l]
            T[b, l, :, :] = 0.0
            T[b, l, 3, 3] = 1.0
            for r in range(3):
                for c in range(4):
                    if i < 0:
                        T[b, l, r, c] = P[4 * r + c]
                    else:
                        s = Rw[i, r, 0] * P[c] + Rw[i, r, 1] * P[4 + c] + Rw[i, r, 2] * P[8 + c]
                        T[b, l, r, c] = s + (pw[i, r] if c == 3 else 0.0)


@parallel
def jacobian_batch(D, Q, link_body, link_pose, l, point, J):
    """Q (B, nq) -> J (B, 6, nq) of ``point`` (link frame) on link index l, on all threads."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        jacobian_states(D, Q[lo:hi], link_body, link_pose, l, point, J[lo:hi], np.empty(size))
    return all_finite(J) and all_finite(Q)


@jit
def jacobian_states(D, Q, link_body, link_pose, l, point, J, W):
    w = work(W, nbodies(D) + 1, Q.shape[1])
    R, p, Rw, pw = w.R, w.p, w.Rw, w.pw
    P = link_pose[l]
    x = np.empty(3)
    for b in range(Q.shape[0]):
        J[b, :, :] = 0.0
        i = link_body[l]
        if i < 0:
            continue
        world_poses(D, Q[b], R, p, Rw, pw)
        for r in range(3):                                     # point in the body frame
            x[r] = P[4 * r] * point[0] + P[4 * r + 1] * point[1] + P[4 * r + 2] * point[2] + P[4 * r + 3]
        px = pw[i, 0] + Rw[i, 0, 0] * x[0] + Rw[i, 0, 1] * x[1] + Rw[i, 0, 2] * x[2]
        py = pw[i, 1] + Rw[i, 1, 0] * x[0] + Rw[i, 1, 1] * x[1] + Rw[i, 1, 2] * x[2]
        pz = pw[i, 2] + Rw[i, 2, 0] * x[0] + Rw[i, 2, 1] * x[1] + Rw[i, 2, 2] * x[2]
        j = i
        while j >= 0:
            m, k = D[j, QMUL], int(D[j, QIDX])
            a0 = Rw[j, 0, 0] * D[j, AXIS] + Rw[j, 0, 1] * D[j, AXIS + 1] + Rw[j, 0, 2] * D[j, AXIS + 2]
            a1 = Rw[j, 1, 0] * D[j, AXIS] + Rw[j, 1, 1] * D[j, AXIS + 1] + Rw[j, 1, 2] * D[j, AXIS + 2]
            a2 = Rw[j, 2, 0] * D[j, AXIS] + Rw[j, 2, 1] * D[j, AXIS + 1] + Rw[j, 2, 2] * D[j, AXIS + 2]
            if D[j, JTYPE] == PRISMATIC:                    # J_j = [a; 0]
                J[b, 0, k] += m * a0
                J[b, 1, k] += m * a1
                J[b, 2, k] += m * a2
            else:                                              # J_j = [a x (x - o_j); a]
                dx, dy, dz = px - pw[j, 0], py - pw[j, 1], pz - pw[j, 2]
                J[b, 0, k] += m * (a1 * dz - a2 * dy)
                J[b, 1, k] += m * (a2 * dx - a0 * dz)
                J[b, 2, k] += m * (a0 * dy - a1 * dx)
                J[b, 3, k] += m * a0
                J[b, 4, k] += m * a1
                J[b, 5, k] += m * a2
            j = int(D[j, PARENT])


def forward_kinematics(model, q, *, data=None):
    """Pose of every link in the base frame.

    Args:
        q: (..., nq) joint positions.
        data: optional :class:`~robot_dynamics.Data`.
    Returns:
        dict ``{link: (..., 4, 4)}`` homogeneous transforms base <- link,
        for every name in ``model.link_names``.
    """
    nl = len(model.link_names)
    T = route(FORWARD_KINEMATICS, model, (q,), data=data, tail=(nl, 4, 4),
              extra=(model.link_body, model.link_pose_rows))
    return {name: T[..., l, :, :] for l, name in enumerate(model.link_names)}


def link_pose(model, q, link, *, data=None):
    """(..., 4, 4) pose of one link in the base frame (see forward_kinematics)."""
    return forward_kinematics(model, q, data=data)[model.link_names[model.link_index(link)]]


def jacobian(model, q, link, point=(0.0, 0.0, 0.0), *, data=None, out=None):
    """Geometric Jacobian of a point on a link, in the base frame.

    Args:
        q: (..., nq) joint positions.
        link: link name (any link, fixed-merged links included).
        point: (3,) point in the link frame [m]; the link origin by default.
        data, out: as in :func:`~robot_dynamics.rnea` (out: (..., 6, nq)).

    Returns:
        (..., 6, nq) with rows ``[vx, vy, vz, wx, wy, wz]`` (base-frame
        coordinates) and columns in ``model.joint_names`` order; all zeros
        for links fixed to the base.
    """
    l = model.link_index(link)
    return route(JACOBIAN, model, (q,), data=data, out=out, tail=(6, model.nv),
                 extra=(model.link_body, model.link_pose_rows, l, checks.point(point)))


# --- the Python path on a floating or planar base (:mod:`.floating`) -----------------------

def _forward_kinematics_on_root(model, x, f_ext, data, out, tail, extra):
    """(..., nl, 4, 4) the chain's poses turned and moved by the root's (R, p)."""
    qk, R, p, _ = floating.states(model, x[0])
    T = chain(FORWARD_KINEMATICS, model, (qk,), data=data, tail=tail, extra=extra)
    moving = model.link_body >= 0                    # the world's links stay where they are
    Tw = T.copy()
    Tw[..., moving, :3, :] = np.einsum("...ij,...ljk->...lik", R, T[..., moving, :3, :])
    Tw[..., moving, :3, 3:] += p[..., None, :, None]    # a slice, not 3: an int beside the mask would move its axis first
    return Tw


def _jacobian_on_root(model, x, f_ext, data, out, tail, extra):
    """(..., 6, nv) the chain's Jacobian with its rows turned by the root's R."""
    qk, R, p, _ = floating.states(model, x[0])
    J = chain(JACOBIAN, model, (qk,), data=data, tail=tail, extra=extra)
    Jw = np.concatenate([R @ J[..., :3, :], R @ J[..., 3:, :]], axis=-2)
    if out is None:
        return Jw
    floating.checks_out(out, Jw.shape)
    out[...] = Jw
    return out


FORWARD_KINEMATICS = Algorithm(None, fk_batch, ("q",), serial=fk_states, on_root=_forward_kinematics_on_root)
JACOBIAN = Algorithm(None, jacobian_batch, ("q",), serial=jacobian_states, on_root=_jacobian_on_root)
