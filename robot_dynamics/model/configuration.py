"""Configurations of a floating or planar base: q, v and the root's pose.

Conventions (Pinocchio's, so that models and data move between the two):

- Fixed base: ``q`` and ``v = qd`` both have ``nq = nv`` entries, the
  joints in ``model.joint_names`` order.
- Floating base (``model.root_joint == "floating"``): ``q = (x, y, z, qx,
  qy, qz, qw, joints...)``, the base position in the world frame and the
  unit quaternion world <- base (scalar last), ``nq = nv + 1``. The
  velocity ``v = (vx, vy, vz, wx, wy, wz, joint rates...)`` is the base's
  linear velocity (of the base origin) and angular velocity, both in the
  base frame; accelerations are the derivatives of those components (the
  base's spatial acceleration in its own frame), torques ``(fx, fy, fz,
  nx, ny, nz, joint torques...)`` the wrench on the base in its frame.
- Planar base (``"planar"``): ``q = (x, y, theta, joints...)`` in the
  plane of the root placement (the xy-plane of the world unless the URDF's
  planar joint is placed otherwise), ``v = (vx, vy, wz, ...)`` in the base
  frame; ``nq = nv``. (Pinocchio stores the angle as ``(cos, sin)``.)

A floating root's quaternion is normalised on every use when its norm is
within ``QUATERNION_TOLERANCE`` of 1 (integration round-off, float32
messages); a zero, non-finite or farther-off quaternion is refused with an
InputError.

How the algorithms use this (Featherstone, *Rigid Body Dynamics
Algorithms*, ch. 9, floating bases): the root joint is a chain of nv_root
1-DOF joints at the base frame (prismatic x, y, z then revolute x, y, z;
planar: prismatic x, y, revolute z), evaluated at zero, so that the
kernels work in the base frame with the base's velocity exactly ``v[:6]``.
Two things differ from a 6-DOF joint: the chain's velocity-product
acceleration ``b(v) = sum_k v_(k-1) x S_k v_k`` (:func:`root_bias`),
and gravity, which becomes the base acceleration ``-R^T g``
(:func:`root_gravity`; Handbook eq. 3.39). Both enter as a shift of the
root's coordinates of qdd.
"""
import numpy as np

from ..errors import InputError

QUATERNION_TOLERANCE = 1e-2


# --- the root's pose ------------------------------------------------------------------------
def quaternion_matrix(quat):
    """(..., 4) unit quaternions (x, y, z, w) -> (..., 3, 3) rotation matrices."""
    x, y, z, w = np.moveaxis(quat, -1, 0)
    R = np.empty(quat.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - z * w)
    R[..., 0, 2] = 2 * (x * z + y * w)
    R[..., 1, 0] = 2 * (x * y + z * w)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - x * w)
    R[..., 2, 0] = 2 * (x * z - y * w)
    R[..., 2, 1] = 2 * (y * z + x * w)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def matrix_quaternion(R):
    """(..., 3, 3) rotations -> (..., 4) unit quaternions (x, y, z, w), w >= 0.

    Shepperd's method (J. Guidance and Control 1(3), 1978): the square root is
    taken of the largest of ``1 + trace``, ``1 + 2 R_ii - trace``, so it never
    divides by a small number. The package's one conversion (the impedance laws,
    the base state, the floating-base tests)."""
    R = np.asarray(R, dtype=float)
    flat = R.reshape(-1, 3, 3)
    out = np.empty((flat.shape[0], 4))
    for k, r in enumerate(flat):
        t = np.trace(r)
        i = int(np.argmax([t, r[0, 0], r[1, 1], r[2, 2]]))
        if i == 0:
            s = 2.0 * np.sqrt(1.0 + t)
            out[k] = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, s / 4]
        else:
            a, b, c = i - 1, i % 3, (i + 1) % 3
            s = 2.0 * np.sqrt(1.0 + r[a, a] - r[b, b] - r[c, c])
            out[k, a], out[k, b], out[k, c] = s / 4, (r[b, a] + r[a, b]) / s, (r[c, a] + r[a, c]) / s
            out[k, 3] = (r[c, b] - r[b, c]) / s
    out *= np.where(out[:, 3:] < 0, -1.0, 1.0)
    return out.reshape(R.shape[:-2] + (4,))


def _unit_quaternions(quat, name):
    n = np.linalg.norm(quat, axis=-1, keepdims=True)
    bad = ~(np.abs(n - 1.0) <= QUATERNION_TOLERANCE)
    if np.any(bad):
        k = tuple(int(i) for i in np.argwhere(bad[..., 0])[0])
        raise InputError("%s: the base quaternion (qx, qy, qz, qw) = %s at %s has norm %r; it must be a unit "
                         "quaternion (norm within %g of 1; rd.normalize(model, q) normalises one)"
                         % (name, np.round(quat[k], 6).tolist(), list(k), float(n[k][0]), QUATERNION_TOLERANCE))
    return quat / n


def base_pose(model, q, name="q"):
    """Pose world <- base of the root: ``(R (..., 3, 3), p (..., 3))``.

    Args:
        q: (..., nq) configurations (checked: the last axis has nq entries).
    For a fixed base, the identity (the base frame is the world frame).
    """
    q = _config(model, q, name)
    shape = q.shape[:-1]
    if model.root_joint == "floating":
        R = quaternion_matrix(_unit_quaternions(q[..., 3:7], name))
        p = q[..., :3].copy()
    elif model.root_joint == "planar":
        c, s = np.cos(q[..., 2]), np.sin(q[..., 2])
        R = np.zeros(shape + (3, 3))
        R[..., 0, 0], R[..., 0, 1], R[..., 1, 0], R[..., 1, 1], R[..., 2, 2] = c, -s, s, c, 1.0
        p = np.zeros(shape + (3,))
        p[..., :2] = q[..., :2]
    else:
        return np.broadcast_to(np.eye(3), shape + (3, 3)), np.zeros(shape + (3,))
    T = model.root_placement
    if not np.array_equal(T, np.eye(4)):
        R, p = T[:3, :3] @ R, p @ T[:3, :3].T + T[:3, 3]
    return R, p


def _config(model, q, name):
    """q as a float array (..., nq), or the InputError that names the layout."""
    return _sized(q, name, "nq", model.nq, model)


def _velocity(model, v, name):
    """v as a float array (..., nv), or the InputError that names the layout."""
    return _sized(v, name, "nv", model.nv, model)


def _sized(x, name, size_name, size, model):
    from ..checks import as_float_array
    x = as_float_array(x, name)
    if x.ndim == 0 or x.shape[-1] != size:
        got = "a scalar" if x.ndim == 0 else "%d values" % x.shape[-1]
        raise InputError("%s has %s, model %s is %d (%s)" % (name, got, size_name, size, _layout(model)))
    return x


def _layout(model):
    n = len(model.joint_names)
    if model.root_joint == "floating":
        return "q = (x, y, z, qx, qy, qz, qw, %d joints), v = (vx, vy, vz, wx, wy, wz, %d joints)" % (n, n)
    if model.root_joint == "planar":
        return "q = (x, y, theta, %d joints), v = (vx, vy, wz, %d joints)" % (n, n)
    return "%d joints" % n


# --- what the kernels see -------------------------------------------------------------------
def kernel_positions(model, q, name="q"):
    """(kernel q (..., nv), R (..., 3, 3), p (..., 3)): the root chain's
    coordinates at zero followed by the joints, and the root's pose."""
    q = _config(model, q, name)
    R, p = base_pose(model, q, name)
    qk = np.zeros(q.shape[:-1] + (model.nv,))
    qk[..., model.root_nv:] = q[..., model.root_nq:]
    return qk, R, p


def root_bias(model, v):
    """(..., nv_root) b(v): the root chain's velocity-product acceleration
    that a 6-DOF (3-DOF) joint does not have, in the root's coordinates."""
    if model.root_joint == "floating":
        u, w = v[..., :3], v[..., 3:6]
        b = np.empty(v.shape[:-1] + (6,))
        b[..., :3] = np.cross(u, w)
        b[..., 3] = w[..., 1] * w[..., 2]
        b[..., 4] = -w[..., 0] * w[..., 2]
        b[..., 5] = w[..., 0] * w[..., 1]
        return b
    b = np.zeros(v.shape[:-1] + (3,))
    b[..., 0] = v[..., 1] * v[..., 2]
    b[..., 1] = -v[..., 0] * v[..., 2]
    return b


def root_gravity(model, R):
    """(..., nv_root) the gravity acceleration in the root's coordinates:
    ``R^T g`` (linear) and zero (angular). For a planar root only its
    in-plane part; the part along the plane normal is constant and the
    kernels apply it themselves (Model: packed GRAVITY)."""
    gb = np.einsum("...ji,j->...i", R, model.gravity)
    if model.root_joint == "floating":
        return np.concatenate([gb, np.zeros(gb.shape)], axis=-1)
    out = np.zeros(gb.shape[:-1] + (3,))
    out[..., :2] = gb[..., :2]
    return out


# --- the configuration space ----------------------------------------------------------------
def neutral(model):
    """(nq,) the neutral configuration: root at the origin (identity
    quaternion), joints at zero moved inside their limits."""
    return model.neutral()


def normalize(model, q):
    """q with each floating root's quaternion scaled to unit norm (a copy);
    other models: q unchanged (a copy). A zero quaternion is refused."""
    q = _config(model, q, "q").copy()
    if model.root_joint == "floating":
        n = np.linalg.norm(q[..., 3:7], axis=-1, keepdims=True)
        if np.any(~(n > 0)) or not np.all(np.isfinite(n)):
            raise InputError("q: a base quaternion is zero or not finite and cannot be normalised")
        q[..., 3:7] /= n
    return q


def integrate(model, q, v, dt=1.0):
    """The configuration reached from ``q`` moving with constant velocity
    ``v`` for ``dt`` seconds: joints ``q + v dt``; a floating root ``M
    exp(v dt)`` on SE(3), a planar one on SE(2) (v in the base frame, as
    Pinocchio's ``integrate(model, q, v * dt)``).

    Args:
        q: (..., nq); v: (..., nv) [m/s, rad/s]; dt: step [s].
    Returns:
        (..., nq) (the quaternion unit).
    """
    q = _config(model, q, "q")
    v = _velocity(model, v, "v") * dt
    shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    q, v = np.broadcast_to(q, shape + (model.nq,)), np.broadcast_to(v, shape + (model.nv,))
    out = np.empty(shape + (model.nq,))
    out[..., model.root_nq:] = q[..., model.root_nq:] + v[..., model.root_nv:]
    if model.root_joint == "floating":
        quat = _unit_quaternions(q[..., 3:7], "q")
        _, dp = _exp6(v[..., :3], v[..., 3:6])
        out[..., :3] = q[..., :3] + np.einsum("...ij,...j->...i", quaternion_matrix(quat), dp)
        turned = quaternion_multiply(quat, _quaternion_exp(v[..., 3:6]))
        out[..., 3:7] = turned / np.linalg.norm(turned, axis=-1, keepdims=True)
    elif model.root_joint == "planar":
        c, s = np.cos(q[..., 2]), np.sin(q[..., 2])
        dx, dy = _exp2(v[..., 0], v[..., 1], v[..., 2])
        out[..., 0] = q[..., 0] + c * dx - s * dy
        out[..., 1] = q[..., 1] + s * dx + c * dy
        out[..., 2] = q[..., 2] + v[..., 2]
    return out


def difference(model, q0, q1):
    """(..., nv) the velocity that :func:`integrate` needs to go from ``q0``
    to ``q1`` in one second: ``integrate(q0, difference(q0, q1)) == q1``
    (log on SE(3) / SE(2) for the root, ``q1 - q0`` for the joints)."""
    q0, q1 = _config(model, q0, "q0"), _config(model, q1, "q1")
    shape = np.broadcast_shapes(q0.shape[:-1], q1.shape[:-1])
    q0, q1 = np.broadcast_to(q0, shape + (model.nq,)), np.broadcast_to(q1, shape + (model.nq,))
    v = np.empty(shape + (model.nv,))
    v[..., model.root_nv:] = q1[..., model.root_nq:] - q0[..., model.root_nq:]
    if model.root_joint == "floating":
        R0 = quaternion_matrix(_unit_quaternions(q0[..., 3:7], "q0"))
        R1 = quaternion_matrix(_unit_quaternions(q1[..., 3:7], "q1"))
        dR = np.swapaxes(R0, -1, -2) @ R1
        dp = np.einsum("...ji,...j->...i", R0, q1[..., :3] - q0[..., :3])
        v[..., :3], v[..., 3:6] = _log6(dR, dp)
    elif model.root_joint == "planar":
        a = np.arctan2(np.sin(q1[..., 2] - q0[..., 2]), np.cos(q1[..., 2] - q0[..., 2]))
        c, s = np.cos(q0[..., 2]), np.sin(q0[..., 2])
        ex, ey = q1[..., 0] - q0[..., 0], q1[..., 1] - q0[..., 1]
        lx, ly = c * ex + s * ey, -s * ex + c * ey                # in the q0 frame
        A, B = _V2(a)
        det = A * A + B * B
        v[..., 0], v[..., 1], v[..., 2] = (A * lx + B * ly) / det, (-B * lx + A * ly) / det, a
    return v


# --- exponential and logarithm (Lie groups SE(3), SE(2)) -----------------------------------
def _skew(w):
    S = np.zeros(w.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -w[..., 2], w[..., 1], -w[..., 0]
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = w[..., 2], -w[..., 1], w[..., 0]
    return S


def _coefficients(t):
    """(sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3), series near 0."""
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    a = np.where(small, 1 - t * t / 6, np.sin(ts) / ts)
    b = np.where(small, 0.5 - t * t / 24, (1 - np.cos(ts)) / ts ** 2)
    c = np.where(small, 1.0 / 6 - t * t / 120, (ts - np.sin(ts)) / ts ** 3)
    return a, b, c


def _exp6(u, w):
    """exp of the twist (u, w) (linear, angular): (R (..., 3, 3), p (..., 3))."""
    t = np.linalg.norm(w, axis=-1)
    a, b, c = _coefficients(t)
    W = _skew(w)
    W2 = W @ W
    eye = np.eye(3)
    R = eye + a[..., None, None] * W + b[..., None, None] * W2
    V = eye + b[..., None, None] * W + c[..., None, None] * W2
    return R, np.einsum("...ij,...j->...i", V, u)


def _log6(R, p):
    """log of the pose (R, p): the twist (u, w) with exp6(u, w) == (R, p)."""
    cos = np.clip((np.trace(R, axis1=-2, axis2=-1) - 1) / 2, -1.0, 1.0)
    t = np.arccos(cos)
    vee = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], axis=-1)
    a, b, c = _coefficients(t)
    w = vee / (2 * a[..., None])
    near_pi = t > np.pi - 1e-6
    if np.any(near_pi):                                     # sin t ~ 0: the axis from R + I
        for k in zip(*np.nonzero(near_pi)) if near_pi.ndim else [()]:
            B = (R[k] + np.eye(3)) / 2
            i = int(np.argmax(np.diag(B)))
            axis = B[:, i] / np.sqrt(B[i, i])
            w[k] = axis * t[k]
    W = _skew(w)
    # V^-1 = I - W/2 + (1/t^2) (1 - a / (2 b)) W^2
    ts = np.where(t < 1e-4, 1.0, t)
    d = np.where(t < 1e-4, 1.0 / 12 + t * t / 720, (1 - a / (2 * b)) / ts ** 2)
    Vinv = np.eye(3) - 0.5 * W + d[..., None, None] * (W @ W)
    return np.einsum("...ij,...j->...i", Vinv, p), w


def _quaternion_exp(w):
    """(..., 4) the unit quaternion (x, y, z, w) of the rotation vector w."""
    t = np.linalg.norm(w, axis=-1, keepdims=True)
    small = t < 1e-8
    ts = np.where(small, 1.0, t)
    k = np.where(small, 0.5 - t * t / 48, np.sin(ts / 2) / ts)
    return np.concatenate([k * w, np.cos(t / 2)], axis=-1)


def quaternion_multiply(a, b):
    """Hamilton product a b of (..., 4) quaternions (x, y, z, w)."""
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv),
                           aw * bw - np.sum(av * bv, axis=-1, keepdims=True)], axis=-1)


def _V2(a):
    """SE(2): the left Jacobian [[A, -B], [B, A]] of the angle a: A = sin a / a, B = (1 - cos a) / a."""
    small = np.abs(a) < 1e-6
    aa = np.where(small, 1.0, a)
    A = np.where(small, 1 - a * a / 6, np.sin(aa) / aa)
    B = np.where(small, a / 2, (1 - np.cos(aa)) / aa)
    return A, B


def _exp2(vx, vy, w):
    A, B = _V2(w)
    return A * vx - B * vy, B * vx + A * vy
