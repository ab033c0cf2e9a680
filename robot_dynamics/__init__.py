"""robot_dynamics: rigid-body dynamics of robot arms from a URDF.

Quick use::

    import numpy as np, robot_dynamics as rd
    model = rd.load_urdf(rd.bundled_path("panda_arm.urdf"))   # or a URDF path, or its XML text
    q = model.neutral()
    g = rd.gravity_torques(model, q)                       # (nq,) [N m]
    M = rd.mass_matrix(model, q)                           # (nq, nq)
    tau = rd.rnea(model, q, qd, qdd)                       # inverse dynamics
    qdd = rd.aba(model, q, qd, tau)                        # forward dynamics

Closed loops (a four-bar, a parallelogram) are a tree plus closure joints
declared beside the URDF (docs/LOOPS.md)::

    model = rd.load_urdf(rd.bundled_path("four_bar.urdf"), loops=rd.bundled_path("four_bar.loops.yaml"))
    q = rd.assemble(model, q_guess, keep=["crank_joint"])   # closes every loop
    qdd, lam = rd.constrained_forward_dynamics(model, q, qd, tau)

Conventions (each one is checked by a test in ``test/test_conventions.py``):

- Units: SI. Angles in rad, lengths in m, masses in kg, torques in N m,
  prismatic forces in N.
- Joint order: q, qd, qdd, tau and the rows/columns of M and C follow
  ``model.joint_names`` (the independent moving joints in depth-first tree
  order). Mimic joints are not coordinates: they follow their source joint
  as ``multiplier * q + offset`` and their torque is mapped back onto it. A
  continuous joint's coordinate is its angle (one number, unbounded).
- Frames: everything is expressed in the base frame (the URDF root link)
  unless stated otherwise. ``model.gravity`` is the gravity acceleration in
  that frame, ``(0, 0, -9.81)`` by default: z up. A tilted or wall-mounted
  base is a different gravity vector.
- Gravity sign: ``gravity_torques(q)`` is the torque the motors must apply to
  hold the arm still (``tau = M qdd + C qd + g``), equal to ``dU/dq`` with U
  the potential energy.
- Spatial vector order in the public API: linear part first. Jacobian rows
  are ``[vx, vy, vz, wx, wy, wz]`` (base frame, at the chosen point);
  wrenches are ``[fx, fy, fz, nx, ny, nz]``.
- External wrenches ``f_ext`` act ON the robot's links; each is expressed in
  its link's own frame with the moment about the link frame origin. Given
  as a dict ``{link: (6,)}`` or an array ``(..., len(model.link_names), 6)``.
  With them ``rnea`` returns ``M qdd + h - sum_k J_k^T f_k`` (J_k of the link
  origin, rotated into the link frame).
- Static load: the torque that lets the tool exert wrench F (base frame) at
  a point is ``tau = J(q)^T F``: :func:`static_torques`.
- Shapes: every function takes a single state ``(nq,)`` or a batch
  ``(..., nq)`` and returns the matching shape; batches run in one
  compiled loop.
- Errors: a bad URDF raises :class:`URDFError`; bad shapes, unknown links
  and non-finite inputs raise ``ValueError`` naming the argument, what was
  expected and what came. Implausible inertias warn with
  :class:`InertiaWarning`.

Internally the kernels use Featherstone's spatial order (angular first)
and body-fixed frames (see ``algorithms/kernels.py``); the algorithms cite the book
sections they implement.
"""
from . import cache as _cache

_cache.configure()                     # before any kernel is defined

from .algorithms.aba import aba  # noqa: E402
from .codegen import codegen, compile  # noqa: E402,A004  (rd.compile: the generated C, compiled)
from .algorithms.centroidal import (center_of_mass, centroidal_momentum, centroidal_momentum_matrix,  # noqa: E402
                                     com_jacobian)
from .algorithms.coriolis import coriolis_matrix  # noqa: E402
from .algorithms.crba import mass_matrix  # noqa: E402
from .algorithms.derivatives import (aba_derivatives, coriolis_derivatives, gravity_derivatives,  # noqa: E402
                                     rnea_derivatives)
from .algorithms.dispatch import get_num_threads, set_num_threads  # noqa: E402
from .algorithms.energy import kinetic_energy, potential_energy  # noqa: E402
from .algorithms.kinematics import forward_kinematics  # noqa: E402
from .algorithms.task_space import jacobian, link_pose, operational_space_inertia  # noqa: E402
from .algorithms.rnea import gravity_torques, nonlinear_effects, rnea  # noqa: E402
from .analysis.config_space import configuration_space_form  # noqa: E402
from .analysis.friction import friction_law_gradient, friction_law_torque, friction_torques  # noqa: E402
from .analysis.linearization import linearize, lqr  # noqa: E402
from .analysis.operational import (cartesian_dynamics, dynamically_consistent_inverse,  # noqa: E402
                                   jacobian_derivative_times_qd, operational_space)
from .analysis.wrench import static_torques  # noqa: E402
from .errors import (AssemblyError, InertiaWarning, InputError, RobotDynamicsError, SingularityError,  # noqa: E402
                     URDFError, URDFWarning)
from .model import Data, Joint, Model  # noqa: E402
from .model.loops import Loop  # noqa: E402
from .model.mjcf import load_mjcf  # noqa: E402
from .constraints import (assemble, constrained_forward_dynamics, constrained_inverse_dynamics, impact,  # noqa: E402
                          load_urdf, loop_jacobian, loop_residual, loop_wrenches, mobility)
from .model.configuration import difference, integrate, neutral, normalize  # noqa: E402
from .algorithms.regressor import (friction_parameter_names, friction_regressor, inertial_parameters,  # noqa: E402
                                   parameter_names, regressor)
from .identification.base import BaseParameters, base_parameters  # noqa: E402
from .identification.data import JointData, ZeroPhaseFilter, load_joint_data  # noqa: E402
from .identification.excitation import ExcitationTrajectory, excitation_trajectory  # noqa: E402
from .identification.identify import IdentificationResult, identify  # noqa: E402
from .identification.observer import MomentumObserver  # noqa: E402
from .identification.payload import PayloadEstimate, identify_payload  # noqa: E402
from .simulation import Simulator, simulate  # noqa: E402
from .analysis.impedance import CartesianImpedance, JointImpedance  # noqa: E402
from .timing import TimedTrajectory, TrajectoryCheck, check_trajectory, retime  # noqa: E402
from .bundled import bundled_models, bundled_path  # noqa: E402



def _version():
    """package.xml's <version>, the one place it is written: as installed (importlib.metadata; setup.py
    reads package.xml), else, when the package runs uninstalled from a checkout, read there."""
    from importlib import metadata
    try:
        return metadata.version("robot_dynamics")
    except metadata.PackageNotFoundError:
        from pathlib import Path
        from xml.etree import ElementTree
        return ElementTree.parse(Path(__file__).resolve().parents[1] / "package.xml").findtext("version").strip()


__version__ = _version()

__all__ = [
    "Model", "Data", "Joint", "Loop", "load_urdf", "load_mjcf",
    "RobotDynamicsError", "InputError", "URDFError", "SingularityError", "AssemblyError", "InertiaWarning",
    "URDFWarning",
    "rnea", "gravity_torques", "nonlinear_effects", "coriolis_matrix", "mass_matrix", "aba",
    "friction_torques", "friction_law_torque", "friction_law_gradient", "forward_kinematics", "link_pose", "jacobian", "static_torques",
    "kinetic_energy", "potential_energy",
    "center_of_mass", "com_jacobian", "centroidal_momentum_matrix", "centroidal_momentum",
    "neutral", "integrate", "difference", "normalize",
    "configuration_space_form", "operational_space", "cartesian_dynamics", "jacobian_derivative_times_qd",
    "operational_space_inertia",
    "dynamically_consistent_inverse", "set_num_threads", "get_num_threads",
    "regressor", "inertial_parameters", "parameter_names", "friction_regressor", "friction_parameter_names",
    "base_parameters", "BaseParameters", "identify", "IdentificationResult", "identify_payload",
    "PayloadEstimate", "MomentumObserver", "load_joint_data", "JointData", "ZeroPhaseFilter",
    "excitation_trajectory", "ExcitationTrajectory",
    "loop_residual", "loop_jacobian", "loop_wrenches", "assemble", "mobility", "constrained_forward_dynamics",
    "constrained_inverse_dynamics", "impact",
    "Simulator", "simulate", "JointImpedance", "CartesianImpedance", "codegen",
    "check_trajectory", "TrajectoryCheck", "retime", "TimedTrajectory",
    "bundled_path", "bundled_models",
]
# rd.compile (codegen.compile) is public but not in __all__: ``from robot_dynamics import *`` would
# shadow Python's builtin compile().
