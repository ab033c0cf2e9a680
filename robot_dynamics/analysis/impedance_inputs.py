"""Input checks of the impedance laws (:mod:`.impedance`): shapes, finiteness, symmetric
positive (semi)definite gains, positive limits; each refusal names what was expected and
what came."""
import numpy as np

from .. import checks
from ..errors import InputError


def broadcast(*arrays):
    """(batch shape, [(B, k) C-contiguous float64 rows or None]) of (..., k) arrays broadcast together."""
    given = [a for a in arrays if a is not None]
    shape = np.broadcast_shapes(*(a.shape[:-1] for a in given))
    B = int(np.prod(shape, dtype=np.int64))
    rows = [None if a is None else np.ascontiguousarray(np.broadcast_to(a, shape + a.shape[-1:]).reshape(B, -1),
                                                          dtype=float) for a in arrays]
    return shape, rows


def states(model, **states):
    """The named states as float arrays (..., nq), in the order given; InputError naming the one whose last
    axis is not the model's nq or that is not finite."""
    out = []
    for name, x in states.items():
        x = checks.as_float_array(x, name)
        if x.shape[-1:] != (model.nq,):
            raise InputError('%s must have %d values (one per joint of %r), got shape %s'
                             % (name, model.nq, model.name, x.shape))
        checks.check_finite(**{name: x})
        out.append(x)
    return out


def vector(x, n, name):
    """``x`` as a finite float array (..., n); InputError naming ``name`` otherwise."""
    x = checks.as_float_array(x, name)
    if x.shape[-1:] != (n,):
        raise InputError('%s must have %d values, got shape %s' % (name, n, x.shape))
    checks.check_finite(**{name: x})
    return x


def spd(x, n, name, strict=True, scalar=False):
    """(n, n) from a (n,) diagonal or an (n, n) matrix (or, with ``scalar``, one value for the whole
    diagonal), checked symmetric and positive (semi)definite."""
    x = checks.as_float_array(x, name)
    if scalar and x.shape == ():
        x = np.full(n, float(x))
    if x.shape == (n,):
        x = np.diag(x)
    if x.shape != (n, n):
        raise InputError('%s must be %s%d values (a diagonal) or a %dx%d matrix, got shape %s'
                         % (name, 'one value, ' if scalar else '', n, n, n, x.shape))
    checks.check_finite(**{name: x})
    if not np.allclose(x, x.T, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(x).max())):
        raise InputError('%s must be symmetric' % name)
    w = np.linalg.eigvalsh(x)
    if (w.min() <= 0.0) if strict else (w.min() < -1e-12 * max(1.0, w.max())):
        raise InputError('%s must be positive %sdefinite, got eigenvalues %s'
                         % (name, '' if strict else 'semi', np.array2string(w, precision=4)))
    return x


def positive(x, name):
    """``x`` as a float, a finite number > 0 (a gain, a ratio, a bound); InputError naming ``name`` otherwise."""
    if not (isinstance(x, (int, float, np.floating, np.integer)) and np.isfinite(x) and x > 0):
        raise InputError('%s must be a positive number, got %r' % (name, x))
    return float(x)


def nonnegative_vector(x, n, name):
    """(n,) finite values >= 0 from one value for all or n values (e.g. the null-space stiffness [N m/rad])."""
    x = np.broadcast_to(checks.as_float_array(x, name), (n,)).copy() if np.ndim(x) == 0 else vector(x, n, name)
    if not (np.all(np.isfinite(x)) and np.all(x >= 0)):
        raise InputError('%s must be finite and >= 0, got %s' % (name, x))
    return x


def limits(x, n, name):
    """(n,) bounds > 0 from one value for all or n values (e.g. max_pose_error: [m], [rad])."""
    x = np.broadcast_to(checks.as_float_array(x, name), (n,)).copy() if np.ndim(x) == 0 else vector(x, n, name)
    if not np.all(x > 0):
        raise InputError('%s must be > 0, got %s' % (name, x))
    return x
