"""robot-dynamics: the command-line tool (``python -m robot_dynamics``).

One entry point with subcommands (argparse); each loads the URDF, calls the
library and prints a table (or JSON), the closed-form equations, or writes
a file. Bad arguments end with one line on stderr and exit code 2.
"""
import argparse
import json
import math
import os
import re
import sys
import warnings

import numpy as np
from . import cli_codegen as codegen_cli
from . import cli_retime as retime_cli
from ..errors import UsageError  # noqa: F401
from . import cli_identify, cli_info
from .cli_info import finite_or_none as _js
from .cli_values import floats as _floats, joint_vector, matrix as _matrix, table as _table

EXAMPLES = """examples:
  robot-dynamics models            # the robots shipped with the package (package://robot_dynamics/NAME)
  robot-dynamics info package://robot_dynamics/urdf/ur5.urdf
  robot-dynamics info package://robot_dynamics/urdf/panda_arm.urdf \\
      --actuators package://robot_dynamics/urdf/examples/panda.actuators.yaml
  robot-dynamics torques package://robot_dynamics/urdf/ur5.urdf --q 0,-1.57,1.57,0,0,0 --qd 0.5,0,0,0,0,0
  robot-dynamics torques package://robot_dynamics/urdf/ur5.urdf --q shoulder_lift_joint=-90deg --json
  robot-dynamics equations package://robot_dynamics/urdf/textbook/point_mass_two_link.urdf --gravity 0,-9.81,0 \\
      --symbols m2=tip.mass,l2=tip_joint.x,g=gravity --latex
  robot-dynamics report package://robot_dynamics/urdf/ur5.urdf --q 0,-1.57,1.57,0,0,0 --point 0,0,0.1
  robot-dynamics simulate package://robot_dynamics/urdf/ur5.urdf --duration 2 --torque 0,0,0,0,0,0 -o run.csv
  robot-dynamics plot gravity package://robot_dynamics/urdf/ur5.urdf -o gravity.png
  robot-dynamics plot condition package://robot_dynamics/urdf/ur5.urdf --joints shoulder_lift_joint,elbow_joint -o cond.png
  robot-dynamics plot trajectory run.csv -o trajectory.png
  robot-dynamics excite package://robot_dynamics/urdf/panda_arm.urdf -o traj.yaml --csv traj.csv --period 10
  robot-dynamics identify my_arm.urdf recording/ --method wls -o params.yaml --plot torques.png
  robot-dynamics retime package://robot_dynamics/urdf/ur5.urdf \\
      --waypoints package://robot_dynamics/urdf/examples/ur5.waypoints.yaml -o timed.yaml --plot timed.png

Joint values (--q, --qd, --qdd, --torque, --q0, --qd0): nq comma-separated
numbers in joint order, or name=value pairs (joints not named are 0, or
the neutral pose for --q); an angle may end in 'deg'. Units: SI (rad, m,
rad/s, N m, N). --gravity gx,gy,gz is the gravity vector in the base frame
(default 0,0,-9.81).
"""




class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, "%s: error: %s (see '%s --help')\n" % (self.prog, message, self.prog))


# ---------------------------------------------------------------------------
# Argument values
# ---------------------------------------------------------------------------

def _load(args):
    import robot_dynamics as rd
    gravity = _floats(args.gravity, 3, "--gravity") if args.gravity else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _read_model(rd, args.urdf, gravity, getattr(args, "root_joint", None),
                            skip_missing_meshes=getattr(args, "skip_missing_meshes", False))
        if getattr(args, "actuators", None):
            model = model.with_actuators(args.actuators)
    messages = [str(w.message) for w in caught]
    if args.command != "info":
        for m in messages:
            print("warning: %s" % m, file=sys.stderr)
    return model, messages


def _read_model(rd, path, gravity, root_joint=None, skip_missing_meshes=False):
    """The model of a URDF or MJCF file (told apart by the root element); gravity None: an
    MJCF's own, 0, 0, -9.81 for a URDF; root_joint: a URDF's (an MJCF's root is its free joint);
    skip_missing_meshes: an MJCF's (``rd.load_mjcf``'s option; a URDF's meshes are never read)."""
    from ..constraints.load import is_mjcf
    from ..model.xml_root import MAX_BYTES
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_BYTES + 1)    # the root may stand after any number of comments
    except OSError:
        head = b""                      # load_urdf says what is wrong with the path
    if is_mjcf(head):
        model = rd.load_mjcf(path, skip_missing_meshes=skip_missing_meshes)
        return model if gravity is None else model.with_gravity(gravity)
    return rd.load_urdf(path, gravity=(0.0, 0.0, -9.81) if gravity is None else gravity, root_joint=root_joint)


def cmd_codegen(args, out):
    return codegen_cli.run(_load(args)[0], args, out)


def cmd_retime(args, out):
    return retime_cli.run(_load(args)[0], args, out)


def cmd_excite(args, out):
    return cli_identify.cmd_excite(_load(args)[0], args, out)


def cmd_identify(args, out):
    return cli_identify.cmd_identify(_load(args)[0], args, out)


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def cmd_info(args, out):
    return cli_info.cmd_info(*_load(args), args, out)


def cmd_models(args, out):
    return cli_info.cmd_models(args, out)


def cmd_torques(args, out):
    import robot_dynamics as rd
    model, _ = _load(args)
    q = joint_vector(args.q, model, "--q", default=model.neutral())
    qd = joint_vector(args.qd, model, "--qd") if args.qd else np.zeros(model.nq)
    qdd = joint_vector(args.qdd, model, "--qdd") if args.qdd else np.zeros(model.nq)
    G = rd.gravity_torques(model, q)
    M = rd.mass_matrix(model, q)
    Cqd = rd.nonlinear_effects(model, q, qd) - G
    tau = rd.rnea(model, q, qd, qdd)
    if args.json:
        print(json.dumps(dict(robot=model.name, joint_names=list(model.joint_names), q=q.tolist(), qd=qd.tolist(),
                              qdd=qdd.tolist(), gravity=G.tolist(), coriolis=Cqd.tolist(),
                              inertial=(M @ qdd).tolist(), tau=tau.tolist(), mass_matrix=M.tolist(),
                              effort_limit=[_js(e) for e in model.effort_limit]), indent=2), file=out)
        return 0
    print("Robot %r at q = [%s]" % (model.name, ", ".join("%.4g" % v for v in q)), file=out)
    print("", file=out)
    rows = [(n, q[i], qd[i], qdd[i], G[i], Cqd[i], (M @ qdd)[i], tau[i], model.effort_limit[i])
            for i, n in enumerate(model.joint_names)]
    print(_table(("q", "qd", "qdd", "gravity", "coriolis", "inertial", "tau", "effort"), rows, "joint"), file=out)
    print("gravity = G(q); coriolis = C(q, qd) qd; inertial = M(q) qdd; "
          "tau = M qdd + C qd + G (RNEA) [N m | N]", file=out)
    print("", file=out)
    print("Mass matrix M(q) [kg m^2 | kg m | kg], rows and columns in joint order:", file=out)
    print(_matrix(M, model.joint_names), file=out)
    over = [n for i, n in enumerate(model.joint_names) if abs(tau[i]) > model.effort_limit[i]]
    if over:
        print("", file=out)
        print("note: tau exceeds the effort limit of %s" % ", ".join(over), file=out)
    return 0


def _parse_symbols(text):
    """``m2=tip.mass,l1=joint2.x+link1.com_x,g=gravity`` -> derive()'s symbols dict."""
    out = {}
    for item in text.split(","):
        name, eq, locs = item.partition("=")
        if not eq or not name.strip() or not locs.strip():
            raise UsageError("--symbols: expected name=element.attribute[+...] items separated by commas "
                             "(e.g. m2=tip.mass,l1=joint2.x+link1.com_x,g=gravity), got %r" % item)
        out[name.strip()] = [l.strip() for l in locs.split("+")]
    return out


def cmd_equations(args, out):
    from ..symbolic import derive
    model, _ = _load(args)
    symbols = _parse_symbols(args.symbols) if args.symbols else None
    eq = derive(model, symbols, urdf=args.urdf, max_dof=args.max_dof)
    if args.latex:
        text = eq.latex(digits=args.digits)
    elif args.python:
        text = eq.python()
    else:
        text = eq.text(digits=args.digits)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text)
        print("wrote %s (derived in %.2f s)" % (args.output, eq.seconds), file=out)
    else:
        out.write(text)
        print("# derived in %.2f s" % eq.seconds, file=sys.stderr)
    return 0


def cmd_report(args, out):
    from ..analysis.report import dynamic_report
    model, _ = _load(args)
    q = joint_vector(args.q, model, "--q", default=model.neutral())
    point = _floats(args.point, 3, "--point") if args.point else np.zeros(3)
    wrench = _floats(args.wrench, 6, "--wrench") if args.wrench else None
    rep = dynamic_report(model, q, link=args.link, point=point, wrench=wrench)
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2), file=out)
    else:
        out.write(rep.table())
    return 0


def _simulate(args, model):
    from ..simulation import simulate
    q0 = joint_vector(args.q0, model, "--q0", default=model.neutral()) if args.q0 else model.neutral()
    qd0 = joint_vector(args.qd0, model, "--qd0") if args.qd0 else None
    tau = joint_vector(args.torque, model, "--torque") if args.torque else None
    if not (math.isfinite(args.duration) and args.duration > 0):
        raise UsageError("--duration: expected a positive time in s, got %r" % args.duration)
    if not (math.isfinite(args.dt) and 0 < args.dt <= args.duration):
        raise UsageError("--dt: expected a step in s, 0 < dt <= duration, got %r" % args.dt)
    progress = True if args.progress else (False if args.no_progress else None)
    return simulate(model, q0, qd0, duration=args.duration, dt=args.dt, integrator=args.integrator, tau=tau,
                    record_every=args.record_every, progress=progress)


def cmd_simulate(args, out):
    model, _ = _load(args)
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in (".csv", ".npz"):
        raise UsageError("--output: expected a file name ending in .csv or .npz, got %r" % args.output)
    result = _simulate(args, model)
    result.save(args.output)
    e = result.energy
    print("Simulated %r for %g s (%d steps of %g s, %s) in %.2f s wall time (%.1fx real time)"
          % (model.name, result.t[-1], int(round(result.t[-1] / result.dt)), result.dt, result.integrator,
             result.wall_time, result.real_time_factor), file=out)
    print(_table(("q0", "q_end", "qd_end"), [(n, result.q[0, i], result.q[-1, i], result.qd[-1, i])
                                             for i, n in enumerate(result.joint_names)], "joint"), file=out)
    print("energy T + U: %.6g J -> %.6g J (change %.3g J)" % (e[0], e[-1], e[-1] - e[0]), file=out)
    print("saved %d samples to %s" % (len(result.t), args.output), file=out)
    return 0


def cmd_plot(args, out):
    from . import plots
    if not args.output.lower().endswith(".png"):
        raise UsageError("--output: expected a file name ending in .png, got %r" % args.output)
    if args.kind == "trajectory":
        if args.urdf.lower().endswith((".csv", ".npz")):
            from ..simulation import SimulationResult
            result = SimulationResult.load(args.urdf)
        else:
            if args.duration is None:
                raise UsageError("plot trajectory: give a saved run (.csv/.npz) or a URDF with --duration")
            model, _ = _load(args)
            result = _simulate(args, model)
        joints = args.joints.split(",") if args.joints else None
        data = plots.plot_trajectory(result, args.output, joints=joints)
        print("wrote %s (%d samples, %d joints)" % (args.output, len(data["t"]), len(data["joints"])), file=out)
        return 0
    model, _ = _load(args)
    q = joint_vector(args.q, model, "--q", default=model.neutral()) if args.q else None
    joints = args.joints.split(",") if args.joints else None
    if args.kind == "gravity":
        data = plots.plot_gravity(model, args.output, q, joints=joints, points=args.points or 121)
        peak = np.max(np.abs(data["torque"]), axis=1)
        peak[peak < 1e-9 * max(1.0, peak.max())] = 0.0          # rounding residue of unloaded joints
        print("wrote %s; peak |gravity torque| over each range: %s" % (args.output, ", ".join(
            "%s %.4g" % (n, p) for n, p in zip(data["joints"], peak))), file=out)
    else:
        data = plots.plot_condition(model, args.output, q, joints=joints, points=args.points or 61)
        print("wrote %s; cond(M) over %s x %s: %.4g .. %.4g" % (
            args.output, data["joints"][0], data["joints"][1], data["condition"].min(), data["condition"].max()),
            file=out)
    return 0


# ---------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------

def build_parser():
    p = _Parser(prog="robot-dynamics", formatter_class=argparse.RawDescriptionHelpFormatter,
                description="Rigid-body dynamics of a robot arm from its URDF: joint torques, closed-form "
                            "equations of motion, dynamic characteristics, simulation and plots.",
                epilog=EXAMPLES)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def command(name, help_, func, kind=None, source="robot description file (URDF, or MJCF: root element <mujoco>)"):
        c = sub.add_parser(name, help=help_, description=help_, epilog=EXAMPLES,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if kind:
            c.add_argument("kind", choices=kind, help="what to plot")
        c.add_argument("urdf", metavar="URDF", help=source)
        c.add_argument("--gravity", metavar="GX,GY,GZ", help="gravity vector in the base frame [m/s^2] "
                                                             "(default 0,0,-9.81; an MJCF's own)")
        c.add_argument("--actuators", metavar="YAML", help="the joints' armature and friction laws "
                                                           "(docs/ACTUATORS.md), over the description's own")
        c.add_argument("--skip-missing-meshes", action="store_true",
                       help="an MJCF whose mesh files are absent: leave those geoms out when every body's "
                            "inertia is explicit (warned; docs/MJCF.md)")
        c.set_defaults(func=func)
        return c

    c = command("info", "joints, limits, actuators (armature, gear ratio, friction law), masses, total mass, "
                        "centre of mass, inertia warnings", cmd_info)
    c.add_argument("--json", action="store_true", help="print JSON")

    c = command("torques", "gravity, Coriolis and inertial torques, inverse dynamics and M(q) at a state",
                cmd_torques)
    c.add_argument("--q", required=True, metavar="Q", help="joint positions [rad | m]")
    c.add_argument("--qd", metavar="QD", help="joint velocities (default 0)")
    c.add_argument("--qdd", metavar="QDD", help="joint accelerations (default 0)")
    c.add_argument("--json", action="store_true", help="print JSON")

    c = command("equations", "closed-form M(q), V(q, qd), G(q) by Lagrange-Euler (sympy)", cmd_equations)
    fmt = c.add_mutually_exclusive_group()
    fmt.add_argument("--latex", action="store_true", help="LaTeX (align*) instead of text")
    fmt.add_argument("--python", action="store_true", help="generated numpy code instead of text")
    c.add_argument("--symbols", metavar="SPEC", help="parameters kept as symbols: name=element.attribute[+...], "
                   "e.g. m2=link2.mass,l1=joint2.x+link1.com_x,g=gravity (attributes: mass, com_x/y/z, "
                   "ixx..izz of links; x/y/z of joint origins; '*0.5' for a factor)")
    c.add_argument("--digits", type=int, default=6, help="significant digits of numbers (default 6)")
    c.add_argument("--max-dof", type=int, default=6, help="refuse robots with more joints (default 6)")
    c.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    c = command("report", "dynamic characteristics at a configuration: effective and coupling inertias, "
                          "gravity load, static tool load, maximum payload", cmd_report)
    c.add_argument("--q", required=True, metavar="Q", help="joint positions [rad | m]")
    c.add_argument("--link", help="link carrying the payload/tool (default: the last link of the arm)")
    c.add_argument("--point", metavar="X,Y,Z", help="load point in the link frame [m] (default 0,0,0)")
    c.add_argument("--wrench", metavar="FX,FY,FZ,NX,NY,NZ", help="wrench the tool exerts, base frame [N, N m]")
    c.add_argument("--json", action="store_true", help="print JSON")

    def sim_options(c, required):
        c.add_argument("--duration", type=float, required=required, help="simulated time [s]")
        c.add_argument("--q0", help="initial joint positions (default: neutral)")
        c.add_argument("--qd0", help="initial joint velocities (default 0)")
        c.add_argument("--torque", help="constant joint torques [N m | N] (default 0)")
        c.add_argument("--dt", type=float, default=1e-3, help="physics step [s] (default 0.001)")
        c.add_argument("--integrator", default="rk4", choices=("rk4", "semi_implicit_euler", "explicit_euler"))
        c.add_argument("--record-every", type=int, default=1, help="keep every n-th step (default 1)")
        bar = c.add_mutually_exclusive_group()
        bar.add_argument("--progress", action="store_true", help="always show the progress bar")
        bar.add_argument("--no-progress", action="store_true", help="never show it (default: runs of "
                                                                    ">= 50000 steps on a terminal)")

    c = command("simulate", "offline simulation (URDF damping, friction, stops and limits); saves CSV or npz",
                cmd_simulate)
    sim_options(c, True)
    c.add_argument("-o", "--output", default="simulation.csv", help="result file, .csv or .npz "
                                                                    "(default simulation.csv)")

    c = command("plot", "PNG plots: gravity torque over each joint's range, cond(M) over two joints, "
                        "simulated trajectory and energy", cmd_plot, kind=("gravity", "condition", "trajectory"),
                source="robot description file; for 'trajectory' also a run saved by 'simulate' (.csv, .npz)")
    c.add_argument("-o", "--output", required=True, help="PNG file")
    c.add_argument("--q", help="configuration of the joints not swept (default neutral)")
    c.add_argument("--joints", help="joint names, comma-separated (condition: exactly two)")
    c.add_argument("--points", type=int, help="samples per swept joint (default 121 for gravity, "
                                               "61 x 61 for condition)")
    sim_options(c, False)

    cli_identify.add_commands(command, cmd_excite, cmd_identify)

    c = sub.add_parser("models", help="the robot descriptions and files shipped with the package, or the path of one",
                       description="The robot descriptions (and their loops, actuators and waypoints files) "
                                   "shipped with robot_dynamics, wherever it is installed; with NAME, the "
                                   "absolute path of one. Every command takes them as "
                                   "package://robot_dynamics/NAME.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("name", metavar="NAME", nargs="?", help="a shipped file: its path in the share folder "
                   "(urdf/textbook/scara.urdf) or its file name alone (panda_arm.urdf)")
    c.set_defaults(func=cmd_models)

    c = command("codegen", "dependency-free C99 of the robot's dynamics (RNEA, gravity, Coriolis, mass matrix, "
                           "ABA): writes NAME.h and NAME.c (docs/CODEGEN.md)", cmd_codegen)
    codegen_cli.add_arguments(c)

    c = command("retime", "time-optimal timing of a path through waypoints under the velocity and torque limits "
                          "(toppra); writes a JointTrajectory YAML (docs/RETIMING.md)", cmd_retime)
    retime_cli.add_arguments(c)
    return p


# The arguments that name a file to read: each may be package://PACKAGE/PATH (a ROS package's share
# folder; robot_dynamics' own files are found without a ROS environment, robot_dynamics/bundled.py).
INPUT_FILES = ("urdf", "actuators", "waypoints", "data")


def _package_paths(args):
    """``args`` with each input file given as package://PACKAGE/PATH replaced by its path."""
    from ..bundled import URI_PREFIX, resolve_uri
    for name in INPUT_FILES:
        value = getattr(args, name, None)
        if isinstance(value, str) and value.startswith(URI_PREFIX):
            try:
                setattr(args, name, resolve_uri(value))
            except FileNotFoundError as err:
                raise UsageError(str(err)) from None
    return args


VECTOR_OPTIONS = ("--acceleration", "--q", "--qd", "--qdd", "--q0", "--qd0", "--torque", "--gravity", "--point", "--wrench")


def _join_negative_values(argv):
    """``--q -1.2,0.3`` -> ``--q=-1.2,0.3``: argparse would take "-1.2,0.3" for an option."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in VECTOR_OPTIONS and i + 1 < len(argv) and re.match(r"^-[\d.]", argv[i + 1]):
            out.append("%s=%s" % (a, argv[i + 1]))
            i += 2
        else:
            out.append(a)
            i += 1
    return out


def main(argv=None, out=None):
    """Run the tool; returns the exit code (0 ok, 2 bad arguments or input, 1 failure)."""
    out = sys.stdout if out is None else out
    parser = build_parser()
    args = parser.parse_args(_join_negative_values(sys.argv[1:] if argv is None else list(argv)))
    try:
        return args.func(_package_paths(args), out)
    except (UsageError, ValueError) as err:        # URDFError, bad values, singular poses...
        print("%s %s: error: %s" % (parser.prog, args.command, " ".join(str(err).split())), file=sys.stderr)
        return 2
    except KeyboardInterrupt:                      # Ctrl-C: one line, no traceback
        print("%s %s: interrupted" % (parser.prog, args.command), file=sys.stderr)
        return 130
    except BrokenPipeError:                        # output piped into head & co.: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:
        print("%s %s: error: %s" % (parser.prog, args.command, err), file=sys.stderr)
        return 1
    except Exception as err:                       # SimulationError and anything unexpected: one line too
        print("%s %s: error: %s: %s" % (parser.prog, args.command, type(err).__name__,
                                        " ".join(str(err).split())), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
