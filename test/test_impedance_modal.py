"""The joint law's modal damping as the kernel computes it since issue 34's 5 us target (a
diagonal K: one eigen-decomposition of ``K^-1/2 M K^-1/2`` a call, no factor of M; a full K:
M's Cholesky factor as before; nothing kept between calls): the damping
``D = L U diag(2 zeta sqrt(w)) U^T L^T`` (``M = L L^T``, ``L^-1 K L^-T = U diag(w) U^T``)
computed with 40 digits (mpmath) to 1e-12 on random trees and stiffnesses, the closed forms
where every mode is alike, and the same torque for every form of the same state."""
import mpmath
import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.tools.sample import random_urdf

PANDA = rd.load_urdf("urdf/panda_arm.urdf")
RTOL = 1e-12


def at_target(law, q, qd, damping):
    """(the law's torque at its own target q, the torque with the damping matrix given)."""
    return law.torque(q, qd, q), damping @ -qd + rd.nonlinear_effects(law.model, q, qd)


def close(got, want, rtol=RTOL):
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got - want).max()) / scale
    assert err <= rtol, "relative error %.2e > %.0e" % (err, rtol)


def exact_damping(M, K, zeta):
    """(n, n) the modal damping of (K, M) computed with 40 significant digits."""
    with mpmath.workdps(40):
        L = mpmath.cholesky(mpmath.matrix(M.tolist()))
        Li = L ** -1
        A = Li * mpmath.matrix(K.tolist()) * Li.T
        w, U = mpmath.eigsy((A + A.T) / 2)
        D = L * U * mpmath.diag([2 * zeta * mpmath.sqrt(x) for x in w]) * U.T * L.T
        return np.array(D.tolist(), dtype=float)


def spd(rng, n, condition):
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    return Q @ np.diag(np.logspace(0, np.log10(condition), n)) @ Q.T


@pytest.mark.parametrize("seed", range(12))
def test_the_modal_damping_is_exact_on_random_trees(seed):
    """Diagonal stiffnesses (equal and not) and a full one (cond 1e3, where numpy's
    modal_damping with its explicit inverse of L is off by up to 4e-12)."""
    rng = np.random.default_rng(seed)
    model = rd.load_urdf(random_urdf(seed, n_links=4 + seed % 6))
    n = model.nq
    for K in (np.full(n, 80.0), rng.uniform(1.0, 500.0, n), 50.0 * spd(rng, n, 1e3)):
        law = rd.JointImpedance(model, K, damping_ratio=rng.uniform(0.3, 2.0))
        for _ in range(6):
            q = rng.uniform(-2.5, 2.5, n)             # jumps between calls: nothing carries over
            qd = rng.uniform(-2.0, 2.0, n)
            want = exact_damping(rd.mass_matrix(model, q), law.K, law.zeta) @ -qd + rd.nonlinear_effects(model, q, qd)
            close(law.torque(q, qd, q), want)


def test_every_mode_alike_gives_the_closed_form():
    """K = c M(q0): at q0 every generalised eigenvalue of (K, M) is c, so D = 2 zeta sqrt(c) M(q0)
    (one repeated eigenvalue of multiplicity 7); next to q0 the eigenvalues are nearly repeated."""
    rng = np.random.default_rng(1)
    for _ in range(4):
        q0, qd = rng.uniform(-2.0, 2.0, 7), rng.uniform(-1.0, 1.0, 7)
        M0 = rd.mass_matrix(PANDA, q0)
        for c, zeta in ((100.0, 1.0), (2500.0, 0.7)):
            law = rd.JointImpedance(PANDA, c * M0, damping_ratio=zeta)
            close(*at_target(law, q0, qd, 2.0 * zeta * np.sqrt(c) * M0))
            for dq in (1e-9, 1e-6, 1e-3):
                q = q0 + dq
                want = exact_damping(rd.mass_matrix(PANDA, q), law.K, zeta) @ -qd + rd.nonlinear_effects(PANDA, q, qd)
                close(law.torque(q, qd, q), want)


GANTRY = """<robot name="gantry">
  <link name="base"/>
  <link name="x"/>
  <link name="y"/>
  <link name="tool">
    <inertial><mass value="{m}"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="jx" type="prismatic"><parent link="base"/><child link="x"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="100" velocity="1"/></joint>
  <joint name="jy" type="prismatic"><parent link="x"/><child link="y"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="100" velocity="1"/></joint>
  <joint name="jz" type="prismatic"><parent link="y"/><child link="tool"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="100" velocity="1"/></joint>
</robot>"""


def test_a_gantry_with_equal_stiffnesses_is_damped_critically_per_axis():
    """Three prismatic axes moving one mass m: M = m 1, and with K = k 1 every mode is alike:
    D = 2 zeta sqrt(k m) 1 (the spring-mass damping of each axis)."""
    m, k = 3.0, 400.0
    model = rd.load_urdf(GANTRY.format(m=m))
    law = rd.JointImpedance(model, k)
    q, qd = np.array([0.2, -0.3, 0.1]), np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(rd.mass_matrix(model, q), m * np.eye(3), atol=1e-15)
    close(*at_target(law, q, qd, 2.0 * np.sqrt(k * m) * np.eye(3)))
    close(law.damping(q), 2.0 * np.sqrt(k * m) * np.eye(3))


def test_every_form_of_a_state_gives_the_same_torque():
    """C-contiguous float64 vectors go to the kernel as they are; strided, integer, read-only
    and list states are checked and copied: the same torque to the last bit."""
    law = rd.JointImpedance(PANDA, np.linspace(50.0, 200.0, 7))
    q = np.array([0.1, -0.3, 0.05, -2.0, 0.1, 1.8, 0.8])
    qd, q_d = np.full(7, 0.2), q + 0.05
    want = law.torque(q, qd, q_d)
    strided = np.zeros((7, 2))
    strided[:, 0] = q
    frozen = q.copy()
    frozen.flags.writeable = False
    for form in (strided[:, 0], frozen, list(q), tuple(q)):
        np.testing.assert_array_equal(law.torque(form, qd, q_d), want)
    np.testing.assert_array_equal(law.torque(q.round(), qd, q_d), law.torque(q.round().astype(int), qd, q_d))
    with pytest.raises(rd.InputError, match="7 values"):
        law.torque(q[:6], qd, q_d)
    with pytest.raises(rd.InputError, match="finite"):
        law.torque(q, np.full(7, np.nan), q_d)
