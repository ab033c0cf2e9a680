"""Timing of joint trajectories: is a timed trajectory within the motors'
limits (:func:`check_trajectory`), and the fastest timing of a path under
velocity, acceleration and torque limits (:func:`retime`, toppra's
reachability analysis with this package's inverse dynamics; docs/RETIMING.md)."""
from .check import TrajectoryCheck, check_trajectory
from .retime import TimedTrajectory, retime

__all__ = ["check_trajectory", "TrajectoryCheck", "retime", "TimedTrajectory"]
