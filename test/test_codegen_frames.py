"""Frame kinematics in the generated C (robot_dynamics.codegen.frames, docs/CODEGEN.md "Task space").

- NAME_frame_pose, NAME_frame_jacobian and NAME_frame_jdot_qd of every link frame (NAME_frame_names:
  model.link_names) equal Pinocchio to 1e-10 (max |C - pin| / max(1, max |pin|) per array): the BODY
  frame of the same name, ``oMf``, ``getFrameJacobian(LOCAL_WORLD_ALIGNED)`` and
  ``getFrameClassicalAcceleration(LOCAL_WORLD_ALIGNED)`` after ``forwardKinematics(q, v, 0)``. Mimic
  joints: Pinocchio's are independent, so ``q_pin = G q + offset``, ``v_pin = G qd``, ``J = J_pin G``.
- On the bundled URDFs and random trees (with and without mimic joints) on a fixed base, floating and
  planar roots (the Panda, the UR5, random trees), and on every example-robot-data URDF with a moving
  joint, on a fixed base as test_codegen loads them. Each set built in one cc run at -O0 with ``-Wall
  -Wextra -Werror -std=c99 -pedantic`` into one shared object: the whole generated files for the local
  set, the frame functions alone for example-robot-data (test_codegen.py builds its whole files).
- A frame index outside 0 .. NFRAMES - 1 returns -1 and leaves the outputs alone; the frame names read
  back through ctypes; the header declares the documented API.
- The generated objects allocate nothing (``nm -u``).
"""
import ctypes
import os
import re
import subprocess
import time
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from pinocchio_map import mimic_coupling, pinocchio_q
from reporting import require, write_lines
from robot_dynamics.codegen import frames, generate
from robot_dynamics.codegen.compiled import find_compiler
from robot_dynamics.tools.sample import example_robot_data_dir, random_urdf

if os.environ.get("CI"):                     # in CI a missing reference is a failure, not a skip
    import pinocchio as pin
else:
    pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = {p.stem: p for p in sorted((ROOT / "urdf").rglob("*.urdf"))}
ERD = example_robot_data_dir()
ERD_URDFS = sorted(ERD.rglob("*.urdf")) if ERD else []
NOT_A_ROBOT = {"ur_description/urdf/ur3.urdf"}                    # as test_codegen.py
NO_MOVING_JOINT = {"hector_description/robots/quadrotor_base.urdf", "iris_description/robots/iris_simple.urdf"}
N_ERD_GENERATED = 66
TOL = 1e-10
WARNINGS = ("-Wall", "-Wextra", "-Werror", "-std=c99", "-pedantic")
ALLOCATION = re.compile(r"\b(malloc|calloc|realloc|free)\b")
WORST = {}                                                        # (set, quantity) -> (error, robot)
TIMES = {}


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    lines = ["", "generated frame kinematics vs Pinocchio, max |C - pin| / max(1, max |pin|) (worst robot):"]
    lines += ["  %-8s %-9s %.2e  (%s)" % (s, k, e, robot) for (s, k), (e, robot) in sorted(WORST.items())]
    lines += ["  %s: %.1f s" % (k, t) for k, t in TIMES.items()]
    write_lines(request, lines)


def load(source, root_joint=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the files' inertia notices are not the subject here
        return rd.load_urdf(str(source), root_joint=root_joint)


def build(models, folder, frames_only=False):
    """Generate every {prefix: model}, compile each into its object (one cc run, the warning flags),
    link one shared object. Returns (ctypes library, [object paths]). ``frames_only``: each
    file holds the frame functions alone (their text as in NAME.c; the whole files compile in
    test_codegen.py): a third of the example-robot-data's code, whose build dominates this test."""
    folder.mkdir(parents=True, exist_ok=True)
    for prefix, model in models.items():
        if frames_only:
            source = "\n".join(["#include <math.h>", "#define %s_NV %d" % (prefix, model.nv),
                                *frames.header_constants(model, prefix), *frames.declarations(prefix),
                                *frames.source(model, prefix, "test_codegen_frames")])
        else:
            header, source = generate(model, prefix, source="test_codegen_frames")
            (folder / ("%s.h" % prefix)).write_text(header)
        (folder / ("%s.c" % prefix)).write_text(source)
    run = subprocess.run([find_compiler(), "-O0", "-fPIC", *WARNINGS, "-c", *("%s.c" % p for p in models)],
                         cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[:5000]
    objects = [folder / ("%s.o" % p) for p in models]
    so = folder / "frames.so"
    run = subprocess.run([find_compiler(), "-shared", "-o", str(so), *map(str, objects), "-lm"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[:5000]
    return ctypes.CDLL(str(so)), objects


class Frames:
    """The three generated functions of one prefix, called through ctypes."""

    def __init__(self, lib, prefix, model):
        self.model, self.prefix = model, prefix
        self.pose_c, self.jacobian_c, self.jdot_c = (getattr(lib, "%s_frame_%s" % (prefix, f))
                                                     for f in ("pose", "jacobian", "jdot_qd"))
        for f in (self.pose_c, self.jacobian_c, self.jdot_c):
            f.restype = ctypes.c_int
        self.pose_c.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.jacobian_c.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        self.jdot_c.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        n = len(model.link_names)
        self.names = [x.decode() for x in (ctypes.c_char_p * n).in_dll(lib, "%s_frame_names" % prefix)]

    def pose(self, q, frame):
        p, R = np.full(3, np.nan), np.full(9, np.nan)
        assert self.pose_c(q.ctypes.data, frame, p.ctypes.data, R.ctypes.data) == 0
        return p, R.reshape(3, 3)

    def jacobian(self, q, frame):
        J = np.full((6, self.model.nv), np.nan)
        assert self.jacobian_c(q.ctypes.data, frame, J.ctypes.data) == 0
        return J

    def jdot_qd(self, q, qd, frame):
        a = np.full(6, np.nan)
        assert self.jdot_c(q.ctypes.data, qd.ctypes.data, frame, a.ctypes.data) == 0
        return a


class Reference:
    """Pinocchio's model of the same URDF (free-flyer or planar root as the model's), in our coordinates."""

    def __init__(self, source, model):
        xml = Path(source).read_text() if isinstance(source, Path) else source
        args = {"floating": [pin.JointModelFreeFlyer()], "planar": [pin.JointModelPlanar()]}.get(model.root_joint, [])
        self.pm = pin.buildModelFromXML(xml, *args)
        self.pd = self.pm.createData()
        self.model, nr = model, model.root_nv
        ours = {n: i for i, n in enumerate(model.joint_names)}
        coupling = mimic_coupling(ET.fromstring(xml))
        self.G, self.off = np.zeros((self.pm.nv, model.nv)), np.zeros(self.pm.nv)
        self.G[:nr, :nr] = np.eye(nr)
        for jid in range(2 if nr else 1, self.pm.njoints):
            name, jm = self.pm.names[jid], self.pm.joints[jid]
            src, mul, off = coupling.get(name, (name, 1.0, 0.0))
            self.G[jm.idx_v, nr + ours[src]] = mul
            self.off[jm.idx_v] = off
        self.fid = [self.pm.getFrameId(n, pin.BODY) for n in model.link_names]
        assert all(f < len(self.pm.frames) for f in self.fid), model.name

    def q(self, q):
        return pinocchio_q(self.model, self.pm, self.G, self.off, q)

    def at(self, q, qd):
        """Pinocchio's kinematics at (q, qd) and qdd = 0."""
        pm, pd = self.pm, self.pd
        qp = self.q(q)
        pin.forwardKinematics(pm, pd, qp, self.G @ qd, np.zeros(pm.nv))
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)

    def pose(self, l):
        M = self.pd.oMf[self.fid[l]]
        return M.translation, M.rotation

    def jacobian(self, l):
        J = pin.getFrameJacobian(self.pm, self.pd, self.fid[l], pin.LOCAL_WORLD_ALIGNED)
        return np.reshape(J, (6, self.pm.nv)) @ self.G            # one joint: Pinocchio returns (6,)

    def jdot_qd(self, l):
        return pin.getFrameClassicalAcceleration(self.pm, self.pd, self.fid[l], pin.LOCAL_WORLD_ALIGNED).vector


def states(model, n, seed):
    """n random states: joints within their limits, a floating root's quaternion unit."""
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    out = []
    for _ in range(n):
        q = np.concatenate([rng.uniform(-1, 1, model.root_nq), rng.uniform(lo, hi)])
        if model.root_joint == "floating":
            q[3:7] /= np.linalg.norm(q[3:7])
        out.append((q, rng.uniform(-2, 2, model.nv)))
    return out


def close(group, robot, name, actual, desired):
    err = float(np.max(np.abs(actual - desired))) / max(1.0, float(np.max(np.abs(desired))))
    if err > WORST.get((group, name), (-1.0, ""))[0]:
        WORST[group, name] = (err, robot)
    assert err <= TOL, "%s frame %s: relative error %.2e > %.0e" % (robot, name, err, TOL)


def agree(group, robot, model, source, frames, n=2, seed=0):
    """Every frame's pose, Jacobian and Jdot qd against Pinocchio on n random states."""
    ref = Reference(source, model)
    assert frames.names == list(model.link_names)
    for q, qd in states(model, n, seed):
        ref.at(q, qd)
        for l in range(len(model.link_names)):
            what = "%s %s" % (robot, model.link_names[l])
            p, R = frames.pose(q, l)
            p_ref, R_ref = ref.pose(l)
            close(group, what, "position", p, p_ref)
            close(group, what, "rotation", R, R_ref)
            close(group, what, "jacobian", frames.jacobian(q, l), ref.jacobian(l))
            close(group, what, "jdot_qd", frames.jdot_qd(q, qd, l), ref.jdot_qd(l))


# --------------------------------------------------------------------------
# the bundled robots, random trees, moving roots

LOCAL = {name: (path, None) for name, path in BUNDLED.items()}
LOCAL.update({"tree%d" % s: (random_urdf(s, n_links=9, p_massless=0.0), None) for s in range(4)})
LOCAL.update({"mimic%d" % s: (random_urdf(s, n_links=8, mimic=True, p_massless=0.0), None) for s in (1, 3, 7)})
LOCAL.update({"floating_panda": (BUNDLED["panda_arm"], "floating"), "planar_ur5": (BUNDLED["ur5"], "planar")})
LOCAL.update({"floating%d" % s: (random_urdf(s, n_links=8, p_massless=0.0), "floating") for s in (2, 5)})
LOCAL.update({"planar%d" % s: (random_urdf(s, n_links=6, p_massless=0.0), "planar") for s in (4,)})
LOCAL.update({"floating_mimic%d" % s: (random_urdf(s, n_links=9, mimic=True, p_massless=0.0), "floating")
              for s in (11,)})
LOCAL.update({"planar_mimic%d" % s: (random_urdf(s, n_links=8, mimic=True, p_massless=0.0), "planar") for s in (3,)})


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    models = {}
    for name, (source, root) in LOCAL.items():
        try:
            models[name] = load(source, root)
        except rd.InputError:              # a bundled file that is not a robot with a moving joint
            continue
    start = time.perf_counter()
    lib, objects = build(models, tmp_path_factory.mktemp("local"))
    TIMES["local: generate and build %d models" % len(models)] = time.perf_counter() - start
    return models, lib, objects


@pytest.mark.parametrize("name", list(LOCAL))
def test_frames_of_the_bundled_robots_and_random_trees_equal_pinocchio(local, name):
    models, lib, _ = local
    if name not in models:
        pytest.skip("%s has no moving joint" % name)
    source = LOCAL[name][0]
    agree("local", name, models[name], source, Frames(lib, name, models[name]), n=3)


def test_a_frame_outside_the_list_returns_minus_one_and_writes_nothing(local):
    models, lib, objects = local
    f = Frames(lib, "panda_arm", models["panda_arm"])
    q, qd = np.zeros(7), np.ones(7)
    for frame in (-1, len(models["panda_arm"].link_names), 1 << 20):
        p, R, J, a = np.full(3, 7.0), np.full(9, 7.0), np.full(42, 7.0), np.full(6, 7.0)
        assert f.pose_c(q.ctypes.data, frame, p.ctypes.data, R.ctypes.data) == -1
        assert f.jacobian_c(q.ctypes.data, frame, J.ctypes.data) == -1
        assert f.jdot_c(q.ctypes.data, qd.ctypes.data, frame, a.ctypes.data) == -1
        assert np.all(np.concatenate([p, R, J, a]) == 7.0)
    for o in objects:
        undefined = subprocess.run(["nm", "-u", str(o)], capture_output=True, text=True, check=True).stdout
        assert not ALLOCATION.search(undefined), o.name


def test_the_header_declares_the_api_and_the_panda_flange_is_where_its_urdf_puts_it(local):
    """At q = 0 the Panda's flange (panda_link8) is at x = 0.0825 - 0.0825 + 0.088 = 0.088, z = 0.333 +
    0.316 + 0.384 - 0.107 = 0.926 (the URDF's joint offsets), its x axis along the base's, its z axis
    down; joint 1 turns it about the base z: Jacobian column [z x p; z] = [0, 0.088, 0, 0, 0, 1]."""
    models, lib, _ = local
    model = models["panda_arm"]
    header, _ = generate(model, "NAME")
    for decl in ("#define NAME_NFRAMES 11", "extern const char *const NAME_frame_names[NAME_NFRAMES];",
                 "int NAME_frame_pose(const double *q, int frame, double *p, double *R);",
                 "int NAME_frame_jacobian(const double *q, int frame, double *J);",
                 "int NAME_frame_jdot_qd(const double *q, const double *qd, int frame, double *a);"):
        assert decl in header, decl
    f, flange = Frames(lib, "panda_arm", model), model.link_names.index("panda_link8")
    p, R = f.pose(np.zeros(7), flange)
    np.testing.assert_allclose(p, [0.088, 0.0, 0.926], atol=1e-15)
    np.testing.assert_allclose(R, np.diag([1.0, -1.0, -1.0]), atol=1e-15)
    np.testing.assert_allclose(f.jacobian(np.zeros(7), flange)[:, 0], [0.0, 0.088, 0.0, 0.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(f.jdot_qd(np.zeros(7), np.zeros(7), flange), np.zeros(6), atol=0)
    w = 2.0                                        # joint 1 alone at w: centripetal -w^2 r towards the axis
    np.testing.assert_allclose(f.jdot_qd(np.zeros(7), np.array([w, 0, 0, 0, 0, 0, 0]), flange),
                               [-w * w * 0.088, 0, 0, 0, 0, 0], atol=1e-14)


# --------------------------------------------------------------------------
# example-robot-data

@pytest.fixture(scope="module")
def erd(tmp_path_factory):
    require("example-robot-data", ERD)
    models = {}
    for k, path in enumerate(ERD_URDFS):
        rel = str(path.relative_to(ERD))
        if rel not in NOT_A_ROBOT | NO_MOVING_JOINT:
            models["erd%02d" % k] = (rel, path, load(path))
    start = time.perf_counter()
    lib, objects = build({p: m for p, (_, _, m) in models.items()}, tmp_path_factory.mktemp("erd"), frames_only=True)
    TIMES["example-robot-data: generate and build %d models" % len(models)] = time.perf_counter() - start
    return models, lib, objects


def test_frames_of_every_example_robot_data_robot_equal_pinocchio(erd):
    models, lib, objects = erd
    assert len(models) == N_ERD_GENERATED, sorted(rel for rel, _, _ in models.values())
    start = time.perf_counter()
    for prefix, (rel, path, model) in models.items():
        agree("erd", rel, model, path, Frames(lib, prefix, model), n=2)
    TIMES["example-robot-data: compare"] = time.perf_counter() - start
    for o in objects:
        undefined = subprocess.run(["nm", "-u", str(o)], capture_output=True, text=True, check=True).stdout
        assert not ALLOCATION.search(undefined), o.name
