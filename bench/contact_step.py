"""Time of one simulator step with contacts: the Panda, a table, three free boxes (issue 35).

Usage (from the checkout, after scripts/setup-venv.sh; needs example-robot-data,
a test dependency, for the Panda's collision meshes and SRDF):
    .venv/bin/python bench/contact_step.py [--steps 1000] [--integrator rk4] [--json]
    .venv/bin/python bench/contact_step.py --bundled [--integrator rk4]

``--bundled``: the bundled Panda (no mimic joint: no collision meshes either)
with a 2 cm sphere 10 cm out of its flange pressing on a table plane (the
servo's target 10 cm below the touching pose, about 190 N) and the three
boxes on it, detected in closed form (``contact/analytic.py``).

Scene: example-robot-data's Panda (collision meshes as convex hulls, pairs
filtered by adjacency and its SRDF), the ground, a table (0.8 x 1.2 x 0.04 m,
top at 0.40 m) and three free boxes of 0.2 kg resting on it (12 contacts),
the arm held at its ready pose by the position servo; then the same with
the hand pressed on the table (the servo's target 3 cm below the touching
pose). ``rd.Simulator(model, contact=ContactStepper(...))`` at 1 kHz.
Prints per phase the median wall and this thread's CPU time of ``step()``
over 100-step blocks [us], the real-time factor at 1 kHz (1 ms / wall
time), the contacts, and the share of one contact detection
(``Detector.detect``) in a step.
"""
import argparse
import json
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.contact.free_bodies import FreeBodies
from robot_dynamics.contact.stepping import ContactStepper
from robot_dynamics.tools.sample import PANDA_READY as READY, panda_table_scene

def scene():
    """(model, world, detector) of the benchmark scene: example-robot-data's Panda on the shipped
    config/worlds/panda_table.yaml (robot_dynamics.tools.sample.panda_table_scene)."""
    try:
        return panda_table_scene()
    except LookupError as exc:
        raise SystemExit(str(exc)) from None


def bundled(integrator, steps):
    """(wall, CPU) [us] of a step of the --bundled scene, and its contacts."""
    from robot_dynamics.contact.analytic import PlaneDetector
    model = rd.load_urdf(rd.bundled_path("panda_arm.urdf"))
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785])
    l8 = model.link_index("panda_link8")
    P = model.link_placement[l8]
    T = rd.link_pose(model, q0, "panda_link8")
    r, tip = 0.02, T[:3, :3] @ [0, 0, 0.1] + T[:3, 3]
    table = tip[2] - r
    boxes = FreeBodies([dict(shape="box", size=(0.05,) * 3, mass=0.5, position=(0.3 + 0.1 * j, -0.3, table + 0.025))
                        for j in range(3)])
    shapes = [dict(body=model.link_body[l8], type="sphere", size=(r,), position=P[:3, :3] @ [0, 0, 0.1] + P[:3, 3])]
    shapes += [dict(body=model.nb + j, type="box", size=(0.05,) * 3) for j in range(3)]
    stepper = ContactStepper(model, PlaneDetector(shapes, [((0, 0, table), (0, 0, 1))]), boxes)
    sim = rd.Simulator(model, q0=q0, integrator=integrator, contact=stepper)
    J = rd.jacobian(model, q0, "panda_link8", (0, 0, 0.1))[:3]
    sim.set_command(q0 + np.linalg.pinv(J) @ [0, 0, -0.1], mode="position")
    sim.step(300)
    wall, cpu = blocks(sim, steps)
    a, b, point, normal, F = stepper.wrenches()
    return wall, cpu, len(a), float(F[a < model.nb, 2].sum())


def blocks(sim, n, size=100):
    """Median (wall, CPU) [us] of one step over n // size blocks of ``size`` steps."""
    wall, cpu = [], []
    for _ in range(max(1, n // size)):
        t, c = time.perf_counter(), time.thread_time()
        sim.step(size)
        wall.append((time.perf_counter() - t) / size)
        cpu.append((time.thread_time() - c) / size)
    return np.median(wall) * 1e6, np.median(cpu) * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--integrator", default="rk4")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bundled", action="store_true", help="the bundled Panda, closed-form contacts")
    args = parser.parse_args(argv)
    if args.bundled:
        wall, cpu, n, f = bundled(args.integrator, args.steps)
        print("bundled Panda, %s, 1 kHz: step %.0f us wall, %.0f us CPU, RTF %.2f; %d contacts (%.1f N on the arm)"
              % (args.integrator, wall, cpu, 1e3 / wall, n, f))
        return 0
    model, world, detector = scene()
    stepper = ContactStepper(model, detector, FreeBodies.from_world(world))
    q0 = READY[:model.nq].copy()
    sim = rd.Simulator(model, q0=q0, integrator=args.integrator, contact=stepper)
    sim.set_command(q0, mode="position")
    sim.step(200)                                            # compiled, settled
    out = {"integrator": args.integrator}
    J = rd.jacobian(model, q0, "panda_hand", (0.0, 0.0, 0.1))[:3]
    for phase, target in (("resting boxes, hand above", q0),
                          ("hand pressed on the table", q0 + np.linalg.pinv(J) @ [0.0, 0.0, -0.10])):
        sim.set_command(target, mode="position")
        sim.step(500)
        wall, cpu = blocks(sim, args.steps)
        a, b, point, normal, F = stepper.wrenches()
        q = sim.q
        from robot_dynamics.contact.detect import body_poses
        poses = body_poses(model, q)
        free = np.tile(np.eye(4), (len(stepper.bodies), 1, 1))
        free[:, :3, :3], free[:, :3, 3] = stepper.bodies.R, stepper.bodies.p
        t = time.thread_time()
        for _ in range(200):
            detector.detect(poses, free)
        detect = (time.thread_time() - t) / 200 * 1e6
        arm = a < model.nb
        out[phase] = {"step_us_wall": wall, "step_us_cpu": cpu, "rtf": 1e3 / wall, "contacts": int(len(a)),
                      "arm_contacts": int(arm.sum()), "arm_force_z": float(F[arm, 2].sum()),
                      "detect_us_cpu": detect, "detections_per_step": 1}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print("integrator %s, 1 kHz" % args.integrator)
        for phase in ("resting boxes, hand above", "hand pressed on the table"):
            r = out[phase]
            print("%-27s step %6.0f us wall, %6.0f us CPU, RTF %.2f; %2d contacts (%d on the arm, %.1f N); "
                  "one detection %.0f us CPU x %d a step"
                  % (phase, r["step_us_wall"], r["step_us_cpu"], r["rtf"], r["contacts"], r["arm_contacts"],
                     r["arm_force_z"], r["detect_us_cpu"], r["detections_per_step"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
