"""A node's robot model without ROS: :class:`ModelHolder` (the description, the payloads, the status).

A description (URDF or MJCF text) is loaded with the loops and actuators files read once at start-up;
a payload replaces any payload set before on the same link, payloads on different links add up, and
the model is ``base_model`` with them (:meth:`ModelHolder.rebuild`), so a new description keeps them.
Every model goes through the node's check (``check(model, joints_changed)``: None or the problem)
before the node uses it. A model the check refuses is still ``model`` (with the error status): the
services answer from it, and a parameter change that fixes what the check refused (an
``impedance_link``, a mode) rebuilds the node's pipeline on it without a new description. The holder changes the model by replacing it, never in place, so a service
thread reading ``model`` sees one whole model.

Payload entries: link -> (mass [kg], com (3,) in the link frame [m], inertia (3, 3) about the com in
link axes [kg m^2]).
"""
import os
import time

import numpy as np

import robot_dynamics as rd

from ..constraints.load import load_description
from ..errors import InputError, ParameterError


class ModelHolder:
    """The model of a node, its payloads and its status.

    Args:
        p: the node's parameters (read here: ``gravity``, ``skip_missing_meshes``, ``loops_file``,
            ``actuators_file``, ``actuated_joints``; ``friction_smoothing`` by the services).
        log: a logger (``info``, ``warning``, ``error`` of a text).
        check: ``check(model, joints_changed)`` -> None, or the problem that refuses the model.
        base_state: ``base_state(model)`` -> (q_root (root_nq,), v_root (root_nv,)), the base state the
            services use for a floating or planar model (InputError if there is none).

    Attributes: ``base_model`` (the description's model), ``model`` (with the payloads; None: no model),
    ``payloads``, ``source`` (where the description comes from), ``status`` / ``error`` (``status``
    'waiting...', 'ok', 'error...'), ``updates``, ``rejected``, ``description_seconds`` ((wall, CPU) [s]
    of the last description), ``loops`` / ``actuators`` (parsed files, or None) and their errors,
    ``service_loop`` (the services' ClosedLoop of the current model, made by :mod:`robot_dynamics.ros.queries`).
    """

    def __init__(self, p, log, check, base_state):
        self.p, self.log, self.check, self.base_state = p, log, check, base_state
        self.base_model = self.model = None
        self.payloads = {}
        self.source, self.status, self.error = '', 'waiting', ''
        self.updates = self.rejected = 0
        self.description_seconds = None
        self.loops = self.actuators = None
        self.loops_error = self.actuators_error = ''
        self.service_loop = None

    # --- the description ---------------------------------------------------------------------------
    def read_files(self):
        """Read ``loops_file`` and ``actuators_file`` (once, at start-up); '' or the first problem (then the
        error status: no model until the node is restarted with a usable file)."""
        if self.p.loops_file:
            from ..model.loops import parse_loops
            self.loops, self.loops_error = self._read('loops_file', parse_loops)
        if self.p.actuators_file:
            from ..model.actuators import parse_actuators
            self.actuators, self.actuators_error = self._read('actuators_file',
                                                              lambda text: parse_actuators(text + '\n'))
        return self.loops_error or self.actuators_error

    def _read(self, parameter, parse):
        value, error = read_model_file(parameter, getattr(self.p, parameter), parse)
        if error:
            self.status, self.error = 'error', error
            self.log.error(error + '; no model until the node is restarted with a usable file')
        return value, error

    def set_description(self, xml, fatal, path=None):
        """Load the description ``xml`` (text or bytes; never opened as a path: a description comes from the
        network), ``path`` the urdf_path file it was read from (an MJCF is compiled from it, for its
        <include> and asset files). Rejected: counted and logged, the previous model kept; with ``fatal``,
        ParameterError instead."""
        started = time.perf_counter(), time.thread_time()
        try:
            self._take(xml, fatal, path, started)
        finally:
            self.description_seconds = since(started)

    def _take(self, xml, fatal, path, started):
        if self.loops_error or self.actuators_error:
            self.rejected += 1
            return
        try:
            base = load_description(xml, gravity=tuple(self.p.gravity), loops=self.loops, path=path,
                                    actuators=self.actuators, skip_missing_meshes=self.p.skip_missing_meshes)
        except (ValueError, OSError) as exc:
            return self._reject(exc, xml, path, fatal, started)
        for link in [link for link in self.payloads if link not in base.link_names]:
            del self.payloads[link]
            self.log.warning('payload on %r dropped: the new description has no such link' % link)
        old = self.model
        self.base_model = base
        problem = self.rebuild(joints_changed=old is None or old.joint_names != base.joint_names)
        self.updates += 1
        if problem and fatal:
            raise ParameterError(problem)
        if not problem:
            self.log.info('model %r from %s in %.3f s: %d joints (%s), %.2f kg%s%s'
                          % (base.name, self.source, since(started)[0], len(base.joint_names),
                             ', '.join(base.joint_names), base.total_mass,
                             '' if base.root_joint is None else ', %s base' % base.root_joint,
                             '' if not base.loops else ', %d loop(s) from %s (actuated: %s)' % (
                                 len(base.loops), self.p.loops_file, ', '.join(self.actuated(base)))))

    def _reject(self, exc, xml, path, fatal, started):
        text = 'robot description rejected (%s): %s' % (self.source, exc)
        if self.loops and self._tree_loads(xml, path):           # the loops' fault: an error status, no exit
            text = ("robot description rejected (%s): the loops of loops_file %r do not fit it: %s"
                    % (self.source, self.p.loops_file, exc))
            fatal = False
        if fatal:
            raise ParameterError(text + ' (decided in %.3f s, %.3f s of CPU)' % since(started)) from None
        self.rejected += 1
        self.error = text
        self.status = 'error' if self.model is None else 'error (previous model kept)'
        self.log.error(text + (' Keeping the previous model.' if self.model else '')
                       + ' (decided in %.3f s, %.3f s of CPU)' % since(started))

    def _tree_loads(self, xml, path):
        """True if the description loads without the loops (then they are what does not fit)."""
        try:
            load_description(xml, gravity=tuple(self.p.gravity), path=path,
                             skip_missing_meshes=self.p.skip_missing_meshes)
            return True
        except (ValueError, OSError):
            return False

    def actuated(self, model):
        """The actuated joints of ``model``: ``actuated_joints``, or every joint when it is empty."""
        return list(self.p.actuated_joints) or list(model.joint_names)

    def rebuild(self, joints_changed):
        """``model`` = ``base_model`` with the payloads, checked by the node; None or the problem (logged,
        and the error status)."""
        model = self.base_model
        for link, (m, com, inertia) in self.payloads.items():
            model = model.with_payload(link, m, com, inertia)
        self.model = model
        self.service_loop = None
        problem = self.check(model, joints_changed)
        if problem:
            self.status, self.error = 'error', problem
            self.log.error(problem)
        else:
            self.status, self.error = 'ok', ''
        return problem

    # --- payloads ------------------------------------------------------------------------------------
    def payload_mass(self):
        """The payloads' total mass [kg]."""
        return float(sum(m for m, _, _ in self.payloads.values()))

    def set_payload(self, link, entry):
        """Set or replace the payload ``entry`` (mass, com, inertia) on ``link``; None, or the problem (then
        nothing changed)."""
        try:
            with np.errstate(over='ignore', invalid='ignore'):
                candidate = self.base_model.with_payload(link, *entry)  # checks link, mass, com
            check_payload(candidate, entry[2])
        except ValueError as exc:
            return str(exc)
        problem = self._change(lambda payloads: payloads.__setitem__(link, entry))
        if not problem:
            self.log.info('payload of %.4g kg on %r' % (entry[0], link))
        return problem

    def clear_payload(self, link):
        """Clear the payload on ``link`` ('' : every payload): (what was done, None) or (None, the problem)."""
        if link and link not in self.payloads:
            if link not in self.base_model.link_names:
                return None, ('unknown link %r; the model\'s links are: %s'
                              % (link, ', '.join(self.base_model.link_names)))
            text, edit = 'no payload on %r' % link, lambda payloads: None
        else:
            text = 'payload on %r cleared' % link if link else 'all payloads cleared'
            edit = lambda payloads: payloads.pop(link) if link else payloads.clear()      # noqa: E731
        problem = self._change(edit)
        if problem:
            return None, problem
        self.log.info(text)
        return text, None

    def _change(self, edit):
        """Apply ``edit`` to the payloads and rebuild; undone (and rebuilt) on a problem, which is returned."""
        old = dict(self.payloads)
        edit(self.payloads)
        problem = self.rebuild(joints_changed=False)
        if problem:
            self.payloads = old
            self.rebuild(joints_changed=False)
        return problem

    def model_without_payload(self, link):
        """The base model with every payload but the one on ``link`` (what identifies a new one there)."""
        model = self.base_model
        for other, (m, com, inertia) in self.payloads.items():
            if other != link:
                model = model.with_payload(other, m, com, inertia)
        return model

    # --- answers -------------------------------------------------------------------------------------
    def no_model(self, response):
        """``response`` (a service response with ``success`` and ``message``) answered: no model yet, and why."""
        response.success = False
        response.message = 'no robot model yet (%s)' % (self.error or self.status)
        return response

    def status_values(self):
        """[(key, value)] of the model for a diagnostic status."""
        values = [('model_source', self.source), ('model_status', self.status), ('model_updates', self.updates),
                  ('descriptions_rejected', self.rejected)]
        if self.description_seconds is not None:
            values += [('last_description_seconds', '%.4f' % self.description_seconds[0]),
                       ('last_description_cpu_seconds', '%.4f' % self.description_seconds[1])]
        if self.p.loops_file:
            values.append(('loops_file', self.p.loops_file))
        if self.p.actuators_file:
            values.append(('actuators_file', self.p.actuators_file))
        model = self.model
        if model is not None and model.loops:
            values += [('loops', ', '.join(loop.name for loop in model.loops)),
                       ('actuated_joints', ', '.join(self.actuated(model)))]
        if model is not None:
            values += [('robot', model.name), ('joints', ', '.join(model.joint_names)),
                       ('payload_mass_kg', '%.4g' % self.payload_mass()),
                       ('payload_links', ', '.join(sorted(self.payloads)))]
        return values


def check_payload(model, inertia):
    """Raise ValueError unless a payload is usable: its (finite, symmetric) inertia (3, 3) about its centre
    of mass is physical (positive semi-definite, zero being a point mass, and each principal moment at most
    the sum of the other two) and the loaded ``model`` still gives finite dynamics (a mass of 1e308 kg
    passes Model.with_payload but overflows every later computation)."""
    moments = np.linalg.eigvalsh(inertia)
    tol = 1e-9 * max(float(np.max(np.abs(moments))), 1e-300)
    if moments[0] < -tol:
        raise InputError('payload inertia is not positive semi-definite (principal moments %s)'
                         % np.array2string(moments, precision=6))
    if moments[2] > moments[0] + moments[1] + tol:
        raise InputError('payload inertia violates the triangle inequality (principal moments %s)'
                         % np.array2string(moments, precision=6))
    q = model.neutral()
    try:
        rd.gravity_torques(model, q)        # both raise ValueError on a non-finite result
        rd.mass_matrix(model, q)
    except ValueError as exc:
        raise InputError('the payload makes the dynamics non-finite (%s)' % exc) from None


def since(started):
    """(wall, CPU of this thread) [s] since ``started`` = (time.perf_counter(), time.thread_time())."""
    return time.perf_counter() - started[0], time.thread_time() - started[1]


def read_model_file(parameter, path, parse):
    """(``parse`` of the text of ``path``, '') or (None, why not, naming ``parameter``): a path or
    package://pkg/path, at most 1 MiB read."""
    try:
        with open(resolve_path(path), 'rb') as f:
            text = f.read(1 << 20).decode('utf-8', 'replace')
        return parse(text), ''
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return None, 'parameter %r %r: %s' % (parameter, path, reason)


def resolve_path(path):
    """A file path of ``path``: as it is, or ``package://<package>/<rest>`` in that package's share
    directory (ament index; OSError if the package is not found)."""
    prefix = 'package://'
    if not path.startswith(prefix):
        return path
    package, _, rest = path[len(prefix):].partition('/')
    try:
        from ament_index_python.packages import get_package_share_directory
        share = get_package_share_directory(package)
    except Exception as exc:          # PackageNotFoundError, or no ament index at all
        raise OSError(0, 'package %r not found (%s)' % (package, exc)) from None
    return os.path.join(share, rest)
