"""Joint friction from the URDF ``<dynamics damping friction>`` tags.

Viscous plus Coulomb model (Schilling, *Fundamentals of Robotics*, eq. 6-3-3, without the static
break-away term): ``tau_f = b_v qd + f_c sgn(qd)``. The result is the torque
that friction opposes, i.e. what a controller adds to compensate it; a
simulator subtracts it from the applied torque.
"""
import numpy as np

from ..algorithms import checks
from ..errors import InputError


def friction_torques(model, qd, *, smoothing=0.0):
    """Viscous + Coulomb friction torques of the joints.

    Args:
        qd: (..., nq) joint velocities [rad/s or m/s].
        smoothing: velocity scale [rad/s] of ``tanh(qd / smoothing)`` used in
            place of ``sgn(qd)`` when > 0 (a continuous model for integrators).

    Returns:
        (..., nq) torques [N m] / forces [N] along the motion. Mimic joints'
        friction is mapped onto the joint they follow.
    """
    if smoothing < 0 or not np.isfinite(smoothing):
        raise InputError("smoothing must be a finite velocity >= 0 [rad/s], got %r" % (smoothing,))
    shape, (QD,) = checks.batch(model, qd=qd)
    if not np.all(np.isfinite(QD)):
        checks.raise_not_finite(qd=qd)
    G = model.coupling
    qd_b = QD @ G.T                                       # body joint velocities
    sign = np.tanh(qd_b / smoothing) if smoothing > 0 else np.sign(qd_b)
    tau_b = model.body_damping * qd_b + model.body_friction * sign
    return (tau_b @ G).reshape(shape + (model.nv,))
