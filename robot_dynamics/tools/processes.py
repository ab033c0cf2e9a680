"""Nodes of this package as child processes of the demo: start, wait, call, stop.

The demo (:mod:`robot_dynamics.tools.demo`) runs ``simulator_node`` and
``dynamics_node`` as a user would, ``python -m robot_dynamics.ros.<module>
--ros-args ...``, with this module::

    from robot_dynamics.tools.processes import start_node, stop_all, wait_until

    node = start_node('dynamics_node', {'urdf_path': 'arm.urdf'}, name='dynamics_node',
                      namespace='/arm2')
    try:
        wait_until(lambda: graph.count_subscribers(node.topic('joint_states')) > 0, 120,
                   'the joint_states subscription', processes=[node])
        ...
    finally:
        stop_all([node])

It does not import the nodes (nor rclpy): readiness is a predicate of the
caller's own ROS graph. What every child gets:

- its stdout and stderr, merged, in a log file (:meth:`NodeProcess.read_log`,
  :meth:`NodeProcess.log_tail`); parameters in a parameter file next to it,
  under the ``/**`` key, so any type and any node name or namespace work;
- the folder that holds this robot_dynamics package first on
  ``PYTHONPATH`` (the child runs the same package as its parent) and
  unbuffered output (the log is complete when the child dies);
- a session of its own: a Ctrl-C in the terminal reaches the parent only,
  which then stops its nodes in order (:func:`stop_all`: SIGINT, a node's
  clean shutdown, then SIGTERM, then SIGKILL, each followed by a bounded
  wait). A parent killed with SIGKILL leaves its nodes running.

The tests and benchmarks start their nodes with test/ros/node_process.py,
which builds on this module (any command line, an environment, death with
the parent, CPU time and memory).
"""
import json
import numbers
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

from ..errors import InputError, NodeExited, NodeTimeout

#: The folder that holds the robot_dynamics package: a checkout, or site-packages.
PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2]

#: Seconds :func:`stop_all` waits after each signal.
STOP_TIMEOUT = 5.0


def _yaml_value(value):
    """``value`` as a YAML scalar or flow sequence that rcl parses back to the same type.

    >>> _yaml_value('1.0'), _yaml_value(True), _yaml_value(3), _yaml_value(1), _yaml_value([0.5, 2.0])
    ('"1.0"', 'true', '3', '1', '[0.5, 2.0]')
    """
    if isinstance(value, str):
        return json.dumps(value)               # quoted: stays a string, even '1.0' or 'true'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))              # '1.0' stays a double; numpy floats too
    if isinstance(value, (list, tuple)) or type(value).__name__ == 'ndarray':
        return '[' + ', '.join(_yaml_value(v) for v in value) + ']'
    raise TypeError('parameter value %r: expected str, bool, int, float or a list of them' % (value,))


def write_params(path, params, node='/**'):
    """Write a ROS 2 parameter file with ``params`` ({name: value}) for ``node``; returns ``path``.

    ``node`` is a fully qualified node name or ``'/**'`` (any node).
    """
    lines = ['%s:' % node, '  ros__parameters:']
    lines += ['    %s: %s' % (k, _yaml_value(v)) for k, v in params.items()]
    path = pathlib.Path(path)
    path.write_text('\n'.join(lines) + '\n')
    return path


def ros_arguments(*, name=None, namespace=None, params_file=None, remaps=None, more=()):
    """The ``--ros-args`` section: node name, namespace, parameter file, remappings ({from: to}),
    then ``more``; [] if there is none."""
    ros = []
    if name:
        ros += ['-r', '__node:=%s' % name]
    if namespace:
        ros += ['-r', '__ns:=%s' % namespace]
    if params_file:
        ros += ['--params-file', str(params_file)]
    for a, b in (remaps or {}).items():
        ros += ['-r', '%s:=%s' % (a, b)]
    ros += [str(a) for a in more]
    return ['--ros-args'] + ros if ros else []


def child_env(env=None):
    """This process's environment for a child: :data:`PACKAGE_ROOT` first on ``PYTHONPATH``,
    unbuffered output, then ``env`` ({name: value}; None removes a variable)."""
    full = dict(os.environ)
    full['PYTHONPATH'] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), full.get('PYTHONPATH')) if p)
    full['PYTHONUNBUFFERED'] = '1'
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = str(value)
    return full


def spawn(argv, log_path, *, env=None, cwd=None):
    """Run ``argv`` in a session of its own, stdout and stderr into ``log_path``, stdin empty,
    with :func:`child_env` (``env``); its ``subprocess.Popen``."""
    with open(log_path, 'wb') as log:
        return subprocess.Popen([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=child_env(env),
                                cwd=None if cwd is None else str(cwd), start_new_session=True)


def node_files(label, log_path=None, params=None):
    """(log path, parameter file or None) of a node labelled ``label``: ``log_path`` (default
    ``<temporary folder>/<label>.log``) and, with ``params``, their file next to it."""
    if log_path is None:
        log_path = pathlib.Path(tempfile.mkdtemp(prefix='robot_dynamics_%s_' % label)) / ('%s.log' % label)
    log_path = pathlib.Path(log_path)
    params_file = None
    if params:
        params_file = write_params(log_path.with_name(log_path.stem + '.params.yaml'), params)
    return log_path, params_file


def start_node(module, params=None, *, name=None, namespace=None, log_path=None):
    """Start ``python -m robot_dynamics.ros.<module>`` as a child process; its :class:`NodeProcess`.

    Args:
        module: a node module of this package, e.g. ``'simulator_node'``.
        params: {name: value} parameters, written to a parameter file next to the log.
        name, namespace: the node's name and namespace (``'/arm2'``).
        log_path: the log file; default ``<temporary folder>/<name or module>.log``.
    """
    label = name or module
    log_path, params_file = node_files(label, log_path, params)
    argv = [sys.executable, '-m', 'robot_dynamics.ros.' + module]
    argv += ros_arguments(name=name, namespace=namespace, params_file=params_file)
    return NodeProcess(spawn(argv, log_path), label=label, log_path=log_path, name=name, namespace=namespace)


class NodeProcess:
    """A node running as a child process.

    Attributes:
        name: the node's name ('' if not known); namespace: its namespace ('/' for the root);
        label: the name used for the log; log_path: the log file; pid.
    """

    def __init__(self, popen, *, label, log_path, name=None, namespace=None):
        self._popen = popen
        self.label = label
        self.log_path = pathlib.Path(log_path)
        self.name = name or ''
        self.namespace = '/' + (namespace or '').strip('/')
        self.pid = popen.pid

    # --- the process ------------------------------------------------------------
    @property
    def returncode(self):
        return self._popen.returncode

    def poll(self):
        """The exit status, or None while it runs."""
        return self._popen.poll()

    def wait(self, timeout=None):
        """Wait for the exit; its status (subprocess.TimeoutExpired after ``timeout`` s)."""
        return self._popen.wait(timeout)

    def send_signal(self, sig):
        """Send ``sig`` unless the process has already exited and been reaped."""
        if self._popen.poll() is None:
            try:
                self._popen.send_signal(sig)
            except ProcessLookupError:
                pass

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGINT, then SIGTERM, then SIGKILL, each followed by up to ``timeout`` s of waiting.

        Returns the exit status (None only if even SIGKILL did not end it in time).
        """
        stop_all([self], timeout)
        return self.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # --- names ------------------------------------------------------------------
    @property
    def fqn(self):
        """The node's fully qualified name, '/namespace/name'."""
        return self.namespace.rstrip('/') + '/' + self.name

    def topic(self, relative):
        """Absolute name of a topic or service: '/x' as is, '~/x' private to the node, 'x' in its namespace."""
        if relative.startswith('/'):
            return relative
        if relative.startswith('~/'):
            if not self.name:
                raise InputError('%r is private to the node, whose name is not known: start it with name=...'
                                 % relative)
            return '%s/%s' % (self.fqn, relative[2:])
        return '%s/%s' % (self.namespace.rstrip('/'), relative)

    # --- the log -----------------------------------------------------------------
    def read_log(self):
        """Everything the node has written to stdout and stderr so far."""
        try:
            return self.log_path.read_text(errors='replace')
        except OSError:
            return ''

    def log_tail(self, lines=20):
        """The last ``lines`` lines of the log."""
        return '\n'.join(self.read_log().splitlines()[-lines:])

    # --- waiting ----------------------------------------------------------------------
    def check(self):
        """Raise :class:`NodeExited` (with the end of the log) if the process has exited."""
        if self.poll() is not None:
            raise NodeExited('%s exited with status %s:\n%s' % (self.label, self.returncode, self.log_tail()))

    def wait_until(self, predicate, timeout, what, *, step=None, period=0.01):
        """:func:`wait_until` on this process alone."""
        return wait_until(predicate, timeout, what, processes=[self], step=step, period=period)


def wait_until(predicate, timeout, what, *, processes=(), step=None, period=0.01):
    """Evaluate ``predicate()`` until it is truthy; returns that value.

    Between two evaluations ``step()`` runs (e.g. an executor's
    ``spin_once``), or this thread sleeps ``period`` s.

    Raises:
        NodeExited: one of ``processes`` has exited (with the end of its log).
        NodeTimeout: ``timeout`` s have passed (names ``what``, with the end of the logs).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        for proc in processes:
            if proc.poll() is not None:
                raise NodeExited('%s exited with status %s while waiting for %s:\n%s'
                                 % (proc.label, proc.returncode, what, proc.log_tail()))
        if time.monotonic() > deadline:
            logs = ''.join('\n--- end of the log of %s ---\n%s' % (p.label, p.log_tail()) for p in processes)
            raise NodeTimeout('timed out after %.0f s waiting for %s%s' % (timeout, what, logs))
        if step is not None:
            step()
        else:
            time.sleep(period)


def call_until_answered(client, request, timeout, what, *, resend_after=2.0, processes=(), step=None):
    """Send ``request`` on the rclpy ``client`` until an answer comes; the response.

    For requests that may be served twice with the same effect (pause,
    resume, a query) only. Fast DDS drops a response that the server sends
    before it has matched a new client's response reader (ros2/ros2#1024,
    ros2/rmw_fastrtps#467), which happens on a loaded machine even after
    ``client.service_is_ready()``: a request left unanswered for
    ``resend_after`` s is sent again, until ``timeout`` s have passed.

    Raises:
        NodeExited, NodeTimeout: as :func:`wait_until` (``what`` names the call).
    """
    deadline = time.monotonic() + timeout
    while True:
        future = client.call_async(request)
        left = deadline - time.monotonic()
        try:
            wait_until(future.done, min(resend_after, max(left, 0.0)), what, processes=processes, step=step)
            return future.result()
        except NodeTimeout:
            client.remove_pending_request(future)
            if time.monotonic() >= deadline:
                raise


def stop_all(processes, timeout=STOP_TIMEOUT):
    """Stop ``processes`` together: SIGINT to all, wait up to ``timeout`` s, then SIGTERM to
    those left, wait, then SIGKILL, wait. Every process that ended is reaped."""
    left = [p for p in processes if p.poll() is None]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if not left:
            return
        for p in left:
            p.send_signal(sig)
        deadline = time.monotonic() + timeout
        for p in left:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        left = [p for p in left if p.poll() is None]
