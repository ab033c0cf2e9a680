"""Column layout of :attr:`Model.packed`, the table the compiled kernels read.

``Model.packed`` is one read-only float64 array of shape ``(nb + 1, NCOL)``:
row ``i < nb`` is moving body ``i`` (the same numbers as the model's public
per-body arrays), row ``nb`` is the base. The kernels take this one table
instead of the ten per-body arrays because every array argument of a
compiled call costs about 0.15 us of dispatch (measured with numba 0.60 on
the bundled Panda), which is a tenth of a whole RNEA.
"""
PARENT = 0        # parent body index (-1: the base), stored as a float
JTYPE = 1         # REVOLUTE or PRISMATIC
QIDX = 2          # index of the independent coordinate that drives the joint
AXIS = 3          # 3:6   joint axis, unit, in the body (child) frame
ROT0 = 6          # 6:15  rotation parent body frame <- joint frame at q = 0, row-major
POS0 = 15         # 15:18 joint frame origin in the parent body frame [m]
MASS = 18         # body mass [kg]; MASS:MASS+13 are the 13 inertia parameters
MCOM = 19         # 19:22 first moment h = m c in the body frame [kg m]
INERTIA = 22      # 22:31 rotational inertia about the body origin, row-major [kg m^2]
QMUL = 31         # mimic multiplier (1 for an independent joint)
QOFF = 32         # mimic offset (0 for an independent joint)
DAMPING = 33      # viscous coefficient [N m s/rad or N s/m]
FRICTION = 34     # Coulomb friction [N m or N]
ARMATURE = 35     # reflected rotor inertia of the body's joint [kg m^2 revolute, kg prismatic]
NCOL = 36
# Base row (index nb):
GRAVITY = 0       # 0:3 gravity acceleration the kernels apply, in their root frame [m/s^2]
NQ = 3            # number of kernel coordinates (the model's nv)
ROOT = 4          # root joint: FIXED_ROOT, FLOATING_ROOT or PLANAR_ROOT
WORLD_GRAVITY = 5  # 5:8 gravity in the world frame [m/s^2] (a floating or planar root:
#                   the kernels then see GRAVITY = 0, it enters through the base acceleration)
ROOT_ROT = 8      # 8:17 rotation world <- root joint frame (Model.root_placement), row-major
# Joint types in JTYPE (and Model.joint_type).
REVOLUTE, PRISMATIC = 0, 1
# Root joints in the base row's ROOT column (and Model.root_joint).
FIXED_ROOT, FLOATING_ROOT, PLANAR_ROOT = 0, 1, 2
