"""A service of the torque node answered from a thread of its own, with rclpy's public API only.

``~/identify_payload`` may need seconds of joint states before it can answer,
and rclpy sends whatever a service callback returns as soon as it returns
(neither executor the nodes spin in waits for a coroutine callback). So the
service lives on a hidden node of the same process (``_<node>_services``: no
global arguments, no parameter, rosout or type-description services of its
own), under the main node's service name, spun by a ``SingleThreadedExecutor``
in a thread of its own (a ``MultiThreadedExecutor``: a second request is taken
while the first waits). Its callback hands the request to the node's own
thread as a :class:`Ticket` and waits (the GIL released) until that thread
answers with :meth:`Ticket.reply`, from a timer or any other callback. The
torque loop never waits for the request: the node takes the tickets when it
has time (:meth:`ServiceThread.pending`).

Large requests do not come here: the read-only dynamics services (trajectories,
accelerations, mass matrices) are served by ``dynamics_services``, another
process, which the launch files start beside the torque node under its
service names (docs/NODES.md, "Which requests go where").
"""
import queue
import threading
import time

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

#: [s] how often a waiting request checks that the node still runs.
WAIT_STEP = 0.1
#: [s] longest wait of the services' thread without a request (see ServiceThread._spin).
IDLE_WAIT = 2.0
#: Requests that may wait for their answers at once.
MAX_WAITING = 4


class Ticket:
    """One request waiting in the services' thread for its answer from the node's thread."""

    def __init__(self, request, response):
        self.request = request
        self.response = response          # the empty response of the request's type
        self.answered = False
        self._done = threading.Event()

    def reply(self, response):
        """Send ``response`` to the client (a no-op after the first call)."""
        if self.answered:
            return
        self.answered = True
        self.response = response
        self._done.set()

    def wait(self, stopped):
        """Wait for :meth:`reply`; False if ``stopped()`` became true first."""
        while not self._done.wait(WAIT_STEP):
            if stopped():
                return False
        return True


class ServiceThread:
    """Services of ``node`` served from a hidden node of the same process, in a thread of their own.

    Args:
        node: the main rclpy node (its context, name and namespace; its service names).
    """

    def __init__(self, node):
        self.node = Node('_%s_services' % node.get_name(), namespace=node.get_namespace(), context=node.context,
                         use_global_arguments=False, enable_rosout=False, start_parameter_services=False,
                         parameter_overrides=[Parameter('start_type_description_service', value=False)])
        self._main = node
        self._stopped = False
        self._pending = queue.SimpleQueue()
        self._in_callback = 0             # requests waiting in a callback (MultiThreadedExecutor: under the GIL)
        self._group = ReentrantCallbackGroup()
        self.executor = MultiThreadedExecutor(num_threads=MAX_WAITING, context=node.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True, name='services')
        self.thread.start()

    def create_deferred_service(self, srv_type, name, stopped_answer):
        """Serve ``name`` (resolved as the main node resolves it: '~/x' is private to it): each request
        becomes a :class:`Ticket` that :meth:`pending` hands to the node's thread; the client gets what
        that thread replies, or ``stopped_answer(response)`` if the node stops first."""
        def callback(request, response):
            ticket = Ticket(request, response)
            self._pending.put(ticket)
            self._in_callback += 1
            try:
                if ticket.wait(lambda: self._stopped or not self.node.context.ok()):
                    return ticket.response
                return stopped_answer(response)
            finally:
                self._in_callback -= 1
        return self.node.create_service(srv_type, self._main.resolve_service_name(name), callback,
                                        callback_group=self._group)

    def pending(self):
        """The tickets that came since the last call, oldest first (call it from the node's thread)."""
        tickets = []
        while True:
            try:
                tickets.append(self._pending.get_nowait())
            except queue.Empty:
                return tickets

    def _spin(self):
        # A request, destroy() (the executor's guard condition) or the context's shutdown wakes the wait;
        # its timeout is only a safety net.
        context = self.node.context
        while context.ok() and not self._stopped:
            try:
                self.executor.spin_once(timeout_sec=IDLE_WAIT)
            except Exception:
                if context.ok() and not self._stopped:
                    raise

    def destroy(self):
        """Stop the thread and wait for it (at most IDLE_WAIT + 1 s), then destroy the hidden node.

        The join matters: a daemon thread still inside the executor's wait when the interpreter
        finalizes is ended by CPython 3.11-3.13 with pthread_exit, which unwinds through rclpy's C++ and
        aborts the process or crashes it. A bare rclpy node with such a thread, sent SIGINT as soon as
        it spun: 7 of 20 runs crashed on exit without the join, 0 of 20 with it."""
        self._stopped = True
        waiting, deadline = self._in_callback, time.monotonic() + 2 * WAIT_STEP
        while self._in_callback and time.monotonic() < deadline:    # they answer with stopped_answer ...
            time.sleep(0.005)
        if waiting:
            time.sleep(0.05)                          # ... and the executor sends it after the callback returns
        self.executor.shutdown(timeout_sec=1.0)     # wakes the wait (the executor's guard condition)
        if self.thread is not threading.current_thread():
            self.thread.join(IDLE_WAIT + 1.0)
        self.node.destroy_node()
