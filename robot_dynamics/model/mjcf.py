"""Build a :class:`~robot_dynamics.model.Model` from MJCF, through MuJoCo's own compiler.

MuJoCo compiles the MJCF (defaults, ``<include>``, angles in degrees,
inertias from geoms, ``fusestatic``, ...), so this module reads the
compiled ``mujoco.MjModel`` and never the XML: what MuJoCo simulates is
what the model holds. The mapping (docs/MJCF.md):

- every MuJoCo body is a link of the same name, its frame the body frame;
  the world body is the base link ``world``;
- a hinge is a revolute joint (``continuous`` when it has no range), a
  slide a prismatic joint; the joint frame sits at the joint's anchor
  (``jnt_pos``), its reference position (``ref``, ``qpos0``) folded into
  the placement so that q is MuJoCo's qpos;
- a body with several joints is a chain of bodies: every joint but the last
  moves a massless link ``<body>__<joint>``;
- a body without joints is welded to its parent (a fixed joint
  ``<body>__weld``, merged as URDF fixed joints are);
- a free joint on a child of the world is the floating root (q and v in
  Pinocchio's convention, :mod:`robot_dynamics.model.configuration`: the
  quaternion is reordered and the base's linear velocity is in the base
  frame, where MuJoCo's is in the world frame);
- ``dof_damping`` is the viscous coefficient, ``dof_frictionloss`` the
  Coulomb friction (MuJoCo imposes it as a constraint, this package as a
  smoothed law: the same torque while the joint slides),
  ``dof_armature`` the armature, ``jnt_range`` the position limits, the
  effort limit ``jnt_actfrcrange`` or the tightest ``forcerange x gear`` of
  the motors that drive the joint (else none), ``opt.gravity`` the gravity.

- an equality constraint between two joints that is exactly a mimic
  coupling (``polycoef`` ``c0 c1 0 0 0``, c1 != 0) is a mimic joint: its
  body moves with the source's coordinate, as a URDF ``<mimic>``;
- an equality ``connect`` or ``weld`` between two bodies is a closure
  joint (``model.loops``, docs/LOOPS.md): a ``point`` or ``weld`` loop;
- an actuator's ``armature`` and ``damping`` (MuJoCo 4) on a joint add
  ``gear^2`` times themselves to the joint's.

Refused, naming the joint: ball joints, a free joint below the world's
children. Every other element that moves the dynamics is refused or warned
about by name in :mod:`robot_dynamics.model.mjcf_checks` (other equalities,
tendons, flexes, gravcomp, springs, contact pairs, actuator dynamics: the
table in docs/MJCF.md). Mesh files are found, and missing ones skipped on
request, by :mod:`robot_dynamics.model.mjcf_meshes`.
"""
import dataclasses
import os

import numpy as np

from . import mjcf_checks as checks
from . import model as _m
from . import packed as P
from .mjcf_meshes import compile_file
from .inertia import inertia_about_origin
from .spatial import axis_angle, homogeneous
from ..errors import URDFError

MAX_BYTES = 16 * 1024 * 1024
INSTALL = "pip install mujoco (or: rosdep key python3-mujoco-pip; docs/INSTALL.md)"


def load_mjcf(source, *, max_bytes=MAX_BYTES, skip_missing_meshes=False):
    """A Model from an MJCF file path or MJCF XML text (see the module docstring).

    Args:
        source: path to an ``.xml`` MJCF file (str or os.PathLike; its
            ``<include>`` and asset files are found relative to it, as MuJoCo
            does), or the XML text (then it may reference no files).
        max_bytes: a larger file is refused (16 MiB by default).
        skip_missing_meshes: leave out the geoms whose mesh files are
            missing, with a URDFWarning naming them, when no body takes its
            inertia from them (docs/MJCF.md, "Missing mesh files"); by
            default a missing mesh file is refused by its path.

    Returns:
        Model; armature, damping and friction as MuJoCo has them.

    Raises:
        URDFError: MuJoCo is not installed, cannot compile the MJCF (its
            message is kept), a mesh file is missing (its path, as the
            user's path leads to it), or the model has an element this
            package does not model (named: docs/MJCF.md's table).

    Warns:
        URDFWarning: an element MuJoCo simulates and the model leaves out
            (named: docs/MJCF.md's table).
    """
    mujoco = _import_mujoco()
    compiled = _compile(mujoco, source, max_bytes, skip_missing_meshes)
    checks.check(mujoco, compiled)
    return _build(mujoco, compiled)


def compiled_mjcf(source, *, max_bytes=MAX_BYTES, skip_missing_meshes=False):
    """The ``mujoco.MjModel`` MuJoCo compiles from ``source`` (arguments and
    errors as :func:`load_mjcf`, without its checks of what the dynamics
    model): the geoms of robot_dynamics.contact.geometry come from it."""
    return _compile(_import_mujoco(), source, max_bytes, skip_missing_meshes)


def _import_mujoco():
    try:
        import mujoco
    except ImportError:
        raise URDFError("reading MJCF needs MuJoCo's compiler, the 'mujoco' Python package, which is not "
                        "installed: %s" % INSTALL) from None
    return mujoco


def _compile(mujoco, source, max_bytes, skip_missing_meshes):
    text = source.decode("utf-8") if isinstance(source, (bytes, bytearray)) else os.fspath(source)
    try:
        if text.lstrip().startswith("<"):
            if len(text.encode("utf-8")) > max_bytes:
                raise URDFError("MJCF is larger than max_bytes=%d bytes" % max_bytes)
            return mujoco.MjModel.from_xml_string(text)
        try:
            size = os.path.getsize(text)
        except OSError as exc:
            raise URDFError("cannot read MJCF file %r: %s" % (text, exc.strerror or exc)) from None
        if size > max_bytes:
            raise URDFError("MJCF file %r is larger than max_bytes=%d bytes" % (text, max_bytes))
        return compile_file(mujoco, text, skip_missing_meshes)
    except URDFError:
        raise
    except ValueError as exc:
        raise URDFError("MuJoCo cannot compile the MJCF: %s" % exc) from None


def _name(mujoco, m, kind, i):
    return mujoco.mj_id2name(m, kind, i) or ""


def _body_pose(m, b):
    """(4, 4) pose of MuJoCo body b's frame in its parent body's frame."""
    return homogeneous(_quat_wxyz_matrix(m.body_quat[b]), m.body_pos[b])


def _quat_wxyz_matrix(q):
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _translation(p):
    return homogeneous(np.eye(3), p)


class _Tree:
    """The Model's arrays, filled body by body in MuJoCo's (topological) order."""

    def __init__(self, mujoco, m):
        self.mujoco, self.m = mujoco, m
        self.links, self.body_of, self.pose_in_body = ["world"], {"world": -1}, {"world": np.eye(4)}
        self.inertials = [(0.0, np.zeros(3), np.zeros((3, 3)))]
        self.joints, self.rows, self.body_joint = {}, [], []
        self.root = None
        self.frame_of = {0: "world"}        # MuJoCo body id -> its link

    def add_body(self, b):
        """Add MuJoCo body ``b`` (its parent already added): its joints, link and inertia."""
        m, mj = self.m, self.mujoco
        name = _name(mj, m, mj.mjtObj.mjOBJ_BODY, b) or "body%d" % b
        parent_link = self.frame_of[int(m.body_parentid[b])]
        joints = list(range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]))
        T, link = _body_pose(m, b), parent_link     # the next frame, in the frame of ``link``
        for k, j in enumerate(joints):
            jname = _name(mj, m, mj.mjtObj.mjOBJ_JOINT, j) or "joint%d" % j
            if int(m.jnt_type[j]) == mj.mjtJoint.mjJNT_FREE:
                self._free(jname, parent_link, name, len(joints))
                T = np.eye(4)
                break
            anchor = np.array(m.jnt_pos[j], dtype=float)
            link = self._moving(j, jname, link, name if k == len(joints) - 1 else "%s__%s" % (name, jname),
                                T @ _translation(anchor) @ self._reference(j))
            T = _translation(-anchor)
        if not joints:
            self._fixed(name, parent_link, T)
        else:                                      # the body frame, in the last joint's frame
            self.pose_in_body[name] = self.pose_in_body[name] @ T
        self.frame_of[b] = name
        self._inertial(b, name)

    def _reference(self, j):
        """The joint's motion at q = 0, folded into its placement: MuJoCo moves a
        joint by qpos - qpos0, so this package's q is MuJoCo's qpos."""
        m, mj = self.m, self.mujoco
        ref = float(m.qpos0[m.jnt_qposadr[j]])
        axis = np.array(m.jnt_axis[j], dtype=float)
        if int(m.jnt_type[j]) == mj.mjtJoint.mjJNT_HINGE:
            return homogeneous(axis_angle(axis, -ref), np.zeros(3))
        return _translation(-ref * axis)

    def _moving(self, j, jname, parent_link, child, placement):
        m, mj = self.m, self.mujoco
        jtype = int(m.jnt_type[j])
        if jtype == mj.mjtJoint.mjJNT_BALL:
            raise URDFError("joint %r is a ball joint: not modelled (use three hinges)" % jname)
        if jtype == mj.mjtJoint.mjJNT_FREE:
            raise URDFError("joint %r is a free joint below the world's children: only the root may be free"
                            % jname)
        dof = int(m.jnt_dofadr[j])
        armature, damping = checks.actuator_rotor(mj, m, j)
        limited = bool(m.jnt_limited[j])
        lower, upper = (float(m.jnt_range[j, 0]), float(m.jnt_range[j, 1])) if limited else (-np.inf, np.inf)
        kind = "prismatic" if jtype == mj.mjtJoint.mjJNT_SLIDE else ("revolute" if limited else "continuous")
        axis = np.array(m.jnt_axis[j], dtype=float)
        self.joints[jname] = _m.Joint(
            name=jname, type=kind, parent=parent_link, child=child, axis=tuple(axis / np.linalg.norm(axis)),
            origin=placement, lower=lower, upper=upper, effort=self._effort(j), velocity=np.inf,
            damping=float(m.dof_damping[dof]) + damping, friction=float(m.dof_frictionloss[dof]),
            index=_m.ROOT_NQ[self.kind()] + len(self.body_joint) - self.root_nv())
        parent_body = self.body_of[parent_link]
        row = np.zeros(P.NCOL)
        row[P.PARENT] = parent_body
        row[P.JTYPE] = P.PRISMATIC if kind == "prismatic" else P.REVOLUTE
        row[P.QIDX] = len(self.body_joint)
        row[P.AXIS:P.AXIS + 3] = self.joints[jname].axis
        X = self.pose_in_body[parent_link] @ placement
        row[P.ROT0:P.ROT0 + 9] = X[:3, :3].ravel()
        row[P.POS0:P.POS0 + 3] = X[:3, 3]
        row[P.QMUL] = 1.0
        row[P.DAMPING], row[P.FRICTION] = self.joints[jname].damping, self.joints[jname].friction
        row[P.ARMATURE] = float(m.dof_armature[dof]) + armature
        self.rows.append(row)
        self.body_joint.append(jname)
        self._new_link(child, len(self.body_joint) - 1, np.eye(4))
        return child

    def _free(self, jname, parent_link, name, count):
        if parent_link != "world" or self.root is not None or count != 1:
            raise URDFError("joint %r is a free joint: only one child of the world may have one, as its "
                            "only joint (the floating base)" % jname)
        if self.body_joint:
            raise URDFError("joint %r is a free joint after other moving bodies: the floating base must be "
                            "the first body of the MJCF tree" % jname)
        self.root = ("floating", jname, name)
        self.joints[jname] = _m.Joint(name=jname, type="floating", parent="world", child=name,
                                      axis=(0.0, 0.0, 0.0), origin=np.eye(4))
        from .urdf import ROOT_AXES
        for k, (jtype, axis) in enumerate(ROOT_AXES["floating"]):
            row = np.zeros(P.NCOL)
            row[P.PARENT], row[P.JTYPE], row[P.QIDX] = k - 1, jtype, k
            row[P.AXIS:P.AXIS + 3] = axis
            row[P.ROT0:P.ROT0 + 9] = np.eye(3).ravel()
            row[P.QMUL] = 1.0
            self.rows.append(row)
            self.body_joint.append(jname)
        self._new_link(name, len(self.rows) - 1, np.eye(4))

    def kind(self):
        return None if self.root is None else "floating"

    def root_nv(self):
        return _m.ROOT_NV[self.kind()]

    def _fixed(self, name, parent_link, T):
        self.joints["%s__weld" % name] = _m.Joint(name="%s__weld" % name, type="fixed", parent=parent_link,
                                                  child=name, axis=(1.0, 0.0, 0.0), origin=T)
        self._new_link(name, self.body_of[parent_link], self.pose_in_body[parent_link] @ T)

    def _new_link(self, name, body, pose):
        if name in self.body_of:
            raise URDFError("MJCF: two frames named %r (a body named like another body's joint frame)" % name)
        self.links.append(name)
        self.inertials.append((0.0, np.zeros(3), np.zeros((3, 3))))
        self.body_of[name], self.pose_in_body[name] = body, pose

    def _inertial(self, b, name):
        m = self.m
        mass = float(m.body_mass[b])
        R = _quat_wxyz_matrix(m.body_iquat[b])
        Ic = R @ np.diag(m.body_inertia[b]) @ R.T
        com = np.array(m.body_ipos[b], dtype=float)
        self.inertials[self.links.index(name)] = (mass, com, Ic)

    def _effort(self, j):
        """Effort limit of joint j [N m or N]: its actuator-force range, else the tightest
        ``forcerange x gear`` of the force-limited motors on it, else none (inf)."""
        m, mj = self.m, self.mujoco
        if m.jnt_actfrclimited[j]:
            return float(np.max(np.abs(m.jnt_actfrcrange[j])))
        limits = [float(np.max(np.abs(m.actuator_forcerange[a])) * abs(m.actuator_gear[a, 0]))
                  for a in range(m.nu)
                  if m.actuator_trntype[a] == mj.mjtTrn.mjTRN_JOINT and m.actuator_trnid[a, 0] == j
                  and m.actuator_forcelimited[a]]
        return min(limits) if limits else np.inf


def _build(mujoco, m):
    tree = _Tree(mujoco, m)
    for b in range(1, m.nbody):
        tree.add_body(b)
    names = _couple(tree, checks.joint_couplings(mujoco, m))
    nb = len(tree.rows)
    data = np.zeros((nb + 1, P.NCOL))
    if nb:
        data[:nb] = tree.rows
    for name, (mass, c, Ic) in zip(tree.links, tree.inertials):
        b = tree.body_of[name]
        if b >= 0 and (mass != 0.0 or np.any(Ic)):
            _m.add_body_inertia(data[b], tree.pose_in_body[name], mass, mass * c, inertia_about_origin(mass, c, Ic))
    gravity = np.zeros(3) if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY else m.opt.gravity
    model = _m.Model(name=_model_name(m), base_link="world", link_names=tree.links, joints=tree.joints,
                     joint_names=names, packed=data, body_joint=tree.body_joint,
                     link_body=[tree.body_of[n] for n in tree.links],
                     link_placement=[tree.pose_in_body[n] for n in tree.links],
                     link_inertials=tuple(zip(*tree.inertials)), gravity=np.array(gravity, dtype=float),
                     root_joint=tree.kind())
    loops = checks.equality_loops(mujoco, m, tree.frame_of)
    return model.with_loops(loops) if loops else model


def _couple(tree, mimics):
    """The independent joints' names, after the coupled joints' bodies are moved by
    their sources' coordinates (``{joint: (source, multiplier, offset)}``, as a
    URDF ``<mimic>``: q_joint = multiplier q_source + offset)."""
    from .urdf import _resolve_mimics
    nvr = tree.root_nv()
    moving = tree.body_joint[nvr:]
    for jname, mimic in mimics.items():
        tree.joints[jname] = dataclasses.replace(tree.joints[jname], mimic=mimic)
    resolved = _resolve_mimics(tree.joints, moving)
    independent = [n for n in moving if resolved[n][0] == n]
    q_index = {n: i for i, n in enumerate(independent)}
    for b, jname in enumerate(moving, start=nvr):
        source, multiplier, offset = resolved[jname]
        row = tree.rows[b]
        row[P.QIDX], row[P.QMUL], row[P.QOFF] = nvr + q_index[source], multiplier, offset
        index = _m.ROOT_NQ[tree.kind()] + q_index[jname] if jname in q_index else None
        tree.joints[jname] = dataclasses.replace(tree.joints[jname], index=index)
    return independent


def _model_name(m):
    return bytes(m.names).split(b"\0", 1)[0].decode("utf-8", "replace")
