"""``robot-dynamics codegen ROBOT.urdf -o FOLDER [--prefix NAME]``: the body of
the subcommand (registered in :mod:`robot_dynamics.tools.cli`)."""
import re

from ..codegen.writer import IDENTIFIER, write


def add_arguments(parser):
    """The subcommand's own options (the URDF and --gravity come with every subcommand)."""
    parser.add_argument("-o", "--output", required=True, metavar="FOLDER",
                        help="folder to write NAME.h and NAME.c into (created if needed)")
    parser.add_argument("--root-joint", choices=("floating", "planar"),
                        help="a URDF's root link moves through this joint (the generated functions then take "
                             "q = xyz, quaternion xyzw, joints; docs/CODEGEN.md)")
    parser.add_argument("--prefix", metavar="NAME",
                        help="C identifier starting every generated name (default: the robot's name, "
                             "other characters than letters, digits and '_' replaced by '_')")


def default_prefix(name):
    """The robot's name as a C identifier: other characters -> '_', a leading digit gets '_'."""
    prefix = re.sub(r"[^A-Za-z0-9_]", "_", name) or "robot"
    return prefix if IDENTIFIER.match(prefix) else "_" + prefix


def run(model, args, out):
    """Write the two files; print their paths. Returns the exit code 0."""
    prefix = args.prefix if args.prefix is not None else default_prefix(model.name)
    header, source = write(model, prefix, args.output, source=args.urdf)
    print("wrote %s, %s (%d joints, prefix %s)" % (header, source, len(model.joint_names), prefix), file=out)
    return 0
