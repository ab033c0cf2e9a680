"""A service that answers later, from another callback of the node's single thread.

rclpy (Jazzy) sends whatever a service callback returns, as soon as it
returns, and neither executor the nodes spin in waits for a coroutine
callback (tried: the EventsExecutor passes the coroutine itself to
``send_response``, which raises TypeError). A service that needs seconds of
joint states would have to block the thread that computes the torques. So
:class:`DeferredService` lets the handler return None: the request's
header is kept (the executor hands it to ``Service.send_response`` right
after the callback, in the same thread, and that call goes through the
instance attribute set here), and :meth:`Ticket.reply` answers it later, from
a timer or any other callback. Both executors of :func:`.model_node.make_executor`
work this way (test/ros/test_ros_identify_payload.py checks the EventsExecutor
end to end, test/ros/test_ros_observer_units.py both in one process).
"""


class Ticket:
    """One request waiting for its answer; :meth:`reply` sends it (once)."""

    def __init__(self, service):
        self._service = service
        self._header = None
        self._response = None
        self.answered = False

    def reply(self, response):
        """Send ``response`` to the client (a no-op after the first call)."""
        if self.answered:
            return
        self.answered = True
        if self._header is None:               # replied before the executor handed over the header
            self._response = response
        else:
            self._service._send(response, self._header)


class DeferredService:
    """``node.create_service`` whose handler may answer later.

    Args:
        node: the rclpy node.
        srv_type, name: as for ``create_service``.
        handler: ``handler(request, response, ticket)`` returns the response
            to send now, or None to answer later with ``ticket.reply(response)``.
        **kwargs: passed on to ``create_service`` (callback_group, qos_profile).
    """

    def __init__(self, node, srv_type, name, handler, **kwargs):
        self._handler = handler
        self._later = srv_type.Response()           # the marker a deferred callback returns
        self._waiting = None
        self.service = node.create_service(srv_type, name, self._callback, **kwargs)
        self._send = self.service.send_response     # the bound original
        self.service.send_response = self._route    # what the executor calls after the callback

    def _callback(self, request, response):
        ticket = Ticket(self)
        answer = self._handler(request, response, ticket)
        if answer is not None:
            ticket.answered = True
            return answer
        self._waiting = ticket
        return self._later

    def _route(self, response, header):
        if response is not self._later:
            self._send(response, header)
            return
        ticket, self._waiting = self._waiting, None
        ticket._header = header
        if ticket._response is not None:
            self._send(ticket._response, header)
