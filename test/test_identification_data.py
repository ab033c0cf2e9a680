"""Recorded data and excitation for identification: rosbag2 / NPZ / CSV loading, the zero-phase
derivative filter, excitation trajectories, and identification end to end on a simulated Panda.

The "true" Panda of these tests differs from the nominal URDF (masses +-20 %, centres of mass moved
by up to 3 cm); the simulator runs it under computed-torque control (the NOMINAL model, 1 kHz)
along an excitation trajectory. Recorded efforts carry N(0, 0.05 N m) noise, velocities N(0, 1e-3
rad/s), positions N(0, 1e-5 rad).
"""
import shutil
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification.inertials import model_with_parameters
from robot_dynamics.model.inertia import inertia_about_com, inertia_about_origin
from robot_dynamics.simulation import simulate

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "urdf" / "panda_arm.urdf"
SIGMA_TAU, SIGMA_QD, SIGMA_Q = 0.05, 1e-3, 1e-5
GRIPPER = "panda_finger_joint1"


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(str(PANDA))


@pytest.fixture(scope="module")
def base(panda):
    return rd.base_parameters(panda)


def perturbed(model, seed, mass=0.2, shift=0.03):
    """Every body's mass scaled by U(1 - mass, 1 + mass) (its inertia about the com too), its com moved
    by U(-shift, shift) m per axis; no joint damping."""
    rng = np.random.default_rng(seed)
    pi = []
    for b in range(model.nb):
        m, c = model.body_mass[b], model.body_com[b]
        f = rng.uniform(1 - mass, 1 + mass)
        m2, c2 = m * f, c + rng.uniform(-shift, shift, 3)
        I2 = inertia_about_origin(m2, c2, f * inertia_about_com(m, c, model.body_inertia[b]))
        pi.append([m2, *(m2 * c2), I2[0, 0], I2[0, 1], I2[1, 1], I2[0, 2], I2[1, 2], I2[2, 2]])
    return model_with_parameters(model, np.ravel(pi), damping=np.zeros(model.nq))


def run_excitation(true, nominal, ex, duration, seed):
    """Simulate ``true`` following ``ex`` under computed torque with ``nominal`` (1 kHz); returns
    (t, q, qd, tau applied, qdd true) exact, and the noisy recording (q, qd, tau)."""
    w0, z = 30.0, 1.0
    def control(t, q, qd):
        qr, qdr, qddr = (x[0] for x in ex.sample([t]))
        return rd.rnea(nominal, q, qd, qddr + w0 * w0 * (qr - q) + 2 * z * w0 * (qdr - qd))
    q0 = ex.sample([0.0])[0][0]
    r = simulate(true, q0, duration=duration, tau=control, forces=[], constraints=[])
    qdd = rd.aba(true, r.q, r.qd, r.tau)
    rng = np.random.default_rng(seed)
    noisy = (r.q + rng.normal(0, SIGMA_Q, r.q.shape), r.qd + rng.normal(0, SIGMA_QD, r.q.shape),
             r.tau + rng.normal(0, SIGMA_TAU, r.q.shape))
    return dict(t=r.t, q=r.q, qd=r.qd, tau=r.tau, qdd=qdd, noisy=noisy)


def write_bag(path, storage, t, names, q, qd, tau, *, shuffle=True, gripper=True, velocities=True, efforts=True,
              other_publisher=True, seed=0):
    """A rosbag2 of sensor_msgs/JointState on /joint_states written with rosbags' writer: joints in a
    random order per message, an extra gripper joint, and a second publisher naming only the gripper."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_JAZZY)
    JS, Header, Time = (store.types[n] for n in ("sensor_msgs/msg/JointState", "std_msgs/msg/Header",
                                                 "builtin_interfaces/msg/Time"))
    rng = np.random.default_rng(seed)
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3

    def msg(ns, nm, p, v, e):
        return store.serialize_cdr(JS(header=Header(stamp=Time(sec=ns // 10 ** 9, nanosec=ns % 10 ** 9), frame_id=""),
                                      name=list(nm), position=np.asarray(p, float), velocity=np.asarray(v, float),
                                      effort=np.asarray(e, float)), JS.__msgtype__)

    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection("/joint_states", JS.__msgtype__, typestore=store)
        other = writer.add_connection("/tf_static", "std_msgs/msg/String", typestore=store)
        writer.write(other, 1, store.serialize_cdr(store.types["std_msgs/msg/String"](data="x"), "std_msgs/msg/String"))
        for k in range(len(t)):
            ns = 1_700_000_000 * 10 ** 9 + int(round(t[k] * 1e9))
            order = rng.permutation(len(names)) if shuffle else np.arange(len(names))
            nm = [names[i] for i in order]
            p, v, e = q[k, order], qd[k, order], tau[k, order]
            if gripper:
                nm, p, v, e = nm + [GRIPPER], np.append(p, 0.04), np.append(v, 0.0), np.append(e, 1.5)
            writer.write(conn, ns + 20_000, msg(ns, nm, p, v if velocities else [], e if efforts else []))
            if other_publisher and k % 10 == 0:
                writer.write(conn, ns + 30_000, msg(ns, [GRIPPER], [0.04], [0.0], [1.5]))
    return path


@pytest.fixture(scope="module")
def experiment(panda, base):
    """The excitation (optimised briefly), the true Panda, an identification run and a held-out run."""
    ex = rd.excitation_trajectory(panda, period=4.0, harmonics=4, max_iterations=12, base=base, progress=False)
    held = rd.excitation_trajectory(panda, period=3.0, harmonics=4, max_iterations=2, seed=5, base=base,
                                    progress=False)
    true = perturbed(panda, seed=1)
    return dict(ex=ex, true=true, run=run_excitation(true, panda, ex, 4.0, seed=2),
                held=run_excitation(true, panda, held, 3.0, seed=3))


# --- excitation -----------------------------------------------------------------------------------

def test_excitation_respects_its_limits_and_beats_its_start(panda, experiment):
    ex = experiment["ex"]
    t = np.linspace(0.0, ex.period, 20001)
    q, qd, qdd = ex.sample(t)
    tol = 1e-9
    assert np.all(q >= ex.lower - tol) and np.all(q <= ex.upper - 0 + tol)
    assert np.all(ex.lower >= panda.lower_limit + 0.1 - 1e-12) and np.all(ex.upper <= panda.upper_limit - 0.1 + 1e-12)
    assert np.all(np.abs(qd) <= ex.velocity + tol) and np.all(ex.velocity == 0.5 * panda.velocity_limit)
    assert np.all(np.abs(qdd) <= ex.acceleration + tol) and np.all(ex.acceleration == 3.0)
    # at rest at the start and the end of a period, and periodic
    for s in ([0.0], [ex.period]):
        _, v, a = ex.sample(s)
        assert np.abs(v).max() < 1e-12 and np.abs(a).max() < 1e-9
    np.testing.assert_allclose(ex.sample([ex.period])[0], ex.sample([0.0])[0], atol=1e-12)
    # qd and qdd are the derivatives of q
    h = 1e-5
    np.testing.assert_allclose((ex.sample(t[:50] + h)[0] - ex.sample(t[:50] - h)[0]) / (2 * h), qd[:50], atol=1e-6)
    # optimised: a better-conditioned base regressor than the random start, also on a finer sampling
    assert ex.condition < 0.25 * ex.initial_condition, (ex.condition, ex.initial_condition)
    base = rd.base_parameters(panda)
    tt = np.linspace(0, ex.period, 401)[:-1]
    W = base.regressor(panda, *ex.sample(tt)).reshape(-1, base.count)
    assert np.linalg.cond(W) < 1.5 * ex.condition
    assert not ex.interrupted and ex.iterations >= 1


def test_excitation_exports(panda, experiment, tmp_path):
    yaml = pytest.importorskip("yaml")
    ex = experiment["ex"]
    msg = yaml.safe_load(ex.to_yaml(tmp_path / "t.yaml", rate=10.0, start=1.5))
    assert msg["joint_names"] == list(panda.joint_names)
    assert len(msg["points"]) == 41
    p = msg["points"][7]
    assert p["time_from_start"] == {"sec": 2, "nanosec": 200000000}
    q, qd, qdd = ex.sample([0.7])
    np.testing.assert_allclose(p["positions"], q[0], atol=1e-9)
    np.testing.assert_allclose(p["velocities"], qd[0], atol=1e-9)
    np.testing.assert_allclose(p["accelerations"], qdd[0], atol=1e-9)
    ex.to_csv(tmp_path / "t.csv", rate=10.0)
    table = np.loadtxt(tmp_path / "t.csv", delimiter=",", skiprows=2)
    assert table.shape == (41, 1 + 3 * panda.nq)
    np.testing.assert_allclose(table[7, 1:8], q[0], atol=1e-9)
    assert (tmp_path / "t.yaml").read_text().startswith("# robot_dynamics excitation")


def test_excitation_overrides_and_errors(panda, base):
    two = rd.load_urdf(str(ROOT / "urdf" / "textbook" / "two_rod_planar.urdf"), gravity=(0, -9.81, 0))
    ex = rd.excitation_trajectory(two, period=2.0, harmonics=3, max_iterations=3, acceleration={"joint2": 1.0},
                                  velocity=0.4, progress=False)
    _, qd, qdd = ex.sample(np.linspace(0, 2, 4001))
    assert np.abs(qd).max() <= 0.4 + 1e-9 and np.abs(qdd[:, 1]).max() <= 1.0 + 1e-9
    with pytest.raises(rd.InputError, match="unknown joint 'nope'"):
        rd.excitation_trajectory(two, acceleration={"nope": 1.0})
    with pytest.raises(rd.InputError, match="harmonics"):
        rd.excitation_trajectory(two, harmonics=1)


def test_excitation_interrupted_returns_the_best_so_far(panda, base, monkeypatch):
    import scipy.optimize
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        raise KeyboardInterrupt
    monkeypatch.setattr(scipy.optimize, "minimize", interrupted)
    ex = rd.excitation_trajectory(panda, period=2.0, harmonics=3, base=base, progress=False)
    assert calls and ex.interrupted and ex.condition == ex.initial_condition and ex.check_limits() <= 1.0


# --- loading --------------------------------------------------------------------------------------

@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_bag_is_read_by_name(panda, experiment, tmp_path, storage):
    run = experiment["run"]
    q, qd, tau = run["noisy"]
    bag = write_bag(tmp_path / "bag", storage, run["t"], panda.joint_names, q, qd, tau)
    data = rd.load_joint_data(bag, joints=panda)
    assert data.joint_names == panda.joint_names and len(data) == len(run["t"])
    assert data.skipped == len(run["t"]) // 10 + (len(run["t"]) % 10 > 0)        # the gripper-only messages
    np.testing.assert_array_equal(data.q, q)
    np.testing.assert_array_equal(data.qd, qd)
    np.testing.assert_array_equal(data.tau, tau)
    np.testing.assert_allclose(data.t, run["t"], atol=1e-9)
    assert data.derived == ("qdd",) and not data.resampled
    # accelerations: zero-phase filtered velocity noise, away from the ends (filtfilt's transients)
    inner = slice(100, -100)
    err = data.qdd[inner] - run["qdd"][inner]
    rms = np.sqrt(np.mean(err ** 2, axis=0))
    # (accelerations reach 3 rad/s^2; the 10 Hz filter also smooths the 1 kHz control steps)
    assert rms.max() < 0.06 and np.abs(err).max() < 0.5, (rms, np.abs(err).max())
    # a file of the bag, a subset of the joints in another order, and the file's own order
    ext = ".mcap" if storage == "mcap" else ".db3"
    sub = rd.load_joint_data(next(bag.glob("*" + ext)), joints=["panda_joint3", "panda_joint1"])
    np.testing.assert_array_equal(sub.q, q[:, [2, 0]])
    # joints=None: the first message's joints (all later messages must name them)
    with pytest.raises(rd.InputError, match="has no joint 'panda_joint"):
        rd.load_joint_data(bag)
    plain = write_bag(tmp_path / "plain", storage, run["t"][:300], panda.joint_names, q, qd, tau, other_publisher=False)
    first = rd.load_joint_data(plain)
    assert set(first.joint_names) == set(panda.joint_names) | {GRIPPER} and len(first) == 300


def test_bag_errors_name_what_is_missing(panda, tmp_path):
    t = np.arange(200) * 1e-3
    x = np.tile(np.sin(t)[:, None], (1, panda.nq))
    bag = write_bag(tmp_path / "noeffort", "sqlite3", t, panda.joint_names, x, x, x, efforts=False)
    with pytest.raises(rd.InputError, match=r"no joint efforts for panda_joint1, .*panda_joint7"):
        rd.load_joint_data(bag, joints=panda)
    bag = write_bag(tmp_path / "novel", "mcap", t, panda.joint_names, x, x, x, velocities=False)
    with pytest.raises(rd.InputError, match=r"no joint velocities .*velocities='differentiate'"):
        rd.load_joint_data(bag, joints=panda)
    d = rd.load_joint_data(bag, joints=panda, velocities="differentiate")
    assert d.derived == ("qd", "qdd")
    np.testing.assert_allclose(d.qd[50:-50], np.cos(t)[50:-50, None] * np.ones(panda.nq), atol=3e-3)
    with pytest.raises(rd.InputError, match="has no joint 'panda_joint8'"):
        rd.load_joint_data(bag, joints=list(panda.joint_names) + ["panda_joint8"])
    with pytest.raises(rd.InputError, match="has no topic '/arm/joint_states'; its topics: .*/joint_states"):
        rd.load_joint_data(bag, joints=panda, topic="/arm/joint_states")
    with pytest.raises(rd.InputError, match="carries std_msgs/msg/String"):
        rd.load_joint_data(bag, topic="/tf_static")
    empty = write_bag(tmp_path / "empty", "mcap", t[:0], panda.joint_names, x[:0], x[:0], x[:0])
    with pytest.raises(rd.InputError, match="has no messages"):
        rd.load_joint_data(empty, joints=panda)
    with pytest.raises(rd.InputError, match="not a rosbag2 bag"):
        (tmp_path / "lonely").mkdir()
        rd.load_joint_data(tmp_path / "lonely")


def test_npz_and_csv_round_trips_and_irregular_sampling(panda, experiment, tmp_path):
    run = experiment["run"]
    q, qd, tau = run["noisy"]
    data = rd.JointData(t=run["t"], q=q, qd=qd, qdd=run["qdd"], tau=tau, joint_names=panda.joint_names)
    for name in ("d.npz", "d.csv"):
        data.save(tmp_path / name)
        back = rd.load_joint_data(tmp_path / name, joints=panda)
        for k in ("t", "q", "qd", "qdd", "tau"):
            np.testing.assert_array_equal(getattr(back, k), getattr(data, k))
        assert back.derived == ()
    # a simulator run saved as CSV (t, q, qd, tau, energy columns) loads too, columns by name
    from robot_dynamics.simulation import SimulationResult
    SimulationResult(run["t"], q, qd, tau, np.zeros(len(q)), panda.joint_names, 1e-3, "rk4").save(tmp_path / "s.csv")
    rev = list(reversed(panda.joint_names))
    back = rd.load_joint_data(tmp_path / "s.csv", joints=rev)
    np.testing.assert_array_equal(back.tau, tau[:, ::-1])
    assert back.derived == ("qdd",)
    # a gap (a lost message) is refused, or resampled on request
    keep = np.ones(len(q), bool)
    keep[500:503] = False
    gap = rd.JointData(t=run["t"][keep], q=q[keep], qd=qd[keep], qdd=run["qdd"][keep], tau=tau[keep],
                       joint_names=panda.joint_names)
    gap.save(tmp_path / "gap.npz")
    with pytest.raises(rd.InputError, match=r"irregular sampling: the interval at t = 0.499 s is 0.004 s"):
        rd.load_joint_data(tmp_path / "gap.npz")
    fixed = rd.load_joint_data(tmp_path / "gap.npz", resample=True)
    assert fixed.resampled and len(fixed) == len(q)
    np.testing.assert_allclose(np.diff(fixed.t), 1e-3, rtol=1e-9)
    with pytest.raises(rd.InputError, match="cutoff 600 Hz is not below half the sampling rate"):
        rd.load_joint_data(tmp_path / "s.csv", filter=rd.ZeroPhaseFilter(cutoff=600.0))


# --- identification end to end -------------------------------------------------------------------

def test_identified_model_predicts_held_out_torques_and_gravity(panda, experiment, tmp_path):
    run, held, true = experiment["run"], experiment["held"], experiment["true"]
    bag = write_bag(tmp_path / "bag", "mcap", run["t"], panda.joint_names, *run["noisy"])
    data = rd.load_joint_data(bag, joints=panda)
    res = rd.identify(panda, data.q, data.qd, data.qdd, data.tau)
    # held-out run: torques of the true arm (noise-free) against the identified and nominal models
    truth = rd.rnea(true, held["q"], held["qd"], held["qdd"])
    err = res.predict(held["q"], held["qd"], held["qdd"]) - truth
    nominal = rd.rnea(panda, held["q"], held["qd"], held["qdd"]) - truth
    rms, rms_nominal = np.sqrt(np.mean(err ** 2, axis=0)), np.sqrt(np.mean(nominal ** 2, axis=0))
    print("held-out torque RMS per joint, identified:", np.round(rms, 4), "nominal:", np.round(rms_nominal, 3))
    assert rms.max() < 2 * SIGMA_TAU, rms
    # gravity compensation at random poses within the limits
    rng = np.random.default_rng(7)
    Q = rng.uniform(panda.lower_limit, panda.upper_limit, (200, panda.nq))
    g_true = rd.gravity_torques(true, Q)
    g_id = res.predict(Q, np.zeros_like(Q), np.zeros_like(Q))
    e_id, e_nom = np.abs(g_id - g_true).max(), np.abs(rd.gravity_torques(panda, Q) - g_true).max()
    print("max |g - g_true| over 200 poses: identified %.4f N m, nominal %.3f N m" % (e_id, e_nom))
    assert e_id < 0.1 * e_nom and e_id < 0.1
