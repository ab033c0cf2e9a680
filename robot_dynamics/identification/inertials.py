"""Physically consistent inertial parameters and models rebuilt with new inertials.

A body's ten parameters ``(m, h, I_O)`` (about the body origin, see
:func:`~robot_dynamics.inertial_parameters`) belong to a real mass
distribution exactly when its pseudo-inertia matrix

    J = [[Sigma, h], [h^T, m]],   Sigma = tr(I_O)/2 * 1 - I_O

(the second moments of the mass distribution) is positive definite: mass
positive, rotational inertia positive definite and the triangle
inequalities of its principal moments (Wensing, Kim and Slotine, *Linear
matrix inequalities for physically consistent inertial parameter
identification: a statistical perspective on the mass distribution*, IEEE
RA-L 2018). The log-Cholesky parametrisation (Rucker and
Wensing, *Smooth parameterization of rigid-body inertia*, IEEE RA-L 2022)
writes ``J = U U^T`` with

    U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]]

so every real vector ``theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3)``
is a physically consistent body and every such body has one theta
(``e^alpha = sqrt(m)``, ``t`` = the centre of mass [m]).

An optimiser may step theta far out (a body whose best fit lies on the edge
of the consistent set sends its theta towards infinity), where ``e^x``
overflows. So each entry passes through a smooth saturation first
(:func:`saturate`): the identity for ``|x| <= 30`` in the exponents
(``alpha, d``: masses from ``e^-60`` to ``e^60`` kg, any real body) and
``|x| <= 1e18`` in the others, then ``tanh`` towards ``+-40`` and
``+-2e18`` (value, slope and curvature continuous at the joint). Every
real theta, however large, gives finite parameters (at most about 1e72)
and a finite Jacobian that fades to 0 far out; inside the identity range
the map is the paper's.
"""
import numpy as np

from ..algorithms.regressor import check_parameters
from ..model.inertia import inertia_about_com, inertia_problem
from ..model.urdf import read_urdf

# (row, column) of U for theta[4:10]
_OFF = ((0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3))
_TENSOR = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))      # URDF ixx ixy ixz iyy iyz izz


def pseudo_inertia(pi):
    """(4, 4) pseudo-inertia J of one body's 10 parameters (m, h, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)."""
    m, h = pi[0], pi[1:4]
    I = _inertia_matrix(pi[4:10])
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def parameters_from_pseudo_inertia(J):
    """The 10 parameters of a pseudo-inertia J (inverse of :func:`pseudo_inertia`)."""
    S = J[:3, :3]
    I = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], J[0, 3], J[1, 3], J[2, 3], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


def _inertia_matrix(v):
    xx, xy, yy, xz, yz, zz = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


# saturate(): identity up to _LINEAR, then tanh towards _BOUND; exponents (alpha, d1..d3) first
_LINEAR = np.array([30.0] * 4 + [1e18] * 6)
_BOUND = np.array([40.0] * 4 + [2e18] * 6)


def saturate(theta):
    """(y, dy/dtheta) of the smooth saturation applied to theta (10,) before the chart:
    ``y = x`` where ``|x| <= _LINEAR``, else ``sign(x) (a + w tanh((|x| - a) / w))`` with
    ``a = _LINEAR``, ``w = _BOUND - _LINEAR``: C2 at ``|x| = a``, ``|y| <= _BOUND``."""
    x = np.asarray(theta, dtype=float)
    z = np.maximum(np.abs(x) - _LINEAR, 0.0) / (_BOUND - _LINEAR)
    e = np.exp(-2.0 * np.minimum(z, 100.0))                      # e^(-2z) in [e^-200, 1]: no over- or underflow
    y = np.where(z > 0, np.sign(x) * (_LINEAR + (_BOUND - _LINEAR) * (1.0 - e) / (1.0 + e)), x)
    return y, 4.0 * e / (1.0 + e) ** 2                           # tanh' = sech^2 = 4 e^-2z / (1 + e^-2z)^2


def _unsaturate(y):
    """theta with saturate(theta)[0] == y (y clipped inside +-_BOUND)."""
    a, w = _LINEAR, _BOUND - _LINEAR
    r = np.minimum((np.abs(y) - a) / w, 1.0 - 1e-15)
    return np.where(r > 0, np.sign(y) * (a + w * np.arctanh(np.maximum(r, 0.0))), y)


def _U(theta):
    """U of theta, and dy/dtheta of its saturation."""
    y, slope = saturate(theta)
    U = np.zeros((4, 4))
    U[0, 0], U[1, 1], U[2, 2], U[3, 3] = np.exp(y[1]), np.exp(y[2]), np.exp(y[3]), 1.0
    for (r, c), x in zip(_OFF, y[4:10]):
        U[r, c] = x
    return np.exp(y[0]) * U, slope


def parameters_from_log_cholesky(theta):
    """(10,) body parameters of a log-Cholesky vector theta (10,); always consistent and finite."""
    U, _ = _U(theta)
    return parameters_from_pseudo_inertia(U @ U.T)


def log_cholesky_jacobian(theta):
    """(10, 10) d parameters / d theta."""
    U, slope = _U(theta)
    out = np.empty((10, 10))
    out[:, 0] = 2.0 * parameters_from_pseudo_inertia(U @ U.T)          # J = e^(2 alpha) V V^T
    for k in range(1, 10):
        dU = np.zeros((4, 4))
        if k <= 3:
            dU[k - 1, k - 1] = U[k - 1, k - 1]
        else:
            r, c = _OFF[k - 4]
            dU[r, c] = U[3, 3]                                           # e^alpha
        out[:, k] = parameters_from_pseudo_inertia(dU @ U.T + U @ dU.T)
    return out * slope                                                   # chain rule through saturate


def log_cholesky(pi, min_mass=1e-3):
    """theta (10,) of one body's parameters. A body that is not strictly
    consistent (massless, a point mass, a rod) is first made so: its mass is
    raised to ``min_mass`` [kg] if lower and its pseudo-inertia's smallest
    eigenvalue to 1e-6 of its largest."""
    J = pseudo_inertia(np.asarray(pi, dtype=float))
    if J[3, 3] < min_mass:
        J = pseudo_inertia(np.array([min_mass, 0, 0, 0, 1e-6, 0, 1e-6, 0, 0, 1e-6]))
    w, V = np.linalg.eigh(J)
    floor = 1e-6 * w.max()
    if w.min() < floor:
        J = (V * np.maximum(w, floor)) @ V.T
    # J = U U^T with U upper triangular: reverse the order, take the lower Cholesky factor, reverse back
    L = np.linalg.cholesky(J[::-1, ::-1])
    U = L[::-1, ::-1]
    a = np.log(U[3, 3])
    theta = np.empty(10)
    theta[0] = a
    theta[1:4] = np.log(np.diag(U)[:3]) - a
    for k, (r, c) in enumerate(_OFF):
        theta[4 + k] = U[r, c] / U[3, 3]
    return _unsaturate(theta)


def consistency_problem(pi):
    """A sentence saying why one body's 10 parameters are not physical, or None."""
    pi = np.asarray(pi, dtype=float)
    m = pi[0]
    if not m > 0:
        return "mass %.6g kg is not positive" % m
    c = pi[1:4] / m
    return inertia_problem(inertia_about_com(m, c, _inertia_matrix(pi[4:10])))


def body_inertials(model, pi):
    """Per body ``(link, mass, com, inertia about the com)`` of parameters pi
    (10 nb,): com and inertia in the frame of the body's link (the child
    link of its joint, whose frame is the body frame)."""
    pi = check_parameters(model, pi).reshape(model.nb, 10)
    out = []
    for b in range(model.nb):
        m, h, I = pi[b, 0], pi[b, 1:4], _inertia_matrix(pi[b, 4:10])
        c = h / m if m > 0 else np.zeros(3)
        out.append((model.link_names[model.body_link[b]], float(m), c, inertia_about_com(m, c, I)))
    return out


def model_urdf(model, pi=None, *, damping=None, friction=None):
    """URDF text of ``model`` with the body parameters ``pi`` (10 nb,).

    The kinematics (joints, origins, axes, limits, mimic tags) are the
    model's. Each body's whole inertial (everything fixed to it, payloads
    included) is written on the body's link, the child link of its moving
    joint; the other links fixed to that body get no ``<inertial>`` (the
    dynamics are the same; how the mass splits between rigidly joined links
    cannot be identified). Links fixed to the base keep their own inertial.

    Args:
        pi: (10 nb,) body parameters (default: the model's own).
        damping, friction: optional (nq,) viscous and Coulomb coefficients
            written in ``<dynamics>`` of the independent joints (default:
            the model's; mimic joints keep theirs).
    """
    pi = model.body_parameters.ravel() if pi is None else check_parameters(model, pi)
    inertials = {link: (m, c, I) for link, m, c, I in body_inertials(model, pi)}
    for l, name in enumerate(model.link_names):
        if model.link_body[l] < 0 and model.link_mass[l] > 0:
            inertials[name] = (float(model.link_mass[l]), model.link_com[l], model.link_inertia[l])
    coordinate = {name: k for k, name in enumerate(model.joint_names)}
    lines = ['<?xml version="1.0"?>', '<robot name="%s">' % _attr(model.name or "robot")]
    for name in model.link_names:
        if name in inertials and inertials[name][0] > 0:
            m, c, I = inertials[name]
            lines.append('  <link name="%s"><inertial><origin xyz="%s" rpy="0 0 0"/><mass value="%r"/>'
                         '<inertia ixx="%r" ixy="%r" ixz="%r" iyy="%r" iyz="%r" izz="%r"/></inertial></link>'
                         % ((_attr(name), _vec(c), float(m)) + tuple(float(I[a, b]) for a, b in _TENSOR)))
        else:
            lines.append('  <link name="%s"/>' % _attr(name))
    for j in model.joints.values():
        body = ['<parent link="%s"/>' % _attr(j.parent), '<child link="%s"/>' % _attr(j.child),
                '<origin xyz="%s" rpy="%s"/>' % (_vec(j.origin[:3, 3]), _vec(_rpy(j.origin[:3, :3])))]
        if j.type != "fixed":
            body.append('<axis xyz="%s"/>' % _vec(j.axis))
            limit = []
            if np.isfinite(j.lower) and j.type != "continuous":
                limit.append('lower="%r" upper="%r"' % (float(j.lower), float(j.upper)))
            if np.isfinite(j.effort):
                limit.append('effort="%r" velocity="%r"' % (float(j.effort), float(j.velocity)))
            if limit:
                body.append("<limit %s/>" % " ".join(limit))
            d, f = j.damping, j.friction
            if j.name in coordinate:
                d = d if damping is None else float(damping[coordinate[j.name]])
                f = f if friction is None else float(friction[coordinate[j.name]])
            if d or f:
                body.append('<dynamics damping="%r" friction="%r"/>' % (float(d), float(f)))
            if j.mimic is not None:
                body.append('<mimic joint="%s" multiplier="%r" offset="%r"/>' % (_attr(j.mimic[0]), float(j.mimic[1]), float(j.mimic[2])))
        lines.append('  <joint name="%s" type="%s">%s</joint>' % (_attr(j.name), j.type, "".join(body)))
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


def model_with_parameters(model, pi, *, damping=None, friction=None):
    """A new :class:`~robot_dynamics.Model`: ``model``'s kinematics and
    gravity with body parameters ``pi`` (10 nb,), built from
    :func:`model_urdf` (so every array of the model, links' inertials
    included, agrees with the new bodies)."""
    new = read_urdf(model_urdf(model, pi, damping=damping, friction=friction), gravity=model.gravity)
    assert new.joint_names == model.joint_names and new.body_joint == model.body_joint
    return new


def _rpy(R):
    """URDF roll, pitch, yaw of a rotation R = Rz(yaw) Ry(pitch) Rx(roll)."""
    if abs(R[2, 0]) < 1.0 - 1e-12:
        return np.array([np.arctan2(R[2, 1], R[2, 2]), -np.arcsin(R[2, 0]), np.arctan2(R[1, 0], R[0, 0])])
    pitch = -np.pi / 2 if R[2, 0] > 0 else np.pi / 2           # gimbal lock: roll folded into yaw
    return np.array([0.0, pitch, np.arctan2(-R[0, 1], R[1, 1])])


def _vec(v):
    return " ".join(repr(float(x)) for x in v)


def _attr(text):
    return str(text).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
