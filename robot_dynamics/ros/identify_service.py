"""dynamics_node's ~/identify_payload: the request waits for its answer in a thread of its own
(:mod:`.service_thread`), the collection runs in the torque loop and the fit in a thread of its own
(:mod:`robot_dynamics.control.identification`), so the torques never wait for it."""
from geometry_msgs.msg import Point, Vector3
from rclpy.clock import Clock, ClockType

from robot_dynamics_interfaces.srv import IdentifyPayload

from ..control.identification import Identification, request_problem
from ..control.payload_fit import payload_entry
from .service_thread import ServiceThread


class IdentifyService:
    """~/identify_payload, made on ``node`` (an rclpy Node: the service, its timer, its logger) for the model
    of ``holder`` (a ModelHolder: ``base_model``, ``model_without_payload``, ``set_payload``, ``no_model``),
    with the parameters ``p`` and the node clock ``now_ns()`` [ns]. ``current``: the running
    :class:`Identification`, or None."""

    def __init__(self, node, holder, p, now_ns):
        self.node, self.holder, self.p, self.now_ns = node, holder, p, now_ns
        self.current = None
        self.thread = ServiceThread(node)
        self.thread.create_deferred_service(IdentifyPayload, '~/identify_payload', _stopped_answer)
        # Steady clock: the answer must come even while simulated time stands still.
        node.create_timer(0.05, self.tick, clock=Clock(clock_type=ClockType.STEADY_TIME))

    @property
    def collection(self):
        """The SampleBuffer the torque loop fills, or None."""
        return self.current.collection if self.current is not None else None

    def state(self):
        return 'idle' if self.current is None else self.current.state()

    def tick(self):
        """Timer: start the requests that came, end a collection when its time is up, answer when the fit
        is done."""
        for ticket in self.thread.pending():
            answer = self._start(ticket)
            if answer is not None:
                ticket.reply(answer)
        ident = self.current
        if ident is not None and ident.tick(self.now_ns()):
            self.current = None
            ident.ticket.reply(self._answer(ident))

    def _start(self, ticket):
        """Start an identification; None: answered later by :meth:`tick`."""
        holder, request, response = self.holder, ticket.request, ticket.response
        if holder.base_model is None:
            return holder.no_model(response)
        p = self.p
        problem = request_problem(holder.base_model, request.link, request.duration, len(request.samples),
                                  running=self.current is not None, max_points=p.max_request_points,
                                  max_duration=p.identify_max_duration, effort_kind=p.joint_state_effort)
        if problem:
            response.success, response.message = False, problem
            return response
        ident = Identification(holder.model_without_payload(request.link), request.link,
                               static=request.static_poses, rest_velocity=p.identify_rest_velocity, ticket=ticket,
                               apply=request.apply, base=holder.base_model)
        self.current = ident
        if request.duration > 0:
            ident.collect(self.now_ns(), request.duration)
            self.node.get_logger().info('identify_payload: collecting joint states for %.3g s' % request.duration)
        else:
            ident.fit(request.samples)
        return None

    def _answer(self, ident):
        response = IdentifyPayload.Response()
        job, log = ident.job, self.node.get_logger()
        if job.error is not None:
            response.success, response.message = False, job.error
            log.warning('identify_payload failed: %s' % job.error)
            return response
        _fill_estimate(response, job.estimate, job.used, job.model.joint_names)
        text = ident.summary()
        if ident.apply:
            if self.holder.base_model is not ident.base:
                problem = 'the robot description changed during the identification'
            else:
                problem = self.holder.set_payload(job.estimate.link, payload_entry(job.estimate))
            response.applied = problem is None
            text += '; applied' if problem is None else '; not applied: %s' % problem
        response.success, response.message = True, text
        log.info('identify_payload: ' + text)
        return response

    def abort(self, problem):
        """Answer a collecting identification with ``problem`` (a fit already running finishes)."""
        ident = self.current
        if ident is None or ident.collection is None:
            return
        self.current = None
        ident.ticket.reply(IdentifyPayload.Response(success=False, message=problem))

    def destroy(self):
        self.thread.destroy()


def _stopped_answer(response):
    """The answer of an ~/identify_payload request still waiting when the node stops."""
    response.success, response.message = False, 'dynamics_node stopped before the identification answered'
    return response


def _fill_estimate(response, est, used, names):
    """IdentifyPayload response fields of a PayloadEstimate."""
    response.mass, response.mass_std = float(est.mass), float(est.mass_std)
    response.com = Point(x=float(est.com[0]), y=float(est.com[1]), z=float(est.com[2]))
    response.com_std = Vector3(x=float(est.com_std[0]), y=float(est.com_std[1]), z=float(est.com_std[2]))
    if est.inertia is not None:
        response.inertia = est.inertia.ravel().tolist()
        response.inertia_std = est.inertia_std.ravel().tolist()
    response.samples_used = int(used)
    response.name = list(names)
    response.residual_rms = est.residual_rms.tolist()
