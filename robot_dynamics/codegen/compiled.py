"""``rd.compile(model)``: the generated C, built with the system compiler and
called through ctypes, with the library's shapes and checks.

The shared object is cached in the per-user cache folder,
``$XDG_CACHE_HOME/robot_dynamics/codegen`` (default
``~/.cache/robot_dynamics/codegen``; :func:`robot_dynamics.cache.compiled_dir`),
never in the package, named after the sha256 of everything that makes it
(:func:`build`): a second ``compile`` of the same model only loads it, and
two models, two versions of the generator or two machines sharing a home
folder never share a file.
"""
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .. import cache
from .. import checks
from ..algorithms.dispatch import get_num_threads
from ..model import configuration
from ..errors import InputError, RobotDynamicsError, SingularityError
from . import binding
from .writer import generate

CFLAGS = ("-O2", "-shared", "-fPIC")
MIN_ROWS_PER_THREAD = 256          # below, a thread's start costs more than its share of the batch
_POOL = []                         # the one thread pool of the batches, made on first use


def _pool():
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="rd-codegen"))
    return _POOL[0]
_F8 = np.dtype(np.float64)


def _address(a):
    """Address of a C-contiguous array's data for a ``void *`` argument."""
    return a.ctypes.data


def _pointer(a, ctype):
    """A ``void *`` argument for a C-contiguous array of ``ctype``'s size: a ctypes
    view of its buffer (about half the time of ``a.ctypes.data``), the address
    for a read-only array."""
    try:
        return ctype.from_buffer(a)
    except TypeError:
        return a.ctypes.data


def _finite(a):
    """True when every entry of a is finite: one compiled pass (a BLAS dot product, the
    former check, took 5 ms on a 10,000-state batch where OpenBLAS's threads met a busy machine).
    Imported on first use: the compiled checks load numba's lowering, which ``import robot_dynamics``
    does not need."""
    from ..algorithms.vectors import all_finite
    return all_finite(a.reshape(-1))


def find_compiler():
    """The C compiler: ``$CC`` if set, else ``cc``; RobotDynamicsError naming it when absent."""
    name = os.environ.get("CC") or "cc"
    path = shutil.which(name)
    if path is None:
        raise RobotDynamicsError("rd.compile needs a C compiler: %r was not found on PATH (install one, e.g. "
                                 "'apt install gcc', or set CC)" % name)
    return path


def build(model, folder=None):
    """(path, module) of the shared object of ``model``'s generated C, compiled if
    not cached; ``module`` is the name of the CPython binding built into it
    (:mod:`robot_dynamics.codegen.binding`), None without Python's headers.

    ``folder``: default :func:`robot_dynamics.cache.compiled_dir`, else (not
    writable) a new private temporary folder. The file is keyed on the
    generated source, the binding's source, the flags, Python's headers and
    the machine's architecture."""
    prefix = "rd_model"
    header, code = generate(model, prefix, date="")
    include = binding.python_include()
    floating = model.root_joint == "floating"
    key = hashlib.sha256("\0".join((header, code, " ".join(CFLAGS), str(include), platform.machine(),
                                     binding.source(prefix, "M", floating))).encode()).hexdigest()[:20]
    module = "rd_codegen_%s" % key if include else None
    if folder is None:
        folder = cache.compiled_dir() or tempfile.mkdtemp(prefix="robot_dynamics-codegen-")
    folder = Path(folder)
    so = folder / ("codegen-%s.so" % key)
    if so.is_file():
        return so, module
    cc = find_compiler()
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        (Path(tmp) / ("%s.h" % prefix)).write_text(header)
        (Path(tmp) / ("%s.c" % prefix)).write_text(code)
        sources = ["%s.c" % prefix]
        if module:
            (Path(tmp) / "binding.c").write_text(binding.source(prefix, module, floating))
            sources += ["-I", include, "binding.c"]
        out = Path(tmp) / "lib.so"
        run = subprocess.run([cc, *CFLAGS, "-o", str(out), *sources, "-lm"], cwd=tmp, capture_output=True, text=True)
        if run.returncode != 0:
            raise RobotDynamicsError("%s failed on the generated code of %r:\n%s" % (cc, model.name, run.stderr))
        os.replace(out, so)                       # atomic: a concurrent compile finds a whole file
    return so, module


class CompiledModel:
    """The generated functions of one model, callable from Python.

    Each method takes one state (q ``(nq,)``, the others ``(nv,)``; nq == nv
    on a fixed base) or a batch ``(B, nq)`` / ``(B, nv)`` (float64; other
    inputs are converted; a batch of at least 512 states runs on
    ``rd.get_num_threads()`` threads) and returns ``(nv,)`` / ``(B, nv)``
    (``mass_matrix``: ``(nv, nv)`` / ``(B, nv, nv)``), like the library's
    functions; ``out=`` (a C-contiguous float64 array of that shape) is
    filled and returned. Non-finite inputs raise InputError naming the
    entry, and so does a floating base's quaternion that is not unit
    within the library's tolerance; a singular mass matrix in ``aba``
    raises SingularityError. No function but ``friction_torques`` includes
    friction (as ``rd.rnea``).
    """

    def __init__(self, model, path, prefix="rd_model", module=None):
        """``path``: a shared object holding the functions generated for ``model``
        with ``prefix``, and the CPython binding ``module`` (None: ctypes only)."""
        self.model, self.path, self.nq, self.nv = model, Path(path), model.nq, model.nv
        self._fast = binding.load(module, path) if module else None
        self._lib = ctypes.CDLL(str(path))
        self._one, self._batch = {}, {}
        self._config = ctypes.c_double * self.nq
        self._vector, self._matrix = ctypes.c_double * self.nv, ctypes.c_double * (self.nv * self.nv)
        for name, nargs in (("rnea", 4), ("gravity", 2), ("coriolis", 3), ("mass_matrix", 2), ("aba", 4)):
            f = getattr(self._lib, "%s_%s" % (prefix, name))
            f.argtypes, f.restype = [ctypes.c_void_p] * nargs, None
            fb = getattr(self._lib, "%s_%s_batch" % (prefix, name))
            fb.argtypes, fb.restype = [ctypes.c_int] + [ctypes.c_void_p] * nargs, None
            self._one[name], self._batch[name] = f, fb
        self._friction = getattr(self._lib, "%s_friction_torques_batch" % prefix)
        self._friction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_double, ctypes.c_void_p]
        self._friction.restype = None

    def rnea(self, q, qd, qdd, *, out=None):
        """Inverse dynamics tau = M(q) qdd + C(q, qd) qd + g(q) [N m | N] (rd.rnea without f_ext)."""
        if self._fast is not None:
            res = np.empty(self.nv) if out is None else out
            if self._fast.rnea(q, qd, qdd, res) == 0:
                return res
        return self._call("rnea", dict(q=q, qd=qd, qdd=qdd), out)

    def gravity_torques(self, q, *, out=None):
        """g(q) = rnea(q, 0, 0) [N m | N]."""
        if self._fast is not None:
            res = np.empty(self.nv) if out is None else out
            if self._fast.gravity(q, res) == 0:
                return res
        return self._call("gravity", dict(q=q), out)

    def coriolis(self, q, qd, *, out=None):
        """C(q, qd) qd = nonlinear_effects(q, qd) - gravity_torques(q) [N m | N]."""
        if self._fast is not None:
            res = np.empty(self.nv) if out is None else out
            if self._fast.coriolis(q, qd, res) == 0:
                return res
        return self._call("coriolis", dict(q=q, qd=qd), out)

    def nonlinear_effects(self, q, qd, *, out=None):
        """h(q, qd) = rnea(q, qd, 0) [N m | N]."""
        return self.rnea(q, qd, np.zeros(np.shape(qd)), out=out)

    def mass_matrix(self, q, *, out=None):
        """M(q) (nq, nq) or (B, nq, nq), symmetric [kg m^2 | kg]."""
        if self._fast is not None:
            res = np.empty((self.nv, self.nv)) if out is None else out
            if self._fast.mass_matrix(q, res) == 0:
                return res
        return self._call("mass_matrix", dict(q=q), out, matrix=True)

    def aba(self, q, qd, tau, *, out=None):
        """Forward dynamics qdd = M(q)^-1 (tau - h(q, qd)) [rad/s^2 | m/s^2]."""
        if self._fast is not None:
            res = np.empty(self.nv) if out is None else out
            if self._fast.aba(q, qd, tau, res) == 0:
                return res
        return self._call("aba", dict(q=q, qd=qd, tau=tau), out)

    def friction_torques(self, qd, *, smoothing=0.0, out=None):
        """Each joint's friction law at ``qd`` (``rd.friction_torques``): (nv,) or (B, nv) [N m | N],
        along the motion; ``smoothing`` [rad/s | m/s] >= 0 as there."""
        if not (isinstance(smoothing, (int, float, np.floating)) and np.isfinite(smoothing) and smoothing >= 0):
            raise InputError("smoothing must be a finite velocity >= 0 [rad/s], got %r" % (smoothing,))
        shape, (QD,) = checks.batch(self.model, qd=qd)
        if not _finite(QD):
            checks.raise_not_finite(qd=qd)
        res = self._output(out, shape + (self.nv,))
        self._friction(QD.shape[0], _address(QD), float(smoothing), _address(res))
        return res

    def _call(self, name, inputs, out, matrix=False):
        n, arrays = self.nv, tuple(inputs.values())
        widths = [self.nq] + [n] * (len(arrays) - 1)             # q first, then velocity-like
        if all(type(a) is np.ndarray and a.dtype is _F8 and a.shape == (w,) and a.flags.c_contiguous
               for a, w in zip(arrays, widths)):                 # one state: straight to the C function
            self._check_quaternion(arrays[0])
            res = self._output(out, (n, n) if matrix else (n,))
            self._one[name](*[_pointer(a, self._config if k == 0 else self._vector) for k, a in enumerate(arrays)],
                            _pointer(res, self._matrix if matrix else self._vector))
        else:                                           # lists, batches, other dtypes: (B, nq | nv) blocks
            batch, arrays = _batch(self.model, inputs)
            self._check_quaternion(arrays[0])
            res = self._output(out, batch + ((n, n) if matrix else (n,)))
            self._run_batch(name, arrays, res, n * n if matrix else n)
        if not all(_finite(a) for a in arrays) or not _finite(res):
            self._not_finite(name, inputs, res)
        return res

    def _check_quaternion(self, q):
        """A floating base's quaternion must be unit within the library's tolerance (the C code
        normalises it): the library's InputError otherwise."""
        if self.model.root_joint == "floating" and np.all(np.isfinite(q[..., 3:7])):
            from ..model import configuration        # scipy.linalg: only for a floating model
            configuration.base_pose(self.model, q)

    def _run_batch(self, name, arrays, res, width):
        """The C batch function over the (B, nq | nv) blocks, split into contiguous
        chunks on ``rd.get_num_threads()`` threads when the batch is large
        (ctypes releases the GIL during the call; each chunk writes its rows)."""
        rows, f = arrays[0].shape[0], self._batch[name]
        threads = min(get_num_threads(), rows // MIN_ROWS_PER_THREAD)
        if threads <= 1:
            f(rows, *[_address(a) for a in arrays], _address(res))
            return
        bounds = np.linspace(0, rows, threads + 1).astype(int)
        steps, step_out = [8 * a.shape[1] for a in arrays], 8 * width
        base_in, base_out = [_address(a) for a in arrays], _address(res)
        jobs = [(hi - lo, *[b + lo * st for b, st in zip(base_in, steps)], base_out + lo * step_out)
                for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
        for future in [_pool().submit(f, *job) for job in jobs]:
            future.result()

    def _output(self, out, shape):
        if out is None:
            return np.empty(shape)
        if not (isinstance(out, np.ndarray) and out.shape == shape and out.dtype == np.float64
                and out.flags.c_contiguous and out.flags.writeable):
            got = ("an array of shape %s, dtype %s" % (out.shape, out.dtype) if isinstance(out, np.ndarray)
                   else type(out).__name__)
            raise InputError("out must be a writable C-contiguous float64 array of shape %s, got %s" % (shape, got))
        return out

    def _not_finite(self, name, inputs, res):
        checks.check_finite(**inputs)                # names a non-finite input
        if np.all(np.isfinite(res)):
            return
        if name == "aba":
            raise SingularityError("aba: the mass matrix of %r is singular at this q (a joint that moves "
                                   "no mass): the result is not finite" % self.model.name)
        checks.raise_not_finite(**inputs)

    def __repr__(self):
        nv = "" if self.nv == self.nq else ", nv=%d" % self.nv
        return "CompiledModel(%r, nq=%d%s, %s)" % (self.model.name, self.nq, nv, self.path.name)


def _batch(model, inputs):
    """(batch shape, [(B, nq) q, then (B, nv) blocks]): the inputs broadcast
    over their leading axes, as C-contiguous float64 (the library's checks and
    messages; q has nq entries, the velocity-like inputs nv)."""
    if model.nq == model.nv:
        return checks.batch(model, **inputs)
    arrays = []
    for k, (name, x) in enumerate(inputs.items()):
        a, (what, size) = checks.as_float_array(x, name), ("nq", model.nq) if k == 0 else ("nv", model.nv)
        if a.ndim == 0 or a.shape[-1] != size:
            got = "a scalar" if a.ndim == 0 else "%d values" % a.shape[-1]
            raise InputError("%s has %s, model %s is %d (expected shape (%d,) or (..., %d))"
                             % (name, got, what, size, size, size))
        arrays.append(a)
    try:
        shape = np.broadcast_shapes(*(a.shape[:-1] for a in arrays))
    except ValueError:
        raise InputError("state batches do not broadcast: " + ", ".join(
            "%s %s" % (n, a.shape) for n, a in zip(inputs, arrays))) from None
    rows = int(np.prod(shape, dtype=np.int64))
    return shape, [checks.kernel_block(np.broadcast_to(a, shape + a.shape[-1:]).reshape(rows, a.shape[-1]))
                   for a in arrays]


def compile(model, folder=None):
    """Generate, compile (``cc -O2 -shared -fPIC``, cached) and load ``model``'s C code.

    Args:
        model: a :class:`robot_dynamics.Model` (fixed, floating or planar base).
        folder: where to cache the shared object (default: the per-user
            cache folder, ``$XDG_CACHE_HOME/robot_dynamics/codegen`` or
            ``~/.cache/robot_dynamics/codegen``).

    Returns:
        A :class:`CompiledModel` with ``rnea``, ``gravity_torques``,
        ``coriolis``, ``nonlinear_effects``, ``mass_matrix``, ``aba`` and
        ``friction_torques``.

    Raises:
        InputError: a model without moving joints.
        RobotDynamicsError: no C compiler (``cc``), or it failed.
    """
    path, module = build(model, folder)
    return CompiledModel(model, path, module=module)
