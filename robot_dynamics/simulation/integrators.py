"""Fixed-step integrators for ``qdd = f(t, q, qd)`` (the physics plugin's time stepping).

An integrator advances the second-order system ``q' = qd, qd' = f(t, q, qd)``
by one step ``dt``. The state stays split into ``(q, qd)`` rather than one
vector ``x`` because the symplectic schemes treat positions and velocities
differently. Any object with this interface can be passed to
:class:`~robot_dynamics.simulation.Simulator` (see :class:`Integrator`);
:func:`get_integrator` maps the names below to the built-in ones.

References: E. Hairer, C. Lubich, G. Wanner, *Geometric Numerical
Integration*, 2nd ed., sec. I.1.2 (symplectic Euler) and sec. VI.3;
E. Hairer, S. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
sec. II.1 (the classical Runge-Kutta method); E. Hairer, G. Wanner, *Solving
Ordinary Differential Equations II*, sec. IV.7 (linearly implicit methods).
"""
from typing import Callable, Protocol, Tuple, runtime_checkable

import numpy as np

from ..algorithms.kernels import jit
from ..errors import InputError

# accel(t, q, qd) -> qdd, each (nq,) [rad, rad/s, rad/s^2 or m, m/s, m/s^2].
Accel = Callable[[float, np.ndarray, np.ndarray], np.ndarray]


@runtime_checkable
class Integrator(Protocol):
    """What the simulator needs from an integrator.

    Attributes:
        name: short name shown in results and messages.
        evaluations: calls of ``accel`` per step (4 for RK4): one call is one
            forward-dynamics (ABA) evaluation plus the force models.
    """
    name: str
    evaluations: int

    def step(self, accel: Accel, t: float, q: np.ndarray, qd: np.ndarray,
             dt: float) -> Tuple[np.ndarray, np.ndarray]:
        """Advance ``(q, qd)`` at time ``t`` [s] by ``dt`` [s].

        Args:
            accel: ``accel(t, q, qd) -> qdd``, (nq,) arrays.
            q, qd: (nq,) state at ``t``; must not be modified.

        Returns:
            (q, qd) at ``t + dt``, new (nq,) arrays.
        """
        ...


@jit
def _axpy(x, h, y):
    """x + h y, one compiled pass (the integrators' hot arithmetic)."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + h * y[i]
    return out


@jit
def _rk4_sum(x, s, k1, k2, k3, k4):
    """x + s (k1 + 2 k2 + 2 k3 + k4)."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + s * (k1[i] + 2.0 * (k2[i] + k3[i]) + k4[i])
    return out


class SemiImplicitEuler:
    """Semi-implicit (symplectic) Euler: velocity first, then position with it.

    ``qd1 = qd + dt f(t, q, qd)``, ``q1 = q + dt qd1``. First order, one
    evaluation per step. With a constant mass matrix (a pendulum, a
    separable Hamiltonian) it is symplectic: the energy error oscillates,
    O(dt), and does not grow. An arm's mass matrix depends on q, and in the
    velocity form used here the method is then no longer symplectic: its
    energy error is O(dt) and drifts (measured on the Panda at 1 kHz,
    zero gravity, joint speeds <= 1 rad/s: +2 % after 10 s, +14 % after
    100 s; halving dt halves it; docs/SIMULATION.md). Use it where speed
    matters more than energy (a damped, controlled arm), RK4 otherwise.
    """
    name = "semi_implicit_euler"
    evaluations = 1

    def step(self, accel, t, q, qd, dt):
        qd1 = _axpy(qd, dt, accel(t, q, qd))              # qd1 = qd + dt f(t, q, qd)
        return _axpy(q, dt, qd1), qd1                      # q1 = q + dt qd1


class ExplicitEuler:
    """Explicit (forward) Euler: ``q1 = q + dt qd``, ``qd1 = qd + dt f(t, q, qd)``.

    First order, one evaluation per step; it adds energy every step (an
    undamped pendulum's amplitude grows). Here for comparison and as the
    simplest example of a plug-in integrator, not for use.
    """
    name = "explicit_euler"
    evaluations = 1

    def step(self, accel, t, q, qd, dt):
        return _axpy(q, dt, qd), _axpy(qd, dt, accel(t, q, qd))


class RK4:
    """Classical fourth-order Runge-Kutta on ``x = (q, qd)``, ``x' = (qd, f)``.

    Four evaluations per step; local error O(dt^5), global O(dt^4). Not
    symplectic: the energy drifts slowly, but at 1 kHz the drift of an arm is
    orders of magnitude below what semi-implicit Euler oscillates by.
    """
    name = "rk4"
    evaluations = 4

    def step(self, accel, t, q, qd, dt):
        h = 0.5 * dt
        a1 = accel(t, q, qd)                               # k1 = (qd, a1)
        v2 = _axpy(qd, h, a1)
        a2 = accel(t + h, _axpy(q, h, qd), v2)             # k2 = (v2, a2)
        v3 = _axpy(qd, h, a2)
        a3 = accel(t + h, _axpy(q, h, v2), v3)             # k3 = (v3, a3)
        v4 = _axpy(qd, dt, a3)
        a4 = accel(t + dt, _axpy(q, dt, v3), v4)           # k4 = (v4, a4)
        s = dt / 6.0                                       # x1 = x + dt/6 (k1 + 2 k2 + 2 k3 + k4)
        return _rk4_sum(q, s, qd, v2, v3, v4), _rk4_sum(qd, s, a1, a2, a3, a4)


class ImplicitEuler:
    """Linearly implicit Euler: one Newton step of backward Euler per step.

    With ``f(q, qd)`` the acceleration and ``Jq = df/dq``, ``Jv = df/dqd``:
    ``(1 - dt Jv - dt^2 Jq) dv = dt (f + dt Jq qd)``, ``qd1 = qd + dv``,
    ``q1 = q + dt qd1`` (Hairer and Wanner, *Solving Ordinary Differential
    Equations II*, sec. IV.7, Rosenbrock methods; MuJoCo's ``implicit``
    integrators are of this kind). First order like semi-implicit Euler, but
    stable for stiff linear forces: a joint damping ``b`` with ``dt b / m >
    2``, a position servo with ``dt w > 2`` or a stiff stop, where the
    explicit schemes diverge; it damps such stiff modes instead of
    oscillating (numerical dissipation of order dt), and without stiff
    forces it is semi-implicit Euler. Pick it for stiff drives, high
    damping or a large ``dt``; RK4 for accuracy and energy.

    In the simulator's compiled step (built-in plug-ins only) the
    derivatives are the exact ones of the force models (servo, friction,
    stops) with the arm's M(q) and h(q, qd) held over the step, as MuJoCo's
    ``implicitfast`` does. Here, for any ``accel``, ``Jq`` and ``Jv`` are
    forward differences of ``accel`` (2 nq more evaluations per step).
    """
    name = "implicit_euler"
    evaluations = 1

    def step(self, accel, t, q, qd, dt):
        f = accel(t, q, qd)
        n = q.shape[0]
        Jq, Jv = np.empty((n, n)), np.empty((n, n))
        for j in range(n):                                 # forward differences, one column each
            e = np.zeros(n)
            e[j] = _fd_step(q[j])
            Jq[:, j] = (accel(t, q + e, qd) - f) / e[j]
            e[j] = _fd_step(qd[j])
            Jv[:, j] = (accel(t, q, qd + e) - f) / e[j]
        A = np.eye(n) - dt * Jv - dt * dt * Jq
        dv = np.linalg.solve(A, dt * (f + dt * (Jq @ qd)))
        qd1 = qd + dv
        return _axpy(q, dt, qd1), qd1


def _fd_step(x):
    """Forward-difference step for a coordinate of size x: sqrt(eps) scaled."""
    return 1.5e-8 * max(1.0, abs(x))


INTEGRATORS = {
    "semi_implicit_euler": SemiImplicitEuler,
    "symplectic_euler": SemiImplicitEuler,
    "explicit_euler": ExplicitEuler,
    "rk4": RK4,
    "implicit_euler": ImplicitEuler,
}


def get_integrator(integrator):
    """An integrator object from a name in :data:`INTEGRATORS` or an object
    that already implements :class:`Integrator` (returned as is)."""
    if isinstance(integrator, str):
        try:
            return INTEGRATORS[integrator.lower()]()
        except KeyError:
            raise InputError("unknown integrator %r; the built-in ones are: %s"
                             % (integrator, ", ".join(sorted(INTEGRATORS)))) from None
    if not isinstance(integrator, Integrator):
        raise InputError("integrator must be a name (%s) or an object with name, evaluations and "
                         "step(accel, t, q, qd, dt); got %r" % (", ".join(sorted(INTEGRATORS)), integrator))
    return integrator


def lie_step(integrator, model, accel, t, q, v, dt):
    """One step of a floating or planar base: positions on the Lie group.

    The state is (q, v) with v the base's twist in its own frame
    (:mod:`robot_dynamics.model.configuration`); writing ``q(t) = q0 *
    exp(xi(t))``, the positions follow ``xi' = dexp^-1_xi(v)`` in the Lie
    algebra (``v = dexp_(-xi)(xi')``, the body-frame form), where the
    integrators' usual arithmetic applies
    (Runge-Kutta-Munthe-Kaas: Hairer, Lubich and Wanner, *Geometric
    Numerical Integration*, sec. IV.8; Iserles et al., *Lie-group methods*,
    Acta Numerica 2000). ``dexp^-1`` is truncated after ``[xi, [xi, v]] / 12``,
    enough for order 4. Semi-implicit Euler: ``v1 = v + dt f(q, v)``, ``q1
    = q exp(dt v1)`` (symplectic Euler on the group, order 1); RK4: the
    classical tableau on (xi, v), order 4.
    """
    from ..model.configuration import integrate
    if isinstance(integrator, SemiImplicitEuler):
        v1 = v + dt * accel(t, q, v)
        return integrate(model, q, v1, dt), v1
    h = 0.5 * dt
    k1v, k1a = v, accel(t, q, v)
    x2, v2 = h * k1v, v + h * k1a
    k2v = _dexpinv(model, x2, v2)
    k2a = accel(t + h, integrate(model, q, x2), v2)
    x3, v3 = h * k2v, v + h * k2a
    k3v = _dexpinv(model, x3, v3)
    k3a = accel(t + h, integrate(model, q, x3), v3)
    x4, v4 = dt * k3v, v + dt * k3a
    k4v = _dexpinv(model, x4, v4)
    k4a = accel(t + dt, integrate(model, q, x4), v4)
    xi = (dt / 6.0) * (k1v + 2.0 * (k2v + k3v) + k4v)
    return integrate(model, q, xi), v + (dt / 6.0) * (k1a + 2.0 * (k2a + k3a) + k4a)


def _dexpinv(model, xi, v):
    """xi' for ``q = q0 exp(xi)`` moving with body twist v: ``dexp^-1_(-xi)(v)
    ~ v + [xi, v] / 2 + [xi, [xi, v]] / 12`` on the root's coordinates (se(3),
    or se(2) embedded in it); the joints' unchanged."""
    out = v.copy()
    n = model.root_nv
    if model.root_joint == "floating":
        r = slice(0, 6)
        embed = lambda x: x                                    # noqa: E731
    else:
        r = slice(0, 3)
        embed = lambda x: np.array([x[0], x[1], 0.0, 0.0, 0.0, x[2]])   # noqa: E731
    a, b = embed(xi[r]), embed(v[r])
    ab = _ad(a, b)
    d = b + 0.5 * ab + _ad(a, ab) / 12.0
    out[:n] = d if model.root_joint == "floating" else d[[0, 1, 5]]
    return out


def _ad(x, y):
    """Lie bracket [x, y] of twists (linear, angular): (wx x uy - wy x ux, wx x wy)."""
    ux, wx, uy, wy = x[:3], x[3:], y[:3], y[3:]
    return np.concatenate([np.cross(wx, uy) - np.cross(wy, ux), np.cross(wx, wy)])
