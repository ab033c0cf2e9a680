"""The contact dynamics in the simulator: free bodies stepped with the arm, contact
wrenches on both, impacts and the friction anchors between steps.

:class:`ContactStepper` is two plug-ins of :class:`robot_dynamics.Simulator`
at once (``rd.Simulator(model, contact=stepper)`` installs both):

- a force model (the simulator's ``ForceModel`` protocol): at each
  integrator stage, ``link_wrenches(model, t, q, qd)`` moves the contacts
  found at the step's start with their two bodies (each surface's centre
  of curvature: the depth along the normal held over the step, the point
  where the surfaces' curvatures put it, :mod:`.dynamics`' "Where the
  force acts"), applies the law of :mod:`.dynamics` and returns the arm's
  share as ``f_ext`` (each contact wrench on its body's link, link frame:
  ``J^T f`` through :func:`robot_dynamics.aba`); the joint limits, friction
  and the actuator act as without contact;
- an integrator wrapper (:meth:`ContactStepper.integrator`): the arm's
  integrator advances ``(q, chart of the free bodies)`` together, every
  stage seeing both (:mod:`.free_bodies`: the chart and the Newton-Euler
  equations); after the step it commits the free bodies, detects the
  contacts (one detection a step, whatever the integrator), applies the
  impact law to those that appeared, and updates each contact's friction
  anchor (:func:`.contact_kernels.remember`).

The arm's state stays the simulator's ``(q, qd)``; the free bodies' state
is :attr:`ContactStepper.bodies` (a :class:`.free_bodies.FreeBodies`).
A detector is any object with ``detect(Rw, pw, Rf, pf, contacts)`` that
fills a :class:`~.contacts.Contacts` (:class:`.analytic.PlaneDetector`), or
the narrow phase's :class:`.detect.Detector` (``detect(body_poses,
free_poses)``, wrapped in a :class:`PoseDetector`).
"""
import numpy as np

from ..algorithms import contact_kernels as K
from ..algorithms.crba import mass_matrix
from ..algorithms.task_space import jacobian
from ..errors import InputError
from .contacts import Contacts
from .dynamics import ContactParameters
from .free_bodies import FreeBodies, chart_accelerations, chart_state, orthonormalize
from .springs import contact_springs


class ContactStepper:
    """Contacts between a fixed-base arm, free bodies and the static world.

    Example (a doctest, run from the repository root by test/test_docs.py): a
    ball dropped from 0.5 m with restitution 0.8 bounces to ``e^2 h``::

        >>> import robot_dynamics as rd
        >>> from robot_dynamics.contact.analytic import PlaneDetector
        >>> from robot_dynamics.contact.dynamics import ContactParameters
        >>> from robot_dynamics.contact.free_bodies import FreeBodies
        >>> model = rd.load_urdf("urdf/panda_arm.urdf")
        >>> ball = FreeBodies([dict(shape="sphere", size=(0.05,), mass=0.3, position=(1.0, 0.0, 0.55))])
        >>> floor = PlaneDetector([dict(body=model.nb, type="sphere", size=(0.05,))], [((0, 0, 0), (0, 0, 1))])
        >>> sim = rd.Simulator(model, contact=ContactStepper(model, floor, ball, ContactParameters(restitution=0.8)))
        >>> sim.set_command(model.neutral(), mode="position")        # the arm held where it is
        >>> heights = []
        >>> for _ in range(700):
        ...     _ = sim.step()
        ...     heights.append(ball.p[0, 2] - 0.05)
        >>> round(float(max(heights[400:])), 2)                     # after the bounce: 0.8^2 x 0.5 m
        0.32

    Args:
        model: the arm (fixed base: its base frame is the world frame).
        detector: fills a :class:`~.contacts.Contacts` (module docstring).
        bodies: a :class:`~.free_bodies.FreeBodies` (None: none).
        parameters: :class:`~.dynamics.ContactParameters` (None: the defaults).
        dt: the simulator's step [s] (the default spring frequency 0.2 / dt);
            None: the step it is first run with. A simulator stepping another
            ``dt`` is refused (the springs are made for this one).
        capacity: the most contacts at one state.
    """

    def __init__(self, model, detector, bodies=None, parameters=None, *, dt=None, capacity=256):
        if model.root_joint is not None:
            raise InputError("contact: robot %r has a %s base; the contact dynamics needs a fixed base (its "
                             "base frame is the world)" % (model.name, model.root_joint))
        self.bodies = FreeBodies() if bodies is None else bodies
        if not isinstance(self.bodies, FreeBodies):
            raise InputError("contact: bodies must be a FreeBodies (contact/free_bodies.py), got %r" % (bodies,))
        if callable(getattr(detector, "shape_poses", None)):           # the narrow phase (detect.Detector)
            detector = PoseDetector(detector, model.nb, len(self.bodies))
        if not callable(getattr(detector, "detect", None)):
            raise InputError("contact: the detector needs detect(Rw, pw, Rf, pf, contacts) (PlaneDetector) or "
                             "detect(body_poses, free_poses) (detect.Detector), got %r" % (detector,))
        if dt is not None and not (np.isfinite(dt) and dt > 0):
            raise InputError("contact: dt must be a finite step > 0 [s] (or None: the simulator's), got %r" % (dt,))
        if parameters is not None and not isinstance(parameters, ContactParameters):
            raise InputError("contact: parameters must be a ContactParameters, got %r" % (parameters,))
        self.model, self.detector, self.dt = model, detector, None if dt is None else float(dt)
        self.parameters = ContactParameters() if parameters is None else parameters
        nb, nf, nl, N = model.nb, len(self.bodies), len(model.link_names), int(capacity)
        self.contacts = Contacts(N)                     # at the committed state (the step's start)
        self._point, self._depth = np.zeros((N, 3)), np.zeros(N)
        self._R, self._p = np.zeros((nb + 1, 3, 3)), np.zeros((nb + 1, 3))
        self.Rw, self.pw = np.zeros((nb + 1, 3, 3)), np.zeros((nb + 1, 3))      # the arm's bodies, world frame
        self.wa, self.va = np.zeros((nb + 1, 3)), np.zeros((nb + 1, 3))
        self.Rf, self.pf = self.bodies.R.copy(), self.bodies.p.copy()
        self.wf, self.vf = self.bodies.w.copy(), self.bodies.v.copy()
        self._mem = [_memory(N) for _ in range(2)]
        self._m = 0
        self.force = np.zeros((N, 3))                   # on body a, world, at the committed state
        self._F, self._found = np.zeros((N, 3)), np.zeros(N, dtype=np.int64)
        self._Warm, self.Wf, self._W = np.zeros((nb, 6)), np.zeros((nf, 6)), np.zeros((nl, 6))
        self._xdd = np.zeros(6 * nf)
        self._gravity = np.array(model.gravity, dtype=float)
        self._last, self._arm = None, 0
        self._primed = False

    # --- the force model ----------------------------------------------------

    def generalized_force(self, model, t, q, qd, command):
        return None

    def link_wrenches(self, model, t, q, qd):
        """(nl, 6) contact wrenches on the arm's links at this stage (f_ext), or None."""
        if q is not self._last:
            self._evaluate(q, qd)
        return self._W if self._arm else None

    def _evaluate(self, q, qd):
        """The contacts' forces at arm state (q, qd) and the current free-body state (Rf, pf, wf, vf):
        the contacts of the step's start, moved with their bodies (:func:`.contact_kernels.stage_forces`)."""
        c, mem = self.contacts, self._mem[0]
        self._last = q
        if self._m == 0:                                   # no contact at the step's start: no force
            self._arm = 0
            self.Wf[:] = 0.0
            return
        K.arm_motion(self.model, q, qd, self._R, self._p, self.Rw, self.pw, self.wa, self.va)
        self._arm = K.stage_forces(c.body_a, c.body_b, c.normal, c.depth, self._m, mem["s"], mem["ra"], mem["rb"],
                                   mem["ca"], mem["cb"], mem["g"], mem["k"], mem["c"], self.parameters.friction,
                                   self.Rw, self.pw, self.wa, self.va, self.Rf, self.pf, self.wf, self.vf,
                                   self._point, self._depth, self._F, self._Warm, self.Wf)
        if self._arm:
            K.link_wrenches(self._Warm, self.model.body_link, self.model.link_pose_rows, self.Rw, self.pw, self._W)

    # --- the integrator wrapper -----------------------------------------------

    def integrator(self, base, dt=None):
        """An integrator that steps the arm with ``base`` and the free bodies with it,
        at the step ``dt`` [s] (checked against the stepper's, adopted if it has none)."""
        if dt is not None:
            self._check_dt(dt)
        return _Integrator(base, self)

    def _check_dt(self, dt):
        if self.dt is None:
            self.dt = float(dt)
        elif dt != self.dt:
            raise InputError("contact: the stepper's springs are made for dt = %g s, the simulator steps %g s "
                             "(give ContactStepper the simulator's dt, or None)" % (self.dt, dt))

    def step(self, base, accel, t, q, qd, dt):
        """One step of arm and free bodies with the integrator ``base``; commits the
        free bodies (when finite) and returns the arm's (q, qd) at ``t + dt``."""
        self._check_dt(dt)
        if not self._primed:
            qd = self.settle(q, qd)
        n, b = q.shape[0], self.bodies
        R0 = b.R.copy()
        x = np.concatenate([q, np.concatenate([b.p, np.zeros_like(b.p)], axis=1).ravel()])
        xd = np.concatenate([qd, np.concatenate([b.v, b.w], axis=1).ravel()])
        xdd = np.empty_like(xd)

        free = len(b) > 0

        def f(t, x, xd):
            if free:
                chart_state(x[n:], xd[n:], R0, self.pf, self.Rf, self.vf, self.wf)
            qa, qda = x[:n], xd[:n]
            self._evaluate(qa, qda)
            xdd[:n] = accel(t, qa, qda)
            if free:
                chart_accelerations(x[n:], xd[n:], self.Rf, self.wf, b.mass, b.inertia, b.inertia_inv,
                                    self._gravity, self.Wf, self._xdd)
                xdd[n:] = self._xdd
            return xdd.copy()

        x1, xd1 = base.step(f, t, x, xd, dt)
        q1, qd1 = x1[:n].copy(), xd1[:n].copy()
        # committed here: a simulator that refuses a finite step later (a step constraint raising) leaves
        # the free bodies one step ahead of the arm
        if np.all(np.isfinite(x1)) and np.all(np.isfinite(xd1)):
            chart_state(x1[n:], xd1[n:], R0, b.p, b.R, b.v, b.w)
            orthonormalize(b.R)
            qd1 = self.settle(q1, qd1)
        else:
            self._use_committed()                    # the simulator keeps its state: so do the free bodies
        self._last = None
        return q1, qd1

    # --- between steps ----------------------------------------------------------

    def settle(self, q, qd):
        """At a committed state: detect, apply the impact law to the new contacts,
        update the friction anchors; returns the arm's qd after the impulses."""
        if self.dt is None:
            raise InputError("contact: the step dt is not known yet (give ContactStepper dt, or step it once)")
        self._primed = True
        self._use_committed()
        c = self.contacts
        self._detect_committed(q, qd)
        new = np.flatnonzero(self._found[:c.n] < 0)
        k = cc = None
        if c.n == 0 and self._m == 0:                      # nothing touches, nothing did
            return qd
        if len(new):
            qd = _impacts(self, q, qd, new)
            self._use_committed()                    # the velocities after the impulses, the poses moved out
            self._detect_committed(q, qd)
            k, cc = contact_springs(self, q)         # every contact's: a new one changes its group's coupling
        old, out = self._mem
        self._m = K.remember(c.body_a, c.body_b, c.point, c.normal, c.depth, c.pair, c.feature, c.radius_a,
                             c.radius_b, c.n, self._found, old["k"] if k is None else k,
                             old["c"] if cc is None else cc, old["pair"], old["feature"], old["s"], old["ra"],
                             old["rb"], old["k"], old["c"], self.parameters.friction, self.Rw, self.pw, self.wa,
                             self.va, self.Rf, self.pf, self.wf, self.vf, self.force, out["pair"], out["feature"],
                             out["s"], out["ra"], out["rb"], out["ca"], out["cb"], out["g"], out["k"], out["c"])
        if k is not None:
            out["k"][:c.n], out["c"][:c.n] = k[:c.n], cc[:c.n]
        self._mem = [out, old]
        return qd

    def _use_committed(self):
        b = self.bodies
        self.Rf[:], self.pf[:], self.wf[:], self.vf[:] = b.R, b.p, b.w, b.v

    def _detect_committed(self, q, qd):
        c, mem = self.contacts, self._mem[0]
        K.arm_motion(self.model, q, qd, self._R, self._p, self.Rw, self.pw, self.wa, self.va)
        self.detector.detect(self.Rw, self.pw, self.Rf, self.pf, c)
        K.match(c.pair, c.feature, c.n, mem["pair"], mem["feature"], self._m, self._found)

    def reset(self):
        """Forget the contacts (call after moving the arm or the bodies by hand)."""
        self._m, self._primed, self._last = 0, False, None

    def wrenches(self):
        """The contact forces at the committed state: (body_a (n,), body_b (n,), point
        (n, 3), normal (n, 3), force on a (n, 3)), world frame [m, N]."""
        c = self.contacts
        n = c.n
        return c.body_a[:n].copy(), c.body_b[:n].copy(), c.point[:n].copy(), c.normal[:n].copy(), self.force[:n].copy()


class PoseDetector:
    """A detector of poses as (4, 4) matrices, ``detect(body_poses (nb, 4, 4),
    free_poses (nf, 4, 4) or None) -> Contacts`` (:class:`.detect.Detector`), in
    the stepper's form ``detect(Rw, pw, Rf, pf, contacts)``: its rows copied."""

    def __init__(self, detector, nb, nf):
        self.detector, self.nb, self.nf = detector, nb, nf
        self._T, self._Tf = np.tile(np.eye(4), (nb, 1, 1)), np.tile(np.eye(4), (nf, 1, 1))

    def detect(self, Rw, pw, Rf, pf, contacts):
        nb = self.nb
        self._T[:, :3, :3], self._T[:, :3, 3] = Rw[:nb], pw[:nb]
        self._Tf[:, :3, :3], self._Tf[:, :3, 3] = Rf, pf
        found = self.detector.detect(self._T, self._Tf if self.nf else None)
        n = min(found.n, contacts.capacity)
        for name in ("body_a", "body_b", "point", "normal", "depth", "geom_a", "geom_b", "pair", "feature",
                     "radius_a", "radius_b"):
            getattr(contacts, name)[:n] = getattr(found, name)[:n]
        contacts.n, contacts.dropped = n, found.dropped + found.n - n


def _memory(N):
    """One buffer of the contacts' memory (:func:`.dynamics.remember`): identity, friction stretch,
    material anchors (ra, rb), centres of curvature (ca, cb) with their (h_a, h_b, w) (g), springs."""
    return {"pair": np.full(N, -1, dtype=np.int64), "feature": np.zeros(N, dtype=np.int64), "s": np.zeros((N, 3)),
            "ra": np.zeros((N, 3)), "rb": np.zeros((N, 3)), "ca": np.zeros((N, 3)), "cb": np.zeros((N, 3)),
            "g": np.zeros((N, 4)), "k": np.zeros((N, 2)), "c": np.zeros((N, 2))}


class _Integrator:
    """An integrator of the simulator's interface stepping the free bodies along."""

    def __init__(self, base, stepper):
        self.base, self.stepper = base, stepper
        self.name, self.evaluations = base.name, base.evaluations

    def step(self, accel, t, q, qd, dt):
        return self.stepper.step(self.base, accel, t, q, qd, dt)


class _Response:
    """How contact i's relative velocity answers an impulse (committed state).

    ``W`` (3, 3): the inverse mass matrix of the contact point, ``W_a + W_b``
    [1/kg] (``J_p M^-1 J_p^T`` for the arm, ``1/m - [r] I^-1 [r]`` for a free
    body, 0 for the static world); ``w = n^T W n`` (Handbook eq. 3.55's
    ``Lambda^-1`` along n); :meth:`velocity` the current ``v_n``;
    :meth:`apply` adds an impulse ``p n`` on a (``-p n`` on b).
    """

    def __init__(self, s, q, i):
        c = s.contacts
        self.s, self.n, self.x = s, c.normal[i].copy(), c.point[i].copy()
        self.sides = []
        self.W = np.zeros((3, 3))
        for b, sign in ((c.body_a[i], 1.0), (c.body_b[i], -1.0)):
            nb = s.model.nb
            if b < 0:
                continue
            if b < nb:
                link = s.model.body_link[b]
                T = np.eye(4)
                T[:3, :3], T[:3, 3] = s.Rw[b], s.pw[b]
                T = T @ s.model.link_placement[link]
                x_link = T[:3, :3].T @ (self.x - T[:3, 3])
                Jp = jacobian(s.model, q, s.model.link_names[link], x_link)[:3]
                Minv_Jt = np.linalg.solve(mass_matrix(s.model, q), Jp.T)
                self.sides.append(("arm", sign, self.n @ Jp, Minv_Jt @ self.n))
                self.W += Jp @ Minv_Jt
            else:
                f = b - nb
                r = self.x - s.bodies.p[f]
                Iinv = s.bodies.R[f] @ s.bodies.inertia_inv[f] @ s.bodies.R[f].T
                self.sides.append(("free", sign, f, r, Iinv))
                rx = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
                self.W += np.eye(3) / s.bodies.mass[f] - rx @ Iinv @ rx
        self.w = self.n @ self.W @ self.n

    def velocity(self, qd):
        v = 0.0
        for side in self.sides:
            if side[0] == "arm":
                v += side[1] * (side[2] @ qd)
            else:
                _, sign, f, r, _ = side
                b = self.s.bodies
                v += sign * (self.n @ (b.v[f] + np.cross(b.w[f], r)))
        return v

    def apply(self, qd, p):
        for side in self.sides:
            if side[0] == "arm":
                qd += side[1] * p * side[3]
            else:
                _, sign, f, r, Iinv = side
                b = self.s.bodies
                b.v[f] += sign * p * self.n / b.mass[f]
                b.w[f] += Iinv @ np.cross(r, sign * p * self.n)


def _impacts(s, q, qd, new, sweeps=8):
    """The impact law on the new contacts (Handbook sec. 3.3.4; module docstring of
    :mod:`.dynamics`): impulses by projected Gauss-Seidel sweeps towards ``v_n+ =
    -e v_n-`` for those approaching faster than bounce_velocity, then each free
    body moved out by its depth. Returns the arm's qd after the impulses."""
    c, prm = s.contacts, s.parameters
    qd = qd.copy()
    resp = {i: _Response(s, q, i) for i in new}
    hit = {i: r.velocity(qd) for i, r in resp.items()}
    heaviest = s.model.total_mass + float(np.sum(s.bodies.mass))
    hit = {i: v for i, v in hit.items() if v < -prm.bounce_velocity and resp[i].w > 1.0 / heaviest}
    P = dict.fromkeys(hit, 0.0)
    for _ in range(sweeps if len(hit) > 1 else 1):
        for i, v0 in hit.items():
            dp = (-prm.restitution * v0 - resp[i].velocity(qd)) / resp[i].w
            p = max(0.0, P[i] + dp)
            resp[i].apply(qd, p - P[i])
            P[i] = p
    b, nb = s.bodies, s.model.nb
    for i in hit:                                    # out by the depth: the free side(s), by inverse mass
        free = [(sign, f) for sign, f in ((1.0, c.body_a[i] - nb), (-1.0, c.body_b[i] - nb)) if f >= 0]
        if free and c.depth[i] > 0:
            share = 1.0 / sum(1.0 / b.mass[f] for _, f in free)
            for sign, f in free:
                b.p[f] += sign * c.depth[i] * share / b.mass[f] * c.normal[i]
    return qd
