"""The torque constraint along a path, for toppra, from this package's inverse dynamics.

Along q(s), with qd = q'(s) sd and qdd = q'(s) sdd + q''(s) sd^2, the
inverse dynamics become ``tau = a(s) sdd + b(s) sd^2 + c(s)`` (Bobrow,
Dubowsky and Gibson 1985): c = ID(q, 0, 0) plus the Coulomb friction
sgn(q'(s)) f_c, a = ID(q, 0, q') - ID(q, 0, 0), b = ID(q, q', q'') - ID(q, 0, 0)
(toppra's ``JointTorqueConstraint`` makes the same three calls, one grid
point at a time; here each is one batched :func:`~robot_dynamics.rnea` over
the grid, made once per retiming however often toppra runs).

toppra is imported here, at the top; :mod:`.retime` imports this module
only when it retimes (toppra loads matplotlib: about 1 s).
"""
import numpy as np
from toppra.constraint import DiscretizationType, LinearConstraint
from toppra.constraint.linear_constraint import canlinear_colloc_to_interpolate

from ..algorithms.rnea import rnea


def path_dynamics(model, path, grid, coulomb):
    """(a, b, c), each (N, nq) [N m | N per unit of sdd, of sd^2, N m]: the inverse dynamics along
    ``path`` at the (N,) ``grid`` points, with the (nq,) ``coulomb`` friction [N m | N] in c."""
    q, qs, qss = path(grid), path(grid, 1), path(grid, 2)
    zero = np.zeros_like(q)
    c = rnea(model, q, zero, zero)
    a = rnea(model, q, zero, qs) - c
    b = rnea(model, q, qs, qss) - c
    return a, b, c + np.sign(qs) * coulomb


class PathTorqueConstraint(LinearConstraint):
    """|a(s) sdd + b(s) sd^2 + c(s)| <= effort at both ends of every grid interval (toppra's first-order
    interpolation discretisation), a, b, c from :func:`path_dynamics` on the grid toppra is given."""

    def __init__(self, dynamics, effort):
        super().__init__()
        self.dynamics, self.effort = dynamics, np.asarray(effort, dtype=float)
        self.dof = self.effort.size
        self.identical = True
        self.set_discretization_type(DiscretizationType.Interpolation)

    def compute_constraint_params(self, path, gridpoints):
        a, b, c = self.dynamics
        if len(gridpoints) != len(a):
            raise ValueError("the path dynamics are on %d grid points, toppra asks for %d" % (len(a), len(gridpoints)))
        eye = np.eye(self.dof)
        return canlinear_colloc_to_interpolate(a, b, c, np.r_[eye, -eye], np.r_[self.effort, self.effort],
                                               None, None, gridpoints, identical=True)
