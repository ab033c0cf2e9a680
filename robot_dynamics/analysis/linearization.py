"""Linear models of the arm about a state, and LQR gains that hold it at a pose.

The state is ``x = (q, qd)`` (2 nq), the input the joint torques ``tau``.
The forward dynamics ``qdd = FD(q, qd, tau)`` (:func:`~robot_dynamics.aba`)
give ``xdot = f(x, tau) = (qd, FD(q, qd, tau))``, and its Jacobians come
from the analytical derivatives of :func:`~robot_dynamics.aba_derivatives`
(Carpentier and Mansard, "Analytical derivatives of rigid body dynamics
algorithms", RSS 2018, sec. IV). Rigid-body dynamics only: URDF damping
and friction, position stops and effort limits are not in the model.

LQR: Anderson and Moore, *Optimal Control: Linear Quadratic Methods*,
ch. 2-3 (the continuous and discrete algebraic Riccati equations, solved
by ``scipy.linalg.solve_continuous_are`` / ``solve_discrete_are``).
"""
import numpy as np

from .. import checks
from ..algorithms.derivatives import aba_derivatives
from ..algorithms.rnea import gravity_torques
from ..errors import InputError
from ..algorithms.floating import require_fixed

METHODS = ("zoh", "euler")


def linearize(model, q, qd, tau, dt=None, *, method="zoh"):
    """The linear model ``(A, B)`` of the arm's dynamics about ``(q, qd, tau)``.

    Continuous time (``dt=None``): ``d(dx)/dt = A dx + B du`` for the
    deviations ``dx = x - (q, qd)``, ``du = tau_applied - tau``, with
    ``A = [[0, 1], [dqdd/dq, dqdd/dqd]]`` and ``B = [[0], [M^-1]]``.

    Discrete time (``dt`` given): ``dx[k+1] = A dx[k] + B du[k]`` for the
    torque held over each step of length dt, by ``method``:

    - ``'zoh'`` (default): the exact zero-order-hold discretisation of the
      continuous pair, ``[[A, B], [0, 0]]`` exponentiated over dt
      (``scipy.linalg.expm``; Franklin, Powell and Workman, *Digital Control
      of Dynamic Systems*, sec. 4.3.3);
    - ``'euler'``: the linearisation of one semi-implicit Euler step, as the
      simulator's ``semi_implicit_euler`` integrator takes it
      (``qd1 = qd + dt qdd``, ``q1 = q + dt qd1``):
      ``A = [[1 + dt^2 Aq, dt (1 + dt Av)], [dt Aq, 1 + dt Av]]``,
      ``B = [[dt^2 M^-1], [dt M^-1]]``.

    About an equilibrium (``qd = 0``, ``tau = g(q)``) this is the whole
    linear model; elsewhere the drift ``f(x0, tau)`` (continuous) or the step
    of the nominal state (discrete) is not included: (A, B) act on deviations.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q, qd: (nq,) joint positions [rad or m] and velocities.
        tau: (nq,) joint torques [N m] / forces [N] of the nominal input.
        dt: None (continuous time) or the step [s], > 0.
        method: ``'zoh'`` or ``'euler'`` (used only with dt).

    Returns:
        ``(A, B)``: (2 nq, 2 nq) and (2 nq, nq), state order ``(q, qd)`` in
        ``model.joint_names`` order.

    Raises:
        InputError: bad shapes, non-finite values, a bad dt or method.
        SingularityError: M(q) is not invertible.
    """
    require_fixed(model, "linearize")
    q, qd, tau = _state(model, q=q, qd=qd, tau=tau)
    dt = _step(dt)
    if method not in METHODS:
        raise InputError("method must be one of %s, got %r" % (", ".join(repr(m) for m in METHODS), method))
    dqdd_dq, dqdd_dqd, Minv = aba_derivatives(model, q, qd, tau)
    n = model.nq
    I = np.eye(n)
    if dt is not None and method == "euler":
        A = np.block([[I + dt * dt * dqdd_dq, dt * (I + dt * dqdd_dqd)], [dt * dqdd_dq, I + dt * dqdd_dqd]])
        B = np.vstack([dt * dt * Minv, dt * Minv])
        return A, B
    A = np.block([[np.zeros((n, n)), I], [dqdd_dq, dqdd_dqd]])
    B = np.vstack([np.zeros((n, n)), Minv])
    if dt is None:
        return A, B
    E = np.zeros((3 * n, 3 * n))                # expm([[A, B], [0, 0]] dt) = [[Ad, Bd], [0, 1]]
    E[:2 * n, :2 * n], E[:2 * n, 2 * n:] = A * dt, B * dt
    import scipy.linalg                    # here: scipy costs 0.2 s of import robot_dynamics
    E = scipy.linalg.expm(E)
    return E[:2 * n, :2 * n], E[:2 * n, 2 * n:]


def lqr(model, q, Q=None, R=None, *, dt=None, method="zoh"):
    """LQR gains that hold the arm at the pose ``q``.

    The arm is linearised (:func:`linearize`) about the gravity-compensated
    equilibrium ``x* = (q, 0)``, ``tau* = g(q)`` (:func:`~robot_dynamics.gravity_torques`),
    and the gains minimise ``integral(dx^T Q dx + du^T R du) dt`` (or the sum
    over steps with ``dt``). The control law is

        ``tau = g(q*) - K (x - x*)``,  ``x = (q, qd)``,  ``x* = (q*, 0)``,

    which makes ``A - B K`` stable (continuous: eigenvalues in the open left
    half-plane; discrete: inside the unit circle).

    Args:
        model: :class:`~robot_dynamics.Model`.
        q: (nq,) the pose to hold [rad or m].
        Q: state weight: None (identity), a number, (2 nq,) diagonal or
            (2 nq, 2 nq) symmetric positive semidefinite, state order (q, qd).
        R: input weight: None (identity), a number, (nq,) diagonal or
            (nq, nq) symmetric positive definite [1/(N m)^2].
        dt: None for continuous-time gains (``scipy.linalg.solve_continuous_are``),
            or a controller period [s] for discrete-time gains
            (``solve_discrete_are`` on the ``method`` discretisation).
        method: ``'zoh'`` or ``'euler'``, as in :func:`linearize`.

    Returns:
        ``(K, S, E)`` as in the Control System Toolbox's ``lqr``: K (nq, 2 nq)
        the gains [N m/rad, N m s/rad], S (2 nq, 2 nq) the Riccati solution
        (the cost-to-go ``dx^T S dx``), E (2 nq,) the closed-loop eigenvalues
        of ``A - B K``.

    Raises:
        InputError: bad shapes or weights. SingularityError: M(q) singular.
        numpy.linalg.LinAlgError: the Riccati equation has no stabilising
            solution (scipy's message).
    """
    require_fixed(model, "lqr")
    q, = _state(model, q=q)
    n = model.nq
    Q = _weight(Q, 2 * n, "Q")
    R = _weight(R, n, "R", definite=True)
    tau = gravity_torques(model, q)
    A, B = linearize(model, q, np.zeros(n), tau, dt, method=method)
    import scipy.linalg                    # here: scipy costs 0.2 s of import robot_dynamics
    if dt is None:
        S = scipy.linalg.solve_continuous_are(A, B, Q, R)
        K = np.linalg.solve(R, B.T @ S)                     # K = R^-1 B^T S
    else:
        S = scipy.linalg.solve_discrete_are(A, B, Q, R)
        K = np.linalg.solve(R + B.T @ S @ B, B.T @ S @ A)   # K = (R + B^T S B)^-1 B^T S A
    return K, S, np.linalg.eigvals(A - B @ K)


def _state(model, **vectors):
    out = []
    for name, x in vectors.items():
        a = checks.as_float_array(x, name)
        if a.shape != (model.nq,):
            raise InputError("%s must be one state of shape (%d,) (model nq is %d), got shape %s"
                             % (name, model.nq, model.nq, a.shape))
        checks.check_finite(**{name: a})
        out.append(np.ascontiguousarray(a))
    return out


def _step(dt):
    if dt is None:
        return None
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        raise InputError("dt must be None or a time step > 0 [s], got %r" % (dt,)) from None
    if not (np.isfinite(dt) and dt > 0):
        raise InputError("dt must be None or a finite time step > 0 [s], got %r" % (dt,))
    return dt


def _weight(W, n, name, definite=False):
    """None, a number, (n,) diagonal or (n, n) symmetric: as an (n, n) array."""
    if W is None:
        return np.eye(n)
    a = checks.as_float_array(W, name)
    if a.ndim == 0:
        a = a * np.eye(n)
    elif a.shape == (n,):
        a = np.diag(a)
    elif a.shape != (n, n):
        raise InputError("%s must be a number, (%d,) diagonal or (%d, %d), got shape %s" % (name, n, n, n, a.shape))
    checks.check_finite(**{name: a})
    if not np.allclose(a, a.T, rtol=1e-12, atol=0.0):
        raise InputError("%s must be symmetric" % name)
    eig = np.linalg.eigvalsh((a + a.T) / 2)
    if (definite and not eig.min() > 0) or eig.min() < -1e-12 * max(abs(eig.max()), 1.0):
        raise InputError("%s must be symmetric positive %sdefinite, its smallest eigenvalue is %g"
                         % (name, "" if definite else "semi", eig.min()))
    return a
