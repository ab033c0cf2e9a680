"""Simulation of a robot arm from its URDF, without ROS.

Forward dynamics (:func:`robot_dynamics.aba`) integrated at a fixed physics
step, with pluggable parts (the "physics plug-in"):

- integrators (``integrators.py``): semi-implicit Euler, RK4, linearly implicit
  Euler, explicit Euler;
  any object with the :class:`Integrator` interface;
- force models (``forces.py``): joint damping and Coulomb friction,
  position-limit stops, external wrenches; any :class:`ForceModel`
  (the built-in ones hand their coefficients to the compiled step,
  ``fused.py``, through ``coefficients()``);
- commands (``commands.py``): effort, position or velocity per joint,
  tracked by the :class:`JointActuator` (PD, effort limits);
- step constraints (``constraints.py``): velocity limits; any :class:`Constraint`;
  :class:`LoopClosure`, the projection onto the loops of a closed-loop model.

:class:`Simulator` steps one arm (for a ROS node or a Python loop);
:func:`simulate` runs one and returns a :class:`SimulationResult`.
:class:`.session.SimulationSession` runs one against the wall clock with
checked commands, a command timeout, model changes, reset, pause and
set_state: simulator_node's behaviour without ROS (``build.py`` makes the
simulator from its settings; ``inputs.py``, ``pacing.py`` and
``robot_emulation.py`` are its parts). See docs/SIMULATION.md.
"""
from .commands import EFFORT, MODES, POSITION, VELOCITY, ActuatorCoefficients, Command, JointActuator
from .constraints import Constraint, LoopClosure, VelocityLimits, project_velocity
from .forces import (ExternalWrenches, ForceModel, FrictionCoefficients, JointFriction, JointInertia, PositionLimits,
                     StopCoefficients)
from .integrators import INTEGRATORS, RK4, ExplicitEuler, ImplicitEuler, Integrator, SemiImplicitEuler, get_integrator
from .result import ProgressBar, SimulationResult
from .simulator import SimState, SimulationError, Simulator, default_constraints, default_forces
from .run import simulate

__all__ = [
    "Simulator", "simulate", "SimulationResult", "SimulationError", "SimState",
    "Integrator", "SemiImplicitEuler", "RK4", "ImplicitEuler", "ExplicitEuler", "INTEGRATORS", "get_integrator",
    "ForceModel", "JointFriction", "PositionLimits", "ExternalWrenches", "JointInertia",
    "FrictionCoefficients", "StopCoefficients", "ActuatorCoefficients",
    "Command", "JointActuator", "EFFORT", "POSITION", "VELOCITY", "MODES",
    "Constraint", "VelocityLimits", "LoopClosure", "project_velocity",
    "default_forces", "default_constraints", "ProgressBar",
]
