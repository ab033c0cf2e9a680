"""A second node in the caller's process, on its own context, spun by rclpy's EventsExecutor in a thread (about
four times less Python work per message than the ``ros`` fixture's SingleThreadedExecutor): it takes a node's
1 kHz outputs. Shared by the tests' probes (probes.FastPeer) and the watchdog scenario (watchdog_stream.Listener,
also run by bench/watchdog_timing.py outside pytest)."""
import sys
import threading


class Peer:
    """The node ``name`` (:attr:`node`), spun until :meth:`close`."""

    def __init__(self, name):
        import rclpy
        from rclpy.experimental import EventsExecutor
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        # It enables faulthandler on sys.stderr, which pytest's capture replaces by an object without a file
        # descriptor.
        captured, sys.stderr = sys.stderr, sys.__stderr__
        try:
            self.executor = EventsExecutor(context=self.context)
        finally:
            sys.stderr = captured
        self.executor.add_node(self.node)
        self._stop = False
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        while not self._stop and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:           # shut down under it
                return

    def close(self):
        import rclpy
        self._stop = True
        self._thread.join(timeout=2.0)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
