"""robot_dynamics.ros.service_thread in one process (rclpy, no kernels): a request waits in the services'
thread for the answer the node's own thread gives from a timer, while that thread's executor runs; a second
request is taken while the first waits; the services are the main node's; a request still waiting when the
thread is destroyed gets the stopped answer."""
import sys
import threading
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from std_srvs.srv import Trigger

from robot_dynamics.ros.service_thread import ServiceThread

TICKS = 10                   # the node's timer periods the first request waits


def _stopped(response):
    response.success, response.message = False, 'stopped'
    return response


class Served:
    """A main node whose timer answers the services' thread's tickets, and a client node."""

    def __init__(self, kind):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('main_%s' % kind, namespace='/st_units', context=self.context)
        self.client_node = rclpy.create_node('client_%s' % kind, namespace='/st_units', context=self.context)
        self.thread = ServiceThread(self.node)
        self.thread.create_deferred_service(Trigger, '~/deferred', _stopped)
        self.waiting, self.ticks, self.threads = None, 0, set()
        self.node.create_timer(0.01, self.tick)
        # The EventsExecutor enables faulthandler on sys.stderr, which pytest's capture
        # replaces by an object without a file descriptor (as in probes.FastPeer).
        captured, sys.stderr = sys.stderr, sys.__stderr__
        try:
            self.executor = (EventsExecutor if kind == 'events' else SingleThreadedExecutor)(context=self.context)
        finally:
            sys.stderr = captured
        self.executor.add_node(self.node)
        self.executor.add_node(self.client_node)
        self.stop = threading.Event()
        self.spinner = threading.Thread(target=self._spin)
        self.spinner.start()

    def _spin(self):
        while not self.stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def tick(self):
        """The node's thread: the first request waits TICKS periods, any later one is answered at once."""
        self.ticks += 1
        self.threads.add(threading.current_thread().name)
        for ticket in self.thread.pending():
            if self.waiting is None:
                self.waiting = (ticket, self.ticks)
            else:
                ticket.reply(Trigger.Response(success=True, message='at once'))
        if self.waiting is not None and not self.waiting[0].answered and self.ticks - self.waiting[1] >= TICKS:
            self.waiting[0].reply(Trigger.Response(success=True, message='after %d ticks'
                                                   % (self.ticks - self.waiting[1])))

    def close(self, destroy=True):
        if destroy:
            self.thread.destroy()
        self.stop.set()
        self.spinner.join(timeout=2)
        self.executor.shutdown()
        rclpy.try_shutdown(context=self.context)


def _wait(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.005)
    return predicate()


@pytest.mark.parametrize('kind', ['events', 'single'])
def test_a_request_waits_for_the_timer_while_a_second_is_answered_at_once(kind):
    served = Served(kind)
    try:
        client = served.client_node.create_client(Trigger, '/st_units/main_%s/deferred' % kind)
        assert client.wait_for_service(timeout_sec=5)           # the main node's private name
        first = client.call_async(Trigger.Request())
        assert _wait(lambda: served.waiting is not None)
        second = client.call_async(Trigger.Request())
        assert _wait(lambda: first.done() and second.done())
        assert second.result().message == 'at once' and second.result().success
        assert first.result().message == 'after %d ticks' % TICKS and first.result().success
        assert served.ticks >= TICKS                              # the node's timer ran while the first waited
        assert 'services' not in served.threads                   # ... in the node's thread, not the services'
    finally:
        served.close()


def test_a_request_waiting_when_the_thread_is_destroyed_gets_the_stopped_answer():
    served = Served('single')
    try:
        client = served.client_node.create_client(Trigger, '/st_units/main_single/deferred')
        assert client.wait_for_service(timeout_sec=5)
        served.ticks = -10 ** 9                                   # never answered by the timer
        served.waiting = None
        future = client.call_async(Trigger.Request())
        assert _wait(lambda: served.waiting is not None)
        t0 = time.monotonic()
        served.thread.destroy()
        assert _wait(future.done, 3.0), 'no answer after destroy'
        assert future.result().message == 'stopped' and not future.result().success
        assert time.monotonic() - t0 < 2.0
    finally:
        served.close(destroy=False)
