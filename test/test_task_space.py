"""Task-space kinematics (robot_dynamics/algorithms/task_space.py, task_kernels.py) against
Pinocchio: the pose of every link frame, its Jacobian (``getFrameJacobian``,
LOCAL_WORLD_ALIGNED), ``Jdot qd`` (``getFrameClassicalAcceleration`` with qdd = 0) and the
operational-space inertia ``(J M^-1 J^T)^-1`` (M^-1 from ``computeMinverse``), to 1e-10
(relative to the largest entry, at least 1), on the bundled arms, random trees with fixed,
floating and planar bases; the ``data=``/``out=`` forms and batches give the plain calls'
numbers. Pinocchio's models and coordinate maps are test_pinocchio.Pair (fixed bases, mimic
joints through G) and test_floating_base.Reference (roots).
"""
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.algorithms.task_space import frame_jdot_qd  # noqa: E402
from robot_dynamics.tools.sample import random_urdf  # noqa: E402

from reporting import write_lines  # noqa: E402
from test_floating_base import Reference, random_state  # noqa: E402
from test_pinocchio import Pair  # noqa: E402

TOL = 1e-10
WORST = {}
BUNDLED = [p for p in rd.bundled_models() if p.endswith(".urdf")]
TREES = {"tree%d" % s: dict(seed=s, n_links=9, mimic=s == 3, p_continuous=0.0 if s == 3 else 0.15, p_massless=0.0)
         for s in range(6)}                # tree3: mimic joints (test_pinocchio.Pair maps no continuous + mimic)


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    if WORST:
        write_lines(request, ["", "task space vs Pinocchio, worst relative errors:"]
                    + ["  %-12s %.1e" % kv for kv in sorted(WORST.items())])


def close(name, ours, ref, tol=TOL):
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    err = float(np.max(np.abs(ours - ref))) / max(1.0, float(np.max(np.abs(ref))))
    WORST[name] = max(WORST.get(name, 0.0), err)
    assert err <= tol, "%s: relative error %.2e > %.0e" % (name, err, tol)


def lambda_reference(J, Minv):
    """(Lambda or None, expect_singular): Lambda where J M^-1 J^T is well conditioned; None where it
    is ill conditioned (no 1e-10 claim there); expect_singular where its rank is below 6 and its
    non-zero part well conditioned (the refusal is then certain: the first zero pivot of the
    Cholesky factor is a rounding error far below 1e-9 of its diagonal)."""
    A = J @ Minv @ J.T
    s = np.linalg.svd(A, compute_uv=False)
    rank = int(np.sum(s > 1e-12 * s[0]))
    if rank < 6:
        return None, rank > 0 and s[rank - 1] > 1e-5 * s[0]
    if s[0] / s[-1] > 1e5:
        return None, False
    return np.linalg.inv(A), False


def check_frame(model, q, qd, link, fid, pm, pd, G, Minv, point=None):
    """Pose, J, Jdot qd and Lambda of one link frame against Pinocchio's (its data already at q, qd, 0)."""
    close("pose", rd.link_pose(model, q, link), pd.oMf[fid].homogeneous)
    J = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).reshape(6, -1) @ G     # (6,) for one joint
    close("jacobian", rd.jacobian(model, q, link), J)
    acc = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector
    close("jdot_qd", rd.jacobian_derivative_times_qd(model, q, qd, link), acc)
    Lambda, singular = lambda_reference(J, Minv)
    if Lambda is not None:
        scale = max(1.0, np.abs(Lambda).max())
        close("Lambda", rd.operational_space_inertia(model, q, link) / scale, Lambda / scale)
    elif singular:
        with pytest.raises(rd.SingularityError, match="not positive definite"):
            rd.operational_space_inertia(model, q, link)


def minverse(pm, pd, qp, G):
    """M^-1 in our coordinates: Pinocchio's computeMinverse when G is a permutation (no mimic
    joints), else the inverse of G^T M_pin G (the mimic-coupled model's own M)."""
    if G.shape[0] == G.shape[1] and np.array_equal(np.abs(G).sum(axis=0), np.ones(G.shape[1])):
        Mi = pin.computeMinverse(pm, pd, qp)
        return G.T @ (np.triu(Mi) + np.triu(Mi, 1).T) @ G
    M = pin.crba(pm, pd, qp)
    return np.linalg.inv(G.T @ (np.triu(M) + np.triu(M, 1).T) @ G)


def fixed_states(model, rng, count=3):
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    return [(rng.uniform(lo, hi), rng.uniform(-2, 2, model.nv)) for _ in range(count)]


def fixed_pair(name, tmp_path):
    if name in TREES:
        path = tmp_path / (name + ".urdf")
        path.write_text(random_urdf(**TREES[name]))
        return Pair(name, path)
    return Pair(name, rd.bundled_path(name))


@pytest.mark.parametrize("name", BUNDLED + list(TREES))
def test_every_link_frame_agrees_with_pinocchio_on_a_fixed_base(name, tmp_path):
    pair = fixed_pair(name, tmp_path)
    model, pm, pd, G = pair.rd, pair.pm, pair.pd, pair.G
    rng = np.random.default_rng(7)
    for q, qd in fixed_states(model, rng):
        qp = pair.to_pin_q(q)
        pin.forwardKinematics(pm, pd, qp, G @ qd, np.zeros(pm.nv))
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        Minv = minverse(pm, pd, qp, G)
        pin.forwardKinematics(pm, pd, qp, G @ qd, np.zeros(pm.nv))     # computeMinverse left other kinematics
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        for link in model.link_names:
            check_frame(model, q, qd, link, pair.fid[link], pm, pd, G, Minv)


ROOTED = {"panda floating": ("urdf/panda_arm.urdf", "floating", None),
          "panda planar": ("urdf/panda_arm.urdf", "planar", None),
          "tree floating": (None, "floating", dict(seed=7, n_links=7, p_massless=0.0)),
          "tree mimic floating": (None, "floating", dict(seed=11, n_links=9, mimic=True, p_massless=0.0)),
          "tree planar": (None, "planar", dict(seed=5, n_links=7, p_massless=0.0))}


@pytest.mark.parametrize("name", ROOTED)
def test_every_link_frame_agrees_with_pinocchio_on_a_floating_or_planar_base(name, tmp_path):
    path, kind, tree = ROOTED[name]
    if tree is not None:
        path = tmp_path / "tree.urdf"
        path.write_text(random_urdf(**tree))
    model = rd.load_urdf(str(path), root_joint=kind)
    ref = Reference(path, model)
    pm, pd, G = ref.pm, ref.pd, ref.G
    rng = np.random.default_rng(8)
    for _ in range(2):
        q, v, _, _ = random_state(model, rng)
        qp = ref.q(q)
        Minv = minverse(pm, pd, qp, G)
        pin.forwardKinematics(pm, pd, qp, G @ v, np.zeros(pm.nv))
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        for link in model.link_names:
            if pm.existFrame(link, pin.BODY):
                check_frame(model, q, v, link, pm.getFrameId(link, pin.BODY), pm, pd, G, Minv)


def test_a_point_on_the_link_moves_as_the_link_frame_says():
    """The ``point`` argument: the pose's origin is T x, the Jacobian's linear rows J_v - [r x] J_w,
    Jdot qd's linear rows a + alpha x r + w x (w x r), with r = R x (rigid-body kinematics)."""
    model = rd.load_urdf("urdf/panda_arm.urdf")
    rng = np.random.default_rng(9)
    x = np.array([0.02, -0.05, 0.11])
    for q, qd in fixed_states(model, rng):
        T0, Tx = rd.link_pose(model, q, "panda_link7"), rd.link_pose(model, q, "panda_link7", x)
        r = T0[:3, :3] @ x
        close("point", Tx[:3, 3], T0[:3, 3] + r)
        close("point", Tx[:3, :3], T0[:3, :3])
        J0, Jx = rd.jacobian(model, q, "panda_link7"), rd.jacobian(model, q, "panda_link7", x)
        close("point", Jx[:3], J0[:3] - np.cross(r, J0[3:].T).T)
        a0 = rd.jacobian_derivative_times_qd(model, q, qd, "panda_link7")
        ax = rd.jacobian_derivative_times_qd(model, q, qd, "panda_link7", x)
        w = J0[3:] @ qd
        close("point", ax, np.r_[a0[:3] + np.cross(a0[3:], r) + np.cross(w, np.cross(w, r)), a0[3:]])


@pytest.mark.parametrize("name", ["urdf/panda_arm.urdf", "urdf/ur5.urdf", "tree2"])
def test_data_and_out_forms_and_batches_give_the_plain_calls_numbers(name, tmp_path):
    if name in TREES:
        path = tmp_path / "t.urdf"
        path.write_text(random_urdf(**TREES[name]))
        name = str(path)
    model = rd.load_urdf(name)
    data = rd.Data(model)
    depth = [len(rd.jacobian(model, np.zeros(model.nq), l).any(axis=0).nonzero()[0]) for l in model.link_names]
    link = model.link_names[int(np.argmax(depth))]                  # the link most joints move
    rng = np.random.default_rng(10)
    Q = rng.uniform(-1.5, 1.5, (3, 2, model.nq))
    QD = rng.uniform(-2, 2, (3, 2, model.nv))
    calls = [(rd.link_pose, (), (4, 4)), (rd.jacobian, (), (6, model.nv)),
             (rd.jacobian_derivative_times_qd, (QD,), (6,)), (rd.operational_space_inertia, (), (6, 6))]
    for f, extra, tail in calls:
        if f is rd.operational_space_inertia and max(depth) < 6:
            continue
        batch = f(model, Q, *extra, link)
        assert batch.shape == (3, 2) + tail
        for i in np.ndindex(3, 2):
            one = f(model, Q[i], *(e[i] for e in extra), link)
            np.testing.assert_array_equal(batch[i], one)
            out = np.full(tail, np.nan)
            assert f(model, Q[i], *(e[i] for e in extra), link, data=data, out=out) is out
            np.testing.assert_array_equal(out, one)
            np.testing.assert_array_equal(f(model, list(Q[i]), *(list(e[i]) for e in extra), link), one)
        out = np.empty((3, 2) + tail)
        assert f(model, Q, *extra, link, data=data, out=out) is out
        np.testing.assert_array_equal(out, batch)


def test_the_control_loop_calls_allocate_nothing():
    import tracemalloc
    model = rd.load_urdf("urdf/panda_arm.urdf")
    data, q, qd = rd.Data(model), np.full(7, 0.3), np.full(7, 0.5)
    outs = [np.empty((4, 4)), np.empty((6, 7)), np.empty(6), np.empty((6, 6))]
    x = np.zeros(3)

    def loop():
        rd.link_pose(model, q, "panda_link8", x, data=data, out=outs[0])
        rd.jacobian(model, q, "panda_link8", x, data=data, out=outs[1])
        frame_jdot_qd(model, q, qd, "panda_link8", x, data=data, out=outs[2])
        rd.operational_space_inertia(model, q, "panda_link8", x, data=data, out=outs[3])
    loop()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(200):
        loop()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename") if s.size_diff > 0)
    assert grown < 2000, "the control-loop calls allocated %d bytes over 200 rounds" % grown


def test_bad_input_says_what_was_expected():
    model = rd.load_urdf("urdf/panda_arm.urdf")
    with pytest.raises((rd.InputError, ValueError), match="panda_link8"):
        rd.link_pose(model, np.zeros(7), "flange")
    with pytest.raises(rd.InputError, match="point"):
        rd.jacobian(model, np.zeros(7), "panda_link8", (0.0, 1.0))
    with pytest.raises(rd.InputError, match="7"):
        rd.operational_space_inertia(model, np.zeros(6), "panda_link8")
    with pytest.raises(rd.InputError, match="out"):
        rd.jacobian(model, np.zeros(7), "panda_link8", data=rd.Data(model), out=np.empty((6, 6)))
    with pytest.raises(rd.SingularityError, match="not positive definite"):
        rd.operational_space_inertia(model, np.zeros(7), "panda_link8")      # stretched: a singular pose
