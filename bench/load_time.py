#!/usr/bin/env python3
"""Load time of a robot description through each entry point, side by side with Pinocchio and MuJoCo
(issue 31; not a test: test/test_entry_points.py holds the bounds).

URDF: every ``.urdf`` that example-robot-data installs (69 files), each timed through

- ``rd.load_urdf(path)`` (the library),
- the nodes' loader, ``constraints.load.load_description(text)`` (what ``robot_description`` and the
  topic give it; ``urdf_path`` reads the file, then the same),
- ``robot-dynamics info`` in-process (``tools.cli.main``: load, then the neutral pose's kinematics and
  the JSON),

against ``pinocchio.buildModelFromUrdf(path)`` on the same file, alternated in one run; per file the
median of ``--repeat`` alternated loops, then per entry point the median and the slowest file and the
largest ratio to Pinocchio. Target: no file slower than 3x Pinocchio's load of it.

MJCF: MJCF of the largest real robots, written by MuJoCo's own URDF import of the five largest URDFs it
compiles (their visual and collision geometry removed first: the inertials are what dynamics reads), each timed
through ``rd.load_mjcf(text)`` against ``mujoco.MjModel.from_xml_string(text)``, which it calls (so the
ratio is at least 1: the rest is reading the compiled model).

Usage:
    .venv/bin/python bench/load_time.py [--repeat 7] [--markdown]
"""
import argparse
import io
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import robot_dynamics as rd
from robot_dynamics.constraints.load import load_description
from robot_dynamics.tools import cli
from robot_dynamics.tools.sample import example_robot_data_dir

LARGEST = ('tiago_description/robots/tiago_dual.urdf', 'pr2_description/urdf/pr2.urdf',
           'talos_data/robots/talos_reduced.urdf', 'anymal_c_simple_description/urdf/anymal.urdf',
           'ur_description/urdf/ur5_robot.urdf')
TARGET = 3.0


def seconds(call, repeat):
    """Median wall time [s] of ``call()`` over ``repeat`` runs (warnings silenced, a refusal timed too)."""
    times = []
    for _ in range(repeat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            try:
                call()
            except ValueError:          # a refusal (URDFError, Pinocchio's ValueError) is timed as well
                pass
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def urdf_rows(erd, repeat):
    """{entry point: [(file, seconds, pinocchio seconds)]} over every URDF of ``erd``."""
    import pinocchio as pin
    rows = {"rd.load_urdf": [], "node loader": [], "robot-dynamics info": []}
    for path in sorted(erd.rglob("*.urdf")):
        label, text = str(path.relative_to(erd)), path.read_bytes()
        calls = {"rd.load_urdf": lambda: rd.load_urdf(str(path)),
                 "node loader": lambda: load_description(text),
                 "robot-dynamics info": lambda: cli.main(["info", str(path)], out=io.StringIO())}
        ref = []
        for entry, call in calls.items():
            ref.append(seconds(lambda: pin.buildModelFromUrdf(str(path)), repeat))
            rows[entry].append((label, seconds(call, repeat), ref[-1]))
        print("  %-60s %7.2f ms  (pinocchio %.2f ms)" % (label, 1e3 * rows["node loader"][-1][1],
                                                          1e3 * statistics.median(ref)), file=sys.stderr)
    return rows


def mjcf_texts(erd, count=5):
    """[(label, MJCF text)] written by MuJoCo from the ``count`` largest URDFs it compiles (TIAGo's
    antennas have a non-physical inertia MuJoCo refuses), their geometry removed first."""
    import mujoco
    from lxml import etree
    out = []
    for path in sorted(erd.rglob("*.urdf"), key=lambda p: -p.stat().st_size):
        root = etree.fromstring(path.read_bytes())
        for element in root.xpath("//visual | //collision"):
            element.getparent().remove(element)
        try:
            model = mujoco.MjModel.from_xml_string(etree.tostring(root).decode())
        except ValueError:
            continue
        with tempfile.TemporaryDirectory() as folder:
            mjcf = Path(folder) / "robot.xml"
            mujoco.mj_saveLastXML(str(mjcf), model)
            out.append((str(path.relative_to(erd)), mjcf.read_text()))
        if len(out) == count:
            return out
    return out


def mjcf_rows(erd, repeat):
    import mujoco
    return [(label, seconds(lambda: rd.load_mjcf(text), repeat),
             seconds(lambda: mujoco.MjModel.from_xml_string(text), repeat)) for label, text in mjcf_texts(erd)]


def summary(entry, rows, reference):
    times = [s for _, s, _ in rows]
    slowest = max(rows, key=lambda r: r[1])
    worst = max(rows, key=lambda r: r[1] / r[2])
    return ("| %s | %d | %.2f | %.2f (%s) | %.2f | %.2f (%s) |" % (
        entry, len(rows), 1e3 * statistics.median(times), 1e3 * slowest[1], slowest[0],
        statistics.median(s / p for _, s, p in rows), worst[1] / worst[2], worst[0]), reference)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="alternated runs per file (median)")
    args = parser.parse_args(argv)
    erd = example_robot_data_dir()
    if erd is None:
        sys.exit("example-robot-data is not installed (requirements-dev.txt)")
    load_description((erd / LARGEST[-1]).read_bytes())      # the first call imports what loading needs
    rows = urdf_rows(erd, args.repeat)
    mjcf = mjcf_rows(erd, args.repeat)
    print("| entry point | files | median [ms] | slowest [ms] (file) | median ratio | largest ratio (file) |")
    print("|---|---:|---:|---|---:|---|")
    for entry, entry_rows in rows.items():
        print(summary(entry, entry_rows, "pinocchio.buildModelFromUrdf")[0])
    print(summary("rd.load_mjcf", mjcf, "mujoco.MjModel.from_xml_string")[0])
    print()
    print("Reference: pinocchio.buildModelFromUrdf(path) for the URDF rows, "
          "mujoco.MjModel.from_xml_string(text) for the MJCF row; ratio = ours / reference, per file.")
    worst = max(s / p for entry_rows in (rows["rd.load_urdf"], rows["node loader"]) for _, s, p in entry_rows)
    print("Target (no file slower than %gx Pinocchio's load, rd.load_urdf and the node loader): %s (largest %.2f)"
          % (TARGET, "met" if worst <= TARGET else "NOT met", worst))


if __name__ == "__main__":
    main()
