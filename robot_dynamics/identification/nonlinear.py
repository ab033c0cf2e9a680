"""Friction laws in the identification: which columns each law keeps, and the
nonlinear ones (stribeck, sigmoid) by variable projection.

The caller picks a law per joint (:func:`resolve_laws`). ``viscous`` and
``coulomb`` are linear: they keep the viscous (and Coulomb) columns of
:func:`~robot_dynamics.friction_regressor`. ``stribeck`` and ``sigmoid``
replace a joint's viscous and Coulomb columns by their own law (the offset
column, a bias of the torque measurement, stays for every joint). Given the
nonlinear parameters z (each stribeck joint's ``stribeck_velocity``, each
sigmoid joint's ``phi2, phi3``), the torque is linear in everything else:
the base parameters and each law's linear parameters (:mod:`.friction_laws`).

Variable projection (Golub and Pereyra, *The differentiation of pseudo-inverses
and nonlinear least squares problems whose variables separate*, SIAM J. Numer.
Anal. 1973): the linear parameters are eliminated by least squares for every
z, ``r(z) = (1 - P_[A C(z)]) b``, and ``|r(z)|`` is minimised over z alone
with :func:`scipy.optimize.least_squares` (trust region, finite-difference
Jacobian: at most two columns per joint). At z fixed the fit is the linear
one, so the start of every linear parameter is the linear least-squares fit
itself, the viscous + Coulomb fit when z makes the law a Coulomb step.

Starts of z (per joint, with ``v_max`` its largest |velocity| in the data):
``phi3 = 0`` (a symmetric sigmoid); ``phi2`` and ``stribeck_velocity`` the
best of a logarithmic grid, ``phi2 v_max`` in 0.5 .. 200 (a transition from
twice the data's speed down to 1/50 of it) and ``stribeck_velocity / v_max``
in 1e-3 .. 0.3, scanned one joint after the other (the others at their
grid's middle, then at their best): the projected residual has shallow side
minima in these coordinates, a grid start keeps the fit out of them.
"""
import numpy as np

from ..errors import InputError
from ..model.actuators import LAWS
from .friction_laws import LINEAR, NONLINEAR, linear_columns

GRID = 12
PHI2_GRID = (0.5, 200.0)            # phi2 * v_max
STRIBECK_GRID = (1e-3, 0.3)         # stribeck_velocity / v_max
LOWER = {"stribeck_velocity": 1e-6, "phi2": 1e-6, "phi3": -np.inf}


def resolve_laws(model, friction):
    """The friction law of each joint (model.joint_names order), or None.

    friction: False or None (no friction), True (``"coulomb"`` everywhere, the
    viscous, Coulomb and offset columns), a law name of docs/ACTUATORS.md for
    every joint, or ``{joint: law}`` (joints not named: ``"coulomb"``)."""
    if friction is None or friction is False:
        return None
    if friction is True:
        return ("coulomb",) * model.nq
    if isinstance(friction, str):
        _check_law(friction, "friction")
        return (friction,) * model.nq
    if isinstance(friction, dict):
        unknown = sorted(set(map(str, friction)) - set(model.joint_names))
        if unknown:
            raise InputError("friction: unknown joint(s) %s; the joints are: %s"
                             % (", ".join(unknown), ", ".join(model.joint_names)))
        for name, law in friction.items():
            _check_law(law, "friction[%r]" % name)
        return tuple(friction.get(name, "coulomb") for name in model.joint_names)
    raise InputError("friction must be True, False, a law (%s) or {joint: law}, got %r" % (", ".join(LAWS), friction))


def _check_law(law, what):
    if law not in LAWS:
        raise InputError("%s: unknown friction law %r (known: %s)" % (what, law, ", ".join(LAWS)))


def dropped_columns(laws, first):
    """Full-parameter indices of the friction columns the laws do not use
    (``first``: index of fv of the first joint; 3 columns per joint)."""
    out = []
    for j, law in enumerate(laws):
        if law == "viscous":
            out.append(first + 3 * j + 1)
        elif law in NONLINEAR:
            out += [first + 3 * j, first + 3 * j + 1]
    return out


def kept_base_columns(base, dropped):
    """(count,) bool: the base parameters the laws keep. Each dropped column
    must be a base parameter of its own (viscous and Coulomb columns always
    are: no inertial column is odd in qd)."""
    keep = np.ones(base.count, dtype=bool)
    for col in dropped:
        rows = np.flatnonzero(base.K[:, col])
        if rows.size != 1 or np.count_nonzero(base.K[rows[0]]) != 1:
            raise InputError("friction column %s is combined with other parameters in the base parameters: "
                             "it cannot be replaced by a nonlinear law" % base.names[col])
        keep[rows[0]] = False
    return keep


def nonlinear_joints(laws):
    return [j for j, law in enumerate(laws) if law in NONLINEAR]


def law_columns(laws, z, QD):
    """(N nq, k) columns of the stribeck / sigmoid laws' linear parameters
    (LINEAR order, joint after joint) at nonlinear parameters z, each in its
    joint's rows of the stacked samples ``QD`` (N, nq)."""
    N, nq = QD.shape
    joints = nonlinear_joints(laws)
    k = sum(len(LINEAR[laws[j]]) for j in joints)
    C = np.zeros((N, nq, k))
    c = i = 0
    for j in joints:
        law = laws[j]
        m, n = len(NONLINEAR[law]), len(LINEAR[law])
        C[:, j, c:c + n] = linear_columns(law, z[i:i + m], QD[:, j])
        c, i = c + n, i + m
    return C.reshape(N * nq, k)


def split(laws, z, y):
    """{joint index: {parameter: value}} of the stribeck / sigmoid joints from z and y."""
    out, i, c = {}, 0, 0
    for j in nonlinear_joints(laws):
        law = laws[j]
        m, n = len(NONLINEAR[law]), len(LINEAR[law])
        out[j] = dict(zip(NONLINEAR[law], z[i:i + m]))
        out[j].update(zip(LINEAR[law], y[c:c + n]))
        i, c = i + m, c + n
    return out


def variable_projection(A, b, w, QD, laws):
    """The nonlinear parameters z of the stribeck / sigmoid joints minimising
    ``|w (b - [A C(z)] x)|`` over x and z (the module text).

    Args:
        A: (N nq, p) the linear columns kept (unweighted), b (N nq,) torques,
        w: (N nq,) row weights, QD: (N, nq) velocities, laws: one per joint.
    """
    import scipy.optimize                      # here: scipy costs 0.2 s of import robot_dynamics
    Q0, _ = np.linalg.qr(A * w[:, None])
    bw = b * w
    pb = bw - Q0 @ (Q0.T @ bw)

    def residual(z):
        C = law_columns(laws, z, QD) * w[:, None]
        C -= Q0 @ (Q0.T @ C)
        y = np.linalg.lstsq(C, pb, rcond=None)[0]
        return pb - C @ y

    z, lower, grids = _starts(laws, QD)
    for _ in range(2):                          # coordinate scan of the grid, twice
        for idx, grid in grids:
            costs = []
            for g in grid:
                z[idx] = g
                costs.append(float(np.sum(residual(z) ** 2)))
            z[idx] = grid[int(np.argmin(costs))]
    sol = scipy.optimize.least_squares(residual, z, bounds=(lower, np.inf), method="trf", x_scale="jac",
                                       xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=200 * z.size)
    return sol.x


def _starts(laws, QD):
    """z at the middle of its grids, the lower bounds, and [(index in z, grid)]."""
    z, lower, grids = [], [], []
    for j in nonlinear_joints(laws):
        vmax = float(np.max(np.abs(QD[:, j])))
        if not vmax > 0:
            raise InputError("joint %d never moves in the data: its %s friction cannot be identified" % (j, laws[j]))
        if laws[j] == "stribeck":
            grid = vmax * np.geomspace(*STRIBECK_GRID, GRID)
        else:
            grid = np.geomspace(*PHI2_GRID, GRID) / vmax
        grids.append((len(z), grid))
        z.append(grid[GRID // 2])
        lower.append(LOWER[NONLINEAR[laws[j]][0]])
        if laws[j] == "sigmoid":
            z.append(0.0)
            lower.append(LOWER["phi3"])
    return np.array(z), np.array(lower), grids
