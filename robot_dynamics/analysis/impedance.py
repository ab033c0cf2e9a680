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
``max_torque_rate`` [N m/s] bounds the change of the torque between two
single-state calls to the rate times ``dt``, the call's time since the last
torque [s] (``period`` when the call does not give it; Franka's examples:
1000 N m/s, 1 N m per 1 ms step); ``max_condition``
refuses a pose near a singularity (``cond(J)`` above it) with
:class:`~robot_dynamics.errors.SingularityError`.

Shapes: one state ``q (nq,)`` or a batch ``(B, nq)`` (targets broadcast).
The torque-rate limit keeps the last torque of a single-state call; a batch
is stateless. Fixed-base robots only.

The same names and units as dynamics_node's parameters: ``max_pose_error`` and
``max_torque_rate`` [N m/s]. The former names ``max_error`` (now
``max_pose_error``) and ``max_torque_step`` [N m per call] (now
``max_torque_rate = max_torque_step / period``) still work for one release
with a DeprecationWarning naming the new one.

A library module (``rd.JointImpedance``, ``rd.CartesianImpedance``): it
imports the algorithms it calls, never the package face; dynamics_node's
impedance modes (:mod:`robot_dynamics.control.impedance_target`) build on it.
"""
import warnings

import numpy as np

from .. import checks
from ..algorithms import impedance_kernels as kernels
from ..algorithms.crba import mass_matrix
from ..algorithms.floating import require_fixed
from ..algorithms.task_space import jacobian, link_pose
from ..errors import InputError, SingularityError
from ..model.configuration import matrix_quaternion, quaternion_multiply
from ..model.data import Data
from . import impedance_inputs as inputs
from .torque_rate import TorqueRateLimit, renamed


class JointImpedance:
    """``tau = K (q_d - q) + D (qd_d - qd) + M(q) qdd_d + h(q, qd)``, a spring per joint.

    Args:
        model: a fixed-base :class:`~robot_dynamics.Model`.
        stiffness: one stiffness for every joint, (nq,) joint stiffnesses [N m/rad or N/m] or an
            (nq, nq) SPD matrix.
        damping: as stiffness [N m s/rad or N s/m]; None: damping ratio ``damping_ratio``
            along each generalised eigenvector of ``(K, M(q))`` (module doc).
        damping_ratio: the ratio used when ``damping`` is None.
        include_gravity, include_coriolis: compensate ``g(q)`` and ``C(q, qd) qd``.
        max_pose_error: largest joint error used [rad or m] (scalar or per joint (nq,); None: no clip).
        max_torque_rate: largest change rate of each torque between two single-state calls [N m/s]
            (scalar or (nq,)), times the call's ``dt`` (``period`` when not given); None: none.
        period: the time between two calls [s] when :meth:`torque` is not given ``dt``.
        max_error, max_torque_step: the former names (deprecated): ``max_pose_error`` and
            ``max_torque_rate = max_torque_step / period`` [N m per call].
    """

    def __init__(self, model, stiffness, damping=None, *, damping_ratio=1.0, include_gravity=True,
                 include_coriolis=True, max_pose_error=None, max_torque_rate=None, period=1e-3, max_error=None,
                 max_torque_step=None):
        require_fixed(model, 'JointImpedance')
        self.model = model
        n = model.nv
        max_pose_error = renamed('JointImpedance', 'max_error', max_error, 'max_pose_error', max_pose_error)
        self.K = inputs.spd(stiffness, n, 'stiffness', scalar=True)
        self.D = None if damping is None else inputs.spd(damping, n, 'damping', strict=False, scalar=True)
        self.zeta = inputs.positive(damping_ratio, 'damping_ratio')
        self.include_gravity, self.include_coriolis = bool(include_gravity), bool(include_coriolis)
        self.max_pose_error = None if max_pose_error is None else inputs.limits(max_pose_error, n, 'max_pose_error')
        self.step = TorqueRateLimit.of_law('JointImpedance', max_torque_rate, max_torque_step, period, n)
        self._data, self._x, self._scratch = Data(model), np.zeros((5, n)), kernels.joint_scratch(n)
        self._gains = np.zeros((2 * n + 3, n))            # K, D, max_pose_error, sqrt(diag K), 1 / sqrt(diag K)
        self._gains[:n] = self.K
        if self.D is not None:
            self._gains[n:2 * n] = self.D
        if self.max_pose_error is not None:
            self._gains[2 * n] = self.max_pose_error
        diagonal = not np.any(self.K - np.diag(np.diag(self.K)))      # modal damping without M's factor
        self._gains[2 * n + 1] = np.sqrt(np.diag(self.K))
        self._gains[2 * n + 2] = 1.0 / self._gains[2 * n + 1]
        self._flags = ((kernels.GRAVITY if self.include_gravity else 0) | (kernels.CORIOLIS if self.include_coriolis
                       else 0) | (kernels.CLIP if self.max_pose_error is not None else 0)
                       | (kernels.DAMPING if self.D is not None else 0) | (kernels.DIAGONAL if diagonal else 0))

    def damping(self, q):
        """(..., nq, nq) the damping matrix at ``q`` [N m s/rad]."""
        if self.D is not None:
            return self.D
        return modal_damping(mass_matrix(self.model, q), self.K, self.zeta)

    @property
    def max_error(self):
        """The former name of :attr:`max_pose_error` (deprecated)."""
        warnings.warn('JointImpedance.max_error is now max_pose_error', DeprecationWarning, stacklevel=2)
        return self.max_pose_error

    def torque(self, q, qd, q_d, qd_d=None, qdd_d=None, *, dt=None, out=None):
        """(..., nq) the torques [N m] at the state ``(q, qd)`` towards the target ``q_d`` (with its
        velocity ``qd_d`` and acceleration ``qdd_d``, zero when None); all (..., nq). ``dt``: the time
        since the last torque [s] for ``max_torque_rate`` (None: ``period``). ``out``: a float64 array
        of the result's shape to write the torques into (returned), or None: a new array.

        One compiled kernel a state (:func:`robot_dynamics.algorithms.impedance_kernels.joint_law`) on
        the law's own work buffers: a state of C-contiguous float64 arrays of shape (nq,) goes to the
        kernel as it is (the kernel's signature and length check are its checks) and allocates
        nothing with ``out`` (else the result); anything else is checked and copied into the law's
        buffer."""
        n = self.model.nq
        if qd_d is None and qdd_d is None:
            tau = np.empty(n) if out is None else out
            try:
                status = kernels.joint_law(self._data.table, q, qd, q_d, self._x, self._flags, self._gains,
                                           self.zeta, self._data.work, self._scratch, tau)
            except TypeError:                             # lists, batches, other dtypes or strides: below
                status = 1
            if status == 0:
                return into(out, self.step.apply_finite(tau, dt))
            if status != 1:
                self._failed(q, qd, q_d, None, None)
        q, qd, q_d = inputs.states(self.model, q=q, qd=qd, q_d=q_d)
        qd_d = None if qd_d is None else inputs.states(self.model, qd_d=qd_d)[0]
        qdd_d = None if qdd_d is None else inputs.states(self.model, qdd_d=qdd_d)[0]
        shape, rows = inputs.broadcast(q, qd, q_d, qd_d, qdd_d)
        if shape == ():
            return into(out, self.step.apply(self._one(*(None if r is None else r[0] for r in rows)), dt))
        tau = np.stack([self._one(*(None if r is None else r[b] for r in rows)) for b in range(len(rows[0]))])
        return into(out, tau.reshape(shape + (n,)))

    def _one(self, q, qd, q_d, qd_d, qdd_d):
        """(n,) the torque of one state (arrays of shape (n,)) from the compiled kernel."""
        x = self._x
        x[0], x[1], x[2] = q, qd, q_d
        flags = self._flags
        if qd_d is not None:
            x[3] = qd_d
            flags |= kernels.TWIST
        if qdd_d is not None:
            x[4] = qdd_d
            flags |= kernels.ACCELERATION
        tau = np.empty(self.model.nq)
        status = kernels.joint_law(self._data.table, x[0], x[1], x[2], x, flags, self._gains, self.zeta,
                                   self._data.work, self._scratch, tau)
        if status != 0:
            self._failed(q, qd, q_d, qd_d, qdd_d)
        return tau

    def _failed(self, q, qd, q_d, qd_d, qdd_d):
        """Raise InputError for a kernel's refusal: the state's checks say what is wrong with it."""
        inputs.states(self.model, q=q, qd=qd, q_d=q_d, **({} if qd_d is None else {'qd_d': qd_d}),
                      **({} if qdd_d is None else {'qdd_d': qdd_d}))
        raise InputError('the joint impedance torque is not finite although the state is: values too '
                         'large for float64')


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
        max_torque_rate: largest change rate of each torque between two single-state calls [N m/s]
            (scalar or (nq,)), times the call's ``dt`` (``period`` when not given); None: none.
        period: the time between two calls [s] when :meth:`torque` is not given ``dt``.
        max_condition: largest ``cond(J)``; above it :meth:`torque` raises SingularityError.
        max_torque_step: the former limit [N m per call] (deprecated): ``max_torque_rate = max_torque_step
            / period``.
    """

    def __init__(self, model, link, stiffness, damping=None, *, point=(0.0, 0.0, 0.0), damping_ratio=1.0,
                 nullspace_stiffness=0.0, nullspace_damping=None, q_nullspace=None, include_gravity=True,
                 include_coriolis=True, inertia_shaping=False, inertia=None, max_pose_error=None,
                 max_torque_rate=None, period=1e-3, max_condition=1e3, max_torque_step=None):
        require_fixed(model, 'CartesianImpedance')
        if link not in model.link_names:
            raise InputError('unknown link %r: expected one of %s' % (link, ', '.join(model.link_names)))
        if model.nv < 6:
            raise InputError('Cartesian impedance of all 6 directions needs at least 6 joints; %r has %d'
                             % (model.name, model.nv))
        if model.link_body[model.link_index(link)] < 0:
            moved = [name for name, body in zip(model.link_names, model.link_body) if body >= 0]
            raise InputError('link %r is fixed to the base: no joint moves it (its Jacobian is zero); expected a '
                             'link of the arm, e.g. %r' % (link, moved[-1]))
        self.model, self.link = model, link
        self.point = checks.as_float_array(point, 'point').reshape(3)
        self.K = inputs.spd(stiffness, 6, 'stiffness')
        self.D = None if damping is None else inputs.spd(damping, 6, 'damping', strict=False)
        self.zeta = inputs.positive(damping_ratio, 'damping_ratio')
        self.K0 = inputs.nonnegative_vector(nullspace_stiffness, model.nv, 'nullspace_stiffness')
        self.D0 = (2.0 * np.sqrt(self.K0) if nullspace_damping is None
                   else inputs.nonnegative_vector(nullspace_damping, model.nv, 'nullspace_damping'))
        self.q_nullspace = None if q_nullspace is None else inputs.states(model, q_nullspace=q_nullspace)[0]
        self.include_gravity, self.include_coriolis = bool(include_gravity), bool(include_coriolis)
        self.inertia = None
        if inertia_shaping:
            if inertia is None:
                raise InputError('inertia_shaping needs the desired inertia: inertia=(6,) [kg x3, kg m^2 x3] or a '
                                 '6x6 SPD matrix')
            self.inertia = inputs.spd(inertia, 6, 'inertia')
        elif inertia is not None:
            raise InputError('inertia is the desired inertia of inertia_shaping=True; got it without')
        self.max_pose_error = None if max_pose_error is None else inputs.limits(max_pose_error, 2, 'max_pose_error')
        self.max_condition = inputs.positive(max_condition, 'max_condition')
        self.step = TorqueRateLimit.of_law('CartesianImpedance', max_torque_rate, max_torque_step, period, model.nv)
        self._kernel_arguments()

    def _kernel_arguments(self):
        """The compiled law's constant arguments and work buffers (writable C float64 copies)."""
        model, n = self.model, self.model.nv
        l = model.link_index(self.link)
        self._body, self._P = int(model.link_body[l]), np.array(model.link_pose_rows[l])
        self.point = np.array(self.point, dtype=float)
        damping = self.D
        if damping is None and self.inertia is not None:       # the shaped inertia is constant: so is D
            damping = modal_damping(self.inertia, self.K, self.zeta)
        self._gains = np.zeros((18, 6))                         # K, D, Lambda_d^-1
        self._gains[0:6] = self.K
        if damping is not None:
            self._gains[6:12] = damping
        if self.inertia is not None:
            self._gains[12:18] = np.linalg.inv(self.inertia)
        clip = self.max_pose_error is not None
        self._scalars = np.array([self.zeta, self.max_condition] + (list(self.max_pose_error) if clip else [0, 0])
                                 + [0.0])
        self._flags = ((kernels.GRAVITY if self.include_gravity else 0)
                       | (kernels.CORIOLIS if self.include_coriolis else 0)
                       | (kernels.SHAPING if self.inertia is not None else 0) | (kernels.CLIP if clip else 0)
                       | (kernels.DAMPING if damping is not None else 0))
        self._data, self._x = Data(model), np.zeros((5, n))       # q, qd, q_0, K_0, D_0
        self._target, self._scratch = np.zeros(kernels.TARGET_SIZE), kernels.cartesian_scratch(n)
        self._still = np.zeros(kernels.TARGET_SIZE - 7)           # no target twist, acceleration, wrench

    def pose(self, q):
        """(position (..., 3) [m], quaternion (..., 4) xyzw) of the point in the base frame."""
        T = link_pose(self.model, q, self.link)
        return T[..., :3, :3] @ self.point + T[..., :3, 3], matrix_quaternion(T[..., :3, :3])

    def torque(self, q, qd, position, quaternion, twist=None, acceleration=None, wrench=None, *, dt=None,
               out=None):
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
            dt: the time since the last torque [s] for ``max_torque_rate`` (None: ``period``).
            out: a float64 array of the result's shape to write the torques into (returned), or None:
                a new array.

        One compiled kernel a state (:func:`robot_dynamics.algorithms.impedance_kernels.cartesian_law`)
        on the law's own work buffers: a single state without twist, acceleration or wrench whose
        vectors (and ``q_nullspace``, ``K0``, ``D0``) are C-contiguous float64 arrays goes to the
        kernel as it is (the kernel's signature and length check are its checks) and allocates nothing
        with ``out``; anything else is checked and copied into the law's buffers.

        Raises:
            SingularityError: ``cond(J)`` above ``max_condition`` (the reason names it and the state).
            InputError: shapes, non-finite values, a quaternion off unit norm by more than 1e-6.
        """
        if twist is None and acceleration is None and wrench is None and self.inertia is None:
            tau = np.empty(self.model.nq) if out is None else out
            try:                    # the first call (no posture yet), lists, batches, other dtypes: below
                status = kernels.cartesian_law(self._data.table, q, qd, self.q_nullspace, self.K0, self.D0,
                                               self._body, self._P, self.point, position, quaternion, self._still,
                                               self._flags, self._gains, self._scalars, self._data.work,
                                               self._scratch, tau)
            except TypeError:
                status = 1
            if status == 0:
                return into(out, self.step.apply_finite(tau, dt))
            if status > 2:
                self._refused(status)
        return into(out, self._checked(q, qd, position, quaternion, twist, acceleration, wrench, dt))

    def _checked(self, q, qd, position, quaternion, twist, acceleration, wrench, dt):
        """The torque of any call: checked, broadcast, one state at a time through the kernel."""
        model = self.model
        q, qd = inputs.states(model, q=q, qd=qd)
        if self.q_nullspace is None:
            self.q_nullspace = np.array(q.reshape(-1, model.nq)[0])
        parts = [inputs.vector(position, 3, 'position'), unit_quaternion(quaternion)]
        flags = self._flags
        for x, name, n, flag in ((twist, 'twist', 6, kernels.TWIST), (acceleration, 'acceleration', 6,
                                                                            kernels.ACCELERATION),
                                 (wrench, 'wrench', 6, 0)):
            if x is not None:
                flags |= flag
                parts.append(inputs.vector(x, n, name))
            else:
                parts.append(np.zeros(n))
        if self.inertia is not None:
            self._shaping_checks(wrench)
        shape, rows = inputs.broadcast(q, qd, *parts)
        taus, conds = [], []
        for b in range(len(rows[0])):
            self._target[:] = np.concatenate([r[b] for r in rows[2:]])
            taus.append(self._one(rows[0][b], rows[1][b], flags, rows[2][b], rows[3][b]))
            conds.append(self._scalars[4])
        if max(conds) > self.max_condition:
            self._refuse(max(conds))
        tau = np.stack(taus).reshape(shape + (model.nq,))
        return self.step.apply(tau, dt)

    def _one(self, q, qd, flags, position, quaternion):
        """(n,) the torque of one state from the compiled kernel, the target in ``self._target`` (NaN when
        cond(J) is over max_condition: the caller refuses it, ``self._scalars[4]`` holds it)."""
        x, t = self._x, self._target
        x[0], x[1], x[2], x[3], x[4] = q, qd, self.q_nullspace, self.K0, self.D0
        tau = np.empty(self.model.nq)
        status = kernels.cartesian_law(self._data.table, x[0], x[1], x[2], x[3], x[4], self._body, self._P,
                                       self.point, t[0:3], t[3:7], t[7:], flags, self._gains, self._scalars,
                                       self._data.work, self._scratch, tau)
        if status == 4:
            tau[:] = np.nan
        elif status > 2:
            self._refused(status)
        elif status != 0:
            inputs.states(self.model, q=q, qd=qd)
            inputs.vector(position, 3, 'position'), unit_quaternion(quaternion)
            inputs.vector(self._target, kernels.TARGET_SIZE, 'target')
            raise InputError('the Cartesian impedance torque is not finite although the state is: values too '
                             'large for float64')
        return tau

    def _refused(self, status):
        """Raise SingularityError for the kernel's status 4 (cond(J) over max_condition) or 3."""
        if status == 4:
            self._refuse(self._scalars[4])
        raise SingularityError('Cartesian impedance refused: J M^-1 J^T of %s is not positive definite at this '
                               'state (a singular pose)' % self.link)

    def _refuse(self, cond):
        raise SingularityError('Cartesian impedance refused near a singularity of %s: cond(J) = %.3g, more '
                               'than max_condition %.3g' % (self.link, cond, self.max_condition))

    def _shaping_checks(self, wrench):
        if wrench is None:
            raise InputError('inertia shaping needs the measured external wrench (wrench=(6,) [N, N m], base '
                             'frame): the apparent inertia is set by feeding it back')
        if not self.include_coriolis:
            raise InputError('inertia shaping needs include_coriolis=True (the task-space bias is cancelled)')

    def errors(self, q, qd, J, position, quaternion, twist=None):
        """(e, de): the clipped pose error (..., 6) and the twist error (..., 6) of the module doc."""
        p, Q = self.pose(q)
        Q_d = unit_quaternion(quaternion)
        e = np.concatenate([inputs.vector(position, 3, 'position') - p,
                            quaternion_log(quaternion_multiply(Q_d, quaternion_conjugate(Q)))], axis=-1)
        if self.max_pose_error is not None:
            e = np.concatenate([_clip_norm(e[..., :3], self.max_pose_error[0]),
                                _clip_norm(e[..., 3:], self.max_pose_error[1])], axis=-1)
        v = _matvec(J, qd)
        de = -v if twist is None else inputs.vector(twist, 6, 'twist') - v
        return e, de


def jdot_qd_by_difference(model, q, qd, link, point, displacement=1e-5):
    """(..., 6) ``Jdot qd`` of the point, base frame, by the central difference of ``J`` along the
    motion: ``(J(q + h qd) - J(q - h qd)) qd / 2h`` with ``h |qd|_max = displacement`` [rad or m]
    (``Jdot = sum_k dJ/dq_k qd_k`` is the directional derivative of J along qd); they agree to 1e-8
    relative (test_impedance.py). Zero for ``qd = 0``. The laws took it until the exact recursion was
    compiled (:func:`robot_dynamics.jacobian_derivative_times_qd`; their kernels run it now); kept as
    a check of that recursion, named apart from it."""
    speed = np.max(np.abs(qd), axis=-1, keepdims=True)
    h = displacement / np.where(speed > 0.0, speed, 1.0)
    dJ = jacobian(model, q + h * qd, link, point) - jacobian(model, q - h * qd, link, point)
    return _matvec(dJ, qd) / (2.0 * h)


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
    """The conjugate (..., 4) of unit quaternions a (..., 4) in (x, y, z, w) order: the inverse rotation."""
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
    x = inputs.vector(x, 4, 'quaternion')
    norm = np.linalg.norm(x, axis=-1)
    if np.any(np.abs(norm - 1.0) > tol):
        raise InputError('quaternion (x, y, z, w) must have unit norm (within %g), got norm %s'
                         % (tol, np.array2string(np.asarray(norm), precision=6)))
    return x


# --- helpers ---------------------------------------------------------------------------------
def into(out, tau):
    """``tau``, or ``out`` (None: none) holding it: the laws' ``out=``."""
    if out is None or out is tau:
        return tau
    out[...] = tau
    return out


def _matvec(A, x):
    return np.einsum('...ij,...j->...i', A, x)


def _clip_norm(x, limit):
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x * np.minimum(1.0, limit / np.maximum(n, 1e-300))
