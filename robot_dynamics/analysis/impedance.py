"""Impedance control: a spring and a damper between the arm and a target, in joint or Cartesian space.

Both laws compensate gravity (and, unless told not to, the Coriolis and
centrifugal torques) with the model and add a virtual spring ``K`` and
damper ``D``, so that the arm at rest obeys ``K (x_d - x) = -F_ext``: it
yields to a force like a spring of stiffness ``K`` (Handbook, Siciliano &
Khatib (eds.), 2nd ed., sec. 7.4 and 7.5; Ott, *Cartesian Impedance Control
of Redundant and Flexible-Joint Robots*, Springer 2008, ch. 3).

Cartesian law (:class:`CartesianImpedance`), for the point ``point`` of
``link`` with Jacobian ``J`` (6, n) in the base frame, rows
``[vx vy vz wx wy wz]``::

    e   = (p_d - p, log(Q_d Q^-1))                 pose error (6,), base frame [m, rad]
    de  = v_d - J qd                               twist error (6,) [m/s, rad/s]
    F   = Lambda (a_d - Jdot qd) + K e + D de      task wrench (6,) [N, N m]
    tau = J^T F + h(q, qd) + (1 - J^T Jbar^T) tau_0

with ``Lambda = (J M^-1 J^T)^-1`` and ``Jbar = M^-1 J^T Lambda`` (Handbook
eq. 3.60), ``h = C qd + g`` (``g`` alone without ``include_coriolis``,
nothing without ``include_gravity``) and the null-space posture torque
``tau_0 = K_0 (q_0 - q) - D_0 qd``. With ``include_coriolis`` the closed
loop is exactly ``Lambda de' + D de + K e = -F_ext`` in the task space
(the ``Lambda Jdot qd`` term cancels the task-space bias; Ott eq. 3.15
with ``Lambda_d = Lambda``); the projector ``1 - J^T Jbar^T`` keeps the
posture torque out of it (Khatib 1987; Handbook eq. 3.63). The
orientation error is the rotation vector of ``Q_d Q^-1`` (the quaternion
logarithm, the shorter way round; no Euler angles).

Inertia shaping (``inertia_shaping=True``, ``inertia=Lambda_d``): with the
measured external wrench ``F_ext`` the spring-damper wrench becomes
``Lambda Lambda_d^-1 (K e + D de + F_ext) - F_ext``, and the closed loop
``Lambda_d e'' + D e' + K e = -F_ext`` (Ott eq. 3.12): the point answers a
push with the inertia ``Lambda_d`` instead of the arm's own ``Lambda(q)``.
Without a measured wrench it cannot be done (the call says so).

Damping (``damping=None``): the double diagonalisation of Albu-Schaeffer
et al. (ICRA 2003; Ott sec. 3.3): with ``Lambda = L L^T`` (Cholesky) and
``L^-1 K L^-T = U diag(w) U^T``, ``D = L U diag(2 zeta sqrt(w)) U^T L^T``.
The linearised closed loop then splits into independent modes
``z'' + 2 zeta sqrt(w_i) z' + w_i z = 0``: damping ratio ``zeta`` (1 by
default) along each generalised eigenvector of ``(K, Lambda(q))``, at the
state of the call. The joint law does the same with ``M(q)``.

Safety in the law itself: ``max_pose_error`` clips the error (not the
torque), so a far target pulls with the force of a near one;
``max_torque_step`` bounds the change of the torque between two calls of
one state (Franka's examples: 1 N m per 1 ms step); ``max_condition``
refuses a pose near a singularity (``cond(J)`` above it) with
:class:`~robot_dynamics.errors.SingularityError`.

Shapes: one state ``q (nq,)`` or a batch ``(B, nq)`` (targets broadcast).
The torque-step limit keeps the last torque of a single-state call; a batch
is stateless. Fixed-base robots only.

A library module (``rd.JointImpedance``, ``rd.CartesianImpedance``): it
imports the algorithms it calls, never the package face; dynamics_node's
impedance modes (:mod:`robot_dynamics.control.impedance_target`) build on it.
"""
import numpy as np

from .. import checks
from ..algorithms.crba import mass_matrix
from ..algorithms.floating import require_fixed
from ..algorithms.kinematics import jacobian, link_pose
from ..algorithms.rnea import gravity_torques, nonlinear_effects
from ..errors import InputError, SingularityError
from ..model.configuration import matrix_quaternion, quaternion_multiply


class JointImpedance:
    """``tau = K (q_d - q) + D (qd_d - qd) + M(q) qdd_d + h(q, qd)``, a spring per joint.

    Args:
        model: a fixed-base :class:`~robot_dynamics.Model`.
        stiffness: (nq,) joint stiffnesses [N m/rad or N/m] or an (nq, nq) SPD matrix.
        damping: (nq,) or (nq, nq) [N m s/rad]; None: damping ratio ``damping_ratio``
            along each generalised eigenvector of ``(K, M(q))`` (module doc).
        damping_ratio: the ratio used when ``damping`` is None.
        include_gravity, include_coriolis: compensate ``g(q)`` and ``C(q, qd) qd``.
        max_error: largest joint error used [rad or m] (per joint; None: no clip).
        max_torque_step: largest change of each torque between two single-state calls [N m]; None: none.
    """

    def __init__(self, model, stiffness, damping=None, *, damping_ratio=1.0, include_gravity=True,
                 include_coriolis=True, max_error=None, max_torque_step=None):
        require_fixed(model, 'JointImpedance')
        self.model = model
        n = model.nv
        self.K = _spd(stiffness, n, 'stiffness')
        self.D = None if damping is None else _spd(damping, n, 'damping', strict=False)
        self.zeta = _positive(damping_ratio, 'damping_ratio')
        self.include_gravity, self.include_coriolis = bool(include_gravity), bool(include_coriolis)
        self.max_error = None if max_error is None else _limits(max_error, n, 'max_error')
        self.step = TorqueStep(max_torque_step, n)

    def damping(self, q):
        """(..., nq, nq) the damping matrix at ``q`` [N m s/rad]."""
        if self.D is not None:
            return self.D
        return modal_damping(mass_matrix(self.model, q), self.K, self.zeta)

    def torque(self, q, qd, q_d, qd_d=None, qdd_d=None):
        """(..., nq) the torques [N m] at the state ``(q, qd)`` towards the target ``q_d`` (with its
        velocity ``qd_d`` and acceleration ``qdd_d``, zero when None); all (..., nq)."""
        model = self.model
        q, qd, q_d = _states(model, q=q, qd=qd, q_d=q_d)
        e = q_d - q
        if self.max_error is not None:
            e = np.clip(e, -self.max_error, self.max_error)
        de = -qd if qd_d is None else checks.as_float_array(qd_d, 'qd_d') - qd
        tau = _matvec(self.K, e) + _matvec(self.damping(q), de)
        if qdd_d is not None:
            tau = tau + _matvec(mass_matrix(model, q), checks.as_float_array(qdd_d, 'qdd_d'))
        tau = tau + _bias(model, q, qd, self.include_gravity, self.include_coriolis)
        return self.step.apply(tau)


class CartesianImpedance:
    """A spring and damper between a point of a link and a target pose (the module doc has the law).

    Args:
        model: a fixed-base :class:`~robot_dynamics.Model` with at least 6 joints that move the link.
        link: the link carrying the point; point: (3,) the point in the link frame [m].
        stiffness: (6,) ``[kx ky kz krx kry krz]`` [N/m, N m/rad] in the base frame, or a (6, 6) SPD matrix.
        damping: (6,) or (6, 6) [N s/m, N m s/rad]; None: ratio ``damping_ratio`` per mode of
            ``(K, Lambda(q))`` (module doc).
        nullspace_stiffness: ``K_0`` [N m/rad] (scalar or (nq,)) of the posture torque towards
            ``q_nullspace`` (default: the first state the law is called with), damped with
            ``2 sqrt(K_0)`` [N m s/rad] (unit joint inertia) unless ``nullspace_damping`` is given.
        include_gravity, include_coriolis: compensate ``g(q)`` and ``C(q, qd) qd`` (and the task-space
            bias ``Lambda Jdot qd`` with the latter).
        inertia_shaping, inertia: give the point the apparent inertia ``inertia`` (Lambda_d: (6,) or
            6x6 SPD [kg, kg m^2]) instead of Lambda(q); needs the measured external wrench
            (:meth:`torque`'s ``wrench``) and ``include_coriolis`` (module doc).
        max_pose_error: (largest translation [m], largest rotation [rad]) of the error used; None: no clip.
        max_torque_step: largest change of each torque between two single-state calls [N m]; None: none.
        max_condition: largest ``cond(J)``; above it :meth:`torque` raises SingularityError.
    """

    def __init__(self, model, link, stiffness, damping=None, *, point=(0.0, 0.0, 0.0), damping_ratio=1.0,
                 nullspace_stiffness=0.0, nullspace_damping=None, q_nullspace=None, include_gravity=True,
                 include_coriolis=True, inertia_shaping=False, inertia=None, max_pose_error=None,
                 max_torque_step=None, max_condition=1e3):
        require_fixed(model, 'CartesianImpedance')
        if link not in model.link_names:
            raise InputError('unknown link %r: expected one of %s' % (link, ', '.join(model.link_names)))
        if model.nv < 6:
            raise InputError('Cartesian impedance of all 6 directions needs at least 6 joints; %r has %d'
                             % (model.name, model.nv))
        self.model, self.link = model, link
        self.point = checks.as_float_array(point, 'point').reshape(3)
        self.K = _spd(stiffness, 6, 'stiffness')
        self.D = None if damping is None else _spd(damping, 6, 'damping', strict=False)
        self.zeta = _positive(damping_ratio, 'damping_ratio')
        self.K0 = _nonnegative_vector(nullspace_stiffness, model.nv, 'nullspace_stiffness')
        self.D0 = (2.0 * np.sqrt(self.K0) if nullspace_damping is None
                   else _nonnegative_vector(nullspace_damping, model.nv, 'nullspace_damping'))
        self.q_nullspace = None if q_nullspace is None else _states(model, q_nullspace=q_nullspace)[0]
        self.include_gravity, self.include_coriolis = bool(include_gravity), bool(include_coriolis)
        self.inertia = None
        if inertia_shaping:
            if inertia is None:
                raise InputError('inertia_shaping needs the desired inertia: inertia=(6,) [kg x3, kg m^2 x3] or a '
                                 '6x6 SPD matrix')
            self.inertia = _spd(inertia, 6, 'inertia')
        elif inertia is not None:
            raise InputError('inertia is the desired inertia of inertia_shaping=True; got it without')
        self.max_pose_error = None if max_pose_error is None else _limits(max_pose_error, 2, 'max_pose_error')
        self.max_condition = _positive(max_condition, 'max_condition')
        self.step = TorqueStep(max_torque_step, model.nv)

    def pose(self, q):
        """(position (..., 3) [m], quaternion (..., 4) xyzw) of the point in the base frame."""
        T = link_pose(self.model, q, self.link)
        return T[..., :3, :3] @ self.point + T[..., :3, 3], matrix_quaternion(T[..., :3, :3])

    def torque(self, q, qd, position, quaternion, twist=None, acceleration=None, wrench=None):
        """(..., nq) torques [N m] towards the target pose.

        Args:
            q, qd: (..., nq) the state.
            position: (..., 3) target position of the point [m]; quaternion: (..., 4) its unit
                orientation (x, y, z, w); both in the base frame.
            twist: (..., 6) target ``[v; w]`` [m/s, rad/s]; acceleration: (..., 6) [m/s^2, rad/s^2];
                zero when None.
            wrench: (..., 6) the measured external wrench ``[f; n]`` [N, N m] acting on the arm at the
                point, base frame (a force-torque sensor's, turned into the base frame); needed by
                inertia shaping, unused otherwise.

        Raises:
            SingularityError: ``cond(J)`` above ``max_condition`` (the reason names it and the state).
            InputError: shapes, non-finite values, a quaternion off unit norm by more than 1e-6.
        """
        model = self.model
        q, qd = _states(model, q=q, qd=qd)
        if self.q_nullspace is None:
            self.q_nullspace = np.array(q.reshape(-1, model.nq)[0])
        J = jacobian(model, q, self.link, self.point)
        cond = np.linalg.cond(J)
        if np.any(cond > self.max_condition):
            raise SingularityError('Cartesian impedance refused near a singularity of %s: cond(J) = %.3g, more '
                                   'than max_condition %.3g' % (self.link, np.max(cond), self.max_condition))
        Jt = np.swapaxes(J, -1, -2)
        Minv_Jt = np.linalg.solve(mass_matrix(model, q), Jt)
        Lambda = np.linalg.inv(J @ Minv_Jt)                         # (J M^-1 J^T)^-1
        e, de = self.errors(q, qd, J, position, quaternion, twist)
        shaped = self.inertia if self.inertia is not None else Lambda
        D = self.D if self.D is not None else modal_damping(shaped, self.K, self.zeta)
        F = _matvec(self.K, e) + _matvec(D, de)
        if self.inertia is not None:
            F = self._shaped(F, Lambda, wrench)
        a_d = 0.0 if acceleration is None else _vector(acceleration, 6, 'acceleration')
        if self.include_coriolis:
            a_d = a_d - jdot_qd_by_difference(model, q, qd, self.link, self.point)
        if self.include_coriolis or acceleration is not None:
            F = F + _matvec(Lambda, a_d)
        tau0 = self.K0 * (self.q_nullspace - q) - self.D0 * qd
        Jbar_t = np.swapaxes(Minv_Jt @ Lambda, -1, -2)              # Jbar^T = Lambda J M^-1
        tau0 = tau0 - _matvec(Jt, _matvec(Jbar_t, tau0))            # (1 - J^T Jbar^T) tau_0
        tau = _matvec(Jt, F) + tau0 + _bias(model, q, qd, self.include_gravity, self.include_coriolis)
        return self.step.apply(tau)

    def _shaped(self, F, Lambda, wrench):
        """``Lambda Lambda_d^-1 (K e + D de + F_ext) - F_ext`` (Ott eq. 3.12): the spring and damper
        wrench ``F`` of the apparent inertia Lambda_d."""
        if wrench is None:
            raise InputError('inertia shaping needs the measured external wrench (wrench=(6,) [N, N m], base '
                             'frame): the apparent inertia is set by feeding it back')
        if not self.include_coriolis:
            raise InputError('inertia shaping needs include_coriolis=True (the task-space bias is cancelled)')
        w = _vector(wrench, 6, 'wrench')
        return _matvec(Lambda, np.linalg.solve(self.inertia, (F + w)[..., None])[..., 0]) - w

    def errors(self, q, qd, J, position, quaternion, twist=None):
        """(e, de): the clipped pose error (..., 6) and the twist error (..., 6) of the module doc."""
        p, Q = self.pose(q)
        Q_d = unit_quaternion(quaternion)
        e = np.concatenate([_vector(position, 3, 'position') - p,
                            quaternion_log(quaternion_multiply(Q_d, quaternion_conjugate(Q)))], axis=-1)
        if self.max_pose_error is not None:
            e = np.concatenate([_clip_norm(e[..., :3], self.max_pose_error[0]),
                                _clip_norm(e[..., 3:], self.max_pose_error[1])], axis=-1)
        v = _matvec(J, qd)
        de = -v if twist is None else _vector(twist, 6, 'twist') - v
        return e, de


def jdot_qd_by_difference(model, q, qd, link, point, displacement=1e-5):
    """(..., 6) ``Jdot qd`` of the point, base frame, by the central difference of ``J`` along the
    motion: ``(J(q + h qd) - J(q - h qd)) qd / 2h`` with ``h |qd|_max = displacement`` [rad or m]
    (``Jdot = sum_k dJ/dq_k qd_k`` is the directional derivative of J along qd). Two compiled Jacobians:
    50 us where the exact :func:`robot_dynamics.jacobian_derivative_times_qd` takes 250 us on the
    Panda; they agree to 1e-8 relative (test_impedance.py). Zero for ``qd = 0``. Named apart from that
    exact function (analysis/operational.py), which it approximates."""
    speed = np.max(np.abs(qd), axis=-1, keepdims=True)
    h = displacement / np.where(speed > 0.0, speed, 1.0)
    dJ = jacobian(model, q + h * qd, link, point) - jacobian(model, q - h * qd, link, point)
    return _matvec(dJ, qd) / (2.0 * h)


class TorqueStep:
    """The largest change of each torque between two single-state calls [N m per call] (None: no limit).

    The one torque-rate limiter of the package: the laws' ``max_torque_step`` and dynamics_node's
    ``max_torque_rate`` [N m/s], which :class:`robot_dynamics.control.impedance_target.TorqueRate`
    turns into this call's step (rate times the time since the last torque).

    Attributes:
        max_step: (n,) [N m] or None; last: the last torque (n,) or None; limited: the number of
            calls whose torque was limited.
    """

    def __init__(self, max_step, n):
        self.max_step = None if max_step is None else _limits(max_step, n, 'max_torque_step')
        self.last = None
        self.limited = 0

    def reset(self):
        """Forget the last torque (the next call is not limited)."""
        self.last = None

    def apply(self, tau, max_step=None):
        """``tau`` (n,) within ``max_step`` [N m] (scalar or (n,); None: the constructor's) of the last
        torque; a batch (B, n) is returned as it is. A non-finite torque is not limited and never
        becomes the last."""
        if tau.ndim != 1:
            return tau
        step = self.max_step if max_step is None else max_step
        if step is not None and self.last is not None:
            limited = np.clip(tau, self.last - step, self.last + step)
            self.limited += not np.array_equal(limited, tau)
            tau = limited
        if np.all(np.isfinite(tau)):
            self.last = tau.copy()
        return tau


def modal_damping(inertia, K, zeta):
    """(..., m, m) ``D = L U diag(2 zeta sqrt(w)) U^T L^T`` with ``inertia = L L^T`` and
    ``L^-1 K L^-T = U diag(w) U^T``: damping ratio ``zeta`` in each mode of ``(K, inertia)``
    (Albu-Schaeffer et al., ICRA 2003)."""
    L = np.linalg.cholesky(inertia)
    Linv = np.linalg.inv(L)
    w, U = np.linalg.eigh(Linv @ K @ np.swapaxes(Linv, -1, -2))
    LU = L @ U
    return (LU * (2.0 * zeta * np.sqrt(np.maximum(w, 0.0)))[..., None, :]) @ np.swapaxes(LU, -1, -2)


# --- unit quaternions (x, y, z, w); the product and the matrix conversion are model/configuration.py's ---
def quaternion_conjugate(a):
    return np.concatenate([-a[..., :3], a[..., 3:]], axis=-1)


def quaternion_log(a):
    """(..., 3) the rotation vector [rad] of the unit quaternions ``a`` (..., 4), the shorter way
    round (``w >= 0``): ``2 atan2(|v|, w) v / |v|``."""
    a = np.where(a[..., 3:] < 0.0, -a, a)
    v, w = a[..., :3], a[..., 3]
    s = np.linalg.norm(v, axis=-1)
    angle = 2.0 * np.arctan2(s, w)
    scale = np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0 / np.maximum(w, 1e-300))
    return v * scale[..., None]


def unit_quaternion(x, tol=1e-6):
    """``x`` (..., 4) as a float array, checked finite and of unit norm within ``tol``."""
    x = _vector(x, 4, 'quaternion')
    norm = np.linalg.norm(x, axis=-1)
    if np.any(np.abs(norm - 1.0) > tol):
        raise InputError('quaternion (x, y, z, w) must have unit norm (within %g), got norm %s'
                         % (tol, np.array2string(np.asarray(norm), precision=6)))
    return x


# --- helpers ---------------------------------------------------------------------------------
def _bias(model, q, qd, gravity, coriolis):
    """(..., nq) the compensated part of ``h = C qd + g`` [N m]."""
    if gravity and coriolis:
        return nonlinear_effects(model, q, qd)
    if gravity:
        return gravity_torques(model, q)
    if coriolis:
        return nonlinear_effects(model, q, qd) - gravity_torques(model, q)
    return 0.0


def _matvec(A, x):
    return np.einsum('...ij,...j->...i', A, x)


def _clip_norm(x, limit):
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x * np.minimum(1.0, limit / np.maximum(n, 1e-300))


def _states(model, **states):
    out = []
    for name, x in states.items():
        x = checks.as_float_array(x, name)
        if x.shape[-1:] != (model.nq,):
            raise InputError('%s must have %d values (one per joint of %r), got shape %s'
                             % (name, model.nq, model.name, x.shape))
        checks.check_finite(**{name: x})
        out.append(x)
    return out


def _vector(x, n, name):
    x = checks.as_float_array(x, name)
    if x.shape[-1:] != (n,):
        raise InputError('%s must have %d values, got shape %s' % (name, n, x.shape))
    checks.check_finite(**{name: x})
    return x


def _spd(x, n, name, strict=True):
    """(n, n) from a (n,) diagonal or an (n, n) matrix, checked symmetric and positive (semi)definite."""
    x = checks.as_float_array(x, name)
    if x.shape == (n,):
        x = np.diag(x)
    if x.shape != (n, n):
        raise InputError('%s must be %d values (a diagonal) or a %dx%d matrix, got shape %s' % (name, n, n, n, x.shape))
    checks.check_finite(**{name: x})
    if not np.allclose(x, x.T, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(x).max())):
        raise InputError('%s must be symmetric' % name)
    w = np.linalg.eigvalsh(x)
    if (w.min() <= 0.0) if strict else (w.min() < -1e-12 * max(1.0, w.max())):
        raise InputError('%s must be positive %sdefinite, got eigenvalues %s'
                         % (name, '' if strict else 'semi', np.array2string(w, precision=4)))
    return x


def _positive(x, name):
    if not (isinstance(x, (int, float, np.floating, np.integer)) and np.isfinite(x) and x > 0):
        raise InputError('%s must be a positive number, got %r' % (name, x))
    return float(x)


def _nonnegative_vector(x, n, name):
    x = np.broadcast_to(checks.as_float_array(x, name), (n,)).copy() if np.ndim(x) == 0 else _vector(x, n, name)
    if not (np.all(np.isfinite(x)) and np.all(x >= 0)):
        raise InputError('%s must be finite and >= 0, got %s' % (name, x))
    return x


def _limits(x, n, name):
    x = np.broadcast_to(checks.as_float_array(x, name), (n,)).copy() if np.ndim(x) == 0 else _vector(x, n, name)
    if not np.all(x > 0):
        raise InputError('%s must be > 0, got %s' % (name, x))
    return x
