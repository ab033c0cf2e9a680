"""How the nodes spin and stop: the executor (:func:`make_executor`) and the stop signals (:class:`StopSignals`).

Light on purpose (rclpy only, imported when used): the ``command_watchdog``
node spins and stops as the dynamics nodes do without importing their model
code. :mod:`.model_node` re-exports both names. :func:`run` is every node's
``main()``.
"""
import time

from ..errors import InputError, ParameterError

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
    EventsExecutor because bench/watchdog_timing.py shows that it keeps the
    timers on time at 1 kHz of joint states and keeps up with the stream,
    where the SingleThreadedExecutor lets its input queue lag (the bench's
    scenario is test/ros/watchdog_stream.py, whose decisions
    test/ros/test_ros_watchdog_timing.py asserts with either executor).
    Measured on the 2-core development machine (shared with other jobs),
    dynamics_node at 1 kHz, watchdog period 10 ms, joint_state_timeout
    100 ms, 13 runs each (the CPU share in the last 7), by that scenario
    when it was a timed test; the bench's medians are in docs/PERFORMANCE.md
    ('dynamics_node's watchdog under a 1 kHz stream'):

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


def run(node_class, args=None, configure=True):
    """``main()`` of a node: init, construct, configure, spin, clean shutdown on Ctrl-C/SIGTERM.

    A parameter error is logged with its explanation and exits with status 2. ``configure=False``:
    a lifecycle node, configured by its ``~/change_state`` service. SIGINT or SIGTERM while it
    spins stops the loop within one ``spin_once`` (0.1 s); the executor is shut down before the
    node is destroyed and before rclpy is, in that order (:class:`StopSignals` says why).
    """
    import signal
    import sys

    import rclpy

    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions

    signal.signal(signal.SIGTERM, signal.default_int_handler)     # KeyboardInterrupt, as SIGINT by default
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = None
    why = 'the context was shut down'
    try:
        node = node_class()
        try:
            if configure:
                node.configure()
        except ParameterError as exc:
            node.get_logger().fatal(str(exc))
            node.destroy_node()
            node = None
            rclpy.try_shutdown()
            sys.exit(2)
        executor = make_executor()
        executor.add_node(node)
        stop = StopSignals().install()
        node.get_logger().info('%s; spinning in %s' % ('configured' if configure else 'unconfigured (lifecycle)',
                                                        type(executor).__name__))
        # spin_once in a loop, not spin(): the Jazzy EventsExecutor's spin()
        # was seen not to run timers at all, spin_once() does.
        while stop.requested is None and node.context.ok():
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception:
                # Something else shut the context down while a callback was
                # publishing ("publisher's context is invalid"): a clean exit.
                if node.context.ok():
                    raise
        if stop.requested is not None:
            why = signal.Signals(stop.requested).name
            node.get_logger().info('%s: stopping' % why)
    except (KeyboardInterrupt, ExternalShutdownException):
        why = 'SIGINT or SIGTERM'
    except BaseException as exc:
        why = 'an error (%s: %s)' % (type(exc).__name__, exc)
        raise
    finally:
        if executor is not None:
            _end(node, executor, why)
        close(node, executor)


#: [s] longest wait of a clean stop for the answer to what final_stop sent (the controller's deactivation).
STOP_WAIT = 1.0


def _end(node, executor, why):
    """The node's :meth:`ModelNode.final_stop` on a clean stop, its answer waited for at most STOP_WAIT.

    Runs while the executor still spins the node, so the answer of the controller_manager can come; a context
    already shut down (nothing can be sent) or a failure here is logged, never raised over the stop's cause.
    """
    if node is None or not node.context.ok():
        return
    try:
        future = node.final_stop(why)
        deadline = time.monotonic() + STOP_WAIT
        while future is not None and not future.done() and time.monotonic() < deadline and node.context.ok():
            executor.spin_once(timeout_sec=0.01)
        if future is not None:
            node.report_stop(future)
    except Exception as exc:             # the stop goes on: destroy the node, shut rclpy down
        node.get_logger().error('final stop failed: %s: %s' % (type(exc).__name__, exc))
