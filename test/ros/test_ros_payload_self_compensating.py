"""A payload that only dynamics_node knows of, on an arm that compensates its own gravity: the pose holds.

The simulator emulates a Franka (``robot_compensates_gravity: true``: it adds g(q) of its own model, the arm
without the payload, to every effort command, as libfranka does for the load it was told of). The payload
is in the simulated world but not in the robot's model: a 2 kg mass on panda_hand, 8 cm along its z axis,
stood in for by its weight, a constant wrench on panda_hand (simulator ~/wrench, link frame, at the pose of
the hold; the hand turns by less than 1e-3 rad over it, which tilts the 19.6 N by less than 0.02 N). The
robot is never told of it; dynamics_node is, through its ``~/set_payload``, and on the franka profile it adds
the payload's gravity torque to the command (profiles.RobotGravity, docs/ROBOTS.md "Payloads").

Held: panda_hand_tcp moves by less than 1 mm over HOLD s of simulated time. Without ~/set_payload (the same
node, the same wrench) the arm sags by far more, so the bound can fail.
"""
import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from robot_dynamics_interfaces.msg import Payload
from robot_dynamics_interfaces.srv import SetPayload
from std_msgs.msg import Float64MultiArray

import robot_dynamics as rd

from conftest import run_simulated, wait_for
from test_ros_profiles import DEEP, Bench, profile_params

pytestmark = pytest.mark.flaky(reruns=1)

HOLD = 1.0                    # [s] of simulated time
MASS, COM = 2.0, np.array([0.0, 0.0, 0.08])      # [kg], [m] in panda_hand's frame
LINK, TCP = 'panda_hand', 'panda_hand_tcp'
BOUND = 1e-3                  # [m]


def weight(model, q):
    """The payload's weight on LINK at its origin, in LINK's axes at q: (force, torque) [N, N m]."""
    R = rd.link_pose(model, q, LINK)[:3, :3]
    force = R.T @ np.array([0.0, 0.0, -9.81 * MASS])
    return force, np.cross(COM, force)


def tcp_drift(model, states, q0):
    """Largest distance [m] of panda_hand_tcp from its place at q0 over the states."""
    p0 = rd.link_pose(model, q0, TCP)[:3, 3]
    return max(float(np.linalg.norm(rd.link_pose(model, np.array(m.position), TCP)[:3, 3] - p0)) for m in states)


def wrenches_in(bench):
    key = '%s: simulator' % bench.sim.fqn.lstrip('/')
    for array in reversed(list(bench.diagnostics.messages)):
        for status in array.status:
            if status.name == key:
                return int({kv.key: kv.value for kv in status.values}['wrenches_in'])
    return None


def hold(ros, start_node, bench, tell_node, k):
    """Start dynamics_node (franka profile), tell it of the payload if ``tell_node``, put the payload's weight on
    the simulated arm, run HOLD s; the tcp's drift [m]."""
    bench.reset()
    node = start_node('dynamics_node', profile_params('franka', bench.model, urdf_path=bench.path),
                      name='dynamics_node_%d' % k, ns=bench.ns)
    topic = bench.ns + '/effort_controller/commands'
    if tell_node:
        ros.wait_for_service(node.topic('~/set_payload'), process=node)
        req = SetPayload.Request(payload=Payload(link=LINK))
        req.payload.inertia.m = MASS
        req.payload.inertia.com.x, req.payload.inertia.com.y, req.payload.inertia.com.z = COM
        req.payload.inertia.ixx = req.payload.inertia.iyy = req.payload.inertia.izz = 1e-3
        res = ros.call(SetPayload, node.topic('~/set_payload'), req)
        assert res.success, res.message
    commands = ros.subscribe(Float64MultiArray, topic, DEEP)
    try:
        assert commands.wait(count=20, timeout=30), node.read_log()
    finally:
        ros.node.destroy_subscription(commands.subscription)
    force, torque = weight(bench.model, bench.q0)
    msg = WrenchStamped()
    msg.header.frame_id = LINK
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = force
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = torque
    before = wrenches_in(bench)
    pub = ros.publisher(WrenchStamped, bench.sim.topic('~/wrench'))
    assert wait_for(lambda: pub.get_subscription_count() > 0, 10)
    pub.publish(msg)
    assert wait_for(lambda: (wrenches_in(bench) or 0) > (before or 0), 10), 'the simulator took no wrench'
    states = run_simulated(ros, bench.sim, bench.states, HOLD)
    assert states and states[-1].header.stamp.sec + 1e-9 * states[-1].header.stamp.nanosec > 0
    node.stop()
    assert wait_for(lambda: ros.node.count_publishers(topic) == 0, 10)
    return tcp_drift(bench.model, states, bench.q0)


def test_a_payload_only_dynamics_node_knows_of_is_held_on_a_self_compensating_arm(ros, start_node):
    bench = Bench(ros, start_node, 'panda', robot_gravity=True)
    held = hold(ros, start_node, bench, tell_node=True, k=1)
    sagged = hold(ros, start_node, bench, tell_node=False, k=2)
    print('\nfranka profile, a 2 kg payload only dynamics_node knows of: the tcp moves %.3g mm over %.1f s; '
          'the node not told of it: %.3g mm' % (held * 1e3, HOLD, sagged * 1e3))
    assert held < BOUND, 'the tcp moved %.3g mm' % (held * 1e3)
    assert sagged > 20 * BOUND, 'without the payload in the node the arm should sag: %.3g mm' % (sagged * 1e3)
