"""Time of one contact detection on the issue-35 scene: the Panda, a table, three free boxes.

Usage (from the checkout, after scripts/setup-venv.sh; needs example-robot-data,
a test dependency, for the Panda's collision meshes and SRDF):
    .venv/bin/python bench/contact_detect.py [--repeat 2000] [--json]

Scene: example-robot-data's Panda (9 collision meshes as convex hulls, 8
finger boxes; pairs filtered by adjacency and panda_description/srdf/panda.srdf),
the ground, a table (0.8 x 1.2 x 0.04 m, top at 0.40 m) and three free boxes
resting on it (4 contacts each), the arm at its ready pose, the table's top
2 cm below the hand, then 1 cm above the hand's lowest point (the hand pressed
1 cm into it). Prints, per pose, the median and
the 90th percentile of ``Detector.detect`` (the broad phase and the narrow
phase, the record filled) and of ``body_poses`` (the forward kinematics, which
a simulator has from its own step), in microseconds, wall time and this
thread's CPU time (time.thread_time: the cost on a loaded machine), with the
contact count.
"""
import argparse
import json
import time
import warnings

import numpy as np

import robot_dynamics as rd
from robot_dynamics.contact.collision import CollisionModel
from robot_dynamics.contact.detect import Detector, body_poses
from robot_dynamics.contact.geometry import shapes_from_urdf
from robot_dynamics.contact.world import load_world
from robot_dynamics.tools.sample import example_robot_data_dir

WORLD = """
ground: {height: 0.0}
static:
  - {name: table, shape: box, size: [0.8, 1.2, 0.04], position: [0.55, 0.0, %(centre)r]}
free:
  - {name: box1, shape: box, size: [0.05, 0.05, 0.05], mass: 0.2, position: [0.45, 0.25, %(z1)r]}
  - {name: box2, shape: box, size: [0.06, 0.04, 0.05], mass: 0.2, position: [0.60, -0.25, %(z1)r], rpy: [0, 0, 0.4]}
  - {name: box3, shape: box, size: [0.04, 0.04, 0.08], mass: 0.2, position: [0.75, 0.10, %(z3)r]}
"""
HAND = ("panda_link7", "panda_hand", "panda_leftfinger", "panda_rightfinger")
READY = np.array([0.0, -0.785398, 0.0, -2.35619, 0.0, 1.5707, 0.785398, 0.02])


def scene(top=None):
    """(model, world, detector) with the table's top at ``top`` [m] (None: the robot alone);
    the boxes rest on it, 0.5 mm deep."""
    erd = example_robot_data_dir()
    if erd is None:
        raise SystemExit("example-robot-data is not installed (pip install -r requirements-dev.txt)")
    urdf = str(erd / "panda_description/urdf/panda.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rd.load_urdf(urdf)
    shapes = shapes_from_urdf(urdf, package_dirs=[erd.parent.parent])
    world = None if top is None else load_world(WORLD % {"centre": top - 0.02, "z1": top + 0.0245,
                                                         "z3": top + 0.0395})
    collision = CollisionModel(model, shapes, world, srdf=str(erd / "panda_description/srdf/panda.srdf"))
    return model, world, Detector(collision)


def hand_height(model, q):
    """The lowest z [m] of the hand's collision shapes at q (robot alone, exact: its
    distance to a plane through the origin, with coal)."""
    import coal
    _, _, detector = scene()
    T = detector.shape_poses(body_poses(model, q))
    c = detector.collision
    ground = coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    low = np.inf
    for s, shape in enumerate(c.shapes):
        if shape.link in HAND:
            result = coal.DistanceResult()
            coal.distance(c.geometries[s], coal.Transform3s(T[s, :3, :3], T[s, :3, 3]), ground, coal.Transform3s(),
                          coal.DistanceRequest(), result)
            low = min(low, result.min_distance)
    return low


def timed(f, repeat):
    """(median wall, median CPU of this thread) [us] of f(): on a loaded machine the
    thread's CPU time is the cost, the wall time includes waiting for a core."""
    wall, cpu = np.empty(repeat), np.empty(repeat)
    for k in range(repeat):
        t, c = time.perf_counter(), time.thread_time()
        f()
        wall[k], cpu[k] = time.perf_counter() - t, time.thread_time() - c
    return np.median(wall) * 1e6, np.median(cpu) * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    model, _, _ = scene()
    q = READY[:model.nq]
    hand = hand_height(model, q)
    out = {"hand_height_m": hand}
    for name, depth in (("hand 2 cm above the table", -0.02), ("hand 1 cm into the table", 0.01)):
        _, world, detector = scene(top=hand + depth)
        free = np.array([f.pose for f in world.free_bodies])
        poses = body_poses(model, q)
        contacts = detector.detect(poses, free)
        names = detector.collision.names
        pairs = sorted({"%s-%s" % (names[contacts.geom_a[i]], names[contacts.geom_b[i]]) for i in range(contacts.n)})
        detect = timed(lambda: detector.detect(poses, free), args.repeat)
        fk = timed(lambda: body_poses(model, q), args.repeat)
        out["shapes"], out["pairs"] = len(detector.collision.shapes), int(detector.collision.npairs)
        out[name] = {"contacts": contacts.n, "pairs": pairs, "detect_us_wall": detect[0], "detect_us_cpu": detect[1],
                     "body_poses_us_wall": fk[0], "body_poses_us_cpu": fk[1]}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print("%d shapes, %d pairs after filtering" % (out["shapes"], out["pairs"]))
        for name in ("hand 2 cm above the table", "hand 1 cm into the table"):
            r = out[name]
            print("  " + ", ".join(r["pairs"]))
            print("%-27s %2d contacts  detect %6.1f us wall, %6.1f us CPU;  body_poses %5.1f us wall, %5.1f CPU"
                  % (name, r["contacts"], r["detect_us_wall"], r["detect_us_cpu"], r["body_poses_us_wall"],
                     r["body_poses_us_cpu"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
