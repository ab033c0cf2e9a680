"""dynamics_node's payload identification job without ROS: the checks of a request, the collection of
joint states over a duration, the fit in a thread of its own (:class:`.payload_fit.PayloadJob`), and
the text of the answer.

A request names a ``link``, a ``duration`` [s] to collect joint states for (0: the given samples
instead), ``samples`` (joint states) and whether to ``apply`` the estimate.
"""
import math

from ..model.model import describe_base
from .payload_fit import PayloadJob, SampleBuffer
from .profiles import JOINT_TORQUE


def request_problem(base_model, link, duration, n_samples, *, running, max_points, max_duration, effort_kind):
    """None if a request can start on ``base_model`` (the model without payloads), else what is wrong.
    ``running``: an identification runs already; ``max_points``: most samples a request may give;
    ``max_duration`` [s]: longest collection; ``effort_kind``: what joint states carry as effort."""
    if n_samples > max_points:
        return ('samples has %d joint states, more than max_request_points (%d); give a duration to collect '
                'them from joint_states instead' % (n_samples, max_points))
    if running:
        return 'an identification is running already; call again when it has answered'
    if base_model.root_joint is not None:
        return ('%s: payload identification needs a fixed base (the base wrench that a moving base\'s '
                'contacts give is not measured)' % describe_base(base_model))
    if base_model.loops:
        return ('robot %r has closed loops (loops_file): payload identification needs a tree (the loop forces '
                'are not measured)' % base_model.name)
    if link not in base_model.link_names:
        return 'unknown link %r; the model\'s links are: %s' % (link, ', '.join(base_model.link_names))
    if base_model.link_body[base_model.link_index(link)] < 0:
        return 'link %r is fixed to the base: a payload on it exerts no joint torque' % link
    if not (math.isfinite(duration) and 0 <= duration <= max_duration):
        return ('duration must be 0 (use samples) or up to identify_max_duration (%g s), got %r'
                % (max_duration, duration))
    if duration == 0 and not n_samples:
        return 'no data: give a duration > 0 to collect joint states, or samples'
    if duration > 0 and effort_kind != JOINT_TORQUE:
        return ('collecting joint states needs joint torques in their effort field, and joint_state_effort is '
                '%r (the vendor profile\'s; a UR arm\'s driver publishes motor currents there): give samples '
                'with joint torques instead (duration 0)' % effort_kind)
    return None


class Identification:
    """One request in progress: collecting (``collection`` a SampleBuffer until node clock ``end_ns``
    [ns]), then fitting; ``ticket``: whom to answer (opaque here), ``base``: the base model at the
    request (the estimate is applied only if it is still the same)."""

    def __init__(self, model, link, *, static, rest_velocity, ticket=None, apply=False, base=None):
        self.job = PayloadJob(model, link, static=static, rest_velocity=rest_velocity)
        self.ticket, self.apply, self.base = ticket, apply, base
        self.collection = None
        self.end_ns = 0

    def collect(self, now_ns, duration):
        """Collect joint states for ``duration`` [s] from ``now_ns``."""
        self.end_ns = now_ns + int(duration * 1e9)
        self.collection = SampleBuffer()

    def fit(self, messages):
        """Fit given samples (joint-state messages) at once, in the job's thread."""
        self.job.start(messages=list(messages))

    def tick(self, now_ns):
        """At node clock ``now_ns``: end the collection when its time is up (the fit starts). True once the
        fit is done (the job's ``estimate`` or ``error``)."""
        if self.collection is not None:
            if now_ns >= self.end_ns:
                samples, self.collection = self.collection, None
                self.job.start(samples=samples.arrays())
            return False
        return self.job.done.is_set()

    def state(self):
        """'collecting (n samples)' or 'fitting'."""
        return 'collecting (%d samples)' % len(self.collection) if self.collection is not None else 'fitting'

    def summary(self):
        """The text of a successful fit: mass, centre of mass, the samples used."""
        est = self.job.estimate
        return 'payload on %r: %.4g kg (std %.2g), com [%s] m, from %d samples' % (
            est.link, est.mass, est.mass_std, ', '.join('%.4g' % c for c in est.com), self.job.used)
