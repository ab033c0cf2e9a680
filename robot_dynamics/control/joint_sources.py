"""Where the positions of the joints the main joint-state stream lacks come from (no ROS needed).

A robot description may have joints that the driver's joint-state topic does
not carry: a Franka with its gripper (franka_bringup's ``load_gripper:=true``)
has the finger joints in ``robot_description``, while ``franka/joint_states``
(the arm's joint_state_broadcaster) carries only the 7 arm joints; the
fingers come on ``franka_gripper/joint_states`` from the gripper's own node.
dynamics_node needs a position for every model joint, so such joints get one
of two sources (dynamics_node's parameters):

- ``extra_joint_state_topics``: more JointState topics, merged by name into
  the same state (:meth:`JointSources.merge`). Their messages give no torque
  by themselves (the commands follow the main stream, one per message); their
  joints are judged stale after ``extra_joint_state_timeout`` instead of
  ``joint_timeout`` (a gripper publishes far slower than an arm), and a stale
  one stops the torques as any stale joint does.
- ``held_joints`` / ``held_positions``: joints held at fixed positions, at
  rest (:meth:`.joint_map.JointStateMerger.hold`), never stale.

A model joint that neither the main stream nor these give a position to keeps
the node from commanding: :meth:`JointSources.waiting` says so once, naming
the joints and the parameters that fix it.

Times are integers [ns] of the node's clock.
"""
import numpy as np

from .joint_map import JointMapError

#: [ns] How long the main stream must have come, with joints still missing, before the warning.
MISSING_GRACE_NS = 1_000_000_000


class JointSources:
    """The held joints and the extra topics' joints of one node (see the module doc).

    Args:
        held: {joint name: position [rad or m]} (``held_joints`` with ``held_positions``).
        extra_topics: the extra topics' names (for the warning).
        extra_timeout_ns: [ns] staleness limit of the joints the extra topics set.
    """

    def __init__(self, held, extra_topics, extra_timeout_ns):
        self.held = dict(held)
        self.extra_topics = list(extra_topics)
        self.extra_timeout_ns = int(extra_timeout_ns)
        self._first_wait_ns = None          # when the main stream first waited for the missing joints
        self._warned = set()                # the sets of missing joints already warned about

    def attach(self, merger, staleness):
        """Give a new ``merger`` (JointStateMerger) and its ``staleness`` (JointStaleness) the held joints;
        returns the held names that are not joints of the merger (to warn about)."""
        unknown = merger.hold(self.held)
        staleness.hold(sorted(merger.held))
        return unknown

    def merge(self, merger, staleness, names, position, velocity, effort, now_ns):
        """Merge one message of an extra topic (by name); None, or why it was ignored.

        Args:
            names, position, velocity, effort: the message's fields (velocity and effort may be empty).
            now_ns: when the node took it [ns].
        """
        try:
            merger.update(names, position, velocity)
        except JointMapError as exc:
            return 'message ignored: %s' % exc
        index = merger.last_indices()
        if type(index) is slice or len(index):
            staleness.touch(index, now_ns)
            staleness.set_limit(index, self.extra_timeout_ns, 'extra_joint_state_timeout')
            if len(effort):
                try:
                    merger.update_effort(effort)
                except JointMapError as exc:
                    return 'efforts ignored: %s' % exc
        return None

    def waiting(self, merger, now_ns, topic):
        """The main stream's message (on ``topic``) gave no torque because joints have no position yet: the
        warning's text, once per set of missing joints and only after MISSING_GRACE_NS of waiting; else None."""
        if self._first_wait_ns is None:
            self._first_wait_ns = now_ns
        missing = tuple(merger.missing())
        if now_ns - self._first_wait_ns < MISSING_GRACE_NS or not missing or missing in self._warned:
            return None
        self._warned.add(missing)
        extra = ', '.join(self.extra_topics) if self.extra_topics else 'none'
        return ('no position for joint(s) %s of the model after %.1f s of joint states on %s (extra_joint_state_'
                'topics: %s): the node commands nothing until every model joint has a position. Name the topic '
                'that carries them in the parameter extra_joint_state_topics (a Franka gripper\'s: '
                'franka_gripper/joint_states), or hold them with held_joints and held_positions'
                % (', '.join(missing), (now_ns - self._first_wait_ns) * 1e-9, topic, extra))


def held_positions(names, positions):
    """{name: position} of ``held_joints`` and ``held_positions``; ValueError naming what is wrong."""
    names, positions = list(names), list(positions)
    if len(names) != len(positions):
        raise ValueError("parameter 'held_positions' has %d values for the %d joints of 'held_joints' (one "
                         "position per held joint, in its order)" % (len(positions), len(names)))
    if len(set(names)) != len(names):
        raise ValueError("parameter 'held_joints' names a joint more than once: %s" % names)
    if not all(np.isfinite(positions)):
        raise ValueError("parameter 'held_positions' must hold finite positions, got %s" % positions)
    return dict(zip(names, map(float, positions)))
