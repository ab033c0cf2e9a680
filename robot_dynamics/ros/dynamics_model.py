"""dynamics_node's compiled backend (:mod:`robot_dynamics.control.backend`): the model's generated C
compiled in a thread, and the pipeline rebuilt with it when it is ready."""
from ..control.backend import COMPILED, CompiledModels, covers
from ..control.base_state import describe_base

#: [s] How often the executor looks whether a model's code is compiled (control/backend.py), while it is not.
COMPILE_POLL = 0.1


class CompiledBackend:
    """The CompiledModel of each model when ``backend`` is compiled.

    Args:
        backend: the parameter ``backend`` ('library' or 'compiled').
        node: the rclpy Node whose executor polls the compilation (``create_timer``, ``destroy_timer``).
        log: its logger.
        rebuild: ``rebuild(model)`` -> None or the problem: the pipeline of ``model`` built again (with
            the code now ready).
        current: ``current()`` -> (the node's model or None, whether its pipeline computes with code).
    """

    def __init__(self, backend, node, log, rebuild, current):
        self.backend, self.node, self.log, self.rebuild, self.current = backend, node, log, rebuild, current
        self.models = None              # CompiledModels, once a model asks
        self.poll = None                # the timer of COMPILE_POLL while a compilation runs

    def code(self, model):
        """The CompiledModel of ``model`` when ``backend`` is compiled and its code is ready, else None (the
        library): its compilation runs in a thread, and :meth:`_on_poll` (a timer of the executor, every
        COMPILE_POLL s while one runs: EventsExecutor has no guard conditions) rebuilds the pipeline with it."""
        if self.backend != COMPILED:
            return None
        if not covers(model):
            self.log.warning('backend compiled covers fixed-base trees; %r (%s) runs on the library'
                             % (model.name, describe_base(model) if model.root_joint else 'closed loops'), once=True)
            return None
        if self.models is None:
            self.models = CompiledModels(lambda _model: None)
        code = self.models.get(model)
        if code is None and self.models.state(model) == 'compiling' and self.poll is None:
            self.poll = self.node.create_timer(COMPILE_POLL, self._on_poll)
        return code

    def state(self, model):
        """What computes the laws of ``model`` now: 'library', 'compiled', or 'library (compiling)' /
        'library (failed)'."""
        models = self.models
        if self.backend != COMPILED or models is None or model is None or not covers(model):
            return 'library'
        state = models.state(model)
        return 'compiled' if state == 'compiled' else 'library (%s)' % state

    def _on_poll(self):
        """While a compilation runs (the executor's thread): when it ends, use the current model's code, or
        say why not."""
        (model, compiled), models = self.current(), self.models
        if model is None or models is None or models.state(model) == 'compiling':
            return
        self.node.destroy_timer(self.poll)
        self.poll = None
        error = models.error(model)
        if error is not None:
            self.log.error('backend compiled: the code of %r could not be built, the library computes the '
                           'torques: %s' % (model.name, error), once=True)
            return
        if models.get(model) is None or compiled is None or compiled:
            return
        problem = self.rebuild(model)
        if problem:
            self.log.error('backend compiled: %s' % problem)
        else:
            self.log.info('backend compiled: the torques of %r now come from its generated C' % model.name)
