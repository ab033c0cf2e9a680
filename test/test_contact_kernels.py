"""The compiled detection kernels (algorithms/detect_kernels.py) against their numpy and plain-Python
reference (contact/plane.py, the broad phase's formula), on random poses: the same contacts to 1e-12."""

import numpy as np
import pytest

from robot_dynamics.algorithms import detect_kernels as kernels
from robot_dynamics.contact import plane
from robot_dynamics.tools.sample import PANDA_READY as READY, example_robot_data_dir, panda_table_scene as panda_scene

TOL = 1e-12


def rotation(rng, angle=np.pi):
    """A random rotation of at most ``angle`` [rad]."""
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    t = rng.uniform(0, angle)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(t) * K + (1 - np.cos(t)) * K @ K


def pose(R, p):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def rows():
    return np.empty((32, 3)), np.empty(32), np.empty(32, dtype=np.int64), np.empty(3)


def same(found, k, out):
    """The kernel's k rows ``out`` equal the reference's ``found`` (None or (points, normal, depths, features))."""
    points, depths, features, normal = out
    if found is None:
        assert k == 0
        return
    assert k == len(found[2])
    assert np.abs(points[:k] - found[0]).max() <= TOL
    assert np.abs(normal - found[1]).max() <= TOL
    assert np.abs(depths[:k] - found[2]).max() <= TOL
    assert features[:k].tolist() == list(found[3])


@pytest.mark.parametrize("kind", ["sphere", "capsule", "box"])
def test_plane_contacts_equal_the_closed_form(kind):
    rng = np.random.default_rng(35)
    code = {"sphere": kernels.SPHERE, "capsule": kernels.CAPSULE, "box": kernels.BOX}[kind]
    touching = 0
    for _ in range(300):
        size = {"sphere": [rng.uniform(0.01, 0.1)], "capsule": [rng.uniform(0.01, 0.05), rng.uniform(0.02, 0.2)],
                "box": rng.uniform(0.01, 0.2, 3)}[kind]
        ground = pose(rotation(rng, 0.5), rng.uniform(-0.5, 0.5, 3))
        T = pose(rotation(rng), ground[:3, 3] + ground[:3, 2] * rng.uniform(-0.05, 0.15) + rng.uniform(-0.1, 0.1, 3))
        full = np.zeros(3)
        full[:len(size)] = size
        out = rows()
        k = kernels.plane_contacts(code, full, T, ground, *out)
        found = plane.plane_contacts(kind, tuple(size), T, ground)
        same(found, k, out)
        touching += found is not None
    assert 50 < touching < 300                     # both outcomes were exercised


def test_corners_over_face_equal_the_python_form():
    """Box on a box face: small tilts, any yaw, inside and overhanging the face (all three outcomes)."""
    rng = np.random.default_rng(36)
    outcomes = {plane.NOT_FACE: 0, plane.GENERAL: 0, plane.DONE: 0}
    for i in range(400):
        size_b = rng.uniform(0.05, 0.6, 3)
        size_a = rng.uniform(0.02, 0.1, 3)
        Rb = rotation(rng, 0.3)
        tilt = rng.uniform(0, 0.02) if i % 4 else rng.uniform(0.02, 0.5)
        yaw = rng.uniform(-np.pi, np.pi)
        Ra = Rb @ rotation(rng, tilt) @ np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0],
                                                 [0, 0, 1]])
        over = rng.uniform(-0.6, 0.6, 2) * size_b[:2]
        height = 0.5 * size_b[2] + 0.5 * size_a[2] + rng.uniform(-0.003, 0.002)
        Tb = pose(Rb, rng.uniform(-1, 1, 3))
        Ta = pose(Ra, Tb[:3, 3] + Rb @ [over[0], over[1], height])
        normal = Rb @ rotation(rng, 0.012)[:, 2]
        scratch, out = np.empty((8, 4)), rows()
        status, k = kernels.corners_over_face(Ta, size_a, Tb, size_b, normal, scratch, *out)
        ref_status, found = plane._corners_over_face(Ta, tuple(size_a), Tb, tuple(size_b), normal)
        assert status == ref_status
        outcomes[status] += 1
        if status == plane.DONE:
            same(found, k, out)
    assert min(outcomes.values()) > 10, outcomes


@pytest.mark.skipif(example_robot_data_dir() is None, reason="example-robot-data not installed")
def test_broad_phase_equals_the_numpy_form():
    """The Panda (hulls, finger boxes, SRDF), the ground, a table, three boxes: random arm and box poses."""
    from robot_dynamics.contact.detect import body_poses
    model, world, detector = panda_scene()
    rng = np.random.default_rng(37)
    counts = set()
    for _ in range(100):
        q = rng.uniform(model.lower_limit, model.upper_limit)
        free = np.array([pose(rotation(rng), rng.uniform([0.2, -0.6, 0.3], [0.9, 0.6, 0.6])) for _ in range(3)])
        detector.shape_poses(body_poses(model, q), free)
        got = detector.candidates().tolist()
        assert got == numpy_candidates(detector)
        counts.add(len(got))
    assert len(counts) > 3


def numpy_candidates(d):
    """The broad phase in numpy, as contact/detect.py computed it before its kernel."""
    c, T = d.collision, d._pose
    R = T[:, :3, :3]
    centre = (R @ c.centre[:, :, None])[:, :, 0] + T[:, :3, 3]
    half = (np.abs(R) @ d._half[:, :, None])[:, :, 0]
    box = np.concatenate([centre - half, centre + half], axis=1)
    A, B = box[d._box_a], box[d._box_b]
    x = (A[:, :3] <= B[:, 3:]) & (B[:, :3] <= A[:, 3:])
    out = d._box_pairs[x[:, 0] & x[:, 1] & x[:, 2]]
    below = centre @ d._planes_n.T - half @ np.abs(d._planes_n).T <= d._planes_d
    return np.concatenate([out, d._plane_pairs[below[d._plane_a, d._plane_k]]]).tolist()


class PythonDetector:
    """A Detector whose broad phase, plane closed forms and box-on-face run the numpy / Python reference
    (contact/detect.py as it was before its kernels)."""

    @staticmethod
    def make(collision):
        from robot_dynamics.contact.detect import Detector

        class Reference(Detector):
            def candidates(self):
                return np.array(numpy_candidates(self), dtype=np.int64)

            def _plane(self, p):
                c = self.collision
                a, b = int(c.pair_a[p]), int(c.pair_b[p])
                found = plane.plane_contacts(c.shapes[a].kind, c.shapes[a].size, self._pose[a], self._pose[b])
                if found is not None:
                    points, n, depths, features = found
                    self.contacts.add_rows(c.shape_body[a], c.shape_body[b], points, n, depths, a, b, p, features)

            def _box_face(self, p, a, b):
                c = self.collision
                n = -np.asarray(self._result.getContacts()[0].normal)
                found = plane.box_on_face((self._pose[a], c.shapes[a].size), (self._pose[b], c.shapes[b].size), n)
                if found is None:
                    return False
                points, n, depths, features = found
                self.contacts.add_rows(c.shape_body[a], c.shape_body[b], points, n, depths, a, b, p, features)
                return True
        return Reference(collision)


@pytest.mark.skipif(example_robot_data_dir() is None, reason="example-robot-data not installed")
def test_detect_equals_the_python_detector():
    """The whole detection, compiled and reference, on the Panda scene: the arm near the table (its hull
    and finger boxes in it), boxes resting with small tilts, sunk a few mm, some over the table's edge."""
    from robot_dynamics.contact.detect import body_poses
    model, world, detector = panda_scene()
    reference = PythonDetector.make(detector.collision)
    rng = np.random.default_rng(38)
    sizes = [f.shape.size for f in world.free_bodies]
    total, arm, overhang = 0, 0, 0                 # rows; of the arm; boxes with 1-3 rows (over an edge, tilted)
    for _ in range(60):
        q = READY + rng.normal(scale=0.15, size=model.nq) * [1, 1, 1, 1, 1, 1, 1, 0]
        free = np.array([pose(rotation(rng, 0.008) @ yawed(y), [rng.uniform(0.1, 1.0), rng.uniform(-0.65, 0.65),
                                                                 0.40 + s[2] / 2 + rng.uniform(-4e-3, 1e-3)])
                         for s, y in zip(sizes, rng.uniform(-np.pi, np.pi, 3))])
        P = body_poses(model, q)
        got, ref = detector.detect(P, free), reference.detect(P, free)
        assert got.n == ref.n
        n = got.n
        for field in ("body_a", "body_b", "geom_a", "geom_b", "pair", "feature"):
            assert getattr(got, field)[:n].tolist() == getattr(ref, field)[:n].tolist(), field
        for field in ("point", "normal", "depth"):
            assert np.abs(getattr(got, field)[:n] - getattr(ref, field)[:n]).max(initial=0.0) <= TOL, field
        total += n
        arm += int((got.body_a[:n] < model.nb).sum())
        overhang += sum(1 for f in range(model.nb, model.nb + 3) if 0 < (got.body_a[:n] == f).sum() < 4)
    print("rows %d, of the arm %d, boxes with 1-3 rows %d" % (total, arm, overhang))
    assert total > 300 and arm > 50 and overhang > 5, (total, arm, overhang)


def yawed(y):
    return np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
