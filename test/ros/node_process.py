"""The tests' and benchmarks' nodes as child processes: any command line, ready, dead with us, CPU time.

The test harness over :mod:`robot_dynamics.tools.processes` (the demo's plain
helper: parameter file, log, session, :func:`wait_until`,
:func:`call_until_answered`, :func:`stop_all`, which this module passes on)::

    import node_process          # test/ros/ is on sys.path (pytest's rootdir, or the bench's own insert)

    node = node_process.start_node('dynamics_node', {'urdf_path': 'arm.urdf'}, name='dynamics_node',
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

What every child gets besides what the plain helper gives (log, parameter
file, ``PYTHONPATH``, unbuffered output, a session of its own):

- death with its parent (Linux ``PR_SET_PDEATHSIG``): SIGTERM when the
  thread that started it ends, even if the parent is killed with SIGKILL.
  Start nodes from a thread that lives as long as they should;
- an environment of the caller's (``env``) and a working directory (``cwd``);
- readiness waited for on start (``ready``), the node stopped if it does not
  come; its CPU time and resident memory (:meth:`NodeProcess.cpu_seconds`,
  :meth:`NodeProcess.rss_mb`).

Readiness is a predicate of the caller's own ROS graph: this module does
not import rclpy.
"""
import math
import os
import pathlib
import sys

from robot_dynamics.errors import InputError, NodeExited, NodeProcessError, NodeTimeout  # noqa: F401  (raised here)
from robot_dynamics.tools import processes
from robot_dynamics.tools.processes import (PACKAGE_ROOT, STOP_TIMEOUT, call_until_answered, spawn,  # noqa: F401
                                            stop_all, wait_until, write_params)

#: Seconds a node may take to be ready. Generous: on a cold numba cache a node
#: compiles its kernels before it subscribes (about 40 s).
READY_TIMEOUT = 120.0

# Runs first in the child: asks the kernel for SIGTERM when the parent thread
# ends, exits if the parent is already gone, then becomes the real command.
# A separate interpreter, not subprocess's preexec_fn, which may deadlock in a
# parent with threads (DDS has several).
_LAUNCHER = ('import ctypes, os, signal, sys\n'
             'ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n'   # PR_SET_PDEATHSIG
             'if os.getppid() != int(sys.argv[1]):\n'
             '    sys.exit(143)\n'
             'os.execvp(sys.argv[2], sys.argv[2:])\n')


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
    return argv + processes.ros_arguments(name=name, namespace=namespace, params_file=params_file,
                                          remaps=remaps, more=ros_args)


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
    log_path, params_file = processes.node_files(label, log_path, params)
    argv = node_argv(target, name=None if isinstance(target, (list, tuple)) else name,
                     namespace=None if isinstance(target, (list, tuple)) else namespace,
                     params_file=params_file, remaps=remaps, ros_args=ros_args, args=args)
    if sys.platform.startswith('linux'):
        argv = [sys.executable, '-c', _LAUNCHER, str(os.getpid())] + argv
    proc = NodeProcess(spawn(argv, log_path, env=env, cwd=cwd), label=label, log_path=log_path, name=name,
                       namespace=namespace)
    if ready is not None:
        try:
            proc.wait_until(ready, ready_timeout, what)
        except BaseException:
            proc.stop()
            raise
    return proc


class NodeProcess(processes.NodeProcess):
    """A node started by :func:`start_node`: the demo's :class:`robot_dynamics.tools.processes.NodeProcess`
    and its resources."""

    def cpu_seconds(self):
        """User + system CPU time [s] the process has used so far (:func:`cpu_seconds`)."""
        return cpu_seconds(self.pid)

    def rss_mb(self):
        """Resident memory [MB] (:func:`rss_mb`)."""
        return rss_mb(self.pid)


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
