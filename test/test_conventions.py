"""Each convention written in the package docstring, checked on a model
simple enough to work out by hand: a 1 kg point mass at x = L on an arm
that turns about the base y axis (z up)."""
import numpy as np
import pytest

import robot_dynamics as rd

L, MASS = 0.7, 1.3
ARM = """<robot name="pointer">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="%r 0 0"/><mass value="%r"/>
    <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit effort="20" velocity="2" lower="-3" upper="3"/></joint>
  <joint name="tool" type="fixed"><parent link="arm"/><child link="tip"/><origin xyz="%r 0 0"/></joint>
</robot>""" % (L, MASS, L)


@pytest.fixture(scope="module")
def arm():
    with pytest.warns(rd.InertiaWarning):          # a point mass has no rotational inertia
        return rd.load_urdf(ARM)


def test_gravity_default_is_minus_z_and_torques_hold_the_arm(arm):
    np.testing.assert_array_equal(arm.gravity, [0, 0, -9.81])
    # horizontal arm: the weight turns it about +y (x towards -z), so holding needs -m g L
    assert rd.gravity_torques(arm, [0.0])[0] == pytest.approx(-MASS * 9.81 * L)
    assert rd.gravity_torques(arm, [np.pi / 2])[0] == pytest.approx(0.0, abs=1e-12)   # hanging down


def test_gravity_torque_is_gradient_of_potential(arm):
    q = 0.4
    dU = (rd.potential_energy(arm, [q + 1e-6]) - rd.potential_energy(arm, [q - 1e-6])) / 2e-6
    assert rd.gravity_torques(arm, [q])[0] == pytest.approx(dU, rel=1e-7)
    assert rd.potential_energy(arm, [0.0]) == pytest.approx(0.0)          # zero at the base origin height


def test_wall_mounted_base_is_a_gravity_vector(arm):
    wall = arm.with_gravity((-9.81, 0.0, 0.0))       # base x axis points up
    assert rd.gravity_torques(wall, [0.0])[0] == pytest.approx(0.0, abs=1e-12)
    # q = -pi/2 points the arm along base +z: the weight (along -x) at (0, 0, L)
    # exerts r x F = -m g L about y, so holding takes +m g L
    assert rd.gravity_torques(wall, [-np.pi / 2])[0] == pytest.approx(MASS * 9.81 * L)


def test_jacobian_rows_are_linear_then_angular_in_base_frame(arm):
    J = rd.jacobian(arm, [0.0], "tip")
    # turning about +y moves the tip at +x towards -z
    np.testing.assert_allclose(J[:, 0], [0, 0, -L, 0, 1, 0], atol=1e-15)
    J = rd.jacobian(arm, [0.0], "arm", point=(L, 0, 0))
    np.testing.assert_allclose(J[:, 0], [0, 0, -L, 0, 1, 0], atol=1e-15)


def test_wrench_is_force_then_moment_in_link_frame_about_link_origin(arm):
    z = np.zeros(1)

    # pushing the tip up with the arm's own weight cancels gravity
    up = {"tip": [0, 0, MASS * 9.81, 0, 0, 0]}
    assert rd.rnea(arm, z, z, z, f_ext=up)[0] == pytest.approx(0.0, abs=1e-12)
    # the same force on link "arm" must be applied at its origin plus the moment L x F about it
    np.testing.assert_allclose(rd.rnea(arm, z, z, z, {"arm": [0, 0, MASS * 9.81, 0, -L * MASS * 9.81, 0]}), 0,
                               atol=1e-12)
    # link frame, not base frame: at q = pi/2 the tip's x axis points down, its z axis points +x
    q = np.array([np.pi / 2])
    down_in_tip_frame = {"tip": [1.0, 0, 0, 0, 0, 0]}            # 1 N along the link's x = straight down
    assert rd.rnea(arm, q, z, z, down_in_tip_frame)[0] == pytest.approx(0.0, abs=1e-12)   # along the arm
    sideways = {"tip": [0, 0, 1.0, 0, 0, 0]}                     # link z is base +x here
    # 1 N along +x at the tip (0, 0, -L): moment (0, -L, 0); the motors answer with +L
    assert rd.rnea(arm, q, z, z, sideways)[0] == pytest.approx(L)
    # static_torques: tau = J^T F for the wrench the robot exerts
    np.testing.assert_allclose(rd.static_torques(arm, z, [0, 0, 10.0, 0, 0, 0], "tip"), [-10.0 * L])


def test_joint_order_is_model_joint_names(arm):
    assert arm.joint_names == ("shoulder",)
    assert arm.link_names == ("base", "arm", "tip")


def test_single_state_and_batches_keep_their_shapes(arm):
    assert rd.rnea(arm, [0.1], [0.2], [0.3]).shape == (1,)
    Q = np.zeros((2, 3, 1))
    assert rd.rnea(arm, Q, Q, Q).shape == (2, 3, 1)
    assert rd.mass_matrix(arm, Q).shape == (2, 3, 1, 1)
    assert rd.jacobian(arm, Q, "tip").shape == (2, 3, 6, 1)
    assert rd.forward_kinematics(arm, Q)["tip"].shape == (2, 3, 4, 4)
    assert np.shape(rd.kinetic_energy(arm, Q, Q)) == (2, 3)
    assert isinstance(rd.kinetic_energy(arm, [0.0], [1.0]), float)
