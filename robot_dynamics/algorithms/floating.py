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
the chain and the joint. The compiled forward dynamics treats the root as
the multi-DOF joint itself (:func:`.root_kernels._aba_root_joint`); the
shift above, on the Python path (external wrenches), gives the same
accelerations. Every function here takes the
public arguments of its namesake and returns what it returns.
"""
import numpy as np

from . import checks
from .dispatch import run
from ..errors import InputError
from ..model import configuration as C

_NO_WORK = np.empty(0)
_ZEROS = {}      # read-only zero accelerations by nv: nonlinear_effects = rnea(q, qd, 0)

_K = []          # the compiled entry points (root_kernels), imported on first use


def _one(name, model, args, data, out, shape):
    """One state through root_kernels' compiled entry ``name``: the result, or
    None when the call does not fit (the Python path then checks and says why)."""
    if type(args[0]) is not np.ndarray or args[0].ndim != 1:
        return None
    if not _K:
        from . import root_kernels
        _K.append(root_kernels)
    table, W = model.packed, _NO_WORK                # the entries take the model's own table
    if data is not None:
        if data.model is not model:
            data.bind(model)
        W = data.work
    res = out if out is not None else np.empty(shape)
    try:
        status = getattr(_K[0], name)(table, *args, res, W)
    except TypeError:                      # lists, other dtypes, non-contiguous
        return None
    return res if status == 0 else None


def _many(name, model, args, out, tail):
    """A batch through root_kernels' compiled ``name``: the result, or None
    when the arguments do not fit (the Python path then checks and says why)."""
    if not _K:
        from . import root_kernels
        _K.append(root_kernels)
    try:
        arrays = [np.asarray(x, dtype=np.float64) for x in args]
    except (TypeError, ValueError):
        return None
    sizes = [model.nq] + [model.nv] * (len(arrays) - 1)
    if any(a.ndim == 0 or a.shape[-1] != n for a, n in zip(arrays, sizes)):
        return None
    try:
        shape = np.broadcast_shapes(*(a.shape[:-1] for a in arrays))
    except ValueError:
        return None
    B = int(np.prod(shape, dtype=np.int64))
    blocks = [checks.kernel_block(np.broadcast_to(a, shape + a.shape[-1:]).reshape(B, n))
              for a, n in zip(arrays, sizes)]
    if out is not None:
        if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == shape + tail
                and out.flags.c_contiguous and out.flags.writeable):
            return None
        res = out.reshape((B,) + tail)
    else:
        res = np.empty((B,) + tail)
    if not getattr(_K[0], name)(model.packed, *blocks, res):
        return None
    return out if out is not None else res.reshape(shape + tail)


def _states(model, q, **velocities):
    """(kernel q, R, p, [velocity-like arrays]) broadcast to one batch shape."""
    qk, R, p = C.kernel_positions(model, q)
    vs = [C._velocity(model, x, name) for name, x in velocities.items()]
    shape = np.broadcast_shapes(qk.shape[:-1], *(x.shape[:-1] for x in vs))
    if shape != qk.shape[:-1]:
        qk = np.broadcast_to(qk, shape + qk.shape[-1:])
        R, p = np.broadcast_to(R, shape + (3, 3)), np.broadcast_to(p, shape + (3,))
    vs = [checks.kernel_block(np.broadcast_to(x, shape + x.shape[-1:])) for x in vs]
    return checks.kernel_block(qk), checks.kernel_block(R), checks.kernel_block(p), vs


def _root_shift(model, R, v, gravity=True):
    """(..., nv) zero but the root's coordinates: b(v) + g_root(q) (without ``gravity``: b(v))."""
    s = np.zeros(R.shape[:-2] + (model.nv,))
    if gravity:
        s[..., :model.root_nv] = C.root_gravity(model, R)
    if v is not None:
        s[..., :model.root_nv] += C.root_bias(model, v)
    return s


def rnea(model, q, qd, qdd, f_ext, data, out):
    if f_ext is None:
        res = _one("rnea_root_one", model, (q, qd, qdd), data, out, model.nv)
        if res is None and np.ndim(q) > 1:
            res = _many("rnea_root_batch", model, (q, qd, qdd), out, (model.nv,))
        if res is not None:
            return res
    from .rnea import RNEA, RNEA_FEXT
    qk, R, p, (v, a) = _states(model, q, qd=qd, qdd=qdd)
    ak = a - _root_shift(model, R, v)
    if f_ext is None:
        return run(RNEA, model, (qk, v, ak), data, out)
    return run(RNEA_FEXT, model, (qk, v, ak), data, out, extra=(_body_wrenches(model, f_ext, qk),))


def _body_wrenches(model, f_ext, qk):
    """f_ext as the kernels' (B, nb, 6) body wrenches for the batch of qk."""
    from .wrench import body_wrenches
    shape = qk.shape[:-1]
    return body_wrenches(model, f_ext, shape, int(np.prod(shape, dtype=np.int64)))


def gravity_torques(model, q, data, out):
    res = _one("gravity_root_one", model, (q,), data, out, model.nv)
    if res is None and np.ndim(q) > 1:
        res = _many("gravity_root_batch", model, (q,), out, (model.nv,))
    if res is not None:
        return res
    from .rnea import RNEA
    qk, R, p, _ = _states(model, q)
    zero = np.zeros_like(qk)
    return run(RNEA, model, (qk, zero, -_root_shift(model, R, None)), data, out)


def nonlinear_effects(model, q, qd, data, out):
    zero = _zero(model.nv) if isinstance(qd, np.ndarray) and qd.ndim == 1 else (
        np.zeros(np.shape(qd)) if isinstance(qd, np.ndarray) else None)           # rnea(q, qd, 0)
    res = None if zero is None else _one("rnea_root_one", model, (q, qd, zero), data, out, model.nv)
    if res is None and zero is not None and np.ndim(q) > 1:
        res = _many("rnea_root_batch", model, (q, qd, zero), out, (model.nv,))
    if res is not None:
        return res
    from .rnea import RNEA
    qk, R, p, (v,) = _states(model, q, qd=qd)
    return run(RNEA, model, (qk, v, -_root_shift(model, R, v)), data, out)


def _zero(nv):
    if nv not in _ZEROS:
        z = np.zeros(nv)
        z.flags.writeable = False
        _ZEROS[nv] = z
    return _ZEROS[nv]


def mass_matrix(model, q, data, out):
    res = _one("crba_root_one", model, (q,), data, out, (model.nv, model.nv))
    if res is None and np.ndim(q) > 1:
        res = _many("mass_root_batch", model, (q,), out, (model.nv, model.nv))
    if res is not None:
        return res
    from .crba import CRBA
    qk, _, _, _ = _states(model, q)
    return run(CRBA, model, (qk,), data, out)


def aba(model, q, qd, tau, f_ext, data, out):
    if f_ext is None:
        res = _one("aba_root_one", model, (q, qd, tau), data, out, model.nv)
        if res is None and np.ndim(q) > 1:
            res = _many("aba_root_batch", model, (q, qd, tau), out, (model.nv,))
        if res is not None:
            return res
    from .aba import ABA, ABA_FEXT, FD_CRB, _NO_FEXT, _singular
    qk, R, p, (v, t) = _states(model, q, qd=qd, tau=tau)
    if f_ext is None:
        algorithm, fext = (FD_CRB if model.has_mimic else ABA), _NO_FEXT
    else:
        algorithm, fext = ABA_FEXT, _body_wrenches(model, f_ext, qk)
    qdd = run(algorithm, model, (qk, v, t), data, out, extra=(fext, model.has_mimic), on_error=_singular)
    qdd += _root_shift(model, R, v)
    return qdd


def coriolis_matrix(model, q, qd, data, out):
    """The chain's C with its root columns corrected: the chain's Jacobians
    change with the root's virtual angles, a 6-DOF joint's do not. In the body
    factorisation ``C = sum_i J_i^T (I_i Jdot_i + (v_i x* I_i - I_i v_i x) J_i)``
    that changes only ``Jdot`` of the root columns, by the same matrix for
    every body: ``Jdot_chain - Jdot_joint = X_i<-base D(v)``, column k of D
    ``-v_after_k x S_k`` (v_after_k the root velocity of the chain's joints
    after k). So ``C = C_chain - M[:, :nr] D(v)``; ``D(v) v_root = b(v)``."""
    from .coriolis import CORIOLIS
    from .crba import CRBA
    qk, _, _, (v,) = _states(model, q, qd=qd)
    Cc = run(CORIOLIS, model, (qk, v), data, out)
    M = run(CRBA, model, (qk,), data)
    nr = model.root_nv
    Cc[..., :, :nr] -= M[..., :, :nr] @ _root_jdot(model, v)
    return Cc


def _root_jdot(model, v):
    """(..., nr, nr) D(v) of :func:`coriolis_matrix`, in the root's coordinates (linear first)."""
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
                     "center_of_mass, com_jacobian, centroidal_momentum(_matrix), operational_space, "
                     "jacobian_derivative_times_qd, dynamically_consistent_inverse, cartesian_dynamics, "
                     "integrate, difference, normalize, neutral, rnea_derivatives, aba_derivatives, "
                     "gravity_derivatives, coriolis_derivatives and the Simulator"
                     % (what, model.name, model.root_joint, model.nq, model.nv))


def require_fixed(model, what):
    if model.root_joint is not None:
        unsupported(model, what)



# --- derivatives, in the tangent space ------------------------------------------------------
def rnea_derivatives(model, q, qd, qdd, f_ext, data, gravity=True):
    """``(dtau_dq, dtau_dv, M)``, each (..., nv, nv), of a floating or planar model
    (without ``gravity``: of the RNEA without gravity, ``c(q, v) + M a``, and no ``f_ext``).

    The columns of ``dtau_dq`` are derivatives along the tangent space: the
    root moved as ``integrate(q, dq)`` (a base-frame twist, Pinocchio's
    convention), the joints added to. The kernels' RNEA derivatives
    (Carpentier and Mansard, RSS 2018) of the root chain at zero, at the
    chain's acceleration ``a_k = a - b(v) - g_root(q)`` (as :func:`rnea`),
    are exact for the joints' columns; the root's columns follow from what
    ``a_k`` depends on:

    - velocity: ``b(v)`` is the chain's velocity product, so
      ``dtau/dv = dtau_k/dv - M[:, root] db/dv``;
    - position: in the base frame the dynamics depend on the base pose only
      through gravity ``g_b = R^T g``, which a base rotation ``delta`` turns
      into ``g_b + g_b x delta``; with ``dtau/dg_b = -M[:, root linear]``
      (gravity is a base acceleration), ``dtau/d delta = -M[:, root linear]
      [g_b x]``, and a translation changes nothing. Without gravity nothing
      depends on the base pose: the root's position columns are zero.
    """
    from .derivatives import CORIOLIS_DERIVATIVES, RNEA_DERIVATIVES, RNEA_DERIVATIVES_FEXT
    qk, R, p, (v, a) = _states(model, q, qd=qd, qdd=qdd)
    ak = checks.kernel_block(a - _root_shift(model, R, v, gravity))
    tail = (3, model.nv, model.nv)
    if f_ext is None:
        out = run(RNEA_DERIVATIVES if gravity else CORIOLIS_DERIVATIVES, model, (qk, v, ak), data, tail=tail)
    else:
        out = run(RNEA_DERIVATIVES_FEXT, model, (qk, v, ak), data, tail=tail,
                  extra=(_body_wrenches(model, f_ext, qk), True))
    dq, dv, M = out[..., 0, :, :], out[..., 1, :, :], out[..., 2, :, :]
    nr = model.root_nv
    dv[..., :, :nr] -= M[..., :, :nr] @ _root_bias_jacobian(model, v)
    dq[..., :, :nr] = 0.0
    if not gravity:
        return dq, dv, M
    gb = np.einsum("...ji,j->...i", R, model.gravity)           # gravity in the base frame
    if model.root_joint == "floating":
        dq[..., :, 3:6] = -M[..., :, 0:3] @ C._skew(gb)
    else:                                                       # theta turns g_b by g_b x e_z
        dq[..., :, 2] = -(M[..., :, 0] * gb[..., None, 1] - M[..., :, 1] * gb[..., None, 0])
    return dq, dv, M


def _root_bias_jacobian(model, v):
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


def aba_derivatives(model, q, qd, tau, f_ext, data):
    """``(dqdd_dq, dqdd_dv, Minv)`` of a floating or planar model, in the
    tangent space as :func:`rnea_derivatives`: with ``qdd = aba(q, v, tau)``,
    ``dqdd/dq = -M^-1 dtau/dq``, ``dqdd/dv = -M^-1 dtau/dv``, ``dqdd/dtau = M^-1``
    (Carpentier and Mansard, RSS 2018, sec. IV)."""
    from .aba import _singular
    qdd = aba(model, q, qd, tau, f_ext, data, None)
    dq, dv, M = rnea_derivatives(model, q, qd, qdd, f_ext, data)
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        _singular(model)
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + np.swapaxes(Minv, -1, -2))
    return -Minv @ dq, -Minv @ dv, Minv
