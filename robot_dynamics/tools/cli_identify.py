"""``robot-dynamics excite`` and ``robot-dynamics identify``: the bodies and
options of the two identification subcommands (registered in
:mod:`robot_dynamics.tools.cli`, which loads the model and passes it)."""
import json
import math

import numpy as np

from ..errors import UsageError
from .cli_values import joint_vector, table, value


def progress_options(c):
    """--progress / --no-progress on stderr."""
    bar = c.add_mutually_exclusive_group()
    bar.add_argument("--progress", action="store_true", help="always show progress on stderr")
    bar.add_argument("--no-progress", action="store_true", help="never show it (default: on a terminal)")


def add_commands(command, excite, identify):
    """Register the two subcommands through ``command(name, help, func)`` (cli.build_parser's)."""
    c = command("excite", "an excitation trajectory for identification (finite Fourier series optimised for the "
                          "base regressor's condition number); writes a JointTrajectory YAML and CSV", excite)
    c.add_argument("-o", "--output", required=True, help="trajectory_msgs/JointTrajectory YAML file")
    c.add_argument("--csv", help="also write the samples as CSV (t, q[joint], qd[joint], qdd[joint])")
    c.add_argument("--period", type=float, default=10.0, help="period of the trajectory [s] (default 10)")
    c.add_argument("--harmonics", type=int, default=5, help="harmonics per joint (default 5)")
    c.add_argument("--iterations", type=int, default=100, help="optimiser iterations (default 100)")
    c.add_argument("--friction", action="store_true", help="optimise for the friction parameters too")
    c.add_argument("--velocity-scale", type=float, default=0.5, help="fraction of the URDF velocity limits "
                                                                      "(default 0.5)")
    c.add_argument("--acceleration", help="acceleration limit [rad/s^2 | m/s^2]: one value, one per joint or "
                                          "name=value pairs (default 3)")
    c.add_argument("--margin", type=float, default=0.1, help="distance kept from the position limits [rad | m] "
                                                             "(default 0.1)")
    c.add_argument("--rate", type=float, default=50.0, help="points per second in the files (default 50)")
    c.add_argument("--cycles", type=float, default=1.0, help="periods in the files (default 1)")
    c.add_argument("--start", type=float, default=2.0, help="time_from_start of the first point [s] (default 2)")
    c.add_argument("--seed", type=int, default=0, help="seed of the random start (default 0)")
    progress_options(c)

    c = command("identify", "identify the inertial (and friction) parameters or a payload from recorded joint "
                            "data (rosbag2, npz, csv); prints the torque residuals, writes YAML and a plot",
                identify)
    c.add_argument("data", metavar="DATA", help="a rosbag2 folder (.db3 or .mcap), a .npz or a .csv recording")
    c.add_argument("-o", "--output", required=True, help="YAML file of the identified parameters")
    c.add_argument("--method", default="ols", choices=("ols", "wls", "consistent"),
                   help="least squares (default), weighted per joint, or physically consistent")
    c.add_argument("--friction", action="store_true", help="identify viscous, Coulomb and offset friction too")
    c.add_argument("--friction-law", choices=("viscous", "coulomb", "stribeck", "sigmoid"),
                   help="identify friction with this law on every joint (docs/ACTUATORS.md; stribeck and sigmoid "
                        "by nonlinear least squares), and an offset")
    c.add_argument("--armature", action="store_true", help="identify each joint's armature (reflected rotor "
                                                           "inertia) too")
    c.add_argument("--payload", metavar="LINK", help="identify a payload on LINK instead (the URDF is the arm "
                                                     "without it)")
    c.add_argument("--plot", metavar="PNG", help="plot of measured versus predicted torques")
    c.add_argument("--urdf-out", metavar="URDF", help="--method consistent: also write the corrected URDF")
    c.add_argument("--topic", default="/joint_states", help="JointState topic of a bag (default /joint_states)")
    c.add_argument("--cutoff", type=float, default=10.0, help="cutoff of the zero-phase Butterworth filter for "
                                                              "the accelerations [Hz] (default 10)")
    c.add_argument("--order", type=int, default=4, help="order of that filter (default 4)")
    c.add_argument("--differentiate", action="store_true", help="velocities from the filtered positions "
                                                                 "(for recordings without velocities)")
    c.add_argument("--resample", action="store_true", help="interpolate irregular samples onto a uniform grid")
    progress_options(c)


def _progress(args):
    return True if args.progress else (False if args.no_progress else None)


def cmd_excite(model, args, out):
    """robot-dynamics excite: the trajectory file(s) and a table of its ranges."""
    from ..identification.excitation import excitation_trajectory
    for opt in ("output", "csv"):
        want = ".yaml" if opt == "output" else ".csv"
        name = getattr(args, opt)
        if name is not None and not name.lower().endswith((want, ".yml") if opt == "output" else want):
            raise UsageError("--%s: expected a file name ending in %s, got %r" % (opt, want, name))
    for opt in ("period", "rate", "cycles", "start", "margin", "velocity_scale"):
        v = getattr(args, opt)
        if not math.isfinite(v) or v < 0 or (v == 0 and opt not in ("start", "margin")):
            raise UsageError("--%s: expected a positive number, got %r" % (opt.replace("_", "-"), v))
    acc = None
    if args.acceleration and "," not in args.acceleration and "=" not in args.acceleration:
        acc = value(args.acceleration, None, model, "--acceleration")       # one value for every joint
    elif args.acceleration:
        acc = joint_vector(args.acceleration, model, "--acceleration", default=np.full(model.nq, np.nan))
    ex = excitation_trajectory(model, period=args.period, harmonics=args.harmonics, friction=args.friction,
                               acceleration=acc, position_margin=args.margin, velocity_scale=args.velocity_scale,
                               max_iterations=args.iterations, seed=args.seed, progress=_progress(args))
    ex.to_yaml(args.output, rate=args.rate, cycles=args.cycles, start=args.start)
    if args.csv:
        ex.to_csv(args.csv, rate=args.rate, cycles=args.cycles)
    tt = np.arange(2000) * ex.period / 2000
    q, qd, qdd = ex.sample(tt)
    print("Excitation trajectory for %r: period %g s, %d harmonics, %d iterations%s"
          % (model.name, ex.period, ex.harmonics, ex.iterations, " (interrupted: best so far)" if ex.interrupted
             else ""), file=out)
    print("condition number of the base regressor (%d base parameters%s): %.4g (random start %.4g)"
          % (ex.parameters, " with friction" if ex.friction else "", ex.condition,
             ex.initial_condition), file=out)
    rows = [(n, q[:, i].min(), q[:, i].max(), ex.lower[i], ex.upper[i], np.abs(qd[:, i]).max(), ex.velocity[i],
             np.abs(qdd[:, i]).max(), ex.acceleration[i]) for i, n in enumerate(ex.joint_names)]
    print(table(("q_min", "q_max", "lower", "upper", "|qd|max", "qd_limit", "|qdd|max", "qdd_limit"), rows,
                 "joint"), file=out)
    print("wrote %s (trajectory_msgs/JointTrajectory, %d points at %g Hz from t = %g s)%s"
          % (args.output, int(round(args.cycles * ex.period * args.rate)) + 1, args.rate, args.start,
             " and %s" % args.csv if args.csv else ""), file=out)
    return 0


def cmd_identify(model, args, out):
    """robot-dynamics identify: the parameters (or a payload), their YAML, the residual table, a plot."""
    import robot_dynamics as rd
    if not args.output.lower().endswith((".yaml", ".yml")):
        raise UsageError("--output: expected a file name ending in .yaml, got %r" % args.output)
    if args.plot and not args.plot.lower().endswith(".png"):
        raise UsageError("--plot: expected a file name ending in .png, got %r" % args.plot)
    if not (math.isfinite(args.cutoff) and args.cutoff > 0):
        raise UsageError("--cutoff: expected a frequency > 0 [Hz], got %r" % args.cutoff)
    filt = rd.ZeroPhaseFilter(cutoff=args.cutoff, order=args.order)
    data = rd.load_joint_data(args.data, joints=model, topic=args.topic, filter=filt,
                              velocities="differentiate" if args.differentiate else "measured",
                              resample=args.resample, progress=_progress(args))
    print("Read %d samples of %d joints from %s (%.4g s at %.4g Hz%s%s)" % (
        len(data), model.nq, args.data, data.t[-1], data.rate, "; resampled" if data.resampled else "",
        "; %s from the filter: %s" % (" and ".join(data.derived), data.filter) if data.derived else ""), file=out)
    q, qd, qdd, tau = data.q, data.qd, data.qdd, data.tau
    lines = ["# robot_dynamics identification from %s (%d samples)" % (args.data, len(data)),
             "robot: %s" % model.name]
    if args.payload:
        est = rd.identify_payload(model, q, qd, qdd, tau, args.payload, friction=args.friction)
        predicted = rd.rnea(est.apply(model), q, qd, qdd)
        if est.friction is not None:
            predicted = predicted + rd.friction_regressor(model, qd) @ est.friction.ravel()
        print("payload on %s: mass %.5g kg (std %.2g), centre of mass [%s] m (std [%s]) in the link frame%s"
              % (est.link, est.mass, est.mass_std, ", ".join("%.5g" % c for c in est.com),
                 ", ".join("%.2g" % c for c in est.com_std), " (static data: no inertia)" if est.static else ""),
              file=out)
        lines += ["payload:", "  link: %s" % est.link, "  mass: %.10g" % est.mass, "  mass_std: %.6g" % est.mass_std,
                  "  com: [%s]" % ", ".join("%.10g" % c for c in est.com),
                  "  com_std: [%s]" % ", ".join("%.6g" % c for c in est.com_std)]
        if est.inertia is not None:
            I = est.inertia
            lines.append("  inertia: {ixx: %.10g, ixy: %.10g, ixz: %.10g, iyy: %.10g, iyz: %.10g, izz: %.10g}"
                         % (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2]))
        rms = est.residual_rms
    else:
        friction = args.friction_law or args.friction
        res = rd.identify(model, q, qd, qdd, tau, friction=friction, armature=args.armature, method=args.method)
        predicted = res.predict(q, qd, qdd)
        rms = res.residual_rms
        extra = [w for w, on in (("friction", res.base.friction), ("armature", res.base.armature)) if on]
        print("method %s: %d base parameters%s, regressor condition number %.4g"
              % (res.method, res.base.count, " (%s included)" % " and ".join(extra) if extra else "", res.condition),
              file=out)
        if args.friction_law in ("stribeck", "sigmoid") or args.armature:
            for j, name in enumerate(model.joint_names):
                parts = []
                if res.armature is not None:
                    parts.append("armature %.5g" % res.armature[j])
                if args.friction_law:
                    parts.append("%s friction %s" % (args.friction_law, ", ".join(
                        "%s %.5g" % kv for kv in res.friction_laws[j].parameters)))
                print("  %s: %s" % (name, "; ".join(parts)), file=out)
        lines += ["method: %s" % res.method, "samples: %d" % res.samples, "condition: %.6g" % res.condition,
                  "base_parameters:"]
        for k, (v, s, d) in enumerate(zip(res.parameters, res.standard_errors, res.base.descriptions)):
            lines.append("  - {value: %.10g, std: %.6g, definition: %s}" % (v, s, json.dumps(d)))
        if res.method == "consistent":
            text = res.to_yaml().splitlines()
            lines += text[text.index("links:"):]
            if args.urdf_out:
                res.to_urdf(args.urdf_out)
        else:
            lines += res.joint_lines()
    lines.append("residual_rms: {%s}" % ", ".join("%s: %.6g" % (n, r) for n, r in zip(model.joint_names, rms)))
    nominal = rd.rnea(model, q, qd, qdd)
    nominal_rms = np.sqrt(np.mean((tau - nominal) ** 2, axis=0))
    print(table(("nominal", "identified"), [(n, nominal_rms[i], rms[i]) for i, n in enumerate(model.joint_names)],
                 "joint"), file=out)
    print("(RMS of measured - predicted torque [N m | N]: the URDF's inertials, the identified model)", file=out)
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    wrote = [args.output]
    if args.plot:
        from . import plots
        plots.plot_torques(data.t, tau, predicted, model.joint_names, args.plot,
                           title="%s: measured and identified-model torques (%s)" % (
                               model.name, "payload" if args.payload else args.method))
        wrote.append(args.plot)
    if args.urdf_out and not args.payload and args.method == "consistent":
        wrote.append(args.urdf_out)
    print("wrote %s" % ", ".join(wrote), file=out)
    return 0
