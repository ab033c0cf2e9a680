"""The rigid-body model: tree structure and inertias in flat, immutable arrays.

A :class:`Model` is built once (by :func:`robot_dynamics.load_urdf`) and never
walked as a dict or XML again: every algorithm reads the packed arrays
``_data`` (one row per moving body, plus a base row), in topological order
(``parent[i] < i``, as in Featherstone's ``model.parent``).

Bodies and joints: each revolute, continuous or prismatic URDF joint moves
one body, the rigid union of its child link and every link fixed to it.
Links joined by fixed joints are merged (inertia moved with the correct
rotation and parallel-axis shift) and keep their frames for kinematics.
A mimic joint moves a body too, but its coordinate is not independent:
``q_body = multiplier * q[source] + offset`` and its torque is mapped back
onto the source joint.
"""
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

# Model._data is one float64 array of shape (nb + 1, NCOL): row i < nb is
# moving body i, row nb is the base. Packing everything in one array keeps
# the compiled kernels' call overhead to a single model argument.
PARENT = 0        # parent body index (-1: the base), stored as a float
JTYPE = 1         # REVOLUTE or PRISMATIC
QIDX = 2          # index of the independent coordinate that drives the joint
AXIS = 3          # 3:6   joint axis, unit, in the body (child) frame
ROT0 = 6          # 6:15  rotation parent body frame <- joint frame at q = 0, row-major
POS0 = 15         # 15:18 joint frame origin in the parent body frame [m]
MASS = 18         # body mass [kg]; MASS:MASS+13 are the 13 inertia parameters
MCOM = 19         # 19:22 first moment h = m c in the body frame [kg m]
INERTIA = 22      # 22:31 rotational inertia about the body origin, row-major [kg m^2]
QMUL = 31         # mimic multiplier (1 for an independent joint)
QOFF = 32         # mimic offset (0 for an independent joint)
DAMPING = 33      # viscous coefficient [N m s/rad or N s/m]
FRICTION = 34     # Coulomb friction [N m or N]
NCOL = 35
# Base row (index nb):
GRAVITY = 0       # 0:3 gravity acceleration in the base frame [m/s^2]
NQ = 3            # number of independent coordinates
# Joint types in JTYPE.
REVOLUTE, PRISMATIC = 0, 1


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
    """Kinematic tree and inertias of a fixed-base robot, built once.

    Public attributes (read-only):

    - ``name``: robot name from the URDF.
    - ``nq``: number of independent joint coordinates; q, qd, qdd and tau
      always have ``nq`` entries.
    - ``joint_names``: tuple of the independent joints, in q order.
    - ``link_names``: tuple of every link, root first (depth-first order).
    - ``base_link``: name of the root link (the fixed base frame).
    - ``joints``: dict name -> :class:`Joint` for every URDF joint.
    - ``lower_limit``, ``upper_limit``, ``velocity_limit``, ``effort_limit``,
      ``damping``, ``friction``: (nq,) arrays from the URDF.
    - ``link_masses``: dict link -> mass [kg]; ``total_mass`` [kg].
    - ``gravity``: (3,) gravity acceleration in the base frame [m/s^2];
      assignable (a wall-mounted base is a gravity vector in its frame).
    """

    def __init__(self, *, name, base_link, link_names, joints, joint_names,
                 data, link_body, link_pose, link_masses, gravity):
        self.name = name
        self.base_link = base_link
        self.link_names = tuple(link_names)
        self.joints = dict(joints)
        self.joint_names = tuple(joint_names)
        self.nq = len(self.joint_names)
        self.nb = data.shape[0] - 1
        self.link_masses = dict(link_masses)
        self.total_mass = float(sum(self.link_masses.values()))
        self._data = np.ascontiguousarray(data, dtype=np.float64)   # writable only for gravity
        self._data[self.nb, NQ] = self.nq
        self._link_index = {n: i for i, n in enumerate(self.link_names)}
        self._link_body = _frozen(np.ascontiguousarray(link_body, dtype=np.int64))
        self._link_pose = _frozen(np.ascontiguousarray(link_pose, dtype=np.float64))
        self.gravity = gravity
        self._zeros = np.zeros(self.nq)      # qdd = 0 for nonlinear_effects; never written
        # Mimic map G (nb, nq): q_body = G q + offset; tau = G^T tau_body.
        body = self._data[:self.nb]
        G = np.zeros((self.nb, self.nq))
        G[np.arange(self.nb), body[:, QIDX].astype(int)] = body[:, QMUL]
        self._G = _frozen(G)
        self.has_mimic = bool(self.nb != self.nq or np.any(body[:, QMUL] != 1.0)
                              or np.any(body[:, QOFF] != 0.0))
        limits = [self.joints[n] for n in self.joint_names]
        self.lower_limit = _frozen(np.array([j.lower for j in limits], dtype=float))
        self.upper_limit = _frozen(np.array([j.upper for j in limits], dtype=float))
        self.velocity_limit = _frozen(np.array([j.velocity for j in limits], dtype=float))
        self.effort_limit = _frozen(np.array([j.effort for j in limits], dtype=float))
        self.damping = _frozen(np.array([j.damping for j in limits], dtype=float))
        self.friction = _frozen(np.array([j.friction for j in limits], dtype=float))

    @property
    def gravity(self):
        """(3,) gravity acceleration in the base frame [m/s^2] (a copy)."""
        return self._data[self.nb, GRAVITY:GRAVITY + 3].copy()

    @gravity.setter
    def gravity(self, value):
        g = np.asarray(value, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError("gravity must be 3 finite numbers [m/s^2] in the base frame, got %r" % (value,))
        self._data[self.nb, GRAVITY:GRAVITY + 3] = g

    def link_index(self, link):
        """Index of ``link`` in ``link_names``; ValueError listing the valid names."""
        try:
            return self._link_index[link]
        except (KeyError, TypeError):
            raise ValueError("unknown link %r; the model's links are: %s"
                             % (link, ", ".join(self.link_names))) from None

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
        from .spatial import inertia_about_origin
        from .urdf import _add_inertia
        l = self.link_index(link)
        m = float(mass)
        c = np.asarray(com, dtype=float)
        Ic = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        if not (np.isfinite(m) and m >= 0):
            raise ValueError("payload mass must be a finite number >= 0 [kg], got %r" % (mass,))
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise ValueError("payload com must be 3 finite numbers [m] in the %r frame, got %r" % (link, com))
        if Ic.shape != (3, 3) or not np.all(np.isfinite(Ic)) or not np.allclose(Ic, Ic.T):
            raise ValueError("payload inertia must be a finite symmetric 3x3 matrix [kg m^2], got %r" % (inertia,))
        data = self._data.copy()
        b = int(self._link_body[l])
        if b >= 0:
            T = np.eye(4)
            T[:3, :] = self._link_pose[l].reshape(3, 4)
            _add_inertia(data[b], T, m, m * c, inertia_about_origin(m, c, Ic))
        masses = dict(self.link_masses)
        masses[self.link_names[l]] += m
        return Model(name=self.name, base_link=self.base_link, link_names=self.link_names,
                     joints=self.joints, joint_names=self.joint_names, data=data,
                     link_body=self._link_body, link_pose=self._link_pose,
                     link_masses=masses, gravity=self.gravity)

    def neutral(self):
        """(nq,) a valid configuration: zeros, moved inside the position limits."""
        return np.clip(np.zeros(self.nq), self.lower_limit, self.upper_limit)

    def __repr__(self):
        return "Model(%r, nq=%d, links=%d, mass=%.3f kg)" % (
            self.name, self.nq, len(self.link_names), self.total_mass)


def _frozen(a):
    a.setflags(write=False)
    return a
