"""Per-joint staleness over DDS: a gripper that keeps publishing does not hide a dead arm driver.

Separate processes, real DDS: dynamics_node on the Panda arm with one finger
joint added (8 model joints), an "arm driver" publishing the 7 arm joints and a
"gripper driver" publishing the finger, each in its own sensor_msgs/JointState
at 500 Hz (test/ros/joint_state_publisher.py), and this process. The arm
driver falls silent (SIGUSR2: alive, no message) while the gripper's messages
keep coming: every
message still sets a model joint, so the whole-message watchdog
(joint_state_timeout 0.5 s here) never acts, but the arm's positions age, and
with ``joint_timeout`` 50 ms the node must send the zero command of
``on_timeout: zero`` about 50 ms after the arm's last message, name the arm's
joints in its log, give no torque from the gripper's messages after that, and
resume when the arm driver does (SIGUSR2 again).

Not SIGSTOP: a process stopped while it writes into another's Fast DDS
shared-memory port holds that port's lock, and every other writer to that
process (this node too) waits up to the transport's port health check, 1 s by
default. CI saw it once: the node's output paused 1.0 s after the freeze, so
the zero came 1058 ms after it. That pause is the middleware's (docs/NODES.md,
"A stopped process on the same host"); this test is about the per-joint limit.
"""
import re
import signal
import sys
import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from conftest import BEST_EFFORT, PANDA, ROOT, wait_for

ARM = ['panda_joint%d' % k for k in range(1, 8)]
FINGER = 'panda_finger_joint1'
Q_ARM = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
RATE = 500.0                 # [Hz] of each driver
JOINT_TIMEOUT = 0.05         # [s] joint_timeout
STATE_TIMEOUT = 0.5          # [s] joint_state_timeout: the whole-message watchdog
WD_PERIOD = JOINT_TIMEOUT / 10   # [s] the watchdog's period (the smaller timeout / 10)
SLACK = 0.05                 # [s] DDS delivery and scheduling on a busy 2-core machine

FINGER_URDF = """
  <link name="panda_finger">
    <inertial><origin xyz="0 0 0.02"/><mass value="0.1"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>
  </link>
  <joint name="%s" type="prismatic">
    <parent link="panda_link8"/><child link="panda_finger"/><origin xyz="0 0 0.06"/><axis xyz="0 1 0"/>
    <limit effort="20" lower="0" upper="0.04" velocity="0.2"/>
  </joint>
</robot>""" % FINGER


def test_a_stale_arm_times_out_while_the_gripper_keeps_publishing(ros, start_node, tmp_path):
    urdf = tmp_path / 'panda_with_finger.urdf'
    text = PANDA.read_text()
    urdf.write_text(text[:text.rindex('</robot>')] + FINGER_URDF)
    proc = start_node('dynamics_node', {
        'urdf_path': str(urdf), 'mode': 'gravity', 'publish_command': True,
        'joint_state_timeout': STATE_TIMEOUT, 'joint_timeout': JOINT_TIMEOUT, 'on_timeout': 'zero'})
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    commands = ros.subscribe(Float64MultiArray, proc.topic('effort_controller/commands'))
    states = ros.subscribe(JointState, proc.topic('joint_states'), BEST_EFFORT)

    def driver(tag, names, q):
        cmd = [sys.executable, str(ROOT / 'test' / 'ros' / 'joint_state_publisher.py'),
               '--topic', proc.topic('joint_states'), '--tag', tag, '--names', ','.join(names),
               '--q=' + ','.join(repr(x) for x in q), '--rate', str(RATE)]
        return start_node.command(cmd, 'driver_%s_%d' % (tag, time.monotonic_ns()))

    arm = driver('arm', ARM, Q_ARM)
    gripper = driver('gripper', [FINGER], [0.01])
    assert commands.wait(count=200, timeout=30) is not None, 'no commands from the two drivers:\n' + proc.read_log()
    assert np.any(np.array(commands.last().data) != 0.0), 'the gravity torque of the arm is not zero'
    # This process times the drivers' messages: it must have matched both before the arm falls silent.
    for tag in ('arm:', 'gripper:'):
        assert wait_for(lambda: sum(1 for m in list(states.messages) if m.header.frame_id.startswith(tag)) >= 20,
                        timeout=10), "this process never received the %s driver's joint states" % tag[:-1]

    # The arm driver falls silent; the gripper's messages keep coming.
    arm.send_signal(signal.SIGUSR2)
    t_stop = time.monotonic()
    zero = wait_for(lambda: _first(commands, t_stop, lambda d: not np.any(d)), timeout=2.0)
    assert zero is not None, ('no zero command within 2 s of silencing the arm driver (joint_timeout %.3f s):\n%s'
                              % (JOINT_TIMEOUT, proc.read_log()))
    t_zero = zero[0]
    with states._lock:
        arm_times = [t for t, m in zip(states.times, states.messages) if m.header.frame_id.startswith('arm:')]
        gripper_after = sum(1 for t, m in zip(states.times, states.messages)
                            if t > t_zero and m.header.frame_id.startswith('gripper:'))
    t_last_arm = max(arm_times)          # this process's reception of the arm's last message
    late = t_zero - t_last_arm
    print('\nper-joint timeout: zero command %.1f ms after the arm\'s last message reached this process '
          '(%.1f ms after silencing it); joint_timeout %.0f ms, watchdog period %.0f ms'
          % (late * 1e3, (t_zero - t_stop) * 1e3, JOINT_TIMEOUT * 1e3, WD_PERIOD * 1e3))
    assert JOINT_TIMEOUT - SLACK <= late <= JOINT_TIMEOUT + 2 * WD_PERIOD + SLACK, (
        'zero command %.1f ms after the arm\'s last message; expected about joint_timeout (%.0f ms), at most '
        '%.0f ms' % (late * 1e3, JOINT_TIMEOUT * 1e3, (JOINT_TIMEOUT + 2 * WD_PERIOD + SLACK) * 1e3))
    assert late < STATE_TIMEOUT, 'the whole-message watchdog, not the per-joint limit, acted'

    # The gripper keeps publishing; no torque comes from its messages while the arm is stale.
    time.sleep(0.3)
    assert gripper.poll() is None
    with states._lock:
        gripper_after = sum(1 for t, m in zip(states.times, states.messages)
                            if t > t_zero and m.header.frame_id.startswith('gripper:'))
    assert gripper_after >= 0.5 * RATE * 0.3, 'the gripper driver stopped too (%d messages)' % gripper_after
    after = _after(commands, t_zero)
    assert not after, ('expected no command after the zero command while the arm is stale, got %d'
                       % len(after))
    log = proc.read_log()
    m = re.search(r'stale joint state: joints ([\w, ]+): latest position ([0-9.]+) s old', log)
    assert m, 'no log line naming the stale joints:\n' + log
    assert m.group(1).split(', ') == ARM, 'the log names %s; expected the arm joints' % m.group(1)
    assert JOINT_TIMEOUT <= float(m.group(2)) <= JOINT_TIMEOUT + 2 * WD_PERIOD + SLACK, m.group(0)

    # The arm driver comes back: the commands resume (gravity of the arm: not zero).
    arm.send_signal(signal.SIGUSR2)
    t_cont = time.monotonic()
    resumed = wait_for(lambda: _first(commands, t_cont, lambda d: np.any(d)), timeout=2.0)
    assert resumed is not None, 'no command after the arm driver resumed:\n' + proc.read_log()
    print('resumed %.1f ms after the arm driver did' % ((resumed[0] - t_cont) * 1e3))


def _after(collector, t0):
    with collector._lock:
        return [(t, np.array(m.data)) for t, m in zip(collector.times, collector.messages) if t > t0]


def _first(collector, t0, predicate):
    return next(((t, d) for t, d in _after(collector, t0) if predicate(d)), None)
