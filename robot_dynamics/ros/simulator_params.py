"""simulator_node's parameters: its schema file (``config/params/simulator_node.yaml``) of what the node adds
to :data:`.model_node.MODEL_PARAMS`.

The simulation reads them as a :class:`robot_dynamics.simulation.build.SimulationSettings`, whose field
defaults are the file's (its ``defaults_from``: written once, in SimulationSettings); the node reads the
topics, publish_clock, odom_frame and marker_rate. docs/SIMULATION.md ("Parameters") and
config/simulator.yaml describe them.
"""
from ..simulation.build import SimulationSettings
from . import params as P
from .param_files import validator

#: The fields SimulationSettings.problems reads.
SETTINGS_CHECKED = ('publish_rate', 'physics_rate', 'joints', 'kp', 'kd', 'kv', 'initial_positions')


@validator('simulation_settings_fit', cross=True)
def simulation_settings_fit(p):
    """The settings' own cross checks (SimulationSettings.problems): rates, joints, sizes per joint (the
    fields it reads, so that an invalid integrator, say, does not hide them)."""
    return SimulationSettings(**{name: getattr(p, name) for name in SETTINGS_CHECKED}).problems()


@validator('distinct_command_topics', cross=True)
def distinct_command_topics(p):
    if p.effort_commands_topic and p.effort_commands_topic == p.joint_commands_topic:
        return ("parameters 'effort_commands_topic' and 'joint_commands_topic' name the same topic %r (their "
                'message types differ)' % p.effort_commands_topic)
    return None


NODE_PARAMS = P.schema('simulator_node.yaml')
