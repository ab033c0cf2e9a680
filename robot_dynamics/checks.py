"""Input checks at the API boundary: shapes, dtypes and finiteness.

A single C-contiguous float64 (nq,) state goes straight to a compiled
entry point with an explicit signature (``single`` guards it); anything
else (lists, batches, other dtypes) goes through ``batch``, which
broadcasts the states to one (B, nq) block. Errors say what was expected and what came.

On the package's floor, beside errors.py (the lowest of test_architecture's
FLOORS, which every layer may import): the model layer checks its inputs with
it as the algorithms, analysis, constraints, identification, the simulator and
the nodes' pipeline do, so it cannot sit in any of them without an arrow
running back up (it lived in algorithms/, which model/configuration.py then
imported). It imports only errors.py.
"""
import numpy as np
from .errors import InputError

_F8 = np.dtype(np.float64)


def single(x):
    """Cheap guess that x is one state for a compiled single-state entry
    point. Those entry points check the rest (dtype, layout, length) and
    raise TypeError or return a status; the guess only keeps batches away
    from numba's slow failed-dispatch path (~50 us)."""
    return type(x) is np.ndarray and x.ndim == 1


def as_float_array(x, name):
    """x as a float64 array; integers and floats only (complex, bool, text
    and ragged input would be silently mangled by a cast, so they are refused)."""
    try:
        a = np.asarray(x)
        if a.dtype.kind == "O":
            a = a.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        raise InputError("%s must be an array of numbers, got %s" % (name, _describe(x))) from None
    if a.dtype.kind not in "iuf":
        raise InputError("%s must be an array of real numbers, got %s" % (name, _describe(x)))
    return a.astype(np.float64, copy=False)


def batch(model, **states):
    """Broadcast named states of shape (..., nv) (the kernels' coordinates;
    nv == nq on a fixed base) to (B, nv) blocks.

    Returns (batch_shape, [arrays (B, nv), in argument order]).
    """
    arrays = []
    for name, x in states.items():
        a = as_float_array(x, name)
        if a.ndim == 0 or a.shape[-1] != model.nv:
            got = "a scalar" if a.ndim == 0 else (
                "%d values" % a.shape[-1] if a.ndim == 1 else "shape %s" % (a.shape,))
            size = "nq" if model.nq == model.nv else "nv"
            raise InputError("%s has %s, model %s is %d (expected shape (%d,) or (..., %d))"
                             % (name, got, size, model.nv, model.nv, model.nv))
        arrays.append(a)
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            raise InputError("state batches do not broadcast: " + ", ".join(
                "%s %s" % (n, a.shape) for n, a in zip(states, arrays))) from None
        arrays = [np.broadcast_to(a, shape) for a in arrays]
    rows = int(np.prod(shape[:-1], dtype=np.int64))          # not -1: nq may be 0
    blocks = [kernel_block(a.reshape(rows, model.nv)) for a in arrays]
    return shape[:-1], blocks


def kernel_block(a):
    """``a`` as a C-contiguous, writable float64 array, copied only when it is
    not one already. numba compiles a kernel once per layout and read-only
    flag of its arguments, and the set-up compiles this form: a read-only
    input (a broadcast, a frozen array) would otherwise cost a compile of
    tens of seconds on its first call."""
    return np.require(a, np.float64, ("C", "W"))


def raise_not_finite(**inputs):
    """Raise the ValueError for a kernel that reported a non-finite value."""
    check_finite(**inputs)
    raise InputError("the result is not finite although the inputs are: values too large for float64")


def check_finite(**inputs):
    """Raise a ValueError naming the first non-finite entry of the inputs."""
    for name, x in inputs.items():
        if x is None:
            continue
        a = np.asarray(x, dtype=float)
        bad = np.argwhere(~np.isfinite(a))
        if bad.size:
            where = tuple(int(i) for i in bad[0])
            raise InputError("%s%s is %r: inputs must be finite" % (name, list(where), float(a[where])))


def point(p, name="point"):
    a = as_float_array(p, name)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError("%s must be 3 finite numbers [m], got %s" % (name, _describe(p)))
    return kernel_block(a)


def _describe(x):
    if isinstance(x, np.ndarray):
        return "an array of shape %s and dtype %s" % (x.shape, x.dtype)
    r = repr(x)
    return "%s %s" % (type(x).__name__, r if len(r) < 60 else r[:57] + "...")
