"""A stand-in of ros2_control's controller_manager for the defined-end and watchdog tests: serves
``<name>/switch_controller`` with the real Jazzy type (controller_manager_msgs/srv/SwitchController),
keeps the states of its controllers and publishes them on ``<name>/activity``
(controller_manager_msgs/msg/ControllerManagerActivity, reliable, transient local, depth 1, as Jazzy's
controller_manager does after every switch); records what happens, with time.monotonic(), as JSON lines.

    python test/ros/controller_manager_standin.py --record events.jsonl \\
        --controller effort_controller --command-topic effort_controller/commands \\
        [--controller other:inactive] [--refuse 2] [--reactivate 10 --reactivate-after 0.3] \\
        [--program-topic io_and_status_controller/robot_program_running --consistent a,b] \\
        --ros-args -r __ns:=/arm -r __node:=controller_manager

What the tests make it do besides:

- ``--refuse N``: the first N requests that would deactivate a controller are answered ``ok = false``
  with the Jazzy manager's message for a hardware that rejects the switch, nothing switched;
- ``--reactivate N --reactivate-after S``: S seconds after the first controller became inactive the
  stand-in activates it again by itself, N times in all (what UR's controller_stopper does when the
  robot program runs again), recorded as a state event with ``"by": "standin"``;
- ``--no-activity``: no ``~/activity`` (a Jazzy controller_manager before ros2_control 4.28.0);
- ``--program-topic T --consistent NAMES``: UR's controller_stopper (Universal_Robots_ROS2_Driver, branch
  jazzy, ur_robot_driver/src/controller_stopper.cpp) beside the manager: a std_msgs/Bool on T (relative:
  in the namespace) going false deactivates every active controller not in NAMES and remembers them, going
  true activates the remembered ones again; its state events say ``"by": "controller_stopper"``.

Each ``--controller NAME[:active|:inactive]`` is a loaded, configured controller (active unless
``:inactive``). ``--command-topic`` is the first controller's std_msgs/Float64MultiArray command topic,
subscribed reliable as a forward_command_controller does; every message is recorded, whatever the
controller's state (an inactive forward_command_controller still receives and ignores them).

The record file (flushed after every line), one JSON object a line, ``t`` = time.monotonic() of this
process (CLOCK_MONOTONIC is system-wide on Linux, so a test compares it with its own clock):

- ``{"event": "ready", "t", "controllers": {name: state}, "service": ...}`` once serving;
- ``{"event": "command", "t", "data": [...], "active": bool}`` for every command;
- ``{"event": "switch", "t", "activate", "deactivate", "strictness", "ok", "message"}`` per request;
- ``{"event": "state", "t", "controller", "state", "by"}`` for every state change, written before the
  answer; ``by`` is ``switch_controller`` (a request), ``standin`` or ``controller_stopper``;
- ``{"event": "program", "t", "running"}`` for every program-state change (``--program-topic``).

Answers as the Jazzy controller_manager's switch_controller_cb does for these cases (read from
ros-controls/ros2_control, branch jazzy, controller_manager.cpp): a controller that does not exist is
a warning and, if no named controller exists, ok = false; under BEST_EFFORT (and STRICT, for this
case) deactivating an inactive or activating an active controller changes nothing, and if nothing is
left to switch the answer is ok = true with a message saying so; otherwise the switch is done before
the answer (the real manager also answers after its control loop made the switch), ok = true.
Runs until SIGINT or SIGTERM (exit 0).
"""
import argparse
import json
import signal
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args
from lifecycle_msgs.msg import State
from std_msgs.msg import Bool, Float64MultiArray

from controller_manager_msgs.msg import ControllerManagerActivity, NamedLifecycleState
from controller_manager_msgs.srv import SwitchController

from robot_dynamics.ros.spin import close, make_executor, spin_until_stopped

COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: Jazzy's controller_manager.cpp: create_publisher("~/activity", rclcpp::QoS(1).reliable().transient_local()).
ACTIVITY_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: The Jazzy manager's answer when the hardware rejects the switch (switch_controller_cb).
REJECTED = 'Could not switch controllers since prepare command mode switch was rejected.'
STATE_IDS = {'inactive': State.PRIMARY_STATE_INACTIVE, 'active': State.PRIMARY_STATE_ACTIVE}


def read_record(path):
    """The events of a record file (the test imports this); a line being written is left out."""
    events = []
    try:
        with open(path) as f:
            for line in f:
                if line.endswith('\n'):
                    events.append(json.loads(line))
    except FileNotFoundError:
        pass
    return events


class RecordReader:
    """The events of a record file read incrementally (the test imports this): :meth:`update` adds the
    complete lines written since the last call to :attr:`events` and returns the new ones."""

    def __init__(self, path):
        self.path = path
        self.events = []
        self._offset = 0
        self._rest = ''

    def update(self):
        try:
            with open(self.path) as f:
                f.seek(self._offset)
                text = f.read()
                self._offset = f.tell()
        except FileNotFoundError:
            return []
        lines = (self._rest + text).split('\n')
        self._rest = lines.pop()                         # a line being written
        new = [json.loads(line) for line in lines if line]
        self.events += new
        return new

    def of(self, kind):
        """The events of one kind ('command', 'switch', 'state', 'ready') read so far."""
        return [e for e in self.events if e['event'] == kind]


class StandinManager(Node):
    def __init__(self, controllers, command_topic, record, refuse=0, reactivate=0, reactivate_after=0.3,
                 program_topic='', consistent=(), activity=True):
        super().__init__('controller_manager')
        self.states = dict(controllers)                 # name -> 'active' / 'inactive'
        self.first = next(iter(self.states))
        self.out = open(record, 'a', buffering=1)
        self.refuse = refuse                            # deactivations still to refuse
        self.reactivate, self.reactivate_after = reactivate, reactivate_after
        self.timer = None                               # the pending re-activation
        self.consistent = set(consistent)
        self.stopped = []                               # the controller_stopper's stopped controllers
        self.running = True                             # its robot_running_, true at start (as it sets it)
        self.activity = None
        if activity:
            self.activity = self.create_publisher(ControllerManagerActivity, '~/activity', ACTIVITY_QOS)
        self.srv = self.create_service(SwitchController, '~/switch_controller', self._switch)
        self.sub = None
        if command_topic:
            self.sub = self.create_subscription(Float64MultiArray, command_topic, self._command, COMMAND_QOS)
        self.program = None
        if program_topic:
            self.program = self.create_subscription(Bool, program_topic, self._program, 1)

    def write(self, **event):
        event.setdefault('t', time.monotonic())
        self.out.write(json.dumps(event) + '\n')
        self.out.flush()

    def publish_activity(self):
        if self.activity is None:
            return
        msg = ControllerManagerActivity()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.controllers = [NamedLifecycleState(name=name, state=State(id=STATE_IDS[state], label=state))
                           for name, state in self.states.items()]
        self.activity.publish(msg)

    def _command(self, msg):
        self.write(t=time.monotonic(), event='command', data=list(msg.data),
                   active=self.states[self.first] == 'active')

    def _set(self, changes, by, publish=True):
        """Switch ``changes`` [(name, state)], record them, then (``publish``) publish the activity, as Jazzy
        does after a switch, before the answer."""
        for name, state in changes:
            self.states[name] = state
            self.write(event='state', controller=name, state=state, by=by)
            self.get_logger().info('%s: %s (%s)' % (name, state, by))
            if name == self.first and state == 'inactive' and self.reactivate > 0 and self.timer is None:
                self.timer = self.create_timer(self.reactivate_after, self._reactivate)
        if publish:
            self.publish_activity()

    def _reactivate(self):
        self.timer.cancel()
        self.destroy_timer(self.timer)
        self.timer = None
        if self.states[self.first] == 'inactive':
            self.reactivate -= 1
            self._set([(self.first, 'active')], 'standin')

    def _program(self, msg):
        """UR's controller_stopper: robotRunningCallback, findAndStopControllers, startControllers."""
        if msg.data == self.running:
            return
        self.running = msg.data
        self.write(event='program', running=msg.data)
        if msg.data:
            self._set([(n, 'active') for n in self.stopped if self.states.get(n) == 'inactive'],
                      'controller_stopper')
        else:
            self.stopped = [n for n, state in self.states.items() if state == 'active' and n not in self.consistent]
            self._set([(n, 'inactive') for n in self.stopped], 'controller_stopper')

    def _switch(self, request, response):
        t = time.monotonic()
        activate, deactivate = list(request.activate_controllers), list(request.deactivate_controllers)
        unknown = [n for n in activate + deactivate if n not in self.states]
        for name in unknown:
            self.get_logger().warn("Could not switch controller '%s': no controller with this name exists" % name)
        changes = [(n, 'inactive') for n in deactivate if self.states.get(n) == 'active']
        changes += [(n, 'active') for n in activate if self.states.get(n) == 'inactive']
        if unknown and len(unknown) == len(activate) + len(deactivate):
            response.ok = False
            response.message = 'no controller with the name(s) %s exists' % ', '.join(unknown)
        elif request.strictness == SwitchController.Request.STRICT and unknown:
            response.ok = False
            response.message = 'STRICT: %s unknown, nothing switched' % ', '.join(unknown)
        elif not changes:
            response.ok = True
            response.message = 'After checking the controllers, no controllers need to be activated or deactivated.'
        elif self.refuse > 0 and any(state == 'inactive' for _, state in changes):
            self.refuse -= 1
            response.ok = False
            response.message = REJECTED
        else:
            self._set(changes, 'switch_controller', publish=False)
            response.ok = True
            response.message = ''
        self.write(t=t, event='switch', activate=activate, deactivate=deactivate,
                   strictness=request.strictness, ok=response.ok, message=response.message)
        if response.ok and changes:
            self.publish_activity()          # recorded first: the record is whole whatever publishing costs
        return response


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--record', required=True, help='the JSON-lines file of events')
    parser.add_argument('--controller', action='append', required=True, help='NAME[:active|:inactive]')
    parser.add_argument('--command-topic', default='', help="the first controller's command topic")
    parser.add_argument('--refuse', type=int, default=0, help='refuse the first N deactivations (ok = false)')
    parser.add_argument('--reactivate', type=int, default=0,
                        help='activate the first controller again by itself, N times, after it became inactive')
    parser.add_argument('--reactivate-after', type=float, default=0.3, help='[s] after it became inactive')
    parser.add_argument('--no-activity', action='store_true', help='publish no ~/activity (before 4.28.0)')
    parser.add_argument('--program-topic', default='', help="UR's robot_program_running topic (std_msgs/Bool)")
    parser.add_argument('--consistent', default='', help="the controller_stopper's consistent_controllers, a,b,c")
    args = parser.parse_args(remove_ros_args(sys.argv)[1:])
    controllers = {}
    for spec in args.controller:
        name, _, state = spec.partition(':')
        if state not in ('', 'active', 'inactive'):
            parser.error('--controller %s: the state is active or inactive' % spec)
        controllers[name] = state or 'active'

    signal.signal(signal.SIGTERM, signal.default_int_handler)     # KeyboardInterrupt until it spins
    rclpy.init(args=sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = None
    try:
        node = StandinManager(controllers, args.command_topic, args.record, refuse=args.refuse,
                              reactivate=args.reactivate, reactivate_after=args.reactivate_after,
                              program_topic=args.program_topic,
                              consistent=[n for n in args.consistent.split(',') if n],
                              activity=not args.no_activity)
        node.publish_activity()
        executor = make_executor()
        executor.add_node(node)
        node.write(event='ready', controllers=dict(node.states), service=node.resolve_service_name(node.srv.srv_name),
                   topic=node.sub.topic_name if node.sub else '')
        node.get_logger().info('serving %s; spinning' % node.resolve_service_name(node.srv.srv_name))
        spin_until_stopped(node, executor)
    except KeyboardInterrupt:
        pass
    finally:
        close(node, executor)

if __name__ == '__main__':
    main()
