"""Closed-form equations of motion by the Lagrange-Euler route (sympy).

Craig, *Introduction to Robotics*, sec. 6.9 (Lagrangian formulation: the
kinetic energy as the quadratic form of the mass matrix, eq. 6.71; the
potential energy, eqs. 6.73-6.74; the Euler-Lagrange equations, eq. 6.76).
The energies of the robot are written in closed form,

    T = 1/2 qd^T M(q) qd,  M = sum_i  m_i Jv_i^T Jv_i + Jw_i^T I_i Jw_i
                                     + Jw_i^T [h_i x] Jv_i + (Jw_i^T [h_i x] Jv_i)^T
                                 + diag(I_a)
    U = -sum_i g . (m_i p_i + R_i h_i)

(``I_a = model.armature``, the rotors' reflected inertia, constant: it adds
the term ``I_a qdd`` to tau and nothing to V; body-frame Jacobians Jv_i,
Jw_i of each body origin, first moment
``h_i = m_i c_i`` and inertia ``I_i`` about the body origin, all in body
coordinates; ``p_i``, ``R_i`` the body pose in the base frame), and the
Euler-Lagrange equations ``d/dt dL/dqd - dL/dq = tau`` of ``L = T - U``
are evaluated in closed form: with ``T`` quadratic in qd they are

    tau = M(q) qdd + V(q, qd) + G(q),
    V_i = sum_jk c_ijk qd_j qd_k,  c_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i),
    G_i = dU/dq_i

(Christoffel symbols of the first kind: what eq. 6.76 gives for a kinetic
energy quadratic in qd). The bodies are those of the numeric
:class:`~robot_dynamics.Model` (:mod:`.bodies`), with exact numbers
(:mod:`.exact`); the printers are in :mod:`.printers`.

Limits (wall time of :func:`derive`, measured on a shared 2-core machine,
sympy 1.14): the 1-3 joint textbook robots take 0.01-0.03 s (about 0.1 s
with a dozen parameters as symbols); random 3-4 joint trees with skewed axes
2-8 s; the 6-joint UR5 (axes parallel or perpendicular, diagonal inertias)
5-7 s; the Panda's first five joints 13 s and first six 80 s (link offsets
and full inertia tensors everywhere; the text of the result is 0.5 MB).
The size of the expressions, hence the time, grows steeply with the number
of joints (V has n^3 Christoffel terms, each a derivative of a long
trigonometric sum), so :func:`derive` refuses models with more than
``max_dof`` joints (6 by default) with a message saying so.
"""
import re
import time
import types
from dataclasses import dataclass, field
from typing import Dict, Tuple

import sympy as sp

from .bodies import symbolic_bodies
from .exact import axis_rotation, exact, reduce_trig, skew, tidy
from .printers import as_latex, as_python, as_text
from ..errors import InputError
from ..algorithms.floating import require_fixed

MAX_DOF = 6                  # default limit of derive(); see the module docstring for timings


@dataclass
class Equations:
    """Closed-form ``tau = M(q) qdd + V(q, qd) + G(q)`` of a robot.

    Attributes (sympy objects, exact rational numbers):

    - ``q``, ``qd``, ``qdd``: tuples of the joint symbols ``q1..qn``,
      ``qd1..qdn``, ``qdd1..qddn`` (``q_i`` is ``joint_names[i-1]``).
    - ``M`` (n, n), ``V`` (n, 1), ``G`` (n, 1): sympy Matrices.
    - ``U``: potential energy (zero at the base origin, as
      :func:`robot_dynamics.potential_energy`); ``kinetic_energy`` is
      ``1/2 qd^T M qd``.
    - ``params``: ``{Symbol: value}`` of the inertial or geometric
      parameters kept as symbols (SI units), in the order given.
    - ``joint_names``, ``robot``, ``seconds`` (derivation time).
    """
    robot: str
    joint_names: Tuple[str, ...]
    q: Tuple[sp.Symbol, ...]
    qd: Tuple[sp.Symbol, ...]
    qdd: Tuple[sp.Symbol, ...]
    M: sp.Matrix
    V: sp.Matrix
    G: sp.Matrix
    U: sp.Expr = sp.Integer(0)
    params: Dict[sp.Symbol, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def n(self):
        return len(self.q)

    @property
    def kinetic_energy(self):
        """``T = 1/2 qd^T M(q) qd`` [J]."""
        qd = sp.Matrix(self.qd)
        return sp.expand((qd.T * self.M * qd)[0] / 2)

    @property
    def tau(self):
        """(n, 1) ``M qdd + V + G``."""
        return self.M * sp.Matrix(self.qdd) + self.V + self.G

    def christoffel(self):
        """c[i][j][k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), expanded and reduced."""
        n = self.n
        dM = [self.M.diff(qk) for qk in self.q]
        return [[[reduce_trig((dM[k][i, j] + dM[j][i, k] - dM[i][j, k]) / 2) for k in range(n)]
                 for j in range(n)] for i in range(n)]

    def coriolis_matrix(self):
        """(n, n) C(q, qd) with ``C qd = V`` and ``Mdot - 2 C`` skew (C_ij = sum_k c_ijk qd_k)."""
        c = self.christoffel()
        n = self.n
        return sp.Matrix(n, n, lambda i, j: tidy(sum(c[i][j][k] * self.qd[k] for k in range(n)), self.qd))

    def configuration_space(self):
        """Craig eq. 6.63: (M, B, C, G) with ``tau = M qdd + B [qd qd] + C [qd^2] + G``.

        B is (n, n(n-1)/2), its columns for the products ``qd_j qd_k``, j < k, in
        the order (1,2), (1,3), ..., (1,n), (2,3), ...; C is (n, n) for ``qd_j^2``:
        ``B_i,jk = dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i``,
        ``C_ij = dM_ij/dq_j - 1/2 dM_jj/dq_i``.
        """
        c = self.christoffel()
        n = self.n
        pairs = [(j, k) for j in range(n) for k in range(j + 1, n)]
        B = sp.Matrix(n, len(pairs), lambda i, p: tidy(2 * c[i][pairs[p][0]][pairs[p][1]]))
        C = sp.Matrix(n, n, lambda i, j: tidy(c[i][j][j]))
        return self.M, B, C, self.G

    # -- output -------------------------------------------------------------

    def legend(self):
        """Lines naming the joint symbols and the parameters."""
        lines = ["q%d = %s" % (i + 1, name) for i, name in enumerate(self.joint_names)]
        lines += ["%s = %.6g" % (s, v) for s, v in self.params.items()]
        return lines

    def text(self, short=True, digits=6):
        """Plain text: M, V, G entries and tau, with ``c12 = cos(q1 + q2)``
        shorthand (``short``) and numbers rounded to ``digits`` significant digits."""
        return as_text(self, short=short, digits=digits)

    def latex(self, short=True, digits=6):
        """LaTeX (amsmath ``align*``) of tau, M, V and G."""
        return as_latex(self, short=short, digits=digits)

    def python(self, name=None):
        """Source of a Python module (numpy) with ``mass_matrix(q)``,
        ``velocity_terms(q, qd)``, ``gravity(q)`` and ``inverse_dynamics(q, qd, qdd)``;
        the symbolic parameters become keyword arguments with their values as defaults."""
        return as_python(self, name=name)

    def compile(self):
        """The generated Python code, executed: a namespace with its functions."""
        module = types.ModuleType("robot_dynamics_generated_%s" % re.sub(r"\W", "_", self.robot))
        exec(compile(self.python(), "<robot_dynamics.symbolic %s>" % self.robot, "exec"), module.__dict__)
        return module


def derive(model, symbols=None, *, urdf=None, max_dof=MAX_DOF):
    """Closed-form M(q), V(q, qd), G(q) of a robot by the Lagrange-Euler route.

    Args:
        model: :class:`~robot_dynamics.Model` (its gravity is used).
        symbols: optional ``{name: location}`` of parameters to keep as
            symbols instead of numbers. A location is ``(link, attr)`` with
            attr one of ``mass``, ``com_x/y/z`` (centre of mass in the link
            frame [m]), ``ixx, iyy, izz, ixy, ixz, iyz`` (inertia about the
            centre of mass in the link frame axes [kg m^2]); ``(joint, attr)``
            with attr ``x``, ``y``, ``z`` (the joint origin offset in its parent
            link frame [m], a link length); or ``"gravity"`` (the magnitude of
            ``model.gravity``). A third item, or ``"link.attr*0.5"`` in string
            form, is a factor: that parameter equals factor * symbol. A list
            of locations makes one symbol stand for several parameters (their
            values must agree). Example::

                derive(model, {"m2": ("tip", "mass"), "l1": [("joint2", "x"), ("link1", "com_x")],
                               "g": "gravity"})

        urdf: the URDF file or text the model was loaded from. Without it,
            a named link's inertial is read from its body (``body_mass``,
            ``body_com``, ``body_inertia``: what the model's dynamics use,
            payloads included), which is the link's alone only when no other
            link with mass shares the body (through fixed joints); such a
            link needs urdf=, and each link's own inertial is then the file's
            (read by :func:`robot_dynamics.load_urdf`), the model being
            checked against it.
        max_dof: refuse robots with more joints than this (see the module
            docstring for timings).

    Returns:
        :class:`Equations`.

    Raises:
        ValueError: too many joints, an unknown link, joint or attribute, a
            symbol whose locations disagree, or a URDF that does not match
            the model.
    """
    require_fixed(model, "derive")
    if model.nq == 0:
        raise InputError("%r has no moving joints: there are no equations of motion to derive" % model.name)
    if model.nq > max_dof:
        raise InputError("symbolic derivation is limited to %d joints and %r has %d: the expressions grow "
                         "steeply with the number of joints (a 6-joint arm takes 5 s to a few minutes, "
                         "depending on its geometry); pass max_dof=%d (--max-dof on the command line) to try anyway"
                         % (max_dof, model.name, model.nq, model.nq))
    t0 = time.perf_counter()
    bodies, g, params = symbolic_bodies(model, symbols, urdf)
    n = model.nq
    q = sp.symbols("q1:%d" % (n + 1))
    qd = sp.symbols("qd1:%d" % (n + 1))
    qdd = sp.symbols("qdd1:%d" % (n + 1))
    M, U = _energies(bodies, g, q, n)
    M += sp.diag(*[exact(a) for a in model.armature])   # the rotors: T gains 1/2 I_a qd^2, tau a term I_a qdd
    M, U = M.applyfunc(tidy), tidy(U)              # joint sums collected first: shorter derivatives
    G = sp.Matrix([sp.diff(U, qk) for qk in q])   # G_i = dU/dq_i
    eq = Equations(robot=model.name, joint_names=model.joint_names, q=q, qd=qd, qdd=qdd,
                   M=M, V=sp.zeros(n, 1), G=G.applyfunc(tidy), U=U, params=params)
    c = eq.christoffel()                           # Euler-Lagrange: V_i = sum_jk c_ijk qd_j qd_k
    V = sp.Matrix([sp.expand(sum(c[i][j][k] * qd[j] * qd[k] for j in range(n) for k in range(n)))
                   for i in range(n)])
    # M is collected already, so its derivatives are too: no TR10i pass (7x slower, no gain measured).
    eq.V = V.applyfunc(lambda e: tidy(e, qd, combine=False))
    eq.seconds = time.perf_counter() - t0
    return eq


def _energies(bodies, g, q, n):
    """Mass matrix (from T = 1/2 qd^T M qd) and potential energy U.

    Body-frame Jacobians by the outward recursion (Craig sec. 5.7, 6.5):
    ``w_i = R_i^T w_p + z_i qd_i``, ``v_i = R_i^T (v_p + w_p x p_i) (+ z_i d_i)``.
    """
    Jw, Jv, Rw, pw = {}, {}, {}, {}
    M = sp.zeros(n, n)
    U = sp.Integer(0)
    zero3n = sp.zeros(3, n)
    for i, b in enumerate(bodies):
        qi = b.mul * q[b.k] + b.off
        if b.prismatic:
            R, p = b.R0, b.p0 + b.R0 * b.axis * qi
        else:
            R, p = b.R0 * axis_rotation(b.axis, qi), b.p0
        R, p = R.applyfunc(reduce_trig), p.applyfunc(reduce_trig)
        par = b.parent
        Jw_p, Jv_p = (Jw[par], Jv[par]) if par >= 0 else (zero3n, zero3n)
        Rw_p, pw_p = (Rw[par], pw[par]) if par >= 0 else (sp.eye(3), sp.zeros(3, 1))
        Jw_i = R.T * Jw_p
        Jv_i = R.T * (Jv_p - skew(p) * Jw_p)
        if b.prismatic:
            Jv_i[:, b.k] += b.axis * b.mul
        else:
            Jw_i[:, b.k] += b.axis * b.mul
        Jw[i], Jv[i] = Jw_i.applyfunc(reduce_trig), Jv_i.applyfunc(reduce_trig)
        Rw[i], pw[i] = (Rw_p * R).applyfunc(reduce_trig), (pw_p + Rw_p * p).applyfunc(reduce_trig)
        A = Jw[i].T * skew(b.h) * Jv[i]                      # cross term 2 v.(w x h)
        M += b.m * Jv[i].T * Jv[i] + Jw[i].T * b.Io * Jw[i] + A + A.T
        U -= (g.T * (b.m * pw[i] + Rw[i] * b.h))[0]         # U = -g . (m p + R h)
    return M.applyfunc(reduce_trig), reduce_trig(U)
