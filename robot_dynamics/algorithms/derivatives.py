"""Analytical derivatives of the dynamics: the public functions.

Carpentier and Mansard, "Analytical derivatives of rigid body dynamics
algorithms" (RSS 2018); the compiled kernels are in
:mod:`.derivative_kernels`, their floating and planar root paths below.
"""
import numpy as np

from .. import checks
from . import floating
from .aba import _singular as _aba_singular
from .aba import aba
from .derivative_kernels import (aba_derivative_states, aba_derivatives_batch, aba_derivatives_one,
                                 rnea_derivative_states, rnea_derivatives_batch, rnea_derivatives_one)
from .dispatch import Algorithm, chain, route
from ..errors import SingularityError
from ..model import configuration as C


def _three(out):
    if out.ndim == 3:                  # one state: plain indexing is the cheapest view
        return out[0], out[1], out[2]
    return out[..., 0, :, :], out[..., 1, :, :], out[..., 2, :, :]


def rnea_derivatives(model, q, qd, qdd, f_ext=None, *, data=None):
    """Partial derivatives of the inverse dynamics ``tau = rnea(q, qd, qdd, f_ext)``.

    Computed analytically by the recursive algorithm of Carpentier and
    Mansard, "Analytical derivatives of rigid body dynamics algorithms"
    (RSS 2018), sec. III, in O(n^2): exact to rounding, not finite
    differences.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q, qd, qdd: (..., nq) joint positions [rad or m], velocities and
            accelerations, in ``model.joint_names`` order.
        f_ext: optional external wrenches on links, as in
            :func:`~robot_dynamics.rnea` (fixed to their links: they turn
            with them when q changes).
        data: optional :class:`~robot_dynamics.Data` (its work arrays are used).

    Returns:
        ``(dtau_dq, dtau_dqd, M)``, each (..., nq, nq): ``dtau_dq[i, j] =
        d tau_i / d q_j`` [N m/rad, N/m, ...], ``dtau_dqd`` [N m s/rad, ...]
        and ``M = dtau/dqdd``, the mass matrix (equal to
        :func:`~robot_dynamics.mass_matrix` to rounding). Rows and columns
        follow ``model.joint_names``; with mimic joints the derivatives are
        with respect to the independent coordinates (chain rule through
        the multipliers). ``dtau_dqd`` is zero at ``qd = 0``.

    On a floating or planar base q is (..., nq), the rest (..., nv), and the
    matrices are (..., nv, nv), along the tangent space: column k of
    ``dtau_dq`` is the derivative along ``integrate(model, q, h e_k)`` (the
    root moved by a base-frame twist; Pinocchio's convention), see
    :func:`_rnea_derivatives_on_root`.
    """
    return _three(route(RNEA_DERIVATIVES, model, (q, qd, qdd), f_ext, data))


def gravity_derivatives(model, q, *, data=None):
    """Jacobian of the generalized gravity, ``dg/dq`` with ``g(q) = rnea(q, 0, 0)``.

    Args:
        q: (..., nq) joint positions. data: as in :func:`rnea_derivatives`.

    Returns:
        (..., nq, nq) ``dg_i / dq_j`` [N m/rad, ...]; symmetric (g is the
        gradient of the potential energy). Equal to ``rnea_derivatives(q, 0, 0)[0]``
        (Carpentier and Mansard, RSS 2018, sec. III).
    """
    zero = floating.zeros(model.nv)
    return route(RNEA_DERIVATIVES, model, (q, zero, zero), data=data)[..., 0, :, :]


def coriolis_derivatives(model, q, qd, *, data=None):
    """Derivatives of the Coriolis and centrifugal torques ``c(q, qd) = C(q, qd) qd``.

    ``c = rnea(q, qd, 0) - g(q)`` is computed as the RNEA without gravity,
    differentiated analytically (Carpentier and Mansard, RSS 2018, sec. III).

    Args:
        q, qd: (..., nq) joint positions and velocities. data: as in
            :func:`rnea_derivatives`.

    Returns:
        ``(dc_dq, dc_dqd)``, each (..., nq, nq): ``d(C qd)/dq`` and
        ``d(C qd)/dqd``. Since c is quadratic in qd, ``dc_dqd @ qd == 2 C qd``;
        ``dc_dqd = C + (dC/dqd) qd`` (not C itself) and is zero at ``qd = 0``.
    """
    out = route(CORIOLIS_DERIVATIVES, model, (q, qd, floating.zeros(model.nv)), data=data)
    return out[..., 0, :, :], out[..., 1, :, :]


def aba_derivatives(model, q, qd, tau, f_ext=None, *, data=None):
    """Partial derivatives of the forward dynamics ``qdd = aba(q, qd, tau, f_ext)``.

    Analytical (Carpentier and Mansard, "Analytical derivatives of rigid
    body dynamics algorithms", RSS 2018, sec. IV): with ``qdd = aba(q, qd,
    tau)``, differentiating ``rnea(q, qd, qdd) = tau`` gives
    ``dqdd/dq = -M^-1 dtau/dq``, ``dqdd/dqd = -M^-1 dtau/dqd`` and
    ``dqdd/dtau = M^-1``, exact, with the RNEA derivatives of
    :func:`rnea_derivatives` taken at that qdd and M^-1 from a Cholesky
    factorisation of M.

    Args:
        q, qd: (..., nq) joint positions and velocities.
        tau: (..., nq) applied joint torques [N m] / forces [N].
        f_ext: optional external wrenches on links, as in :func:`~robot_dynamics.aba`.
        data: optional :class:`~robot_dynamics.Data`.

    Returns:
        ``(dqdd_dq, dqdd_dqd, Minv)``, each (..., nq, nq) [1/s^2, 1/s,
        1/(kg m^2) ...], rows and columns in ``model.joint_names`` order
        (independent coordinates with mimic joints). On a floating or planar
        base, (..., nv, nv) along the tangent space, as :func:`rnea_derivatives`.

    Raises:
        SingularityError: M(q) is not invertible (a moving joint that carries no mass).
    """
    return _three(route(ABA_DERIVATIVES, model, (q, qd, tau), f_ext, data))


def _singular(model):
    raise SingularityError("forward dynamics derivatives are singular: a moving joint of %r carries no mass or "
                           "inertia (M(q) is not invertible)" % model.name)


# --- on a floating or planar base (:mod:`.floating`) ---------------------------------------

def _rnea_derivatives_on_root(model, q, qd, qdd, f_ext, data, gravity=True):
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
    qk, R, p, (v, a) = floating.states(model, q, qd=qd, qdd=qdd)
    ak = checks.kernel_block(a - floating.root_shift(model, R, v, gravity))
    tail = (3, model.nv, model.nv)
    out = chain(RNEA_DERIVATIVES if gravity else CORIOLIS_DERIVATIVES, model, (qk, v, ak), f_ext, data, tail=tail)
    dq, dv, M = out[..., 0, :, :], out[..., 1, :, :], out[..., 2, :, :]
    nr = model.root_nv
    dv[..., :, :nr] -= M[..., :, :nr] @ floating.root_bias_jacobian(model, v)
    dq[..., :, :nr] = 0.0
    if not gravity:
        return dq, dv, M
    gb = np.einsum("...ji,j->...i", R, model.gravity)           # gravity in the base frame
    if model.root_joint == "floating":
        dq[..., :, 3:6] = -M[..., :, 0:3] @ C._skew(gb)
    else:                                                       # theta turns g_b by g_b x e_z
        dq[..., :, 2] = -(M[..., :, 0] * gb[..., None, 1] - M[..., :, 1] * gb[..., None, 0])
    return dq, dv, M


def _aba_derivatives_on_root(model, q, qd, tau, f_ext, data):
    """``(dqdd_dq, dqdd_dv, Minv)`` of a floating or planar model, in the
    tangent space as :func:`rnea_derivatives`: with ``qdd = aba(q, v, tau)``,
    ``dqdd/dq = -M^-1 dtau/dq``, ``dqdd/dv = -M^-1 dtau/dv``, ``dqdd/dtau = M^-1``
    (Carpentier and Mansard, RSS 2018, sec. IV)."""
    qdd = aba(model, q, qd, tau, f_ext, data=data)
    dq, dv, M = _rnea_derivatives_on_root(model, q, qd, qdd, f_ext, data)
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        _aba_singular(model)
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + np.swapaxes(Minv, -1, -2))
    return -Minv @ dq, -Minv @ dv, Minv


def _stacked(path, **options):
    """An Algorithm's ``on_root`` from a root path returning three (..., nv, nv): stacked (..., 3, nv, nv)."""
    def on_root(model, x, f_ext, data, out, tail=None, extra=None):
        return np.stack(path(model, *x, f_ext, data, **options), axis=-3)
    return on_root


def _coriolis_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    """c = rnea(q, v, 0) - g(q): the RNEA derivatives without gravity (the third block is M)."""
    return np.stack(_rnea_derivatives_on_root(model, *x, None, data, gravity=False), axis=-3)


_NO_FEXT = np.empty((0, 0, 6))      # no external forces

# The derivatives' kernels (:mod:`.derivative_kernels`) behind the dispatcher: (3, nv, nv) per state.
RNEA_DERIVATIVES = Algorithm(rnea_derivatives_one, rnea_derivatives_batch, ("q", "qd", "qdd"), "derivatives",
                             extra=(_NO_FEXT, True), on_root=_stacked(_rnea_derivatives_on_root),
                             fext=Algorithm(None, rnea_derivatives_batch, ("q", "qd", "qdd"), "derivatives",
                                            extra=(True,), serial=rnea_derivative_states))
CORIOLIS_DERIVATIVES = Algorithm(None, rnea_derivatives_batch, ("q", "qd", "qdd"), "derivatives",
                                 extra=(_NO_FEXT, False), serial=rnea_derivative_states, on_root=_coriolis_on_root)
ABA_DERIVATIVES = Algorithm(aba_derivatives_one, aba_derivatives_batch, ("q", "qd", "tau"), "derivatives",
                            extra=(_NO_FEXT,), on_root=_stacked(_aba_derivatives_on_root), on_error=_singular,
                            fext=Algorithm(None, aba_derivatives_batch, ("q", "qd", "tau"), "derivatives",
                                           serial=aba_derivative_states))
