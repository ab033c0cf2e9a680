"""Configuration-space form of the dynamics (Craig eq. 6.63).

    tau = M(q) qdd + B(q) [qd qd] + C(q) [qd^2] + G(q)

``[qd qd] = (qd1 qd2, qd1 qd3, ..., qd1 qdn, qd2 qd3, ..., qd(n-1) qdn)``
(the n(n-1)/2 products with j < k, Craig eq. 6.64) and
``[qd^2] = (qd1^2, ..., qdn^2)`` (eq. 6.65). B (n x n(n-1)/2) holds the
Coriolis coefficients, C (n x n) the centrifugal ones; all four matrices
depend on q only, which is why Craig recommends this form for control.

Numerically the velocity terms ``V(q, qd) = rnea(q, qd, 0) - g(q)`` are a
quadratic form in qd, so its coefficients are read off exactly from
n(n+1)/2 RNEA calls (one compiled batch):
``C[:, j] = V(q, e_j)`` and ``B[:, (j,k)] = V(q, e_j + e_k) - V(q, e_j) - V(q, e_k)``.
Symbolically (:meth:`robot_dynamics.symbolic.Equations.configuration_space`)
they are the Christoffel symbols of M:
``B_i,jk = dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i``,
``C_ij = dM_ij/dq_j - 1/2 dM_jj/dq_i``.
"""
import numpy as np

from .. import checks
from ..algorithms.crba import mass_matrix
from ..algorithms.rnea import gravity_torques, nonlinear_effects
from ..errors import InputError
from ..algorithms.floating import require_fixed


def velocity_pairs(n):
    """The (j, k) index pairs, j < k, in the column order of B (0-based)."""
    return [(j, k) for j in range(n) for k in range(j + 1, n)]


def configuration_space_form(model, q, *, symbolic=False, **derive_options):
    """Craig's configuration-space matrices ``(M, B, C, G)`` at ``q``.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q: (..., nq) joint positions, or None with ``symbolic=True``.
        symbolic: if True, derive them in closed form with sympy (small robots
            only, see :mod:`robot_dynamics.symbolic`); q must then be None and
            the matrices are functions of the symbols ``q1..qn``.
        derive_options: passed to :func:`robot_dynamics.symbolic.derive`
            (``symbols``, ``urdf``, ``max_dof``) when symbolic.

    Returns:
        ``M`` (..., nq, nq), ``B`` (..., nq, nq(nq-1)/2), ``C`` (..., nq, nq),
        ``G`` (..., nq), numpy arrays (sympy Matrices when symbolic), such that
        ``tau = M qdd + B [qd qd] + C [qd^2] + G``; use :func:`velocity_products`
        for the two velocity vectors. Units: B, C in kg m^2 (revolute rows
        and columns), like M.
    """
    require_fixed(model, "configuration_space_form")
    if symbolic:
        if q is not None:
            raise InputError("configuration_space_form(symbolic=True) takes q=None: the result is a "
                             "function of the symbols q1..q%d" % model.nq)
        from ..symbolic import derive
        return derive(model, **derive_options).configuration_space()
    if derive_options:
        raise InputError("options %s apply only with symbolic=True" % ", ".join(sorted(derive_options)))
    shape, (Q,) = checks.batch(model, q=q)
    n, nstates = model.nq, Q.shape[0]
    pairs = velocity_pairs(n)
    # Unit velocities: e_j (n of them), then e_j + e_k for j < k.
    E = np.eye(n)
    QD = np.concatenate([E] + ([np.array([E[j] + E[k] for j, k in pairs])] if pairs else []))
    P = QD.shape[0]
    G = gravity_torques(model, Q)                                    # (B, n)
    V = nonlinear_effects(model, np.repeat(Q, P, axis=0), np.tile(QD, (nstates, 1)))
    V = V.reshape(nstates, P, n) - G[:, None, :]                    # V(q, qd_p), (B, P, n)
    C = np.swapaxes(V[:, :n, :], 1, 2)                               # C[:, i, j] = V_i(e_j)
    B = np.empty((nstates, n, len(pairs)))
    for p, (j, k) in enumerate(pairs):
        B[:, :, p] = V[:, n + p, :] - V[:, j, :] - V[:, k, :]
    M = mass_matrix(model, Q)
    return (M.reshape(shape + (n, n)), B.reshape(shape + (n, len(pairs))),
            C.reshape(shape + (n, n)), G.reshape(shape + (n,)))


def velocity_products(qd):
    """``([qd qd], [qd^2])``: (..., n(n-1)/2) products qd_j qd_k (j < k, Craig
    eq. 6.64 order) and (..., n) squares, for use with :func:`configuration_space_form`."""
    qd = np.asarray(qd, dtype=float)
    n = qd.shape[-1]
    pairs = velocity_pairs(n)
    prods = np.stack([qd[..., j] * qd[..., k] for j, k in pairs], axis=-1) if pairs \
        else np.zeros(qd.shape[:-1] + (0,))
    return prods, qd ** 2
