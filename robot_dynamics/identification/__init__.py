"""The identification layer, built on the regressor of the algorithms layer:
base parameters, least-squares and physically consistent identification of
the inertial and friction parameters, payload identification, and the
momentum observer of external joint torques."""
