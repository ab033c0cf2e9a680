"""Our coordinates in Pinocchio's, for the tests that compare with Pinocchio.

Pinocchio builds a URDF's ``<mimic>`` joints as joints of their own; robot_dynamics folds each
into its source joint. A test's reference model maps our (q, qd, ...) to Pinocchio's through a
matrix ``G`` (pm.nv x model.nv: 1 where a joint is itself, the multiplier where it mimics) and an
offset ``off`` (pm.nv,), built from :func:`mimic_coupling`; :func:`pinocchio_q` maps a
configuration.
"""
import numpy as np

MOVING = ("revolute", "continuous", "prismatic")


def mimic_coupling(root):
    """{joint: (independent source, multiplier, offset)} of the resolvable ``<mimic>`` tags under
    ``root`` (the URDF's ``<robot>`` element); a mimic of a mimic is followed to its source."""
    joints = {j.get("name"): j for j in root.findall("joint")}
    direct = {}
    for name, j in joints.items():
        m = j.find("mimic")
        if m is not None and j.get("type") in MOVING and m.get("joint") in joints:
            direct[name] = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
    out = {}
    for name, (src, mul, off) in direct.items():
        while src in direct:                       # a mimic of a mimic
            s2, m2, o2 = direct[src]
            src, mul, off = s2, mul * m2, mul * o2 + off
        out[name] = (src, mul, off)
    return out


def pinocchio_q(model, pm, G, off, q):
    """Pinocchio's configuration (pm.nq,) of our ``q`` (model.nq,).

    The root's coordinates first: a floating root's position and quaternion (x, y, z, w) as ours, a
    planar root's (x, y, cos θ, sin θ) from our (x, y, θ). Then each joint's value, ``G q + off`` on
    the joints' part; a continuous joint as (cos, sin) of it.
    """
    qp = np.zeros(pm.nq)
    if model.root_joint == "floating":
        qp[:7] = q[:7]
    elif model.root_joint == "planar":
        qp[:4] = q[0], q[1], np.cos(q[2]), np.sin(q[2])
    qv = G[:, model.root_nv:] @ q[model.root_nq:] + off
    for jid in range(2 if model.root_nv else 1, pm.njoints):
        jm = pm.joints[jid]
        if jm.nq == 1:
            qp[jm.idx_q] = qv[jm.idx_v]
        else:                                      # continuous: (cos, sin)
            qp[jm.idx_q:jm.idx_q + 2] = np.cos(qv[jm.idx_v]), np.sin(qv[jm.idx_v])
    return qp
