"""The algorithms on a floating or planar base.

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
the chain and the joint. Every function here takes the public arguments of
its namesake and returns what it returns.
"""
import numpy as np

from .dispatch import run
from ..errors import InputError
from ..model import configuration as C


def _states(model, q, **velocities):
    """(kernel q, R, p, [velocity-like arrays]) broadcast to one batch shape."""
    qk, R, p = C.kernel_positions(model, q)
    vs = [C._velocity(model, x, name) for name, x in velocities.items()]
    shape = np.broadcast_shapes(qk.shape[:-1], *(x.shape[:-1] for x in vs))
    if shape != qk.shape[:-1]:
        qk = np.broadcast_to(qk, shape + qk.shape[-1:])
        R, p = np.broadcast_to(R, shape + (3, 3)), np.broadcast_to(p, shape + (3,))
    vs = [np.ascontiguousarray(np.broadcast_to(x, shape + x.shape[-1:])) for x in vs]
    return np.ascontiguousarray(qk), R, p, vs


def _root_shift(model, R, v):
    """(..., nv) zero but the root's coordinates: b(v) + g_root(q)."""
    s = np.zeros(R.shape[:-2] + (model.nv,))
    s[..., :model.root_nv] = C.root_gravity(model, R)
    if v is not None:
        s[..., :model.root_nv] += C.root_bias(model, v)
    return s


def rnea(model, q, qd, qdd, f_ext, data, out):
    from .rnea import RNEA, RNEA_FEXT
    from .wrench import body_wrenches
    qk, R, p, (v, a) = _states(model, q, qd=qd, qdd=qdd)
    ak = a - _root_shift(model, R, v)
    if f_ext is None:
        return run(RNEA, model, (qk, v, ak), data, out)
    shape = qk.shape[:-1]
    FEXT = body_wrenches(model, f_ext, shape, int(np.prod(shape, dtype=np.int64)))
    return run(RNEA_FEXT, model, (qk, v, ak), data, out, extra=(FEXT,))


def gravity_torques(model, q, data, out):
    from .rnea import RNEA
    qk, R, p, _ = _states(model, q)
    zero = np.zeros_like(qk)
    return run(RNEA, model, (qk, zero, -_root_shift(model, R, None)), data, out)


def nonlinear_effects(model, q, qd, data, out):
    from .rnea import RNEA
    qk, R, p, (v,) = _states(model, q, qd=qd)
    return run(RNEA, model, (qk, v, -_root_shift(model, R, v)), data, out)


def mass_matrix(model, q, data, out):
    from .crba import CRBA
    qk, _, _, _ = _states(model, q)
    return run(CRBA, model, (qk,), data, out)


def aba(model, q, qd, tau, f_ext, data, out):
    from .aba import ABA, ABA_FEXT, FD_CRB, _NO_FEXT, _singular
    from .wrench import body_wrenches
    qk, R, p, (v, t) = _states(model, q, qd=qd, tau=tau)
    if f_ext is None:
        algorithm, fext = (FD_CRB if model.has_mimic else ABA), _NO_FEXT
    else:
        shape = qk.shape[:-1]
        algorithm, fext = ABA_FEXT, body_wrenches(model, f_ext, shape, int(np.prod(shape, dtype=np.int64)))
    qdd = run(algorithm, model, (qk, v, t), data, out, extra=(fext, model.has_mimic), on_error=_singular)
    qdd += _root_shift(model, R, v)
    return qdd


def forward_kinematics(model, q, data):
    from .kinematics import FORWARD_KINEMATICS
    qk, R, p, _ = _states(model, q)
    nl = len(model.link_names)
    T = run(FORWARD_KINEMATICS, model, (qk,), data, tail=(nl, 4, 4),
            extra=(model.link_body, model.link_pose_rows))
    moving = model.link_body >= 0                    # the world's links stay where they are
    Tw = T.copy()
    Tw[..., moving, :3, :] = np.einsum("...ij,...ljk->...lik", R, T[..., moving, :3, :])
    Tw[..., moving, :3, 3] += p[..., None, :]
    return {name: Tw[..., l, :, :] for l, name in enumerate(model.link_names)}


def jacobian(model, q, l, x, data, out):
    from .kinematics import JACOBIAN
    qk, R, p, _ = _states(model, q)
    J = run(JACOBIAN, model, (qk,), data, None, tail=(6, model.nv),
            extra=(model.link_body, model.link_pose_rows, l, x))
    Jw = np.concatenate([R @ J[..., :3, :], R @ J[..., 3:, :]], axis=-2)
    if out is None:
        return Jw
    checks_out(out, Jw.shape)
    out[...] = Jw
    return out


def kinetic_energy(model, q, qd, data, out):
    from .energy import KINETIC, _scalar
    qk, _, _, (v,) = _states(model, q, qd=qd)
    return _scalar(run(KINETIC, model, (qk, v), data, out), out)


def potential_energy(model, q, out):
    from .centroidal import _composite
    _, c, m = _composite(model, q)
    U = -m * (c @ model.gravity)
    if out is None:
        return float(U) if np.ndim(U) == 0 else U
    out[...] = U
    return out


def checks_out(out, shape):
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == shape and out.flags.writeable):
        raise InputError("out must be a writable float64 array of shape %s, got %s"
                         % (shape, getattr(out, "shape", type(out).__name__)))


def unsupported(model, what):
    """Raise the InputError of a function that needs a fixed base."""
    raise InputError("%s needs a fixed-base model; %r has a %s root joint (nq=%d, nv=%d). Supported on "
                     "floating and planar bases: rnea, gravity_torques, nonlinear_effects, mass_matrix, aba, "
                     "forward_kinematics, link_pose, jacobian, kinetic_energy, potential_energy, "
                     "center_of_mass, com_jacobian, centroidal_momentum(_matrix), integrate, difference, "
                     "normalize, neutral and the Simulator"
                     % (what, model.name, model.root_joint, model.nq, model.nv))


def require_fixed(model, what):
    if model.root_joint is not None:
        unsupported(model, what)

