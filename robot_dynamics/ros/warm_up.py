"""Kernels compiled (or loaded from numba's cache) before a node subscribes to anything."""
import numpy as np

import robot_dynamics as rd

# A two-link robot used to compile (or load from numba's cache) every kernel
# the node calls before it subscribes to anything.
WARMUP_URDF = """<robot name="warmup">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="10" lower="-3" upper="3" velocity="1"/><dynamics damping="0.1" friction="0.1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit effort="10" lower="-3" upper="3" velocity="1"/></joint>
</robot>"""


def warm_up_model():
    """The two-link robot (with a payload on ``l2``) the warm-ups run on."""
    return rd.load_urdf(WARMUP_URDF).with_payload('l2', 0.5, (0.0, 0.0, 0.1))


def warm_up():
    """Compile or load every kernel the nodes use (seconds on a cold numba cache)."""
    model = warm_up_model()
    q = np.full(model.nq, 0.1)
    rd.gravity_torques(model, q)
    rd.nonlinear_effects(model, q, q)
    rd.rnea(model, q, q, q)
    rd.mass_matrix(model, q)
    rd.aba(model, q, q, q)
    rd.friction_torques(model, q, smoothing=0.01)
    rd.rnea(model, np.tile(q, (3, 1)), np.tile(q, (3, 1)), np.tile(q, (3, 1)))
    rd.forward_kinematics(model, q)           # the loop kinematics of a closed-loop robot (loops_file)


def warm_up_moving_base():
    """Compile or load the kernels of the torque laws on floating and planar bases (what a node
    with a base state calls per message)."""
    for root in ('floating', 'planar'):
        model = rd.load_urdf(WARMUP_URDF, root_joint=root)
        q, v = model.neutral(), np.full(model.nv, 0.1)
        rd.gravity_torques(model, q)
        rd.nonlinear_effects(model, q, v)
        rd.rnea(model, q, v, v)
        rd.mass_matrix(model, q)
        rd.friction_torques(model, v, smoothing=0.01)
