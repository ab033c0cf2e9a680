"""Free bodies: boxes, spheres and cylinders that move in 6 DOF, beside the arm.

Each free body ``j`` is a rigid body with mass ``m`` [kg] and rotational
inertia ``I_c`` [kg m^2] about its centre of mass, in its own frame (whose
origin is the centre of mass, axes along the shape's). Its state, world
frame: position ``p`` (3,) [m], orientation ``R`` (3, 3) (body -> world),
linear velocity ``v`` (3,) [m/s] of the centre of mass and angular velocity
``w`` (3,) [rad/s], both in world axes.

Dynamics: the Newton-Euler equations of one body at its centre of mass, in
world axes (Featherstone, *Rigid Body Dynamics Algorithms*, sec. 2.15,
``f = I a + v x* I v`` with the spatial inertia taken at the centre of
mass, where it is block diagonal; Handbook of Robotics sec. 3.2):

    m v' = f + m g                    (Newton)
    I_w w' = n - w x (I_w w)          (Euler, I_w = R I_c R^T)

with ``f`` (3,) [N] the sum of the contact forces and ``n`` (3,) [N m] their
moment about the centre of mass.

Integration with the arm's integrator (any scheme of
:mod:`robot_dynamics.simulation.integrators`, which advances ``q' = qd,
qd' = accel``): within one step each body's coordinates are its position
and the rotation vector ``xi`` of ``R = exp([xi]) R0`` about its
orientation ``R0`` at the step's start (a chart reset every step, so
``|xi| ~ |w| dt`` stays far from the chart's singularity at pi), and its
velocities ``(v, u = xi')``. ``w = J_l(xi) u`` with ``J_l`` the left
Jacobian of SO(3) (``dexp``), and ``u' = J_l^-1 (w' - J_l' u)`` (``J_l' u``
by a central difference of the closed-form ``J_l`` along ``u``, error
~1e-10 relative). The step is then exactly the scheme's, on a chart: RK4 is
fourth order in orientation too, and the rotation stays orthonormal.
"""
import numpy as np

from ..algorithms.contact_kernels import (chart_accelerations, chart_state, exp_so3,  # noqa: F401
                                         left_jacobian, left_jacobian_inv, orthonormalize)
from ..errors import InputError
from ..model.configuration import matrix_quaternion, quaternion_matrix

SHAPES = ("box", "sphere", "cylinder")


def shape_inertia(shape, size, mass):
    """(3, 3) rotational inertia [kg m^2] about the centre of mass of a solid ``shape``.

    Args:
        shape: 'box' (size: the full edge lengths ``(lx, ly, lz)`` [m]),
            'sphere' (``(r,)``) or 'cylinder' (``(r, l)``, axis along z).
        mass: [kg] > 0.
    """
    size = np.asarray(size, dtype=float).ravel()
    need = {"box": 3, "sphere": 1, "cylinder": 2}
    if shape not in need:
        raise InputError("free body shape must be one of %s, got %r" % (", ".join(SHAPES), shape))
    if size.shape != (need[shape],) or not np.all(np.isfinite(size) & (size > 0)):
        raise InputError("a %s needs %d sizes > 0 [m], got %r" % (shape, need[shape], size.tolist()))
    if not (np.isfinite(mass) and mass > 0):
        raise InputError("free body mass must be finite and > 0 [kg], got %r" % (mass,))
    if shape == "box":
        lx, ly, lz = size
        return mass / 12.0 * np.diag([ly * ly + lz * lz, lx * lx + lz * lz, lx * lx + ly * ly])
    if shape == "sphere":
        return 0.4 * mass * size[0] ** 2 * np.eye(3)
    r, l = size
    a = mass * (3.0 * r * r + l * l) / 12.0
    return np.diag([a, a, 0.5 * mass * r * r])


class FreeBodies:
    """The free bodies of a scene: constants and state arrays (world frame).

    Args:
        bodies: a sequence of dicts ``{'name', 'shape', 'size', 'mass',
            'position' (3,), 'orientation' (3, 3) or quaternion (x, y, z, w),
            'velocity' (3,), 'angular_velocity' (3,), 'inertia' (3, 3)}`` (the
            last four optional: zero twist, the homogeneous solid's inertia
            about its centre; the shape only sets it, any kind goes with an
            explicit inertia).

    Attributes:
        names (nf,); shape (nf,) str; size: list of (k,) arrays; mass (nf,) [kg];
        inertia (nf, 3, 3) about the COM, body frame; inertia_inv the same inverted;
        p, v, w (nf, 3) and R (nf, 3, 3): the state (module docstring).
    """

    def __init__(self, bodies=()):
        bodies = list(bodies)
        nf = len(bodies)
        self.names = tuple(str(b.get("name", "body%d" % j)) for j, b in enumerate(bodies))
        self.shape = tuple(b["shape"] for b in bodies)
        self.size = [np.asarray(b["size"], dtype=float).ravel() for b in bodies]
        self.mass = np.array([float(b["mass"]) for b in bodies], dtype=float)
        self.inertia = np.array([shape_inertia(b["shape"], b["size"], b["mass"]) if b.get("inertia") is None
                                 else _inertia(b["inertia"], self.names[j])
                                 for j, b in enumerate(bodies)]).reshape(nf, 3, 3)
        self.inertia_inv = np.linalg.inv(self.inertia) if nf else np.zeros((0, 3, 3))
        self.p, self.R = np.zeros((nf, 3)), np.tile(np.eye(3), (nf, 1, 1))
        self.v, self.w = np.zeros((nf, 3)), np.zeros((nf, 3))
        for j, b in enumerate(bodies):
            self.set_state(j, b.get("position", (0, 0, 0)), b.get("orientation", np.eye(3)),
                           b.get("velocity", (0, 0, 0)), b.get("angular_velocity", (0, 0, 0)))

    @classmethod
    def from_world(cls, world):
        """The free bodies of a :class:`.world.World` (a world file's ``free:`` entries)."""
        return cls([dict(name=f.name, shape=f.shape.kind, size=f.shape.size, mass=f.mass, inertia=f.inertia,
                         position=f.pose[:3, 3], orientation=f.pose[:3, :3], velocity=f.velocity[:3],
                         angular_velocity=f.velocity[3:]) for f in world.free_bodies])

    def __len__(self):
        return self.mass.shape[0]

    def set_state(self, j, position, orientation, velocity=(0, 0, 0), angular_velocity=(0, 0, 0)):
        """Set body j's pose and twist (world frame; orientation a (3, 3) rotation or a quaternion (x, y, z, w))."""
        o = np.asarray(orientation, dtype=float)
        R = quaternion_matrix(o / np.linalg.norm(o)) if o.shape == (4,) else o
        if R.shape != (3, 3) or not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise InputError("free body %r: orientation must be a rotation (3, 3) or a unit quaternion "
                             "(x, y, z, w), got %r" % (self.names[j], orientation))
        for name, x in (("position", position), ("velocity", velocity), ("angular_velocity", angular_velocity)):
            a = np.asarray(x, dtype=float)
            if a.shape != (3,) or not np.all(np.isfinite(a)):
                raise InputError("free body %r: %s must be 3 finite numbers, got %r" % (self.names[j], name, x))
        self.p[j], self.R[j], self.v[j], self.w[j] = position, R, velocity, angular_velocity

    def quaternions(self):
        """(nf, 4) orientations as unit quaternions (x, y, z, w)."""
        return matrix_quaternion(np.asarray(self.R)).reshape(len(self), 4)


def _inertia(I, name):
    I = np.asarray(I, dtype=float)
    if I.shape != (3, 3) or not np.allclose(I, I.T) or not np.all(np.linalg.eigvalsh(I) > 0):
        raise InputError("free body %r: inertia must be a symmetric positive definite (3, 3) [kg m^2], got %r"
                         % (name, I.tolist()))
    return I
