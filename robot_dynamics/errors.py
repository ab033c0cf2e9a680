"""The errors and warnings robot_dynamics raises on purpose, in one place.

Every deliberate error is a :class:`RobotDynamicsError`; those that report
a bad value (a URDF, an argument, a message, a singular pose) are also a
``ValueError``, so ``except ValueError`` keeps working. Bad arguments of
the array API (shapes, finiteness, unknown links) are :class:`InputError`,
with the argument's name, what was expected and what came.
An old argument order still accepted for one release warns with a
``DeprecationWarning`` naming the new form (:func:`old_argument_order`).
"""
import functools
import warnings


class RobotDynamicsError(Exception):
    """Base class of every error robot_dynamics raises on purpose."""


class InputError(RobotDynamicsError, ValueError):
    """A bad argument: a wrong shape, a non-finite or non-numeric value, an
    unknown link or joint. The message names the argument, what was
    expected and what came (``q has 6 values, model nq is 7``)."""


class URDFError(RobotDynamicsError, ValueError):
    """A URDF that cannot be turned into a model.

    The message names the element at fault (link or joint name and the
    attribute), never a traceback from inside the XML parser.
    """


class SingularityError(RobotDynamicsError, ValueError):
    """A singular configuration: a mass matrix that cannot be inverted, or a
    task Jacobian whose operational-space inertia is unbounded. The message
    says which, with the condition number and the bound where there is one."""


class AssemblyError(RobotDynamicsError, ValueError):
    """The loops of a closed-loop mechanism cannot be closed from the given
    guess (:func:`robot_dynamics.assemble`): the message names the loop with
    the largest remaining residual, in m and rad."""


class SimulationError(RobotDynamicsError, RuntimeError):
    """A simulation step would have produced a non-finite state; the
    simulator kept its state."""


class ParameterError(RobotDynamicsError, ValueError):
    """One or more ROS parameters are invalid; the text lists each problem."""


class JointMapError(RobotDynamicsError, ValueError):
    """A joint-state message's names do not map onto the model's joints."""


class ProfileError(RobotDynamicsError, ValueError):
    """A robot profile file (config/robots/) that cannot be read or misses what it must say."""


class WorldError(RobotDynamicsError, ValueError):
    """A world file (robot_dynamics.contact.world) that cannot be read: the
    message names the entry and key at fault, what was expected and what came."""


class CdrError(RobotDynamicsError, ValueError):
    """Bytes that are not a serialized message of the expected type (robot_dynamics.ros.cdr)."""


class CommandError(RobotDynamicsError, ValueError):
    """A command message that cannot be applied; the text says why."""


class UsageError(RobotDynamicsError, ValueError):
    """A bad command-line argument: printed as one line, exit code 2."""


class NodeProcessError(RobotDynamicsError, RuntimeError):
    """A node started as a child process did not do what was waited for."""


class NodeExited(NodeProcessError):
    """The node process exited while something else was expected of it."""


class NodeTimeout(NodeProcessError):
    """A wait on a node process took longer than its timeout."""


class InertiaWarning(UserWarning):
    """A link's inertia is physically implausible (not positive definite or
    violates the triangle inequality); the model is still built."""


class URDFWarning(UserWarning):
    """A URDF that loads but says something odd (a mimic of a joint the
    robot lacks, an unknown tag inside a <joint> or <inertial>); the message
    names the element and what the model does instead."""


class SwitchUnavailable(RobotDynamicsError, RuntimeError):
    """controller_manager_msgs is not installed: no ``switch_controller`` request can be made."""


def old_argument_order(position, reorder, new_form):
    """Decorator of a public function whose argument order changed to
    ``(model, q, qd, ..., link, point)`` (docs/API-CONTRACT.md, "Argument
    order"): a call with a str (a link name) at positional ``position``,
    where the new order has an array, is in the old order; it warns
    (DeprecationWarning naming ``new_form``) and runs with ``reorder(args,
    kwargs) -> (args, kwargs)``. One release, then the old order goes."""
    def wrap(f):
        @functools.wraps(f)
        def call(*args, **kwargs):
            if len(args) > position and isinstance(args[position], str):
                warnings.warn("%s: this argument order is deprecated and goes in the next release; "
                              "call %s (docs/API-CONTRACT.md)" % (f.__name__, new_form),
                              DeprecationWarning, stacklevel=2)
                args, kwargs = reorder(args, kwargs)
            return f(*args, **kwargs)
        return call
    return wrap
