"""Contact geometry (issue 35, point 1): shapes, the world file, pair filtering, detection.

- Shapes: the example-robot-data Panda and UR5 (collision meshes through
  package://, read by coal) against the URDF and the STL files read here
  independently; the bundled Panda's primitive visuals against the URDF
  read with ElementTree; an MJCF arm's geoms against the XML.
- Pairs: adjacent and fixed-merged links never; every <disable_collisions>
  of example-robot-data's panda.srdf (the MoveIt Panda's list) honoured.
- Detection: closed forms (sphere, box, capsule on a plane, sphere-sphere,
  capsule-capsule, a box on a table) and MuJoCo's mj_collision on the same
  scenes written in MJCF (depth, normal and point within 1e-9, a mesh hull's deepest depth too); the Panda
  folded into itself touches itself, at home it does not.
- Hostile world files: clear errors naming the entry, the key, what was
  expected and what came.
"""
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.contact.collision import CollisionModel, disabled_pairs
from robot_dynamics.contact.detect import Detector, body_poses
from robot_dynamics.contact.geometry import Shape, coal_geometry, local_aabb, shapes_from_mjcf, shapes_from_urdf
from robot_dynamics.contact.world import FreeBody, World, load_world, solid_inertia
from robot_dynamics.errors import URDFError, URDFWarning, WorldError
from robot_dynamics.model.spatial import homogeneous, rpy_to_matrix
from robot_dynamics.tools.sample import example_robot_data_dir

mujoco = pytest.importorskip("mujoco")
ERD = example_robot_data_dir()
needs_erd = pytest.mark.skipif(ERD is None, reason="example-robot-data not installed")
BUNDLED_PANDA = rd.bundled_path("urdf/panda_arm.urdf")
HOME = np.array([0.0, -0.785398, 0.0, -2.35619, 0.0, 1.5707, 0.785398, 0.02, 0.02])


def erd(path):
    return str(ERD / path)


def load(urdf):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)         # the Panda's extra <dynamics> attributes
        return rd.load_urdf(urdf)


@pytest.fixture(scope="module")
def panda():
    urdf = erd("panda_description/urdf/panda.urdf")
    return load(urdf), shapes_from_urdf(urdf, package_dirs=[ERD.parent.parent])


def read_stl_vertices(path):
    """(V, 3) vertices of a binary STL, read here with numpy (80-byte header, count, 50 bytes a triangle)."""
    data = open(path, "rb").read()
    n = int(np.frombuffer(data[80:84], dtype="<u4")[0])
    rec = np.frombuffer(data[84:84 + 50 * n], dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]))
    return rec["v"].reshape(-1, 3).astype(float)


# --- shapes ------------------------------------------------------------------------------------

@needs_erd
def test_panda_collision_meshes_match_their_stl_files(panda):
    model, shapes = panda
    meshes = [s for s in shapes if s.kind == "mesh"]
    assert [s.link for s in meshes] == ["panda_link%d" % i for i in range(8)] + ["panda_hand"]
    assert sum(s.kind == "box" for s in shapes) == 8                  # the fingers' boxes
    assert all(s.link in model.link_names for s in shapes)
    for s in meshes:
        v = read_stl_vertices(s.mesh)
        centre, half = local_aabb(s, coal_geometry(s))                # the hull's box = the vertices' box
        np.testing.assert_allclose(centre - half, v.min(axis=0), atol=1e-6)
        np.testing.assert_allclose(centre + half, v.max(axis=0), atol=1e-6)


@needs_erd
def test_ur5_and_dae_obj_meshes_load():
    shapes = shapes_from_urdf(erd("ur_description/urdf/ur5_robot.urdf"), package_dirs=[ERD.parent.parent])
    links = [s.link for s in shapes if s.kind == "mesh"]
    assert links[:7] == ["base_link", "shoulder_link", "upper_arm_link", "forearm_link", "wrist_1_link",
                         "wrist_2_link", "wrist_3_link"]
    for path in ("panda_description/meshes/visual/link4.dae", "laikago_description/meshes/calf.obj"):
        _, half = local_aabb(Shape("mesh", (1.0, 1.0, 1.0), mesh=erd(path)),
                             coal_geometry(Shape("mesh", (1.0, 1.0, 1.0), mesh=erd(path))))
        assert np.all(half > 0.005) and np.all(half < 0.5), (path, half)
    # the visual DAE of link4 lies inside its collision STL's box (the collision mesh envelops it)
    dae = Shape("mesh", (1.0, 1.0, 1.0), mesh=erd("panda_description/meshes/visual/link4.dae"))
    c, h = local_aabb(dae, coal_geometry(dae))
    v = read_stl_vertices(erd("panda_description/meshes/collision/link4.stl"))
    assert np.all(c - h >= v.min(axis=0) - 0.005) and np.all(c + h <= v.max(axis=0) + 0.005)


def test_bundled_panda_has_no_collision_but_its_primitive_visuals_read():
    assert shapes_from_urdf(BUNDLED_PANDA) == []
    shapes = shapes_from_urdf(BUNDLED_PANDA, element="visual")
    expected = []
    for link in ET.parse(BUNDLED_PANDA).getroot().iter("link"):
        for vis in link.iter("visual"):
            g = vis.find("geometry")[0]
            o = vis.find("origin")
            xyz = [float(x) for x in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()]
            rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
            size = ([float(x) for x in g.get("size").split()] if g.tag == "box" else
                    [float(g.get("radius")), float(g.get("length"))])
            expected.append((link.get("name"), g.tag, size, homogeneous(rpy_to_matrix(rpy), xyz)))
    assert len(shapes) == len(expected) == 16
    for s, (link, kind, size, T) in zip(shapes, expected):
        assert (s.link, s.kind) == (link, kind)
        np.testing.assert_allclose(s.size, size)
        np.testing.assert_allclose(s.placement, T, atol=1e-15)


def test_urdf_primitives_capsule_and_errors():
    urdf = """<robot name="r"><link name="a">
      <collision name="c"><origin xyz="0 0 0.1" rpy="0 1.5707963267948966 0"/>
        <geometry><capsule radius="0.05" length="0.3"/></geometry></collision>
      <collision><geometry><sphere radius="0.02"/></geometry></collision></link></robot>"""
    capsule, sphere = shapes_from_urdf(urdf)
    assert (capsule.kind, capsule.size, capsule.name) == ("capsule", (0.05, 0.3), "c")
    np.testing.assert_allclose(capsule.placement[:3, 2], [1, 0, 0], atol=1e-12)   # axis z turned onto x
    assert (sphere.kind, sphere.size, sphere.name) == ("sphere", (0.02,), "a/1")
    bad = {'<box size="1 2"/>': "box size must be 3", '<sphere radius="-1"/>': "must be positive",
           '<cylinder radius="nan" length="1"/>': "finite", '<cone radius="1"/>': "unknown geometry <cone>",
           '<mesh filename="package://nowhere/x.stl"/>': "mesh 'package://nowhere/x.stl' not found"}
    for geometry, message in bad.items():
        text = '<robot name="r"><link name="a"><collision><geometry>%s</geometry></collision></link></robot>'
        with pytest.raises(URDFError, match="link 'a'.*" + message):
            shapes_from_urdf(text % geometry)
    with pytest.raises(URDFError, match="DTD"):
        shapes_from_urdf('<!DOCTYPE r [<!ENTITY e "x">]><robot name="r"/>')


def test_mjcf_arm_geoms():
    shapes = shapes_from_mjcf(str(rd.bundled_path("urdf/examples/two_link.xml")))
    assert [(s.link, s.kind) for s in shapes] == [("upper", "capsule"), ("fore", "capsule")]
    # fromto="0 0 0 0.4 0 0" size 0.04: a capsule of radius 0.04, cylinder length 0.4, centred at x 0.2, axis x
    np.testing.assert_allclose(shapes[0].size, (0.04, 0.4))
    np.testing.assert_allclose(shapes[0].placement[:3, 3], [0.2, 0, 0], atol=1e-12)
    np.testing.assert_allclose(np.abs(shapes[0].placement[:3, 2]), [1, 0, 0], atol=1e-12)
    model = rd.load_mjcf(str(rd.bundled_path("urdf/examples/two_link.xml")))
    assert all(s.link in model.link_names for s in shapes)
    # an unnamed body is the link rd.load_mjcf names; a world geom is static; a visual-only geom is left out
    xml = """<mujoco><worldbody><geom type="plane" size="1 1 1"/><body pos="0 0 1"><joint axis="0 1 0"/>
      <geom type="box" size="0.1 0.2 0.3" mass="1"/><geom type="sphere" size="0.1" contype="0" conaffinity="0"/>
      </body></worldbody></mujoco>"""
    plane, box = shapes_from_mjcf(xml)
    assert (plane.kind, plane.link, box.kind, box.size) == ("plane", None, "box", (0.2, 0.4, 0.6))
    assert box.link in rd.load_mjcf(xml).link_names


# --- pairs -------------------------------------------------------------------------------------

def link_pairs(collision, model):
    names = model.link_names
    return {frozenset((names[collision.shape_link[a]], names[collision.shape_link[b]]))
            for a, b in zip(collision.pair_a, collision.pair_b)
            if collision.shape_link[a] >= 0 and collision.shape_link[b] >= 0}


@needs_erd
def test_adjacent_and_fixed_merged_links_never_pair(panda):
    model, shapes = panda
    pairs = link_pairs(CollisionModel(model, shapes), model)
    for l in range(1, 8):                                         # each joint's parent and child
        assert frozenset(("panda_link%d" % (l - 1), "panda_link%d" % l)) not in pairs
    assert frozenset(("panda_link7", "panda_hand")) not in pairs  # fixed joints: one body
    assert frozenset(("panda_hand", "panda_leftfinger")) not in pairs
    assert frozenset(("panda_link1", "panda_link3")) in pairs     # not adjacent, no SRDF
    assert frozenset(("panda_link0", "panda_link1")) not in pairs  # the base is the parent of link1
    assert all(len(p) == 2 for p in pairs)


@needs_erd
def test_srdf_disable_collisions_honoured(panda):
    model, shapes = panda
    srdf = erd("panda_description/srdf/panda.srdf")
    listed = {frozenset((e.get("link1"), e.get("link2"))) for e in ET.parse(srdf).getroot().iter("disable_collisions")}
    assert len(listed) > 30
    before = link_pairs(CollisionModel(model, shapes), model)
    after = link_pairs(CollisionModel(model, shapes, srdf=srdf), model)
    assert not after & listed
    assert after == before - listed and before & listed
    assert frozenset(("panda_link1", "panda_link5")) in after     # not listed: still tested


def test_srdf_rules_and_errors():
    links = ("a", "b", "c")
    text = """<robot name="r"><disable_collisions link1="a" link2="b" reason="Never"/>
      <disable_default_collisions link="c"/><enable_collisions link1="c" link2="a"/>
      <disable_collisions link1="a" link2="hand"/></robot>"""
    with pytest.warns(URDFWarning, match="hand"):
        assert disabled_pairs(text, links) == {frozenset("ab"), frozenset("bc")}
    with pytest.raises(URDFError, match="expected the attribute.*link2"):
        disabled_pairs('<robot name="r"><disable_collisions link1="a"/></robot>', links)
    with pytest.raises(URDFError, match="not well-formed"):
        disabled_pairs('<robot name="r"><disable_collisions', links)
    with pytest.raises(URDFError, match="DTD"):
        disabled_pairs('<!DOCTYPE r [<!ENTITY e "x">]><robot/>', links)


# --- detection: closed forms ---------------------------------------------------------------------

WORLD_ONLY = '<robot name="world"><link name="base"/></robot>'


def world_scene(free=(), static=(), ground=True):
    """(world, detector, contacts) of free bodies and static shapes around no robot."""
    world = load_world({"ground": {"height": 0.0} if ground else False, "static": list(static), "free": list(free)})
    detector = Detector(CollisionModel(rd.load_urdf(WORLD_ONLY), [], world))
    poses = np.array([f.pose for f in world.free_bodies]).reshape(-1, 4, 4)
    return world, detector, detector.detect(np.zeros((0, 4, 4)), poses)


def body(name, shape, size, position, rpy=(0.0, 0.0, 0.0)):
    return {"name": name, "shape": shape, "size": list(size), "mass": 1.0, "position": list(position),
            "rpy": list(rpy)}


def rows(c):
    return [(int(c.body_a[i]), int(c.body_b[i]), c.point[i].copy(), c.normal[i].copy(), float(c.depth[i]),
             int(c.feature[i])) for i in range(c.n)]


def test_sphere_on_plane():
    _, _, c = world_scene([body("s", "sphere", [0.1], [0.3, -0.2, 0.093])])
    [(a, b, point, normal, depth, feature)] = rows(c)
    assert (a, b, feature) == (0, -1, 0)                       # free body 0 (no robot body), the static world
    assert depth == pytest.approx(0.007, abs=1e-12)
    np.testing.assert_allclose(normal, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(point, [0.3, -0.2, -0.0035], atol=1e-12)   # midway: sphere bottom -0.007, plane 0


def test_flat_box_on_plane_gives_its_four_bottom_corners():
    world, _, c = world_scene([body("b", "box", [0.2, 0.3, 0.1], [0.1, 0.2, 0.049], [0, 0, 0.3])])
    T = world.free_bodies[0].pose
    corners = [T[:3, :3] @ [sx * 0.1, sy * 0.15, -0.05] + T[:3, 3] for sy in (-1, 1) for sx in (-1, 1)]
    found = rows(c)
    assert len(found) == 4 and sorted(f[5] for f in found) == [0, 1, 2, 3]     # corners with z bit 0
    for (_, _, point, normal, depth, k), corner in zip(sorted(found, key=lambda r: r[5]), corners):
        assert depth == pytest.approx(0.001, abs=1e-12)
        np.testing.assert_allclose(normal, [0, 0, 1], atol=1e-12)
        np.testing.assert_allclose(point, corner + [0, 0, 0.0005], atol=1e-12)


def test_tilted_box_touches_by_its_lowest_corner():
    R = rpy_to_matrix([0.3, 0.2, 0.1])
    corners = np.array([R @ ([sx, sy, sz] * np.array([0.05, 0.1, 0.15])) for sx in (-1, 1) for sy in (-1, 1)
                        for sz in (-1, 1)])
    z = -corners[:, 2].min() - 0.002                           # the lowest corner 2 mm deep
    _, _, c = world_scene([body("b", "box", [0.1, 0.2, 0.3], [0, 0, z], [0.3, 0.2, 0.1])])
    [(_, _, point, normal, depth, _)] = rows(c)
    low = corners[corners[:, 2].argmin()] + [0, 0, z]
    assert depth == pytest.approx(0.002, abs=1e-12)
    np.testing.assert_allclose(point, low + [0, 0, 0.001], atol=1e-12)


def test_capsule_lying_on_plane_touches_at_both_ends():
    _, _, c = world_scene([body("c", "capsule", [0.04, 0.3], [0, 0, 0.037], [0, np.pi / 2, 0])])
    found = sorted(rows(c), key=lambda r: r[2][0])
    assert len(found) == 2 and {f[5] for f in found} == {0, 1}
    for (_, _, point, normal, depth, _), x in zip(found, (-0.15, 0.15)):
        assert depth == pytest.approx(0.003, abs=1e-12)
        np.testing.assert_allclose(point, [x, 0, -0.0015], atol=1e-12)


def test_sphere_sphere():
    c1, c2, r1, r2 = np.array([0.0, 0.0, 1.0]), np.array([0.1, 0.08, 1.05]), 0.1, 0.05
    _, _, c = world_scene([body("s1", "sphere", [r1], c1), body("s2", "sphere", [r2], c2)], ground=False)
    [(a, b, point, normal, depth, _)] = rows(c)
    d = np.linalg.norm(c2 - c1)
    u = (c2 - c1) / d
    assert (a, b) == (0, 1)
    assert depth == pytest.approx(r1 + r2 - d, abs=1e-12)
    np.testing.assert_allclose(normal, -u, atol=1e-12)                  # from b (s2) towards a (s1)
    np.testing.assert_allclose(point, 0.5 * ((c1 + r1 * u) + (c2 - r2 * u)), atol=1e-12)


def test_capsule_capsule_crossing():
    _, _, c = world_scene([body("c1", "capsule", [0.05, 0.4], [0, 0, 1], [0, np.pi / 2, 0]),        # axis x
                           body("c2", "capsule", [0.05, 0.4], [0.05, 0.02, 1.09], [np.pi / 2, 0, 0])],  # axis y
                          ground=False)
    [(a, b, point, normal, depth, _)] = rows(c)
    assert depth == pytest.approx(0.01, abs=1e-9)                     # axes 0.09 apart, radii 0.05 + 0.05
    np.testing.assert_allclose(normal, [0, 0, -1], atol=1e-9)          # from c2 (above) towards c1
    np.testing.assert_allclose(point, [0.05, 0, 1.045], atol=1e-9)


def test_box_flat_on_a_table_gives_four_contacts():
    table = {"name": "table", "shape": "box", "size": [1.0, 1.0, 0.04], "position": [0.0, 0.0, 0.4]}
    _, _, c = world_scene([body("b", "box", [0.1, 0.1, 0.1], [0.1, 0.0, 0.42 + 0.05 - 0.001])], [table],
                          ground=True)
    found = rows(c)
    assert len(found) == 4
    for _, b, point, normal, depth, _ in found:
        assert b == -1 and depth == pytest.approx(0.001, abs=1e-9)
        np.testing.assert_allclose(normal, [0, 0, 1], atol=1e-9)
        assert point[2] == pytest.approx(0.4195, abs=1e-9)
    np.testing.assert_allclose(sorted(p[2][0] for p in found), [0.05, 0.05, 0.15, 0.15], atol=1e-9)


# --- detection: against MuJoCo's mj_collision ----------------------------------------------------

def quat_wxyz(R):
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return w, x, y, z


def mjcf_geom(name, shape, size, position, rpy):
    half = ([s / 2 for s in size] if shape == "box" else list(size) if shape == "sphere" else
            [size[0], size[1] / 2])                                   # MuJoCo's half sizes
    return '<geom name="%s" type="%s" size="%s" pos="%s" quat="%s"/>' % (
        name, shape, " ".join("%.17g" % x for x in half), " ".join("%.17g" % x for x in position),
        " ".join("%.17g" % x for x in quat_wxyz(rpy_to_matrix(rpy))))


def mujoco_contacts(free, static, ground):
    """MuJoCo's contacts of the same scene: {(geom1, geom2): [(dist, pos, normal geom1 -> geom2)]}."""
    bodies = "".join('<body name="%s"><freejoint/>%s</body>' % (
        f["name"], mjcf_geom(f["name"], f["shape"], f["size"], f["position"], f.get("rpy", (0, 0, 0))))
        for f in free)
    statics = "".join(mjcf_geom(s["name"], s["shape"], s["size"], s["position"], s.get("rpy", (0, 0, 0)))
                      for s in static)
    floor = '<geom name="ground" type="plane" size="0 0 1"/>' if ground else ""
    m = mujoco.MjModel.from_xml_string("<mujoco><worldbody>%s%s%s</worldbody></mujoco>" % (floor, statics, bodies))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    name = lambda g: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)
    out = {}
    for con in d.contact[:d.ncon]:
        out.setdefault((name(con.geom1), name(con.geom2)), []).append((con.dist, con.pos.copy(), con.frame[:3].copy()))
    return out


SCENES = {
    "primitives on the ground": dict(free=[
        body("sphere", "sphere", [0.1], [0.0, 0.0, 0.093]),
        body("box", "box", [0.1, 0.2, 0.3], [1.0, 0.0, 0.16], [0.3, 0.2, 0.1]),
        body("capsule", "capsule", [0.04, 0.3], [0.0, 1.0, 0.1], [0.2, 1.1, 0.0]),
        body("flat", "capsule", [0.04, 0.3], [1.0, 1.0, 0.036], [0.0, np.pi / 2, 0.4])], static=[], ground=True),
    "pairs in the air": dict(free=[
        body("s1", "sphere", [0.1], [0.0, 0.0, 1.0]), body("s2", "sphere", [0.05], [0.1, 0.08, 1.05]),
        body("c1", "capsule", [0.05, 0.4], [2.0, 0.0, 1.0], [0.1, 1.4, 0.2]),
        body("c2", "capsule", [0.03, 0.3], [2.05, 0.02, 1.07], [1.3, 0.2, 0.0]),
        body("s3", "sphere", [0.05], [-1.0, 0.02, 0.5 + 0.02 + 0.05 - 0.004])],
        static=[{"name": "table", "shape": "box", "size": [0.6, 0.6, 0.04], "position": [-1.0, 0.0, 0.5]}],
        ground=False),
    "boxes on a table, a stack": dict(free=[
        body("tilted", "box", [0.1, 0.12, 0.08], [0.0, 0.0, 0.42 + 0.04 - 0.002 + 0.0], [0.02, 0.01, 0.3]),
        body("flat", "box", [0.1, 0.1, 0.1], [0.3, 0.2, 0.42 + 0.05 - 0.001], [0.0, 0.0, 1.0]),
        body("top", "box", [0.06, 0.06, 0.06], [0.31, 0.21, 0.42 + 0.1 - 0.002 + 0.03 - 0.0005], [0.0, 0.0, 0.2])],
        static=[{"name": "table", "shape": "box", "size": [1.0, 1.0, 0.04], "position": [0.0, 0.0, 0.4]}],
        ground=False),
}


@pytest.mark.parametrize("scene", SCENES)
def test_contacts_agree_with_mujoco(scene):
    spec = SCENES[scene]
    _, detector, c = world_scene(**spec)
    names = detector.collision.names
    ours = {}
    for i in range(c.n):
        ours.setdefault((names[c.geom_a[i]], names[c.geom_b[i]]), []).append(i)
    theirs = mujoco_contacts(**spec)
    assert len(theirs) == len(ours) >= 3
    for (g1, g2), contacts in theirs.items():
        key, sign = ((g2, g1), 1.0) if (g2, g1) in ours else ((g1, g2), -1.0)   # ours: normal from b to a
        mine = ours[key]
        assert len(mine) == len(contacts), (g1, g2)
        for dist, pos, normal in contacts:
            i = min(mine, key=lambda i: np.linalg.norm(c.point[i] - pos))
            assert c.depth[i] == pytest.approx(-dist, abs=1e-9), (g1, g2)      # measured: 3e-17
            np.testing.assert_allclose(c.normal[i], sign * normal, atol=1e-9, err_msg=str((g1, g2)))
            np.testing.assert_allclose(c.point[i], pos, atol=1e-9, err_msg=str((g1, g2)))


def test_random_face_on_stacks_agree_with_mujoco():
    """Two boxes face on (tilts of a few mrad, any yaw, partial overlaps): the contact polygon's
    vertices and depths as MuJoCo's box-box gives them. MuJoCo takes the normal of either box's
    face (they differ by the tilt), so depths and points agree to the tilt's order, 1e-4 m; MuJoCo
    drops to fewer contacts in a few edge cases of its own, so 90 % must match in count."""
    rng = np.random.default_rng(4)
    same = 0
    for _ in range(30):
        size_b, size_a = rng.uniform(0.05, 0.3, 3), rng.uniform(0.03, 0.2, 3)
        rpy_a = [rng.normal(0, 0.002), rng.normal(0, 0.002), rng.uniform(-3, 3)]
        pa = [rng.uniform(-0.15, 0.15), rng.uniform(-0.15, 0.15), 0.5 + size_b[2] / 2 + size_a[2] / 2 - 0.003]
        spec = dict(free=[body("a", "box", size_a, pa, rpy_a), body("b", "box", size_b, [0, 0, 0.5],
                                                                    [0, 0, rng.uniform(-3, 3)])],
                    static=[], ground=False)
        _, _, c = world_scene(**spec)
        theirs = [x for v in mujoco_contacts(**spec).values() for x in v]
        if len(theirs) != c.n:
            continue
        same += 1
        for dist, pos, _ in theirs:
            i = np.argmin(np.linalg.norm(c.point[:c.n] - pos, axis=1))
            assert c.depth[i] == pytest.approx(-dist, abs=1e-4)
            np.testing.assert_allclose(c.point[i], pos, atol=1e-4)
    assert same >= 27


@needs_erd
def test_mesh_on_plane_agrees_with_mujoco():
    """A Panda link's collision mesh in MJCF, sunk into a plane: our hull (from the geom's compiled
    vertices, through shapes_from_mjcf) and MuJoCo's give the same deepest contact."""
    stl = erd("panda_description/meshes/collision/link4.stl")
    R = rpy_to_matrix([0.4, -0.3, 0.2])
    xml = """<mujoco><asset><mesh name="m" file="%s"/></asset><worldbody>
      <geom name="ground" type="plane" size="0 0 1"/>
      <body name="link" pos="0 0 0.05" quat="%s"><freejoint/><geom name="hull" type="mesh" mesh="m"/></body>
      </worldbody></mujoco>""" % (stl, " ".join("%.17g" % x for x in quat_wxyz(R)))
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    deepest = min(con.dist for con in d.contact[:d.ncon])
    shapes = shapes_from_mjcf(m)
    hull = [s for s in shapes if s.kind == "mesh"][0]
    assert hull.link == "link" and shapes[0].kind == "plane" and shapes[0].link is None
    world = World((), (FreeBody("link", hull, 1.0, np.eye(3), np.eye(4), np.zeros(6)),))
    detector = Detector(CollisionModel(rd.load_urdf(WORLD_ONLY), [shapes[0]], world))
    pose = homogeneous(d.xmat[1].reshape(3, 3), d.xpos[1])           # world <- body; the hull sits in the body
    c = detector.detect(np.zeros((0, 4, 4)), pose[None])
    assert c.n >= 1
    assert c.depth[:c.n].max() == pytest.approx(-deepest, abs=1e-9)          # measured: 2e-16
    np.testing.assert_allclose(c.normal[:c.n], np.tile([0, 0, 1.0], (c.n, 1)), atol=1e-9)


# --- the Panda touching itself ---------------------------------------------------------------------

@needs_erd
def test_panda_folded_into_itself_touches_itself_and_not_at_home(panda):
    model, shapes = panda
    collision = CollisionModel(model, shapes, srdf=erd("panda_description/srdf/panda.srdf"))
    detector = Detector(collision)
    assert detector.detect(body_poses(model, HOME[:model.nq])).n == 0
    folded = np.array([0.0, 0.0, 0.0, -3.0, 0.0, 0.5, 0.0, 0.02, 0.02])[:model.nq]   # elbow shut, hand on the shoulder
    c = detector.detect(body_poses(model, folded))
    assert c.n > 0
    hand = {"panda_hand", "panda_link7", "panda_leftfinger", "panda_rightfinger"}
    names = model.link_names
    for i in range(c.n):
        a, b = collision.shapes[c.geom_a[i]], collision.shapes[c.geom_b[i]]
        assert {a.link, b.link} & hand and {a.link, b.link} & {"panda_link1", "panda_link2"}
        assert c.body_a[i] == model.link_body[names.index(a.link)]
        assert c.body_b[i] == model.link_body[names.index(b.link)]
        assert c.depth[i] > 0 and np.linalg.norm(c.normal[i]) == pytest.approx(1.0)
    opened = folded.copy()
    opened[3] = -2.0
    assert detector.detect(body_poses(model, opened)).n == 0


# --- the world file --------------------------------------------------------------------------------

WORLD = """
ground: {height: 0.0}
static:
  - {name: table, shape: box, size: [0.8, 1.2, 0.04], position: [0.5, 0.0, 0.38]}
free:
  - {name: cube, shape: box, size: [0.05, 0.06, 0.07], mass: 0.2, position: [0.5, 0.0, 0.435], rpy: [0, 0, 0.5]}
  - {name: ball, shape: sphere, size: [0.03], mass: 0.1, position: [0.4, 0.1, 0.43]}
  - {name: can, shape: cylinder, size: [0.03, 0.1], mass: 0.3, position: [0.6, -0.1, 0.45],
     inertia: [0.001, 0.001, 0.0002, 0, 0, 0], linear_velocity: [0.1, 0, 0]}
  - {name: pill, shape: capsule, size: [0.02, 0.08], mass: 0.05, position: [0.6, 0.2, 0.42]}
"""


def test_world_file_reads_and_inertias_match_mujoco():
    world = load_world(WORLD)
    assert [s.name for s in world.static_shapes] == ["ground", "table"]
    assert [f.name for f in world.free_bodies] == ["cube", "ball", "can", "pill"]
    cube = world.free_bodies[0]
    np.testing.assert_allclose(cube.pose[:3, :3], rpy_to_matrix([0, 0, 0.5]))
    np.testing.assert_allclose(world.free_bodies[2].inertia, np.diag([0.001, 0.001, 0.0002]))   # as given
    np.testing.assert_allclose(world.free_bodies[2].velocity, [0.1, 0, 0, 0, 0, 0])
    for f in world.free_bodies:          # the homogeneous solid's inertia, as MuJoCo computes it from the geom
        if f.name == "can":
            continue
        xml = '<mujoco><worldbody><body><freejoint/>%s</body></worldbody></mujoco>' % mjcf_geom(
            f.name, f.shape.kind, f.shape.size, [0, 0, 0], [0, 0, 0]).replace("/>", ' mass="%r"/>' % f.mass)
        m = mujoco.MjModel.from_xml_string(xml)
        np.testing.assert_allclose(np.diag(f.inertia), m.body_inertia[1], rtol=1e-9, err_msg=f.name)
        np.testing.assert_allclose(f.inertia, np.diag(np.diag(f.inertia)), atol=0)
    assert solid_inertia("sphere", (0.1,), 2.0)[0, 0] == pytest.approx(0.4 * 2.0 * 0.01)


HOSTILE = {
    "free:\n  - {name: a, shape: box, size: [1, 1, 1], position: [0, 0, 0]}": "missing key 'mass'",
    "free:\n  - {name: a, shape: box, size: [1, 1, 1], mass: -1, position: [0, 0, 0]}":
        r"free\[0\] \(a\): mass must be positive \[kg\], got -1",
    "free:\n  - {name: a, shape: sphere, size: [.nan], mass: 1, position: [0, 0, 0]}": "expected finite numbers",
    "free:\n  - {name: a, shape: sphere, size: [0.1], mass: 1, position: [0, .inf, 0]}":
        "position: expected finite numbers",
    "static:\n  - {name: t, shape: box, size: [1, 1], position: [0, 0, 0]}": "size of a box: expected 3 numbers",
    "static:\n  - {name: t, shape: cone, size: [1], position: [0, 0, 0]}": "shape must be one of box, sphere",
    "static:\n  - {name: t, shape: box, size: [1, 1, 0], position: [0, 0, 0]}": "size must be positive",
    "static:\n  - {name: t, shape: box, size: [1, 1, 1], position: [0, 0, 0], mass: 3}": "unknown key",
    "static:\n  - {shape: box, size: [1, 1, 1], position: [0, 0, 0]}": "missing key 'name'",
    "static:\n  - {name: t, shape: box, size: [1, 1, 1]}": "missing key 'position'",
    "static:\n  - {name: t, shape: box, size: [1, 1, 1], position: [a, 0, 0]}": "expected numbers",
    "free:\n  - {name: a, shape: box, size: [1, 1, 1], mass: 1, position: [0, 0, 0], inertia: [1, 1, 5, 0, 0, 0]}":
        "triangle inequality",
    "grund: {height: 0}\n": "unknown key.*grund.*expected keys: ground, static, free",
    "static: {name: t}\n": "static must be a list",
    "ground: {height: 0}\nstatic:\n  - {name: ground, shape: box, size: [1, 1, 1], position: [0, 0, 0]}":
        "names must be unique.*ground",
    "ground: [0, 0\n": "malformed YAML",
    "- 1\n- 2\n": "expected a mapping",
}


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_world_files_give_clear_errors(text):
    with pytest.raises(WorldError, match=HOSTILE[text]):
        load_world(text)


def test_world_file_from_a_path(tmp_path):
    path = tmp_path / "world.yaml"
    path.write_text(WORLD)
    assert len(load_world(str(path)).free_bodies) == 4
    with pytest.raises(WorldError, match="cannot read world file"):
        load_world(str(tmp_path / "missing.yaml"))


# --- the record and the library -------------------------------------------------------------------

def test_coal_loads_without_pinocchio():
    import subprocess
    import sys
    code = "import sys, coal; print(sorted(m for m in sys.modules if 'pinocchio' in m))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_a_full_record_drops_and_counts():
    _, detector, c = world_scene([body("b%d" % k, "box", [0.1, 0.1, 0.1], [k, 0, 0.049]) for k in range(3)])
    assert c.n == 12 and c.dropped == 0
    small = Detector(detector.collision, capacity=10)
    c = small.detect(np.zeros((0, 4, 4)), np.array([f.pose for f in load_world(
        {"free": [body("b%d" % k, "box", [0.1, 0.1, 0.1], [k, 0, 0.049]) for k in range(3)]}).free_bodies]))
    assert (c.n, c.dropped) == (10, 2)
    with pytest.raises(rd.errors.InputError, match=r"free_poses must be \(3, 4, 4\)"):
        small.detect(np.zeros((0, 4, 4)), np.zeros((2, 4, 4)))
    with pytest.raises(rd.errors.InputError, match="non-finite free-body pose"):
        small.detect(np.zeros((0, 4, 4)), np.full((3, 4, 4), np.nan))
    with pytest.raises(rd.errors.InputError, match=r"body_poses must be \(0, 4, 4\)"):
        small.detect(np.zeros((1, 4, 4)), np.zeros((3, 4, 4)))
    with pytest.raises(rd.errors.InputError, match="margin"):
        Detector(detector.collision, margin=-1.0)


@needs_erd
def test_body_poses_are_the_library_link_poses(panda):
    model, _ = panda
    q = HOME[:model.nq]
    poses = body_poses(model, q)
    for i, l in enumerate(model.body_link):
        np.testing.assert_allclose(poses[i], rd.link_pose(model, q, model.link_names[l]), atol=1e-14)


# --- hostile descriptions --------------------------------------------------------------------------

def hostile_texts():
    import pathlib
    from hostile_descriptions import cases
    corpus = pathlib.Path(__file__).parent / "urdf_corpus"
    return [(name, text) for name, text, _ in cases()] + \
        [(p.name, p.read_bytes()) for p in sorted(corpus.glob("*.urdf"))]


def test_hostile_descriptions_are_read_or_refused_quickly():
    """The hostile descriptions (issue 31) and the URDF corpus through the collision reader and the
    SRDF reader (expat): each gives shapes or a URDFError, within a second of CPU, never another error."""
    import time
    for name, text in hostile_texts():
        for read in (lambda t: shapes_from_urdf(t), lambda t: disabled_pairs(t, ("base", "arm"))):
            start = time.thread_time()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", URDFWarning)
                    read(text)
            except URDFError:
                pass
            assert time.thread_time() - start < 1.0, name


def test_bundled_panda_primitives_with_the_bundled_srdf():
    """The bundled Panda's display primitives as collision shapes, with urdf/panda_arm.srdf (MoveIt's
    pairs for its links): no contact at the ready pose, a self-contact folded, the table under the hand."""
    model = rd.load_urdf(BUNDLED_PANDA)
    shapes = shapes_from_urdf(BUNDLED_PANDA, element="visual")
    srdf = rd.bundled_path("urdf/panda_arm.srdf")
    assert disabled_pairs(str(srdf), model.link_names) <= {frozenset((a, b)) for a in model.link_names
                                                          for b in model.link_names if a != b}
    detector = Detector(CollisionModel(model, shapes, srdf=str(srdf)))
    assert detector.detect(body_poses(model, HOME[:7])).n == 0
    assert detector.detect(body_poses(model, np.array([0.0, 0.0, 0.0, -3.0, 0.0, 0.5, 0.0]))).n > 0
    assert Detector(CollisionModel(model, shapes)).detect(body_poses(model, HOME[:7])).n > 0   # without it
