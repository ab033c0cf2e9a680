"""The rigid-body model: an immutable description of a kinematic tree.

A :class:`Model` is built once (by :func:`robot_dynamics.load_urdf`) and
never changes; a different gravity or an attached payload is a new model
(:meth:`Model.with_gravity`, :meth:`Model.with_payload`). Its per-body
arrays follow Featherstone's model structure (*Rigid Body Dynamics
Algorithms*, sec. 4.2: ``parent``, ``jtype``, ``Xtree``, ``I``), in
topological order (``parent[i] < i``).

Bodies and joints: each revolute, continuous or prismatic URDF joint moves
one body, the rigid union of its child link and every link fixed to it.
Links joined by fixed joints are merged (their inertias added with
:func:`robot_dynamics.model.inertia.transform_inertia`) and keep their
frames for kinematics. A mimic joint moves a body too, but its coordinate
is not independent: ``q_body = multiplier * q[source] + offset`` and its
torque is mapped back onto the source joint.
"""
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional, Tuple

import numpy as np

from . import actuators as _actuators
from . import inertia as _inertia
from . import loops as _loops
from . import packed as P
from ..errors import InputError


@dataclass(frozen=True)
class Joint:
    """One URDF joint as the model keeps it (all joints, fixed included).

    ``index`` is the position of the joint's coordinate in q for an
    independent joint, None for fixed and mimic joints. Limits are +-inf
    where the URDF gives none (continuous joints have no position limits).
    """
    name: str
    type: str
    parent: str
    child: str
    axis: Tuple[float, float, float]
    origin: np.ndarray               # (4, 4) parent link frame <- joint frame at q = 0
    lower: float = -np.inf
    upper: float = np.inf
    effort: float = np.inf
    velocity: float = np.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic: Optional[Tuple[str, float, float]] = None   # (source joint, multiplier, offset)
    index: Optional[int] = None


class Model:
    """Kinematic tree and inertias of a fixed-base robot, built once, never changed.

    Sizes: ``nq`` independent coordinates (q, qd, qdd and tau have ``nq``
    entries), ``nb`` moving bodies (``nb > nq`` with mimic joints), ``nl =
    len(link_names)`` URDF links. Every array is read-only.

    Names and joints:

    - ``name``; ``base_link``: the root link, the fixed base frame.
    - ``joint_names`` (nq,): the independent joints, in q order.
    - ``link_names`` (nl,): every link, root first (depth-first order).
    - ``joints``: dict name -> :class:`Joint` for every URDF joint.
    - ``lower_limit``, ``upper_limit``, ``velocity_limit``,
      ``effort_limit``, ``damping``, ``friction``: (nq,) from the URDF
      (``damping``, ``friction``: the viscous and Coulomb parts of each
      joint's friction law, below).

    Actuators (docs/ACTUATORS.md; :meth:`with_actuators`,
    ``load_urdf(..., actuators=...)``):

    - ``armature`` (nv,): the rotors' inertia reflected to the joints [kg
      m^2 | kg], Pinocchio's convention: on the joints' velocity
      coordinates, zero on a floating or planar root's; every algorithm
      includes it (``M`` gains ``diag(armature)``, ``rnea`` the term
      ``armature * qdd``, the kinetic energy ``1/2 armature qd^2``). With
      mimic joints it is the diagonal of ``G^T diag(body_armature) G``.
    - ``gear_ratio``: motor turns per joint turn, one per ``joint_names``
      (the independent joints), 1.0 where no source gives one;
      ``friction_laws``: a tuple of
      :class:`~robot_dynamics.model.actuators.FrictionLaw`, one per ``joint_names``.
    - ``actuators``: read-only dict joint -> :class:`~robot_dynamics.model.actuators.Actuator`
      for every moving joint, mimic joints included.

    Per body ``i`` (Featherstone's model structure):

    - ``parent`` (nb,) int: parent body, -1 for the base; ``parent[i] < i``.
    - ``joint_type`` (nb,) int: :data:`REVOLUTE` or :data:`PRISMATIC`;
      ``body_joint`` (nb,): the URDF joint that moves the body;
      ``body_link`` (nb,) int: index of the link that joint moves.
    - ``axis`` (nb, 3): unit joint axis in the body frame.
    - ``joint_placement`` (nb, 4, 4): the tree transform, pose of the body
      frame at q = 0 in the parent body frame (``X_tree``).
    - ``body_coordinate`` (nb,) int, ``body_multiplier``, ``body_offset``
      (nb,): the body's joint position is ``multiplier * q[coordinate] +
      offset``; ``coupling`` (nb, nq) is the same map as a matrix G
      (``q_bodies = G q + offset``, ``tau = G^T tau_bodies``).
    - ``body_damping``, ``body_friction`` (nb,): the URDF ``<dynamics>`` of
      the body's joint (viscous [N m s/rad], Coulomb [N m]);
      ``body_armature`` (nb,): its reflected rotor inertia [kg m^2 | kg].
    - ``body_mass`` (nb,) [kg], ``body_com`` (nb, 3) [m, body frame; zero
      for a massless body], ``body_inertia`` (nb, 3, 3) about the body
      origin [kg m^2]: everything fixed to the body, payloads included;
      ``body_parameters`` (nb, 10) and ``spatial_inertia`` (nb, 6, 6) are
      the same in the forms of :mod:`robot_dynamics.model.inertia`.

    Per link ``l``:

    - ``link_body`` (nl,) int: the body the link is fixed to (-1: the base).
    - ``link_placement`` (nl, 4, 4): pose of the link frame in its body frame.
    - ``link_mass`` (nl,), ``link_com`` (nl, 3), ``link_inertia`` (nl, 3, 3):
      the link's own URDF ``<inertial>`` in the link frame (inertia about
      the centre of mass); payloads are not in these.

    Loops: ``loops``, a tuple of :class:`~robot_dynamics.model.loops.Loop`
    (empty for a tree): closure joints declared beside the URDF
    (:meth:`with_loops`, ``load_urdf(..., loops=...)``); the algorithms of
    :mod:`robot_dynamics.constraints` impose them, the tree algorithms
    ignore them.

    Other: ``gravity`` (3,) [m/s^2] in the base frame; ``total_mass`` [kg];
    ``link_masses`` dict link -> mass (payloads included); ``has_mimic``;
    ``packed``: the per-body arrays packed for the compiled kernels (see
    :mod:`robot_dynamics.model.packed`).
    """

    def __init__(self, *, name, base_link, link_names, joints, joint_names, packed, body_joint,
                 link_body, link_placement, link_inertials, gravity, payload_masses=None,
                 root_joint=None, root_placement=None, loops=(), actuators=None):
        self.name = name
        self.base_link = base_link
        self.link_names = tuple(link_names)
        self.joints = dict(joints)
        self.joint_names = tuple(joint_names)
        if root_joint not in ROOT_JOINTS:
            raise InputError("root_joint must be None, 'floating' or 'planar', got %r" % (root_joint,))
        self.root_joint = root_joint
        self.root_nv = ROOT_NV[root_joint]
        self.root_nq = ROOT_NQ[root_joint]
        self.nv = self.root_nv + len(self.joint_names)
        self.nq = self.root_nq + len(self.joint_names)
        self.root_placement = _frozen(np.eye(4) if root_placement is None
                                      else np.array(root_placement, dtype=float).reshape(4, 4))
        self.nb = packed.shape[0] - 1
        D = np.array(packed, dtype=np.float64, order="C")
        D[self.nb, P.NQ] = self.nv
        D[self.nb, P.ROOT] = ROOT_CODE[root_joint]
        g = _gravity(gravity)
        D[self.nb, P.WORLD_GRAVITY:P.WORLD_GRAVITY + 3] = g
        # A moving root: the kernels work in the base frame, gravity enters
        # through the base acceleration (robot_dynamics.model.configuration).
        D[self.nb, P.GRAVITY:P.GRAVITY + 3] = g if root_joint is None else 0.0
        D[self.nb, P.ROOT_ROT:P.ROOT_ROT + 9] = self.root_placement[:3, :3].ravel()
        if root_joint == "planar":          # the part along the plane's normal never rotates
            D[self.nb, P.GRAVITY + 2] = (self.root_placement[:3, :3].T @ g)[2]
        self.packed = _frozen(D)
        self._link_index = {n: i for i, n in enumerate(self.link_names)}
        self._init_bodies(tuple(body_joint))
        self._init_links(link_body, link_placement, link_inertials, payload_masses or {})
        self._init_limits()
        self.loops = tuple(loops)
        self._init_actuators(actuators)

    def _init_bodies(self, body_joint):
        D, nb = self.packed[:self.nb], self.nb
        self.body_joint = body_joint
        self.parent = _frozen(D[:, P.PARENT].astype(np.int64))
        self.joint_type = _frozen(D[:, P.JTYPE].astype(np.int64))
        self.axis = D[:, P.AXIS:P.AXIS + 3]
        X = np.zeros((nb, 4, 4))
        X[:, :3, :3] = D[:, P.ROT0:P.ROT0 + 9].reshape(nb, 3, 3)
        X[:, :3, 3] = D[:, P.POS0:P.POS0 + 3]
        X[:, 3, 3] = 1.0
        self.joint_placement = _frozen(X)
        self.body_coordinate = _frozen(D[:, P.QIDX].astype(np.int64))
        self.body_multiplier = D[:, P.QMUL]
        self.body_offset = D[:, P.QOFF]
        G = np.zeros((nb, self.nv))
        G[np.arange(nb), self.body_coordinate] = self.body_multiplier
        self.coupling = _frozen(G)
        self.body_damping = D[:, P.DAMPING]
        self.body_friction = D[:, P.FRICTION]
        self.body_armature = D[:, P.ARMATURE]
        self.has_mimic = bool(nb != self.nv or np.any(self.body_multiplier != 1.0)
                              or np.any(self.body_offset != 0.0))
        self.body_mass = D[:, P.MASS]
        h = D[:, P.MCOM:P.MCOM + 3]
        m = self.body_mass[:, None]
        self.body_com = _frozen(np.divide(h, m, out=np.zeros_like(h), where=m > 0))
        self.body_inertia = D[:, P.INERTIA:P.INERTIA + 9].reshape(nb, 3, 3)
        self.body_parameters = _frozen(np.array(
            [_inertia.parameters(D[i, P.MASS], h[i], self.body_inertia[i]) for i in range(nb)]).reshape(nb, 10))
        self.spatial_inertia = _frozen(np.array(
            [_inertia.spatial_inertia(D[i, P.MASS], h[i], self.body_inertia[i]) for i in range(nb)]).reshape(nb, 6, 6))

    def _init_links(self, link_body, link_placement, link_inertials, payload_masses):
        self.link_body = _frozen(np.array(link_body, dtype=np.int64))
        self.link_placement = _frozen(np.array(link_placement, dtype=np.float64).reshape(-1, 4, 4))
        mass, com, inertia = link_inertials
        self.link_mass = _frozen(np.array(mass, dtype=float))
        self.link_com = _frozen(np.array(com, dtype=float).reshape(-1, 3))
        self.link_inertia = _frozen(np.array(inertia, dtype=float).reshape(-1, 3, 3))
        self._payload_masses = dict(payload_masses)
        self.link_masses = {n: float(self.link_mass[l]) + self._payload_masses.get(n, 0.0)
                            for l, n in enumerate(self.link_names)}
        self.total_mass = float(sum(self.link_masses.values()))
        self.body_link = _frozen(np.array([self._link_index[self.joints[j].child] for j in self.body_joint],
                                          dtype=np.int64).reshape(self.nb))
        # Kernel view of the link placements: (nl, 12) rows of [R | p].
        self.link_pose_rows = _frozen(np.ascontiguousarray(self.link_placement[:, :3, :].reshape(-1, 12)))

    def _init_limits(self):
        limits = [self.joints[n] for n in self.joint_names]
        for attr, field in (("lower_limit", "lower"), ("upper_limit", "upper"), ("velocity_limit", "velocity"),
                            ("effort_limit", "effort"), ("damping", "damping"), ("friction", "friction")):
            setattr(self, attr, _frozen(np.array([getattr(j, field) for j in limits], dtype=float)))

    def _init_actuators(self, actuators):
        if actuators is None:
            actuators = _actuators.defaults(self.joints, self.body_joint, self.packed)
        self.actuators = MappingProxyType(dict(actuators))
        self.armature = _frozen(np.square(self.coupling).T @ self.body_armature)     # diag(G^T diag(a) G)
        self.gear_ratio = _frozen(np.array([self.actuators[n].gear_ratio for n in self.joint_names], dtype=float))
        self.friction_laws = tuple(self.actuators[n].friction for n in self.joint_names)

    @property
    def gravity(self):
        """(3,) gravity acceleration [m/s^2] (a copy): in the base frame of a
        fixed-base model, in the world frame of a floating or planar one."""
        return self.packed[self.nb, P.WORLD_GRAVITY:P.WORLD_GRAVITY + 3].copy()

    @gravity.setter
    def gravity(self, value):
        raise AttributeError("a Model is immutable: use model = model.with_gravity(%r)" % (value,))

    def link_index(self, link):
        """Index of ``link`` in ``link_names``; ValueError listing the valid names."""
        try:
            return self._link_index[link]
        except (KeyError, TypeError):
            raise InputError("unknown link %r; the model's links are: %s"
                             % (link, ", ".join(self.link_names))) from None

    def with_gravity(self, gravity):
        """A copy of the model with another gravity vector.

        Args:
            gravity: (3,) gravity acceleration in the base frame [m/s^2]; a
                wall-mounted or tilted base is a rotated gravity vector.
        """
        return self._copy(self.packed, gravity=gravity)

    def with_payload(self, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """A copy of the model with a rigid payload attached to ``link``.

        Args:
            link: link that carries the payload (e.g. the flange or tool link).
            mass: payload mass [kg], >= 0.
            com: (3,) payload centre of mass in the link frame [m].
            inertia: (3, 3) rotational inertia about the payload's centre of
                mass, in the link frame [kg m^2]; zeros (a point mass) if None.

        Returns:
            A new Model (this one is unchanged); payloads add up when chained.
        """
        l = self.link_index(link)
        m = float(mass)
        c = np.asarray(com, dtype=float)
        Ic = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        if not (np.isfinite(m) and m >= 0):
            raise InputError("payload mass must be a finite number >= 0 [kg], got %r" % (mass,))
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise InputError("payload com must be 3 finite numbers [m] in the %r frame, got %r" % (link, com))
        if Ic.shape != (3, 3) or not np.all(np.isfinite(Ic)) or not np.allclose(Ic, Ic.T):
            raise InputError("payload inertia must be a finite symmetric 3x3 matrix [kg m^2], got %r" % (inertia,))
        D = self.packed.copy()
        b = int(self.link_body[l])
        if b >= 0:
            add_body_inertia(D[b], self.link_placement[l], m, m * c, _inertia.inertia_about_origin(m, c, Ic))
        masses = dict(self._payload_masses)
        masses[self.link_names[l]] = masses.get(self.link_names[l], 0.0) + m
        return self._copy(D, payload_masses=masses)

    def with_loops(self, loops):
        """A copy of the model with these closure joints (replacing any it had).

        Args:
            loops: what :func:`robot_dynamics.model.loops.parse_loops` reads:
                a YAML file path or text, a list of dicts or of
                :class:`~robot_dynamics.model.loops.Loop`; None or ``()``
                removes the loops.

        Returns:
            A new Model (this one is unchanged).

        Raises:
            URDFError: a declaration that is malformed or does not fit the
                tree (unknown link, a loop between a link and itself or
                across its parent joint, a floating base); the message names
                the loop. Whether the loops can be closed is checked by
                ``robot_dynamics.load_urdf`` and :func:`robot_dynamics.assemble`.
        """
        return self._copy(self.packed, loops=_loops.check_loops(self, _loops.parse_loops(loops)))

    def with_actuators(self, actuators, *, source="actuators"):
        """A copy of the model with these actuators (docs/ACTUATORS.md).

        Args:
            actuators: ``{joint: {armature | rotor_inertia, gear_ratio,
                friction: {law, ...}}}``, as a dict, YAML text or a YAML file
                path. Each joint named takes the fields given; every other
                field and joint keeps its value.
            source: where the gear ratios come from, as ``Actuator.gear_ratio_from``
                records it: ``"actuators"`` (a declaration) or ``"transmission"``
                (a URDF's ``mechanicalReduction``, as the loader applies them).

        Returns:
            A new Model (this one is unchanged).

        Raises:
            URDFError: an unknown joint or field, a negative armature or
                rotor inertia, a zero gear ratio, a rotor inertia without a
                gear ratio, an unknown friction law or a missing, unknown or
                out-of-range parameter; the message names the joint and the field.
        """
        if source not in ("actuators", "transmission"):
            raise InputError("source must be 'actuators' or 'transmission', got %r" % (source,))
        D, joints, acts = _actuators.apply(self, actuators, source)
        return self._copy(D, joints=joints, actuators=acts)

    def _copy(self, packed, gravity=None, payload_masses=None, loops=None, joints=None, actuators=None):
        return Model(name=self.name, base_link=self.base_link, link_names=self.link_names,
                     joints=self.joints if joints is None else joints, joint_names=self.joint_names, packed=packed,
                     body_joint=self.body_joint, link_body=self.link_body,
                     link_placement=self.link_placement,
                     link_inertials=(self.link_mass, self.link_com, self.link_inertia),
                     gravity=self.gravity if gravity is None else gravity,
                     payload_masses=self._payload_masses if payload_masses is None else payload_masses,
                     root_joint=self.root_joint, root_placement=self.root_placement,
                     loops=self.loops if loops is None else loops,
                     actuators=self.actuators if actuators is None else actuators)

    def neutral(self):
        """(nq,) a valid configuration: the root at the world origin (a floating
        root's quaternion the identity, ``(0, 0, 0, 1)``) and the joints at
        zero, moved inside their position limits."""
        q = np.zeros(self.nq)
        q[self.root_nq:] = np.clip(0.0, self.lower_limit, self.upper_limit)
        if self.root_joint == "floating":
            q[6] = 1.0
        return q

    def __repr__(self):
        root = "" if self.root_joint is None else ", root=%s, nv=%d" % (self.root_joint, self.nv)
        loops = ", loops=%d" % len(self.loops) if self.loops else ""
        return "Model(%r, nq=%d%s, links=%d%s, mass=%.3f kg)" % (
            self.name, self.nq, root, len(self.link_names), loops, self.total_mass)


REVOLUTE, PRISMATIC = P.REVOLUTE, P.PRISMATIC
ROOT_JOINTS = (None, "floating", "planar")
ROOT_NV = {None: 0, "floating": 6, "planar": 3}
ROOT_NQ = {None: 0, "floating": 7, "planar": 3}
ROOT_CODE = {None: P.FIXED_ROOT, "floating": P.FLOATING_ROOT, "planar": P.PLANAR_ROOT}


def describe_base(model):
    """'robot 'x' has a floating base (the URDF attaches its root link 'world' through a floating joint)':
    the words every refusal of a moving base uses (the nodes, the services, the simulator)."""
    return ('robot %r has a %s base (the URDF attaches its root link %r through a %s joint)'
            % (model.name, model.root_joint, model.base_link, model.root_joint))


def add_body_inertia(row, T, mass, h, inertia_origin):
    """Add a rigid body's ``(m, h, I_O)`` given in a frame at pose ``T`` in
    a body's frame to that body's packed row."""
    m, hb, Io = _inertia.transform_inertia(T, mass, h, inertia_origin)
    row[P.MASS] += m
    row[P.MCOM:P.MCOM + 3] += hb
    row[P.INERTIA:P.INERTIA + 9] += Io.ravel()


def _gravity(value):
    g = np.asarray(value, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise InputError("gravity must be 3 finite numbers [m/s^2] in the base frame, got %r" % (value,))
    return g


def _frozen(a):
    a.setflags(write=False)
    return a
