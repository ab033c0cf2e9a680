"""Analytical derivatives of the dynamics, the linear models and LQR.

Three independent routes, none of them the code's own output:

- Pinocchio's ``computeRNEADerivatives`` / ``computeABADerivatives``
  (Carpentier and Mansard, RSS 2018) on the bundled arms, three
  example-robot-data arms and seeded random trees, to 1e-9 relative.
  Joints are matched by name; Pinocchio ignores <mimic>, so with G the
  constant map from our coordinates to all of Pinocchio's
  (``q_pin = G q + off``, ``v_pin = G qd``, ``tau = G^T tau_pin``) the
  chain rule gives ``dtau/dq = G^T dtau_pin/dq_pin G`` and, for the coupled
  system, ``dqdd/dq = -(G^T M_pin G)^-1 G^T dtau_pin/dq_pin G``.
- Central differences of the package's own rnea / aba (mimic joints and
  external wrenches included), to 1e-6 relative (the difference error).
- Identities that hold exactly: dtau/dqd = 0 at qd = 0, M = mass_matrix,
  M^-1 M = 1, dqdd/dq = -M^-1 dtau/dq, batch = single states.

LQR: closed-loop eigenvalues of the Panda, and the simulated Panda started
0.1 rad off a pose converges to it under ``tau = g(q*) - K (x - x*)``.
"""
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from pinocchio_map import mimic_coupling, pinocchio_q
from reporting import require, write_lines
from robot_dynamics.simulation import simulate
from robot_dynamics.tools.sample import example_robot_data_dir, random_urdf

try:
    import pinocchio as pin
except ImportError:                      # pragma: no cover - the dev environment has it
    pin = None

ROOT = Path(__file__).resolve().parents[1]
PANDA, UR5 = ROOT / "urdf" / "panda_arm.urdf", ROOT / "urdf" / "ur5.urdf"
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
ERD = example_robot_data_dir()
RTOL = 1e-9                              # against Pinocchio
FD_RTOL = 1e-6                           # against central differences (error ~1e-9 .. 1e-8 seen)
MAX_REL = {}                             # quantity -> (largest relative error, model)


def close(robot, name, actual, desired, rtol=RTOL):
    """assert_allclose(rtol, atol = rtol * max|desired|) and record the relative error."""
    actual, desired = np.asarray(actual, dtype=float), np.asarray(desired, dtype=float)
    assert actual.shape == desired.shape, (name, actual.shape, desired.shape)
    scale = max(float(np.max(np.abs(desired))), 1e-300)
    err = float(np.max(np.abs(actual - desired))) / scale
    if err > MAX_REL.get(name, (-1.0, ""))[0]:
        MAX_REL[name] = (err, robot)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=rtol * scale, err_msg="%s: %s" % (robot, name))


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    if not MAX_REL:
        return
    lines = ["", "derivatives, max |ours - reference| / max |reference| (worst model):"]
    lines += ["  %-44s %.3e  (%s)" % (k, e, robot) for k, (e, robot) in sorted(MAX_REL.items())]
    write_lines(request, lines)


def load(source):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # example-robot-data notices are not the subject here
        return rd.load_urdf(str(source) if isinstance(source, Path) else source)


def tree(seed, mimic=False, n_links=8):
    return load(random_urdf(seed, n_links=n_links, mimic=mimic, p_massless=0.0))


def states(model, n, seed):
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    q = rng.uniform(lo, hi, size=(n, model.nq))
    qd, qdd, tau = rng.uniform(-2, 2, size=(3, n, model.nq))
    return q, qd, qdd, tau


# --------------------------------------------------------------------------
# Pinocchio


class Reference:
    """Pinocchio's derivatives of one URDF, in robot_dynamics' coordinates."""

    def __init__(self, xml, model):
        self.pm = pin.buildModelFromXML(xml)
        self.pd = self.pm.createData()
        self.model = model
        ours = {n: i for i, n in enumerate(model.joint_names)}
        coupling = mimic_coupling(ET.fromstring(xml))
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
        self.frame = {link: self.pm.getFrameId(link, pin.BODY) for link in model.link_names}

    def q(self, q):
        return pinocchio_q(self.model, self.pm, self.G, self.off, q)

    def fext(self, wrenches):
        """Pinocchio's per-joint forces from {link: [f; n]} in the link frames about their origins."""
        out = [pin.Force.Zero() for _ in range(self.pm.njoints)]
        for link, w in wrenches.items():
            fr = self.pm.frames[self.frame[link]]
            out[fr.parentJoint] = out[fr.parentJoint] + fr.placement.act(pin.Force(np.asarray(w[:3]), np.asarray(w[3:])))
        return pin.StdVec_Force(out) if hasattr(pin, "StdVec_Force") else out

    def rnea_derivatives(self, q, qd, qdd, wrenches=None):
        args = (self.pm, self.pd, self.q(q), self.G @ qd, self.G @ qdd)
        if wrenches is not None:
            args += (self.fext(wrenches),)
        dq, dv, M = (np.array(x) for x in pin.computeRNEADerivatives(*args))
        M = np.triu(M) + np.triu(M, 1).T
        G = self.G
        return G.T @ dq @ G, G.T @ dv @ G, G.T @ M @ G

    def aba_derivatives(self, q, qd, tau):
        G = self.G
        if not self.has_mimic:                     # G is a permutation
            dq, dv, Minv = (np.array(x) for x in pin.computeABADerivatives(
                self.pm, self.pd, self.q(q), G @ qd, G @ tau))
            Minv = np.triu(Minv) + np.triu(Minv, 1).T
            return G.T @ dq @ G, G.T @ dv @ G, G.T @ Minv @ G
        # the coupled system: M_r qdd = tau - G^T h_pin, then the RNEA derivatives at that qdd
        M = np.array(pin.crba(self.pm, self.pd, self.q(q)))
        M = G.T @ (np.triu(M) + np.triu(M, 1).T) @ G
        h = G.T @ pin.rnea(self.pm, self.pd, self.q(q), G @ qd, np.zeros(self.pm.nv))
        qdd = np.linalg.solve(M, tau - h)
        dq, dv, _ = self.rnea_derivatives(q, qd, qdd)
        Minv = np.linalg.inv(M)
        return -Minv @ dq, -Minv @ dv, Minv


def _erd(path):
    require("example-robot-data", ERD)
    return ERD / path


PIN_MODELS = {
    "panda_arm": lambda: PANDA,
    "ur5": lambda: UR5,
    "scara": lambda: ROOT / "urdf" / "textbook" / "scara.urdf",
    "erd_panda_mimic": lambda: _erd("panda_description/urdf/panda.urdf"),
    "erd_xarm7": lambda: _erd("xarm_description/urdf/xarm7.urdf"),
    "erd_z1": lambda: _erd("z1_description/urdf/z1.urdf"),
}
PIN_MODELS.update({"tree%d" % s: (lambda s=s: random_urdf(s, n_links=9, p_massless=0.0)) for s in range(6)})
PIN_MODELS.update({"mimic%d" % s: (lambda s=s: random_urdf(s, n_links=8, mimic=True, p_massless=0.0))
                   for s in (1, 3, 7)})
_PAIRS = {}


@pytest.fixture(scope="module", params=list(PIN_MODELS))
def pair(request):
    require("Pinocchio", pin is not None)
    name = request.param
    if name not in _PAIRS:
        source = PIN_MODELS[name]()
        xml = source.read_text() if isinstance(source, Path) else source
        model = load(xml)
        _PAIRS[name] = (name, model, Reference(xml, model))
    return _PAIRS[name]


def test_rnea_derivatives_agree_with_pinocchio(pair):
    name, model, ref = pair
    q, qd, qdd, _ = states(model, 7, seed=sum(map(ord, name)))
    batch = rd.rnea_derivatives(model, q, qd, qdd)
    for k in range(len(q)):
        want = ref.rnea_derivatives(q[k], qd[k], qdd[k])
        got = rd.rnea_derivatives(model, q[k], qd[k], qdd[k])
        for label, g, b, w in zip(("dtau_dq", "dtau_dqd", "M"), got, batch, want):
            close(name, "rnea_derivatives " + label, g, w)
            close(name, "rnea_derivatives %s (batch)" % label, b[k], w)


def test_aba_derivatives_agree_with_pinocchio(pair):
    name, model, ref = pair
    q, qd, _, tau = states(model, 7, seed=1 + sum(map(ord, name)))
    batch = rd.aba_derivatives(model, q, qd, tau)
    for k in range(len(q)):
        want = ref.aba_derivatives(q[k], qd[k], tau[k])
        got = rd.aba_derivatives(model, q[k], qd[k], tau[k])
        for label, g, b, w in zip(("dqdd_dq", "dqdd_dqd", "Minv"), got, batch, want):
            close(name, "aba_derivatives " + label, g, w)
            close(name, "aba_derivatives %s (batch)" % label, b[k], w)


def test_rnea_derivatives_with_external_wrenches_agree_with_pinocchio():
    require("Pinocchio", pin is not None)
    model = load(PANDA)
    ref = Reference(PANDA.read_text(), model)
    q, qd, qdd, _ = states(model, 4, seed=5)
    rng = np.random.default_rng(6)
    for k in range(len(q)):
        wrenches = {"panda_link7": rng.uniform(-20, 20, 6), "panda_link4": rng.uniform(-20, 20, 6),
                    "panda_link8": rng.uniform(-20, 20, 6)}
        got = rd.rnea_derivatives(model, q[k], qd[k], qdd[k], f_ext=wrenches)
        for label, g, w in zip(("dtau_dq", "dtau_dqd", "M"), got, ref.rnea_derivatives(q[k], qd[k], qdd[k], wrenches)):
            close("panda_arm", "rnea_derivatives f_ext " + label, g, w)


# --------------------------------------------------------------------------
# central differences of the package's own rnea and aba


def central(f, x, eps=1e-6):
    """(m, n) Jacobian of f at x by central differences."""
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]).T


FD_MODELS = {
    "panda_arm": lambda: load(PANDA),
    "mimic3": lambda: tree(3, mimic=True),
    "mimic7": lambda: tree(7, mimic=True),
    "tree4": lambda: tree(4),
}


@pytest.fixture(scope="module", params=list(FD_MODELS))
def fd_model(request):
    model = FD_MODELS[request.param]()
    if request.param.startswith("mimic"):
        assert model.has_mimic and model.nb > model.nq
    return request.param, model


def test_derivatives_agree_with_central_differences(fd_model):
    name, model = fd_model
    q, qd, qdd, tau = (x[0] for x in states(model, 1, seed=11))
    link = model.link_names[-1]
    wrench = {link: np.array([3.0, -2.0, 5.0, 0.4, -0.7, 0.2])}
    for fext in (None, wrench):
        dq, dqd, M = rd.rnea_derivatives(model, q, qd, qdd, f_ext=fext)
        close(name, "rnea_derivatives dtau_dq vs central differences",
              dq, central(lambda x: rd.rnea(model, x, qd, qdd, f_ext=fext), q), FD_RTOL)
        close(name, "rnea_derivatives dtau_dqd vs central differences",
              dqd, central(lambda x: rd.rnea(model, q, x, qdd, f_ext=fext), qd), FD_RTOL)
        close(name, "rnea_derivatives M vs central differences",
              M, central(lambda x: rd.rnea(model, q, qd, x, f_ext=fext), qdd), FD_RTOL)
        ddq, ddqd, Minv = rd.aba_derivatives(model, q, qd, tau, f_ext=fext)
        close(name, "aba_derivatives dqdd_dq vs central differences",
              ddq, central(lambda x: rd.aba(model, x, qd, tau, f_ext=fext), q), FD_RTOL)
        close(name, "aba_derivatives dqdd_dqd vs central differences",
              ddqd, central(lambda x: rd.aba(model, q, x, tau, f_ext=fext), qd), FD_RTOL)
        close(name, "aba_derivatives Minv vs central differences",
              Minv, central(lambda x: rd.aba(model, q, qd, x, f_ext=fext), tau), FD_RTOL)
    close(name, "gravity_derivatives vs central differences",
          rd.gravity_derivatives(model, q), central(lambda x: rd.gravity_torques(model, x), q), FD_RTOL)
    c = lambda x, y: rd.nonlinear_effects(model, x, y) - rd.gravity_torques(model, x)   # noqa: E731  C qd
    dc_dq, dc_dqd = rd.coriolis_derivatives(model, q, qd)
    close(name, "coriolis_derivatives dc_dq vs central differences", dc_dq, central(lambda x: c(x, qd), q), FD_RTOL)
    close(name, "coriolis_derivatives dc_dqd vs central differences", dc_dqd, central(lambda x: c(q, x), qd), FD_RTOL)


# --------------------------------------------------------------------------
# identities


@pytest.fixture(scope="module", params=["panda_arm", "ur5", "tree2", "tree5", "mimic3", "mimic11"])
def model(request):
    name = request.param
    if name in ("panda_arm", "ur5"):
        return load(PANDA if name == "panda_arm" else UR5)
    return tree(int(name.lstrip("mimictre")), mimic=name.startswith("mimic"))


def test_identities(model):
    q, qd, qdd, tau = states(model, 6, seed=21)
    for k in range(len(q)):
        dq, dqd, M = rd.rnea_derivatives(model, q[k], np.zeros(model.nq), qdd[k])
        scale = np.max(np.abs(dq))
        assert np.max(np.abs(dqd)) <= 1e-15 * scale, "dtau/dqd must vanish at qd = 0"
        Mref = rd.mass_matrix(model, q[k])
        close(model.name, "M == mass_matrix", M, Mref, 1e-12)
        np.testing.assert_array_equal(M, M.T)
        ddq, ddqd, Minv = rd.aba_derivatives(model, q[k], qd[k], tau[k])
        close(model.name, "Minv @ mass_matrix == 1", Minv @ Mref, np.eye(model.nq), 1e-10)
        np.testing.assert_allclose(Minv, Minv.T, rtol=0, atol=1e-12 * np.max(np.abs(Minv)))
        qdd_fd = rd.aba(model, q[k], qd[k], tau[k])
        dq, dqd, _ = rd.rnea_derivatives(model, q[k], qd[k], qdd_fd)
        close(model.name, "dqdd_dq == -Minv dtau_dq", ddq, -Minv @ dq, 1e-10)
        close(model.name, "dqdd_dqd == -Minv dtau_dqd", ddqd, -Minv @ dqd, 1e-10)
        # gravity and Coriolis parts: rnea = M qdd + C qd + g, each derivative its share
        dg = rd.gravity_derivatives(model, q[k])
        close(model.name, "gravity_derivatives == rnea_derivatives(q, 0, 0)",
              dg, rd.rnea_derivatives(model, q[k], np.zeros(model.nq), np.zeros(model.nq))[0], 1e-12)
        close(model.name, "gravity_derivatives symmetric (Hessian of U)", dg, dg.T, 1e-12)
        dc_dq, dc_dqd = rd.coriolis_derivatives(model, q[k], qd[k])
        dq0, dqd0, _ = rd.rnea_derivatives(model, q[k], qd[k], np.zeros(model.nq))
        close(model.name, "coriolis_derivatives dc_dq == dtau_dq(qdd=0) - dg", dc_dq, dq0 - dg, 1e-10)
        close(model.name, "coriolis_derivatives dc_dqd == dtau_dqd", dc_dqd, dqd0, 1e-12)
        C = rd.coriolis_matrix(model, q[k], qd[k])
        close(model.name, "dc_dqd qd == 2 C qd (c quadratic in qd)", dc_dqd @ qd[k], 2 * C @ qd[k], 1e-10)


def test_batches_equal_single_states_and_keep_the_batch_shape(model):
    q, qd, qdd, tau = states(model, 6, seed=31)
    shape = (2, 3, model.nq)
    n = model.nq
    for fn, args in ((rd.rnea_derivatives, (q, qd, qdd)), (rd.aba_derivatives, (q, qd, tau))):
        batch = fn(model, *(x.reshape(shape) for x in args))
        assert len(batch) == 3 and all(b.shape == (2, 3, n, n) for b in batch)
        for k in range(6):
            for b, s in zip(batch, fn(model, *(x[k] for x in args))):
                np.testing.assert_allclose(b.reshape(6, n, n)[k], s, rtol=1e-13, atol=1e-13 * np.max(np.abs(s)))
    g = rd.gravity_derivatives(model, q.reshape(shape))
    assert g.shape == (2, 3, n, n)
    np.testing.assert_allclose(g.reshape(6, n, n)[4], rd.gravity_derivatives(model, q[4]), rtol=1e-13, atol=1e-13)
    c = rd.coriolis_derivatives(model, q, qd)
    np.testing.assert_allclose(c[1][2], rd.coriolis_derivatives(model, q[2], qd[2])[1], rtol=1e-13, atol=1e-13)
    # one state broadcast against a batch, lists, and a reused Data give the same numbers
    data = rd.Data(model)
    one = rd.rnea_derivatives(model, list(q[0]), qd[0], qdd[0], data=data)
    for a, b in zip(one, rd.rnea_derivatives(model, q[0], qd[:2], qdd[0])):
        np.testing.assert_allclose(b[0], a, rtol=1e-13, atol=1e-13 * np.max(np.abs(a)))
    for a, b in zip(rd.aba_derivatives(model, q[1], qd[1], tau[1], data=data), rd.aba_derivatives(model, q[1], qd[1], tau[1])):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# bad input


def test_bad_input_says_what_was_expected_and_what_came():
    model = load(PANDA)
    z = np.zeros(7)
    with pytest.raises(rd.InputError, match=r"q has 6 values, model nq is 7"):
        rd.rnea_derivatives(model, np.zeros(6), z, z)
    with pytest.raises(rd.InputError, match=r"tau has 8 values, model nq is 7"):
        rd.aba_derivatives(model, z, z, np.zeros(8))
    with pytest.raises(rd.InputError, match=r"qd\[3\] is nan"):
        rd.coriolis_derivatives(model, z, np.array([0, 0, 0, np.nan, 0, 0, 0.0]))
    with pytest.raises(rd.InputError, match=r"q\[1, 2\] is inf"):
        rd.gravity_derivatives(model, np.array([z, [0, 0, np.inf, 0, 0, 0, 0]]))
    with pytest.raises(rd.InputError, match="f_ext"):
        rd.rnea_derivatives(model, z, z, z, f_ext=np.zeros((3, 6)))
    with pytest.raises(rd.InputError, match=r"q must be one state of shape \(7,\).*got shape \(2, 7\)"):
        rd.linearize(model, np.zeros((2, 7)), z, z)
    with pytest.raises(rd.InputError, match="dt must be"):
        rd.linearize(model, z, z, z, dt=-1e-3)
    with pytest.raises(rd.InputError, match="method must be one of 'zoh', 'euler', got 'rk4'"):
        rd.linearize(model, z, z, z, dt=1e-3, method="rk4")
    with pytest.raises(rd.InputError, match=r"Q must be a number, \(14,\) diagonal or \(14, 14\), got shape \(7,\)"):
        rd.lqr(model, READY, Q=np.ones(7))
    with pytest.raises(rd.InputError, match="R must be symmetric positive definite"):
        rd.lqr(model, READY, R=np.zeros(7))


def test_a_joint_that_carries_nothing_is_a_singularity():
    urdf = re.sub(r"<inertial>.*?</inertial>", "", """<robot name="r"><link name="base"/>
        <link name="a"><inertial><mass value="0"/><inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
        <joint name="j" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>""", flags=re.S)
    model = load(urdf)
    with pytest.raises(rd.SingularityError, match="carries no mass"):
        rd.aba_derivatives(model, [0.1], [0.0], [0.0])
    with pytest.raises(rd.SingularityError, match="carries no mass"):
        rd.aba_derivatives(model, [[0.1], [0.2]], [0.0], [0.0])


# --------------------------------------------------------------------------
# linear models and LQR


def step_map(model, dt, method, tau0):
    """x, u -> the state one step later: semi-implicit Euler, or the exact flow (RK4, 200 substeps)."""
    n = model.nq

    def f(x, u):
        return np.r_[x[n:], rd.aba(model, x[:n], x[n:], tau0 + u)]

    def euler(x, u):
        qd1 = x[n:] + dt * f(x, u)[n:]
        return np.r_[x[:n] + dt * qd1, qd1]

    def flow(x, u, substeps=200):
        h = dt / substeps
        for _ in range(substeps):
            k1 = f(x, u)
            k2 = f(x + h / 2 * k1, u)
            k3 = f(x + h / 2 * k2, u)
            k4 = f(x + h * k3, u)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return x
    return euler if method == "euler" else flow


@pytest.mark.parametrize("method", ["euler", "zoh"])
def test_discrete_linear_models_are_the_derivatives_of_one_step(method):
    """About an equilibrium the discrete (A, B) is the Jacobian of one step of
    the nonlinear dynamics: one semi-implicit Euler step, or the exact flow
    over dt with the torque held (zero-order hold)."""
    model = load(UR5)
    q = np.array([0.3, -1.2, 1.4, -0.5, 0.8, 0.1])
    g = rd.gravity_torques(model, q)
    dt = 0.01
    A, B = rd.linearize(model, q, np.zeros(6), g, dt, method=method)
    step = step_map(model, dt, method, g)
    x0, u0 = np.r_[q, np.zeros(6)], np.zeros(6)
    eps = 1e-5
    close("ur5", "linearize %s A vs differences of one step" % method, A,
          central(lambda x: step(x, u0), x0, eps), 1e-6)
    close("ur5", "linearize %s B vs differences of one step" % method, B,
          central(lambda u: step(x0, u), u0, eps), 1e-6)


def test_continuous_linear_model():
    model = load(PANDA)
    rng = np.random.default_rng(3)
    q, qd, tau = rng.uniform(-1, 1, (3, 7))
    A, B = rd.linearize(model, q, qd, tau)
    f = lambda x: np.r_[x[7:], rd.aba(model, x[:7], x[7:], tau)]   # noqa: E731
    close("panda_arm", "linearize A vs central differences", A, central(f, np.r_[q, qd]), FD_RTOL)
    close("panda_arm", "linearize B vs central differences", B,
          central(lambda u: np.r_[qd, rd.aba(model, q, qd, u)], tau), FD_RTOL)


def test_lqr_stabilises_the_panda():
    model = load(PANDA)
    g = rd.gravity_torques(model, READY)
    A, B = rd.linearize(model, READY, np.zeros(7), g)
    assert np.max(np.linalg.eigvals(A).real) > 1.0          # the arm falls without control
    K, S, E = rd.lqr(model, READY, Q=np.r_[[1e3] * 7, [1.0] * 7], R=0.01)
    assert K.shape == (7, 14) and S.shape == (14, 14) and E.shape == (14,)
    np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(A - B @ K)), np.sort_complex(E), rtol=1e-9)
    assert np.max(E.real) < 0, "closed-loop eigenvalues must be in the open left half-plane"
    # the Riccati equation A^T S + S A - S B R^-1 B^T S + Q = 0 holds
    Q, R = np.diag(np.r_[[1e3] * 7, [1.0] * 7]), 0.01 * np.eye(7)
    res = A.T @ S + S @ A - S @ B @ np.linalg.solve(R, B.T @ S) + Q
    assert np.max(np.abs(res)) < 1e-8 * np.max(np.abs(S @ B @ np.linalg.solve(R, B.T @ S)))
    # discrete gains at 1 kHz: closed loop inside the unit circle
    Ad, Bd = rd.linearize(model, READY, np.zeros(7), g, 1e-3)
    Kd, _, Ed = rd.lqr(model, READY, Q=np.r_[[1e3] * 7, [1.0] * 7], R=0.01, dt=1e-3)
    assert np.max(np.abs(Ed)) < 1.0
    np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(Ad - Bd @ Kd)), np.sort_complex(Ed), rtol=1e-9)

    # the simulated Panda (rigid body, RK4 at 1 kHz), 0.1 rad off on every joint, under tau = g(q*) - K (x - x*)
    x_star = np.r_[READY, np.zeros(7)]

    def control(t, q, qd):
        return g - K @ (np.r_[q, qd] - x_star)

    run = simulate(model, READY + 0.1, duration=3.0, tau=control, forces=[], record_every=10)
    err = np.max(np.abs(run.q - READY), axis=1)
    assert err[0] == pytest.approx(0.1, abs=1e-3)
    assert err[-1] < 1e-3, "final error %.3g rad" % err[-1]
    assert np.all(np.max(np.abs(run.qd[run.t > 2.0]), axis=1) < 1e-2)
    # and the discrete gains, on the semi-implicit Euler model they were computed for
    Kd, _, _ = rd.lqr(model, READY, Q=np.r_[[1e3] * 7, [1.0] * 7], R=0.01, dt=1e-3, method="euler")
    run = simulate(model, READY - 0.1, duration=3.0, integrator="semi_implicit_euler",
                   tau=lambda t, q, qd: g - Kd @ (np.r_[q, qd] - x_star), forces=[], record_every=10)
    assert np.max(np.abs(run.q[-1] - READY)) < 1e-3
