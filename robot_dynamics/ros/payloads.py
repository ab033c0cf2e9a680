"""Payloads on the model's links at run time (a mixin of :class:`.model_node.ModelNode`): ``~/set_payload``.

A payload replaces any payload set before on the same link; payloads on
different links add up. The node keeps them in ``payloads`` (link -> (mass
[kg], com (3,) in the link frame [m], inertia (3, 3) about the com in link
axes [kg m^2])) and rebuilds its model from ``base_model`` with them
(``ModelNode._rebuild``), so a new description keeps them.
"""
import numpy as np

import robot_dynamics as rd

from ..errors import InputError
from .queries import fail, ok


def _inertia_matrix(inertia):
    return np.array([[inertia.ixx, inertia.ixy, inertia.ixz],
                     [inertia.ixy, inertia.iyy, inertia.iyz],
                     [inertia.ixz, inertia.iyz, inertia.izz]])


def _check_payload(model, inertia):
    """Raise ValueError unless a payload is usable: its (finite, symmetric)
    inertia about its centre of mass is physical (positive semi-definite, zero
    being a point mass, and each principal moment at most the sum of the other
    two) and the loaded ``model`` still gives finite dynamics (a mass of 1e308
    kg passes Model.with_payload but overflows every later computation)."""
    moments = np.linalg.eigvalsh(inertia)
    tol = 1e-9 * max(float(np.max(np.abs(moments))), 1e-300)
    if moments[0] < -tol:
        raise InputError('payload inertia is not positive semi-definite (principal moments %s)'
                         % np.array2string(moments, precision=6))
    if moments[2] > moments[0] + moments[1] + tol:
        raise InputError('payload inertia violates the triangle inequality (principal moments %s)'
                         % np.array2string(moments, precision=6))
    q = model.neutral()
    try:
        rd.gravity_torques(model, q)        # both raise ValueError on a non-finite result
        rd.mass_matrix(model, q)
    except ValueError as exc:
        raise InputError('the payload makes the dynamics non-finite (%s)' % exc) from None


class Payloads:
    """``~/set_payload`` and what it changes. The node provides ``base_model``, ``payloads``, ``_rebuild``
    and ``_no_model``."""

    def payload_mass(self):
        return float(sum(m for m, _, _ in self.payloads.values()))

    def _srv_set_payload(self, request, response):
        if self.base_model is None:
            return self._no_model(response)
        link = request.payload.link
        old = dict(self.payloads)
        if request.clear:
            if link and link not in self.payloads:
                if link not in self.base_model.link_names:
                    response.total_payload_mass = self.payload_mass()
                    return fail(response, 'unknown link %r; the model\'s links are: %s'
                                 % (link, ', '.join(self.base_model.link_names)))
                text = 'no payload on %r' % link
            elif link:
                del self.payloads[link]
                text = 'payload on %r cleared' % link
            else:
                self.payloads.clear()
                text = 'all payloads cleared'
        else:
            inertia = request.payload.inertia
            c = inertia.com
            entry = (float(inertia.m), np.array([c.x, c.y, c.z]), _inertia_matrix(inertia))
            problem = self.set_payload(link, entry)
            response.total_payload_mass = self.payload_mass()
            if problem:
                return fail(response, problem)
            return ok(response, 'payload of %.4g kg on %r' % (entry[0], link))
        problem = self._rebuild(joints_changed=False)
        if problem:
            self.payloads = old
            self._rebuild(joints_changed=False)
            response.total_payload_mass = self.payload_mass()
            return fail(response, problem)
        self.get_logger().info(text)
        response.total_payload_mass = self.payload_mass()
        return ok(response, text)

    def set_payload(self, link, entry):
        """Set or replace the payload on ``link`` (what ``~/set_payload`` does).

        Args:
            link: a link of the model.
            entry: (mass [kg], com (3,) in the link frame [m], inertia (3, 3)
                about the com in link axes [kg m^2]).

        Returns:
            None, or the problem (then nothing changed).
        """
        try:
            with np.errstate(over='ignore', invalid='ignore'):
                candidate = self.base_model.with_payload(link, *entry)  # checks link, mass, com
            _check_payload(candidate, entry[2])
        except ValueError as exc:
            return str(exc)
        old = dict(self.payloads)
        self.payloads[link] = entry
        problem = self._rebuild(joints_changed=False)
        if problem:
            self.payloads = old
            self._rebuild(joints_changed=False)
            return problem
        self.get_logger().info('payload of %.4g kg on %r' % (entry[0], link))
        return None

    def model_without_payload(self, link):
        """The base model with every payload but the one on ``link`` (what identifies a new one there)."""
        model = self.base_model
        for other, (m, com, inertia) in self.payloads.items():
            if other != link:
                model = model.with_payload(other, m, com, inertia)
        return model
