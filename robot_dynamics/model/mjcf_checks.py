"""What an MJCF holds beyond the tree :mod:`robot_dynamics.model.mjcf` reads:
each element mapped, refused or warned about, by name (docs/MJCF.md,
"Every element that moves the dynamics").

Read from the compiled ``mujoco.MjModel`` ``m``:

- :func:`check` refuses (:class:`~robot_dynamics.errors.URDFError`) what
  would leave a force or a motion out of the model, and warns
  (:class:`~robot_dynamics.errors.URDFWarning`) about what MuJoCo adds
  around the arm but the arm's own torques do not hold;
- :func:`joint_couplings` maps the equality constraints that are exactly a
  mimic joint, ``q1 = offset + multiplier q2``, onto the model's coupling;
- :func:`equality_loops` maps ``connect`` and ``weld`` between bodies onto
  the closure joints of docs/LOOPS.md (``point`` and ``weld`` loops);
- :func:`actuator_rotor` is what the actuators that drive a joint add to
  it (MuJoCo 4's actuator ``armature`` and ``damping``, times ``gear^2``).

Positions here are this package's q, which is MuJoCo's ``qpos`` (the
joint's ``ref`` is folded into its placement).
"""
import warnings

import numpy as np

from ..errors import URDFError, URDFWarning
from .loops import Loop
from .spatial import homogeneous

# Warnings point at the caller of rd.load_mjcf: load_mjcf -> check -> _one_check -> _warn.
_STACK = 5


def check(mujoco, m):
    """Refuse, then warn about, every element of ``m`` that the model leaves out.

    Raises:
        URDFError: a flex, an equality constraint that is no mimic coupling
            or loop (connect or weld between sites, tendon, distance, a joint
            polynomial), a joint
            coupled twice, a tendon with a passive force, an actuator
            ``armature``/``damping`` on a transmission that is no joint; the
            message names the element and its bodies or joints.
    """
    _refuse_flexes(mujoco, m)
    _refuse_equalities(mujoco, m)
    _refuse_tendon_forces(mujoco, m)
    _refuse_actuator_rotors(mujoco, m)
    _warn_inactive_equalities(mujoco, m)
    _warn_tendons(mujoco, m)
    _warn_springs(mujoco, m)
    _warn_gravcomp(mujoco, m)
    _warn_contact_pairs(mujoco, m)
    _warn_actuators(mujoco, m)
    _warn_fluid(m)


def name(mujoco, m, kind, i):
    """MuJoCo's name of object ``i`` of ``kind`` (a ``mjtObj`` member's last word,
    e.g. ``"JOINT"``), else ``"<kind><i>"`` (``"joint3"``: the model's name of an
    unnamed joint or body)."""
    found = mujoco.mj_id2name(m, getattr(mujoco.mjtObj, "mjOBJ_" + kind), int(i))
    return found or "%s%d" % (kind.lower(), i)


def _warn(message):
    warnings.warn(message, URDFWarning, stacklevel=_STACK)


# --- equality constraints ---------------------------------------------------------------------------

def _equality(mujoco, m, e):
    """``"equality 'name' (weld between bodies 'a' and 'b')"``: what a message calls equality e."""
    kind = mujoco.mjtEq(int(m.eq_type[e])).name[len("mjEQ_"):].lower()
    objtype = _EQ_OBJECTS.get(kind) or mujoco.mjtObj(int(m.eq_objtype[e])).name[len("mjOBJ_"):]
    if objtype == "UNKNOWN":
        objtype = "BODY"                       # connect and weld name bodies unless they name sites
    objects = [name(mujoco, m, objtype, i) for i in (m.eq_obj1id[e], m.eq_obj2id[e]) if i >= 0]
    between = " and ".join("%r" % o for o in objects)
    return "MJCF equality %r (%s on %s %s)" % (
        name(mujoco, m, "EQUALITY", e), kind, objtype.lower() + ("s" if len(objects) > 1 else ""), between)


# What each kind of equality constrains (connect and weld: eq_objtype says body or site).
_EQ_OBJECTS = {"joint": "JOINT", "tendon": "TENDON", "flex": "FLEX", "flexvert": "FLEX", "flexstrain": "FLEX",
               "distance": "GEOM"}


def _refuse_equalities(mujoco, m):
    coupled = {}
    for e in range(m.neq):
        if not m.eq_active0[e]:
            continue
        what = _equality(mujoco, m, e)
        kind = int(m.eq_type[e])
        if kind in (mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD):
            if int(m.eq_objtype[e]) == mujoco.mjtObj.mjOBJ_SITE:
                raise URDFError("%s: a loop between sites is not read; name the bodies (body1, body2, anchor) or "
                                "declare the loop with model.with_loops (docs/LOOPS.md)" % what)
            continue
        if kind != mujoco.mjtEq.mjEQ_JOINT:
            raise URDFError("%s: only joint equalities that are a mimic coupling (q1 = c0 + c1 q2) are "
                            "modelled" % what)
        problem = _mimic_problem(m, e)
        if problem:
            raise URDFError("%s: %s; only q1 = c0 + c1 q2 with c1 != 0 (a mimic joint) is modelled"
                            % (what, problem))
        joint = name(mujoco, m, "JOINT", m.eq_obj1id[e])
        if joint in coupled:
            raise URDFError("%s couples joint %r a second time (%s did already): a joint follows one source"
                            % (what, joint, coupled[joint]))
        coupled[joint] = what


def _mimic_problem(m, e):
    c = m.eq_data[e, :5]
    shown = _numbers(c)
    if m.eq_obj2id[e] < 0:
        return "it holds joint 1 at a constant, polycoef %s (a locked joint: make it a body without joint)" % shown
    if np.any(c[2:] != 0.0):
        return "its polycoef %s has terms of degree 2 and more" % shown
    if c[1] == 0.0:
        return "its polycoef %s has c1 = 0 (joint 1 held at a constant)" % shown
    return None


def joint_couplings(mujoco, m):
    """{joint1: (joint2, multiplier, offset)} of the active joint equalities (each
    already checked by :func:`check` to be a mimic coupling).

    MuJoCo's constraint is ``y - y0 = c0 + c1 (x - x0)`` (y joint1, x joint2,
    ``y0``, ``x0`` their ``qpos0``); in q (= qpos) that is
    ``y = c1 x + (c0 + y0 - c1 x0)``: multiplier ``c1``, offset
    ``c0 + y0 - c1 x0`` [rad or m].
    """
    out = {}
    for e in range(m.neq):
        if m.eq_active0[e] and int(m.eq_type[e]) == mujoco.mjtEq.mjEQ_JOINT:
            j1, j2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            c0, c1 = float(m.eq_data[e, 0]), float(m.eq_data[e, 1])
            y0, x0 = float(m.qpos0[m.jnt_qposadr[j1]]), float(m.qpos0[m.jnt_qposadr[j2]])
            out[name(mujoco, m, "JOINT", j1)] = (name(mujoco, m, "JOINT", j2), c1, c0 + y0 - c1 * x0)
    return out


def equality_loops(mujoco, m, link_of):
    """The active ``connect`` and ``weld`` equalities between bodies, as closure
    joints (:class:`~robot_dynamics.model.loops.Loop`, parent body1, child
    body2; ``link_of`` maps a MuJoCo body id to its link's name).

    MuJoCo's compiled ``eq_data``: a connect keeps the point ``data[0:3]`` of
    body1 on the point ``data[3:6]`` of body2 (a ``point`` loop, frames A and
    B at those points); a weld keeps body2's point ``data[0:3]`` on body1's
    point ``data[3:6]`` with body2's orientation body1's times the quaternion
    ``data[6:10]`` (w, x, y, z) (a ``weld`` loop, A rotated by that
    quaternion). Each loop is named after its equality (``equality<i>``
    without a name).
    """
    out = []
    for e in range(m.neq):
        kind = int(m.eq_type[e])
        if not m.eq_active0[e] or kind not in (mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD):
            continue
        data = np.array(m.eq_data[e], dtype=float)
        label = name(mujoco, m, "EQUALITY", e)
        parent, child = link_of[int(m.eq_obj1id[e])], link_of[int(m.eq_obj2id[e])]
        if kind == mujoco.mjtEq.mjEQ_CONNECT:
            out.append(Loop(label, "point", parent, child, homogeneous(np.eye(3), data[0:3]),
                            homogeneous(np.eye(3), data[3:6])))
        else:
            out.append(Loop(label, "weld", parent, child, homogeneous(_quat_matrix(mujoco, data[6:10]), data[3:6]),
                            homogeneous(np.eye(3), data[0:3])))
    return out


def _quat_matrix(mujoco, q):
    """(3, 3) rotation of the quaternion q = (w, x, y, z), by MuJoCo's own mju_quat2Mat."""
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, np.asarray(q, dtype=float) / np.linalg.norm(q))
    return R.reshape(3, 3)


def _warn_inactive_equalities(mujoco, m):
    for e in range(m.neq):
        if not m.eq_active0[e]:
            _warn("%s is inactive at the start (active=\"false\"): the model leaves it out; if a controller "
                  "activates it in MuJoCo, the model does not follow" % _equality(mujoco, m, e))


# --- tendons, flexes ---------------------------------------------------------------------------------

def _tendon_forces(m, t):
    """The passive forces tendon t applies: [(attribute, value)] of the nonzero ones."""
    found = [(attr, float(getattr(m, "tendon_" + attr)[t]))
             for attr in ("stiffness", "damping", "frictionloss", "armature") if hasattr(m, "tendon_" + attr)]
    for attr in ("stiffnesspoly", "dampingpoly"):          # MuJoCo 4's polynomial terms
        values = getattr(m, "tendon_" + attr, None)
        if values is not None and np.any(values[t] != 0.0):
            found.append((attr, _numbers(values[t])))
    return [(a, v) for a, v in found if np.any(np.asarray(v) != 0.0)]


def _tendon(mujoco, m, t):
    """``"MJCF tendon 'split' (fixed, on joints 'a', 'b')"``: what a message calls tendon t."""
    wraps = range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t])
    joints = ["%r" % name(mujoco, m, "JOINT", m.wrap_objid[w]) for w in wraps
              if int(m.wrap_type[w]) == mujoco.mjtWrap.mjWRAP_JOINT]
    kind = "fixed" if len(joints) == len(wraps) else "spatial"
    return "MJCF tendon %r (%s%s)" % (name(mujoco, m, "TENDON", t), kind,
                                      ", on joints " + ", ".join(joints) if joints else "")


def _refuse_tendon_forces(mujoco, m):
    for t in range(m.ntendon):
        forces = _tendon_forces(m, t)
        if forces:
            raise URDFError("%s applies a passive force (%s) that the model would leave out of every torque: "
                            "tendons are not modelled" % (_tendon(mujoco, m, t),
                                                           ", ".join("%s %s" % f for f in forces)))


def _warn_tendons(mujoco, m):
    for t in range(m.ntendon):
        _warn("%s is not modelled: it applies no passive force, but its length limit and the actuators that "
              "pull it are left out" % _tendon(mujoco, m, t))


def _refuse_flexes(mujoco, m):
    if m.nflex:
        raise URDFError("MJCF flex(es) %s: deformable bodies are not modelled"
                        % ", ".join("%r" % name(mujoco, m, "FLEX", f) for f in range(m.nflex)))


# --- joints and bodies -------------------------------------------------------------------------------

def _warn_springs(mujoco, m):
    for j in range(m.njnt):
        if int(m.jnt_type[j]) not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            continue
        jname = name(mujoco, m, "JOINT", j)
        poly = getattr(m, "jnt_stiffnesspoly", None)          # MuJoCo 4: the spring's polynomial terms
        if m.jnt_stiffness[j] != 0.0 or (poly is not None and np.any(poly[j] != 0.0)):
            _warn("MJCF joint %r has stiffness %g%s (spring reference springref %g): joint springs are not "
                  "modelled, the model leaves MuJoCo's passive torque -stiffness (q - springref) out"
                  % (jname, m.jnt_stiffness[j], "" if poly is None or not np.any(poly[j]) else
                     " and polynomial terms %s" % _numbers(poly[j]), m.qpos_spring[m.jnt_qposadr[j]]))
        dof = int(m.jnt_dofadr[j])
        poly = getattr(m, "dof_dampingpoly", None)            # MuJoCo 4: damping's polynomial terms
        if poly is not None and np.any(poly[dof] != 0.0):
            _warn("MJCF joint %r has nonlinear damping terms %s: only the linear damping %g is modelled"
                  % (jname, _numbers(poly[dof]), m.dof_damping[dof]))


def _numbers(values):
    return "'%s'" % " ".join("%g" % v for v in values)


def _warn_gravcomp(mujoco, m):
    bodies = [b for b in range(1, m.nbody) if m.body_gravcomp[b] != 0.0]
    if not bodies:
        return
    listed = ", ".join("%r (gravcomp %g)" % (name(mujoco, m, "BODY", b), m.body_gravcomp[b]) for b in bodies)
    _warn("MJCF bodies %s: MuJoCo pushes each up with gravcomp x its weight at its centre of mass (gravity "
          "compensation); the model has no such force, so its torques hold the full weight: fed to that MuJoCo "
          "model they lift those bodies" % listed)


def _warn_contact_pairs(mujoco, m):
    if m.npair:
        pairs = ", ".join("%r-%r" % (name(mujoco, m, "GEOM", m.pair_geom1[p]), name(mujoco, m, "GEOM", m.pair_geom2[p]))
                          for p in range(m.npair))
        _warn("MJCF contact pair(s) %s: contacts are not simulated, the model leaves their forces out" % pairs)


def _warn_fluid(m):
    if m.opt.density != 0.0 or m.opt.viscosity != 0.0:
        _warn("MJCF option density %g, viscosity %g: MuJoCo's fluid (drag and lift) forces are not modelled"
              % (m.opt.density, m.opt.viscosity))


# --- actuators ---------------------------------------------------------------------------------------

def _on_joint(mujoco, m, a):
    return int(m.actuator_trntype[a]) in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT)


def _rotor(m, a):
    """(armature, damping) of actuator a, zeros before MuJoCo 4."""
    return tuple(float(getattr(m, "actuator_" + attr, np.zeros(m.nu))[a]) for attr in ("armature", "damping"))


def actuator_rotor(mujoco, m, j):
    """(armature, damping) the actuators on joint ``j`` add to it: each one's
    ``armature`` and ``damping`` times ``gear^2`` (MuJoCo 4's actuator rotor,
    reflected through the gear) [kg m^2, N m s/rad; kg, N s/m for a slide]."""
    armature = damping = 0.0
    for a in range(m.nu):
        if _on_joint(mujoco, m, a) and m.actuator_trnid[a, 0] == j:
            gear2 = float(m.actuator_gear[a, 0]) ** 2
            a_arm, a_damp = _rotor(m, a)
            armature, damping = armature + a_arm * gear2, damping + a_damp * gear2
    return armature, damping


def _trn(mujoco, m, a):
    return mujoco.mjtTrn(int(m.actuator_trntype[a])).name[len("mjTRN_"):].lower()


def _refuse_actuator_rotors(mujoco, m):
    for a in range(m.nu):
        if not _on_joint(mujoco, m, a) and any(_rotor(m, a)):
            raise URDFError("MJCF actuator %r drives a %s and has armature/damping %s: an actuator's rotor is "
                            "modelled on a joint only" % (name(mujoco, m, "ACTUATOR", a), _trn(mujoco, m, a),
                                                          list(_rotor(m, a))))


def _warn_actuators(mujoco, m):
    for a in range(m.nu):
        aname = name(mujoco, m, "ACTUATOR", a)
        if not _on_joint(mujoco, m, a):
            _warn("MJCF actuator %r drives a %s, not a joint: not read (its force range is no joint's effort "
                  "limit)" % (aname, _trn(mujoco, m, a)))
        dyntype = int(m.actuator_dyntype[a])
        if dyntype != mujoco.mjtDyn.mjDYN_NONE:
            _warn("MJCF actuator %r has dyntype %s: its activation dynamics (the lag from control to force) are "
                  "not modelled; the model's torques are the joint torques themselves"
                  % (aname, mujoco.mjtDyn(dyntype).name[len("mjDYN_"):].lower()))
        delay = getattr(m, "actuator_delay", None)          # MuJoCo 4
        if delay is not None and np.any(delay[a] != 0.0):
            _warn("MJCF actuator %r has a delay %s s: not modelled" % (aname, _numbers(np.atleast_1d(delay[a]))))
