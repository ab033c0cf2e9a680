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

from ..algorithms.kernels import jit
from ..errors import InputError

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
            'velocity' (3,), 'angular_velocity' (3,)}`` (the last three
            optional, zero by default).

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
        self.inertia = np.array([shape_inertia(b["shape"], b["size"], b["mass"]) for b in bodies]).reshape(nf, 3, 3)
        self.inertia_inv = np.linalg.inv(self.inertia) if nf else np.zeros((0, 3, 3))
        self.p, self.R = np.zeros((nf, 3)), np.tile(np.eye(3), (nf, 1, 1))
        self.v, self.w = np.zeros((nf, 3)), np.zeros((nf, 3))
        for j, b in enumerate(bodies):
            self.set_state(j, b.get("position", (0, 0, 0)), b.get("orientation", np.eye(3)),
                           b.get("velocity", (0, 0, 0)), b.get("angular_velocity", (0, 0, 0)))

    def __len__(self):
        return self.mass.shape[0]

    def set_state(self, j, position, orientation, velocity=(0, 0, 0), angular_velocity=(0, 0, 0)):
        """Set body j's pose and twist (world frame; orientation a (3, 3) rotation or a quaternion (x, y, z, w))."""
        o = np.asarray(orientation, dtype=float)
        R = quaternion_matrix(o) if o.shape == (4,) else o
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
        return np.array([matrix_quaternion(R) for R in self.R]).reshape(len(self), 4)


def quaternion_matrix(q):
    """(3, 3) rotation of a quaternion (x, y, z, w), normalised here."""
    x, y, z, w = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_quaternion(R):
    """Quaternion (x, y, z, w), w >= 0, of a rotation (3, 3) (Shepperd's method)."""
    t = np.trace(R)
    k = int(np.argmax([R[0, 0], R[1, 1], R[2, 2], t]))
    if k == 3:
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        i, j, l = k, (k + 1) % 3, (k + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[l, l])
        q = np.empty(4)
        q[i], q[j], q[l] = 0.25 * s, (R[j, i] + R[i, j]) / s, (R[l, i] + R[i, l]) / s
        q[3] = (R[l, j] - R[j, l]) / s
    return q if q[3] >= 0 else -q


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
def exp_so3(xi, R0, R):
    """R = exp([xi]) R0 (Rodrigues), all (3, 3) but xi (3,)."""
    t = np.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    s_t = 1.0 - t * t / 6.0 + t ** 4 / 120.0 if t < 1e-3 else np.sin(t) / t
    a, _ = _coefficients(t)
    E = np.empty((3, 3))
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
    A = np.empty(3)
    for j in range(R0.shape[0]):
        o = 6 * j
        p[j, :] = x[o:o + 3]
        v[j, :] = xd[o:o + 3]
        exp_so3(x[o + 3:o + 6], R0[j], R[j])
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
