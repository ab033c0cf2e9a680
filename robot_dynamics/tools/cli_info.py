"""``robot-dynamics info`` and ``robot-dynamics models``: the bodies of the two subcommands that describe a
robot and the files shipped with the package (registered in :mod:`robot_dynamics.tools.cli`)."""
import json

import numpy as np

from ..errors import UsageError
from .cli_values import table as _table


def cmd_info(model, messages, args, out):
    """``robot-dynamics info``: joints, limits, actuators, masses and the centre of mass of ``model``
    (``messages``: the warnings its loading gave), as a table or JSON (``args.json``)."""
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
                     friction=float(model.friction[i]), **_actuator(model.actuators[n]))
                for i, n in enumerate(model.joint_names)],
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
    _print_actuators(model, out)
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


def finite_or_none(x):
    """A limit for JSON: the float, or None (null) where there is none (inf)."""
    return float(x) if np.isfinite(x) else None


_js = finite_or_none


def _actuator(a):
    """The JSON fields of one joint's actuator (robot_dynamics.model.actuators.Actuator)."""
    return dict(armature=a.armature, gear_ratio=a.gear_ratio, gear_ratio_from=a.gear_ratio_from,
                rotor_inertia=a.rotor_inertia, friction_law=dict(law=a.friction.law, **a.friction.params))


def _print_actuators(model, out):
    """Each joint's armature, gear ratio and friction law with its parameters (docs/ACTUATORS.md)."""
    actuators = [model.actuators[n] for n in model.joint_names]
    rows = [(a.joint, a.armature, a.gear_ratio) for a in actuators]
    lines = _table(("armature", "gear ratio"), rows, "joint").splitlines()
    print(lines[0] + "  friction law", file=out)
    for line, a in zip(lines[1:], actuators):
        law = a.friction
        print("%s  %s: %s" % (line, law.law, ", ".join("%s %g" % p for p in law.parameters)), file=out)
    print("(armature in kg m^2 or kg, reflected to the joint; gear ratio 1 where none is given; friction "
          "parameters in SI units; set by --actuators YAML: docs/ACTUATORS.md)", file=out)


def cmd_models(args, out):
    """The files shipped with the package, or the absolute path of one (``models NAME``)."""
    from ..errors import InputError
    from ..bundled import bundled_files, bundled_models, bundled_path, share_directory
    if args.name:
        try:
            print(bundled_path(args.name), file=out)
        except (FileNotFoundError, InputError) as err:
            raise UsageError(str(err)) from None
        return 0
    models = bundled_models()
    print("Files shipped with robot_dynamics, in %s:" % share_directory(), file=out)
    print("", file=out)
    print("robot descriptions (URDF, MJCF):", file=out)
    for name in models:
        print("  " + name, file=out)
    print("other files:", file=out)
    for name in bundled_files():
        if name not in models:
            print("  " + name, file=out)
    print("", file=out)
    print("Give one to a command as package://robot_dynamics/NAME (robot-dynamics info "
          "package://robot_dynamics/urdf/ur5.urdf); 'robot-dynamics models NAME' prints its path.", file=out)
    return 0
