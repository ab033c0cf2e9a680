"""dynamics_node's impedance modes without ROS: the target the law pulls towards, the law, the torque rate.

- :class:`ImpedanceTarget`: the last valid target of the ``joint_impedance`` mode (joint positions, by
  name, merged like joint states) or of the ``cartesian_impedance`` mode (a pose in the base frame). A
  target older than ``target_timeout`` by its stamp (or stamped that far ahead, or unstamped), with a
  non-finite value, a quaternion off unit norm by more than :data:`QUATERNION_TOLERANCE`, a pose in
  another frame than the model's base link, or for the other mode is refused with the reason and
  counted; the last valid one is held. With no target yet, the state of the first torque is the target
  (the arm holds where it is).
- :class:`TorqueRate`: each torque changes by at most ``max_torque_rate`` [N m/s] times the node-clock
  time since the last torque (at most ``max_gap``), so a jump of the target or of a parameter becomes a
  ramp: the library's limiter (:class:`robot_dynamics.analysis.torque_rate.TorqueRateLimit`, the laws'
  ``max_torque_rate`` in the same unit) given the node-clock time as the call's ``dt``.
- :class:`ImpedanceControl`: the library's law (:class:`robot_dynamics.JointImpedance` or
  :class:`robot_dynamics.CartesianImpedance`, with gravity and Coriolis compensation) towards the held
  target, through :class:`TorqueRate`; :func:`build_impedance` makes it for a model.

Units: positions [rad or m], orientations unit quaternions (x, y, z, w), torques [N m or N], times [ns]
of the node's clock.
"""
import numpy as np

from ..analysis.impedance import CartesianImpedance, JointImpedance
from ..analysis.torque_rate import TorqueRateLimit
from ..errors import InputError
from .compensation import CARTESIAN_IMPEDANCE, JOINT_IMPEDANCE
from .staleness import state_age_problem

#: Largest | |quaternion| - 1 | of a pose target; an accepted quaternion is normalised.
QUATERNION_TOLERANCE = 1e-3
#: The kind of target each impedance mode takes, and its topic (for the reasons).
KINDS = {CARTESIAN_IMPEDANCE: 'pose', JOINT_IMPEDANCE: 'joints'}
TOPICS = {'pose': '~/target_pose', 'joints': '~/target_joints'}
#: Default stiffness of each mode when the parameter is empty: [N/m x3, N m/rad x3] and [N m/rad].
DEFAULT_STIFFNESS = {CARTESIAN_IMPEDANCE: [500.0, 500.0, 500.0, 30.0, 30.0, 30.0], JOINT_IMPEDANCE: [50.0]}


class ImpedanceTarget:
    """The last valid target of an impedance mode and the counts of the targets offered (module doc).

    Args:
        joint_names: the law's joints in model order (n of them).
        base_link: the model's base link, the frame of pose targets.
        timeout_ns: largest age [ns] of a target by its stamp on the node clock; 0: not checked.
        kind: 'pose', 'joints' or None (the mode takes no target: every target is refused).

    Attributes:
        q: (n,) the held joint target (NaN for joints no target has set yet).
        position, quaternion: (3,) [m] and (4,) the held pose target, or None.
        accepted, rejected: counts of the targets offered; problem: the reason of the last refusal.
    """

    def __init__(self, joint_names, base_link, timeout_ns, kind):
        self.joint_names, self.base_link, self.timeout_ns, self.kind = tuple(joint_names), base_link, timeout_ns, kind
        self.index = {name: i for i, name in enumerate(self.joint_names)}
        self.accepted = self.rejected = 0
        self.problem = ''
        self._described = (None, '')    # (the held target's bytes, describe's text of them)
        self.forget()

    def forget(self):
        """No target held: the next torque's state becomes the target."""
        self.q = np.full(len(self.joint_names), np.nan)
        self.position = self.quaternion = None
        self.partial = True             # some joint of q may have no target yet (NaN)

    def offer_pose(self, frame_id, position, quaternion, stamp_ns, now_ns):
        """A pose target: ``position`` (3,) [m] and ``quaternion`` (4,) (x, y, z, w) of the law's point in
        ``frame_id`` (the base link, or '' for it), stamped ``stamp_ns`` at node clock ``now_ns`` [ns].
        Returns None when it is held, else the reason it is refused."""
        p, Q = np.asarray(position, dtype=float), np.asarray(quaternion, dtype=float)
        problem = self._common('pose', stamp_ns, now_ns)
        if problem is None and frame_id not in ('', self.base_link):
            problem = ('its header.frame_id is %r; expected the model\'s base link %r (or empty for it)'
                       % (frame_id, self.base_link))
        if problem is None and not (np.all(np.isfinite(p)) and np.all(np.isfinite(Q))):
            problem = 'non-finite pose: position %s, orientation %s' % (p, Q)
        norm = np.linalg.norm(Q)
        if problem is None and abs(norm - 1.0) > QUATERNION_TOLERANCE:
            problem = ('its orientation is not a unit quaternion: norm %.6g, expected 1 within %g'
                       % (norm, QUATERNION_TOLERANCE))
        if problem is not None:
            return self._refuse('pose', problem)
        self.position, self.quaternion = p.copy(), Q / norm
        self.accepted += 1
        return None

    def offer_joints(self, names, positions, stamp_ns, now_ns):
        """A joint target by name: ``positions`` of the joints ``names`` (names not of the law are
        ignored; the law's joints it does not name keep their target), stamped ``stamp_ns`` at node clock
        ``now_ns`` [ns]. Returns None when it is held, else the reason it is refused."""
        problem = self._common('joints', stamp_ns, now_ns)
        if problem is None and len(names) != len(positions):
            problem = '%d names and %d positions' % (len(names), len(positions))
        if problem is None and len(set(names)) != len(names):
            problem = 'a joint is named twice'
        mine = [(self.index[n], float(x)) for n, x in zip(names, positions) if n in self.index] if not problem else []
        if problem is None and not mine:
            problem = 'it names none of the joints %s' % ', '.join(self.joint_names)
        if problem is None and not all(np.isfinite(x) for _, x in mine):
            problem = 'non-finite position: %s' % ', '.join('%s=%r' % (self.joint_names[i], x) for i, x in mine)
        if problem is not None:
            return self._refuse('joints', problem)
        for i, x in mine:
            self.q[i] = x
        self.partial = True
        self.accepted += 1
        return None

    def refuse(self, kind, problem):
        """Count a target of ``kind`` refused before it could be offered (a message that cannot be read)."""
        return self._refuse(kind, problem)

    def joints(self, q):
        """(n,) the joint target at the state ``q`` (n,): the held one, the joints without a target set to
        ``q`` (and held from now on)."""
        if self.partial:
            unset = np.isnan(self.q)
            self.q[unset] = q[unset]
            self.partial = False
        return self.q

    def pose(self, law, q):
        """(position (3,), quaternion (4,)): the held pose target, or the pose of ``law``'s point at ``q``
        (held from now on)."""
        if self.position is None:
            self.position, self.quaternion = law.pose(q)
        return self.position, self.quaternion

    def describe(self):
        """The held target, for diagnostics: numpy's text of it rounded, made again only when its values changed
        (numpy's printing of the two arrays of a pose took some 40 us of the torque loop's thread)."""
        if self.kind == 'pose' and self.position is not None:
            held = self.position.tobytes() + self.quaternion.tobytes()
        elif self.kind == 'joints' and not np.isnan(self.q).all():
            held = self.q.tobytes()
        else:
            return 'none (the next state is held)' if self.kind else 'none (the mode takes no target)'
        if held != self._described[0]:
            self._described = (held, self._text())
        return self._described[1]

    def _text(self):
        if self.kind == 'pose':
            return 'position %s m, quaternion %s (%s)' % (np.round(self.position, 4), np.round(self.quaternion, 4),
                                                          self.base_link)
        return 'joints %s' % np.round(self.q, 4)

    def _common(self, kind, stamp_ns, now_ns):
        if self.kind is None:
            return 'the mode takes no target (joint_impedance or cartesian_impedance do)'
        if kind != self.kind:
            return 'the mode takes its target on %s' % TOPICS[self.kind]
        if self.timeout_ns:
            why = state_age_problem(stamp_ns, now_ns, self.timeout_ns)
            if why is not None:
                return why.replace('max_state_age', 'target_timeout')
        return None

    def _refuse(self, kind, problem):
        self.rejected += 1
        self.problem = '%s refused: %s' % (TOPICS[kind], problem)
        return self.problem


class TorqueRate:
    """Each torque changes by at most ``max_rate`` [N m/s] times the node-clock time since the last torque,
    counted at most ``max_gap_ns`` [ns] (after a longer gap the change is still bounded); 0: no limit.

    The library's :class:`TorqueRateLimit` (``self.step``, the same rate in N m/s) limits the torque,
    holds the last one and counts the limited ones (``limited``); this class gives it the clock's time."""

    def __init__(self, max_rate, max_gap_ns):
        self.max_rate, self.max_gap_ns = float(max_rate), int(max_gap_ns)
        self.step = TorqueRateLimit(self.max_rate if self.max_rate > 0 else None, 0)
        self.last_ns = 0                # node-clock time [ns] of the last torque
        self.resumed = False            # the next torque is the first after a silence (:meth:`resume`)

    @property
    def last(self):
        """The last torque (n,) [N m] or None."""
        return self.step.last

    @property
    def limited(self):
        """How many torques were limited."""
        return self.step.limited

    def carry(self, old):
        """Go on from ``old`` (a TorqueRate): its last torque, its time and its count."""
        self.step.last, self.step.limited, self.last_ns = old.step.last, old.step.limited, old.last_ns

    def resume(self, held):
        """The torques stopped (a watchdog timeout, a deactivation): the actuator now holds ``held`` (n,)
        (zeros after a zero command; None: the last torque, which a stopped publisher leaves in place). The
        first torque after the silence is limited to no change from it, and the ramp starts there: the time
        of the silence is never a step (at most ``max_gap``: 100 N m at 1000 N m/s and 0.1 s)."""
        if held is not None and self.step.last is not None:
            self.step.last = np.array(held, dtype=float)
        self.resumed = True

    def apply(self, tau, now_ns):
        """``tau`` (n,) limited against the last torque at node clock ``now_ns`` [ns] (``tau`` itself when the
        limit does not bind)."""
        tau = np.asarray(tau, dtype=float)
        gap = now_ns - self.last_ns
        gap = gap if gap > 0 else 0
        gap = gap if gap < self.max_gap_ns else self.max_gap_ns      # min(max(gap, 0), max_gap_ns) without 2 calls
        if self.resumed:
            gap, self.resumed = 0, False
        step = self.step
        tau = step.apply(tau, gap * 1e-9)                                                       # dt [s]
        if step.kept:                    # a non-finite torque never goes out (the limiter) nor becomes the last
            self.last_ns = now_ns
        return tau


class ImpedanceControl:
    """The torque of an impedance mode: ``law`` towards ``target``, through ``rate`` (module doc).

    Args:
        law: :class:`robot_dynamics.JointImpedance` or :class:`robot_dynamics.CartesianImpedance`.
        target: :class:`ImpedanceTarget` of the law's kind.
        rate: :class:`TorqueRate`.
    """

    def __init__(self, law, target, rate):
        self.law, self.target, self.rate = law, target, rate
        self.cartesian = isinstance(law, CartesianImpedance)

    def resume(self, zeroed):
        """The torques stopped and resume with the next joint state: the rate limit starts from what the
        actuator holds (zeros if ``zeroed``, else the last torque), and a target taken from a state (none was
        given) is taken again from the next one, where the arm is now."""
        self.rate.resume(np.zeros(self.law.model.nv) if zeroed else None)
        if self.target.accepted == 0:
            self.target.forget()

    def torque(self, q, qd, now_ns, out=None):
        """(n,) the law's torque [N m] at the state ``(q, qd)`` (n,) and node clock ``now_ns`` [ns]; ``out``:
        the (n,) float64 array to write it into (returned), or None: a new array. The law's kernel takes
        the state and the held target as they are (C-contiguous float64: no copy, no allocation).

        Raises:
            SingularityError: the Cartesian law near a singularity (the reason names cond(J)).
        """
        if self.cartesian:
            position, quaternion = self.target.pose(self.law, q)
            tau = self.law.torque(q, qd, position, quaternion, out=out)
        else:
            tau = self.law.torque(q, qd, self.target.joints(q), out=out)
        limited = self.rate.apply(tau, now_ns)
        if limited is not tau and out is not None:      # the rate limit bound: a new array
            out[:] = limited
            return out
        return limited


def build_impedance(model, mode, target, *, link='', stiffness=(), damping=(), nullspace_stiffness=0.0,
                    max_pose_error=(0.05, 0.3), max_torque_rate=0.0, max_gap_ns=100_000_000, old=None):
    """The :class:`ImpedanceControl` of ``mode`` for ``model`` (fixed base, joints in model order).

    Args:
        target: the :class:`ImpedanceTarget` to follow.
        link: the Cartesian law's link ('' : the model's last link, ``model.link_names[-1]``).
        stiffness: Cartesian: 6 values [N/m x3, N m/rad x3]; joint: (n,) [N m/rad or N/m]; empty: the
            mode's :data:`DEFAULT_STIFFNESS`.
        damping: as stiffness [N s/m, N m s/rad]; empty: damping ratio 1 in each mode of the closed loop
            (the library's ``damping=None``).
        nullspace_stiffness: the Cartesian law's posture stiffness [N m/rad] towards the first state.
        max_pose_error: (largest translation [m], largest rotation [rad]) of the error; the joint law
            clips each joint's error at the second (revolute) or the first (prismatic).
        max_torque_rate: [N m/s] of :class:`TorqueRate` (0: none), over gaps of at most ``max_gap_ns``.
        old: the ImpedanceControl of the previous model: its last torque and posture carry over.

    Raises:
        InputError: a value the law refuses (the reason names it).
    """
    stiffness = list(stiffness) or DEFAULT_STIFFNESS[mode]
    damping = list(damping) or None
    if mode == CARTESIAN_IMPEDANCE:
        law = CartesianImpedance(model, link or model.link_names[-1], stiffness, damping,
                                    nullspace_stiffness=nullspace_stiffness, max_pose_error=tuple(max_pose_error))
        if old is not None and old.cartesian and old.law.link == law.link:
            law.q_nullspace = old.law.q_nullspace
    elif mode == JOINT_IMPEDANCE:
        K = stiffness[0] if len(stiffness) == 1 else stiffness        # one value: every joint's (the library's scalar)
        D = None if damping is None else (damping[0] if len(damping) == 1 else damping)
        prismatic = [model.joints[name].type == 'prismatic' for name in model.joint_names]
        law = JointImpedance(model, K, D, max_pose_error=np.where(prismatic, max_pose_error[0], max_pose_error[1]))
    else:
        raise InputError('mode %r has no impedance law' % mode)
    rate = TorqueRate(max_torque_rate, max_gap_ns)
    if old is not None:
        rate.carry(old.rate)
    return ImpedanceControl(law, target, rate)


def carry_target(old, joint_names, base_link, timeout_ns, kind, same_law):
    """The :class:`ImpedanceTarget` of a rebuilt pipeline: ``old``'s counts, and its held target when
    ``same_law`` (same mode, link and joints), else none held."""
    target = ImpedanceTarget(joint_names, base_link, timeout_ns, kind)
    if old is not None:
        target.accepted, target.rejected, target.problem = old.accepted, old.rejected, old.problem
        if same_law and old.joint_names == target.joint_names:
            target.q, target.position, target.quaternion = old.q, old.position, old.quaternion
            target.partial = True
    return target
