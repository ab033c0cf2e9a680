"""A simulated arm run against the wall clock: simulator_node's behaviour without ROS.

:class:`SimulationSession` holds one :class:`Simulator` (rebuilt with every
model) and does what simulator_node promises (docs/NODES.md,
docs/SIMULATION.md "The ROS 2 node"), with the messages already taken apart:

- stepping: the steps due at each wall-clock tick (:class:`.pacing.Pacer`,
  or as fast as possible), a joint state every ``pub_every`` steps (the
  ``publish`` callback), the command timeout, a failed step;
- commands: effort and joint commands and wrenches, checked
  (:mod:`.inputs`), counted, a bad one rejected with a throttled warning;
- a new model: the state, time, commands and wrenches carried over when the
  joints are the same, else a fresh start from the initial state;
- reset, pause and set_state, answered with the node's texts;
- the stamp of the current state on the system clock (:meth:`SimulationSession.state_stamp_ns`);
- the diagnostic values.

The node converts messages, calls these methods and publishes. ``log`` is an
object with ``info``, ``warning`` and ``error`` taking a text and rclpy's
``throttle_duration_sec`` / ``once`` keywords (the node's logger); the wall
clock is ``clock()`` [s] (``time.perf_counter``) and the system clock
``system_clock()`` [ns] (``time.time_ns``), so that tests can set them.
"""
import logging
import time

import numpy as np

from ..errors import CommandError
from .build import build_simulator, carry_over, command_joints, initial_state
from .inputs import effort_command, joint_command, joint_state_update, wrench_values
from .pacing import Pacer, StateStamps
from .robot_emulation import RobotGravityCompensation
from .simulator import SimulationError

#: Wall-clock time [s] one tick may run the physics when real_time_factor is 0,
#: before it hands the executor back to the other callbacks.
FAST_TICK_BUDGET = 0.002


class PythonLog:
    """rclpy's logger calls on Python's logging (the throttle and once keywords are ignored)."""

    def __init__(self, name=__name__):
        self._log = logging.getLogger(name)

    def info(self, text, **_):
        self._log.info(text)

    def warning(self, text, **_):
        self._log.warning(text)

    def error(self, text, **_):
        self._log.error(text)


class SimulationSession:
    """One simulated arm over time (see the module doc).

    Args:
        settings: a :class:`.build.SimulationSettings`.
        publish: called with no argument when a joint state is due (every ``pub_every`` steps).
        log: the logger (default: Python's logging).
        clock: wall clock [s].
        system_clock: the clock of the stamps [integer ns] (:meth:`state_stamp_ns`).
        contact: called with each model, returns the :class:`~robot_dynamics.contact.stepping.ContactStepper`
            its simulator steps with, or None (no contact); a ValueError it raises refuses the model.

    Attributes:
        sim: the :class:`Simulator`, None until the first model.
        steps: physics steps done (never reset); counts: the counters of /diagnostics.
    """

    def __init__(self, settings, publish=None, log=None, clock=time.perf_counter, contact=None,
                 system_clock=time.time_ns):
        self.settings = settings
        self.contact = contact
        self.dt, self.pub_every = settings.dt, settings.pub_every
        self.publish = publish or (lambda: None)
        self.log = log or PythonLog()
        self.clock, self.system_clock = clock, system_clock
        self.sim = None
        self.cmd_joints = []                # the order of the effort commands, set with each model
        self.cmd_joints_arg = None
        self.index, self.links = {}, frozenset()
        self.q0 = self.qd0 = None           # the state ~/reset returns to
        self.robot_gravity = None           # robot_compensates_gravity: the emulated robot controller's g(q)
        self.paused = bool(settings.start_paused)
        self.pacer = None                   # set by start() when real_time_factor > 0
        self.stamps = None                  # the pacer's StateStamps
        self.steps = 0                      # physics steps done, never reset
        self.since_pub = 0                  # steps since the last joint state
        self.commanded = False              # a command is in force (not timed out, not reset)
        self.last_command_time = 0.0        # simulated time of the last command [s]
        self.fresh_command = False          # a command not used by a physics step yet
        self.counts = {'effort_commands': 0, 'joint_commands': 0, 'wrenches': 0, 'rejected': 0,
                       'superseded': 0, 'timeouts': 0, 'simulation_errors': 0, 'joint_states': 0,
                       'non_finite_outputs': 0, 'odometry': 0}
        self.last_rejection = ''
        self.ticks = TickStats(clock())
        self._last_paused_pub = 0.0

    # --- model ----------------------------------------------------------------
    def set_model(self, model, joints_changed, actuated):
        """Simulate ``model`` (``actuated``: its joints with motors); None, or why it cannot be simulated.

        With the same joints as before (a payload, a new description of the same arm) the state,
        time, commands and wrenches carry over; otherwise the arm starts again from the initial
        state, the time going on. If this fails, the previous simulation (if any) keeps running.
        """
        s = self.settings
        names = list(model.joint_names)
        try:
            cmd_joints, cmd_idx = command_joints(model, s, actuated)
            q0, qd0 = initial_state(model, s, cmd_joints, cmd_idx, self.log.warning)
            sim = build_simulator(model, s, q0, qd0, cmd_idx, None if list(actuated) == names else list(actuated),
                                  self.log.warning, contact=self.contact(model) if self.contact else None)
        except ValueError as exc:
            return 'the model does not fit the simulator: %s' % exc
        q0, qd0 = sim.q, sim.qd                        # a closed-loop model's: on its loops
        old = self.sim
        if self.robot_gravity is not None and self.robot_gravity.sim is old:
            self.robot_gravity.restore()               # the user's command carries over, not the robot's sum
        if s.robot_compensates_gravity and (model.root_joint is not None or model.loops):
            return ("parameter 'robot_compensates_gravity' emulates a fixed-base arm's controller; robot %r has %s"
                    % (model.name, 'closed loops' if model.loops else 'a %s base' % model.root_joint))
        if old is not None and not joints_changed and old.model.root_joint == model.root_joint:
            carry_over(old, sim)
        elif old is not None:
            sim.reset(q0, qd0, old.time)               # the time goes on
            self.commanded = False
        self.q0, self.qd0 = q0, qd0
        self.index = {n: i for i, n in enumerate(names)}
        self.links = frozenset(model.link_names)
        self.cmd_joints = cmd_joints
        self.cmd_joints_arg = None if cmd_joints == names else cmd_joints
        self.sim = sim
        self.robot_gravity = RobotGravityCompensation(sim) if s.robot_compensates_gravity else None
        if old is None:
            self.restart_clock()                        # a model from the topic: pace from its arrival
        return None

    # --- stepping -------------------------------------------------------------
    def start(self):
        """Pace from now on (at real_time_factor > 0; as fast as possible at 0)."""
        s = self.settings
        self.pacer = Pacer(self.dt, s.real_time_factor, s.catch_up_limit) if s.real_time_factor > 0 else None
        self.stamps = StateStamps(self.pacer, self.clock, self.system_clock) if self.pacer else None
        self.restart_clock()

    def restart_clock(self):
        """Pace from now on (no catch-up for the time spent paused or in a service)."""
        if self.pacer is not None:                  # None before start(), or as fast as possible
            self.pacer.anchor(self.clock(), self.steps)

    def state_stamp_ns(self):
        """The stamp of the current state on the system clock [integer ns] (without publish_clock).

        Paced and running: the wall time its steps were due at (:class:`.pacing.StateStamps`), so
        that the states of a catch-up batch are ``dt / real_time_factor`` apart; paused, as fast as
        possible (real_time_factor 0) or before start(): the system clock now (at publication).
        """
        if self.stamps is None or self.paused:
            return self.system_clock()
        return self.stamps.at(self.steps)

    def paused_publish_due(self, now):
        """While paused: True every ``pub_every * dt`` of wall time from ``now`` [s] (publish the frozen state)."""
        if now - self._last_paused_pub >= self.pub_every * self.dt:
            self._last_paused_pub = now
            return True
        return False

    def advance(self, now):
        """Run the steps due at wall time ``now`` [s] (paced), or steps for FAST_TICK_BUDGET (as fast as possible)."""
        if self.pacer is not None:
            n = self.pacer.due(now, self.steps)
            if n:
                self.run(n)
        else:
            while self.run(self.pub_every - self.since_pub) and self.clock() - now < FAST_TICK_BUDGET:
                pass

    def run(self, n):
        """Advance ``n`` physics steps, publishing a joint state every ``pub_every`` steps.

        The command timeout is checked after the state is out, so that its effort is the
        torque of the step that led to it, as always (the zero torque starts with the next step).

        Returns False if a step failed (the rest of the batch is skipped).
        """
        while n > 0:
            k = min(n, self.pub_every - self.since_pub)
            done = self._step(k)
            n -= done
            self.since_pub += done
            if self.since_pub >= self.pub_every:
                self.since_pub = 0
                self.publish()
            self._check_command_timeout()
            if done < k:
                return False
        return True

    def _step(self, k):
        """Up to ``k`` physics steps; the number done (fewer after a SimulationError)."""
        sim = self.sim
        t_before = sim.time
        try:
            if self.robot_gravity is not None:
                self.robot_gravity.step(k)              # the robot's own g(q) before each step
            else:
                sim.step(k)
            done = k
        except SimulationError as exc:
            done = int(round((sim.time - t_before) / sim.dt))
            self._on_simulation_error(exc)
        self.steps += done
        if done:
            self.fresh_command = False
        return done

    def _check_command_timeout(self):
        timeout = self.settings.command_timeout
        if timeout > 0 and self.commanded and self.sim.time - self.last_command_time >= timeout - 1e-9:
            self._zero_commands()
            self.counts['timeouts'] += 1
            self.log.warning('no command for %.3f s of simulated time (command_timeout): every joint now gets '
                             'zero effort until the next command' % timeout)

    def _on_simulation_error(self, exc):
        """Keep the state, zero the commands, remove the wrenches, log."""
        self.counts['simulation_errors'] += 1
        self._zero_commands()
        self.sim.clear_wrenches()
        self.log.error('%s. Commands set to zero effort and wrenches removed.' % exc, throttle_duration_sec=1.0)

    def _zero_commands(self):
        sim = self.sim
        sim.set_command(np.zeros(len(sim.actuated)), 'effort')
        self.commanded = False

    # --- inputs ---------------------------------------------------------------
    def effort(self, data):
        """A Float64MultiArray's ``data``: one effort [N m or N] per entry of ``joints``."""
        self.counts['effort_commands'] += 1
        if self.sim is None:
            return self._reject('effort command', 'no robot model yet')
        try:
            self.sim.set_command(effort_command(data, self.cmd_joints), 'effort', self.cmd_joints_arg)
        except ValueError as exc:
            return self._reject('effort command', exc)
        self._accepted()

    def joint_command(self, names, position, velocity, effort):
        """A JointState command's fields (:func:`.inputs.joint_command`)."""
        self.counts['joint_commands'] += 1
        if self.sim is None:
            return self._reject('joint command', 'no robot model yet')
        try:
            joints, values, modes = joint_command(names, position, velocity, effort, self.index)
            self.sim.set_command(values, modes, joints)
        except ValueError as exc:
            return self._reject('joint command', exc)
        self._accepted()

    def wrench(self, link, force, torque, frame):
        """A wrench on ``link`` at its origin (``force``, ``torque``: objects with x, y, z) in ``frame``."""
        self.counts['wrenches'] += 1
        if self.sim is None:
            return self._reject('wrench', 'no robot model yet')
        if link not in self.links:
            return self._reject('wrench', 'header.frame_id %r is not a link of the model (its links: %s)'
                                % (link[:100], ', '.join(self.sim.model.link_names)))
        try:
            self.sim.apply_wrench(link, wrench_values(force, torque), frame)
        except ValueError as exc:
            return self._reject('wrench', exc)

    def _reject(self, what, problem):
        self.counts['rejected'] += 1
        self.last_rejection = '%s: %s' % (what, problem)
        self.log.warning('%s rejected: %s' % (what, problem), throttle_duration_sec=1.0)

    def _accepted(self):
        """Book-keeping of an accepted effort or joint command."""
        if self.fresh_command:
            self.counts['superseded'] += 1             # replaced before any step used it
        self.fresh_command = True
        self.last_command_time = self.sim.time
        if not self.commanded and self.counts['timeouts']:
            self.log.info('commands resumed')
        self.commanded = True

    # --- services (self.sim is not None) --------------------------------------
    def reset(self):
        """Back to the initial state at rest, commands and wrenches cleared, the time going on; the answer."""
        sim = self.sim
        sim.reset(self.q0, self.qd0, sim.time)
        sim.set_command(np.zeros(len(sim.actuated)), 'effort')
        sim.clear_wrenches()
        self.commanded = self.fresh_command = False
        self.restart_clock()
        return 'reset to the initial state at t = %.6f s; commands and wrenches cleared' % sim.time

    def pause(self, pause):
        """Pause (True) or resume (False); the answer ('paused', 'running' or 'already ...' at t)."""
        was, self.paused = self.paused, bool(pause)
        if was and not pause:
            self.restart_clock()
        word = 'paused' if pause else 'running'
        self.log.info('%s at t = %.6f s' % (word, self.sim.time))
        return ('already %s' if was == self.paused else '%s') % word + ' at t = %.6f s' % self.sim.time

    def set_state(self, names, position, velocity):
        """Set the named joints' positions and velocities (empty: zero); (success, answer)."""
        sim = self.sim
        model = sim.model
        try:
            idx, q_new, qd_new = joint_state_update(names, position, velocity, self.index)
            _check_limits(model, idx, q_new, qd_new)
        except CommandError as exc:
            return False, str(exc)
        q, qd = sim.q, sim.qd
        idx = np.asarray(idx, dtype=int)
        q[model.root_nq + idx], qd[model.root_nv + idx] = q_new, qd_new
        try:                                    # a closed-loop model: the named joints held, the loops closed
            sim.reset(q, qd, sim.time, keep=[model.joint_names[i] for i in idx] if model.loops else None)
        except ValueError as exc:
            return False, 'the loops cannot be closed with these positions: %s' % exc
        self.restart_clock()
        return True, 'state of %d joint(s) set at t = %.6f s' % (len(idx), sim.time)

    # --- diagnostics ----------------------------------------------------------
    def state(self):
        """'no model', 'paused' or 'running'."""
        if self.sim is None:
            return 'no model'
        return 'paused' if self.paused else 'running'


def diagnostic_values(session):
    """((key, value) pairs of /diagnostics, achieved real-time factor) of ``session`` (a :class:`SimulationSession`)
    since the last call; the tick times start again."""
    sim_t = session.sim.time if session.sim is not None else 0.0
    achieved, mean_tick, max_tick = session.ticks.since_last(session.clock(), sim_t)
    s, pacer, c = session.settings, session.pacer, session.counts
    values = [
        ('state', session.state()), ('sim_time', '%.6f' % sim_t), ('steps', session.steps),
        ('physics_rate_hz', s.physics_rate), ('integrator', s.integrator),
        ('real_time_factor', s.real_time_factor), ('real_time_factor_achieved', '%.4f' % achieved),
        ('lag_events', pacer.lag_events if pacer else 0),
        ('dropped_time_s', '%.6f' % ((pacer.dropped_steps if pacer else 0) * session.dt)),
        ('tick_time_mean_us', '%.1f' % (mean_tick * 1e6)), ('tick_time_max_us', '%.1f' % (max_tick * 1e6)),
        ('joint_states_published', c['joint_states']),
        ('effort_commands_in', c['effort_commands']), ('joint_commands_in', c['joint_commands']),
        ('wrenches_in', c['wrenches']), ('commands_rejected', c['rejected']),
        ('commands_superseded', c['superseded']), ('last_rejection', session.last_rejection),
        ('command_timeouts', c['timeouts']), ('simulation_errors', c['simulation_errors']),
        ('non_finite_outputs', c['non_finite_outputs']),
        ('paused', session.paused), ('joints', ', '.join(session.cmd_joints)),
    ]
    return values, achieved


def loop_values(session):
    """Diagnostic values of a closed-loop robot: the last step's drift off the loops (before the projection)."""
    sim = session.sim
    if sim is None or not sim.model.loops:
        return []
    return [('loop_drift_last_step', '%.3g' % sim.loop_closure.last_drift)]


def summary(session, achieved):
    """(warn, message) of /diagnostics for ``session`` at the ``achieved`` real-time factor."""
    rtf = session.settings.real_time_factor
    if session.sim is None:
        return True, 'waiting for the robot model'
    if session.paused:
        return False, 'paused at t = %.3f s' % session.sim.time
    if rtf > 0 and achieved < 0.9 * rtf:
        return True, 'running behind: real-time factor %.3f of %.3f' % (achieved, rtf)
    return False, 'running (real-time factor %.3f)' % achieved


class TickStats:
    """Wall-clock figures of the timer ticks and the real-time factor achieved, between two reports.

    Args:
        now: wall clock [s] at the start.
    """

    def __init__(self, now):
        self._wall, self._sim = now, 0.0
        self._time = self._max = 0.0
        self._count = 0

    def add(self, seconds):
        """Count one timer tick that took ``seconds`` of wall time."""
        self._time += seconds
        self._count += 1
        if seconds > self._max:
            self._max = seconds

    def since_last(self, now, sim_time):
        """(achieved real-time factor, mean tick [s], longest tick [s]) since the last call (or the start)
        at wall time ``now`` [s] and simulated time ``sim_time`` [s]; then counts from here."""
        achieved = (sim_time - self._sim) / max(now - self._wall, 1e-9)
        out = achieved, self._time / max(self._count, 1), self._max
        self._wall, self._sim = now, sim_time
        self._time = self._max = 0.0
        self._count = 0
        return out


def _check_limits(model, idx, q, qd):
    """CommandError unless each joint ``idx[k]`` has q[k] within its position limits and |qd[k]| within
    its velocity limit."""
    for i, x, v in zip(idx, q, qd):
        if not model.lower_limit[i] <= x <= model.upper_limit[i]:
            raise CommandError('position %g for %s is outside its limits [%g, %g]'
                               % (x, model.joint_names[i], model.lower_limit[i], model.upper_limit[i]))
        if abs(v) > model.velocity_limit[i]:
            raise CommandError('velocity %g for %s exceeds its limit %g'
                               % (v, model.joint_names[i], model.velocity_limit[i]))
