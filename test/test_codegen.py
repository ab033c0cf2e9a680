"""C code generation (robot_dynamics.codegen, docs/CODEGEN.md): the generated
functions equal the library, compile clean, allocate nothing.

- Agreement: rnea, gravity (rnea(q, 0, 0)), coriolis (nonlinear_effects -
  gravity_torques), the mass matrix, aba and the batches of the generated C
  equal robot_dynamics' own functions to 1e-12 relative (max |C - lib| <=
  1e-12 max |lib| per array; coriolis: 1e-12 max |nonlinear_effects|, as
  its reference is the difference h - g; gravity and coriolis at least
  1e-15 of the robot's largest torque, where the geometry makes them
  vanish and the library returns rounding noise) on the bundled robots, every example-robot-data URDF with a
  moving joint (loaded, as everywhere in the library, on a fixed base) and
  random trees with and without mimic joints.
- Every generated file compiles with ``cc -Wall -Wextra -Werror -std=c99
  -pedantic``; ``nm`` of the objects shows no malloc/calloc/realloc/free.
- A hand-derived case: a one-link pendulum's gravity torque and inertia.
- Hostile names: joint names that are not C identifiers become escaped
  string literals (read back through ctypes), a bad prefix is refused.
- rd.compile: shapes, out=, the cache, the errors; the CLI writes the files.

The example-robot-data robots are generated into one folder and built with
one cc run (-O0: the same IEEE arithmetic, a fraction of -O2's compile time
on a 100-joint robot); missing example-robot-data skips, but fails under CI.
"""
import ctypes
import io
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from reporting import require, write_lines
from robot_dynamics.codegen import CompiledModel, binding, generate
from robot_dynamics.codegen.compiled import find_compiler
from robot_dynamics.tools import cli
from robot_dynamics.tools.sample import example_robot_data_dir, random_urdf

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = sorted((ROOT / "urdf").rglob("*.urdf"))
BUNDLED_PATH = {p.stem: p for p in BUNDLED}
ERD = example_robot_data_dir()
ERD_URDFS = sorted(ERD.rglob("*.urdf")) if ERD else []
NOT_A_ROBOT = {"ur_description/urdf/ur3.urdf"}                    # an empty xacro leftover (test_example_robot_data)
NO_MOVING_JOINT = {"hector_description/robots/quadrotor_base.urdf", "iris_description/robots/iris_simple.urdf"}
N_ERD_GENERATED = 66                                               # example-robot-data 6.0.0: 69 files - 3 above
RTOL = 1e-12
MATH = {"sin", "cos", "sqrt", "tanh", "exp"}                       # tanh, exp: the friction laws
WARNINGS = ("-Wall", "-Wextra", "-Werror", "-std=c99", "-pedantic")
ALLOCATION = re.compile(r"\b(malloc|calloc|realloc|free|_Znwm|_Znam|_ZdlPv|_ZdaPv)\b")
MAX_REL = {}                                                       # quantity -> (largest relative error, robot)


def load(source, root_joint=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the files' inertia notices are not the subject here
        return rd.load_urdf(str(source), root_joint=root_joint)


def close(robot, name, actual, desired, rtol=RTOL, scale=None, floor=0.0):
    """max |actual - desired| <= rtol * scale, scale = max |desired| unless given,
    at least ``floor``."""
    actual, desired = np.asarray(actual, dtype=float), np.asarray(desired, dtype=float)
    assert actual.shape == desired.shape, (robot, name, actual.shape, desired.shape)
    scale = max(float(np.max(np.abs(desired))) if scale is None else scale, floor, 1e-300)
    err = float(np.max(np.abs(actual - desired))) / scale
    if err > MAX_REL.get(name, (-1.0, ""))[0]:
        MAX_REL[name] = (err, robot)
    np.testing.assert_allclose(actual, desired, rtol=0, atol=rtol * scale, err_msg="%s: %s" % (robot, name))


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    if MAX_REL:
        lines = ["", "generated C vs the library, max |C - lib| / max |lib| (worst robot):"]
        lines += ["  %-14s %.3e  (%s)" % (k, e, robot) for k, (e, robot) in sorted(MAX_REL.items())]
        write_lines(request, lines)


def build(models, folder, opt="-O0"):
    """Generate every (prefix, model), compile all with the warning flags into
    objects, link them into one shared object. Returns ({prefix: CompiledModel},
    [object paths])."""
    folder.mkdir(parents=True, exist_ok=True)
    for prefix, model in models.items():
        header, source = generate(model, prefix, source="test_codegen")
        (folder / ("%s.h" % prefix)).write_text(header)
        (folder / ("%s.c" % prefix)).write_text(source)
    cc = find_compiler()
    sources = ["%s.c" % p for p in models]
    run = subprocess.run([cc, opt, "-fPIC", *WARNINGS, "-c", *sources], cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[:5000]
    objects = [folder / ("%s.o" % p) for p in models]
    so = folder / "generated.so"
    run = subprocess.run([cc, "-shared", "-o", str(so), *map(str, objects), "-lm"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[:5000]
    return {p: CompiledModel(m, so, prefix=p) for p, m in models.items()}, objects


def states(model, n, seed):
    """n random states: joints within their limits, a floating root's quaternion unit."""
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    joints = rng.uniform(lo, hi, size=(n, len(model.joint_names)))
    q = np.concatenate([rng.uniform(-1, 1, size=(n, model.root_nq)), joints], axis=1)
    if model.root_joint == "floating":
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    qd, qdd, tau = rng.uniform(-2, 2, size=(3, n, model.nv))
    return q, qd, qdd, tau


def agree(robot, model, c, n=3, seed=0):
    """Every generated function against the library on n states, one by one and as a batch."""
    q, qd, qdd, tau = states(model, n, seed)
    # Gravity or Coriolis torques that vanish by the geometry (a planar arm in the
    # horizontal plane) come out of the library as rounding noise (5.6e-16 N m:
    # cos(pi/2) != 0) and of the generated code as exact zeros (placements' 6e-17
    # entries folded, docs/CODEGEN.md): those are compared at 1e-3 of the robot's
    # torques instead.
    floor = 1e-3 * float(np.max(np.abs(rd.rnea(model, q, qd, qdd))))
    for k in range(n):
        close(robot, "rnea", c.rnea(q[k], qd[k], qdd[k]), rd.rnea(model, q[k], qd[k], qdd[k]))
        g = rd.gravity_torques(model, q[k])
        close(robot, "gravity", c.gravity_torques(q[k]), g, floor=floor)
        h = rd.nonlinear_effects(model, q[k], qd[k])       # the reference h - g is exact to eps max|h|
        close(robot, "coriolis", c.coriolis(q[k], qd[k]), h - g, scale=float(np.max(np.abs(h))), floor=floor)
        M = rd.mass_matrix(model, q[k])
        close(robot, "mass_matrix", c.mass_matrix(q[k]), M)
        try:
            qdd_lib = rd.aba(model, q[k], qd[k], tau[k])
        except rd.SingularityError:                       # Romeo's massless hand joints
            with pytest.raises(rd.SingularityError, match="singular"):
                c.aba(q[k], qd[k], tau[k])
            continue
        close(robot, "aba", c.aba(q[k], qd[k], tau[k]), qdd_lib)      # iCub, cond(M) ~ 1e8: 2e-13
    close(robot, "rnea batch", c.rnea(q, qd, qdd), rd.rnea(model, q, qd, qdd))
    close(robot, "gravity batch", c.gravity_torques(q), rd.gravity_torques(model, q), floor=floor)
    close(robot, "mass batch", c.mass_matrix(q), rd.mass_matrix(model, q))
    qd[0, ::2] = 0.0                                      # sign(0) = 0, where Coulomb friction switches
    for smoothing in (0.0, 0.05):
        close(robot, "friction", c.friction_torques(qd[0], smoothing=smoothing),
              rd.friction_torques(model, qd[0], smoothing=smoothing))
        close(robot, "friction batch", c.friction_torques(qd, smoothing=smoothing),
              rd.friction_torques(model, qd, smoothing=smoothing))


# --------------------------------------------------------------------------
# the bundled robots and random trees

LOCAL = {p.stem: p for p in BUNDLED}
LOCAL.update({"tree%d" % s: random_urdf(s, n_links=9, p_massless=0.0) for s in range(4)})
LOCAL.update({"mimic%d" % s: random_urdf(s, n_links=8, mimic=True, p_massless=0.0) for s in (1, 3, 7)})


# Moving roots (as the library has them: q = xyz, quaternion xyzw, joints; planar x, y, theta).
ROOTS = {"floating_panda": (BUNDLED_PATH["panda_arm"], "floating"), "planar_ur5": (BUNDLED_PATH["ur5"], "planar")}
ROOTS.update({"floating%d" % s: (random_urdf(s, n_links=8, p_massless=0.0), "floating") for s in (2, 5)})
ROOTS.update({"planar%d" % s: (random_urdf(s, n_links=6, p_massless=0.0), "planar") for s in (4,)})
ROOTS.update({"floating_mimic%d" % s: (random_urdf(s, n_links=9, mimic=True, p_massless=0.0), "floating")
              for s in (11,)})
ROOTS.update({"planar_mimic%d" % s: (random_urdf(s, n_links=8, mimic=True, p_massless=0.0), "planar")
              for s in (3,)})


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    models = {name: load(src) for name, src in LOCAL.items()}
    models.update({name: load(src, root) for name, (src, root) in ROOTS.items()})
    compiled, objects = build(models, tmp_path_factory.mktemp("local"))
    return models, compiled, objects


@pytest.mark.parametrize("name", list(LOCAL) + list(ROOTS))
def test_generated_functions_equal_the_library(local, name):
    models, compiled, _ = local
    agree(name, models[name], compiled[name])
    if "mimic" in name:
        assert models[name].has_mimic and models[name].nb > models[name].nv
    if name in ROOTS:
        assert models[name].root_joint == ROOTS[name][1]


def test_objects_allocate_nothing_and_call_only_math(local):
    _, _, objects = local
    for o in objects:
        undefined = set(subprocess.run(["nm", "-u", str(o)], capture_output=True, text=True, check=True)
                        .stdout.split()) - {"U"}
        assert not {u for u in undefined if ALLOCATION.search(u)}, (o.name, undefined)
        assert undefined <= MATH, (o.name, undefined)


# --------------------------------------------------------------------------
# the friction laws (docs/ACTUATORS.md) in NAME_friction_torques

LAWS = ({"law": "viscous", "viscous": 0.4},
        {"law": "coulomb", "coulomb": 0.3, "viscous": 0.1},
        {"law": "coulomb", "coulomb": 0.5, "viscous": 0.0, "smoothing": 0.02},
        {"law": "stribeck", "static": 1.0, "coulomb": 0.6, "stribeck_velocity": 0.1, "viscous": 0.2},
        {"law": "stribeck", "static": 0.8, "coulomb": 0.8, "stribeck_velocity": 0.3, "viscous": 0.0},
        {"law": "sigmoid", "phi1": 0.5, "phi2": 4.0, "phi3": 0.25},
        {"law": "viscous", "viscous": 0.0})


def with_laws(model, seed):
    """``model`` with each joint's law drawn from LAWS (every law at least once on 7+ joints)."""
    rng = np.random.default_rng(seed)
    names = model.body_joint[model.root_nv:]
    picks = [LAWS[k % len(LAWS)] for k in rng.permutation(len(names))]
    return model.with_actuators({name: {"friction": law} for name, law in zip(names, picks)})


def test_every_friction_law_equals_the_library_and_a_hand_value(tmp_path):
    models = {"laws_panda": with_laws(load(BUNDLED_PATH["panda_arm"]), 0),
              "laws_mimic": with_laws(load(random_urdf(3, n_links=9, mimic=True, p_massless=0.0)), 1),
              "laws_floating": with_laws(load(BUNDLED_PATH["panda_arm"], "floating"), 2),
              "laws_planar_mimic": with_laws(load(random_urdf(3, n_links=12, mimic=True, p_massless=0.0), "planar"), 3)}
    assert models["laws_mimic"].has_mimic
    compiled, objects = build(models, tmp_path)                    # -Wall -Wextra -Werror -std=c99 -pedantic
    for o in objects:
        undefined = set(subprocess.run(["nm", "-u", str(o)], capture_output=True, text=True, check=True)
                        .stdout.split()) - {"U"}
        assert undefined <= MATH, (o.name, undefined)
    for name, model in models.items():
        laws = {model.actuators[j].friction.law for j in model.body_joint[model.root_nv:]}   # mimic joints too
        assert laws == {"viscous", "coulomb", "stribeck", "sigmoid"}, name
        agree(name, model, compiled[name], n=5, seed=4)
        _, qd, _, _ = states(model, 200, 5)
        qd[::3] *= 0.05                                            # inside the Stribeck dip and the smoothing
        for smoothing in (0.0, 0.05):
            close(name, "friction laws", compiled[name].friction_torques(qd, smoothing=smoothing),
                  rd.friction_torques(model, qd, smoothing=smoothing))
        if model.root_nv:                                          # the root's coordinates have none
            assert np.all(compiled[name].friction_torques(qd)[:, :model.root_nv] == 0.0)
    # By hand, Armstrong-Helouvry's law (0.6 + 0.4 exp(-(v / 0.1)^2)) sgn(v) + 0.2 v at v / vs = 0.5, 1, -2.5,
    # where exp(-(v / vs)^2) and a wrong exponent, exp(-|v / vs|), differ by 0.069, 0 and 0.080 N m
    one = models["laws_panda"].with_actuators({"panda_joint1": {"friction": LAWS[3]}})
    c = build({"laws_one": one}, tmp_path / "one")[0]["laws_one"]
    qd = np.zeros((3, 7))
    qd[:, 0] = 0.05, 0.1, -0.25
    hand = [0.6 + 0.4 * np.exp(-0.25) + 0.01, 0.6 + 0.4 / np.e + 0.02, -(0.6 + 0.4 * np.exp(-6.25)) - 0.05]
    np.testing.assert_allclose(c.friction_torques(qd)[:, 0], hand, rtol=0, atol=1e-15)
    qd = qd[0]
    with pytest.raises(rd.InputError, match="smoothing"):
        c.friction_torques(qd, smoothing=-1.0)
    with pytest.raises(rd.InputError, match="qd"):
        c.friction_torques(np.r_[qd[:6], np.nan])


def test_panda_code_is_unrolled_folded_and_documented():
    model = load(ROOT / "urdf" / "panda_arm.urdf")
    header, source = generate(model, "panda", source="urdf/panda_arm.urdf", date="2026-11-27")
    for decl in ("#define panda_NQ 7", "#define panda_NV 7",
                 "void panda_rnea(const double *q, const double *qd, const double *qdd, double *tau);",
                 "void panda_gravity(const double *q, double *g);",
                 "void panda_coriolis(const double *q, const double *qd, double *c);",
                 "void panda_mass_matrix(const double *q, double *M);",
                 "void panda_aba(const double *q, const double *qd, const double *tau, double *qdd);",
                 "void panda_rnea_batch(int n, const double *q, const double *qd, const double *qdd, double *tau);",
                 "#define panda_NJ 7", "extern const char *const panda_joint_names[panda_NJ];",
                 "extern const double panda_effort_limit[panda_NJ];",
                 "void panda_friction_torques(const double *qd, double smoothing, double *tau);",
                 "panda_friction_torques(qd, smoothing, tau) gives each joint's law",
                 "no other function includes it"):
        assert decl in header, decl
    assert "#include <math.h>" in source and source.count("#include") == 2
    for banned in ("malloc", "static double", "while", "goto"):
        assert banned not in source, banned
    assert source.count("for (") == 6                         # the batches' loops only (five, and friction's)
    assert source.count("urdf/panda_arm.urdf") >= 5 and "generated 2026-11-27" in source
    assert "Table 5.1" in source and "Table 6.2" in source and "Table 7.1" in source
    # no product with an exact 0 or 1; joint 1 turns about z, the axis of gravity,
    # at a fixed base: nothing depends on q1, and the folded code never reads q[0]
    assert not re.search(r"\b0\.0 \*|\* 0\.0\b|\b1\.0 \*|\* 1\.0\b", source)
    for name in ("rnea", "gravity", "coriolis", "mass_matrix", "aba"):
        body = source.split("void panda_%s(" % name)[1].split("\n}")[0]
        assert "q[0]" not in body and body.count("sin(q[") == 6 and body.count("cos(q[") == 6, name
    gravity = source.split("void panda_gravity(")[1].split("\n}")[0]
    assert "qd" not in gravity
    dynamics = source.split("const char *const panda_frame_names")[0]    # test_codegen_frames.py: the rest
    assert dynamics.count("\n") < 2500


def test_one_link_pendulum_gravity_and_inertia_in_closed_form(tmp_path):
    """A rod of mass m with its centre of mass at l along x of its link, turning about
    y: U = -m g l sin(q), so g(q) = dU/dq = -m g l cos(q); M = I_yy + m l^2."""
    m, l, Iyy = 1.7, 0.45, 0.02
    xml = ('<robot name="pendulum"><link name="base"/><link name="rod"><inertial><origin xyz="%r 0 0"/>'
           '<mass value="%r"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="%r" iyz="0" izz="0.02"/></inertial></link>'
           '<joint name="hinge" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 1 0"/>'
           '</joint></robot>' % (l, m, Iyy))
    model = load(xml)
    compiled, _ = build({"pendulum": model}, tmp_path)
    c = compiled["pendulum"]
    for q in (0.0, 0.3, -1.2, 2.5):
        x = np.array([q])
        np.testing.assert_allclose(c.gravity_torques(x), [-m * 9.81 * l * np.cos(q)], rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(c.mass_matrix(x), [[Iyy + m * l * l]], rtol=1e-14)
        np.testing.assert_allclose(c.coriolis(x, np.array([3.0])), [0.0], atol=1e-15)
        tau = np.array([0.7])
        np.testing.assert_allclose(c.aba(x, np.array([3.0]), tau),
                                   (tau + m * 9.81 * l * np.cos(q)) / (Iyy + m * l * l), rtol=1e-14)
    source = (tmp_path / "pendulum.c").read_text()
    assert "hinge" in source and "9.81" in source


# --------------------------------------------------------------------------
# example-robot-data

@pytest.fixture(scope="module")
def erd(tmp_path_factory):
    require("example-robot-data", ERD)
    models = {}
    for k, path in enumerate(ERD_URDFS):
        rel = str(path.relative_to(ERD))
        if rel not in NOT_A_ROBOT | NO_MOVING_JOINT:
            models["erd%02d" % k] = (rel, load(path))
    compiled, objects = build({p: m for p, (_, m) in models.items()}, tmp_path_factory.mktemp("erd"))
    return models, compiled, objects


def test_every_example_robot_data_robot_equals_the_library(erd):
    models, compiled, objects = erd
    assert len(models) == N_ERD_GENERATED, sorted(rel for rel, _ in models.values())
    for prefix, (rel, model) in models.items():
        agree(rel, model, compiled[prefix], n=2)
    for o in objects:
        undefined = subprocess.run(["nm", "-u", str(o)], capture_output=True, text=True, check=True).stdout
        assert not ALLOCATION.search(undefined), o.name


def test_robots_without_a_moving_joint_are_refused_by_name():
    require("example-robot-data", ERD)
    for rel in sorted(NO_MOVING_JOINT):
        model = load(ERD / rel)
        with pytest.raises(rd.InputError, match="at least one moving joint: %r has none" % model.name):
            generate(model, "x")


# --------------------------------------------------------------------------
# names, errors, the compiled backend and the CLI

HOSTILE = ['j"quote', "back\\slash", "tri??=graph", "com*/ment", "sp ace", "\u00e9l\u00e9ment", "new\tline", "9lives"]


def test_hostile_joint_names_are_escaped_string_literals(tmp_path):
    joints = "".join(
        '<link name="l%d"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>'
        '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
        '<joint name="%s" type="revolute"><parent link="%s"/><child link="l%d"/><origin xyz="0 0 0.2"/>'
        '<axis xyz="1 0 0"/><limit effort="5" velocity="1" lower="-1" upper="1"/></joint>'
        % (k, _xml_attr(name), "base" if k == 0 else "l%d" % (k - 1), k) for k, name in enumerate(HOSTILE))
    model = load('<robot name="evil */ robot ??/"><link name="base"/>%s</robot>' % joints)
    assert list(model.joint_names) == HOSTILE
    compiled, _ = build({"hostile": model}, tmp_path)
    lib = ctypes.CDLL(str(compiled["hostile"].path))
    names = (ctypes.c_char_p * len(HOSTILE)).in_dll(lib, "hostile_joint_names")
    assert [n.decode("utf-8") for n in names] == HOSTILE
    limits = (ctypes.c_double * len(HOSTILE)).in_dll(lib, "hostile_effort_limit")
    assert list(limits) == [5.0] * len(HOSTILE)
    agree("hostile", model, compiled["hostile"], n=2)


def _xml_attr(text):
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("\t", "&#9;")


@pytest.mark.parametrize("prefix", ["1robot", "my-robot", "int", "", "a b", "caf\u00e9", None, 3])
def test_a_prefix_that_is_not_a_c_identifier_is_refused(prefix, tmp_path):
    model = load(ROOT / "urdf" / "ur5.urdf")
    with pytest.raises(rd.InputError, match=r"prefix must be a C identifier .*got %s" % re.escape(repr(prefix))):
        rd.codegen(model, prefix, tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_moving_root_header_states_its_conventions_and_sizes():
    header, source = generate(load(ROOT / "urdf" / "ur5.urdf", "floating"), "ur5")
    assert "#define ur5_NQ 13" in header and "#define ur5_NV 12" in header and "#define ur5_NJ 6" in header
    assert "q = (x, y, z, qx, qy, qz, qw, joints)" in header and "in the base frame" in header
    assert "const double ur5_effort_limit[ur5_NJ]" in source
    assert "q + (long)k * ur5_NQ, qd + (long)k * ur5_NV" in source        # batch strides: NQ for q, NV else
    header, _ = generate(load(ROOT / "urdf" / "ur5.urdf", "planar"), "ur5")
    assert "#define ur5_NQ 9" in header and "#define ur5_NV 9" in header and "q = (x, y, theta, joints)" in header


def test_a_quaternion_far_from_unit_is_refused_as_the_library_refuses_it(local):
    models, compiled, _ = local
    model, c = models["floating_panda"], compiled["floating_panda"]
    q, qd, qdd, _ = states(model, 2, seed=5)
    q[0, 3:7] *= 1.5
    for args in ((q[0], qd[0], qdd[0]), (q, qd, qdd)):          # one state and a batch
        with pytest.raises(rd.InputError, match=r"base quaternion .* has norm 1\.(5|49)"):
            rd.rnea(model, *args)
        with pytest.raises(rd.InputError, match=r"base quaternion .* has norm 1\.(5|49)"):
            c.rnea(*args)
    q[0, 3:7] *= (1 + 1e-3) / 1.5                               # within tolerance: normalised, as the library
    close("floating_panda", "rnea", c.rnea(q[0], qd[0], qdd[0]), rd.rnea(model, q[0], qd[0], qdd[0]))


def test_rd_compile_of_a_floating_model_on_both_paths(tmp_path):
    """rd.compile's CPython binding (one C-contiguous float64 state) and its ctypes path (lists,
    batches) on a floating Panda: the library's values, and the quaternion checked on both."""
    model = load(ROOT / "urdf" / "panda_arm.urdf", "floating")
    c = rd.compile(model, folder=tmp_path)
    q, qd, qdd, tau = states(model, 3, seed=6)
    for k in range(3):
        close("rd.compile floating", "rnea", c.rnea(q[k], qd[k], qdd[k]), rd.rnea(model, q[k], qd[k], qdd[k]))
        close("rd.compile floating", "rnea", c.rnea(list(q[k]), list(qd[k]), list(qdd[k])),
              rd.rnea(model, q[k], qd[k], qdd[k]))
        close("rd.compile floating", "aba", c.aba(q[k], qd[k], tau[k]), rd.aba(model, q[k], qd[k], tau[k]))
        close("rd.compile floating", "mass_matrix", c.mass_matrix(q[k]), rd.mass_matrix(model, q[k]))
    close("rd.compile floating", "gravity batch", c.gravity_torques(q), rd.gravity_torques(model, q))
    assert c.rnea(q[0], qd[0], qdd[0]).shape == (13,) and c.mass_matrix(q).shape == (3, 13, 13)
    bad = q[0].copy()
    bad[3:7] *= 2.0
    with pytest.raises(rd.InputError, match="base quaternion"):
        c.rnea(bad, qd[0], qdd[0])
    with pytest.raises(rd.InputError, match="q has 13 values, model nq is 14"):
        c.rnea(q[0][:13], qd[0], qdd[0])
    with pytest.raises(rd.InputError, match="qd has 14 values, model nv is 13"):
        c.rnea(q[0], np.zeros(14), qdd[0])


@pytest.fixture(scope="module")
def ur5_compiled(tmp_path_factory):
    model = load(ROOT / "urdf" / "ur5.urdf")
    return model, rd.compile(model, folder=tmp_path_factory.mktemp("cache"))


def test_compile_caches_by_source_and_keeps_the_library_shapes(ur5_compiled):
    model, c = ur5_compiled
    assert (c._fast is not None) == (binding.python_include() is not None)    # the CPython binding where it can be built
    again = rd.compile(model, folder=c.path.parent)
    assert again.path == c.path and len(list(c.path.parent.glob("*.so"))) == 1
    other = rd.compile(model.with_payload("tool0", 1.0), folder=c.path.parent)
    assert other.path != c.path
    q, qd, qdd, tau = states(model, 6, 3)
    Q = q.reshape(2, 3, 6)
    assert c.rnea(Q, qd.reshape(2, 3, 6), qdd.reshape(2, 3, 6)).shape == (2, 3, 6)
    assert c.mass_matrix(Q).shape == (2, 3, 6, 6)
    close("ur5", "rnea broadcast", c.rnea(q, qd[0], qdd[0]), rd.rnea(model, q, qd[0], qdd[0]))
    close("ur5", "rnea list", c.rnea(list(q[0]), list(qd[0]), list(qdd[0])), rd.rnea(model, q[0], qd[0], qdd[0]))
    frozen = q[0].copy()
    frozen.setflags(write=False)                                   # a read-only state goes by its address
    close("ur5", "rnea read-only", c.rnea(frozen, qd[0], qdd[0]), rd.rnea(model, q[0], qd[0], qdd[0]))
    out = np.empty((6, 6))
    assert c.mass_matrix(q[1], out=out) is out
    close("ur5", "mass out", out, rd.mass_matrix(model, q[1]))
    close("ur5", "nle", c.nonlinear_effects(q[2], qd[2]), rd.nonlinear_effects(model, q[2], qd[2]))
    close("ur5", "payload gravity", other.gravity_torques(q[2]),
          rd.gravity_torques(model.with_payload("tool0", 1.0), q[2]))


def test_compiled_single_states_equal_the_library_on_both_paths(ur5_compiled):
    """The binding's single-state path and ctypes' (the general path) give the library's values."""
    model, c = ur5_compiled
    plain = CompiledModel(model, c.path)                                   # ctypes only
    assert plain._fast is None
    q, qd, qdd, tau = states(model, 3, 5)
    for k in range(3):
        for compiled in (c, plain):
            close("ur5", "rnea one", compiled.rnea(q[k], qd[k], qdd[k]), rd.rnea(model, q[k], qd[k], qdd[k]))
            close("ur5", "gravity one", compiled.gravity_torques(q[k]), rd.gravity_torques(model, q[k]))
            close("ur5", "mass one", compiled.mass_matrix(q[k]), rd.mass_matrix(model, q[k]))
            close("ur5", "aba one", compiled.aba(q[k], qd[k], tau[k]), rd.aba(model, q[k], qd[k], tau[k]))
            out = np.empty(6)
            assert compiled.coriolis(q[k], qd[k], out=out) is out
    assert c.rnea(q[:1], qd[:1], qdd[:1]).shape == (1, 6)               # a (1, nq) batch stays a batch


def test_large_batches_split_over_threads_equal_the_library(ur5_compiled):
    """A batch of 2,000 states runs in chunks on rd.get_num_threads() threads; every row
    (the chunks' edges included) equals the library's."""
    model, c = ur5_compiled
    q, qd, qdd, tau = states(model, 2000, 8)
    before = rd.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba_threads())}):
            rd.set_num_threads(threads)
            close("ur5", "rnea threads", c.rnea(q, qd, qdd), rd.rnea(model, q, qd, qdd))
            close("ur5", "mass threads", c.mass_matrix(q), rd.mass_matrix(model, q))
            close("ur5", "aba threads", c.aba(q, qd, tau), rd.aba(model, q, qd, tau))
    finally:
        rd.set_num_threads(before)


def numba_threads():
    import numba
    return numba.config.NUMBA_NUM_THREADS


def test_a_7_dof_arm_generates_in_under_2_s():
    """The issue's bound (about 0.03-0.05 s measured here; docs/CODEGEN.md)."""
    import time
    model = load(ROOT / "urdf" / "panda_arm.urdf")
    start = time.perf_counter()
    generate(model, "panda")
    assert time.perf_counter() - start < 2.0


def test_compiled_functions_check_their_inputs(ur5_compiled):
    _, c = ur5_compiled
    with pytest.raises(rd.InputError, match="q has 5 values, model nq is 6"):
        c.rnea(np.zeros(5), np.zeros(6), np.zeros(6))
    with pytest.raises(rd.InputError, match=r"qd\[2\] is nan"):
        c.coriolis(np.zeros(6), np.array([0, 0, np.nan, 0, 0, 0.0]))
    with pytest.raises(rd.InputError, match=r"q\[1, 4\] is inf"):
        c.gravity_torques(np.array([np.zeros(6), [0, 0, 0, 0, np.inf, 0]]))
    with pytest.raises(rd.InputError, match=r"out must be .* shape \(6,\)"):
        c.rnea(np.zeros(6), np.zeros(6), np.zeros(6), out=np.empty(7))
    with pytest.raises(rd.InputError, match="out must be"):
        c.mass_matrix(np.zeros(6), out=np.empty((6, 6), dtype=np.float32))


def test_compile_without_a_compiler_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(rd.RobotDynamicsError, match="needs a C compiler: 'no-such-cc' was not found"):
        rd.compile(load(ROOT / "urdf" / "ur5.urdf"), folder=tmp_path)


def test_cli_writes_the_header_and_the_source(tmp_path):
    out = io.StringIO()
    folder = tmp_path / "gen"
    assert cli.main(["codegen", str(ROOT / "urdf" / "ur5.urdf"), "-o", str(folder), "--prefix", "ur5"], out=out) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["ur5.c", "ur5.h"]
    assert "ur5.h" in out.getvalue() and "prefix ur5" in out.getvalue()
    assert "ur5.urdf" in (folder / "ur5.c").read_text()
    run = subprocess.run([find_compiler(), *WARNINGS, "-c", "ur5.c", "-o", str(tmp_path / "ur5.o")], cwd=folder,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert cli.main(["codegen", str(ROOT / "urdf" / "ur5.urdf"), "-o", str(tmp_path / "default")], out=out) == 0
    assert sorted(p.name for p in (tmp_path / "default").iterdir()) == ["ur5.c", "ur5.h"]     # the robot's name
    assert cli.main(["codegen", str(ROOT / "urdf" / "ur5.urdf"), "-o", str(folder), "--prefix", "9x"], out=out) == 2


def test_cli_generates_a_moving_root_and_an_mjcf_model(tmp_path):
    """--root-joint floating: NQ 13, NV 12; an MJCF file (root element <mujoco>) with its armature."""
    out = io.StringIO()
    assert cli.main(["codegen", str(ROOT / "urdf" / "ur5.urdf"), "-o", str(tmp_path), "--prefix", "free",
                     "--root-joint", "floating"], out=out) == 0
    header = (tmp_path / "free.h").read_text()
    assert "#define free_NQ 13" in header and "#define free_NV 12" in header and "free_NJ 6" in header
    mjcf = tmp_path / "arm.xml"
    mjcf.write_text('<mujoco model="arm"><worldbody><body name="l1" pos="0 0 0.1"><joint name="j1" axis="0 1 0" '
                    'armature="0.2"/><geom size="0.05" pos="0.2 0 0" mass="1"/><body name="l2" pos="0.3 0 0">'
                    '<joint name="j2" axis="0 1 0"/><geom size="0.05" pos="0.2 0 0" mass="1"/></body></body>'
                    '</worldbody></mujoco>')
    assert cli.main(["codegen", str(mjcf), "-o", str(tmp_path), "--prefix", "arm"], out=out) == 0
    model = rd.load_mjcf(mjcf)
    compiled, _ = build({"arm": model}, tmp_path / "build")
    agree("mjcf arm", model, compiled["arm"])
    M = compiled["arm"].mass_matrix(np.zeros(2))
    assert M[0, 0] == pytest.approx(rd.mass_matrix(model, np.zeros(2))[0, 0], rel=1e-12) and model.armature[0] == 0.2
    # An actuators file over a URDF: the generated mass matrix gains the armature on the diagonal.
    (tmp_path / "act.yaml").write_text("shoulder_pan_joint: {armature: 0.5}\n")
    assert cli.main(["codegen", str(ROOT / "urdf" / "ur5.urdf"), "-o", str(tmp_path), "--prefix", "geared",
                     "--actuators", str(tmp_path / "act.yaml")], out=out) == 0
    assert "0.5" in (tmp_path / "geared.c").read_text()
    ur5 = load(ROOT / "urdf" / "ur5.urdf")
    geared = ur5.with_actuators({"shoulder_pan_joint": {"armature": 0.5}})
    compiled, _ = build({"geared": geared}, tmp_path / "build2")
    q = np.full(6, 0.3)
    np.testing.assert_allclose(compiled["geared"].mass_matrix(q) - rd.mass_matrix(ur5, q),
                               np.diag([0.5, 0, 0, 0, 0, 0]), atol=1e-12)


# --------------------------------------------------------------------------
# docs/CODEGEN.md: its examples are tests

DOC = ROOT / "docs" / "CODEGEN.md"


def doc_blocks(language):
    return re.findall(r"```%s\n(.*?)```" % language, DOC.read_text(), re.S)


def test_the_documented_c_program_prints_the_library_s_values(tmp_path):
    (program,) = doc_blocks("c")[1:]                       # the first c block is the header excerpt
    folder = tmp_path / "generated"
    assert cli.main(["codegen", str(ROOT / "urdf" / "panda_arm.urdf"), "-o", str(folder), "--prefix", "panda"],
                    out=io.StringIO()) == 0
    (tmp_path / "main.c").write_text(program)
    run = subprocess.run([find_compiler(), *WARNINGS, "-Igenerated", "main.c", "generated/panda.c", "-lm",
                          "-o", "main"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout.split("\n")
    model = load(ROOT / "urdf" / "panda_arm.urdf")
    q = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    rows = [line.split() for line in lines if line]
    assert [r[0] for r in rows] == list(model.joint_names)
    values = np.array([[float(x) for x in r[1:]] for r in rows])
    np.testing.assert_allclose(values[:, 0], rd.gravity_torques(model, q), atol=1e-9)
    np.testing.assert_allclose(values[:, 1], rd.gravity_torques(model, q), atol=1e-9)
    np.testing.assert_allclose(values[:, 2], np.diag(rd.mass_matrix(model, q)), atol=1e-9)


def test_the_documented_python_example_runs(monkeypatch):
    (block,) = doc_blocks("python")
    monkeypatch.chdir(ROOT)
    namespace = {}
    exec(compile(block, str(DOC), "exec"), namespace)          # noqa: S102 - the documented example
    assert namespace["M"].shape == (2, 7, 7) and namespace["tau"].shape == (7,)


def test_the_documented_header_excerpt_is_the_generated_api():
    excerpt = doc_blocks("c")[0]
    header, _ = generate(load(ROOT / "urdf" / "panda_arm.urdf"), "NAME")
    for line in excerpt.splitlines():
        decl = line.split("/*")[0].strip()
        if decl.startswith(("#define", "extern", "void")):
            assert decl in header, decl


def test_the_realtime_cpp_example_checks_every_function_from_cpp(tmp_path):
    """docs/REALTIME.md: its Cartesian impedance law and its check program compile with g++ -std=c++17
    -Wall -Werror and agree with the values the library writes (the functions to 1e-12, the law's torque
    with rd.CartesianImpedance's to 1e-9), in a 1 kHz-style loop over 200 states over the joint ranges."""
    gxx = shutil.which("g++")
    require("g++", gxx)
    law, program = re.findall(r"```cpp\n(.*?)```", (ROOT / "docs" / "REALTIME.md").read_text(), re.S)
    model = load(ROOT / "urdf" / "panda_arm.urdf")
    rd.codegen(model, "panda", tmp_path)
    (tmp_path / "cartesian_impedance.hpp").write_text(law)
    (tmp_path / "check_panda.cpp").write_text(program)
    q, qd, qdd, tau = states(model, 200, 11)
    ready = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    stiffness, frame = np.array([200.0, 200.0, 200.0, 10.0, 10.0, 10.0]), "panda_hand_tcp"      # as check_panda.cpp
    impedance = rd.CartesianImpedance(model, frame, stiffness=stiffness, damping=2 * np.sqrt(stiffness),
                                      nullspace_stiffness=10.0, q_nullspace=ready, max_condition=1e8,
                                      include_gravity=False)      # as the example's, for a Franka
    position, quaternion = impedance.pose(ready)
    with open(tmp_path / "reference.txt", "w") as f:
        for k in range(200):
            g = rd.gravity_torques(model, q[k])
            T = rd.link_pose(model, q[k], frame)
            row = [q[k], qd[k], qdd[k], rd.rnea(model, q[k], qd[k], qdd[k]), g,
                   rd.nonlinear_effects(model, q[k], qd[k]) - g, rd.mass_matrix(model, q[k]).ravel(), tau[k],
                   rd.aba(model, q[k], qd[k], tau[k]), rd.friction_torques(model, qd[k]), T[:3, 3],
                   T[:3, :3].ravel(), rd.jacobian(model, q[k], frame).ravel(),
                   rd.jacobian_derivative_times_qd(model, q[k], qd[k], frame),
                   impedance.torque(q[k], qd[k], position + [0.05, 0.0, 0.0], quaternion)]
            f.write(" ".join(repr(float(x)) for part in row for x in part) + "\n")
    steps = [[find_compiler(), "-O2", "-std=c99", *WARNINGS[:3], "-c", "panda.c", "-o", "panda.o"],
             [gxx, "-O2", "-std=c++17", "-Wall", "-Werror", "check_panda.cpp", "panda.o", "-lm", "-o", "check"]]
    for cmd in steps:
        run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    run = subprocess.run(["./check", "reference.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("200 states, worst difference"), run.stdout
    print(run.stdout)
    nm = subprocess.run(["nm", "-u", str(tmp_path / "panda.o")], capture_output=True, text=True, check=True).stdout
    assert not ALLOCATION.search(nm)
