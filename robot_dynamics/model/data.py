"""Work arrays for the algorithms (Pinocchio's Data).

A :class:`Data` is built once per model and reused: every algorithm takes
it as ``data=`` and then allocates no work arrays, so with ``out=`` as well
a control loop allocates nothing per call. One Data must not be used by two
threads at once; it fits every model with the same sizes (e.g. the copies
made by ``with_gravity`` or ``with_payload``).
"""
from collections import namedtuple

import numba as nb
import numpy as np
from numpy.lib.stride_tricks import as_strided

from .packed import NQ
from ..errors import InputError

_inline = nb.njit(cache=True, nogil=True, inline="always")



# The work buffer's arrays, in buffer order; n = nb + 1 rows, nq coordinates.
Work = namedtuple("Work", "R p Rw pw v a f c IA pA U d u IC S Sd BC F X T Ia M zero")


@nb.njit(cache=True)
def work_size(nb_, nq):
    """Length of the flat work buffer for nb bodies and nq coordinates."""
    return _size(nb_ + 1, nq)


@_inline
def _size(n, nq):
    return n * (9 + 3 + 9 + 3 + 6 * 4 + 36 + 6 * 2 + 2 + 13 + 6 * 2 + 36) + 3 * 6 + 3 * 36 + nq * nq + nq


@_inline
def _rows(W, o, n, k):
    """(n, k) view of W[o:o + n k], row-major. ``as_strided`` costs nothing
    at run time, where ``reshape`` calls numba's run-time reshape check
    (about 25 ns a view, measured with numba 0.68 on the bundled Panda)."""
    return as_strided(W[o:o + n * k], shape=(n, k), strides=(8 * k, 8))


@_inline
def _mats(W, o, n, k):
    """(n, k, k) view of W[o:o + n k k], row-major."""
    return as_strided(W[o:o + n * k * k], shape=(n, k, k), strides=(8 * k * k, 8 * k, 8))


@_inline
def work(W, n, nq):
    """The named work arrays as views of the flat buffer W (see Work)."""
    o = 0
    R = _mats(W, o, n, 3); o += 9 * n                      # noqa: E702  pose in the parent body
    p = _rows(W, o, n, 3); o += 3 * n                      # noqa: E702
    Rw = _mats(W, o, n, 3); o += 9 * n                     # noqa: E702  pose in the base frame
    pw = _rows(W, o, n, 3); o += 3 * n                     # noqa: E702
    v = _rows(W, o, n, 6); o += 6 * n                      # noqa: E702  velocities
    a = _rows(W, o, n, 6); o += 6 * n                      # noqa: E702  accelerations
    f = _rows(W, o, n, 6); o += 6 * n                      # noqa: E702  forces
    c = _rows(W, o, n, 6); o += 6 * n                      # noqa: E702  velocity products
    IA = _mats(W, o, n, 6); o += 36 * n                    # noqa: E702  articulated inertias
    pA = _rows(W, o, n, 6); o += 6 * n                     # noqa: E702  articulated bias forces
    U = _rows(W, o, n, 6); o += 6 * n                      # noqa: E702
    d = W[o:o + n]; o += n                                 # noqa: E702
    u = W[o:o + n]; o += n                                 # noqa: E702
    IC = _rows(W, o, n, 13); o += 13 * n                   # noqa: E702  composite inertias
    S = _rows(W, o, n, 6); o += 6 * n                      # noqa: E702  motion subspaces (base frame)
    Sd = _rows(W, o, n, 6); o += 6 * n                     # noqa: E702
    BC = _mats(W, o, n, 6); o += 36 * n                    # noqa: E702
    F = _rows(W, o, 3, 6); o += 18                         # noqa: E702  scratch forces
    X = _rows(W, o, 6, 6); o += 36                         # noqa: E702  scratch 6x6
    T = _rows(W, o, 6, 6); o += 36                         # noqa: E702
    Ia = _rows(W, o, 6, 6); o += 36                        # noqa: E702
    M = _rows(W, o, nq, nq); o += nq * nq                  # noqa: E702  mass matrix
    zero = W[o:o + nq]                                     # noqa: E702  scratch (nq,)
    return Work(R, p, Rw, pw, v, a, f, c, IA, pA, U, d, u, IC, S, Sd, BC, F, X, T, Ia, M, zero)


@_inline
def work_buffer(D, W, nq):
    """The work buffer of a single-state entry point: W itself (a Data's),
    a new one when W is empty (no Data given), or an empty array when W is
    too short for the model (the caller then reports status 1)."""
    if W.shape[0] == 0:
        return np.empty(_size(D.shape[0], nq))
    if bad_work(D, W):
        return W[:0]
    return W


@_inline
def work_rnea(W, n, nq):
    """Only the arrays of the recursive Newton-Euler algorithm, (R, p, v, a, f,
    zero), at the same places as in :func:`work` (each view costs a few ns
    of checks: the single-state entry points carve only what they use)."""
    R = _mats(W, 0, n, 3)
    p = _rows(W, 9 * n, n, 3)
    v = _rows(W, 24 * n, n, 6)
    a = _rows(W, 30 * n, n, 6)
    f = _rows(W, 36 * n, n, 6)
    o = 159 * n + 18 + 3 * 36 + nq * nq
    return R, p, v, a, f, W[o:o + nq]


@_inline
def work_crba(W, n, nq):
    """Only the arrays of the composite-rigid-body algorithm, (R, p, IC, F)."""
    R = _mats(W, 0, n, 3)
    p = _rows(W, 9 * n, n, 3)
    IC = _rows(W, 98 * n, n, 13)
    F = _rows(W, 159 * n, 3, 6)
    return R, p, IC, F


@nb.njit(cache=True)
def work_views(W, n, nq):
    """:func:`work` callable from Python (for :class:`robot_dynamics.Data`)."""
    return work(W, n, nq)


@_inline
def bad_work(D, W):
    """True when W is too short for the model (a Data built for another model)."""
    n = D.shape[0]
    nq = int(D[n - 1, NQ])
    return W.shape[0] < _size(n, nq)



class Data:
    """Work buffer of the algorithms for one model.

    Args:
        model: the :class:`~robot_dynamics.Model` (or one of the same size).

    Attributes:
        work: the flat float64 buffer the compiled kernels carve up.
        model, table: the model the Data serves and a writable copy of its
            packed table (numba dispatches a writable array about 0.1 us
            faster than a read-only one); an algorithm called with another
            model of the same size re-binds the Data to it (:meth:`bind`).
        R, p: (nb + 1, 3, 3), (nb + 1, 3) body poses in the parent body (last
            row: the base), as left by the last call that computed them.
        v, a, f: (nb + 1, 6) body velocities, accelerations and forces in
            body coordinates, Featherstone's order (angular first), as left
            by the last rnea or aba.
        IA, pA: articulated inertias and bias forces of the last aba;
        IC: composite inertias (13 parameters) of the last mass_matrix.
    """

    def __init__(self, model):
        self.nb, self.nq = model.nb, model.nv          # nq: the kernels' coordinates (nv)
        self.model, self.table = None, np.empty_like(model.packed)
        self.bind(model)
        self.work = np.zeros(work_size(model.nb, model.nv))
        views = work_views(self.work, model.nb + 1, model.nv)
        for name in ("R", "p", "v", "a", "f", "IA", "pA", "IC"):
            setattr(self, name, getattr(views, name))

    def bind(self, model):
        """Serve ``model`` from now on (copies its packed table); ValueError if
        the model's size is not the one this Data was built for."""
        if model.packed.shape != self.table.shape:
            raise InputError("data does not fit the model: expected a Data built for a model with %d bodies and "
                             "%d coordinates (rd.Data(model)), got %r" % (model.nb, model.nq, self))
        self.table[...] = model.packed
        self.model = model

    def __repr__(self):
        return "Data(nb=%d, nq=%d, %d floats)" % (self.nb, self.nq, self.work.shape[0])
