"""Random robots as URDF text, for property tests and examples.

``random_urdf(seed)`` builds a fixed-base kinematic tree with revolute,
continuous, prismatic and fixed joints, arbitrary axes and origins,
inertial frames with rpy, branches and massless links: every feature the
loader supports, in one seeded description.
"""
import os
import sys
from pathlib import Path

import numpy as np


def random_urdf(seed, n_links=8, *, branching=0.35, p_fixed=0.2, p_prismatic=0.2,
                p_continuous=0.15, p_massless=0.1, mimic=False, name=None):
    """URDF XML text of a random tree with ``n_links`` links besides the base.

    Args:
        seed: int seed of numpy's default Generator.
        n_links: number of links attached by joints.
        branching: probability that a link attaches to a random earlier
            link instead of the previous one.
        p_fixed, p_prismatic, p_continuous: joint type probabilities (the
            rest are revolute).
        p_massless: probability that a link has no <inertial>.
        mimic: if True, one moving joint mimics an earlier one.
    """
    rng = np.random.default_rng(seed)
    parents, types = [], []
    for k in range(1, n_links + 1):
        parents.append(0 if k == 1 else int(rng.integers(0, k)) if rng.random() < branching else k - 1)
        u = rng.random()
        types.append("fixed" if u < p_fixed else "prismatic" if u < p_fixed + p_prismatic
                     else "continuous" if u < p_fixed + p_prismatic + p_continuous else "revolute")
    # A massless link is allowed only where something massive hangs below it,
    # so every moving joint moves some inertia (M stays positive definite).
    has_child = {p for p in parents}
    massless = [k in has_child and rng.random() < p_massless for k in range(1, n_links + 1)]
    name_of = lambda k: "base" if k == 0 else "link%d" % k
    links = ['<link name="base"/>']
    joints, moving = [], []
    for k in range(1, n_links + 1):
        links.append('<link name="link%d"/>' % k if massless[k - 1]
                     else '<link name="link%d">%s</link>' % (k, _inertial(rng)))
        jtype = types[k - 1]
        body = ['<parent link="%s"/><child link="link%d"/>' % (name_of(parents[k - 1]), k),
                '<origin xyz="%s" rpy="%s"/>' % (_v(rng.uniform(-0.4, 0.4, 3)), _v(rng.uniform(-np.pi, np.pi, 3)))]
        if jtype != "fixed":
            axis = rng.normal(size=3) * rng.uniform(0.5, 3.0)   # not unit: the loader normalises
            body.append('<axis xyz="%s"/>' % _v(axis))
            body.append('<limit effort="%g" velocity="%g" lower="-2.5" upper="2.5"/>'
                        % (rng.uniform(10, 100), rng.uniform(1, 5)))
            body.append('<dynamics damping="%g" friction="%g"/>' % (rng.uniform(0, 0.5), rng.uniform(0, 0.3)))
            if mimic and len(moving) >= 2 and not any("mimic" in j for j in joints):
                body.append('<mimic joint="%s" multiplier="%g" offset="%g"/>'
                            % (moving[rng.integers(0, len(moving))], rng.uniform(-1.5, 1.5), rng.uniform(-0.3, 0.3)))
            moving.append("joint%d" % k)
        joints.append('<joint name="joint%d" type="%s">%s</joint>' % (k, jtype, "".join(body)))
    return '<?xml version="1.0"?>\n<robot name="%s">\n%s\n%s\n</robot>\n' % (
        name or "random_%d" % seed, "\n".join(links), "\n".join(joints))


def _inertial(rng):
    """A physically valid inertia: principal moments from a random box, random frame."""
    m = rng.uniform(0.2, 5.0)
    a, b, c = rng.uniform(0.05, 0.5, 3)
    moments = m / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return ('<inertial><origin xyz="%s" rpy="%s"/><mass value="%r"/>'
            '<inertia ixx="%r" ixy="0" ixz="0" iyy="%r" iyz="0" izz="%r"/></inertial>'
            % (_v(rng.uniform(-0.3, 0.3, 3)), _v(rng.uniform(-np.pi, np.pi, 3)), float(m), *map(float, moments)))


def _v(x):
    return " ".join(repr(float(t)) for t in x)


def example_robot_data_dir():
    """Folder of the ``example-robot-data`` robots (``panda_description``,
    ``ur_description``, ...) if that package is installed, else None.

    Looks at ``$EXAMPLE_ROBOT_DATA_DIR``, then the cmeel wheel layout
    (``site-packages/cmeel.prefix/share/example-robot-data/robots``) and a
    ``share/example-robot-data/robots`` prefix on ``sys.path`` or
    ``sys.prefix`` (robotpkg, conda).
    """
    candidates = [Path(os.environ["EXAMPLE_ROBOT_DATA_DIR"])] if os.environ.get("EXAMPLE_ROBOT_DATA_DIR") else []
    for p in sys.path + [sys.prefix]:
        candidates.append(Path(p) / "cmeel.prefix" / "share" / "example-robot-data" / "robots")
        candidates.append(Path(p) / "share" / "example-robot-data" / "robots")
    candidates.append(Path("/opt/openrobots/share/example-robot-data/robots"))
    for c in candidates:
        if (c / "panda_description" / "urdf" / "panda.urdf").is_file():
            return c
    return None


# example-robot-data's Panda at its ready pose, the finger 2 cm open [rad, m]
PANDA_READY = np.array([0.0, -0.785398, 0.0, -2.35619, 0.0, 1.5707, 0.785398, 0.02])


def panda_table_scene(robot="example-robot-data", world=None):
    """``(model, world, detector)`` of issue 35's scene: a Panda, the ground, the table and the three free boxes
    of the shipped ``config/worlds/panda_table.yaml`` (or ``world``, a world file's path or text).

    ``robot``: ``"example-robot-data"`` (its URDF, collision meshes as convex hulls, the finger boxes and its
    SRDF; a LookupError when that package is not installed) or ``"bundled"`` (urdf/panda_arm.urdf's display
    primitives as the collision shapes, with urdf/panda_arm.srdf's pairs).
    """
    import warnings

    import robot_dynamics as rd
    from robot_dynamics.contact import CollisionModel, Detector, load_world, shapes_from_urdf
    world = load_world(str(rd.bundled_path("config/worlds/panda_table.yaml")) if world is None else world)
    if robot == "bundled":
        urdf = rd.bundled_path("panda_arm.urdf")
        model = rd.load_urdf(urdf)
        shapes, srdf = shapes_from_urdf(str(urdf), element="visual"), rd.bundled_path("urdf/panda_arm.srdf")
    elif robot == "example-robot-data":
        erd = example_robot_data_dir()
        if erd is None:
            raise LookupError("example-robot-data is not installed (pip install -r requirements-dev.txt)")
        urdf = str(erd / "panda_description/urdf/panda.urdf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rd.errors.URDFWarning)
            model = rd.load_urdf(urdf)
        shapes, srdf = shapes_from_urdf(urdf, package_dirs=[erd.parent.parent]), erd / "panda_description/srdf/panda.srdf"
    else:
        raise ValueError("robot: expected 'example-robot-data' or 'bundled', got %r" % (robot,))
    return model, world, Detector(CollisionModel(model, shapes, world, srdf=str(srdf)))
