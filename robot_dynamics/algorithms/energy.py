"""Kinetic and potential energy of the whole robot.

Handbook of Robotics, sec. 3.4: ``T = 1/2 sum_i v_i^T I_i v_i = 1/2 qd^T M qd``
(with the rotors' ``+ 1/2 sum_i armature_i qd_i^2``, as Pinocchio's
``computeKineticEnergy``: M holds the armature, and ``dT/dt = qd^T (tau - g)``),
``U = -sum_i m_i g . c_i`` with c_i the centre of mass in the base frame,
so that ``g(q) = dU/dq``. The zero of U is the base origin.
"""
import numba as nb
import numpy as np

from . import floating
from .dispatch import Algorithm, route, run
from .kernels import (chunks, jcalc, joint_position, parallel, work, work_size, S_add, all_finite, I_times, jit, joint_coordinate, X_motion,
                   nbodies, parent_row, world_poses)
from .centroidal import composite_inertia
from ..model.packed import ARMATURE, GRAVITY, MASS, MCOM


@jit
def _kinetic(D, q, qd, R, p, v, Iv):
    n = nbodies(D)
    v[n, :] = 0.0
    e = 0.0
    for i in range(n):
        jcalc(D, i, joint_position(D, i, q), R, p)
        X_motion(R, p, i, v, parent_row(D, i), v)            # v_i = X_i v_p + S_i qd_i
        S_add(D, i, joint_coordinate(D, i, qd), v)
        I_times(D, i, MASS, v, i, Iv, 0)
        for r in range(6):
            e += 0.5 * v[i, r] * Iv[0, r]                    # T_i = 1/2 v_i . I_i v_i
        qdi = joint_coordinate(D, i, qd)
        e += 0.5 * D[i, ARMATURE] * qdi * qdi                # the rotor's: 1/2 I_a qd_i^2
    return e


@jit
def _potential(D, q, R, p, Rw, pw):
    n = nbodies(D)
    world_poses(D, q, R, p, Rw, pw)
    e = 0.0
    for i in range(n):
        for r in range(3):                                   # m c_world = m p + R h
            mc = D[i, MASS] * pw[i, r]
            for c in range(3):
                mc += Rw[i, r, c] * D[i, MCOM + c]
            e -= D[n, GRAVITY + r] * mc                      # U = -sum m g . c
    return e


@jit
def energy_states(D, kinetic, Q, QD, E, W):
    w = work(W, nbodies(D) + 1, Q.shape[1])
    for b in range(Q.shape[0]):
        if kinetic:
            E[b] = _kinetic(D, Q[b], QD[b], w.R, w.p, w.v, w.F)
        else:
            E[b] = _potential(D, Q[b], w.R, w.p, w.Rw, w.pw)


@parallel
def energy_batch(D, Q, QD, kinetic, E):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        energy_states(D, kinetic, Q[lo:hi], QD[lo:hi], E[lo:hi], np.empty(size))
    return all_finite(E) and all_finite(Q) and all_finite(QD)


def _kinetic_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    qk, _, _, (v,) = floating.states(model, x[0], qd=x[1])
    return run(KINETIC, model, (qk, v), data, out)


def _potential_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    """U = -m g . c, c the centre of mass in the world frame."""
    _, c, m = composite_inertia(model, x[0])
    U = -m * (c @ model.gravity)
    if out is None:
        return U
    out[...] = U
    return out


KINETIC = Algorithm(None, energy_batch, ("q", "qd"), "scalar", extra=(True,), on_root=_kinetic_on_root,
                    serial=lambda D, Q, QD, kinetic, E, W: energy_states(D, kinetic, Q, QD, E, W))
POTENTIAL = Algorithm(None, lambda D, Q, kinetic, E: energy_batch(D, Q, Q, kinetic, E), ("q",), "scalar",
                      extra=(False,), on_root=_potential_on_root,
                      serial=lambda D, Q, kinetic, E, W: energy_states(D, kinetic, Q, Q, E, W))


def kinetic_energy(model, q, qd, *, data=None, out=None):
    """Kinetic energy [J] ``1/2 qd^T M(q) qd``; (..., nq) states -> (...)
    (a float for one state; ``out``: a (...) array)."""
    return _scalar(route(KINETIC, model, (q, qd), data=data, out=out), out)


def potential_energy(model, q, *, data=None, out=None):
    """Gravitational potential energy [J] ``-sum m_i g . c_i`` (zero at the
    base origin; the world origin for a floating or planar base); (..., nq)
    -> (...). Its gradient is ``gravity_torques``."""
    return _scalar(route(POTENTIAL, model, (q,), data=data, out=out), out)


def _scalar(E, out):
    return float(E) if out is None and np.ndim(E) == 0 else E
