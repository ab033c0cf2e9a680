"""The simulated robot's own controller: gravity compensation added to the effort command, as Franka and UR do.

A real Franka or UR arm adds the gravity torque of its own model to the
effort it is sent, every cycle of its controller (libfranka's
``franka::Torques`` are "without gravity and friction"; UR's
``direct_torque``: "the robot automatically compensates for gravity"; see
docs/ROBOTS.md). :class:`RobotGravityCompensation` gives a
:class:`~robot_dynamics.simulation.Simulator` (simulator_node's
``robot_compensates_gravity: true``) the same behaviour, without touching
the simulator core: before each physics step it sets
the command in force to the user's command plus ``g(q)`` at the state the
step starts from, on the joints commanded in effort (a zero-order hold at
the physics rate, like the robot's 1 kHz loop; position and velocity
commands are servoed by the simulator with their own gravity feed-forward).
The effort limits still clamp the sum, and the joint_states effort is the
motor torque that acted: the user's command plus the robot's g(q), as a
driver reports a measured torque.

The user's command is the one last set by anyone but this class: a new
Command object in the simulator (every ``set_command`` makes one) replaces
it; the one this class sets is recognised by identity.
"""
import numpy as np

from ..algorithms.rnea import gravity_torques
from .commands import EFFORT, MODES


class RobotGravityCompensation:
    """Adds g(q) [N m or N] of ``sim.model`` to the effort-commanded joints before each physics step.

    Args:
        sim: a :class:`robot_dynamics.simulation.Simulator` of a fixed-base tree (no loops).
    """

    def __init__(self, sim):
        model = sim.model
        if model.root_joint is not None or model.loops:
            raise ValueError('robot_compensates_gravity emulates a fixed-base arm; robot %r has %s'
                             % (model.name, 'closed loops' if model.loops else 'a %s base' % model.root_joint))
        self.sim = sim
        self.user = sim.command              # the command the user set (without the robot's gravity)
        self._applied = None                 # the Command this class set last

    def user_command(self):
        """The user's command in force: the simulator's, unless it is the one this class set."""
        sim = self.sim
        if sim.command is not self._applied:
            self.user = sim.command
        return self.user

    def apply(self):
        """Set the simulator's command to the user's plus g(q) at the current state (effort joints only)."""
        sim = self.sim
        user = self.user_command()
        effort = user.mode == EFFORT
        values = np.where(effort, user.value + gravity_torques(sim.model, sim.q), user.value)
        sim.set_command(values, [MODES[m] for m in user.mode])
        self._applied = sim.command

    def restore(self):
        """Put the user's command back in force (before the simulator is replaced or its command read)."""
        user = self.user_command()
        if self.sim.command is not user:
            self.sim.set_command(user.value, [MODES[m] for m in user.mode])
        self._applied = None

    def step(self, k):
        """Up to ``k`` physics steps of ``sim``, the robot's gravity refreshed before each; the number done.

        A SimulationError propagates (the steps done before it count in ``sim.time``).
        """
        for i in range(k):
            self.apply()
            self.sim.step(1)
        return k
