"""The algorithms on a floating or planar base: the shared steps.

The root joint is a chain of 1-DOF joints at the base frame, evaluated at
zero (see :mod:`robot_dynamics.model.configuration`): the compiled kernels
of the fixed-base algorithms then work in the base frame, with the base's
velocity exactly ``v[:nv_root]``. What a 6-DOF (3-DOF) joint adds is a
shift of the root's accelerations (Featherstone, *Rigid Body Dynamics
Algorithms*, sec. 9.3, gravity as a base acceleration, Handbook eq. 3.39)::

    rnea_free(q, v, a)  = rnea_chain(q_k, v, a - b(v) - g_root(q))
    aba_free(q, v, tau) = aba_chain(q_k, v, tau) + (b(v) + g_root(q), 0)

and of the frame for kinematics (``T_world = T_root(q) T_base``). The mass
matrix is the chain's: it depends on the motion subspaces only, equal for
the chain and the joint. The compiled forward dynamics treats the root as
the multi-DOF joint itself (:func:`.aba._aba_root_joint`); the shift
above, on the Python path (external wrenches), gives the same
accelerations.

This module holds the steps every algorithm's root path shares
(:func:`states`, :func:`root_shift`, ...) and imports no algorithm: each
algorithm declares its compiled root variant beside its fixed-base kernel
and its Python root path (``on_root`` of its :class:`.dispatch.Algorithm`,
``_rnea_on_root`` in :mod:`.rnea`, ...); :mod:`.dispatch` alone sends a
root model to them (:func:`.dispatch.on_root`).
"""
import numpy as np

from .. import checks
from .wrench import body_wrenches
from ..errors import InputError
from ..model import configuration as C

_ZEROS = {}      # read-only zero accelerations by nv: nonlinear_effects = rnea(q, qd, 0)


def states(model, q, **velocities):
    """(kernel q, R, p, [velocity-like arrays]) broadcast to one batch shape."""
    qk, R, p = C.kernel_positions(model, q)
    vs = [C._velocity(model, x, name) for name, x in velocities.items()]
    shape = np.broadcast_shapes(qk.shape[:-1], *(x.shape[:-1] for x in vs))
    if shape != qk.shape[:-1]:
        qk = np.broadcast_to(qk, shape + qk.shape[-1:])
        R, p = np.broadcast_to(R, shape + (3, 3)), np.broadcast_to(p, shape + (3,))
    vs = [checks.kernel_block(np.broadcast_to(x, shape + x.shape[-1:])) for x in vs]
    return checks.kernel_block(qk), checks.kernel_block(R), checks.kernel_block(p), vs


def root_shift(model, R, v, gravity=True):
    """(..., nv) zero but the root's coordinates: b(v) + g_root(q) (without ``gravity``: b(v))."""
    s = np.zeros(R.shape[:-2] + (model.nv,))
    if gravity:
        s[..., :model.root_nv] = C.root_gravity(model, R)
    if v is not None:
        s[..., :model.root_nv] += C.root_bias(model, v)
    return s


def wrenches(model, f_ext, qk):
    """f_ext as the kernels' (B, nb, 6) body wrenches for the batch of qk."""
    shape = qk.shape[:-1]
    return body_wrenches(model, f_ext, shape, int(np.prod(shape, dtype=np.int64)))


def zeros(nv):
    """Read-only (nv,) zeros (cached per size)."""
    if nv not in _ZEROS:
        z = np.zeros(nv)
        z.flags.writeable = False
        _ZEROS[nv] = z
    return _ZEROS[nv]


def root_jdot(model, v):
    """(..., nr, nr) D(v) of :func:`robot_dynamics.algorithms.coriolis.coriolis_matrix` on a root, in the root's coordinates (linear first)."""
    axes = _ROOT_AXES[model.root_joint]
    nr = len(axes)
    S = np.zeros((nr, 6))                     # Featherstone (angular; linear) of each chain joint
    for k, (angular, e) in enumerate(axes):
        S[k, (0 if angular else 3) + e] = 1.0
    vr = v[..., :nr]
    D = np.zeros(v.shape[:-1] + (nr, nr))
    for k in range(nr):
        after = vr[..., k + 1:] @ S[k + 1:]    # (..., 6) (w; u)
        w, u = after[..., :3], after[..., 3:]
        sw, su = S[k, :3], S[k, 3:]
        ang = np.cross(w, sw)
        lin = np.cross(w, su) + np.cross(u, sw)
        col = -np.concatenate([lin, ang], axis=-1)          # spatial -> (linear; angular)
        D[..., :, k] = col[..., _ROOT_COORDS[model.root_joint]]
    return D


# Chain joints: (angular?, axis index); the root coordinates as indices of (vx vy vz wx wy wz).
_ROOT_AXES = {"floating": ((False, 0), (False, 1), (False, 2), (True, 0), (True, 1), (True, 2)),
              "planar": ((False, 0), (False, 1), (True, 2))}
_ROOT_COORDS = {"floating": [0, 1, 2, 3, 4, 5], "planar": [0, 1, 5]}


def checks_out(out, shape):
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == shape and out.flags.writeable):
        raise InputError("out must be a writable float64 array of shape %s, got %s"
                         % (shape, getattr(out, "shape", type(out).__name__)))


def unsupported(model, what):
    """Raise the InputError of a function that needs a fixed base."""
    raise InputError("%s needs a fixed-base model; %r has a %s root joint (nq=%d, nv=%d). Supported on "
                     "floating and planar bases: rnea, gravity_torques, nonlinear_effects, mass_matrix, aba, "
                     "forward_kinematics, link_pose, jacobian, kinetic_energy, potential_energy, "
                     "center_of_mass, com_jacobian, centroidal_momentum(_matrix), operational_space, "
                     "jacobian_derivative_times_qd, dynamically_consistent_inverse, cartesian_dynamics, "
                     "integrate, difference, normalize, neutral, rnea_derivatives, aba_derivatives, "
                     "gravity_derivatives, coriolis_derivatives and the Simulator"
                     % (what, model.name, model.root_joint, model.nq, model.nv))


def require_fixed(model, what):
    if model.root_joint is not None:
        unsupported(model, what)



# --- derivatives, in the tangent space ------------------------------------------------------
def root_bias_jacobian(model, v):
    """(..., nr, nr) d b / d v_root of :func:`robot_dynamics.model.configuration.root_bias`."""
    if model.root_joint == "floating":
        u, w = v[..., 0:3], v[..., 3:6]
        J = np.zeros(v.shape[:-1] + (6, 6))
        J[..., 0:3, 0:3] = -C._skew(w)                          # d(u x w)/du
        J[..., 0:3, 3:6] = C._skew(u)                           # d(u x w)/dw
        J[..., 3, 4], J[..., 3, 5] = w[..., 2], w[..., 1]       # d(w1 w2, -w0 w2, w0 w1)/dw
        J[..., 4, 3], J[..., 4, 5] = -w[..., 2], -w[..., 0]
        J[..., 5, 3], J[..., 5, 4] = w[..., 1], w[..., 0]
        return J
    J = np.zeros(v.shape[:-1] + (3, 3))                         # b = (vy w, -vx w, 0)
    J[..., 0, 1], J[..., 0, 2] = v[..., 2], v[..., 1]
    J[..., 1, 0], J[..., 1, 2] = -v[..., 2], -v[..., 0]
    return J


