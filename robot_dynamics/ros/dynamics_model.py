"""dynamics_node's compiled backend (:mod:`robot_dynamics.control.backend`): the model's generated C
compiled in a thread, and the pipeline rebuilt with it when it is ready; and the robots it refuses."""
from ..control.backend import COMPILED, CompiledModels, covers
from ..control.base_state import base_link
from ..model.model import describe_base
from .dynamics_params import observer_on

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


def moving_base_problem(model, p):
    """None for a fixed base, or a floating or planar one with ``base_state_topic`` (parameters ``p``); else
    what to set."""
    if model.root_joint is None:
        return None
    if not p.base_state_topic:
        return ("%s: dynamics_node needs its pose and twist; set the parameter 'base_state_topic' to a "
                "nav_msgs/Odometry topic of the base (child_frame_id %r, twist in the base frame), or give a "
                "description whose root link is fixed to the world" % (describe_base(model), base_link(model)))
    if observer_on(p):
        return ("%s: the momentum observer (parameter 'observer_gains') needs a fixed base: the measured "
                "joint torques of a moving base do not give its momentum without the wrenches on the base "
                "(contacts, wheels); set 'observer_gains' to [] for this robot" % describe_base(model))
    return None


def observer_loops_problem(model, p):
    """The momentum observer (parameters ``p``) refuses a closed-loop robot: the text, or None."""
    if model.loops and observer_on(p):
        return ("robot %r has closed loops (loops_file): the momentum observer (parameter 'observer_gains') "
                "needs a tree, whose joint torques give its momentum; set 'observer_gains' to [] for this robot"
                % model.name)
    return None
