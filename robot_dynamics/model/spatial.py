"""Rotations and poses used when a model is built (numpy, not on the hot path).

Inertia algebra lives in :mod:`robot_dynamics.model.inertia`.

Conventions (see the package docstring): rotations map child-frame
coordinates to parent-frame coordinates; a pose is ``(R, p)`` with ``p`` the
child origin in parent coordinates; rotational inertias are 3x3 symmetric
matrices in kg m^2.
"""
import numpy as np


def skew(v):
    """(3,) -> (3, 3) cross-product matrix, ``skew(a) @ b == a x b``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rpy_to_matrix(rpy):
    """URDF roll-pitch-yaw (fixed axes x, y, z) -> (3, 3) rotation ``Rz @ Ry @ Rx``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def axis_angle(axis, angle):
    """Rodrigues' formula: rotation by ``angle`` [rad] about the unit ``axis`` (3,)."""
    k = skew(axis)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def homogeneous(R, p):
    """(3, 3), (3,) -> (4, 4) homogeneous transform."""
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T
