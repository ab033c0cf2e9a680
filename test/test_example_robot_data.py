"""Every URDF of example-robot-data loads and agrees with Pinocchio.

example-robot-data 6.0.0 (requirements-dev.txt) ships 69 ``.urdf`` files.
68 are robots and all of them load; ``ur_description/urdf/ur3.urdf`` is an
empty xacro leftover (a <robot> with no name and no link) that urdfdom and
Pinocchio refuse too.

Each robot is compared with ``pinocchio.buildModelFromUrdf(path)`` (fixed
base, gravity (0, 0, -9.81) in both) on random states within the joint
limits, one state at a time and as a batch: rnea, gravity torques
(rnea(q, 0, 0)), the mass matrix and aba.

Mimic joints: Pinocchio built without ``mimic=True`` makes every joint
independent while robot_dynamics couples them. As in test_pinocchio.py,
with G the constant (nv_pin, nq) matrix from our velocities to Pinocchio's
and ``off`` the mimic offsets (from the URDF's <mimic> tags, read here with
ElementTree):

    q_pin = G q + off,  v_pin = G qd,  a_pin = G qdd
    tau = G^T tau_pin,  M = G^T M_pin G,  g = G^T g_pin
    qdd(aba) = (G^T M_pin G)^-1 (tau - G^T h_pin)

A <mimic> of a joint the file lacks (Alex's psyonic fingers) is no coupling:
that joint is independent in both libraries. Without mimic joints G is a
permutation and aba is compared with pinocchio.aba itself. Continuous
joints are (cos, sin) in Pinocchio's q.

Tolerance: max |ours - pin| <= 1e-9 * max |pin| for each compared array;
the largest such ratio per quantity is printed at the end of the module.
rnea, gravity and M agree to a few 1e-15; aba differs by up to cond(M) times
that, about 3e-10 on iCub (cond(M) ~ 1e8: a nearly massless neck). Romeo's
hand joints carry no mass at all (M singular in both libraries): there aba
must raise SingularityError instead.

Missing example-robot-data or Pinocchio skips these tests, but fails them
when the environment variable CI is set (CI=true on the CI runners).
"""
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import robot_dynamics as rd
from pinocchio_map import mimic_coupling, pinocchio_q
from reporting import require, write_lines
from robot_dynamics.tools.sample import example_robot_data_dir

try:
    import pinocchio as pin
except ImportError:                      # pragma: no cover - the dev environment has it
    pin = None

ERD = example_robot_data_dir()
URDFS = sorted(ERD.rglob("*.urdf")) if ERD else []
IDS = [str(p.relative_to(ERD)) for p in URDFS]
N_URDFS = 69                             # example-robot-data 6.0.0
NOT_A_ROBOT = {"ur_description/urdf/ur3.urdf"}
# one parameter per robot; without example-robot-data one None, so that the test runs (and fails on CI)
ROBOTS = [pytest.param(p, id=i) for i, p in zip(IDS, URDFS) if i not in NOT_A_ROBOT] or [None]
N_STATES, N_BATCH = 3, 4
RTOL = 1e-9

MAX_REL = {}                             # quantity -> (largest relative error, robot)


def close(robot, name, actual, desired):
    actual, desired = np.asarray(actual, dtype=float), np.asarray(desired, dtype=float)
    assert actual.shape == desired.shape, (name, actual.shape, desired.shape)
    scale = float(np.max(np.abs(desired))) if desired.size else 0.0
    err = float(np.max(np.abs(actual - desired))) / max(scale, 1e-300) if desired.size else 0.0
    if err > MAX_REL.get(name, (-1.0, ""))[0]:
        MAX_REL[name] = (err, robot)
    np.testing.assert_allclose(actual, desired, rtol=RTOL, atol=RTOL * scale, err_msg="%s: %s" % (robot, name))


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    if not MAX_REL:
        return
    lines = ["", "example-robot-data vs Pinocchio, max |ours - pin| / max |pin| over all robots:"]
    lines += ["  %-24s %.3e  (%s)" % (k, e, robot) for k, (e, robot) in sorted(MAX_REL.items())]
    write_lines(request, lines)


def load(path):
    """Our model; the files' notices (implausible inertias, unknown attributes) are not the subject."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_urdf(path)


# --------------------------------------------------------------------------
# loading


def test_every_urdf_is_found():
    require("example-robot-data", ERD)
    assert len(URDFS) == N_URDFS, IDS
    assert NOT_A_ROBOT <= set(IDS)


@pytest.mark.parametrize("path", ROBOTS)
def test_every_robot_loads_without_notices_about_elements_it_does_not_read(path):
    """Visual, collision, material (with <texture>), old-style <transmission>, gazebo,
    ros2_control and extension tags are skipped silently; what still warns is about
    links, joints and inertials (implausible inertias, unknown attributes)."""
    require("example-robot-data", path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = rd.load_urdf(path)
    assert model.nq >= 0 and model.link_names
    for w in caught:
        assert issubclass(w.category, (rd.InertiaWarning, rd.errors.URDFWarning)), str(w.message)
        assert "Unknown tag" not in str(w.message)


def test_the_empty_xacro_leftover_is_refused_by_both_libraries():
    require("example-robot-data", ERD)
    path = ERD / "ur_description" / "urdf" / "ur3.urdf"
    root = ET.parse(path).getroot()
    assert root.tag == "robot" and root.get("name") is None and not list(root)
    with pytest.raises(rd.URDFError, match="name"):
        rd.load_urdf(path)
    if pin is not None:
        with pytest.raises(ValueError):
            pin.buildModelFromUrdf(str(path))


def test_alex_fingers_that_mimic_a_missing_joint_move_independently():
    require("example-robot-data", ERD)
    path = ERD / "alex_description" / "urdf" / "alex_psyonic_hands.urdf"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = rd.load_urdf(path)
    missing = sorted(str(w.message) for w in caught if "which is not a joint of the robot" in str(w.message))
    assert missing == sorted("joint '%s_%s_q2' mimics '%s_q1', which is not a joint of the robot: "
                             "'%s_%s_q2' moves independently" % (side, f, f, side, f)
                             for side in ("Left", "Right") for f in ("index", "middle", "ring", "pinky"))
    for side in ("Left", "Right"):
        for f in ("index", "middle", "ring", "pinky"):
            assert "%s_%s_q2" % (side, f) in model.joint_names


# --------------------------------------------------------------------------
# agreement with Pinocchio


class Reference:
    """Pinocchio's answers for one URDF, in robot_dynamics' coordinates (see module doc)."""

    def __init__(self, path, model):
        self.pm = pin.buildModelFromUrdf(str(path))
        self.pd = self.pm.createData()
        self.model = model
        np.testing.assert_array_equal(self.pm.gravity.linear, model.gravity)
        ours = {n: i for i, n in enumerate(model.joint_names)}
        coupling = mimic_coupling(ET.parse(path).getroot())
        self.G = np.zeros((self.pm.nv, model.nq))
        self.off = np.zeros(self.pm.nv)
        for jid, name in enumerate(list(self.pm.names)[1:], start=1):
            jm = self.pm.joints[jid]
            assert jm.nv == 1 and jm.nq in (1, 2), (name, jm.shortname())
            src, mul, off = coupling.get(name, (name, 1.0, 0.0))
            self.G[jm.idx_v, ours[src]] = mul
            self.off[jm.idx_v] = off
        assert sorted(ours) == sorted(n for n in list(self.pm.names)[1:] if n not in coupling)
        self.has_mimic = bool(coupling)

    def q(self, q):
        return pinocchio_q(self.model, self.pm, self.G, self.off, q)

    def rnea(self, q, qd, qdd):
        return self.G.T @ pin.rnea(self.pm, self.pd, self.q(q), self.G @ qd, self.G @ qdd)

    def gravity(self, q):
        return self.G.T @ pin.computeGeneralizedGravity(self.pm, self.pd, self.q(q))

    def mass_matrix(self, q):
        M = pin.crba(self.pm, self.pd, self.q(q)).copy()
        M = np.triu(M) + np.triu(M, 1).T
        return self.G.T @ M @ self.G

    def aba(self, q, qd, tau):
        if not self.has_mimic:                     # G is a permutation
            return self.G.T @ pin.aba(self.pm, self.pd, self.q(q), self.G @ qd, self.G @ tau)
        h = self.rnea(q, qd, np.zeros_like(qd))
        return np.linalg.solve(self.mass_matrix(q), tau - h)


def states(model, n, seed):
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    q = rng.uniform(lo, hi, size=(n, model.nq))
    qd, qdd, tau = rng.uniform(-2, 2, size=(3, n, model.nq))
    return q, qd, qdd, tau


@pytest.mark.parametrize("path", ROBOTS)
def test_agrees_with_pinocchio(path):
    require("example-robot-data", path)
    require("Pinocchio", pin is not None)
    robot = str(path.relative_to(ERD))
    model = load(path)
    ref = Reference(path, model)
    q, qd, qdd, tau = states(model, N_STATES + N_BATCH, seed=sum(map(ord, robot)))
    singular = not np.all(np.diag(ref.mass_matrix(q[0])))     # a moving joint that carries nothing
    for k in range(N_STATES):
        close(robot, "rnea", rd.rnea(model, q[k], qd[k], qdd[k]), ref.rnea(q[k], qd[k], qdd[k]))
        close(robot, "gravity_torques", rd.gravity_torques(model, q[k]), ref.gravity(q[k]))
        close(robot, "mass_matrix", rd.mass_matrix(model, q[k]), ref.mass_matrix(q[k]))
        if not singular:
            close(robot, "aba", rd.aba(model, q[k], qd[k], tau[k]), ref.aba(q[k], qd[k], tau[k]))
    b = slice(N_STATES, None)
    batch = {"rnea (batch)": (rd.rnea(model, q[b], qd[b], qdd[b]), ref.rnea, (q[b], qd[b], qdd[b])),
             "gravity_torques (batch)": (rd.gravity_torques(model, q[b]), ref.gravity, (q[b],)),
             "mass_matrix (batch)": (rd.mass_matrix(model, q[b]), ref.mass_matrix, (q[b],))}
    if not singular:
        batch["aba (batch)"] = (rd.aba(model, q[b], qd[b], tau[b]), ref.aba, (q[b], qd[b], tau[b]))
    for name, (ours, f, args) in batch.items():
        close(robot, name, ours, np.array([f(*row) for row in zip(*args)]).reshape(ours.shape))
    if singular:
        with pytest.raises(rd.SingularityError, match="carries no mass or inertia"):
            rd.aba(model, q[0], qd[0], tau[0])


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception),
                                         ("false", pytest.skip.Exception)])
def test_a_missing_dependency_fails_on_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="Pinocchio is not installed"):
        require("Pinocchio", False)
    require("Pinocchio", True)
