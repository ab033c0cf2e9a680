"""The record of a simulation run, saved as .npz or .csv; a text progress bar."""
import os
import sys
import time
from dataclasses import dataclass
from typing import Tuple

import numpy as np
from ..errors import InputError


@dataclass(frozen=True)
class SimulationResult:
    """Samples of one run of :func:`robot_dynamics.simulate`.

    Attributes:
        t: (N,) sample times [s].
        q, qd: (N, nq) joint positions and velocities, in ``joint_names`` order.
        tau: (N, nq) motor torques applied from each sample on (the effort
            command after PD and clamping) [N m or N]; friction, stops and
            external wrenches are not included.
        energy: (N,) total mechanical energy ``T + U`` [J]
            (:func:`robot_dynamics.kinetic_energy` + :func:`robot_dynamics.potential_energy`).
        joint_names: names of the columns of q, qd and tau.
        dt: physics step [s]; samples are ``record_every`` steps apart.
        integrator: name of the integrator.
        wall_time: seconds of computer time the run took (0 for a loaded result).
    """
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    energy: np.ndarray
    joint_names: Tuple[str, ...]
    dt: float
    integrator: str
    wall_time: float = 0.0

    @property
    def real_time_factor(self):
        """Simulated time over wall time (how much faster than real time)."""
        return (self.t[-1] - self.t[0]) / self.wall_time if self.wall_time > 0 else float("inf")

    def save(self, path):
        """Write the result to ``path``: ``.npz`` (numpy arrays and metadata) or
        ``.csv`` (one row per sample: t, q[name]..., qd[name]..., tau[name]..., energy)."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext == ".npz":
            np.savez(path, t=self.t, q=self.q, qd=self.qd, tau=self.tau, energy=self.energy,
                     joint_names=np.array(self.joint_names), dt=self.dt, integrator=self.integrator)
        elif ext == ".csv":
            names = ["t"] + ["%s[%s]" % (k, n) for k in ("q", "qd", "tau") for n in self.joint_names] + ["energy"]
            table = np.column_stack([self.t, self.q, self.qd, self.tau, self.energy])
            header = "# robot_dynamics simulation: integrator=%s dt=%r\n%s" % (
                self.integrator, self.dt, ",".join(names))
            np.savetxt(path, table, delimiter=",", header=header, comments="", fmt="%.17g")
        else:
            raise InputError("result path must end in .npz or .csv, got %r" % path)

    @classmethod
    def load(cls, path):
        """Read a result written by :meth:`save`."""
        path = os.fspath(path)
        if path.lower().endswith(".npz"):
            with np.load(path) as f:
                return cls(f["t"], f["q"], f["qd"], f["tau"], f["energy"], tuple(f["joint_names"].tolist()),
                           float(f["dt"]), str(f["integrator"]))
        with open(path) as f:
            meta = dict(kv.split("=", 1) for kv in f.readline().split(":", 1)[1].split())
            columns = f.readline().strip().split(",")
            table = np.loadtxt(f, delimiter=",", ndmin=2)
        names = tuple(c[2:-1] for c in columns if c.startswith("q["))
        n = len(names)
        return cls(table[:, 0], table[:, 1:1 + n], table[:, 1 + n:1 + 2 * n], table[:, 1 + 2 * n:1 + 3 * n],
                   table[:, -1], names, float(meta["dt"]), meta["integrator"])


class ProgressBar:
    """A one-line text progress bar on a stream (stderr), redrawn at most every 0.2 s."""

    def __init__(self, total, stream=None, width=30, label="simulating"):
        self.total, self.width, self.label = max(int(total), 1), width, label
        self.stream = sys.stderr if stream is None else stream
        self.start = self._last = time.perf_counter()

    def update(self, done, sim_time):
        now = time.perf_counter()
        if now - self._last < 0.2 and done < self.total:
            return
        self._last = now
        frac = min(done / self.total, 1.0)
        fill = int(round(frac * self.width))
        wall = now - self.start
        rate = "%.1fx real time" % (sim_time / wall) if wall > 0 else ""
        self.stream.write("\r%s [%s%s] %3d%%  t = %.2f s  %s" % (
            self.label, "#" * fill, "." * (self.width - fill), int(frac * 100), sim_time, rate))
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()
