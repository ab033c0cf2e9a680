"""The read-only dynamics services of a node with a robot model: handlers of (holder, request, response).

``~/gravity_compensation``, ``~/inverse_dynamics``, ``~/forward_dynamics``,
``~/mass_matrix`` and ``~/fill_trajectory_efforts`` (robot_dynamics_interfaces)
read the node's current model (replaced, never changed in place) and change
nothing. Every one answers ``success: false`` with a message that says what is
wrong instead of raising. Their results are computations, not commands: they
are not clamped to effort limits. dynamics_node does not serve them; the
dynamics_services process beside it does, under its names
(:mod:`.query_services`). Each handler is a function of the node's
:class:`robot_dynamics.control.model_holder.ModelHolder` (its ``model``,
``base_state``, ``actuated``, ``no_model``, ``p.friction_smoothing``), the
request and the response; :func:`.model_node.register_queries` creates the
services of a node that serves them (dynamics_services, simulator_node).

A floating or planar base (``model.root_joint``): the services take the joints from the request
and the base from the holder's ``base_state`` (the node's), with the base's
acceleration zero, and answer for the joints (the base is not actuated):
``~/gravity_compensation`` and ``~/inverse_dynamics`` the joint part of
``gravity_torques`` / ``rnea`` on the full state, ``~/mass_matrix`` the
joint block of M (the arm's inertia with the base held; it does not depend
on the base's pose). ``~/forward_dynamics`` and ``~/fill_trajectory_efforts``
refuse: the joint accelerations of a free base depend on the contact
wrenches on it, and a trajectory's future base states are unknown.

A closed-loop robot (``loops_file``, docs/LOOPS.md): the URDF is the
mechanism's spanning tree and the YAML file its closure joints, applied
with ``rd.load_urdf(..., loops=...)`` to every description. The file is
read once, at start-up; a file that cannot be read or parsed, or loops that
do not fit a description, leave the node without that model and with an
ERROR status naming the file and the loop (the node keeps running). The
state is fixed by ``actuated_joints`` (:mod:`robot_dynamics.control.closed_loop`): a request may
name only them, the passive joints are computed. ``~/gravity_compensation``
and ``~/inverse_dynamics`` answer ``rd.constrained_inverse_dynamics`` for
the actuated joints; ``~/forward_dynamics`` ``rd.constrained_forward_dynamics``
for every joint (efforts of the actuated joints, none at the passive
ones); ``~/mass_matrix`` the spanning tree's M; ``~/fill_trajectory_efforts``
refuses.
"""
import numpy as np
from sensor_msgs.msg import JointState

import robot_dynamics as rd

from ..control.base_state import full_state
from ..model.model import describe_base
from ..control.closed_loop import ClosedLoop
from ..control.compensation import GRAVITY
from ..control.joint_map import JointMapError, state_from_names
from ..control.trajectory import fill_trajectory_efforts


def ok(response, message='ok'):
    """``response`` answered ``success: true``."""
    response.success = True
    response.message = message
    return response


def fail(response, problem):
    """``response`` answered ``success: false`` with ``problem`` (an exception or a text)."""
    response.success = False
    response.message = str(problem)
    return response


def _full_state(holder, model, q, qd=None):
    """(q, v) of the joints' ``q``, ``qd`` (n,) with the services' base state; a fixed base: (q, qd)."""
    if model.root_joint is None:
        return q, qd
    q_root, v_root = holder.base_state(model)
    return full_state(model, q_root, v_root, q, qd)


def gravity(holder, request, response):
    """~/gravity_compensation (GravityCompensation)."""
    model = holder.model
    if model is None:
        return holder.no_model(response)
    js = request.joint_state
    try:
        if model.loops:
            loop = _loop_of(holder, model)
            q, qd = _loop_state(loop, js)
            tau = loop.compute(q, qd).copy()
            response.torques = JointState(header=js.header, name=loop.actuated, effort=tau.tolist())
            return ok(response)
        q, = state_from_names(model.joint_names, js.name, js.position, (), what=('position',))
        q, _ = _full_state(holder, model, q)
        tau = rd.gravity_torques(model, q)[model.root_nv:]
    except ValueError as exc:
        return fail(response, exc)
    response.torques = JointState(header=js.header, name=list(model.joint_names), effort=tau.tolist())
    return ok(response)


def _loop_of(holder, model):
    """The services' :class:`.closed_loop.ClosedLoop` of ``model`` (gravity mode), built once per model."""
    if holder.service_loop is None or holder.service_loop.model is not model:
        holder.service_loop = ClosedLoop(model, holder.actuated(model), GRAVITY)
    return holder.service_loop


def _loop_state(loop, js, extra=(), what=()):
    """(q, qd, *extra) of a closed-loop request: the actuated joints' values (the passive ones, if
    named, only start the assembly); the extra arrays (actuated order) are returned as they are."""
    arrays = state_from_names(loop.actuated, js.name, js.position, js.velocity, extra,
                              what=('position', 'velocity') + tuple(what))
    guess = None
    if loop.passive and all(n in js.name for n in loop.passive):
        try:
            guess, = state_from_names(loop.passive, js.name, js.position, (), what=('position',))
        except JointMapError:
            guess = None
    q, qd = loop.complete(arrays[0], arrays[1], guess)
    return (q.copy(), qd.copy()) + tuple(arrays[2:])


def inverse_dynamics(holder, request, response):
    """~/inverse_dynamics (InverseDynamics)."""
    model = holder.model
    if model is None:
        return holder.no_model(response)
    js = request.joint_state
    if model.loops:
        try:
            loop = _loop_of(holder, model)
            q, qd, qdd_a = _loop_state(loop, js, [request.acceleration], ('acceleration',))
            tau, _ = rd.constrained_inverse_dynamics(model, q, qd, loop.accelerations(q, qd, qdd_a),
                                                     loop.actuated)
        except ValueError as exc:
            return fail(response, exc)
        response.torques = JointState(header=js.header, name=loop.actuated, effort=tau[loop.a].tolist())
        return ok(response)
    try:
        q, qd, qdd = state_from_names(model.joint_names, js.name, js.position, js.velocity,
                                      [request.acceleration],
                                      what=('position', 'velocity', 'acceleration'))
        q, qd = _full_state(holder, model, q, qd)
        if model.root_joint is not None:        # the base's acceleration: zero
            qdd = np.concatenate([np.zeros(model.root_nv), qdd])
        tau = rd.rnea(model, q, qd, qdd)[model.root_nv:]
    except ValueError as exc:
        return fail(response, exc)
    response.torques = JointState(header=js.header, name=list(model.joint_names), effort=tau.tolist())
    return ok(response)


def forward_dynamics(holder, request, response):
    """~/forward_dynamics (ForwardDynamics)."""
    model = holder.model
    if model is None:
        return holder.no_model(response)
    if model.root_joint is not None:
        return fail(response, '%s: its joint accelerations depend on the contact wrenches on the base, '
                     'which this service does not know (the library: rd.aba with the base wrench in tau and '
                     'the contacts in f_ext)' % describe_base(model))
    js = request.joint_state
    try:
        if model.loops:
            loop = _loop_of(holder, model)
            q, qd, tau_a = _loop_state(loop, js, [js.effort], ('effort',))
            tau = np.zeros(model.nq)
            tau[loop.a] = tau_a
            qdd, _ = rd.constrained_forward_dynamics(model, q, qd, tau)
        else:
            q, qd, tau = state_from_names(model.joint_names, js.name, js.position, js.velocity,
                                          [js.effort], what=('position', 'velocity', 'effort'))
            qdd = rd.aba(model, q, qd, tau)
    except ValueError as exc:
        return fail(response, exc)
    response.name = list(model.joint_names)
    response.acceleration = qdd.tolist()
    return ok(response)


def mass_matrix(holder, request, response):
    """~/mass_matrix (MassMatrix)."""
    model = holder.model
    if model is None:
        return holder.no_model(response)
    js = request.joint_state
    try:
        q, = state_from_names(model.joint_names, js.name, js.position, (), what=('position',))
        if model.root_joint is not None:        # the joint block: independent of the base's pose
            q = np.concatenate([model.neutral()[:model.root_nq], q])
        M = rd.mass_matrix(model, q)[model.root_nv:, model.root_nv:]
    except ValueError as exc:
        return fail(response, exc)
    response.name = list(model.joint_names)
    response.mass_matrix = M.ravel().tolist()
    return ok(response)


def trajectory_efforts(holder, request, response):
    """~/fill_trajectory_efforts (TrajectoryEfforts)."""
    model = holder.model
    if model is None:
        return holder.no_model(response)
    if model.root_joint is not None:
        return fail(response, '%s: the efforts of a trajectory need the base state at each of its points, '
                     'which are unknown ahead of time' % describe_base(model))
    if model.loops:
        return fail(response, 'robot %r has closed loops (loops_file): the trajectory efforts are computed for '
                     'trees only; use ~/inverse_dynamics point by point' % model.name)
    try:
        response.trajectory = fill_trajectory_efforts(
            model, request.trajectory, include_friction=request.include_friction,
            friction_smoothing=holder.p.friction_smoothing)
    except ValueError as exc:
        return fail(response, exc)
    return ok(response, '%d points' % len(request.trajectory.points))
