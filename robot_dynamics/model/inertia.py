"""Inertia algebra: every conversion between the forms a rigid body's mass
distribution takes in this package (numpy; used when a model is built or
read, never on the hot path).

Forms:

- ``(m, c, I_C)``: mass [kg], centre of mass (3,) [m] and rotational
  inertia about the centre of mass (3, 3) [kg m^2], as a URDF
  ``<inertial>`` gives them.
- ``(m, h, I_O)``: mass, first moment ``h = m c`` [kg m] and rotational
  inertia about the frame origin [kg m^2]; the form the kernels add up
  (Featherstone, *Rigid Body Dynamics Algorithms*, sec. 2.13).
- the 10 inertial parameters ``(m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz,
  I_yz, I_zz)`` about the frame origin, in Pinocchio's order;
- the (6, 6) spatial inertia, linear part first (the public spatial order):
  ``[[m 1, -m [c]x], [m [c]x, I_O]]``.
"""
import numpy as np

from .spatial import skew


def inertia_about_origin(mass, com, inertia_com):
    """Parallel-axis theorem: ``I_O = I_C + m ((c.c) 1 - c c^T)``."""
    c = np.asarray(com, dtype=float)
    return inertia_com + mass * (c @ c * np.eye(3) - np.outer(c, c))


def inertia_about_com(mass, com, inertia_origin):
    """The parallel-axis theorem backwards: ``I_C = I_O - m ((c.c) 1 - c c^T)``."""
    c = np.asarray(com, dtype=float)
    return inertia_origin - mass * (c @ c * np.eye(3) - np.outer(c, c))


def transform_inertia(T, mass, h, inertia_origin):
    """``(m, h, I_O)`` of a body given in frame B, expressed in frame A,
    where ``T`` (4, 4) is the pose of B in A (A <- B).

    Returns ``(m, h_A, I_OA)``: ``h_A = R h + m p`` and
    ``I_OA = R I_O R^T + m ((p.p) 1 - p p^T) + 2 (p.Rh) 1 - p (Rh)^T - (Rh) p^T``.
    """
    R, p = T[:3, :3], T[:3, 3]
    hb = R @ h
    Io = (R @ inertia_origin @ R.T + mass * (p @ p * np.eye(3) - np.outer(p, p))
          + 2.0 * (p @ hb) * np.eye(3) - np.outer(p, hb) - np.outer(hb, p))
    return mass, hb + mass * p, Io


def parameters(mass, h, inertia_origin):
    """The 10 inertial parameters (m, h, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)."""
    I = inertia_origin
    return np.array([mass, h[0], h[1], h[2], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


def spatial_inertia(mass, h, inertia_origin):
    """(6, 6) spatial inertia about the frame origin, linear part first:
    ``[[m 1, -[h]x], [[h]x, I_O]]`` (Featherstone eq. 2.63 reordered)."""
    S = np.zeros((6, 6))
    S[:3, :3] = mass * np.eye(3)
    S[:3, 3:] = -skew(h)
    S[3:, :3] = skew(h)
    S[3:, 3:] = inertia_origin
    return S


def inertia_problem(inertia_com):
    """A sentence saying why a rotational inertia about the centre of mass
    is not physical, or None: it must be symmetric positive definite with
    each principal moment no larger than the sum of the other two."""
    I = 0.5 * (inertia_com + inertia_com.T)
    moments = np.linalg.eigvalsh(I)
    scale = max(np.max(np.abs(moments)), 1e-300)
    if moments[0] <= 1e-12 * scale:
        return "inertia is not positive definite (principal moments %s)" % np.array2string(moments, precision=6)
    a, b, c = moments
    if c > a + b + 1e-9 * scale:
        return ("principal moments %.6g, %.6g, %.6g violate the triangle inequality "
                "(%.6g > %.6g + %.6g)" % (a, b, c, c, a, b))
    return None


def principal_axes(inertia_com):
    """``(moments (3,) ascending, axes (3, 3) as columns, det +1)`` of a
    rotational inertia about the centre of mass."""
    moments, axes = np.linalg.eigh(0.5 * (inertia_com + inertia_com.T))
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return moments, axes
