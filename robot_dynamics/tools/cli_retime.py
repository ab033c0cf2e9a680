"""``robot-dynamics retime ROBOT.urdf --waypoints traj.yaml -o timed.yaml [--plot timed.png]``:
the body of the subcommand (registered in :mod:`robot_dynamics.tools.cli`).

The waypoints file (YAML), either of::

    joints: [shoulder_pan_joint, ...]      # optional: default the URDF's joint order
    points:
    - [0.0, -1.57, 1.57, 0.0, 0.0, 0.0]    # one list of positions [rad | m] per waypoint
    - ...

or a ``trajectory_msgs/JointTrajectory`` layout (``joint_names``, ``points``
with ``positions``; its times are ignored). The output is a JointTrajectory
YAML (:meth:`~robot_dynamics.timing.retime.TimedTrajectory.to_yaml`).
"""
import math

import numpy as np

from ..errors import UsageError
from ..timing.retime import retime
from .plots import plot_retimed_torques


def add_arguments(parser):
    """The subcommand's own options (the URDF and --gravity come with every subcommand)."""
    parser.add_argument("--waypoints", required=True, metavar="YAML",
                        help="waypoints file: 'joints: [...]' (optional) and 'points: [[...], ...]'")
    parser.add_argument("-o", "--output", required=True, metavar="YAML",
                        help="the timed trajectory, a trajectory_msgs/JointTrajectory YAML")
    parser.add_argument("--plot", metavar="PNG", help="also plot the joint torques against their limits")
    parser.add_argument("--effort-scale", type=float, default=1.0,
                        help="factor on the URDF effort limits (default 1)")
    parser.add_argument("--velocity-scale", type=float, default=1.0,
                        help="factor on the URDF velocity limits (default 1)")
    parser.add_argument("--acceleration", type=float, metavar="A",
                        help="acceleration limit of every joint [rad/s^2 | m/s^2] (default none)")
    parser.add_argument("--gridpoints", type=int, help="grid points along the path (default: intervals of at "
                                                       "most 0.01 rad, 400 to 4000)")
    parser.add_argument("--rate", type=float, help="write points at this rate [Hz] (default: at the grid points)")


def read_waypoints(path, model):
    """(m, nq) waypoints in the model's joint order from a waypoints YAML file."""
    import yaml
    with open(path) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        raise UsageError("--waypoints %s: expected a mapping with 'points: [[...], ...]' (and optionally "
                         "'joints: [...]'), got %s" % (path, type(doc).__name__))
    names = doc.get("joints", doc.get("joint_names", list(model.joint_names)))
    points = [p.get("positions") if isinstance(p, dict) else p for p in doc["points"]]
    if not isinstance(names, list) or sorted(map(str, names)) != sorted(model.joint_names):
        raise UsageError("--waypoints %s: 'joints' must name each joint of the robot once (%s), got %r"
                         % (path, ", ".join(model.joint_names), names))
    try:
        W = np.array(points, dtype=float)
    except (TypeError, ValueError):
        raise UsageError("--waypoints %s: every point must be a list of %d numbers" % (path, len(names))) from None
    if W.ndim != 2 or W.shape[1] != len(names):
        raise UsageError("--waypoints %s: every point must be a list of %d numbers (one per joint), got shape %s"
                         % (path, len(names), W.shape))
    order = [list(map(str, names)).index(n) for n in model.joint_names]
    return W[:, order]


def _positive(value, what):
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError("%s: expected a number > 0, got %r" % (what, value))


def run(model, args, out):
    """Retime, write the YAML (and the plot); print the duration and the worst ratios. Returns 0."""
    for value, what in ((args.effort_scale, "--effort-scale"), (args.velocity_scale, "--velocity-scale"),
                        (args.acceleration, "--acceleration"), (args.rate, "--rate")):
        _positive(value, what)
    if not args.output.endswith((".yaml", ".yml")):
        raise UsageError("-o: expected a file name ending in .yaml, got %r" % args.output)
    if args.plot is not None and not args.plot.endswith(".png"):
        raise UsageError("--plot: expected a file name ending in .png, got %r" % args.plot)
    W = read_waypoints(args.waypoints, model)
    traj = retime(model, W, velocity_limits=model.velocity_limit * args.velocity_scale,
                  acceleration_limits=args.acceleration, effort_scale=args.effort_scale,
                  gridpoints=args.gridpoints)
    traj.to_yaml(args.output, rate=args.rate)
    print("%s: %d waypoints, duration %.4f s (%d grid points); wrote %s"
          % (model.name, len(W), traj.duration, traj.t.size, args.output), file=out)
    ratio = {"effort": np.abs(traj.tau).max(axis=0) / traj.effort_limit,          # the scaled limits
             "velocity": np.abs(traj.qd).max(axis=0) / traj.velocity_limit}      # at the grid points
    w = max(len(n) for n in model.joint_names + ("joint",))
    print("%-*s  %12s  %12s" % (w, "joint", "|tau|/limit", "|qd|/limit"), file=out)
    for j, name in enumerate(model.joint_names):
        print("%-*s  %12.4f  %12.4f" % (w, name, ratio["effort"][j], ratio["velocity"][j]), file=out)
    if args.plot:
        plot_retimed_torques(traj, args.plot)
        print("wrote %s" % args.plot, file=out)
    return 0
