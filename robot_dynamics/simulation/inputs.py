"""Simulator inputs from message fields, checked (no ROS needed).

The simulator node takes commands and wrenches from the network, where
anything can come: wrong lengths, NaN, unknown or repeated names, arrays of
millions of entries. These functions turn message fields into the
arguments of :meth:`robot_dynamics.simulation.Simulator.set_command` /
``apply_wrench``, or raise :class:`CommandError` saying what is wrong, so
that the node can drop the message, count it and keep the simulation as it
was. They cost a few microseconds per message and are unit-tested without
DDS. Arrays may be ``array.array('d')`` (what rclpy gives), lists or numpy
arrays.

JointState commands follow the ros2_control topic-based hardware
(``joint_state_topic_hardware_interface/JointStateTopicSystem``), which
publishes, for each joint of its ``<ros2_control>`` tag in order, the value
of each of the joint's command interfaces in the field of that name. The
mode of each named joint is therefore the first of ``position``,
``velocity``, ``effort`` that holds a value for it (see :func:`joint_command`).
"""
import math

import numpy as np

from ..errors import CommandError

#: Field order that decides a joint's mode: the first field with a value wins.
FIELDS = ('position', 'velocity', 'effort')


def _floats(x):
    """Zero-copy float64 view of an array.array('d') / float64 ndarray; a copy otherwise."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x
    try:
        return np.frombuffer(x, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise CommandError('values must be numbers') from None


def effort_command(data, joints):
    """Check a Float64MultiArray effort command given in the order of ``joints``.

    Args:
        data: the message's ``data`` (one effort [N m or N] per entry of ``joints``).
        joints: the joint names the values are for, in order (the node's ``joints``).

    Returns:
        (len(joints),) float64 array (a view of ``data`` when it is an array.array).

    Raises:
        CommandError: wrong number of values or a non-finite one (naming the joint).
    """
    n = len(joints)
    if len(data) != n:
        raise CommandError('effort command has %d values, expected %d (one per joint of the '
                           "'joints' parameter: %s)" % (len(data), n, ', '.join(joints)))
    v = _floats(data)
    if not math.isfinite(v.sum()):
        bad = [j for j, x in zip(joints, v) if not math.isfinite(x)]
        raise CommandError('effort command is not finite for %s' % ', '.join(bad))
    return v


def joint_command(names, position, velocity, effort, index):
    """Decode a sensor_msgs/JointState command into per-joint modes and values.

    The rule (that of the topic-based ros2_control hardware interface):

    - ``name`` lists the commanded joints, each once, all of them model joints;
      the other joints keep their commands.
    - A field (``position``, ``velocity``, ``effort``) is either empty (not
      used) or has exactly one value per name.
    - Each joint's mode is the first of position, velocity, effort whose
      value for it is not NaN; NaN means "no value in this field for this
      joint", which lets one message mix modes. A position given together
      with a velocity makes a position command (the velocity is not used).
    - Infinite values, a joint with NaN in every filled field, and anything
      else above are errors: the whole message is rejected.

    Args:
        names: joint names of the message.
        position, velocity, effort: the message's fields [rad or m, rad/s or
            m/s, N m or N].
        index: {model joint name: index in model order}.

    Returns:
        (joints, values, modes): the joint names (list), a (n,) float64 array
        and a list of mode names ('position', 'velocity', 'effort').

    Raises:
        CommandError: saying what is wrong.
    """
    n = len(names)
    if n == 0:
        raise CommandError('joint command names no joint')
    if n > len(index):
        raise CommandError('joint command names %d joints, the model has %d' % (n, len(index)))
    table = np.full((len(FIELDS), n), np.nan)
    used = False
    for k, (label, values) in enumerate(zip(FIELDS, (position, velocity, effort))):
        m = len(values)
        if m == 0:
            continue
        if m != n:
            raise CommandError('joint command %s has %d values for %d names (expected %d or none)'
                               % (label, m, n, n))
        table[k] = _floats(values)
        used = True
    if not used:
        raise CommandError('joint command has no position, velocity or effort values')
    if np.isinf(table).any():
        k, j = np.argwhere(np.isinf(table))[0]
        raise CommandError('joint command %s for %s is infinite' % (FIELDS[k], names[j]))
    given = ~np.isnan(table)
    has_value = given.any(axis=0)
    if not has_value.all():
        j = int(np.flatnonzero(~has_value)[0])
        raise CommandError('joint command has no value for %s (NaN in every field)' % names[j])
    joints = list(names)
    unknown = [j for j in joints if j not in index]
    if unknown:
        raise CommandError('joint command names %s, not joint(s) of the model (its joints: %s)'
                           % (', '.join(repr(u) for u in unknown[:5]), ', '.join(index)))
    if len(set(joints)) != n:
        dup = sorted({j for j in joints if joints.count(j) > 1})
        raise CommandError('joint command names %s more than once' % ', '.join(dup))
    first = np.argmax(given, axis=0)                      # first field with a value, per joint
    values = table[first, np.arange(n)]
    return joints, values, [FIELDS[k] for k in first]


def wrench_values(force, torque):
    """(6,) ``[fx fy fz nx ny nz]`` from geometry_msgs Vector3s; CommandError if not finite."""
    w = np.array([force.x, force.y, force.z, torque.x, torque.y, torque.z], dtype=float)
    if not np.isfinite(w).all():
        raise CommandError('wrench is not finite: %s' % w)
    return w


def stamp(t):
    """(sec, nanosec) of a time ``t`` >= 0 [s], as builtin_interfaces/Time holds it."""
    ns = int(round(t * 1e9))
    return ns // 1_000_000_000, ns % 1_000_000_000


def joint_state_update(names, position, velocity, index):
    """Decode a (partial) joint state to set: by name, positions, optional velocities.

    Args:
        names: joint names, each a model joint, each once.
        position: one position per name [rad or m].
        velocity: one velocity per name, or empty (the named joints stop).
        index: {model joint name: index in model order}.

    Returns:
        (idx, q, qd): (n,) int indices into model order and (n,) float64 arrays.

    Raises:
        CommandError: saying what is wrong.
    """
    n = len(names)
    if n == 0:
        raise CommandError('the joint state names no joint')
    if n > len(index):
        raise CommandError('the joint state names %d joints, the model has %d' % (n, len(index)))
    if len(position) != n:
        raise CommandError('position has %d values for %d names' % (len(position), n))
    if len(velocity) not in (0, n):
        raise CommandError('velocity has %d values for %d names (expected %d or none)' % (len(velocity), n, n))
    names = list(names)
    unknown = [j for j in names if j not in index]
    if unknown:
        raise CommandError('unknown joint(s) %s (the model has: %s)'
                           % (', '.join(repr(u) for u in unknown[:5]), ', '.join(index)))
    if len(set(names)) != n:
        dup = sorted({j for j in names if names.count(j) > 1})
        raise CommandError('joint(s) named twice: %s' % ', '.join(dup))
    q = np.array(_floats(position), dtype=float)
    qd = np.array(_floats(velocity), dtype=float) if len(velocity) else np.zeros(n)
    for label, a in (('position', q), ('velocity', qd)):
        if not np.isfinite(a).all():
            raise CommandError('%s is not finite for %s' % (label, names[int(np.flatnonzero(~np.isfinite(a))[0])]))
    return np.array([index[j] for j in names], dtype=np.intp), q, qd
