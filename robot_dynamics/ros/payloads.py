"""``~/set_payload`` (robot_dynamics_interfaces/SetPayload): a handler of (holder, request, response).

A payload replaces any payload set before on the same link; payloads on
different links add up. The node's :class:`robot_dynamics.control.model_holder.ModelHolder`
keeps them (link -> (mass [kg], com (3,) in the link frame [m], inertia (3, 3)
about the com in link axes [kg m^2])) and rebuilds its model from its
``base_model`` with them, so a new description keeps them. Every node with a
model serves it (:func:`register`).
"""
import numpy as np

from robot_dynamics_interfaces.srv import SetPayload

from .queries import fail, ok


def inertia_matrix(inertia):
    """(3, 3) inertia [kg m^2] of a geometry_msgs/Inertia."""
    return np.array([[inertia.ixx, inertia.ixy, inertia.ixz],
                     [inertia.ixy, inertia.iyy, inertia.iyz],
                     [inertia.ixz, inertia.iyz, inertia.izz]])


def set_payload(holder, request, response):
    """~/set_payload: set, replace or clear (``clear``; no link: every one) a payload of the holder's model;
    the answer has the payloads' total mass."""
    if holder.base_model is None:
        return holder.no_model(response)
    link = request.payload.link
    if request.clear:
        text, problem = holder.clear_payload(link)
    else:
        inertia = request.payload.inertia
        c = inertia.com
        entry = (float(inertia.m), np.array([c.x, c.y, c.z]), inertia_matrix(inertia))
        problem = holder.set_payload(link, entry)
        text = 'payload of %.4g kg on %r' % (entry[0], link)
    response.total_payload_mass = holder.payload_mass()
    return fail(response, problem) if problem else ok(response, text)


def register(node, holder):
    """Create ``~/set_payload`` on ``node`` (an rclpy Node), answered from ``holder``."""
    node.create_service(SetPayload, '~/set_payload', lambda request, response: set_payload(holder, request, response))
