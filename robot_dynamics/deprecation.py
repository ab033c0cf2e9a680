"""Old argument orders, accepted for one release with a DeprecationWarning.

Every public function takes its arguments in one order,
``(model, q, qd, ..., link, point)`` and then options
(docs/API-CONTRACT.md). Four functions had another order; a call in the
old one (told apart by a link name, a str, where the new order has an
array) warns, naming the new form, and still runs:

    operational_space(model, q, link, point, qd)     -> operational_space(model, q, qd, link, point)
    static_torques(model, q, link, wrench, point)    -> static_torques(model, q, wrench, link, point)
    identify_payload(model, link, q, qd, qdd, tau)   -> identify_payload(model, q, qd, qdd, tau, link)
    impact(model, q, qd, link, point, normal, e)     -> impact(model, q, qd, normal, link, point, e)
"""
import functools
import warnings

ORIGIN = (0.0, 0.0, 0.0)


def old_order(position, reorder, new_form):
    """Decorator: a call with a str at positional ``position`` is in the old
    order; it warns (DeprecationWarning naming ``new_form``) and runs with
    ``reorder(args, kwargs) -> (args, kwargs)``."""
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


def _take(rest, k, kwargs, name, default=None):
    return rest[k] if len(rest) > k else kwargs.pop(name, default)


def operational_space_order(args, kwargs):
    """(model, q, link, point, qd) -> (model, q, qd, link, point)."""
    model, q, link, rest = args[0], args[1], args[2], args[3:]
    point, qd = _take(rest, 0, kwargs, "point", ORIGIN), _take(rest, 1, kwargs, "qd")
    return (model, q, qd, link, point), kwargs


def static_torques_order(args, kwargs):
    """(model, q, link, wrench, point) -> (model, q, wrench, link, point)."""
    model, q, link, rest = args[0], args[1], args[2], args[3:]
    wrench, point = _take(rest, 0, kwargs, "wrench"), _take(rest, 1, kwargs, "point", ORIGIN)
    return (model, q, wrench, link, point), kwargs


def identify_payload_order(args, kwargs):
    """(model, link, q, qd, qdd, tau) -> (model, q, qd, qdd, tau, link)."""
    kwargs["link"] = args[1]
    return (args[0],) + tuple(args[2:]), kwargs


def impact_order(args, kwargs):
    """(model, q, qd, link, point, normal, e) -> (model, q, qd, normal, link, point, e)."""
    model, q, qd, link, rest = args[0], args[1], args[2], args[3], args[4:]
    point, normal = _take(rest, 0, kwargs, "point"), _take(rest, 1, kwargs, "normal")
    if len(rest) > 2:
        kwargs["restitution"] = rest[2]
    return (model, q, qd, normal, link, point), kwargs
