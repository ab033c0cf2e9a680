"""The one dispatcher of the algorithms: a single state or a batch, a fixed
base or a floating or planar root.

Every algorithm takes one state ``(nq,)`` or a batch ``(..., nq)`` and an
optional :class:`~robot_dynamics.Data` (``data=``, the work buffer) and
output array (``out=``). Each algorithm declares its kernels once, as an
:class:`Algorithm`: the fixed-base single-state entry and batch loop, the
compiled variants on a root, the variants with external wrenches or mimic
joints, and its Python path on a root (``on_root``). :func:`public` makes
the public function from it: the control-loop call (one C-contiguous
float64 state, ``data`` and ``out`` given, a fixed base) goes straight to
the compiled single-state entry (explicit signature: no type inference
per call, nothing allocated) from that function's own body; anything else
goes to :func:`run` (lists, other dtypes, batches: checked and broadcast
by :mod:`.checks`, then the compiled batch loop across all cores, numba
``prange``; see :func:`set_num_threads`), to :func:`chain` (external
wrenches, mimic joints) or, on a floating or planar root, to
:func:`on_root`: the compiled root variant (:func:`run_root`), else the
algorithm's Python path, which runs the chain's kernels through
:func:`chain` (no second routing). :func:`route` is the same routing for
the functions :func:`public` does not make (the energies, the Coriolis
matrix, the kinematics, the derivatives: results that are scalars, dicts
or three matrices, or kernels with further arguments). No other module
tests ``model.root_joint`` to route (test_dispatch.py reads them all).

Single-state entry points return a status: 0 done, 1 a vector has the wrong
length or ``out`` / ``data`` do not fit the model (the batch path then says
which), 2 a value is not finite.
"""
import inspect

import numba
import numpy as np

from .. import checks
from .wrench import body_wrenches
from ..model.data import work_size
from ..errors import InputError

NO_WORK = np.empty(0)          # "allocate your own work buffer" for the single-state kernels


class Algorithm:
    """One algorithm's compiled kernels behind the dispatcher.

    Args:
        one: compiled single-state entry ``one(table, *states, out, work) -> status``,
            or None when the algorithm has only a batch kernel.
        batch: compiled batch kernel ``batch(table, *STATES, *extra, OUT) -> all finite``.
        names: the states' names, in the kernels' argument order (for messages).
        shape: the result's shape for one state: "vector" (nv,), "matrix"
            (nv, nv), "scalar" (), "derivatives" (3, nv, nv), or given per
            call (``tail``).
        extra: default further arguments of the batch kernel.
        root_one, root_batch: the compiled variants on a floating or planar
            root, ``root_one(table, *states, out, work) -> status`` (the
            model's own table) and ``root_batch(table, *STATES, OUT) -> all
            finite and every quaternion unit``: see :func:`run_root`.
        serial: the batch kernel's one-thread loop ``serial(table, *STATES,
            *extra, OUT, work)`` (no finiteness check): a batch of one state
            runs there, without the thread pool's start-up (microseconds when
            idle, milliseconds on a loaded machine); without it, ``one`` takes
            a batch of one state given with the default ``extra``. Every
            single state takes one of the two, never the thread pool
            (test/test_single_state_routing.py).
        on_root: the Python path on a floating or planar root, ``on_root(model,
            states, f_ext, data, out, tail, extra)`` (states as the public
            function got them), run when the compiled variants do not take the call; it
            runs the chain's kernels through :func:`chain`.
        fext: the Algorithm with external wrenches: its batch kernel takes
            ``(table, *STATES, FEXT, *fext.extra, OUT)``, FEXT (B, nb, 6), its
            ``one`` (if any) ``(table, *states, fext, out, work)``, fext (nb, 6)
            (see :func:`chain`).
        mimic: the Algorithm for a model with mimic joints (``one`` does not
            cover them: the control-loop branch skips it).
        on_error: ``on_error(model)`` when a result is not finite and the inputs are.
    """
    __slots__ = ("one", "batch", "names", "shape", "extra", "serial", "root_one", "root_batch",
                 "on_root", "fext", "mimic", "on_error")

    def __init__(self, one, batch, names, shape="vector", extra=(), serial=None, root_one=None, root_batch=None,
                 on_root=None, fext=None, mimic=None, on_error=None):
        self.one, self.batch, self.names, self.shape, self.extra = one, batch, names, shape, extra
        self.serial, self.root_one, self.root_batch = serial, root_one, root_batch
        self.on_root, self.fext, self.mimic, self.on_error = on_root, fext, mimic, on_error
        for slot, fn in (("one", one), ("root_one", root_one)):
            if hasattr(fn, "users"):       # a lazily compiled entry point: swap in the compiled one
                fn.users.append((self, slot))

    def _tail(self, model, tail):
        if tail is not None:
            return tail
        return {"vector": (model.nv,), "matrix": (model.nv, model.nv), "scalar": (),
                "derivatives": (3, model.nv, model.nv)}[self.shape]

    def _many(self, model, x, data, out, tail, extra, on_error):
        if data is not None:
            _check_data(model, data)
        states = dict(zip(self.names, x))
        shape, X = checks.batch(model, **states)
        OUT = _output(out, shape, tail)
        ok = None
        if OUT.shape[0] == 1:                 # one state (a list, another dtype): on the calling thread
            ok = self._one_state(model, X, data, OUT, extra)
        if ok is None:
            ok = self.batch(model.packed, *X, *extra, OUT)
        if not ok:
            _not_finite(states, on_error, model)
        return OUT.reshape(shape + tail) if out is None else out


    def _one_state(self, model, X, data, OUT, extra):
        """A batch of one state (X (1, n) blocks, OUT (1, ...)) by ``serial``
        or ``one``: True if the result and the states are finite, None if
        neither kernel takes it (the batch kernel then does)."""
        W = data.work if data is not None else np.empty(work_size(model.nb, model.nv))
        if self.serial is not None:
            self.serial(model.packed, *X, *extra, OUT, W)
            return np.isfinite(OUT).all() and all(np.isfinite(a).all() for a in X)
        if self.one is not None and extra is self.extra:
            status = self.one(model.packed, *(a[0] for a in X), OUT[0], W)
            return None if status == 1 else status == 0
        return None


def run(algorithm, model, x, data=None, out=None, tail=None, extra=None, on_error=None):
    """Run an :class:`Algorithm` on a single state or a batch: the one dispatcher.

    Args:
        algorithm: the Algorithm; model: the Model.
        x: the states (..., nq), a tuple in the kernels' argument order.
        data: optional :class:`~robot_dynamics.Data`; out: optional result array.
        tail: the result's shape for one state when ``algorithm.shape`` does not give it.
        extra: further arguments of the batch kernel (default ``algorithm.extra``).
        on_error: ``on_error(model)`` is called when a result is not finite and the inputs are.

    Returns:
        The result, shape ``batch_shape + tail`` (``out`` itself when given).

    No root routing: a fixed base, or a root's kernel coordinates (nv).
    The control-loop call (one state, ``data`` and ``out`` given) goes
    straight to the compiled entry point; anything it does not take (a
    batch, a list, another dtype, no entry point) raises TypeError there
    and takes the general path. A plain function with no keyword-only
    parameters, not ``Algorithm.__call__``: each of those costs 0.05 to
    0.2 us a call, a tenth of a whole RNEA. The functions :func:`public`
    makes hold this first branch in their own body: the call to ``run``
    alone costs about 0.1 us, 15 % of a gravity-torque call (numba 0.68,
    Python 3.11, bundled Panda).
    """
    one = algorithm.one
    if data is not None and out is not None and data.model is model:
        try:
            if one(data.table, *x, out, data.work) == 0:
                return out
        except TypeError:
            pass
    q = x[0]
    if type(q) is np.ndarray and q.ndim == 1 and one is not None:
        if data is None:
            table, W = model.packed, NO_WORK
        else:
            if data.model is not model:
                data.bind(model)
            table, W = data.table, data.work
        res = out if out is not None else np.empty(algorithm._tail(model, tail))
        try:
            status = one(table, *x, res, W)
        except TypeError:              # not C-contiguous float64 vectors: the general path
            status = 1
        if status == 0:
            return res
        if status == 2:
            _not_finite(dict(zip(algorithm.names, x)), on_error, model)
    return algorithm._many(model, x, data, out, algorithm._tail(model, tail),
                           algorithm.extra if extra is None else extra, on_error)


def run_root(algorithm, model, x, data=None, out=None, tail=None):
    """The algorithm's compiled variant on a floating or planar root: the
    result, or None when the call does not fit it (lists, other dtypes, a
    quaternion not unit, a value not finite, a wrong size; the algorithm's
    Python path then checks and says why).

    Args as :func:`run`; ``x`` the public states (q (..., nq), the rest (..., nv)).
    One state goes to ``algorithm.root_one``, a batch to ``algorithm.root_batch``.
    """
    q = x[0]
    if type(q) is np.ndarray and q.ndim == 1:
        W = NO_WORK                                  # the entries take the model's own table
        if data is not None:
            if data.model is not model:
                data.bind(model)
            W = data.work
        res = out if out is not None else np.empty(algorithm._tail(model, tail))
        try:
            status = algorithm.root_one(model.packed, *x, res, W)
        except TypeError:                  # lists, other dtypes, non-contiguous
            return None
        return res if status == 0 else None
    if np.ndim(q) > 1 and algorithm.root_batch is not None:
        return _root_batch(algorithm.root_batch, model, x, out, algorithm._tail(model, tail))
    return None


def chain(algorithm, model, x, f_ext=None, data=None, out=None, tail=None, extra=None):
    """:func:`run` with the algorithm's variant for the call: its ``mimic``
    one on a model with mimic joints, its ``fext`` one with external
    wrenches (``f_ext`` as the public functions take it). No root routing:
    a fixed base, or a root's kernel coordinates (the root paths call this).
    ``tail``, ``extra``: as in :func:`run` (kinematics: the result's shape
    and the link, point and link tables).

    One state with wrenches goes to ``fext.one`` with the body wrenches
    (nb, 6) as one more state (:func:`run` passes them on; its general path
    reads the named states only and takes them in ``extra``)."""
    if algorithm.mimic is not None and model.has_mimic:
        algorithm = algorithm.mimic
    if f_ext is None:
        return run(algorithm, model, x, data, out, tail, extra, algorithm.on_error)
    fext = algorithm.fext
    if fext.one is not None and all(checks.single(a) and a.shape[0] == model.nv for a in x):
        shape = ()
    else:
        shape, _ = checks.batch(model, **dict(zip(algorithm.names, x)))
    FEXT = body_wrenches(model, f_ext, shape, int(np.prod(shape, dtype=np.int64)) if shape else 1)
    if not shape and fext.one is not None:
        x = tuple(x) + (FEXT[0],)
    return run(fext, model, x, data, out, tail, extra=(FEXT,) + fext.extra, on_error=algorithm.on_error)


def on_root(algorithm, model, x, f_ext=None, data=None, out=None, tail=None, extra=None):
    """A floating or planar root: the compiled root variant (:func:`run_root`,
    without external wrenches), else the algorithm's Python path
    ``on_root(model, x, f_ext, data, out, tail, extra)``."""
    if f_ext is None and (algorithm.root_one is not None or algorithm.root_batch is not None):
        res = run_root(algorithm, model, x, data, out, tail)
        if res is not None:
            return res
    return algorithm.on_root(model, x, f_ext, data, out, tail, extra)


def route(algorithm, model, x, f_ext=None, data=None, out=None, tail=None, extra=None):
    """The general path of a public function: :func:`on_root` on a floating
    or planar root, :func:`chain` (:func:`run`) on a fixed base."""
    if model.root_joint is not None:
        return on_root(algorithm, model, x, f_ext, data, out, tail, extra)
    return chain(algorithm, model, x, f_ext, data, out, tail, extra)


# --- the public functions -------------------------------------------------------------------

def public(algorithm):
    """Decorator: the public function of ``algorithm``, made from a stub that
    holds its signature and docstring (the stub's body is not run).

    The function made has the stub's name, module, docstring and signature
    (``inspect.signature``, ``help()`` and Sphinx read them) and holds the
    control-loop branch in its own body: a fixed base, ``data`` bound to the
    model, ``out`` given (and no mimic joints when the algorithm has a
    ``mimic`` variant) go straight to ``algorithm.one``; the rest goes to
    :func:`run`, :func:`chain` or :func:`on_root`. One closure per
    signature below (:data:`_MAKERS`), so the control loop pays no call
    layer (a call of ``run`` costs about 0.1 us). ``function.algorithm``
    is the Algorithm.
    """
    def make(stub):
        params = tuple(inspect.signature(stub).parameters)
        if params not in _MAKERS:
            raise TypeError("dispatch.public has no function of parameters %s (known: %s)"
                            % (params, ", ".join(str(k) for k in _MAKERS)))
        if algorithm.on_root is None:
            raise TypeError("%s: the Algorithm declares no on_root path" % stub.__name__)
        function = _MAKERS[params](algorithm)
        function.__name__, function.__qualname__ = stub.__name__, stub.__qualname__
        function.__module__, function.__doc__ = stub.__module__, stub.__doc__
        function.algorithm = algorithm
        if inspect.signature(function) != inspect.signature(stub):
            raise TypeError("%s%s: dispatch.public makes %s" % (stub.__name__, inspect.signature(stub),
                                                                 inspect.signature(function)))
        return function
    return make


def _q(algorithm):
    if algorithm.mimic is not None or algorithm.fext is not None:
        raise TypeError("a function of q alone takes no mimic or fext variant")
    on_error = algorithm.on_error

    def function(model, q, *, data=None, out=None):
        if model.root_joint is None:
            if out is not None and data is not None and data.model is model:      # the control loop
                one = algorithm.one         # a local: a call of a slot attribute costs 20 ns more
                try:
                    if one(data.table, q, out, data.work) == 0:
                        return out
                except TypeError:
                    pass
            return run(algorithm, model, (q,), data, out, None, None, on_error)
        return on_root(algorithm, model, (q,), None, data, out)
    return function


def _q_qd(algorithm):
    if algorithm.mimic is not None or algorithm.fext is not None:
        raise TypeError("a function of q, qd takes no mimic or fext variant")
    on_error = algorithm.on_error

    def function(model, q, qd, *, data=None, out=None):
        if model.root_joint is None:
            if out is not None and data is not None and data.model is model:      # the control loop
                one = algorithm.one         # a local: a call of a slot attribute costs 20 ns more
                try:
                    if one(data.table, q, qd, out, data.work) == 0:
                        return out
                except TypeError:
                    pass
            return run(algorithm, model, (q, qd), data, out, None, None, on_error)
        return on_root(algorithm, model, (q, qd), None, data, out)
    return function


def _q_qd_qdd_fext(algorithm):
    mimic, on_error = algorithm.mimic is not None, algorithm.on_error

    def function(model, q, qd, qdd, f_ext=None, *, data=None, out=None):
        if model.root_joint is None:
            if f_ext is None and not (mimic and model.has_mimic):
                if out is not None and data is not None and data.model is model:  # the control loop
                    one = algorithm.one     # a local: a call of a slot attribute costs 20 ns more
                    try:
                        if one(data.table, q, qd, qdd, out, data.work) == 0:
                            return out
                    except TypeError:
                        pass
                return run(algorithm, model, (q, qd, qdd), data, out, None, None, on_error)
            return chain(algorithm, model, (q, qd, qdd), f_ext, data, out)
        return on_root(algorithm, model, (q, qd, qdd), f_ext, data, out)
    return function


def _q_qd_tau_fext(algorithm):
    mimic, on_error = algorithm.mimic is not None, algorithm.on_error

    def function(model, q, qd, tau, f_ext=None, *, data=None, out=None):
        if model.root_joint is None:
            if f_ext is None and not (mimic and model.has_mimic):
                if out is not None and data is not None and data.model is model:  # the control loop
                    one = algorithm.one     # a local: a call of a slot attribute costs 20 ns more
                    try:
                        if one(data.table, q, qd, tau, out, data.work) == 0:
                            return out
                    except TypeError:
                        pass
                return run(algorithm, model, (q, qd, tau), data, out, None, None, on_error)
            return chain(algorithm, model, (q, qd, tau), f_ext, data, out)
        return on_root(algorithm, model, (q, qd, tau), f_ext, data, out)
    return function


# The public functions' parameters -> the closure that makes them (the
# states' names are the parameters' own, so keyword calls work).
_MAKERS = {("model", "q", "data", "out"): _q,
           ("model", "q", "qd", "data", "out"): _q_qd,
           ("model", "q", "qd", "qdd", "f_ext", "data", "out"): _q_qd_qdd_fext,
           ("model", "q", "qd", "tau", "f_ext", "data", "out"): _q_qd_tau_fext}


def _root_batch(kernel, model, x, out, tail):
    try:
        arrays = [np.asarray(a, dtype=np.float64) for a in x]
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
    if not kernel(model.packed, *blocks, res):
        return None
    return out if out is not None else res.reshape(shape + tail)


def _check_data(model, data):
    if getattr(data, "model", None) is not model and hasattr(data, "bind"):
        data.bind(model)
    if not isinstance(getattr(data, "work", None), np.ndarray) or data.work.shape[0] < work_size(model.nb, model.nv):
        raise InputError("data does not fit the model: expected a Data built for a model with %d bodies and "
                         "%d coordinates (rd.Data(model)), got %r" % (model.nb, model.nv, data))


def _output(out, shape, tail):
    B = int(np.prod(shape, dtype=np.int64))
    if out is None:
        return np.empty((B,) + tail)
    want = tuple(shape) + tail
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == want
            and out.flags.c_contiguous and out.flags.writeable):
        got = ("an array of shape %s, dtype %s" % (out.shape, out.dtype)) if isinstance(out, np.ndarray) \
            else type(out).__name__
        raise InputError("out must be a writable C-contiguous float64 array of shape %s, got %s" % (want, got))
    return out.reshape((B,) + tail)


def _not_finite(states, on_error, model):
    checks.check_finite(**states)
    if on_error is not None:
        on_error(model)
    raise InputError("the result is not finite although the inputs are: values too large for float64")


def set_num_threads(n):
    """Use ``n`` threads for batches (at most ``numba.config.NUMBA_NUM_THREADS``,
    the core count unless the environment variable NUMBA_NUM_THREADS says
    otherwise). Applies to the calling thread."""
    top = numba.config.NUMBA_NUM_THREADS
    if not isinstance(n, (int, np.integer)) or not 1 <= n <= top:
        raise InputError("the number of threads must be an integer from 1 to %d "
                         "(NUMBA_NUM_THREADS), got %r" % (top, n))
    numba.set_num_threads(int(n))


def get_num_threads():
    """Number of threads the batches use (see :func:`set_num_threads`)."""
    return numba.get_num_threads()
