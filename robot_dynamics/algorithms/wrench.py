"""External wrenches on links, converted for the kernels.

Convention (also in the package docstring): a wrench is
``[fx, fy, fz, nx, ny, nz]`` acting ON the link, expressed in the link's URDF
frame, with the moment taken about the link frame origin [N, N m].
"""
import numpy as np

from .. import checks
from .kernels import jit
from ..errors import InputError


@jit
def _to_bodies(link_body, link_pose, W, out):
    """W (B, nlinks, 6) link wrenches [f; n] -> out (B, nb, 6) body wrenches [n; f]
    about the body origin, in body coordinates (links on the base are dropped)."""
    out[:] = 0.0
    for b in range(W.shape[0]):
        for l in range(W.shape[1]):
            i = link_body[l]
            if i < 0:
                continue
            P = link_pose[l]                  # rows of [R | p], body <- link
            f0, f1, f2, n0, n1, n2 = W[b, l, 0], W[b, l, 1], W[b, l, 2], W[b, l, 3], W[b, l, 4], W[b, l, 5]
            fx = P[0] * f0 + P[1] * f1 + P[2] * f2
            fy = P[4] * f0 + P[5] * f1 + P[6] * f2
            fz = P[8] * f0 + P[9] * f1 + P[10] * f2
            px, py, pz = P[3], P[7], P[11]
            out[b, i, 0] += P[0] * n0 + P[1] * n1 + P[2] * n2 + py * fz - pz * fy
            out[b, i, 1] += P[4] * n0 + P[5] * n1 + P[6] * n2 + pz * fx - px * fz
            out[b, i, 2] += P[8] * n0 + P[9] * n1 + P[10] * n2 + px * fy - py * fx
            out[b, i, 3] += fx
            out[b, i, 4] += fy
            out[b, i, 5] += fz


def link_wrenches(model, f_ext, batch_shape):
    """Normalise ``f_ext`` (dict or array) to an array (B, nlinks, 6)."""
    nl = len(model.link_names)
    if isinstance(f_ext, dict):
        W = np.zeros((nl, 6))
        for link, w in f_ext.items():
            a = checks.as_float_array(w, "f_ext[%r]" % (link,))
            if a.shape != (6,):
                raise InputError("f_ext[%r] must be a wrench of 6 values [fx fy fz nx ny nz], got shape %s"
                                 % (link, a.shape))
            W[model.link_index(link)] += a
    else:
        W = checks.as_float_array(f_ext, "f_ext")
        if W.ndim < 2 or W.shape[-2:] != (nl, 6):
            raise InputError("f_ext must have shape (..., %d, 6) (one [fx fy fz nx ny nz] wrench per link "
                             "in model.link_names order) or be a dict {link: wrench}; got shape %s"
                             % (nl, W.shape))
    if W.shape[:-2] == tuple(batch_shape):                # nothing to broadcast (one state, one wrench set)
        return np.ascontiguousarray(W.reshape(-1, nl, 6))
    try:
        W = np.broadcast_to(W, tuple(batch_shape) + (nl, 6))
    except ValueError:
        raise InputError("f_ext batch shape %s does not match the states' batch shape %s"
                         % (W.shape[:-2], tuple(batch_shape))) from None
    return np.ascontiguousarray(W.reshape(-1, nl, 6))


def body_wrenches(model, f_ext, batch_shape, B):
    """(B, nb, 6) body-frame wrenches for the kernels, or (B, 0, 6) when f_ext is None."""
    if f_ext is None:
        return np.empty((B, 0, 6))
    W = link_wrenches(model, f_ext, batch_shape)
    out = np.empty((B, model.nb, 6))
    _to_bodies(model.link_body, model.link_pose_rows, W, out)
    return out
