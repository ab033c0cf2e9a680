"""Which code computes the torque laws: the library's kernels, or the model's generated C (no ROS needed).

``backend: compiled`` (dynamics_node) runs the laws of a fixed-base tree (gravity, Coriolis,
feedforward, computed torque) through :func:`robot_dynamics.compile`: C generated for the
model, compiled by ``cc`` and loaded (docs/CODEGEN.md). Generating and compiling take
about a second for a 7-joint arm, longer for a large robot, so never in the torque loop:
:class:`CompiledModels` compiles each new model (a description, a payload) in a thread of
its own, and the laws use the library until it is ready, then the compiled functions
(same values to 1e-12 relative, test/test_codegen.py). A model that cannot be compiled
(no C compiler, a compiler error) stays on the library, with the reason.

What the compiled backend does not cover runs on the library: a floating or planar base
and closed loops (their laws are :mod:`.base_compensation` and :mod:`.closed_loop`),
friction compensation (:func:`robot_dynamics.friction_torques`), the impedance laws, the
momentum observer.
"""
import threading

LIBRARY, COMPILED = 'library', 'compiled'
BACKENDS = (LIBRARY, COMPILED)
KEEP = 4                   # compiled models held (the current one and a few before it: a payload set and removed)


def covers(model):
    """True when the compiled backend runs ``model``'s laws: a fixed-base tree."""
    return model.root_joint is None and not model.loops


class CompiledModels:
    """The compiled code of the models the torque loop meets, each compiled once, in the background.

    Args:
        on_ready: ``f(model)`` called from the compiling thread when ``model``'s code is loaded
            or its compilation failed (a node hands it to its executor: a guard condition).
        compile: ``f(model)`` -> a :class:`robot_dynamics.codegen.CompiledModel` (the default:
            :func:`robot_dynamics.compile`, cached on disk by the generated source).
    """

    def __init__(self, on_ready, compile=None):
        self._on_ready, self._compile = on_ready, compile
        self._lock = threading.Lock()
        self._done = {}            # id(model) -> (model, CompiledModel or None, error or None)
        self._running = set()      # id(model) being compiled

    def get(self, model):
        """The compiled code of ``model`` if it is ready, else None (and its compilation is started
        if it was not yet). Never blocks."""
        key = id(model)
        with self._lock:
            done = self._done.get(key)
            if done is not None and done[0] is model:
                return done[1]
            if key in self._running:
                return None
            self._running.add(key)
        threading.Thread(target=self._run, args=(model,), name='rd-compile', daemon=True).start()
        return None

    def error(self, model):
        """Why ``model`` could not be compiled, or None."""
        with self._lock:
            done = self._done.get(id(model))
        return done[2] if done is not None and done[0] is model else None

    def state(self, model):
        """'compiled', 'compiling', 'failed' or 'not started' for ``model``."""
        with self._lock:
            done = self._done.get(id(model))
            running = id(model) in self._running
        if done is not None and done[0] is model:
            return 'compiled' if done[1] is not None else 'failed'
        return 'compiling' if running else 'not started'

    def _run(self, model):
        compiled, error = None, None
        try:
            compile_ = self._compile
            if compile_ is None:
                from ..codegen import compile as compile_
            compiled = compile_(model)
        except Exception as exc:          # noqa: BLE001 - any failure leaves the library in charge, with the reason
            error = '%s: %s' % (type(exc).__name__, exc)
        with self._lock:
            self._done[id(model)] = (model, compiled, error)
            while len(self._done) > KEEP:                # the oldest models go (dicts keep insertion order)
                del self._done[next(iter(self._done))]
            self._running.discard(id(model))
        self._on_ready(model)
