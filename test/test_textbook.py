"""Textbook robots against their checked closed forms (docs/worked-examples.md 1-7).

Each robot of worked-examples.md sections 1-7 is shipped as
``urdf/textbook/<name>.urdf``; the XML comment at the top of each file names
the worked example, its closed form, the parameter values and the frames.
Here every closed form is a plain numpy function of ``(p, q, qd, qdd)`` with
``p`` the robot's entry of the parameter table below, and the library is
checked against it at many seeded random states:

- ``rd.rnea == tau``, ``rd.mass_matrix == M``, ``rd.gravity_torques == G``,
  ``rd.nonlinear_effects == V + G``, ``rd.coriolis_matrix(q, qd) @ qd == V``,
  ``rd.aba(q, qd, tau) == qdd``, one state at a time and once as a batch;
- ``rd.kinetic_energy == qd M qd / 2`` with the closed-form M;
- extra Cartesian checks: the one-axis arm's tip Jacobian and potential
  energy, Craig's tip Jacobian, Cartesian mass matrix and gravity for the
  point-mass arm, and the SCARA tool position.

Where worked-examples.md gives only tau, M, V and G are read off it: M from
the qdd coefficients, G as the terms in g, V as the rest (the test
``test_closed_form_parts_add_up_to_tau`` checks these readings against the
printed tau formula, with no library involved).

The parameter table must match the URDF files: ``test_urdf_inertials_match_params``
reads the XML directly (no library) and ``test_model_masses_match_params``
compares with the loaded model, so the two cannot drift apart.
"""
import math
import warnings
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, Tuple

import numpy as np
import pytest

import robot_dynamics as rd

URDF_DIR = Path(__file__).resolve().parents[1] / "urdf" / "textbook"
G0 = 9.81            # [m/s^2] magnitude of gravity used by every robot below
N_STATES = 60        # random states per robot
RTOL = 1e-9
ATOL = 1e-9          # multiplied by max(1, largest |expected| of the quantity)
PI = math.pi


# ---------------------------------------------------------------------------
# Parameters (must equal the numbers in urdf/textbook/*.urdf)
# ---------------------------------------------------------------------------

PARAMS = {
    "one_axis_arm": dict(m1=1.7, a1=0.43, g0=G0),
    "two_rod_planar": dict(m1=2.3, a1=0.57, m2=1.3, a2=0.41, g0=G0),
    "point_mass_two_link": dict(m1=1.9, l1=0.62, m2=0.85, l2=0.37, g=G0),
    "scara": dict(d1=0.385, a1=0.425, a2=0.375, l3=0.29, d4=0.087,
                  m1=3.1, m2=2.2, m3=0.65, g0=G0),
    "rp_craig_6_5": dict(m1=2.7, l1=0.23, m2=1.15, g=G0,
                         Ixx1=0.011, Iyy1=0.037, Izz1=0.043,
                         Ixx2=0.021, Iyy2=0.019, Izz2=0.0031),
    "rp_homework": dict(m1=1.45, l1=0.52, m2=0.93, l2=0.17, g=G0,
                        Ixx1=0.0042, Iyy1=0.0335, Izz1=0.0347,
                        Ixx2=0.0128, Iyy2=0.0117, Izz2=0.0023),
    "prr_homework": dict(m1=4.2, l1=0.16, m2=1.6, l2=0.47, m3=0.9, l3=0.33, g=G0,
                         Ixx1=0.051, Iyy1=0.047, Izz1=0.029,
                         Ixx2=0.0023, Iyy2=0.0301, Izz2=0.031,
                         Ixx3=0.0011, Iyy3=0.0084, Izz3=0.0089),
}


def _rod(m, a):
    """Thin-rod inertia m a^2 / 12 about the axes perpendicular to it."""
    return m * a ** 2 / 12


# ---------------------------------------------------------------------------
# Closed forms. Arguments are 1-D arrays; q, qd, qdd have nq entries.
# ---------------------------------------------------------------------------

# 1. One-axis arm, thin rod (Schilling, *Fundamentals of Robotics*, sec. 6-9); gravity -g0 along y0.

def one_axis_tau(p, q, qd, qdd):
    m1, a1, g0 = p["m1"], p["a1"], p["g0"]
    return np.array([(m1 * a1 ** 2 / 3) * qdd[0] + g0 * m1 * a1 * math.cos(q[0]) / 2])


def one_axis_M(p, q):
    return np.array([[p["m1"] * p["a1"] ** 2 / 3]])


def one_axis_V(p, q, qd):
    return np.zeros(1)


def one_axis_G(p, q):
    return np.array([p["g0"] * p["m1"] * p["a1"] * math.cos(q[0]) / 2])


# 2. Two-axis planar articulated arm, thin rods (Schilling, *Fundamentals of Robotics*, sec. 6-5).

def two_rod_tau(p, q, qd, qdd):
    m1, a1, m2, a2, g0 = p["m1"], p["a1"], p["m2"], p["a2"], p["g0"]
    c1, c2, s2, c12 = math.cos(q[0]), math.cos(q[1]), math.sin(q[1]), math.cos(q[0] + q[1])
    tau1 = (((m1 / 3 + m2) * a1 ** 2 + m2 * a1 * a2 * c2 + m2 * a2 ** 2 / 3) * qdd[0]
            + (m2 * a1 * a2 * c2 / 2 + m2 * a2 ** 2 / 3) * qdd[1]
            - m2 * a1 * a2 * s2 * (qd[0] * qd[1] + qd[1] ** 2 / 2)
            + g0 * ((m1 / 2 + m2) * a1 * c1 + m2 * a2 * c12 / 2))
    tau2 = ((m2 * a1 * a2 * c2 / 2 + m2 * a2 ** 2 / 3) * qdd[0] + m2 * a2 ** 2 * qdd[1] / 3
            + m2 * a1 * a2 * s2 * qd[0] ** 2 / 2 + g0 * m2 * a2 * c12 / 2)
    return np.array([tau1, tau2])


def two_rod_M(p, q):
    m1, a1, m2, a2 = p["m1"], p["a1"], p["m2"], p["a2"]
    c2 = math.cos(q[1])
    m11 = (m1 / 3 + m2) * a1 ** 2 + m2 * a1 * a2 * c2 + m2 * a2 ** 2 / 3
    m12 = m2 * a1 * a2 * c2 / 2 + m2 * a2 ** 2 / 3
    return np.array([[m11, m12], [m12, m2 * a2 ** 2 / 3]])


def two_rod_V(p, q, qd):
    m2, a1, a2 = p["m2"], p["a1"], p["a2"]
    s2 = math.sin(q[1])
    return np.array([-m2 * a1 * a2 * s2 * (qd[0] * qd[1] + qd[1] ** 2 / 2),
                     m2 * a1 * a2 * s2 * qd[0] ** 2 / 2])


def two_rod_G(p, q):
    m1, a1, m2, a2, g0 = p["m1"], p["a1"], p["m2"], p["a2"], p["g0"]
    c1, c12 = math.cos(q[0]), math.cos(q[0] + q[1])
    return np.array([g0 * ((m1 / 2 + m2) * a1 * c1 + m2 * a2 * c12 / 2),
                     g0 * m2 * a2 * c12 / 2])


# 3. Three-axis SCARA (Schilling, *Fundamentals of Robotics*, sec. 6-6); q3 increases downward,
#    gravity -g0 along z0.

def scara_tau(p, q, qd, qdd):
    a1, a2, m1, m2, m3, g0 = p["a1"], p["a2"], p["m1"], p["m2"], p["m3"], p["g0"]
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    tau1 = (((m1 / 3 + m2 + m3) * a1 ** 2 + (m2 + 2 * m3) * a1 * a2 * c2
             + (m2 / 3 + m3) * a2 ** 2) * qdd[0]
            - ((m2 / 2 + m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2 ** 2) * qdd[1]
            - a1 * a2 * s2 * ((m2 + 2 * m3) * qd[0] * qd[1] - (m2 / 2 + m3) * qd[1] ** 2))
    tau2 = (-((m2 / 2 + m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2 ** 2) * qdd[0]
            + (m2 / 3 + m3) * a2 ** 2 * qdd[1] + (m2 / 2 + m3) * a1 * a2 * s2 * qd[0] ** 2)
    tau3 = m3 * qdd[2] - g0 * m3
    return np.array([tau1, tau2, tau3])


def scara_M(p, q):
    a1, a2, m1, m2, m3 = p["a1"], p["a2"], p["m1"], p["m2"], p["m3"]
    c2 = math.cos(q[1])
    m11 = (m1 / 3 + m2 + m3) * a1 ** 2 + (m2 + 2 * m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2 ** 2
    m12 = -((m2 / 2 + m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2 ** 2)
    m22 = (m2 / 3 + m3) * a2 ** 2
    return np.array([[m11, m12, 0.0], [m12, m22, 0.0], [0.0, 0.0, m3]])


def scara_V(p, q, qd):
    a1, a2, m2, m3 = p["a1"], p["a2"], p["m2"], p["m3"]
    s2 = math.sin(q[1])
    return np.array([
        -a1 * a2 * s2 * ((m2 + 2 * m3) * qd[0] * qd[1] - (m2 / 2 + m3) * qd[1] ** 2),
        (m2 / 2 + m3) * a1 * a2 * s2 * qd[0] ** 2,
        0.0])


def scara_G(p, q):
    return np.array([0.0, 0.0, -p["g0"] * p["m3"]])


def scara_tool_position(p, q):
    """Base-frame position of the tool (D-H frame 3 moved d4 further down)."""
    a1, a2, d1, d4 = p["a1"], p["a2"], p["d1"], p["d4"]
    # Joint 2 turns about the downward z1, so link 2 points at angle q1 - q2.
    return np.array([a1 * math.cos(q[0]) + a2 * math.cos(q[0] - q[1]),
                     a1 * math.sin(q[0]) + a2 * math.sin(q[0] - q[1]),
                     d1 - q[2] - d4])


# 4. Two-link planar arm, point masses at the distal ends (Craig 6.7).
#    Gravity -g along y0.

def point_mass_tau(p, q, qd, qdd):
    m1, l1, m2, l2, g = p["m1"], p["l1"], p["m2"], p["l2"], p["g"]
    c1, c2, s2, c12 = math.cos(q[0]), math.cos(q[1]), math.sin(q[1]), math.cos(q[0] + q[1])
    tau1 = (m2 * l2 ** 2 * (qdd[0] + qdd[1]) + m2 * l1 * l2 * c2 * (2 * qdd[0] + qdd[1])
            + (m1 + m2) * l1 ** 2 * qdd[0]
            - m2 * l1 * l2 * s2 * qd[1] ** 2 - 2 * m2 * l1 * l2 * s2 * qd[0] * qd[1]
            + m2 * l2 * g * c12 + (m1 + m2) * l1 * g * c1)
    tau2 = (m2 * l1 * l2 * c2 * qdd[0] + m2 * l1 * l2 * s2 * qd[0] ** 2 + m2 * l2 * g * c12
            + m2 * l2 ** 2 * (qdd[0] + qdd[1]))
    return np.array([tau1, tau2])


def point_mass_M(p, q):
    m1, l1, m2, l2 = p["m1"], p["l1"], p["m2"], p["l2"]
    c2 = math.cos(q[1])
    return np.array([
        [l2 ** 2 * m2 + 2 * l1 * l2 * m2 * c2 + l1 ** 2 * (m1 + m2),
         l2 ** 2 * m2 + l1 * l2 * m2 * c2],
        [l2 ** 2 * m2 + l1 * l2 * m2 * c2, l2 ** 2 * m2]])


def point_mass_V(p, q, qd):
    """Craig 6.63: V = B [qd1 qd2] + C [qd1^2; qd2^2]."""
    m2, l1, l2 = p["m2"], p["l1"], p["l2"]
    s2 = math.sin(q[1])
    B = np.array([-2 * m2 * l1 * l2 * s2, 0.0])
    C = np.array([[0.0, -m2 * l1 * l2 * s2], [m2 * l1 * l2 * s2, 0.0]])
    return B * qd[0] * qd[1] + C @ (qd ** 2)


def point_mass_G(p, q):
    m1, l1, m2, l2, g = p["m1"], p["l1"], p["m2"], p["l2"], p["g"]
    c1, c12 = math.cos(q[0]), math.cos(q[0] + q[1])
    return np.array([m2 * l2 * g * c12 + (m1 + m2) * l1 * g * c1, m2 * l2 * g * c12])


def point_mass_tip_jacobian_craig(p, q):
    """Craig's tip-frame (frame 3) linear Jacobian J = [[l1 s2, 0], [l1 c2 + l2, l2]]."""
    l1, l2 = p["l1"], p["l2"]
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    return np.array([[l1 * s2, 0.0], [l1 * c2 + l2, l2]])


def point_mass_cartesian_M_G(p, q):
    """Craig examples 6.6/6.7: M_x and G_x in the tip frame (s2 != 0)."""
    m1, m2, g = p["m1"], p["m2"], p["g"]
    c1, s2 = math.cos(q[0]), math.sin(q[1])
    s12, c12 = math.sin(q[0] + q[1]), math.cos(q[0] + q[1])
    Mx = np.array([[m2 + m1 / s2 ** 2, 0.0], [0.0, m2]])
    Gx = np.array([m1 * g * c1 / s2 + m2 * g * s12, m2 * g * c12])
    return Mx, Gx


# 5. RP robot of Craig example 6.5 (Craig, *Introduction to Robotics*); gravity -g along y0.

def rp_craig_tau(p, q, qd, qdd):
    m1, l1, m2, g = p["m1"], p["l1"], p["m2"], p["g"]
    th, d2 = q
    thd, d2d = qd
    c1, s1 = math.cos(th), math.sin(th)
    tau1 = ((m1 * l1 ** 2 + p["Izz1"] + p["Iyy2"] + m2 * d2 ** 2) * qdd[0]
            + 2 * m2 * d2 * thd * d2d + (m1 * l1 + m2 * d2) * g * c1)
    f2 = m2 * qdd[1] - m2 * d2 * thd ** 2 + m2 * g * s1
    return np.array([tau1, f2])


def rp_craig_M(p, q):
    m1, l1, m2 = p["m1"], p["l1"], p["m2"]
    d2 = q[1]
    return np.diag([m1 * l1 ** 2 + p["Izz1"] + p["Iyy2"] + m2 * d2 ** 2, m2])


def rp_craig_V(p, q, qd):
    m2, d2 = p["m2"], q[1]
    return np.array([2 * m2 * d2 * qd[0] * qd[1], -m2 * d2 * qd[0] ** 2])


def rp_craig_G(p, q):
    m1, l1, m2, g = p["m1"], p["l1"], p["m2"], p["g"]
    th, d2 = q
    return np.array([(m1 * l1 + m2 * d2) * g * math.cos(th), m2 * g * math.sin(th)])


# 6. RP robot of the homework (a manipulator-dynamics problem set, problem 1); gravity -g along x0.

def rp_homework_M(p, q):
    m1, l1, m2, l2 = p["m1"], p["l1"], p["m2"], p["l2"]
    d2 = q[1]
    m11 = p["Izz1"] + p["Iyy2"] + m1 * l1 ** 2 / 4 + m2 * (l1 ** 2 + (d2 + l2) ** 2)
    return np.array([[m11, m2 * l1], [m2 * l1, m2]])


def rp_homework_V(p, q, qd):
    m2, l2 = p["m2"], p["l2"]
    d2 = q[1]
    return np.array([2 * m2 * (d2 + l2) * qd[0] * qd[1], -m2 * (d2 + l2) * qd[0] ** 2])


def rp_homework_G(p, q):
    m1, l1, m2, l2, g = p["m1"], p["l1"], p["m2"], p["l2"], p["g"]
    th, d2 = q
    c1, s1 = math.cos(th), math.sin(th)
    return np.array([-g * (m2 * c1 * (d2 + l2) + l1 * s1 * (m1 / 2 + m2)), -g * m2 * s1])


def rp_homework_tau(p, q, qd, qdd):
    return rp_homework_M(p, q) @ qdd + rp_homework_V(p, q, qd) + rp_homework_G(p, q)


# 7. PRR robot of the homework (a manipulator-dynamics problem set, problem 2); gravity -g along z0.

def prr_M(p, q):
    m1, m2, m3, l2, l3 = p["m1"], p["m2"], p["m3"], p["l2"], p["l3"]
    Izz2, Izz3 = p["Izz2"], p["Izz3"]
    c3 = math.cos(q[2])
    m22 = Izz2 + Izz3 + m2 * l2 ** 2 / 4 + m3 * (l2 ** 2 + l2 * l3 * c3 + l3 ** 2 / 4)
    m23 = Izz3 + m3 * (l2 * l3 * c3 / 2 + l3 ** 2 / 4)
    m33 = Izz3 + m3 * l3 ** 2 / 4
    return np.array([[m1 + m2 + m3, 0.0, 0.0], [0.0, m22, m23], [0.0, m23, m33]])


def prr_V(p, q, qd):
    m3, l2, l3 = p["m3"], p["l2"], p["l3"]
    s3 = math.sin(q[2])
    return np.array([0.0,
                     -m3 * l2 * l3 * s3 * qd[2] * (qd[1] + qd[2] / 2),
                     m3 * l2 * l3 * s3 * qd[1] ** 2 / 2])


def prr_G(p, q):
    return np.array([(p["m1"] + p["m2"] + p["m3"]) * p["g"], 0.0, 0.0])


def prr_tau(p, q, qd, qdd):
    return prr_M(p, q) @ qdd + prr_V(p, q, qd) + prr_G(p, q)


# ---------------------------------------------------------------------------
# The robots
# ---------------------------------------------------------------------------

REVOLUTE = (-PI, PI)


@dataclass(frozen=True)
class Textbook:
    """One worked example: its URDF, parameters and closed forms."""
    name: str                       # URDF file stem and test id
    gravity: Tuple[float, float, float]   # passed to rd.load_urdf, base frame
    joint_names: Tuple[str, ...]    # q order
    ranges: Tuple[Tuple[float, float], ...]   # sampling range of each q
    tau: Callable
    M: Callable
    V: Callable
    G: Callable
    # link -> (mass, inertial origin xyz, inertial origin rpy, (ixx, iyy, izz)),
    # off-diagonal terms are all zero; links absent here carry no <inertial>.
    inertials: Dict[str, tuple]
    semidefinite_inertia: bool      # rods / point masses: the library may warn

    @property
    def params(self):
        return PARAMS[self.name]

    @property
    def path(self):
        return URDF_DIR / (self.name + ".urdf")


def _rod_along_x(m, a):
    """(ixx, iyy, izz) of a thin rod of mass m, length a along x, about its centre."""
    return (0.0, _rod(m, a), _rod(m, a))


def _rod_along_z(m, a):
    return (_rod(m, a), _rod(m, a), 0.0)


NO_RPY = (0, 0, 0)
POINT = (0.0, 0.0, 0.0)


def _robots():
    p = PARAMS["one_axis_arm"]
    one_axis = Textbook(
        "one_axis_arm", (0.0, -G0, 0.0), ("joint1",), (REVOLUTE,),
        one_axis_tau, one_axis_M, one_axis_V, one_axis_G,
        {"link1": (p["m1"], (p["a1"] / 2, 0, 0), NO_RPY, _rod_along_x(p["m1"], p["a1"]))},
        True)
    p = PARAMS["two_rod_planar"]
    two_rod = Textbook(
        "two_rod_planar", (0.0, -G0, 0.0), ("joint1", "joint2"), (REVOLUTE, REVOLUTE),
        two_rod_tau, two_rod_M, two_rod_V, two_rod_G,
        # link1_rod's frame is turned so that its z runs along rod 1.
        {"link1_rod": (p["m1"], (0, 0, 0), NO_RPY, _rod_along_z(p["m1"], p["a1"])),
         "link2": (p["m2"], (p["a2"] / 2, 0, 0), NO_RPY, _rod_along_x(p["m2"], p["a2"]))},
        True)
    p = PARAMS["scara"]
    scara = Textbook(
        "scara", (0.0, 0.0, -G0), ("joint1", "joint2", "joint3"),
        (REVOLUTE, REVOLUTE, (0.0, 0.25)),
        scara_tau, scara_M, scara_V, scara_G,
        {"link1": (p["m1"], (p["a1"] / 2, 0, p["d1"]), NO_RPY, _rod_along_x(p["m1"], p["a1"])),
         "link2": (p["m2"], (p["a2"] / 2, 0, 0), NO_RPY, _rod_along_x(p["m2"], p["a2"])),
         "link3": (p["m3"], (0, 0, -p["l3"] / 2), NO_RPY, _rod_along_z(p["m3"], p["l3"]))},
        True)
    p = PARAMS["point_mass_two_link"]
    point_mass = Textbook(
        "point_mass_two_link", (0.0, -G0, 0.0), ("joint1", "joint2"), (REVOLUTE, REVOLUTE),
        point_mass_tau, point_mass_M, point_mass_V, point_mass_G,
        {"link1": (p["m1"], (p["l1"], 0, 0), NO_RPY, POINT),
         "tip": (p["m2"], (0, 0, 0), NO_RPY, POINT)},
        True)
    p = PARAMS["rp_craig_6_5"]
    rp_craig = Textbook(
        "rp_craig_6_5", (0.0, -G0, 0.0), ("joint1", "joint2"), (REVOLUTE, (0.15, 0.75)),
        rp_craig_tau, rp_craig_M, rp_craig_V, rp_craig_G,
        {"link1": (p["m1"], (p["l1"], 0, 0), NO_RPY, (p["Ixx1"], p["Iyy1"], p["Izz1"])),
         "link2": (p["m2"], (0, 0, 0), NO_RPY, (p["Ixx2"], p["Iyy2"], p["Izz2"]))},
        False)
    p = PARAMS["rp_homework"]
    rp_homework = Textbook(
        "rp_homework", (-G0, 0.0, 0.0), ("joint1", "joint2"), (REVOLUTE, (0.0, 0.45)),
        rp_homework_tau, rp_homework_M, rp_homework_V, rp_homework_G,
        {"link1": (p["m1"], (p["l1"] / 2, 0, 0), NO_RPY, (p["Ixx1"], p["Iyy1"], p["Izz1"])),
         "link2_com": (p["m2"], (0, 0, 0), NO_RPY, (p["Ixx2"], p["Iyy2"], p["Izz2"]))},
        False)
    p = PARAMS["prr_homework"]
    prr = Textbook(
        "prr_homework", (0.0, 0.0, -G0), ("joint1", "joint2", "joint3"),
        ((0.1, 0.9), REVOLUTE, REVOLUTE),
        prr_tau, prr_M, prr_V, prr_G,
        {"link1": (p["m1"], (0, 0, -p["l1"]), NO_RPY, (p["Ixx1"], p["Iyy1"], p["Izz1"])),
         # Rotated inertial frame: principal axes (x2, z2, -y2), see the URDF comment.
         "link2": (p["m2"], (p["l2"] / 2, 0, 0), (PI / 2, 0, 0), (p["Ixx2"], p["Izz2"], p["Iyy2"])),
         "link3": (p["m3"], (p["l3"] / 2, 0, 0), NO_RPY, (p["Ixx3"], p["Iyy3"], p["Izz3"]))},
        False)
    return {r.name: r for r in (one_axis, two_rod, scara, point_mass, rp_craig, rp_homework, prr)}


ROBOTS = _robots()
EACH_ROBOT = pytest.mark.parametrize("robot", list(ROBOTS.values()), ids=list(ROBOTS))


def _load_fresh(robot):
    """Load the robot's URDF with its gravity.

    Rods (zero inertia along the rod) and point masses (zero inertia) have
    inertia tensors that are only positive semidefinite; the library may
    warn about them when loading. That is expected for exactly these
    robots, so the warning is silenced here and nowhere else (the robots
    with proper inertias must load without any warning, see
    test_positive_definite_urdfs_load_without_warnings).
    """
    with warnings.catch_warnings():
        if robot.semidefinite_inertia:
            warnings.filterwarnings("ignore", message=".*not positive definite",
                                    category=rd.InertiaWarning)
        return rd.load_urdf(str(robot.path), gravity=robot.gravity)


@lru_cache(maxsize=None)
def _load(name):
    return _load_fresh(ROBOTS[name])


def load(robot):
    return _load(robot.name)


def states(robot, n=N_STATES, salt=0):
    """n seeded random states (q, qd, qdd), each (n, nq).

    Angles uniform in [-pi, pi], prismatic coordinates uniform in their
    plausible range, velocities and accelerations uniform in [-3, 3].
    """
    rng = np.random.default_rng(zlib.crc32(robot.name.encode()) + salt)
    lo = np.array([r[0] for r in robot.ranges])
    hi = np.array([r[1] for r in robot.ranges])
    nq = len(robot.ranges)
    q = lo + (hi - lo) * rng.random((n, nq))
    qd = rng.uniform(-3.0, 3.0, (n, nq))
    qdd = rng.uniform(-3.0, 3.0, (n, nq))
    return q, qd, qdd


def _closed_form_rows(robot, q, qd, qdd):
    """Closed-form tau, M, V, G evaluated row by row: (n, nq), (n, nq, nq), ..."""
    p = robot.params
    tau = np.array([robot.tau(p, *s) for s in zip(q, qd, qdd)])
    M = np.array([robot.M(p, qi) for qi in q])
    V = np.array([robot.V(p, qi, qdi) for qi, qdi in zip(q, qd)])
    G = np.array([robot.G(p, qi) for qi in q])
    return tau, M, V, G


def assert_close(actual, expected, what, robot, i=None, **state):
    """assert_allclose with rtol 1e-9 and atol 1e-9 * max(1, max |expected|)."""
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    where = "" if i is None else " at state %d" % i
    detail = ", ".join("%s=%s" % (k, np.array2string(np.asarray(v), precision=17))
                       for k, v in state.items())
    np.testing.assert_allclose(
        actual, expected, rtol=RTOL, atol=ATOL * scale,
        err_msg="%s of %s%s (%s)" % (what, robot.name, where, detail))


# ---------------------------------------------------------------------------
# The URDF files and the parameter table agree
# ---------------------------------------------------------------------------

def _floats(text, n):
    vals = [float(v) for v in (text or " ".join(["0"] * n)).split()]
    assert len(vals) == n, text
    return vals


@EACH_ROBOT
def test_urdf_inertials_match_params(robot):
    """Every <inertial> of the URDF file equals the parameter table (XML only)."""
    root = ET.parse(robot.path).getroot()
    found = {}
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        origin = inertial.find("origin")
        xyz = _floats(origin.get("xyz") if origin is not None else None, 3)
        rpy = _floats(origin.get("rpy") if origin is not None else None, 3)
        mass = float(inertial.find("mass").get("value"))
        I = inertial.find("inertia")
        diag = [float(I.get(k, "0")) for k in ("ixx", "iyy", "izz")]
        off = [float(I.get(k, "0")) for k in ("ixy", "ixz", "iyz")]
        name = link.get("name")
        assert off == [0.0, 0.0, 0.0], "%s: %s has products of inertia" % (robot.name, name)
        found[name] = (mass, xyz, rpy, diag)
    assert sorted(found) == sorted(robot.inertials), robot.name
    for link, expected in robot.inertials.items():
        for what, got, want in zip(("mass", "com", "rpy", "inertia"), found[link], expected):
            np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15,
                                       err_msg="%s %s %s" % (robot.name, link, what))


@EACH_ROBOT
def test_model_masses_match_params(robot):
    model = load(robot)
    assert model.nq == len(robot.joint_names)
    assert model.joint_names == robot.joint_names
    expected = {link: v[0] for link, v in robot.inertials.items()}
    np.testing.assert_allclose(model.total_mass, sum(expected.values()), rtol=1e-14)
    for link, mass in expected.items():
        np.testing.assert_allclose(model.link_masses[link], mass, rtol=1e-14, err_msg=link)
    np.testing.assert_allclose(model.gravity, robot.gravity, rtol=0, atol=0)


@EACH_ROBOT
def test_moving_joints_have_effort_and_velocity_limits(robot):
    model = load(robot)
    assert np.all(np.isfinite(model.effort_limit)) and np.all(model.effort_limit > 0)
    assert np.all(np.isfinite(model.velocity_limit)) and np.all(model.velocity_limit > 0)


def test_positive_definite_urdfs_load_without_warnings():
    for robot in ROBOTS.values():
        if robot.semidefinite_inertia:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rd.load_urdf(str(robot.path), gravity=robot.gravity)


def test_rods_and_point_masses_warn_naming_their_links():
    """Only the rods and point masses (a zero principal moment) draw an InertiaWarning."""
    for robot in ROBOTS.values():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rd.load_urdf(str(robot.path), gravity=robot.gravity)
        messages = [str(w.message) for w in caught if issubclass(w.category, rd.InertiaWarning)]
        semidefinite = [link for link, (_, _, _, diag) in robot.inertials.items()
                        if min(diag) == 0.0]
        assert bool(semidefinite) == robot.semidefinite_inertia, robot.name
        for link in semidefinite:
            assert any("'%s'" % link in m for m in messages), (robot.name, link, messages)
        assert len(messages) == len(semidefinite), (robot.name, messages)


@EACH_ROBOT
def test_closed_form_parts_add_up_to_tau(robot):
    """The M, V, G read off each worked example reproduce its printed tau (no library)."""
    q, qd, qdd = states(robot)
    tau, M, V, G = _closed_form_rows(robot, q, qd, qdd)
    assert_close(np.einsum("nij,nj->ni", M, qdd) + V + G, tau, "M qdd + V + G", robot)
    assert np.allclose(M, np.swapaxes(M, 1, 2), rtol=0, atol=0), "closed-form M not symmetric"


# ---------------------------------------------------------------------------
# The library against the closed forms, one state at a time
# ---------------------------------------------------------------------------

@EACH_ROBOT
def test_rnea_matches_closed_form_tau(robot):
    model, p = load(robot), robot.params
    for i, (q, qd, qdd) in enumerate(zip(*states(robot))):
        assert_close(rd.rnea(model, q, qd, qdd), robot.tau(p, q, qd, qdd), "rnea", robot, i,
                     q=q, qd=qd, qdd=qdd)


@EACH_ROBOT
def test_mass_matrix_matches_closed_form(robot):
    model, p = load(robot), robot.params
    for i, q in enumerate(states(robot)[0]):
        assert_close(rd.mass_matrix(model, q), robot.M(p, q), "mass_matrix", robot, i, q=q)


@EACH_ROBOT
def test_gravity_torques_match_closed_form(robot):
    model, p = load(robot), robot.params
    for i, q in enumerate(states(robot)[0]):
        assert_close(rd.gravity_torques(model, q), robot.G(p, q), "gravity_torques", robot, i, q=q)


@EACH_ROBOT
def test_nonlinear_effects_match_closed_form_v_plus_g(robot):
    model, p = load(robot), robot.params
    q_all, qd_all, _ = states(robot)
    for i, (q, qd) in enumerate(zip(q_all, qd_all)):
        assert_close(rd.nonlinear_effects(model, q, qd), robot.V(p, q, qd) + robot.G(p, q),
                     "nonlinear_effects", robot, i, q=q, qd=qd)


@EACH_ROBOT
def test_coriolis_matrix_times_qd_matches_closed_form_v(robot):
    model, p = load(robot), robot.params
    q_all, qd_all, _ = states(robot)
    for i, (q, qd) in enumerate(zip(q_all, qd_all)):
        C = rd.coriolis_matrix(model, q, qd)
        assert C.shape == (model.nq, model.nq)
        assert_close(C @ qd, robot.V(p, q, qd), "coriolis_matrix @ qd", robot, i, q=q, qd=qd)


@EACH_ROBOT
def test_aba_inverts_closed_form_tau(robot):
    model, p = load(robot), robot.params
    for i, (q, qd, qdd) in enumerate(zip(*states(robot))):
        tau = robot.tau(p, q, qd, qdd)
        assert_close(rd.aba(model, q, qd, tau), qdd, "aba", robot, i, q=q, qd=qd, tau=tau)


@EACH_ROBOT
def test_kinetic_energy_matches_closed_form_mass_matrix(robot):
    model, p = load(robot), robot.params
    q_all, qd_all, _ = states(robot)
    for i, (q, qd) in enumerate(zip(q_all, qd_all)):
        assert_close(rd.kinetic_energy(model, q, qd), 0.5 * qd @ robot.M(p, q) @ qd,
                     "kinetic_energy", robot, i, q=q, qd=qd)


# ---------------------------------------------------------------------------
# Batch form: all states at once, (N, nq) in, compared row by row
# ---------------------------------------------------------------------------

@EACH_ROBOT
def test_batch_calls_match_closed_form_row_by_row(robot):
    model = load(robot)
    q, qd, qdd = states(robot, salt=1)
    tau, M, V, G = _closed_form_rows(robot, q, qd, qdd)
    n, nq = q.shape

    got = {
        "rnea": rd.rnea(model, q, qd, qdd),
        "mass_matrix": rd.mass_matrix(model, q),
        "gravity_torques": rd.gravity_torques(model, q),
        "nonlinear_effects": rd.nonlinear_effects(model, q, qd),
        "coriolis_matrix @ qd": np.einsum("nij,nj->ni", rd.coriolis_matrix(model, q, qd), qd),
        "aba": rd.aba(model, q, qd, tau),
        "kinetic_energy": rd.kinetic_energy(model, q, qd),
    }
    want = {
        "rnea": tau, "mass_matrix": M, "gravity_torques": G, "nonlinear_effects": V + G,
        "coriolis_matrix @ qd": V, "aba": qdd,
        "kinetic_energy": 0.5 * np.einsum("ni,nij,nj->n", qd, M, qd),
    }
    for what in want:
        assert got[what].shape == want[what].shape, "%s: batch shape %s, expected %s" % (
            what, got[what].shape, want[what].shape)
        for i in range(n):
            assert_close(got[what][i], want[what][i], "batch " + what, robot, i,
                         q=q[i], qd=qd[i], qdd=qdd[i])


# ---------------------------------------------------------------------------
# Robot-specific checks
# ---------------------------------------------------------------------------

def test_one_axis_arm_tip_jacobian_matches_analytic():
    """Rod tip at (a1 c1, a1 s1, 0): v = a1 qd (-s1, c1, 0), w = qd z0."""
    robot = ROBOTS["one_axis_arm"]
    model, a1 = load(robot), robot.params["a1"]
    for i, q in enumerate(states(robot)[0]):
        s1, c1 = math.sin(q[0]), math.cos(q[0])
        expected = np.array([[-a1 * s1], [a1 * c1], [0.0], [0.0], [0.0], [1.0]])
        assert_close(rd.jacobian(model, q, "tip"), expected, "jacobian(tip)", robot, i, q=q)
        assert_close(rd.jacobian(model, q, "link1", point=(a1, 0.0, 0.0)), expected,
                     "jacobian(link1, point=(a1, 0, 0))", robot, i, q=q)
        assert_close(rd.forward_kinematics(model, q)["tip"][:3, 3], [a1 * c1, a1 * s1, 0.0],
                     "forward_kinematics(tip)", robot, i, q=q)


def test_one_axis_arm_potential_energy_matches_closed_form():
    """U = m1 g0 (a1/2) sin q1: the rod's centre of mass is a1/2 s1 above the base origin."""
    robot = ROBOTS["one_axis_arm"]
    model, p = load(robot), robot.params
    q = states(robot)[0]
    expected = p["m1"] * p["g0"] * p["a1"] / 2 * np.sin(q[:, 0])
    for i in range(len(q)):
        assert_close(rd.potential_energy(model, q[i]), expected[i], "potential_energy", robot, i,
                     q=q[i])
    assert_close(rd.potential_energy(model, q), expected, "batch potential_energy", robot)


def _rot2(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def test_point_mass_two_link_tip_jacobian_matches_craig():
    """Base-frame tip Jacobian = R_03 (Craig's tip-frame J), R_03 = Rz(q1 + q2)."""
    robot = ROBOTS["point_mass_two_link"]
    model, p = load(robot), robot.params
    for i, q in enumerate(states(robot)[0]):
        R03 = _rot2(q[0] + q[1])
        expected = np.zeros((6, 2))
        expected[:2] = R03 @ point_mass_tip_jacobian_craig(p, q)
        expected[5] = [1.0, 1.0]
        assert_close(rd.jacobian(model, q, "tip"), expected, "jacobian(tip)", robot, i, q=q)
        T = rd.forward_kinematics(model, q)["tip"]
        assert_close(T[:2, :2], R03, "forward_kinematics(tip) rotation", robot, i, q=q)


def test_point_mass_two_link_cartesian_mass_and_gravity_match_craig():
    """M_x = J^-T M J^-1 and G_x = J^-T G in the tip frame, from the library's J, M, G.

    States with |sin q2| < 0.2 are skipped: M_x11 = m2 + m1/s2^2 grows without
    bound at the singularity s2 = 0.
    """
    robot = ROBOTS["point_mass_two_link"]
    model, p = load(robot), robot.params
    checked = 0
    for i, q in enumerate(states(robot, n=3 * N_STATES)[0]):
        if abs(math.sin(q[1])) < 0.2:
            continue
        R03 = _rot2(q[0] + q[1])
        J_tip = R03.T @ rd.jacobian(model, q, "tip")[:2]          # tip-frame linear Jacobian
        J_inv = np.linalg.inv(J_tip)
        Mx = J_inv.T @ rd.mass_matrix(model, q) @ J_inv
        Gx = J_inv.T @ rd.gravity_torques(model, q)
        Mx_craig, Gx_craig = point_mass_cartesian_M_G(p, q)
        assert_close(Mx, Mx_craig, "Cartesian mass matrix M_x", robot, i, q=q)
        assert_close(Gx, Gx_craig, "Cartesian gravity G_x", robot, i, q=q)
        checked += 1
    assert checked >= N_STATES


def test_scara_tool_position_matches_dh():
    """Tool at (a1 c1 + a2 c(1-2), a1 s1 + a2 s(1-2), d1 - q3 - d4): joint 2 turns about -z0."""
    robot = ROBOTS["scara"]
    model, p = load(robot), robot.params
    for i, q in enumerate(states(robot)[0]):
        T = rd.forward_kinematics(model, q)["tool"]
        assert_close(T[:3, 3], scara_tool_position(p, q), "forward_kinematics(tool)", robot, i, q=q)
        assert_close(T[:3, 2], [0.0, 0.0, -1.0], "tool z axis", robot, i, q=q)
