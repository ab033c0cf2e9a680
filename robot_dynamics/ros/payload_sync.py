"""The torque node's payloads, set on the ``dynamics_services`` node that serves its read-only services.

The launch files start ``dynamics_services`` beside dynamics_node, under
dynamics_node's service names (docs/NODES.md, "Which requests go where"). A
client that sets a payload on dynamics_node (``~/set_payload``, or
``~/identify_payload`` with ``apply``) and then asks
``<dynamics_node>/gravity_compensation`` must get the torque with that
payload. So, with ``services_node`` set, dynamics_node sets the same payloads
there through that node's own ``~/set_payload``: every payload cleared, then
each one set, in one client's order (the service takes them in order). It
sends once the service is there, again after each change, and again when the
service comes back after it was gone (a restarted node has no payload);
:attr:`state` says how far it got (dynamics_node reports it on /diagnostics).
"""
from geometry_msgs.msg import Inertia
from robot_dynamics_interfaces.msg import Payload
from robot_dynamics_interfaces.srv import SetPayload


def payload_requests(payloads):
    """SetPayload requests that make a node's payloads ``payloads``.

    Args:
        payloads: link -> (mass [kg], com (3,) in the link frame [m], inertia (3, 3) about
            the com in link axes [kg m^2]), as ModelNode.payloads.

    Returns:
        [SetPayload.Request]: clear every payload, then set each one.
    """
    requests = [SetPayload.Request(clear=True)]           # empty link: every payload
    for link, (m, com, inertia) in payloads.items():
        msg = Inertia(m=float(m), ixx=float(inertia[0, 0]), ixy=float(inertia[0, 1]), ixz=float(inertia[0, 2]),
                      iyy=float(inertia[1, 1]), iyz=float(inertia[1, 2]), izz=float(inertia[2, 2]))
        msg.com.x, msg.com.y, msg.com.z = (float(c) for c in com)
        requests.append(SetPayload.Request(payload=Payload(link=link, inertia=msg)))
    return requests


def _key(payloads):
    return tuple(sorted((link, float(m), tuple(map(float, com)), tuple(map(float, inertia.ravel())))
                        for link, (m, com, inertia) in payloads.items()))


class PayloadSync:
    """Keeps ``<services_node>/set_payload`` at the payloads of ``node``.

    Args:
        node: the torque node (an rclpy Node: the client, the logger).
        holder: its ModelHolder (``payloads``: link -> (mass, com, inertia)).
        services_node: the fully qualified name of the dynamics_services node.
    """

    def __init__(self, node, holder, services_node):
        self.node, self.holder = node, holder
        self.service_name = services_node.rstrip('/') + '/set_payload'
        self.client = node.create_client(SetPayload, self.service_name)
        self._sent = None                 # the payloads (key) last sent, or None
        self._confirmed = None            # the payloads (key) the services node last confirmed, or None
        self._answers = []
        self._progress = 'waiting for %s' % self.service_name

    @property
    def state(self):
        """'in sync' while the services node has the node's current payloads, else how far it got."""
        return 'in sync' if _key(self.holder.payloads) == self._confirmed else self._progress

    def tick(self):
        """Send the payloads if they changed since the last sending and the service is there; read
        the answers of the last sending. Call it periodically (a timer of the node's thread)."""
        if self._answers and all(f.done() for f in self._answers):
            failed = [f.result().message if f.exception() is None else str(f.exception()) for f in self._answers
                      if f.exception() is not None or not f.result().success]
            if failed:
                self._progress = 'refused: %s' % '; '.join(failed)
                self.node.get_logger().error('%s refused the payloads: %s' % (self.service_name, '; '.join(failed)))
            else:
                self._confirmed = self._sent
            self._answers = []
        if not self.client.service_is_ready():
            # Gone (or not there yet): a services node that comes back has no payload; send them all again.
            self._sent = self._confirmed = None
            self._answers = []
            self._progress = 'waiting for %s' % self.service_name
            return
        key = _key(self.holder.payloads)
        if key == self._sent:
            return
        self._sent = key
        self._progress = 'sending'
        self._answers = [self.client.call_async(r) for r in payload_requests(self.holder.payloads)]
