"""Dynamic characteristics of a robot at one configuration.

What the texts tabulate when they size a manipulator (Schilling, *Fundamentals of Robotics*, sec. 6-7,
"dynamic characteristics"; Craig sec. 6.8-6.10):

- effective inertia of each joint, ``M_ii`` (the inertia the joint's motor
  accelerates when the other joints are held);
- coupling inertias ``M_ij`` (torque at joint i per unit acceleration of
  joint j) and their normalised size ``M_ij / sqrt(M_ii M_jj)`` (0: no
  coupling, 1: rigidly coupled);
- gravity loading ``G(q)`` and its share of each joint's effort limit;
- the steady-state (static) load of a tool wrench F applied at a point:
  ``tau = J^T F`` (Craig eq. 5.105), added to the gravity torques;
- the maximum payload: the largest point mass m at that point for which
  every joint holds ``|G_i + tau_F,i + m t_i| <= effort_i``, with
  ``t = -Jv^T g`` the torque per kilogram of payload (Jv the linear rows of
  the point's Jacobian, g the gravity vector).
"""
from dataclasses import asdict, dataclass
from typing import Optional, Tuple

import numpy as np

from .. import checks
from ..algorithms.crba import mass_matrix
from ..algorithms.task_space import jacobian
from ..algorithms.rnea import gravity_torques
from ..errors import InputError
from ..algorithms.floating import require_fixed


@dataclass(frozen=True)
class DynamicReport:
    """Dynamic characteristics at one configuration (SI units; see the module docstring).

    Arrays are (n,) or (n, n) in ``joint_names`` order. ``max_payload`` is
    in kg: 0 when gravity (and the wrench) alone already exceed a joint's
    limit, ``inf`` when no joint with a finite effort limit carries the
    payload's weight (``payload_note`` says which).
    """
    robot: str
    joint_names: Tuple[str, ...]
    q: np.ndarray
    effective_inertia: np.ndarray          # M_ii [kg m^2 or kg]
    mass_matrix: np.ndarray                # M (couplings off the diagonal)
    coupling_ratio: np.ndarray             # M_ij / sqrt(M_ii M_jj)
    gravity: np.ndarray                    # G(q) [N m or N]
    effort_limit: np.ndarray
    link: str
    point: np.ndarray                      # in the link frame [m]
    wrench: np.ndarray                     # base frame [fx fy fz nx ny nz], zeros if none
    wrench_torques: np.ndarray             # J^T F
    static_torques: np.ndarray             # G + J^T F
    payload_torque_per_kg: np.ndarray      # t = -Jv^T g [N m/kg]
    max_payload: float                     # [kg]
    limiting_joint: Optional[str]
    payload_note: str

    @property
    def effort_usage(self):
        """|G + J^T F| / effort limit per joint (0 where the limit is infinite)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.abs(self.static_torques) / self.effort_limit
        return np.where(np.isfinite(self.effort_limit), u, 0.0)

    def to_dict(self):
        """JSON-ready dict: arrays as lists, infinities as None."""
        out = {}
        for k, v in asdict(self).items():
            out[k] = _jsonable(v)
        out["effort_usage"] = _jsonable(self.effort_usage)
        return out

    def table(self):
        """The report as aligned plain-text tables."""
        names = self.joint_names
        w = max(8, max(len(n) for n in names))
        gscale = float(max(np.max(np.abs(self.static_torques), initial=0.0),
                           np.max(np.abs(self.gravity), initial=0.0)))
        lines = ["Dynamic characteristics of %r at q = [%s]" % (self.robot, ", ".join("%.4g" % x for x in self.q)),
                 "", "%-*s %12s %12s %12s %12s %8s" % (w, "joint", "q", "M_ii", "gravity", "static", "usage")]
        for i, n in enumerate(names):
            lim = self.effort_limit[i]
            usage = "%7.1f%%" % (100 * self.effort_usage[i]) if np.isfinite(lim) else "     n/a"
            lines.append("%-*s %s %s %s %s %s" % (w, n, _g(self.q[i]), _g(self.effective_inertia[i]),
                                                    _g(self.gravity[i], 12, gscale),
                                                    _g(self.static_torques[i], 12, gscale), usage))
        lines += ["", "M_ii: effective inertia [kg m^2 | kg]; gravity: G(q) [N m | N]; static: G + J^T F; "
                      "usage: |static| / effort limit", ""]
        lines.append("Coupling inertias M_ij (and M_ij / sqrt(M_ii M_jj)):")
        n = len(names)
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        for i, j in pairs:
            lines.append("  %-*s %-*s %s  (%+.3f)" % (w, names[i], w, names[j], _g(self.mass_matrix[i, j]),
                                                    0.0 if abs(self.coupling_ratio[i, j]) < 5e-4
                                                    else self.coupling_ratio[i, j]))
        if not pairs:
            lines.append("  (one joint: no coupling)")
        lines += ["", "Load point: %r at (%s) m in its frame" % (self.link, ", ".join("%.4g" % x for x in self.point))]
        if np.any(self.wrench):
            lines.append("Tool wrench (base frame) [fx fy fz nx ny nz] = [%s]; joint torques J^T F = [%s]"
                         % (_vec(self.wrench), _vec(self.wrench_torques)))
        lines.append("Torque per kg of payload at the point: [%s] N m/kg"
                     % _vec(self.payload_torque_per_kg))
        if np.isfinite(self.max_payload):
            lines.append("Maximum payload at this pose: %.4g kg (limited by %s)"
                         % (self.max_payload, self.limiting_joint or "-"))
        else:
            lines.append("Maximum payload at this pose: unbounded")
        if self.payload_note:
            lines.append("  " + self.payload_note)
        return "\n".join(lines) + "\n"


def _g(x, width=12, scale=1.0):
    """%g cell; |x| < 1e-9 scale (rounding residue) shows as 0."""
    return "%*.5g" % (width, 0.0 if abs(x) < 1e-9 * max(1.0, scale) else x)


def _vec(v):
    scale = float(np.max(np.abs(v))) if len(v) else 1.0
    return ", ".join(_g(x, 0, scale) for x in v)


def _jsonable(v):
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def default_tool_link(model):
    """The last link carried by the last moving joint: a serial arm's flange or tool frame."""
    last = model.nb - 1
    links = [n for i, n in enumerate(model.link_names) if model.link_body[i] == last]
    return links[-1] if links else model.link_names[-1]


def dynamic_report(model, q, *, link=None, point=(0.0, 0.0, 0.0), wrench=None):
    """Dynamic characteristics of the robot at one configuration.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q: (nq,) joint positions.
        link: link carrying the tool / payload; :func:`default_tool_link` if None.
        point: (3,) load point (payload centre of mass, tool contact) in the
            link frame [m].
        wrench: optional (6,) ``[fx fy fz nx ny nz]`` the tool exerts on its
            environment at the point, base frame [N, N m].

    Returns:
        :class:`DynamicReport`.
    """
    require_fixed(model, "dynamic_report")
    q = checks.as_float_array(q, "q")
    if q.shape != (model.nq,):
        raise InputError("q must be one configuration of %d values, got shape %s" % (model.nq, q.shape))
    checks.check_finite(q=q)
    link = default_tool_link(model) if link is None else model.link_names[model.link_index(link)]
    x = checks.point(point)
    F = np.zeros(6) if wrench is None else checks.as_float_array(wrench, "wrench")
    if F.shape != (6,) or not np.all(np.isfinite(F)):
        raise InputError("wrench must be 6 finite numbers [fx fy fz nx ny nz] (base frame), got %r" % (wrench,))
    M = mass_matrix(model, q)
    G = gravity_torques(model, q)
    d = np.sqrt(np.diag(M))
    J = jacobian(model, q, link, x)
    tau_F = J.T @ F                                      # Craig eq. 5.105
    static = G + tau_F
    t = -J[:3].T @ model.gravity                         # holding m kg needs m t
    m_max, limiting, note = _max_payload(model, static, t)
    return DynamicReport(
        robot=model.name, joint_names=model.joint_names, q=q.copy(), effective_inertia=np.diag(M).copy(),
        mass_matrix=M, coupling_ratio=M / np.outer(d, d), gravity=G, effort_limit=np.array(model.effort_limit),
        link=link, point=x, wrench=F, wrench_torques=tau_F, static_torques=static,
        payload_torque_per_kg=t, max_payload=m_max, limiting_joint=limiting, payload_note=note)


def _max_payload(model, base, t):
    """Largest m >= 0 with |base_i + m t_i| <= E_i for every joint; (m, joint, note)."""
    E = np.asarray(model.effort_limit)
    names = model.joint_names
    over = np.flatnonzero(np.abs(base) > E)
    if over.size:
        i = int(over[np.argmax(np.abs(base[over]) - E[over])])
        return 0.0, names[i], ("joint %r already needs %.4g of its %.4g effort limit without payload"
                               % (names[i], abs(base[i]), E[i]))
    scale = max(1.0, float(np.max(np.abs(t))))
    bounds = np.full(len(t), np.inf)
    for i in range(len(t)):
        if not np.isfinite(E[i]) or abs(t[i]) <= 1e-12 * scale:
            continue
        bounds[i] = (E[i] - base[i]) / t[i] if t[i] > 0 else (-E[i] - base[i]) / t[i]
    if not np.any(np.isfinite(bounds)):
        return np.inf, None, ("no joint with a finite effort limit carries a payload at this point "
                              "(its weight acts along joint axes or through fixed parts)")
    i = int(np.argmin(bounds))
    return float(bounds[i]), names[i], ""
