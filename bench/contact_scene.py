"""Panda + table + 3 free boxes at 1 kHz, ours and MuJoCo's mj_step side by side (issue 35, point 4).

Usage (from the checkout, after scripts/setup-venv.sh --dev; needs example-robot-data
and mujoco, test dependencies):
    .venv/bin/python bench/contact_scene.py [--repeats 7] [--block 200] [--markdown] [--robot bundled]

The scene is bench/contact_step.py's: example-robot-data's Panda (its collision
meshes, as convex hulls in both simulators, and its finger boxes; pairs filtered
by adjacency and its SRDF), the ground, a table (0.8 x 1.2 x 0.04 m, top at
0.40 m) and three free boxes of 0.2 kg resting on it. example-robot-data's, not
the bundled Panda: its collision geometry is the real arm's (meshes MuJoCo reads
too, so both simulators collide the same hulls); the bundled URDF has only
display cylinders (see docs/CONTACT.md). Its mimic finger joint takes the
simulator's compiled step too (the CRBA route; the printed free-arm step).
``--robot bundled``: the bundled Panda (no mimic joint), its
display primitives (cylinders, the hand's boxes) colliding in both simulators,
its pairs filtered by urdf/panda_arm.srdf.

Two phases, each as bench/contact_step.py: the boxes resting with the hand
2 cm above the table, and the hand pressed on the table (the servo's target
10 cm below). Ours: ``rd.Simulator(model, contact=ContactStepper(...))`` with
RK4 and semi-implicit Euler, dt = 1 ms. MuJoCo: the same URDF compiled by
MuJoCo (the mimic joint becomes its joint equality), written out as MJCF with
the ground, table, boxes, the pairs the SRDF disables as ``<exclude>``, gravity
compensation and position actuators at the same targets (the arm's base geoms on a body of
their own, so that they can be excluded too); its default solver
(Newton, pyramidal cones, soft constraints), default Euler integrator and RK4,
timestep 1 ms. Per step: the median over ``--repeats`` blocks of ``--block``
steps, ours and MuJoCo's interleaved (the machine is shared: the load moves
both alike); the ratio is the median of the per-repeat ratios. Prints the load
average (os.getloadavg) before and after.
"""
import argparse
import os
import statistics
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np

import robot_dynamics as rd
from robot_dynamics.contact.free_bodies import FreeBodies
from robot_dynamics.contact.stepping import ContactStepper

from contact_step import READY, scene
from robot_dynamics.tools.sample import panda_table_scene

ERD, BUNDLED = "example-robot-data", "bundled"



def bundled_scene():
    """(model, world, detector): the bundled Panda's display primitives (cylinders, the hand's boxes) as its
    collision geometry, with urdf/panda_arm.srdf's pairs, in the same world."""
    return panda_table_scene("bundled")


def urdf_text(robot):
    """The robot's URDF as MuJoCo reads it: meshes by absolute path; the bundled Panda's visuals as collisions."""
    if robot == BUNDLED:
        return rd.bundled_path("panda_arm.urdf").read_text().replace("<visual>", "<collision>").replace(
            "</visual>", "</collision>")
    from robot_dynamics.tools.sample import example_robot_data_dir
    erd = example_robot_data_dir()
    text = (erd / "panda_description/urdf/panda.urdf").read_text()
    return text.replace("package://example-robot-data/robots/", str(erd) + "/")


def mjcf_text(model, world, detector, robot=ERD):
    """The scene as MJCF (a string): MuJoCo's compile of the Panda URDF, with the world added."""
    import mujoco
    text = urdf_text(robot)
    head = text.index(">", text.index("<robot")) + 1
    text = text[:head] + '<mujoco><compiler discardvisual="true" strippath="false"/></mujoco>' + text[head:]
    mj = mujoco.MjModel.from_xml_string(text)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "panda.xml")
        mujoco.mj_saveLastXML(path, mj)
        root = ET.parse(path).getroot()
    option = ET.SubElement(root, "option", timestep="0.001")
    option.set("gravity", "0 0 -9.81")
    body = root.find("worldbody")
    for b in body.iter("body"):
        b.set("gravcomp", "1")
    base = ET.Element("body", name=model.link_names[0])       # the base's geoms on a body of their own,
    for geom in body.findall("geom"):                          # so that <exclude> can name it
        body.remove(geom)
        base.append(geom)
    body.insert(0, base)
    ET.SubElement(body, "geom", name="ground", type="plane", size="0 0 1")
    [table] = [s for s in world.static_shapes if s.name == "table"]       # axis-aligned in the world file
    ET.SubElement(body, "geom", name="table", type="box", size=" ".join(str(x / 2) for x in table.size),
                  pos=" ".join(map(repr, table.placement[:3, 3].tolist())))
    for f in world.free_bodies:
        p, R = f.pose[:3, 3], f.pose[:3, :3]
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, R.flatten())
        free = ET.SubElement(body, "body", name=f.name, pos=" ".join(map(repr, p.tolist())),
                             quat=" ".join(map(repr, quat.tolist())))
        ET.SubElement(free, "freejoint")
        ET.SubElement(free, "geom", type="box", size=" ".join(repr(x / 2) for x in f.shape.size), mass=repr(f.mass))
    contact = ET.SubElement(root, "contact")
    for a, b in excluded_pairs(model, detector):
        ET.SubElement(contact, "exclude", body1=a, body2=b)
    actuator = ET.SubElement(root, "actuator")
    for j in body.iter("joint"):
        ET.SubElement(actuator, "position", name=j.get("name"), joint=j.get("name"), kp="2000", kv="100")
    return ET.tostring(root, encoding="unicode")


def excluded_pairs(model, detector):
    """(link, link) MuJoCo body names of the robot's body pairs (the base included) our collision model
    never tests (SRDF, adjacency)."""
    c = detector.collision
    base = model.link_names[0]
    robot = [b for b in range(model.nb)] + [-2]                # -2: the base's shapes

    def body(s):
        if c.shape_body[s] >= 0 and c.shape_free[s] < 0:
            return int(c.shape_body[s])
        return -2 if c.shapes[s].link == base else None
    tested = {frozenset((body(a), body(b))) for a, b in zip(c.pair_a, c.pair_b)}
    name = {b: model.link_names[model.body_link[b]] for b in range(model.nb)}
    name[-2] = base
    return [(name[i], name[j]) for k, i in enumerate(robot) for j in robot[k + 1:] if frozenset((i, j)) not in tested]


def pressing_target(model, q0):
    """The servo's target for the hand pressed on the table: 10 cm below the ready pose's."""
    J = rd.jacobian(model, q0, "panda_hand", (0.0, 0.0, 0.1))[:3]
    return q0 + np.linalg.pinv(J) @ [0.0, 0.0, -0.10]


def ours(model, world, detector, integrator):
    stepper = ContactStepper(model, detector, FreeBodies.from_world(world))
    q0 = READY[:model.nq].copy()
    sim = rd.Simulator(model, q0=q0, integrator=integrator, contact=stepper)
    sim.set_command(q0, mode="position")
    sim.step(200)
    return sim, stepper


def theirs(xml, integrator, nq):
    import mujoco
    mj = mujoco.MjModel.from_xml_string(xml)
    mj.opt.integrator = integrator
    data = mujoco.MjData(mj)
    data.qpos[:nq] = READY[:nq]
    data.ctrl[:nq] = READY[:nq]
    mujoco.mj_forward(mj, data)
    mujoco.mj_step(mj, data, nstep=200)
    return mj, data


def timed(step, block):
    """(wall, this thread's CPU) [us] of one step, over ``block`` steps."""
    start, cpu = time.perf_counter(), time.thread_time()
    step(block)
    return (time.perf_counter() - start) / block * 1e6, (time.thread_time() - cpu) / block * 1e6


def phase(sim, stepper, mj, data, target, repeats, block):
    """Median per-step (wall, CPU) times [us] of ours and MuJoCo's, the median ratios (wall, CPU) and the
    contact counts, at ``target``."""
    import mujoco
    sim.set_command(target, mode="position")
    data.ctrl[:len(target)] = target
    sim.step(500)
    mujoco.mj_step(mj, data, nstep=500)
    a, b = [], []
    for k in range(repeats):
        pair = [lambda: timed(sim.step, block), lambda: timed(lambda n: mujoco.mj_step(mj, data, nstep=n), block)]
        x = [f() for f in (pair if k % 2 == 0 else pair[::-1])]
        a.append(x[0] if k % 2 == 0 else x[1])
        b.append(x[1] if k % 2 == 0 else x[0])
    contacts = len(stepper.wrenches()[0])
    med = [statistics.median(x[i] for x in runs) for runs in (a, b) for i in (0, 1)]
    ratio = [statistics.median(p[i] / q[i] for p, q in zip(a, b)) for i in (0, 1)]
    return med, ratio, contacts, int(data.ncon)


def free_arm_step(model, integrator, block):
    """[us] a step of the same arm without contact (the simulator's path for this model)."""
    sim = rd.Simulator(model, q0=READY[:model.nq].copy(), integrator=integrator)
    sim.set_command(READY[:model.nq], mode="position")
    sim.step(100)
    return statistics.median(timed(sim.step, block)[1] for _ in range(5))


def main(argv=None):
    import mujoco
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--block", type=int, default=200)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--robot", choices=(ERD, BUNDLED), default=ERD,
                        help="example-robot-data's Panda (meshes, mimic finger) or the bundled one (primitives)")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    model, world, detector = scene() if args.robot == ERD else bundled_scene()
    xml = mjcf_text(model, world, detector, args.robot)
    rows = []
    for name, scheme in (("rk4", mujoco.mjtIntegrator.mjINT_RK4),
                         ("semi_implicit_euler", mujoco.mjtIntegrator.mjINT_EULER)):
        sim, stepper = ours(model, world, detector, name)
        mj, data = theirs(xml, scheme, model.nq)
        free = free_arm_step(model, name, args.block)
        for label, target in (("resting", READY[:model.nq]), ("pressing", pressing_target(model, READY[:model.nq]))):
            (wall, cpu, mj_wall, mj_cpu), ratio, n_ours, n_mj = phase(sim, stepper, mj, data, target,
                                                                       args.repeats, args.block)
            rows.append((label, name, scheme.name.replace("mjINT_", ""), wall, cpu, 1e3 / wall, mj_wall, mj_cpu,
                         ratio[0], ratio[1], n_ours, n_mj, free))
    end = os.getloadavg()
    if args.markdown:
        print("| phase | ours | MuJoCo | ours wall / CPU [us] | RTF | MuJoCo wall / CPU [us] | ratio wall / CPU "
              "| contacts ours / MuJoCo | ours without contact, CPU [us] |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %s | %s | %.0f / %.0f | %.2f | %.0f / %.0f | %.2f / %.2f | %d / %d | %.0f |" % r)
    else:
        for r in rows:
            print("%-9s ours %-19s MuJoCo %-5s ours %5.0f us wall %5.0f CPU (RTF %.2f)  MuJoCo %4.0f wall %4.0f CPU  "
                  "ratio %.2f wall %.2f CPU  contacts %d / %d  (ours without contact %.0f us CPU)" % r)
    print("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after; %d repeats of %d steps"
          % (load + end + (args.repeats, args.block)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
