"""The algorithms layer: recursive Newton-Euler, composite-rigid-body and
articulated-body algorithms, kinematics, Coriolis matrix and energies, each
on one state or a batch through :mod:`.dispatch`."""
