"""Probes shared by the ROS robustness tests (test_ros_fuzz.py, test_ros_faults.py).

- :class:`Diagnostics`: the latest /diagnostics values of one node, and waits on them.
- :class:`FastPeer`: a node of the test process on its own context, spun by
  rclpy's EventsExecutor in a thread, for tests that receive thousands of
  messages.
"""
import os
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray

from conftest import wait_for
from peer import Peer


class Diagnostics:
    """The latest /diagnostics values of one node."""

    def __init__(self, ros, fqn, status='dynamics'):
        """ros: anything with a ``node`` (the ``ros`` fixture, a FastPeer);
        fqn: the node's fully qualified name; status: the second part of its
        status name ('<fqn>: <status>', ModelNode.status_name)."""
        self.name = '%s: %s' % (fqn.lstrip('/'), status)
        self.latest = None
        self.count = 0
        self.history = []                 # (time.monotonic() of arrival, values)
        self._lock = threading.Lock()
        self.sub = ros.node.create_subscription(DiagnosticArray, '/diagnostics', self, 100)

    def __call__(self, array_msg):
        for status in array_msg.status:
            if status.name == self.name:
                values = {kv.key: kv.value for kv in status.values}
                values['_level'] = status.level
                values['_message'] = status.message
                values['_stamp'] = array_msg.header.stamp.sec + 1e-9 * array_msg.header.stamp.nanosec  # [s], node's clock
                with self._lock:
                    self.latest = values
                    self.count += 1
                    self.history.append((time.monotonic(), values))

    def get(self):
        with self._lock:
            return self.latest

    def wait(self, predicate, timeout=10.0):
        """The first values (from now on) that satisfy ``predicate``; None after timeout."""
        def check():
            v = self.get()
            return v if v is not None and predicate(v) else None
        return wait_for(check, timeout, 0.01)

    def stable(self, timeout=10.0):
        """Values once messages_in has not changed over two reports."""
        deadline = time.monotonic() + timeout
        last = None
        seen = self.count
        while time.monotonic() < deadline:
            if self.count > seen:
                seen = self.count
                v = self.get()
                if last is not None and v['messages_in'] == last['messages_in']:
                    return v
                last = v
            time.sleep(0.01)
        return None


class FastPeer(Peer):
    """A second node of this process (:class:`peer.Peer`) that takes the node's outputs."""

    def __init__(self):
        super().__init__('rd_fuzz_%d' % os.getpid())
