"""How the nodes spin and stop: the executor (:func:`make_executor`) and the stop signals (:class:`StopSignals`).

Light on purpose (rclpy only, imported when used): the ``command_watchdog``
node spins and stops as the dynamics nodes do without importing their model
code. :mod:`.model_node` re-exports both names.
"""
from ..errors import InputError

#: Executors the nodes can spin in: ROBOT_DYNAMICS_EXECUTOR value -> rclpy class name.
EXECUTORS = {'events': 'EventsExecutor', 'single': 'SingleThreadedExecutor'}
#: The one they spin in unless ROBOT_DYNAMICS_EXECUTOR names another (see :func:`make_executor`).
DEFAULT_EXECUTOR = 'events'


def make_executor(kind=None):
    """The executor the nodes spin in: ``kind``, else ``$ROBOT_DYNAMICS_EXECUTOR``, else
    :data:`DEFAULT_EXECUTOR`; ``'events'`` or ``'single'``.

    ``'events'`` is rclpy's EventsExecutor (C++, ``rclpy.experimental``
    since Jazzy 7.1), ``'single'`` its SingleThreadedExecutor, which rebuilds
    its wait set in Python for every message. The default is the
    EventsExecutor because test/ros/test_ros_watchdog_timing.py shows that
    it keeps the timers on time at 1 kHz of joint states and keeps up with
    the stream, where the SingleThreadedExecutor lets its input queue lag.
    Measured on the 2-core development machine (shared with other jobs),
    dynamics_node at 1 kHz, watchdog period 10 ms, joint_state_timeout
    100 ms, 13 runs each (the CPU share in the last 7):

    ========================================  =============  ==============
    figure                                    EventsExec.    SingleThreaded
    ========================================  =============  ==============
    node CPU with the stream (of one core)    0.31-0.36      0.58-0.72
    watchdog calls per 0.5 s (of 50)          46-51          49-51
    longest watchdog interval per 0.5 s       10-76 ms       10-29 ms
    hold commands (one per watchdog call):    10.0 ms,       10.0 ms,
    median, p99, max interval                 11-31, 13-76   12-16, 13-45
    timeout noticed after the last usable     100-113 ms     100-110 ms
    state the node read
    timeout logged after the stream went bad  106-141 ms     109-190 ms
    timeouts while usable states came         0 runs         1 run
    ========================================  =============  ==============

    Both keep the timers on time (the EventsExecutor with a longer tail of
    late calls, none late by a timeout); the SingleThreadedExecutor takes
    twice the CPU and, when the machine is busy, reads the joint states up
    to 90 ms late, which delays the timeout action, or, past the timeout,
    fires it while usable states wait in its queue. Both are driven by
    ``spin_once`` in :func:`run`.
    """
    import os

    kind = kind or os.environ.get('ROBOT_DYNAMICS_EXECUTOR') or DEFAULT_EXECUTOR
    if kind not in EXECUTORS:
        raise InputError('ROBOT_DYNAMICS_EXECUTOR is %r; expected one of %s' % (kind, ', '.join(EXECUTORS)))
    if kind == 'events':
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:               # rclpy before Jazzy 7.1
            pass
    from rclpy.executors import SingleThreadedExecutor
    return SingleThreadedExecutor()


class StopSignals:
    """SIGINT and SIGTERM, once the executor spins, only ask :func:`run` to stop.

    rclpy's own handlers (``rclpy.init``'s default) shut the context down
    from its signal thread at the moment the signal comes, and chain to
    Python's, which raises KeyboardInterrupt wherever the main thread is. In
    the EventsExecutor (rclpy 7.1.5) either one, landing while the executor
    registers the node's subscriptions, timers and services, leaves a
    callback registered that its destructor then finds: the process aborts
    ("Destroying callback manager with callbacks remaining") or segfaults
    on exit. That happened to 15 of 25 dynamics_node runs sent SIGINT as
    soon as "configured; spinning" was read from their output, and to none
    of 36 sent it 30 ms to 1 s later. So
    :func:`run` starts rclpy without its signal handlers, lets Ctrl-C raise
    KeyboardInterrupt while it constructs and configures the node (nothing
    spins yet), and from the first spin on uses these handlers, which set
    :attr:`requested`; the loop then shuts the executor down while the
    context is still up, destroys the node, and only then shuts rclpy down.
    The EventsExecutor installs its own SIGINT/SIGTERM handlers when it is
    made, so :meth:`install` comes after it.
    """

    def __init__(self):
        self.requested = None           # the signal's number, once one came

    def install(self):
        import signal
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self._handle)
        return self

    def _handle(self, number, frame):
        self.requested = number


def spin_until_stopped(node, executor, period=0.1, after_each=None):
    """Spin ``node`` in ``executor`` until SIGINT or SIGTERM (:class:`StopSignals`, installed here, after the
    executor was made) or the end of its context; ``after_each()`` after every ``spin_once(period)``. Returns
    the signal's name, or None when the context ended."""
    import signal
    stop = StopSignals().install()
    while stop.requested is None and node.context.ok():
        executor.spin_once(timeout_sec=period)
        if after_each is not None:
            after_each()
    return None if stop.requested is None else signal.Signals(stop.requested).name


def close(node, executor):
    """The end of a spinning process, in the order :class:`StopSignals` explains: the executor shut down while
    the context is up, the node destroyed, rclpy shut down (each may be None)."""
    import rclpy
    if executor is not None:
        executor.shutdown()
    if node is not None:
        node.destroy_node()
    rclpy.try_shutdown()
