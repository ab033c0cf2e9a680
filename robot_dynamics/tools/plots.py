"""PNG plots of a robot's dynamics (matplotlib, Agg backend: no display needed).

Each function computes its data with the library, draws it, saves a PNG
and returns the plotted arrays, so that what is drawn can be checked:

- :func:`plot_gravity`: gravity torque of each joint over its range, the
  other joints held at ``q`` (``G_j(q with q_j swept)``), with the effort
  limits;
- :func:`plot_condition`: condition number of the mass matrix M(q) over a
  grid of two joints (how unevenly the arm's inertia is spread; large
  values mean some directions are much harder to accelerate than others);
- :func:`plot_trajectory`: joint positions, velocities and total energy of
  a simulation run (:class:`robot_dynamics.simulation.SimulationResult`);
- :func:`plot_torques`: measured against predicted joint torques (identification);
- :func:`plot_retimed_torques`: the torques of a retimed trajectory against
  their limits (``robot-dynamics retime --plot``).
"""
import numpy as np

from ..algorithms.crba import mass_matrix
from ..algorithms.rnea import gravity_torques
from ..errors import InputError

DEFAULT_PRISMATIC_SPAN = 0.5     # [m] half-range shown for a prismatic joint without limits


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def joint_range(model, j):
    """(lower, upper, note) to sweep joint index j: its limits when they are
    finite and distinct, else [-pi, pi] (revolute) or +-0.5 m (prismatic)."""
    lo, hi = float(model.lower_limit[j]), float(model.upper_limit[j])
    if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
        return lo, hi, ""
    if model.joints[model.joint_names[j]].type == "prismatic":
        return -DEFAULT_PRISMATIC_SPAN, DEFAULT_PRISMATIC_SPAN, "no limits: +-%g m shown" % DEFAULT_PRISMATIC_SPAN
    return -np.pi, np.pi, "no limits: -pi..pi shown"


def _joint_indices(model, joints, what):
    if joints is None:
        return list(range(model.nq))
    idx = []
    for name in joints:
        if name not in model.joint_names:
            raise InputError("%s: unknown joint %r; the joints are: %s" % (what, name, ", ".join(model.joint_names)))
        idx.append(model.joint_names.index(name))
    return idx


def _base_q(model, q):
    if q is None:
        return model.neutral()
    q = np.asarray(q, dtype=float)
    if q.shape != (model.nq,) or not np.all(np.isfinite(q)):
        raise InputError("q must be %d finite joint positions, got %r" % (model.nq, q))
    return q


def _unit(model, j):
    return ("m", "N") if model.joints[model.joint_names[j]].type == "prismatic" else ("rad", "N m")


def plot_gravity(model, path, q=None, *, joints=None, points=121):
    """Gravity torque of each joint over its range; saves a PNG.

    Args:
        model: :class:`~robot_dynamics.Model`.
        path: output PNG file.
        q: (nq,) configuration of the joints that are not swept (neutral if None).
        joints: names of the joints to plot (all by default).
        points: samples per joint.

    Returns:
        dict with ``joints`` (names), ``positions`` (k, points) swept values,
        ``torque`` (k, points) the swept joint's gravity torque,
        ``all_torques`` (k, points, nq) every joint's, ``effort_limit`` (k,).
    """
    q0 = _base_q(model, q)
    idx = _joint_indices(model, joints, "plot_gravity")
    points = int(points)
    if points < 2:
        raise InputError("points must be >= 2, got %r" % (points,))
    positions, torque, alltau, notes = [], [], [], []
    for j in idx:
        lo, hi, note = joint_range(model, j)
        x = np.linspace(lo, hi, points)
        Q = np.repeat(q0[None, :], points, axis=0)
        Q[:, j] = x
        G = gravity_torques(model, Q)
        positions.append(x)
        torque.append(G[:, j])
        alltau.append(G)
        notes.append(note)
    data = dict(joints=tuple(model.joint_names[j] for j in idx), positions=np.array(positions),
                torque=np.array(torque), all_torques=np.array(alltau),
                effort_limit=np.asarray(model.effort_limit)[idx])
    plt = _pyplot()
    k = len(idx)
    cols = min(3, k)
    rows = (k + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    scale = max(float(np.max(np.abs(torque))), 1e-300)
    for a, (j, x, t, note) in enumerate(zip(idx, positions, torque, notes)):
        ax = axes[a // cols][a % cols]
        xu, tu = _unit(model, j)
        ax.plot(x, t, color="C0", lw=1.8)
        if np.ptp(t) < 1e-9 * scale:          # flat (e.g. a vertical axis): don't magnify rounding residue
            mid = 0.0 if np.max(np.abs(t)) < 1e-9 * scale else float(np.mean(t))
            ax.set_ylim(mid - 0.05 * scale, mid + 0.05 * scale)
        lim = model.effort_limit[j]
        if np.isfinite(lim) and lim < 4 * max(np.max(np.abs(t)), 1e-9):
            ax.axhline(lim, color="C3", ls="--", lw=1, label="effort limit")
            ax.axhline(-lim, color="C3", ls="--", lw=1)
            ax.legend(loc="best", fontsize=7)
        ax.axhline(0.0, color="0.6", lw=0.6)
        ax.axvline(q0[j], color="0.5", ls=":", lw=1)
        ax.set_title(model.joint_names[j] + ("\n(%s)" % note if note else ""), fontsize=9)
        ax.set_xlabel("%s [%s]" % (model.joint_names[j], xu), fontsize=8)
        ax.set_ylabel("gravity torque [%s]" % tu, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for a in range(k, rows * cols):
        axes[a // cols][a % cols].axis("off")
    fig.suptitle("%s: gravity torque of each joint over its range (others at q0, dotted line)" % model.name,
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return data


def plot_condition(model, path, q=None, *, joints=None, points=61):
    """Condition number of M(q) over a grid of two joints; saves a PNG.

    Args:
        joints: two joint names (default: the 2nd and 3rd joints, e.g. the
            shoulder and elbow of an arm, or the first two of a 2-joint robot).
        q: (nq,) configuration of the other joints (neutral if None).
        points: grid size per axis.

    Returns:
        dict with ``joints`` (2 names), ``x`` (points,), ``y`` (points,),
        ``condition`` (points, points) with ``condition[r, c]`` at
        ``(x[c], y[r])``.
    """
    if model.nq < 2:
        raise InputError("plot_condition needs a robot with at least 2 joints; %r has %d" % (model.name, model.nq))
    if joints is None:
        joints = model.joint_names[1:3] if model.nq >= 3 else model.joint_names[:2]
    idx = _joint_indices(model, joints, "plot_condition")
    if len(idx) != 2 or idx[0] == idx[1]:
        raise InputError("plot_condition needs two different joints, got %r" % (list(joints),))
    q0 = _base_q(model, q)
    points = int(points)
    if points < 2:
        raise InputError("points must be >= 2, got %r" % (points,))
    (a, b) = idx
    lo_a, hi_a, _ = joint_range(model, a)
    lo_b, hi_b, _ = joint_range(model, b)
    x, y = np.linspace(lo_a, hi_a, points), np.linspace(lo_b, hi_b, points)
    X, Y = np.meshgrid(x, y)
    Q = np.repeat(q0[None, :], points * points, axis=0)
    Q[:, a], Q[:, b] = X.ravel(), Y.ravel()
    cond = np.linalg.cond(mass_matrix(model, Q)).reshape(points, points)
    data = dict(joints=(model.joint_names[a], model.joint_names[b]), x=x, y=y, condition=cond)
    plt = _pyplot()
    from matplotlib.colors import LogNorm
    fig, ax = plt.subplots(figsize=(6.2, 4.8))
    mesh = ax.pcolormesh(x, y, cond, shading="auto", cmap="viridis",
                         norm=LogNorm(vmin=max(cond.min(), 1.0), vmax=max(cond.max(), 1.0 + 1e-9)))
    fig.colorbar(mesh, ax=ax, label="cond(M)")
    ax.plot(q0[a], q0[b], "w+", ms=10, mew=1.5)
    ax.set_xlabel("%s [%s]" % (model.joint_names[a], _unit(model, a)[0]))
    ax.set_ylabel("%s [%s]" % (model.joint_names[b], _unit(model, b)[0]))
    ax.set_title("%s: condition number of M(q)\n(other joints at q0, +)" % model.name, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return data


def plot_trajectory(result, path, *, joints=None):
    """Joint positions, velocities and total energy of a simulation run; saves a PNG.

    Args:
        result: :class:`robot_dynamics.simulation.SimulationResult`.
        joints: names to plot (all by default).

    Returns:
        dict with ``t`` (N,), ``joints``, ``q`` (N, k), ``qd`` (N, k),
        ``energy`` (N,) as plotted.
    """
    names = tuple(result.joint_names)
    if joints is None:
        idx = list(range(len(names)))
    else:
        missing = [j for j in joints if j not in names]
        if missing:
            raise InputError("plot_trajectory: unknown joints %s; the run has: %s" % (missing, ", ".join(names)))
        idx = [names.index(j) for j in joints]
    data = dict(t=np.asarray(result.t), joints=tuple(names[i] for i in idx), q=np.asarray(result.q)[:, idx],
                qd=np.asarray(result.qd)[:, idx], energy=np.asarray(result.energy))
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 8.0), sharex=True)
    for c, name in enumerate(data["joints"]):
        axes[0].plot(data["t"], data["q"][:, c], lw=1.4, label=name)
        axes[1].plot(data["t"], data["qd"][:, c], lw=1.2, label=name)
    axes[0].set_ylabel("q [rad | m]")
    axes[1].set_ylabel("qd [rad/s | m/s]")
    axes[0].legend(loc="best", fontsize=7, ncol=2)
    e = data["energy"]
    axes[2].plot(data["t"], e, color="k", lw=1.4)
    drift = (e[-1] - e[0]) if len(e) else 0.0
    axes[2].ticklabel_format(axis="y", useOffset=False)
    half = 0.01 * max(float(np.max(np.abs(e))) if len(e) else 0.0, 1e-3)
    if len(e) and np.ptp(e) < 2 * half:           # conserved: show it flat, not its rounding noise magnified
        mid = 0.5 * (float(np.max(e)) + float(np.min(e)))
        axes[2].set_ylim(mid - half, mid + half)
    axes[2].set_ylabel("energy T + U [J]")
    axes[2].set_xlabel("time [s]")
    axes[2].set_title("total energy: %.6g J -> %.6g J (change %.3g J)" % (e[0], e[-1], drift), fontsize=9)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle("simulated trajectory (%s, dt = %g s)" % (result.integrator, result.dt), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return data


def plot_torques(t, measured, predicted, joint_names, path, *, title="measured and predicted joint torques"):
    """Measured versus predicted torques of each joint over time, with the residual RMS; saves a PNG.

    Args:
        t: (N,) sample times [s].
        measured, predicted: (N, nq) torques [N m | N], columns in ``joint_names`` order.
        joint_names: the nq joint names.
        path: output PNG file.
        title: the figure's title.

    Returns:
        dict with ``t``, ``measured``, ``predicted``, ``joints`` and ``rms`` (nq,)
        of measured - predicted, as plotted.
    """
    t, measured, predicted = np.asarray(t, float), np.asarray(measured, float), np.asarray(predicted, float)
    names = tuple(joint_names)
    if measured.shape != predicted.shape or measured.shape != (t.size, len(names)):
        raise InputError("plot_torques: measured %s and predicted %s must both be (%d, %d) for t (%d,) and "
                         "%d joints" % (measured.shape, predicted.shape, t.size, len(names), t.size, len(names)))
    rms = np.sqrt(np.mean((measured - predicted) ** 2, axis=0))
    data = dict(t=t, measured=measured, predicted=predicted, joints=names, rms=rms)
    plt = _pyplot()
    k = len(names)
    fig, axes = plt.subplots(k, 1, figsize=(7.5, 1.5 + 1.45 * k), sharex=True, squeeze=False)
    for j, name in enumerate(names):
        ax = axes[j][0]
        ax.plot(t, measured[:, j], color="0.55", lw=0.8, label="measured")
        ax.plot(t, predicted[:, j], color="C0", lw=1.2, label="predicted")
        ax.set_ylabel("%s\n[N m | N]" % name, fontsize=7)
        ax.set_title("residual RMS %.3g" % rms[j], fontsize=7, loc="right")
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].legend(loc="upper left", fontsize=7, ncol=2)
    axes[-1][0].set_xlabel("time [s]")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return data


def plot_retimed_torques(traj, path):
    """Each joint's motor torque over time of a retimed trajectory (:func:`robot_dynamics.retime`) with its
    (scaled) effort limit; saves a PNG. Returns the plotted (t [s] (N,), tau [N m | N] (N, nq)) at 10 times
    the grid density. (:func:`plot_torques` plots measured against predicted torques.)"""
    plt = _pyplot()
    t = np.linspace(0.0, traj.duration, 10 * traj.t.size)
    tau = traj.torques(t)
    n = len(traj.joint_names)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False, sharex=True)
    for j, name in enumerate(traj.joint_names):
        ax = axes[j // cols][j % cols]
        ax.plot(t, tau[:, j], color="C0", lw=1.4, label="torque")
        lim = traj.effort_limit[j]
        if np.isfinite(lim):
            ax.axhline(lim, color="C3", ls="--", lw=1, label="effort limit")
            ax.axhline(-lim, color="C3", ls="--", lw=1)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("t [s]", fontsize=8)
        ax.set_ylabel("torque [N m | N]", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if j == 0:
            ax.legend(loc="best", fontsize=7)
    for a in range(n, rows * cols):
        axes[a // cols][a % cols].axis("off")
    fig.suptitle("retimed trajectory: %.4g s; joint torques and their limits" % traj.duration, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return t, tau
