"""Frame kinematics in the generated C: the pose, the Jacobian and ``Jdot qd``
of every link frame (``NAME_frame_pose``, ``NAME_frame_jacobian``,
``NAME_frame_jdot_qd``; docs/CODEGEN.md, "Task space").

Frame ``l`` is ``model.link_names[l]``, fixed to body ``model.link_body[l]``
at ``model.link_placement[l]`` (-1: the base, or the world of a moving root).
Conventions (Pinocchio's ``LOCAL_WORLD_ALIGNED``, as the library's
``rd.jacobian`` and ``rd.jacobian_derivative_times_qd``): everything in the
axes of the base frame (the world frame of a floating or planar root), at
the frame's origin; rows ``[v; w]``, linear first.

- Pose: ``R_i = R_p R0_i Rot_i(q_i)``, ``o_i = o_p + R_p (p0_i + R0_i a_i q_i)``
  along the path from the root (the root's ``(R, p)`` from q on a moving root,
  as :func:`robot_dynamics.model.configuration.base_pose`), then the link's
  placement in its body.
- Jacobian (Handbook of Robotics, sec. 2.8.1): column of joint j on the path,
  axis ``z_j = R_p R0_j a_j`` in the base frame: ``[z_j x (p - o_j); z_j]``
  (revolute), ``[z_j; 0]`` (prismatic), times the mimic multiplier, added into
  the column of its coordinate.
- ``Jdot qd``: the classical acceleration of the frame's origin at qdd = 0
  (Pinocchio's ``getFrameClassicalAcceleration`` with a = 0). The forward pass
  of the RNEA (Featherstone Table 5.1) without gravity gives body i's spatial
  velocity ``v_i = [w; u]`` and acceleration ``a_i = [wd; ud]`` in its frame;
  at the point x: ``[ud + wd x x + w x (u + w x x); wd]``, turned into the base
  frame by ``R_i``. A moving root's chain runs at ``qdd_root = -b(v)``
  (:func:`robot_dynamics.codegen.algorithms.root_bias`), as the 6-DOF joint has
  no velocity product of its own.

Each function computes every body's part once, straight-line, then a
``switch`` on the frame index holds one short case per frame (its
placement, its path's Jacobian columns): a fixed amount of arithmetic per
call, code that grows with the bodies plus the frames' path lengths.
"""
from . import algorithms as A
from .expr import ONE, ZERO, Emitter, add, call, const, mul, neg, sub
from .literals import c_string, comment_text
from .spatial import X_motion, constant_matrix, constants, crm, cross, matmul, matvec

SIGNATURES = {"pose": "const double *q, int frame, double *p, double *R",
              "jacobian": "const double *q, int frame, double *J",
              "jdot_qd": "const double *q, const double *qd, int frame, double *a"}
WHAT = {"pose": "the pose of link frame `frame` (NAME_frame_names): its origin p (3) [m] and rotation R "
                "(3 x 3, row-major; columns: the frame's axes) in the base frame",
        "jacobian": "the Jacobian of link frame `frame`, 6 x NV, row-major, rows [v; w]: the velocity of its "
                    "origin and its angular velocity in base-frame axes (Pinocchio LOCAL_WORLD_ALIGNED)",
        "jdot_qd": "Jdot qd of link frame `frame` (6): the classical acceleration [a; alpha] of its origin at "
                   "qdd = 0, base-frame axes (Pinocchio getFrameClassicalAcceleration, LOCAL_WORLD_ALIGNED)"}
REFERENCE = {"pose": "forward kinematics along the frame's path",
             "jacobian": "geometric Jacobian, Springer Handbook of Robotics, sec. 2.8.1",
             "jdot_qd": "the forward pass of the RNEA at qdd = 0 (Featherstone, Table 5.1) and the classical "
                        "acceleration of a point, a = ud + wd x p + w x (u + w x p)"}
RETURNS = "returns 0, or -1 for a frame outside 0 .. NAME_NFRAMES - 1 (outputs untouched)"


def path(model, i):
    """The bodies from the root to body i (i included), root first."""
    out = []
    while i >= 0:
        out.append(i)
        i = int(model.parent[i])
    return out[::-1]


def root_pose(model, em, q):
    """(R 3x3, p 3) world <- base of the root as expressions: the identity on a
    fixed base; on a moving root as :func:`robot_dynamics.model.configuration.base_pose`
    (the normalised quaternion at q[3:7], or the planar angle q[2]), then the
    root placement."""
    if model.root_joint is None:
        return constant_matrix([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), [ZERO] * 3
    if model.root_joint == "floating":
        R, p = A.base_rotation(em, q), list(q[:3])
    else:
        s, c = em.let(call("sin", q[2])), em.let(call("cos", q[2]))
        R, p = [[c, neg(s), ZERO], [s, c, ZERO], [ZERO, ZERO, ONE]], [q[0], q[1], ZERO]
    T = model.root_placement
    R0 = constant_matrix(T[:3, :3])
    return [em.lets(r) for r in matmul(R0, R)], em.lets([add(x, y) for x, y in zip(matvec(R0, p), constants(T[:3, 3]))])


class Tree:
    """Every body's frame in the base frame: ``R[j]``, ``o[j]``, and ``z[j]``, its joint
    axis in the base frame. Names nothing the function does not use (the emitter
    drops it)."""

    def __init__(self, model, em, q):
        self.J = A.joints(model, em, A.kernel_positions(model, q))
        self.R, self.o, self.z = {}, {}, {}
        self.R[-1], self.o[-1] = root_pose(model, em, q)
        for j in range(model.nb):
            Jj, p = self.J[j], int(model.parent[j])
            Rp, op = self.R[p], self.o[p]
            RR0 = [em.lets(r) for r in matmul(Rp, Jj.R0)]                            # R_p R0_j
            self.z[j] = em.lets(matvec(RR0, Jj.a))                                     # z_j = R_p R0_j a_j
            if Jj.prismatic:
                self.R[j] = RR0                                                        # R_j = R_p R0_j
                self.o[j] = em.lets([add(x, y, w) for x, y, w in zip(op, matvec(Rp, Jj.p0), matvec(RR0, Jj.d))])
            else:
                self.R[j] = [em.lets(r) for r in matmul(RR0, Jj.Rot)]                  # R_j = R_p R0_j Rot_j
                self.o[j] = em.lets([add(x, y) for x, y in zip(op, matvec(Rp, Jj.p0))])


def motion(model, em, J, qd):
    """(v, a): every body's spatial velocity and acceleration at qdd = 0, no gravity, in
    its own frame (the RNEA's forward pass, Featherstone Table 5.1; a moving root's chain
    at qdd_root = -b(v))."""
    qdd = A.zeros(model.nv)
    if model.root_nv:
        qdd = A.shifted(model, em, qdd, A.root_bias(model, em, qd))                 # qdd_root = -b(v)
    v, a = {-1: A.zeros(6)}, {-1: A.zeros(6)}                                      # a_0 = 0: no gravity
    for j in range(model.nb):
        Jj, p = J[j], int(model.parent[j])
        vJ = [mul(s, A.coordinate(model, j, qd)) for s in Jj.S]                     # vJ = S qd_j
        v[j] = em.lets([add(x, y) for x, y in zip(X_motion(Jj, v[p], em.lets), vJ)])   # v_j = X_j v_p + vJ
        a[j] = em.lets([add(x, mul(s, A.coordinate(model, j, qdd)), z)              # a_j = X_j a_p + S qdd_j + v_j x vJ
                        for x, s, z in zip(X_motion(Jj, a[p], em.lets), Jj.S, crm(v[j], vJ))])
    return v, a


def frame_pose(model, em, tree, l):
    """(R 3x3, p 3) of link frame l in the base frame: its body's frame, then its placement X."""
    i, X = int(model.link_body[l]), model.link_placement[l]
    if i < 0:
        return constant_matrix(X[:3, :3]), constants(X[:3, 3])
    R = [em.lets(r) for r in matmul(tree.R[i], constant_matrix(X[:3, :3]))]
    p = em.lets([add(x, y) for x, y in zip(tree.o[i], matvec(tree.R[i], constants(X[:3, 3])))])
    return R, p


def frame_jacobian(model, em, tree, l):
    """{(row, column): expression} of the nonzero entries of link frame l's Jacobian."""
    i = int(model.link_body[l])
    if i < 0:
        return {}
    p = em.lets([add(x, y) for x, y in zip(tree.o[i], matvec(tree.R[i], constants(model.link_placement[l][:3, 3])))])
    J = {}
    for j in path(model, i):
        z, m, k = tree.z[j], const(model.body_multiplier[j]), int(model.body_coordinate[j])
        if tree.J[j].prismatic:
            column = z + [ZERO] * 3                                                 # [z_j; 0]
        else:
            column = cross(z, [sub(x, y) for x, y in zip(p, tree.o[j])]) + z        # [z_j x (p - o_j); z_j]
        for r, e in enumerate(column):
            J[r, k] = add(J.get((r, k), ZERO), mul(m, e))
    return J


def frame_jdot_qd(model, em, tree, v, a, l):
    """(6,) expressions of link frame l's Jdot qd: at the frame's origin x (body i's
    coordinates) ``[ud + wd x x + w x (u + w x x); wd]``, turned into the base frame."""
    i, X = int(model.link_body[l]), model.link_placement[l]
    if i < 0:
        return [ZERO] * 6
    w, u, wd, ud = v[i][:3], v[i][3:], a[i][:3], a[i][3:]
    x = constants(X[:3, 3])
    ux = em.lets([add(s, t) for s, t in zip(u, cross(w, x))])                      # velocity of the point
    acc = em.lets([add(s, t, r) for s, t, r in zip(ud, cross(wd, x), cross(w, ux))])
    return em.lets(matvec(tree.R[i], acc)) + em.lets(matvec(tree.R[i], wd))


# --- the C text ------------------------------------------------------------------------------
def declarations(P):
    """The header's lines: the frame count, the names, the three functions."""
    return ["", "/* Task space: link frame k is %s_frame_names[k]; %s. */" % (P, RETURNS.replace("NAME", P))] + [
        line for name in ("pose", "jacobian", "jdot_qd")
        for line in ("/* %s */" % WHAT[name].replace("NAME", P),
                     "int %s_frame_%s(%s);" % (P, name, SIGNATURES[name]))]


def header_constants(model, P):
    return ["#define %s_NFRAMES %d   /* link frames */" % (P, len(model.link_names)),
            "extern const char *const %s_frame_names[%s_NFRAMES];" % (P, P)]


def source(model, P, origin):
    """The C lines of the frame names and the three functions."""
    lines = ["const char *const %s_frame_names[%s_NFRAMES] = {%s};" % (
        P, P, ", ".join(c_string(n) for n in model.link_names)), ""]
    for name in ("pose", "jacobian", "jdot_qd"):
        params = [a.split("*")[-1].split()[-1] for a in SIGNATURES[name].split(",")]
        lines += ["/* %s_frame_%s: %s; %s." % (P, name, WHAT[name].replace("NAME", P), RETURNS.replace("NAME", P)),
                  " * %s. %s. */" % (REFERENCE[name], origin),
                  "int %s_frame_%s(%s)" % (P, name, SIGNATURES[name]), "{",
                  "    " + " ".join("(void)%s;" % x for x in params if x != "frame"),
                  "    if (frame < 0 || frame >= %s_NFRAMES)" % P, "        return -1;",
                  _body(model, name), "}", ""]
    return lines


def _body(model, name):
    """Every body's kinematics (straight-line), then a switch with one case per frame."""
    em = Emitter()
    q = A.inputs("q", model.nq)
    tree = Tree(model, em, q)
    if name == "jdot_qd":
        v, a = motion(model, em, tree.J, A.inputs("qd", model.nv))
    if name == "jacobian":                                  # straight-line, as every function
        for k in range(6 * model.nv):
            em.line("    J[%d] = 0.0;" % k)
    em.line("    switch (frame) {")
    em.indent = "        "
    for l, link in enumerate(model.link_names):
        em.line("    case %d: {   /* %s */" % (l, comment_text(link)))
        if name == "pose":
            R, p = frame_pose(model, em, tree, l)
            for r in range(3):
                em.assign("p[%d]" % r, p[r])
                for c in range(3):
                    em.assign("R[%d]" % (3 * r + c), R[r][c])
        elif name == "jacobian":
            for (r, k), e in sorted(frame_jacobian(model, em, tree, l).items()):
                if e.value != 0.0:
                    em.assign("J[%d]" % (r * model.nv + k), e)
        else:
            for r, e in enumerate(frame_jdot_qd(model, em, tree, v, a, l)):
                em.assign("a[%d]" % r, e)
        em.line("        return 0;")
        em.line("    }")
    em.line("    default:")
    em.line("        return -1;")
    em.line("    }")
    return em.body()
