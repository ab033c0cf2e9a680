"""Contact dynamics (issue 35) against MuJoCo: the same four scenes written twice,
as our world file (YAML) + ``rd.Simulator`` with a ``ContactStepper``, and as
MJCF for MuJoCo, with the same masses, inertias (MuJoCo computes a geom's from
its mass, as ``FreeBodies`` does: tested in test_contact_geometry), Coulomb mu,
gravity 9.81, a 1 ms step and RK4 in both:

- a box launched at v0 slides to rest at ``v0^2 / (2 mu g)`` (closed form too);
- a sphere launched sliding without spin rolls at ``5/7 v0`` (closed form) and
  its position after 0.4 s;
- a stack of two boxes at rest: the contact forces ``(m_bottom + m_top) g`` on
  the ground and ``m_top g`` between the boxes, and the rest positions;
- the bundled Panda pressing a flange sphere on a table with ``tau = g(q) +
  J^T F + K_p (q_c - q) - K_d qd`` (the same law, computed by this library from
  each simulator's state): the contact force at rest against MuJoCo's
  ``mj_contactForce``, and the flange's position.

Bounds (the issue's): rest positions within 1 mm, contact forces at rest within 2 %.

The two contact models are not mapped onto each other, and need not be for what
is compared. Ours is a spring-damper on each contact's effective mass, ``k =
m_c w^2``, ``c = 2 zeta m_c w`` (w = 0.2 / dt = 200 rad/s, zeta = 1); at rest
it sinks ``F / k`` (0.25 mm for a cube's corner, ``g / w^2``). MuJoCo's is a
regularised velocity-level constraint: reference acceleration ``-b v - k r``
from ``solref = (0.02 s, 1)`` (about 50 rad/s, also scaled by the effective
mass) and an impedance ``d`` from ``solimp = (0.9, 0.95, 1 mm)`` that lets the
constraint give; at rest it sinks ``(1 - d) / d`` of what ``a_ref`` asks
(measured here: 0.026 mm for the stack's contacts). No choice of solref
reproduces our law stage by stage (MuJoCo solves one impulse a step with
``d``'s regularisation), so both keep their own defaults, and the compared
quantities do not depend on the stiffness beyond the penetration: at rest the
forces are the statics' (the stack and the point contact are determined: the
sum over a face's corners is the weight whatever their split), the sliding
box's stop is fixed by ``mu m g`` (the friction force of both models while
sliding), and the rest positions differ by the two penetrations (ours ``F / k``
< 0.6 mm here, MuJoCo's < 0.03 mm) plus our tangential spring's deflection
``mu f_n / k_t`` when a slide ends (0.1 mm here).
"""
import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.contact.analytic import PlaneDetector
from robot_dynamics.contact.collision import CollisionModel
from robot_dynamics.contact.detect import Detector
from robot_dynamics.contact.dynamics import ContactParameters
from robot_dynamics.contact.free_bodies import FreeBodies
from robot_dynamics.contact.stepping import ContactStepper
from robot_dynamics.contact.world import load_world

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("coal")

G = 9.81
MM = 1e-3                                                  # the position bound [m]
MJCF = """<mujoco>
  <option timestep="0.001" gravity="0 0 -9.81" integrator="RK4"/>
  <worldbody>
    <geom type="plane" size="0 0 1" friction="{mu} 0 0"/>
    {bodies}
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(rd.bundled_path("panda_arm.urdf"))


def our_scene(model, world_text, mu):
    """A world file's ground and free bodies in rd.Simulator (the arm held at its
    neutral pose, far from them: it only carries the simulator)."""
    world = load_world(world_text)
    bodies = FreeBodies.from_world(world)
    stepper = ContactStepper(model, Detector(CollisionModel(model, [], world)), bodies,
                             ContactParameters(friction=mu))
    sim = rd.Simulator(model, q0=model.neutral(), integrator="rk4", contact=stepper)
    sim.set_command(model.neutral(), mode="position")
    return sim, stepper, bodies


def mujoco_scene(bodies, mu, velocity=None):
    """The same ground and free bodies in MuJoCo (MJCF); velocity: qvel[:3] of the first body."""
    m = mujoco.MjModel.from_xml_string(MJCF.format(mu=mu, bodies=bodies))
    d = mujoco.MjData(m)
    if velocity is not None:
        d.qvel[:3] = velocity
    return m, d


def mujoco_forces(m, d):
    """{(geom1, geom2): total contact force on geom2, world frame} from mj_contactForce."""
    forces, f = {}, np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        mujoco.mj_contactForce(m, d, i, f)
        key = (int(c.geom[0]), int(c.geom[1]))
        forces[key] = forces.get(key, np.zeros(3)) + c.frame.reshape(3, 3).T @ f[:3]
    return forces


def test_box_slides_to_rest_at_v0_squared_over_2_mu_g(panda):
    mu, v0, x0 = 0.3, 1.0, 1.0
    sim, stepper, bodies = our_scene(panda, """
ground: {height: 0.0}
free:
  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 1.0, position: [1.0, 0.0, 0.05], linear_velocity: [1.0, 0, 0]}
""", mu)
    sim.step(500)                                          # stops after v0 / (mu g) = 0.34 s
    m, d = mujoco_scene('<body pos="1 0 0.05"><freejoint/>'
                        '<geom type="box" size="0.05 0.05 0.05" mass="1" friction="%r 0 0"/></body>' % mu,
                        mu, [v0, 0, 0])
    mujoco.mj_step(m, d, 500)
    assert np.abs(bodies.v[0]).max() < 1e-4 and np.abs(d.qvel).max() < 1e-3        # both at rest (MuJoCo: 1.4e-4 rad/s)
    rest = x0 + v0 ** 2 / (2 * mu * G)
    assert abs(bodies.p[0, 0] - rest) < MM                 # measured 0.10 mm
    assert abs(d.qpos[0] - rest) < MM                      # measured 0.19 mm
    assert np.linalg.norm(bodies.p[0] - d.qpos[:3]) < MM   # measured 0.4 mm (ours sinks 0.25 mm)


def test_sphere_rolls_at_five_sevenths_of_its_launch_speed(panda):
    mu, v0, r, t = 0.3, 1.0, 0.05, 0.4
    sim, stepper, bodies = our_scene(panda, """
ground: {height: 0.0}
free:
  - {name: ball, shape: sphere, size: [0.05], mass: 1.0, position: [0.0, 0.0, 0.05], linear_velocity: [1.0, 0, 0]}
""", mu)
    sim.step(int(round(t / sim.dt)))
    m, d = mujoco_scene('<body pos="0 0 0.05"><freejoint/>'
                        '<geom type="sphere" size="0.05" mass="1" friction="%r 0 0"/></body>' % mu, mu, [v0, 0, 0])
    mujoco.mj_step(m, d, int(round(t / m.opt.timestep)))
    t1 = 2 * v0 / (7 * mu * G)                             # the slip ends: v = v0 - mu g t = 5/2 mu g t
    x = v0 * t1 - 0.5 * mu * G * t1 ** 2 + 5 / 7 * v0 * (t - t1)
    assert abs(d.qvel[0] - 5 / 7 * v0) < 5e-3 * v0 and abs(d.qpos[0] - x) < MM     # the MJCF scene: 0.007 %, 0.14 mm
    assert abs(bodies.v[0, 0] - 5 / 7 * v0) < 5e-3 * v0                            # measured -0.065 %
    assert abs(bodies.w[0, 1] * r - bodies.v[0, 0]) < 1e-3 * v0                    # rolling, not slipping: 2e-5
    assert abs(bodies.p[0, 0] - x) < MM and abs(bodies.p[0, 0] - d.qpos[0]) < MM   # 0.14 mm, 0.28 mm


def test_stack_of_two_boxes_carries_its_weights(panda):
    mu, m_bottom, m_top = 0.5, 2.0, 1.0
    sim, stepper, bodies = our_scene(panda, """
ground: {height: 0.0}
free:
  - {name: bottom, shape: box, size: [0.2, 0.2, 0.1], mass: 2.0, position: [0.0, 0.0, 0.05]}
  - {name: top, shape: box, size: [0.1, 0.1, 0.1], mass: 1.0, position: [0.0, 0.0, 0.15]}
""", mu)
    sim.step(300)
    m, d = mujoco_scene('<body pos="0 0 0.05"><freejoint/><geom type="box" size="0.1 0.1 0.05" mass="2" '
                        'friction="%r 0 0"/></body><body pos="0 0 0.15"><freejoint/>'
                        '<geom type="box" size="0.05 0.05 0.05" mass="1" friction="%r 0 0"/></body>' % (mu, mu), mu)
    mujoco.mj_step(m, d, 300)
    nb = panda.nb                                          # free body k is body nb + k
    a, b, point, normal, F = stepper.wrenches()
    on_ground = F[(a == nb) & (b == -1)].sum(axis=0)       # the ground's push on the bottom box
    on_bottom = F[(a == nb) & (b == nb + 1)].sum(axis=0)   # the top box's push on the bottom box
    theirs = mujoco_forces(m, d)                           # geoms: 0 ground, 1 bottom, 2 top
    pairs = ((on_ground, theirs[(0, 1)], (m_bottom + m_top) * G), (-on_bottom, theirs[(1, 2)], m_top * G))
    for ours, mj, weight in pairs:
        assert abs(ours[2] - weight) < 0.02 * weight and abs(mj[2] - weight) < 0.02 * weight
        assert np.linalg.norm(ours - mj) < 0.02 * weight   # measured 1e-6 relative
    assert np.abs(bodies.v).max() < 1e-4 and np.abs(d.qvel).max() < 1e-4
    mj_positions = d.qpos.reshape(2, 7)[:, :3]
    assert np.abs(bodies.p - mj_positions).max() < MM     # measured 0.80 mm: the top sinks both contacts' F / k


def test_panda_pressing_on_a_table(panda):
    """The flange (a 2 cm sphere 10 cm out of panda_link8) touching a table plane at
    pose Q0, pushed down with 100 N by J^T F on gravity compensation, held in the
    null space by a joint PD on Q0."""
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785])
    r, mu, push = 0.02, 1.0, np.array([0.0, 0.0, -100.0])
    kp, kd = 50.0, 10.0                                    # [N m/rad], [N m s/rad]
    T = rd.link_pose(panda, q0, "panda_link8")
    table = (T[:3, :3] @ [0, 0, 0.1] + T[:3, 3])[2] - r    # the plane the flange touches at q0

    def law(q, qd):
        J = rd.jacobian(panda, q, "panda_link8", (0.0, 0.0, 0.1))[:3]
        return rd.gravity_torques(panda, q) + J.T @ push + kp * (q0 - q) - kd * qd

    def flange(q):
        T = rd.link_pose(panda, q, "panda_link8")
        return T[:3, :3] @ [0, 0, 0.1] + T[:3, 3]

    l8 = panda.link_index("panda_link8")
    P = panda.link_placement[l8]
    detector = PlaneDetector([dict(body=panda.link_body[l8], type="sphere", size=(r,),
                                   position=P[:3, :3] @ [0, 0, 0.1] + P[:3, 3])], [((0, 0, table), (0, 0, 1))])
    stepper = ContactStepper(panda, detector, parameters=ContactParameters(friction=mu))
    sim = rd.Simulator(panda, q0=q0, integrator="rk4", contact=stepper)
    for _ in range(1000):
        sim.set_command(law(sim.q, sim.qd), mode="effort")
        sim.step()

    m, d = panda_in_mujoco(r, table, mu)
    qa = [m.joint(n).qposadr[0] for n in panda.joint_names]
    va = [m.joint(n).dofadr[0] for n in panda.joint_names]
    d.qpos[qa] = q0
    for _ in range(1000):
        d.qfrc_applied[va] = law(d.qpos[qa], d.qvel[va])
        mujoco.mj_step(m, d)

    a, b, point, normal, F = stepper.wrenches()
    theirs = mujoco_forces(m, d)
    assert len(a) == 1 and list(theirs) == [(0, 1)]        # one contact, the table (geom 0) on the flange (1)
    assert np.abs(sim.qd).max() < 1e-3 and np.abs(d.qvel).max() < 1e-3          # at rest
    assert 95.0 < F[0, 2] < 105.0                          # about the 100 N pushed
    assert np.linalg.norm(F[0] - theirs[(0, 1)]) < 0.02 * np.linalg.norm(theirs[(0, 1)])   # measured 1.3e-4
    assert np.linalg.norm(flange(sim.q) - flange(d.qpos[qa])) < MM               # measured 0.03 mm


def panda_in_mujoco(r, table, mu):
    """The bundled Panda through MuJoCo's URDF compiler (the inertias test_simulation_mujoco
    checks), with the flange sphere on panda_link8 and the table plane added by MjSpec."""
    text = open(rd.bundled_path("panda_arm.urdf")).read()
    text = text[text.index("<robot"):]                     # from_xml_string wants no declaration
    head = text.index(">") + 1
    text = (text[:head] + '<mujoco><compiler discardvisual="true" balanceinertia="false" fusestatic="false"/>'
            '</mujoco>' + text[head:])
    spec = mujoco.MjSpec.from_string(text)
    spec.option.timestep = 1e-3
    spec.option.gravity = [0.0, 0.0, -G]
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], pos=[0, 0, table], friction=[mu, 0, 0])
    spec.body("panda_link8").add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[r, 0, 0], pos=[0, 0, 0.1],
                                      friction=[mu, 0, 0])
    m = spec.compile()
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)   # far from the limits; ours are a force model
    return m, mujoco.MjData(m)
