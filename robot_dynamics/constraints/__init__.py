"""The constraints layer: closed-loop mechanisms and impacts, on top of the tree algorithms.

Plain numpy (no compiled kernels, so no part of the numba cache key):
loop-closure kinematics (:mod:`.closure`), assembly (:mod:`.assembly`),
constrained forward and inverse dynamics (:mod:`.dynamics`), impulsive
dynamics (:mod:`.impact`), the projection of a state back onto the loops
that the simulator applies after each step (:mod:`.projection`) and the
public ``load_urdf`` that checks the loops close (:mod:`.load`).
docs/LOOPS.md says what each computes and how.
"""
from .assembly import assemble, mechanism_rank, mobility
from .closure import (LoopKinematics, loop_bias, loop_jacobian, loop_kinematics, loop_residual, loop_rows,
                      loop_slices, loop_wrenches)
from .dynamics import constrained_forward_dynamics, constrained_inverse_dynamics
from .impact import impact
from .load import load_urdf
from .projection import project

__all__ = ["assemble", "mechanism_rank", "mobility", "loop_bias", "loop_jacobian", "loop_kinematics", "LoopKinematics",
           "loop_residual", "loop_rows",
           "loop_slices", "loop_wrenches", "constrained_forward_dynamics", "constrained_inverse_dynamics", "impact",
           "load_urdf", "project"]
