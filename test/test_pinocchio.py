"""Cross-check robot_dynamics against Pinocchio on real arm models.

Models: the two bundled arms (urdf/panda_arm.urdf, urdf/ur5.urdf) and, when
example-robot-data is installed, its panda.urdf (7 arm joints + two finger
joints, panda_finger_joint2 being a <mimic> of panda_finger_joint1), xarm7.urdf
and z1.urdf.

Joints are matched BY NAME (Pinocchio ``model.names[1:]`` against
``rd_model.joint_names``); links by name (Pinocchio BODY frames).

Mimic joints: Pinocchio's ``buildModelFromUrdf`` ignores <mimic> tags (every
joint becomes independent) while robot_dynamics honours them. With G the
constant (nv_pin, nq) matrix mapping our independent velocities to all
Pinocchio velocities and ``off`` the mimic offsets,

    q_pin = G q + off,  v_pin = G qd,  a_pin = G qdd
    tau = G^T tau_pin,  M = G^T M_pin G,  g = G^T g_pin,  h = G^T h_pin
    J = J_pin G,  qdd(aba) = (G^T M_pin G)^-1 (tau - G^T h_pin)

(virtual work; G is constant so there is no Gdot term). For models without
mimic joints G is a permutation and aba is compared to pinocchio.aba directly.

Continuous joints would be (cos, sin) in Pinocchio's q; they are handled in
``to_pin_q`` (none of the models used here has one).

Tolerance: every comparison is np.testing.assert_allclose(rtol=1e-9,
atol=1e-9 * scale), scale = max |reference| of the compared array.
The largest relative error seen per quantity is printed at the end of the
module (``max |ours - pin| / scale``).
"""
import os
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("CI"):            # in CI a missing reference is a failure, not a skip
    import pinocchio as pin  # noqa: E402
else:
    pin = pytest.importorskip("pinocchio")
import robot_dynamics as rd  # noqa: E402
from robot_dynamics.tools.sample import example_robot_data_dir  # noqa: E402
from reporting import write_lines  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
N_STATES = 25
RTOL = 1e-9

# --------------------------------------------------------------------------
# locating example-robot-data (cmeel wheel, robotpkg, conda, or env var)




ERD = example_robot_data_dir()

MODELS = {
    "panda_arm": ROOT / "urdf" / "panda_arm.urdf",
    "ur5": ROOT / "urdf" / "ur5.urdf",
    "erd_panda_mimic": ERD and ERD / "panda_description" / "urdf" / "panda.urdf",
    "erd_xarm7": ERD and ERD / "xarm_description" / "urdf" / "xarm7.urdf",
    "erd_z1": ERD and ERD / "z1_description" / "urdf" / "z1.urdf",
}
MODEL_IDS = list(MODELS)

# quantity -> max relative error observed
MAX_REL = {}


def _record(name, actual, desired):
    actual = np.asarray(actual, dtype=float)
    desired = np.asarray(desired, dtype=float)
    scale = max(float(np.max(np.abs(desired))) if desired.size else 0.0, 1e-300)
    err = float(np.max(np.abs(actual - desired))) / scale if desired.size else 0.0
    MAX_REL[name] = max(MAX_REL.get(name, 0.0), err)
    return scale


def close(name, actual, desired, rtol=RTOL):
    """assert_allclose(rtol, atol=rtol*scale) and record the relative error."""
    scale = _record(name, actual, desired)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=rtol * scale, err_msg=name)


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    if not MAX_REL:
        return
    lines = ["", "max relative error vs Pinocchio (max|ours-pin| / max|pin|, all models):"]
    for k in sorted(MAX_REL):
        lines.append(f"  {k:<40s} {MAX_REL[k]:.3e}")
    write_lines(request, lines)


# --------------------------------------------------------------------------
# model pairs


def _mimic_table(path):
    """{joint: (source, multiplier, offset)} from the URDF's <mimic> tags."""
    out = {}
    for j in ET.parse(path).getroot().findall("joint"):
        m = j.find("mimic")
        if m is not None:
            out[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)),
                                  float(m.get("offset", 0.0)))
    return out


class Pair:
    """A robot_dynamics model and a Pinocchio model of the same URDF."""

    def __init__(self, name, path):
        self.name = name
        self.path = str(path)
        self.rd = rd.load_urdf(self.path)
        self.pm = pin.buildModelFromUrdf(self.path)
        self.pd = self.pm.createData()
        nq = self.rd.nq
        names = list(self.pm.names)[1:]
        rd_idx = {n: i for i, n in enumerate(self.rd.joint_names)}
        mimic = _mimic_table(self.path)
        self.G = np.zeros((self.pm.nv, nq))
        self.off = np.zeros(self.pm.nv)
        self.continuous = []          # (idx_q, idx_v) of Pinocchio (cos, sin) joints
        self.has_mimic = False
        for jid, jn in enumerate(names, start=1):
            jm = self.pm.joints[jid]
            if jm.nv != 1:
                pytest.skip(f"{name}: joint {jn} has nv={jm.nv}")
            if jm.nq == 2:
                self.continuous.append((jm.idx_q, jm.idx_v))
            elif jm.nq != 1:
                pytest.skip(f"{name}: joint {jn} has nq={jm.nq}")
            if jn in rd_idx:
                self.G[jm.idx_v, rd_idx[jn]] = 1.0
            elif jn in mimic:
                src, mul, off = mimic[jn]
                while src in mimic:           # mimic of a mimic
                    s2, m2, o2 = mimic[src]
                    src, mul, off = s2, mul * m2, off + mul * o2
                self.G[jm.idx_v, rd_idx[src]] = mul
                self.off[jm.idx_v] = off
                self.has_mimic = True
            else:
                raise AssertionError(f"{name}: Pinocchio joint {jn} not in rd joint_names "
                                     f"{self.rd.joint_names} and not a mimic joint")
        assert sorted(rd_idx) == sorted(n for n in names if n not in mimic), \
            f"{name}: joint sets differ: rd {self.rd.joint_names} vs pin {names}"
        if self.has_mimic and self.continuous:
            pytest.skip(f"{name}: continuous + mimic mapping not handled")
        # body frames by link name
        self.fid = {}
        for ln in self.rd.link_names:
            assert self.pm.existFrame(ln, pin.BODY), f"{name}: no Pinocchio BODY frame {ln}"
            self.fid[ln] = self.pm.getFrameId(ln, pin.BODY)

    # -- coordinate maps
    def to_pin_q(self, q):
        qv = self.G @ q + self.off
        if not self.continuous:
            return qv
        qp = np.zeros(self.pm.nq)
        for jid in range(1, self.pm.njoints):
            jm = self.pm.joints[jid]
            if jm.nq == 1:
                qp[jm.idx_q] = qv[jm.idx_v]
            else:
                qp[jm.idx_q] = np.cos(qv[jm.idx_v])
                qp[jm.idx_q + 1] = np.sin(qv[jm.idx_v])
        return qp

    def to_pin_v(self, qd):
        return self.G @ qd

    # -- reference quantities in our coordinates
    def rnea(self, q, qd, qdd, fext=None):
        args = (self.pm, self.pd, self.to_pin_q(q), self.to_pin_v(qd), self.to_pin_v(qdd))
        tau = pin.rnea(*args) if fext is None else pin.rnea(*args, fext)
        return self.G.T @ tau

    def mass_matrix(self, q):
        M = pin.crba(self.pm, self.pd, self.to_pin_q(q)).copy()
        M = np.triu(M) + np.triu(M, 1).T
        return self.G.T @ M @ self.G

    def gravity(self, q):
        return self.G.T @ pin.computeGeneralizedGravity(self.pm, self.pd, self.to_pin_q(q))

    def nle(self, q, qd):
        return self.G.T @ pin.nonLinearEffects(self.pm, self.pd, self.to_pin_q(q), self.to_pin_v(qd))

    def coriolis(self, q, qd):
        C = pin.computeCoriolisMatrix(self.pm, self.pd, self.to_pin_q(q), self.to_pin_v(qd))
        return self.G.T @ C @ self.G

    def aba(self, q, qd, tau, fext=None):
        if not self.has_mimic:
            qp, vp = self.to_pin_q(q), self.to_pin_v(qd)
            taup = self.G @ tau            # G is a permutation here
            a = pin.aba(self.pm, self.pd, qp, vp, taup) if fext is None else \
                pin.aba(self.pm, self.pd, qp, vp, taup, fext)
            return self.G.T @ a
        # constrained (mimic) system: M_r qdd = tau - h_r, h_r = G^T rnea(q, qd, 0, fext)
        M = self.mass_matrix(q)
        h = self.rnea(q, qd, np.zeros_like(qd), fext)
        return np.linalg.solve(M, tau - h)

    def kinetic(self, q, qd):
        return pin.computeKineticEnergy(self.pm, self.pd, self.to_pin_q(q), self.to_pin_v(qd))

    def potential(self, q):
        return pin.computePotentialEnergy(self.pm, self.pd, self.to_pin_q(q))

    def fk(self, q):
        pin.framesForwardKinematics(self.pm, self.pd, self.to_pin_q(q))
        return {ln: self.pd.oMf[f].homogeneous.copy() for ln, f in self.fid.items()}

    def jacobian(self, q, link):
        J = pin.computeFrameJacobian(self.pm, self.pd, self.to_pin_q(q), self.fid[link],
                                     pin.LOCAL_WORLD_ALIGNED)
        return J @ self.G

    def fext_from_links(self, wrenches):
        """Pinocchio per-joint fext from {link: [f; n]} in link frames about link origins."""
        fext = [pin.Force.Zero() for _ in range(self.pm.njoints)]
        for ln, w in wrenches.items():
            fr = self.pm.frames[self.fid[ln]]
            j = fr.parentJoint
            # frame placement = jMf: maps a force expressed in the link frame to the joint frame
            fext[j] = fext[j] + fr.placement.act(pin.Force(np.asarray(w[:3]), np.asarray(w[3:])))
        return pin.StdVec_Force(fext) if hasattr(pin, "StdVec_Force") else fext

    # -- random states
    def states(self, n=N_STATES, seed=0):
        rng = np.random.default_rng(seed + sum(map(ord, self.name)))
        lo = np.where(np.isfinite(self.rd.lower_limit), self.rd.lower_limit, -np.pi)
        hi = np.where(np.isfinite(self.rd.upper_limit), self.rd.upper_limit, np.pi)
        nq = self.rd.nq
        q = np.ascontiguousarray(rng.uniform(lo, hi, size=(n, nq)))
        qd = np.ascontiguousarray(rng.uniform(-2, 2, size=(n, nq)))
        qdd = np.ascontiguousarray(rng.uniform(-2, 2, size=(n, nq)))
        tau = np.ascontiguousarray(rng.uniform(-2, 2, size=(n, nq)))
        return q, qd, qdd, tau


_PAIRS = {}


@pytest.fixture(scope="module", params=MODEL_IDS)
def pair(request):
    import os
    name = request.param
    path = MODELS[name]
    if path is None or not Path(path).is_file():
        message = f"{name}: URDF not found (example-robot-data not installed?)"
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(message + " CI is set: the test environment must provide it")
        pytest.skip(message)
    if name not in _PAIRS:
        with warnings.catch_warnings():
            # the example-robot-data files carry non-URDF attributes (<dynamics D= K= ...>,
            # <limit current= ...>); the parser's notices about them are noise here
            if name.startswith("erd_"):
                warnings.filterwarnings("ignore", message="URDF: Unknown", category=UserWarning)
            _PAIRS[name] = Pair(name, path)
    return _PAIRS[name]


# --------------------------------------------------------------------------
# structure


def test_structure(pair):
    m = pair.rd
    mimic = _mimic_table(pair.path)
    assert m.nq == pair.pm.nv - len(mimic)
    if pair.name == "panda_arm":
        assert m.nq == 7
        assert m.joint_names == tuple(f"panda_joint{i}" for i in range(1, 8))
    if pair.name == "ur5":
        assert m.nq == 6
    if pair.name == "erd_panda_mimic":
        assert mimic == {"panda_finger_joint2": ("panda_finger_joint1", 1.0, 0.0)}
        assert m.nq == 8 and "panda_finger_joint2" not in m.joint_names
    # total mass: Pinocchio keeps the root link inertia on the universe joint
    close("total_mass", m.total_mass, sum(i.mass for i in pair.pm.inertias))


# --------------------------------------------------------------------------
# dynamics, batch and single calls


def test_rnea(pair):
    q, qd, qdd, _ = pair.states()
    batch = rd.rnea(pair.rd, q, qd, qdd)
    assert batch.shape == q.shape
    for k in range(len(q)):
        ref = pair.rnea(q[k], qd[k], qdd[k])
        close("rnea", rd.rnea(pair.rd, q[k], qd[k], qdd[k]), ref)
        close("rnea (batch)", batch[k], ref)


def test_gravity_torques(pair):
    q, *_ = pair.states()
    batch = rd.gravity_torques(pair.rd, q)
    for k in range(len(q)):
        ref = pair.gravity(q[k])
        close("gravity_torques", rd.gravity_torques(pair.rd, q[k]), ref)
        close("gravity_torques (batch)", batch[k], ref)


def test_nonlinear_effects(pair):
    q, qd, *_ = pair.states()
    batch = rd.nonlinear_effects(pair.rd, q, qd)
    for k in range(len(q)):
        ref = pair.nle(q[k], qd[k])
        close("nonlinear_effects", rd.nonlinear_effects(pair.rd, q[k], qd[k]), ref)
        close("nonlinear_effects (batch)", batch[k], ref)


def test_mass_matrix(pair):
    q, *_ = pair.states()
    batch = rd.mass_matrix(pair.rd, q)
    assert batch.shape == (len(q), pair.rd.nq, pair.rd.nq)
    for k in range(len(q)):
        ref = pair.mass_matrix(q[k])
        M = rd.mass_matrix(pair.rd, q[k])
        close("mass_matrix", M, ref)
        close("mass_matrix (batch)", batch[k], ref)
        np.testing.assert_array_equal(M, M.T)


def test_aba(pair):
    q, qd, _, tau = pair.states()
    batch = rd.aba(pair.rd, q, qd, tau)
    for k in range(len(q)):
        ref = pair.aba(q[k], qd[k], tau[k])
        close("aba", rd.aba(pair.rd, q[k], qd[k], tau[k]), ref)
        close("aba (batch)", batch[k], ref)


def test_aba_inverts_rnea(pair):
    q, qd, qdd, _ = pair.states()
    tau = rd.rnea(pair.rd, q, qd, qdd)
    close("aba(rnea(qdd)) - qdd", rd.aba(pair.rd, q, qd, tau), qdd, rtol=1e-8)


def test_coriolis_matrix(pair):
    """C qd must match exactly; both C's must satisfy the skew property."""
    q, qd, *_ = pair.states()
    batch = rd.coriolis_matrix(pair.rd, q, qd)
    for k in range(len(q)):
        C = rd.coriolis_matrix(pair.rd, q[k], qd[k])
        Cp = pair.coriolis(q[k], qd[k])
        close("coriolis C@qd", C @ qd[k], Cp @ qd[k])
        close("coriolis C@qd (batch)", batch[k] @ qd[k], Cp @ qd[k])
        # C qd = h - g (ours, internal consistency)
        h_minus_g = rd.nonlinear_effects(pair.rd, q[k], qd[k]) - rd.gravity_torques(pair.rd, q[k])
        close("coriolis C@qd vs h-g", C @ qd[k], h_minus_g)
        # skew property: Mdot - 2C skew-symmetric, i.e. Mdot = C + C^T (Mdot by central
        # differences of our own mass matrix along qd; FD error ~1e-10 relative)
        eps = 1e-6
        Mdot = (rd.mass_matrix(pair.rd, q[k] + eps * qd[k])
                - rd.mass_matrix(pair.rd, q[k] - eps * qd[k])) / (2 * eps)
        close("skew: Mdot vs C+C^T (ours, FD)", C + C.T, Mdot, rtol=1e-6)
        close("skew: Mdot vs C+C^T (pin, FD)", Cp + Cp.T, Mdot, rtol=1e-6)


def test_coriolis_matrix_equal(pair):
    """The C matrices themselves agree (this is not implied by C qd = h - g plus the skew
    property: C is not unique). Both libraries build the Christoffel-consistent C
    (C_ij = sum_k Gamma_ijk qd_k with Gamma symmetric in j, k), so they match to rounding."""
    q, qd, *_ = pair.states()
    for k in range(len(q)):
        close("coriolis matrix C", rd.coriolis_matrix(pair.rd, q[k], qd[k]),
              pair.coriolis(q[k], qd[k]))


def test_energies(pair):
    q, qd, *_ = pair.states()
    ke = rd.kinetic_energy(pair.rd, q, qd)
    pe = rd.potential_energy(pair.rd, q)
    assert np.shape(ke) == (len(q),) and np.shape(pe) == (len(q),)
    # Potential energy convention: U = -sum_i m_i g.c_i over the MOVING bodies, zero at the
    # base origin. Neither library counts the root link's own mass (Pinocchio keeps it on
    # the universe joint, which computePotentialEnergy skips; robot_dynamics sums moving
    # bodies only), so the two agree without a constant offset; sign: U grows with height.
    for k in range(len(q)):
        close("kinetic_energy", ke[k], pair.kinetic(q[k], qd[k]))
        close("kinetic_energy (single)", rd.kinetic_energy(pair.rd, q[k], qd[k]),
              pair.kinetic(q[k], qd[k]))
        # 1/2 qd^T M qd
        M = rd.mass_matrix(pair.rd, q[k])
        close("kinetic_energy vs qd^T M qd / 2", ke[k], 0.5 * qd[k] @ M @ qd[k])
    pe_ref = np.array([pair.potential(q[k]) for k in range(len(q))])
    close("potential_energy", pe, pe_ref)
    close("potential_energy (single)", rd.potential_energy(pair.rd, q[0]), pe_ref[0])
    # sign: V = -m g.c, so dV/dq = +gravity torques
    eps = 1e-6
    for k in range(3):
        dV = np.array([(rd.potential_energy(pair.rd, q[k] + eps * e) - rd.potential_energy(pair.rd, q[k] - eps * e))
                       / (2 * eps) for e in np.eye(pair.rd.nq)])
        close("dV/dq vs gravity_torques (FD)", dV, rd.gravity_torques(pair.rd, q[k]), rtol=1e-6)


def test_forward_kinematics(pair):
    q, *_ = pair.states()
    batch = rd.forward_kinematics(pair.rd, q)
    assert set(batch) == set(pair.rd.link_names)
    for k in range(len(q)):
        ref = pair.fk(q[k])
        single = rd.forward_kinematics(pair.rd, q[k])
        for ln in pair.rd.link_names:
            close("forward_kinematics", single[ln], ref[ln])
            close("forward_kinematics (batch)", batch[ln][k], ref[ln])


def test_jacobian(pair):
    q, *_ = pair.states()
    rng = np.random.default_rng(7)
    for ln in pair.rd.link_names:
        batch = rd.jacobian(pair.rd, q, ln)
        assert batch.shape == (len(q), 6, pair.rd.nq)
        for k in range(len(q)):
            ref = pair.jacobian(q[k], ln)
            close("jacobian", rd.jacobian(pair.rd, q[k], ln), ref)
            close("jacobian (batch)", batch[k], ref)
        # offset point p (link frame): v_p = v_o + w x (R p)  ->  J_lin -= [R p]x J_ang
        p = rng.uniform(-0.2, 0.2, 3)
        for k in range(0, len(q), 5):
            ref = pair.jacobian(q[k], ln)
            R = pair.fk(q[k])[ln][:3, :3]
            r = R @ p
            S = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
            ref_p = ref.copy()
            ref_p[:3] = ref[:3] - S @ ref[3:]
            close("jacobian (point)", rd.jacobian(pair.rd, q[k], ln, point=p), ref_p)


# --------------------------------------------------------------------------
# external wrenches


def _child_links(pair):
    """Links that are the child link of a moving joint (their frame = Pinocchio joint frame)."""
    out = []
    for ln, f in pair.fid.items():
        fr = pair.pm.frames[f]
        if fr.parentJoint > 0 and fr.placement.isIdentity(1e-15):
            out.append(ln)
    return out


def test_rnea_fext_single_link(pair):
    """One wrench on the child link of the last joint (frames coincide) and one on a
    link merged by a fixed joint (Pinocchio fext = jMf.act(f))."""
    q, qd, qdd, tau = pair.states()
    rng = np.random.default_rng(3)
    child = _child_links(pair)
    last_joint_child = max(child, key=lambda ln: pair.pm.frames[pair.fid[ln]].parentJoint)
    merged = [ln for ln in pair.rd.link_names
              if pair.pm.frames[pair.fid[ln]].parentJoint > 0 and ln not in child]
    targets = [last_joint_child] + merged
    for ln in targets:
        for k in range(len(q)):
            w = rng.uniform(-10, 10, 6)
            fext = pair.fext_from_links({ln: w})
            ref = pair.rnea(q[k], qd[k], qdd[k], fext)
            close("rnea f_ext (dict, child link)" if ln in child else "rnea f_ext (dict, merged link)",
                  rd.rnea(pair.rd, q[k], qd[k], qdd[k], f_ext={ln: w}), ref)


def test_rnea_fext_all_links_array(pair):
    """Random wrench on every link at once, array form (..., nlinks, 6), batch + single."""
    q, qd, qdd, tau = pair.states()
    rng = np.random.default_rng(4)
    nl = len(pair.rd.link_names)
    W = np.ascontiguousarray(rng.uniform(-10, 10, size=(len(q), nl, 6)))
    batch = rd.rnea(pair.rd, q, qd, qdd, f_ext=W)
    batch_aba = rd.aba(pair.rd, q, qd, tau, f_ext=W)
    for k in range(len(q)):
        fext = pair.fext_from_links(dict(zip(pair.rd.link_names, W[k])))
        ref = pair.rnea(q[k], qd[k], qdd[k], fext)
        close("rnea f_ext (array, all links)", rd.rnea(pair.rd, q[k], qd[k], qdd[k], f_ext=W[k]), ref)
        close("rnea f_ext (array, all links, batch)", batch[k], ref)
        ref_a = pair.aba(q[k], qd[k], tau[k], fext)
        close("aba f_ext (array, all links)", rd.aba(pair.rd, q[k], qd[k], tau[k], f_ext=W[k]), ref_a)
        close("aba f_ext (array, all links, batch)", batch_aba[k], ref_a)


def test_fext_is_jacobian_transpose(pair):
    """tau(f) - tau(0) = -J^T f for a wrench at the link origin, J in world-aligned axes:
    checks the wrench sign/frame convention independently of Pinocchio's fext."""
    q, qd, qdd, _ = pair.states(n=5)
    rng = np.random.default_rng(5)
    ln = pair.rd.link_names[-1]
    for k in range(len(q)):
        w = rng.uniform(-10, 10, 6)
        R = rd.forward_kinematics(pair.rd, q[k])[ln][:3, :3]
        w_world = np.concatenate([R @ w[:3], R @ w[3:]])
        J = rd.jacobian(pair.rd, q[k], ln)
        d = rd.rnea(pair.rd, q[k], qd[k], qdd[k], f_ext={ln: w}) - rd.rnea(pair.rd, q[k], qd[k], qdd[k])
        close("rnea f_ext vs -J^T f", d, -J.T @ w_world)


# --------------------------------------------------------------------------
# changed gravity


@pytest.mark.parametrize("g", [(0.0, -9.81, 0.0), (1.5, -2.0, 3.7)])
def test_changed_gravity(pair, g):
    old_rd = np.array(pair.rd.gravity, dtype=float).copy()
    old_pin = pair.pm.gravity.linear.copy()
    m = pair.rd.with_gravity(g)
    try:
        pair.pm.gravity.linear = np.array(g, dtype=float)
        np.testing.assert_array_equal(m.gravity, g)
        q, qd, qdd, tau = pair.states(n=N_STATES, seed=11)
        for k in range(len(q)):
            close("gravity changed: rnea", rd.rnea(m, q[k], qd[k], qdd[k]), pair.rnea(q[k], qd[k], qdd[k]))
            close("gravity changed: gravity_torques", rd.gravity_torques(m, q[k]), pair.gravity(q[k]))
            close("gravity changed: aba", rd.aba(m, q[k], qd[k], tau[k]), pair.aba(q[k], qd[k], tau[k]))
            close("gravity changed: potential_energy", rd.potential_energy(m, q[k]), pair.potential(q[k]))
        close("gravity changed: rnea (batch)", rd.rnea(m, q, qd, qdd),
              np.array([pair.rnea(q[k], qd[k], qdd[k]) for k in range(len(q))]))
    finally:
        pair.pm.gravity.linear = old_pin
    np.testing.assert_array_equal(pair.rd.gravity, old_rd)
