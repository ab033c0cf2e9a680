"""The inertial-parameter regressor and the friction regressor.

- ``regressor(q, qd, qdd) @ inertial_parameters(model) == rnea(q, qd, qdd)``
  on every bundled URDF and on seeded random trees (every joint type,
  branches, fixed-joint merging with rotations, massless links, mimic
  joints); a batch equals its states one by one; data= and out= work.
- Against Pinocchio's ``computeJointTorqueRegressor`` (same parameter
  order, 10 per joint, about the joint frame) on the bundled arms,
  example-robot-data's Panda with its mimic finger, and random trees.
  Bodies are matched to Pinocchio joints BY NAME (``model.body_joint``);
  Pinocchio's ``buildModelFromXML`` ignores <mimic>, so with G the constant
  map from our velocities to Pinocchio's (as in test_pinocchio.py)
  ``Y = G^T Y_pin(G q + off, G qd, G qdd)``, columns of Pinocchio joint
  ``body_joint[i]`` for body i. Pinocchio's body frames are its joint
  frames; that they are ours is checked by comparing the parameters
  themselves (``Inertia.toDynamicParameters()`` per joint).
  Tolerance: max |ours - pin| <= 1e-9 max |pin|.
- Missing Pinocchio skips the comparison, but fails it when CI is set.
"""
import os
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.tools.sample import example_robot_data_dir, random_urdf

if os.environ.get("CI"):            # in CI a missing reference is a failure, not a skip
    import pinocchio as pin
else:
    try:
        import pinocchio as pin
    except ImportError:             # pragma: no cover - the dev environment has it
        pin = None

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = sorted((ROOT / "urdf").rglob("*.urdf"))
SEEDS = list(range(10))
MIMIC_SEEDS = [3, 7, 11]


def _load(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)       # textbook point masses
        return rd.load_urdf(str(source), **kw)


def _tree(seed, mimic=False):
    return rd.load_urdf(random_urdf(seed, n_links=4 + seed % 6, mimic=mimic))


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2.5, 2.5, (n, model.nq)), rng.uniform(-2, 2, (n, model.nq)),
            rng.uniform(-3, 3, (n, model.nq)))


def _check_equals_rnea(model, n=6, seed=0):
    pi = rd.inertial_parameters(model)
    Q, QD, QDD = _states(model, n, seed)
    Y = rd.regressor(model, Q, QD, QDD)
    assert Y.shape == (n, model.nq, 10 * model.nb)
    tau = rd.rnea(model, Q, QD, QDD)
    scale = max(1.0, np.abs(tau).max())
    np.testing.assert_allclose(Y @ pi, tau, rtol=0, atol=1e-12 * scale)
    for k in range(n):                                   # single states: the same numbers as the batch
        np.testing.assert_array_equal(rd.regressor(model, Q[k], QD[k], QDD[k]), Y[k])


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_regressor_times_parameters_is_rnea_on_bundled_urdfs(path):
    _check_equals_rnea(_load(path))
    _check_equals_rnea(_load(path, gravity=(0.0, -9.81, 0.0)), seed=1)     # the textbook arms' gravity


@pytest.mark.parametrize("seed", SEEDS)
def test_regressor_times_parameters_is_rnea_on_random_trees(seed):
    _check_equals_rnea(_tree(seed), seed=seed)


@pytest.mark.parametrize("seed", MIMIC_SEEDS)
def test_regressor_with_mimic_joints(seed):
    model = _tree(seed, mimic=True)
    assert model.has_mimic and model.nb > model.nq
    _check_equals_rnea(model, seed=seed)


def test_inertial_parameters_are_the_body_parameters_in_pinocchio_order():
    """(m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz) per body, about the body origin, from the
    model's (m, com, inertia about the origin)."""
    model = _tree(4)
    pi = rd.inertial_parameters(model).reshape(model.nb, 10)
    for b in range(model.nb):
        m, c, I = model.body_mass[b], model.body_com[b], model.body_inertia[b]
        np.testing.assert_allclose(pi[b], [m, m * c[0], m * c[1], m * c[2], I[0, 0], I[0, 1], I[1, 1],
                                           I[0, 2], I[1, 2], I[2, 2]], rtol=1e-14, atol=1e-15)
    names = rd.parameter_names(model)
    assert len(names) == 10 * model.nb
    assert names[10 * 1 + 9] == "I_zz(%s)" % model.link_names[model.body_link[1]]


def test_regressor_is_linear_in_the_parameters_of_a_payload():
    """A payload changes only the parameters, not Y: Y @ pi(loaded) == rnea(loaded)."""
    model = _load(ROOT / "urdf" / "panda_arm.urdf")
    loaded = model.with_payload("panda_hand", 1.3, com=(0.01, 0.02, 0.05), inertia=np.diag([1e-3, 2e-3, 3e-3]))
    Q, QD, QDD = _states(model, 4, 9)
    np.testing.assert_array_equal(rd.regressor(model, Q, QD, QDD), rd.regressor(loaded, Q, QD, QDD))
    np.testing.assert_allclose(rd.regressor(model, Q, QD, QDD) @ rd.inertial_parameters(loaded),
                               rd.rnea(loaded, Q, QD, QDD), rtol=1e-12, atol=1e-11)


def test_batches_broadcast_and_data_out_fill_in_place():
    model = _tree(2)
    Q, QD, QDD = _states(model, 6, 2)
    Y = rd.regressor(model, Q.reshape(2, 3, -1), QD.reshape(2, 3, -1), QDD[0])    # qdd broadcast
    assert Y.shape == (2, 3, model.nq, 10 * model.nb)
    np.testing.assert_array_equal(Y[1, 2], rd.regressor(model, Q[5], QD[5], QDD[0]))
    data, out = rd.Data(model), np.full((model.nq, 10 * model.nb), np.nan)
    got = rd.regressor(model, Q[0], QD[0], QDD[0], data=data, out=out)
    assert got is out
    np.testing.assert_array_equal(out, rd.regressor(model, Q[0], QD[0], QDD[0]))
    big = rd.regressor(model, *_states(model, 700, 3))                              # several chunks
    Q7, QD7, QDD7 = _states(model, 700, 3)
    for k in (0, 351, 699):
        np.testing.assert_array_equal(big[k], rd.regressor(model, Q7[k], QD7[k], QDD7[k]))


def test_regressor_refuses_bad_input():
    model = _tree(1)
    z = np.zeros(model.nq)
    with pytest.raises(rd.InputError, match="q has %d values, model nq is %d" % (model.nq + 1, model.nq)):
        rd.regressor(model, np.zeros(model.nq + 1), z, z)
    with pytest.raises(rd.InputError, match=r"qd\[1\] is nan"):
        rd.regressor(model, z, np.array([0.0, np.nan] + [0.0] * (model.nq - 2)), z)
    with pytest.raises(rd.InputError, match="out must be"):
        rd.regressor(model, z, z, z, out=np.empty((model.nq, 10)))


# --- friction regressor --------------------------------------------------------------------

def test_friction_regressor_columns():
    model = _tree(5)
    nq = model.nq
    qd = np.linspace(-1.0, 1.0, nq)
    qd[0] = 0.0
    F = rd.friction_regressor(model, qd)
    assert F.shape == (nq, 3 * nq)
    for j in range(nq):
        row = np.zeros(3 * nq)
        row[3 * j:3 * j + 3] = qd[j], np.sign(qd[j]), 1.0
        np.testing.assert_array_equal(F[j], row)
    assert rd.friction_parameter_names(model)[:3] == tuple("%s(%s)" % (p, model.joint_names[0])
                                                           for p in ("fv", "fc", "fo"))
    assert rd.friction_regressor(model, np.zeros((4, 2, nq))).shape == (4, 2, nq, 3 * nq)


def test_friction_regressor_times_the_urdf_coefficients_is_friction_torques():
    """No mimic joints: tau_f = F(qd) @ (damping, friction, 0) per joint equals rd.friction_torques."""
    model = _tree(6)
    assert not model.has_mimic
    phi = np.column_stack([model.damping, model.friction, np.zeros(model.nq)]).ravel()
    QD = np.random.default_rng(0).uniform(-2, 2, (5, model.nq))
    np.testing.assert_allclose(rd.friction_regressor(model, QD) @ phi, rd.friction_torques(model, QD),
                               rtol=1e-14, atol=1e-14)


# --- Pinocchio -------------------------------------------------------------------------------

ERD = example_robot_data_dir()
PIN_MODELS = [("panda_arm", ROOT / "urdf" / "panda_arm.urdf"), ("ur5", ROOT / "urdf" / "ur5.urdf"),
              ("erd_panda_mimic", ERD and ERD / "panda_description" / "urdf" / "panda.urdf")]
PIN_TREES = [(s, False) for s in range(8)] + [(s, True) for s in MIMIC_SEEDS]
MAX_REL = {}


def _need_pinocchio():
    if pin is None:
        pytest.skip("pinocchio not installed")      # CI imported it at the top and failed there


class PinPair:
    """Our model and Pinocchio's of the same URDF text; G, off map our coordinates to Pinocchio's."""

    def __init__(self, text):
        self.rd = rd.load_urdf(text)
        self.pm = pin.buildModelFromXML(text)
        self.pd = self.pm.createData()
        mimic = {}
        for j in ET.fromstring(text.encode() if isinstance(text, str) else text).findall("joint"):
            m = j.find("mimic")
            if m is not None:
                mimic[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
        index = {n: i for i, n in enumerate(self.rd.joint_names)}
        self.G, self.off = np.zeros((self.pm.nv, self.rd.nq)), np.zeros(self.pm.nv)
        for jid in range(1, self.pm.njoints):
            name, jm = self.pm.names[jid], self.pm.joints[jid]
            src, mul, off = name, 1.0, 0.0
            while src in mimic:
                s2, m2, o2 = mimic[src]
                src, mul, off = s2, mul * m2, mul * o2 + off
            self.G[jm.idx_v, index[src]] = mul
            self.off[jm.idx_v] = off
        self.cols = np.concatenate([np.arange(10) + 10 * (self.pm.getJointId(j) - 1) for j in self.rd.body_joint])

    def q(self, q):
        qv = self.G @ q + self.off
        out = np.zeros(self.pm.nq)
        for jid in range(1, self.pm.njoints):
            jm = self.pm.joints[jid]
            if jm.nq == 1:
                out[jm.idx_q] = qv[jm.idx_v]
            else:                                       # continuous: (cos, sin)
                out[jm.idx_q:jm.idx_q + 2] = np.cos(qv[jm.idx_v]), np.sin(qv[jm.idx_v])
        return out

    def regressor(self, q, qd, qdd):
        Y = pin.computeJointTorqueRegressor(self.pm, self.pd, self.q(q), self.G @ qd, self.G @ qdd)
        return self.G.T @ Y[:, self.cols]

    def parameters(self):
        return np.concatenate([self.pm.inertias[self.pm.getJointId(j)].toDynamicParameters()
                               for j in self.rd.body_joint])


def _compare_with_pinocchio(name, pair, n=8, seed=0):
    np.testing.assert_allclose(rd.inertial_parameters(pair.rd), pair.parameters(), rtol=1e-12, atol=1e-14,
                               err_msg=name + ": body parameters (frames) differ from Pinocchio's")
    Q, QD, QDD = _states(pair.rd, n, seed)
    Y = rd.regressor(pair.rd, Q, QD, QDD)
    for k in range(n):
        ref = pair.regressor(Q[k], QD[k], QDD[k])
        scale = np.abs(ref).max()
        err = np.abs(Y[k] - ref).max() / scale
        MAX_REL[name] = max(MAX_REL.get(name, 0.0), err)
        assert err <= 1e-9, "%s: max |Y - Y_pin| / max |Y_pin| = %.3g" % (name, err)


@pytest.mark.parametrize("name,path", PIN_MODELS, ids=[m[0] for m in PIN_MODELS])
def test_regressor_equals_pinocchio_on_arms(name, path):
    _need_pinocchio()
    if path is None or not Path(path).is_file():
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail("%s: example-robot-data not found; CI is set: the test environment must provide it" % name)
        pytest.skip("%s: example-robot-data not installed" % name)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="URDF: Unknown", category=UserWarning)
        pair = PinPair(Path(path).read_text())
    if name == "erd_panda_mimic":
        assert pair.rd.nb == pair.rd.nq + 1                      # the mimic finger is a body, not a coordinate
    _compare_with_pinocchio(name, pair)


@pytest.mark.parametrize("seed,mimic", PIN_TREES, ids=["tree%d%s" % (s, "_mimic" if m else "") for s, m in PIN_TREES])
def test_regressor_equals_pinocchio_on_random_trees(seed, mimic):
    _need_pinocchio()
    pair = PinPair(random_urdf(seed, n_links=4 + seed % 6, mimic=mimic))
    _compare_with_pinocchio("random trees", pair, n=4, seed=seed)


def test_report_pinocchio_errors(capsys):
    """Prints the largest relative difference found per model group (run with -s to see it)."""
    if MAX_REL:
        with capsys.disabled():
            print("\nregressor vs Pinocchio, max |Y - Y_pin| / max |Y_pin|: "
                  + ", ".join("%s %.2e" % kv for kv in sorted(MAX_REL.items())))
