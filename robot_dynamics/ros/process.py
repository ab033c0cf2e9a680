"""A ROS 2 node as a child process: start it, wait until it is ready, stop it, read its CPU time.

The demo, the benchmarks and the tests start their nodes with this module::

    from robot_dynamics.ros.process import start_node

    node = start_node('dynamics_node', {'urdf_path': 'arm.urdf'}, name='dynamics_node',
                      namespace='/arm2')
    try:
        node.wait_until(lambda: graph.count_subscribers(node.topic('joint_states')) > 0,
                        120, 'the joint_states subscription')
        ...
        print(node.cpu_seconds(), node.read_log())
    finally:
        node.stop()

``target`` is a node module of this package (``'dynamics_node'``, run as
``python -m robot_dynamics.ros.dynamics_node``), any module
(``'package.module'``, run with ``python -m``), or a command line
(``[executable, arg, ...]``: a script, a ``ros2 run`` line) that is run as
given.

What every child gets:

- its stdout and stderr, merged, in a log file (:meth:`NodeProcess.read_log`,
  :meth:`NodeProcess.log_tail`); parameters in a parameter file next to it,
  under the ``/**`` key, so any type and any node name or namespace work;
- this checkout first on ``PYTHONPATH`` (``python -m`` runs this source
  tree) and unbuffered output (the log is complete when the child dies);
- a session of its own: a Ctrl-C in the terminal reaches the parent only,
  which then stops its nodes in order;
- death with its parent (Linux ``PR_SET_PDEATHSIG``): SIGTERM when the
  thread that started it ends, even if the parent is killed with SIGKILL.
  Start nodes from a thread that lives as long as they should.

:meth:`NodeProcess.stop` and :func:`stop_all` send SIGINT (a node's clean
shutdown, model_node.StopSignals), then SIGTERM, then SIGKILL, each
followed by a bounded wait.
Readiness is a predicate of the caller's own ROS graph
(:meth:`NodeProcess.wait_until`): this module does not import rclpy.
"""
import json
import math
import numbers
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

from ..errors import InputError, NodeExited, NodeProcessError, NodeTimeout  # noqa: F401  (raised here)

#: The folder that holds the robot_dynamics package: a checkout, or site-packages.
PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2]

#: Seconds a node may take to be ready. Generous: on a cold numba cache a node
#: compiles its kernels before it subscribes (about 40 s).
READY_TIMEOUT = 120.0

#: Seconds :meth:`NodeProcess.stop` waits after each signal.
STOP_TIMEOUT = 5.0

# Runs first in the child: asks the kernel for SIGTERM when the parent thread
# ends, exits if the parent is already gone, then becomes the real command.
# A separate interpreter, not subprocess's preexec_fn, which may deadlock in a
# parent with threads (DDS has several).
_LAUNCHER = ('import ctypes, os, signal, sys\n'
             'ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n'   # PR_SET_PDEATHSIG
             'if os.getppid() != int(sys.argv[1]):\n'
             '    sys.exit(143)\n'
             'os.execvp(sys.argv[2], sys.argv[2:])\n')


def _yaml_value(value):
    """``value`` as a YAML scalar or flow sequence that rcl parses back to the same type."""
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


def node_argv(target, *, name=None, namespace=None, params_file=None, remaps=None, ros_args=(), args=()):
    """The command line of ``target`` (see the module doc) with its ROS arguments.

    For a module, ``args`` come before ``--ros-args``, then the node name,
    namespace, parameter file, remappings ({from: to}) and ``ros_args``. A
    command line is kept as given; the ROS arguments asked for follow it in
    a ``--ros-args`` section of their own.
    """
    if isinstance(target, (list, tuple)):
        argv = [str(a) for a in target] + [str(a) for a in args]
    elif isinstance(target, str) and target:
        module = target if '.' in target else 'robot_dynamics.ros.' + target
        argv = [sys.executable, '-m', module] + [str(a) for a in args]
    else:
        raise InputError('target: expected a module name or a command line (list), got %r' % (target,))
    ros = []
    if name:
        ros += ['-r', '__node:=%s' % name]
    if namespace:
        ros += ['-r', '__ns:=%s' % namespace]
    if params_file:
        ros += ['--params-file', str(params_file)]
    for a, b in (remaps or {}).items():
        ros += ['-r', '%s:=%s' % (a, b)]
    ros += [str(a) for a in ros_args]
    return argv + (['--ros-args'] + ros if ros else [])


def _child_env(env):
    full = dict(os.environ)
    full['PYTHONPATH'] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), full.get('PYTHONPATH')) if p)
    full['PYTHONUNBUFFERED'] = '1'
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = str(value)
    return full


def _label(target):
    """A short name for the log of ``target``: the module or the program."""
    if not isinstance(target, (list, tuple)):
        return str(target).rsplit('.', 1)[-1]
    argv = [str(a) for a in target]
    if len(argv) > 1 and pathlib.Path(argv[0]).name.startswith('python'):
        argv = argv[1:]
        if argv[0] == '-m' and len(argv) > 1:
            return argv[1].rsplit('.', 1)[-1]
    return pathlib.Path(argv[0]).stem if argv else 'node'


def start_node(target, params=None, *, name=None, namespace=None, remaps=None, ros_args=(), args=(),
               env=None, log_path=None, cwd=None, ready=None, ready_timeout=READY_TIMEOUT,
               what='the node to be ready'):
    """Start a node as a child process; returns its :class:`NodeProcess`.

    Args:
        target: a node module of this package (``'simulator_node'``), a module
            (``'pkg.module'``) or a command line (list), see the module doc.
        params: {name: value} parameters, written to a parameter file.
        name, namespace: the node's name and namespace (``'/arm2'``). For a
            module they are set on the command line; for a command line they
            only record what it sets (:meth:`NodeProcess.topic` uses them).
        remaps: {from: to} remappings; ros_args: more ROS arguments;
        args: arguments of the program itself, before ``--ros-args``.
        env: variables to set in the child's environment (None removes one);
            the rest is inherited.
        log_path: the log file; default ``<temporary folder>/<name>.log``.
        cwd: working directory of the child (default: this process's).
        ready: if given, a predicate waited for (:meth:`NodeProcess.wait_until`,
            ``ready_timeout`` s); the node is stopped if it does not come true.

    Raises:
        NodeExited, NodeTimeout: only with ``ready``, with the end of the log.
    """
    label = name or _label(target)
    if log_path is None:
        log_path = pathlib.Path(tempfile.mkdtemp(prefix='robot_dynamics_%s_' % label)) / ('%s.log' % label)
    log_path = pathlib.Path(log_path)
    params_file = None
    if params:
        params_file = write_params(log_path.with_name(log_path.stem + '.params.yaml'), params)
    argv = node_argv(target, name=None if isinstance(target, (list, tuple)) else name,
                     namespace=None if isinstance(target, (list, tuple)) else namespace,
                     params_file=params_file, remaps=remaps, ros_args=ros_args, args=args)
    if sys.platform.startswith('linux'):
        argv = [sys.executable, '-c', _LAUNCHER, str(os.getpid())] + argv
    with open(log_path, 'wb') as log:
        popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=_child_env(env), cwd=None if cwd is None else str(cwd),
                                 start_new_session=True)
    proc = NodeProcess(popen, label=label, log_path=log_path, name=name, namespace=namespace)
    if ready is not None:
        try:
            proc.wait_until(ready, ready_timeout, what)
        except BaseException:
            proc.stop()
            raise
    return proc


class NodeProcess:
    """A node started by :func:`start_node`.

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

    # --- resources --------------------------------------------------------------------
    def cpu_seconds(self):
        """User + system CPU time [s] the process has used so far (:func:`cpu_seconds`)."""
        return cpu_seconds(self.pid)

    def rss_mb(self):
        """Resident memory [MB] (:func:`rss_mb`)."""
        return rss_mb(self.pid)


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


def cpu_seconds(pid):
    """User + system CPU time [s] process ``pid`` has used so far (Linux ``/proc/<pid>/stat``).

    Divide the difference of two readings by the wall time between them for
    the share of one core.
    """
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()      # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')   # utime + stime


def rss_mb(pid):
    """Resident memory [MB] of process ``pid`` (VmRSS of ``/proc/<pid>/status``); NaN if it is gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return math.nan
