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
from ..codegen import cli as codegen_cli
from ..timing import cli as retime_cli
from ..errors import UsageError  # noqa: F401

EXAMPLES = """examples:
  robot-dynamics info urdf/ur5.urdf
  robot-dynamics torques urdf/ur5.urdf --q 0,-1.57,1.57,0,0,0 --qd 0.5,0,0,0,0,0
  robot-dynamics torques urdf/ur5.urdf --q shoulder_lift_joint=-90deg --json
  robot-dynamics equations urdf/textbook/point_mass_two_link.urdf --gravity 0,-9.81,0
  robot-dynamics equations urdf/textbook/point_mass_two_link.urdf --gravity 0,-9.81,0 \\
      --symbols m2=tip.mass,l2=tip_joint.x,g=gravity --latex
  robot-dynamics report urdf/ur5.urdf --q 0,-1.57,1.57,0,0,0 --point 0,0,0.1
  robot-dynamics simulate urdf/ur5.urdf --duration 2 --torque 0,0,0,0,0,0 -o run.csv
  robot-dynamics plot gravity urdf/ur5.urdf -o gravity.png
  robot-dynamics plot condition urdf/ur5.urdf --joints shoulder_lift_joint,elbow_joint -o cond.png
  robot-dynamics plot trajectory run.csv -o trajectory.png
  robot-dynamics excite urdf/panda_arm.urdf -o traj.yaml --csv traj.csv --period 10
  robot-dynamics identify urdf/panda_arm.urdf recording/ --method wls -o params.yaml --plot torques.png
  robot-dynamics retime urdf/ur5.urdf --waypoints waypoints.yaml -o timed.yaml --plot timed.png

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

def _floats(text, n, what):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise UsageError("%s: expected %d comma-separated numbers, got %r" % (what, n, text)) from None
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise UsageError("%s: expected %d finite comma-separated numbers, got %r" % (what, n, text))
    return np.array(vals)


def _value(text, joint, model, what):
    t = text.strip()
    scale = 1.0
    if t.endswith("deg"):
        if joint is not None and model.joints[joint].type == "prismatic":
            raise UsageError("%s: %r is prismatic, its value is in m, not deg" % (what, joint))
        t, scale = t[:-3], math.pi / 180.0
    try:
        v = float(t) * scale
    except ValueError:
        raise UsageError("%s: %r is not a number" % (what, text)) from None
    if not math.isfinite(v):
        raise UsageError("%s: %r is not finite" % (what, text))
    return v


def joint_vector(text, model, what, default=None):
    """Parse ``"0.1,0.2,..."`` (nq values) or ``"name=value,..."`` into (nq,)."""
    names = model.joint_names
    base = np.zeros(model.nq) if default is None else np.array(default, dtype=float)
    items = [s for s in text.split(",")] if text.strip() else []
    if items and all("=" in s for s in items):
        out = base.copy()
        for s in items:
            name, _, val = s.partition("=")
            name = name.strip()
            if name not in names:
                raise UsageError("%s: unknown joint %r; the joints are: %s" % (what, name, ", ".join(names)))
            out[names.index(name)] = _value(val, name, model, what)
        return out
    if any("=" in s for s in items):
        raise UsageError("%s: mix of values and name=value pairs in %r; use one form" % (what, text))
    if len(items) != model.nq:
        raise UsageError("%s: expected %d comma-separated values (one per joint: %s) or name=value pairs, got %d"
                         % (what, model.nq, ", ".join(names), len(items)))
    return np.array([_value(s, n, model, what) for s, n in zip(items, names)])


def _load(args):
    import robot_dynamics as rd
    gravity = _floats(args.gravity, 3, "--gravity") if args.gravity else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _read_model(rd, args.urdf, gravity, getattr(args, "root_joint", None))
        if getattr(args, "actuators", None):
            model = model.with_actuators(args.actuators)
    messages = [str(w.message) for w in caught]
    if args.command != "info":
        for m in messages:
            print("warning: %s" % m, file=sys.stderr)
    return model, messages


def _read_model(rd, path, gravity, root_joint=None):
    """The model of a URDF or MJCF file (told apart by the root element); gravity None: an
    MJCF's own, 0, 0, -9.81 for a URDF; root_joint: a URDF's (an MJCF's root is its free joint)."""
    from ..constraints.load import is_mjcf
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        head = b""                      # load_urdf says what is wrong with the path
    if is_mjcf(head):
        model = rd.load_mjcf(path)
        return model if gravity is None else model.with_gravity(gravity)
    return rd.load_urdf(path, gravity=(0.0, 0.0, -9.81) if gravity is None else gravity, root_joint=root_joint)


def cmd_codegen(args, out):
    return codegen_cli.run(_load(args)[0], args, out)


def cmd_retime(args, out):
    return retime_cli.run(_load(args)[0], args, out)


def _fmt(x, width=11, scale=1.0):
    """A number in a table cell; |x| < 1e-9 max(1, scale) (rounding residue) shows as 0."""
    if abs(x) < 1e-9 * max(1.0, scale):
        x = 0.0
    if not np.isfinite(x):
        return "%*s" % (width, "inf" if x > 0 else "-inf")
    return "%*.5g" % (width, x)


def _table(header, rows, first):
    """Aligned text table: first column left-aligned, numbers right."""
    w = max([len(first)] + [len(r[0]) for r in rows])
    scale = [max([abs(r[c]) for r in rows if np.isfinite(r[c])], default=0.0) for c in range(1, len(header) + 1)]
    lines = ["%-*s %s" % (w, first, " ".join("%11s" % h for h in header))]
    for r in rows:
        lines.append("%-*s %s" % (w, r[0], " ".join(_fmt(v, 11, s) for v, s in zip(r[1:], scale))))
    return "\n".join(lines)


def _matrix(M, names):
    w = max(len(n) for n in names)
    scale = float(np.max(np.abs(M)))
    out = []
    for i, n in enumerate(names):
        out.append("  %-*s %s" % (w, n, " ".join(_fmt(v, 11, scale) for v in M[i])))
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def cmd_info(args, out):
    model, messages = _load(args)
    from ..algorithms.kinematics import forward_kinematics
    q = model.neutral()
    T = forward_kinematics(model, q)
    moving_mass, mc = 0.0, np.zeros(3)
    for b, l in enumerate(model.body_link):
        Tb = T[model.link_names[l]]
        m = model.body_mass[b]
        moving_mass += m
        mc += m * (Tb[:3, :3] @ model.body_com[b] + Tb[:3, 3])
    info = dict(
        robot=model.name, base_link=model.base_link, nq=model.nq, gravity=model.gravity.tolist(),
        joints=[dict(name=n, type=model.joints[n].type, lower=_js(model.lower_limit[i]),
                     upper=_js(model.upper_limit[i]), velocity=_js(model.velocity_limit[i]),
                     effort=_js(model.effort_limit[i]), damping=float(model.damping[i]),
                     friction=float(model.friction[i])) for i, n in enumerate(model.joint_names)],
        mimic_joints=[dict(name=j.name, source=j.mimic[0], multiplier=j.mimic[1], offset=j.mimic[2])
                      for j in model.joints.values() if j.mimic is not None],
        links={n: m for n, m in model.link_masses.items()}, total_mass=model.total_mass,
        moving_mass=moving_mass, base_fixed_mass=model.total_mass - moving_mass,
        neutral_q=q.tolist(), center_of_mass=(mc / moving_mass).tolist() if moving_mass > 0 else None,
        inertia_warnings=messages)
    if args.json:
        print(json.dumps(info, indent=2), file=out)
        return 0
    print("Robot %r: %d joints, base link %r, gravity [%s] m/s^2" % (
        model.name, model.nq, model.base_link, ", ".join("%g" % g for g in model.gravity)), file=out)
    print("", file=out)
    rows = [(n, model.lower_limit[i], model.upper_limit[i], model.velocity_limit[i], model.effort_limit[i],
             model.damping[i], model.friction[i]) for i, n in enumerate(model.joint_names)]
    lines = _table(("lower", "upper", "velocity", "effort", "damping", "friction"), rows, "joint").splitlines()
    print(lines[0], file=out)
    for line, n in zip(lines[1:], model.joint_names):
        print(line + "  " + model.joints[n].type, file=out)
    print("(limits in rad or m, rad/s or m/s, N m or N; inf = none)", file=out)
    for mj in info["mimic_joints"]:
        print("mimic: %s = %g * %s + %g" % (mj["name"], mj["multiplier"], mj["source"], mj["offset"]), file=out)
    print("", file=out)
    w = max(len(n) for n in model.link_names)
    print("%-*s %11s" % (w, "link", "mass [kg]"), file=out)
    for n in model.link_names:
        print("%-*s %11.5g" % (w, n, model.link_masses[n]), file=out)
    print("%-*s %11.5g" % (w, "total", model.total_mass), file=out)
    print("", file=out)
    if moving_mass > 0:
        print("Centre of mass of the moving links (%.5g kg) at the neutral pose q = [%s]: [%s] m (base frame)"
              % (moving_mass, ", ".join("%g" % v for v in q), ", ".join("%.5g" % v for v in mc / moving_mass)),
              file=out)
    if info["base_fixed_mass"] > 1e-12 * model.total_mass:
        print("Links fixed to the base carry %.5g kg (no effect on the joint dynamics)." % info["base_fixed_mass"],
              file=out)
    print("Inertia warnings:%s" % (" none" if not messages else ""), file=out)
    for m in messages:
        print("  " + m, file=out)
    return 0


def _js(x):
    return float(x) if np.isfinite(x) else None


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


def _progress(args):
    return True if args.progress else (False if args.no_progress else None)


def cmd_excite(args, out):
    from ..identification.excitation import excitation_trajectory
    model, _ = _load(args)
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
        acc = _value(args.acceleration, None, model, "--acceleration")       # one value for every joint
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
    print(_table(("q_min", "q_max", "lower", "upper", "|qd|max", "qd_limit", "|qdd|max", "qdd_limit"), rows,
                 "joint"), file=out)
    print("wrote %s (trajectory_msgs/JointTrajectory, %d points at %g Hz from t = %g s)%s"
          % (args.output, int(round(args.cycles * ex.period * args.rate)) + 1, args.rate, args.start,
             " and %s" % args.csv if args.csv else ""), file=out)
    return 0


def cmd_identify(args, out):
    import robot_dynamics as rd
    model, _ = _load(args)
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
    print(_table(("nominal", "identified"), [(n, nominal_rms[i], rms[i]) for i, n in enumerate(model.joint_names)],
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
        c.set_defaults(func=func)
        return c

    c = command("info", "joints, limits, masses, total mass, centre of mass, inertia warnings", cmd_info)
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

    def progress_options(c):
        bar = c.add_mutually_exclusive_group()
        bar.add_argument("--progress", action="store_true", help="always show progress on stderr")
        bar.add_argument("--no-progress", action="store_true", help="never show it (default: on a terminal)")

    c = command("excite", "an excitation trajectory for identification (finite Fourier series optimised for the "
                          "base regressor's condition number); writes a JointTrajectory YAML and CSV", cmd_excite)
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
                cmd_identify)
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

    c = command("codegen", "dependency-free C99 of the robot's dynamics (RNEA, gravity, Coriolis, mass matrix, "
                           "ABA): writes NAME.h and NAME.c (docs/CODEGEN.md)", cmd_codegen)
    codegen_cli.add_arguments(c)

    c = command("retime", "time-optimal timing of a path through waypoints under the velocity and torque limits "
                          "(toppra); writes a JointTrajectory YAML (docs/RETIMING.md)", cmd_retime)
    retime_cli.add_arguments(c)
    return p


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
        return args.func(args, out)
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
