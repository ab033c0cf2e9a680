"""The demo's ``--mode contact``: the simulated Panda presses its hand on a table with a set force over ROS 2,
and dynamics_node's momentum observer sees the contact (issue 35, point 3).

simulator_node (physics at 1 kHz, joint states at 250 Hz) has the world file ``--world`` (default
config/worlds/panda_table.yaml: a table, three free boxes on it), the bundled Panda's visuals as its collision
shapes with urdf/panda_arm.srdf, and a force-torque sensor at the flange (``panda_link8``). dynamics_node runs
``cartesian_impedance`` at the flange (the stiffness of :mod:`.impedance_demo`: k = 500 N/m, 30 N m/rad) with
the momentum observer on (``observer_gains`` 50 1/s, ``collision_thresholds`` 1 N m on every joint,
``external_wrench_link`` the flange). This process streams the target: the flange's start pose lowered at
5 cm/s to its place ``F / k_z`` below the pose where the hand touches the table (orientation held), then
held until the sensor's force has stayed within 0.5 % of F for 1 s, at most ``--duration`` s. With the arm
at rest the contact carries the task-space spring alone (gravity is compensated with the same model, the
posture torque acts in the null space, friction across the normal): the table pushes up with
``F = k_z x depth`` (``--force`` at most ``k_z`` times ``max_pose_error``'s 5 cm, where the node clips the error).

It prints, for the last 0.5 s of the hold, the force on the arm in the base frame (z up) as the set force,
the simulator's contacts of the arm's links (``~/contacts/<link>``), its force-torque sensor
(``~/ft_sensor``) and the observer's external wrench (``~/external_wrench``); when the hand first touched,
the observer's largest external torque before, and its collision state at the end with the events
(``~/collision``); and plots the forces over time.
"""
import os
import time

import numpy as np

import robot_dynamics as rd

from .impedance_demo import STIFFNESS

FLANGE = 'panda_link8'                  # impedance, force-torque sensor and external wrench link
DESCENT_SPEED = 0.05                    # [m/s] of the target, from the start pose to its place
OBSERVER_GAIN = 50.0                    # [1/s] the observer's K_O: a 20 ms time constant
COLLISION_THRESHOLD = 1.0               # [N m] on every joint's external torque
CONTACT_RATE = 50.0                     # [Hz] the simulator's contact outputs
AVERAGE = 0.5                           # [s] at the end of the hold, averaged in the report
AT_REST = 1e-3                           # [rad/s] every joint's speed, for the hold to end early
STEADY = (1.0, 0.005)                   # the hold ends early once the sensor's F_z has stayed for 1 s within 0.5 % of F
MAX_POSE_ERROR = [0.05, 0.3]            # [m, rad] dynamics_node's max_pose_error (its default): the error is clipped
MAX_FORCE = STIFFNESS[2] * MAX_POSE_ERROR[0]   # [N] the largest force the clipped spring presses with: 25 N
SOURCES = (('contacts', "simulator, contacts of the arm's links"),
           ('ft_sensor', 'simulator, force-torque sensor (%s)' % FLANGE),
           ('external_wrench', 'observer, external wrench (%s)' % FLANGE))


def lowest_point(model, q, shapes, links):
    """The lowest z [m] (base frame) of the ``shapes`` on ``links`` at configuration ``q`` (nq,):
    each shape's support point along -z (boxes, spheres, cylinders, capsules)."""
    lowest = np.inf
    for s in shapes:
        if s.link not in links:
            continue
        T = rd.link_pose(model, q, s.link) @ s.placement
        R, z = T[:3, :3], T[2, 3]
        if s.kind == 'box':
            reach = 0.5 * np.abs(R[2]) @ np.asarray(s.size)
        elif s.kind == 'sphere':
            reach = s.size[0]
        elif s.kind in ('cylinder', 'capsule'):          # [r, length], axis z of the shape
            r, half, a_z = s.size[0], 0.5 * s.size[1], R[2, 2]
            reach = half * abs(a_z) + (r if s.kind == 'capsule' else r * np.sqrt(max(0.0, 1.0 - a_z ** 2)))
        else:
            raise ValueError('%s: the demo reaches boxes, spheres, cylinders and capsules, got a %s'
                             % (s.name, s.kind))
        lowest = min(lowest, z - reach)
    if not np.isfinite(lowest):
        raise ValueError('no collision shape on %s' % ', '.join(links))
    return lowest


def table_top(world, xy):
    """The highest top z [m] of the world's static boxes whose footprint holds the point ``xy`` (2,) [m]."""
    tops = []
    for s in world.static_shapes:
        if s.kind != 'box':
            continue
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * np.asarray(s.size) / 2
        points = corners @ s.placement[:3, :3].T + s.placement[:3, 3]
        if np.all(points[:, :2].min(axis=0) <= xy) and np.all(xy <= points[:, :2].max(axis=0)):
            tops.append(points[:, 2].max())
    if not tops:
        raise ValueError('the world has no static box under the flange at x, y = %s m' % np.round(xy, 3).tolist())
    return max(tops)


class Forces:
    """The forces on the arm over time, in the base frame, from the simulator's and dynamics_node's topics
    (this process's executor thread)."""

    def __init__(self, node, model, sim, dyn, namespace):
        from geometry_msgs.msg import WrenchStamped
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from robot_dynamics_interfaces.msg import Collision
        from sensor_msgs.msg import JointState
        self.node, self.model, self.sim = node, model, sim
        self.q = None
        self.speeds = []                                     # (time.monotonic(), largest |joint velocity| [rad/s])
        self.samples = {key: [] for key, _ in SOURCES}       # key -> [(time.monotonic(), force (3,))]
        self.links = {}                                      # link -> [(time, force (3,))] of ~/contacts/<link>
        self.external = []                                   # (time, largest |external joint torque| [N m])
        self.collisions = []                                 # (time, collision flag, joints over)
        self.torques = []
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(JointState, f'{namespace}/joint_states', self._on_state, reliable)
        node.create_subscription(JointState, dyn.topic('~/impedance_torque'), self.torques.append, 10)
        node.create_subscription(WrenchStamped, sim.topic('~/ft_sensor'), self._recorder('ft_sensor'), 10)
        node.create_subscription(WrenchStamped, dyn.topic('~/external_wrench'), self._recorder('external_wrench'),
                                 10)
        node.create_subscription(JointState, dyn.topic('~/external_torque'), self._on_external_torque, 10)
        collision_qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                   durability=DurabilityPolicy.TRANSIENT_LOCAL)     # as dynamics_node's
        node.create_subscription(Collision, dyn.topic('~/collision'), self._on_collision, collision_qos)
        self._wrench_type = WrenchStamped

    def _on_state(self, msg):
        index = {n: i for i, n in enumerate(msg.name)}
        self.q = np.array([msg.position[index[n]] for n in self.model.joint_names])
        self.speeds.append((time.monotonic(), float(np.abs(msg.velocity).max()) if len(msg.velocity) else np.inf))

    def _base_force(self, msg):
        f = msg.wrench.force
        R = rd.link_pose(self.model, self.q, msg.header.frame_id)[:3, :3]
        return R @ [f.x, f.y, f.z]

    def _recorder(self, key, into=None):
        def record(msg):
            if self.q is not None:
                (self.samples[key] if into is None else into).append((time.monotonic(), self._base_force(msg)))
        return record

    def _on_external_torque(self, msg):
        self.external.append((time.monotonic(), float(np.abs(msg.effort).max(initial=0.0))))

    def external_between(self, start, end):
        """The largest |external joint torque| [N m] the observer estimated from ``start`` to ``end``."""
        return max((r for t, r in self.external if start <= t < end), default=0.0)

    def _on_collision(self, msg):
        self.collisions.append((time.monotonic(), msg.collision, list(msg.joints_over)))

    def subscribe_new_links(self):
        """Subscribe to the simulator's ~/contacts/<link> topics that have appeared (one per link that touched)."""
        prefix = self.sim.topic('~/contacts/')
        for name, _ in self.node.get_topic_names_and_types():
            link = name[len(prefix):]
            if name.startswith(prefix) and link not in self.links:
                self.links[link] = []
                self.node.create_subscription(self._wrench_type, name, self._recorder(None, self.links[link]), 10)

    def touched(self):
        """The time of the first force-torque reading with a force, or None."""
        return next((t for t, f in self.samples['ft_sensor'] if np.any(f != 0.0)), None)

    def steady(self, force, now):
        """Whether the sensor's F_z has spanned less than STEADY's fraction of ``force`` over STEADY's last
        seconds before ``now``, with readings all along (at least one per 0.1 s), and the arm at rest (every
        joint under AT_REST): a simulator slowed by a loaded machine moves the force too slowly for the first
        test alone (9.25 N of 15 "steady" once in CI), while at rest the contact carries the spring."""
        span, fraction = STEADY
        recent = [f[2] for t, f in self.samples['ft_sensor'] if t >= now - span]
        speeds = [v for t, v in self.speeds if t >= now - span]
        return (len(recent) >= 10 * span and max(recent) - min(recent) < fraction * force
                and len(speeds) >= 10 * span and max(speeds) < AT_REST)

    def mean(self, key, start):
        """The mean force (3,) [N] of ``key`` since ``start`` (the links' contacts: their sum), or None."""
        if key == 'contacts':
            means = [np.mean([f for t, f in s if t >= start], axis=0) for s in self.links.values()
                     if any(t >= start for t, _ in s)]
            return np.sum(means, axis=0) if means else None
        recent = [f for t, f in self.samples[key] if t >= start]
        return np.mean(recent, axis=0) if recent else None


def run(path, model, q0, duration, namespace, *, force, world_file, output, nodes, spinner, make_executor,
        start_timeout):
    """Press with ``force`` [N] for ``duration`` [s] after the descent from the pose ``q0`` (nq,) onto the table
    of ``world_file``; prints the report, writes the plot ``output`` (PNG); returns the exit code. ``nodes``,
    ``spinner``, ``make_executor``, ``start_timeout``: the demo's pieces, as :func:`.impedance_demo.run`."""
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.signals import SignalHandlerOptions
    from std_srvs.srv import SetBool

    from ..contact import load_world, shapes_from_urdf
    from ..model.configuration import matrix_quaternion

    hand = [n for n in model.link_names[model.link_names.index(FLANGE):]]
    touching = lowest_point(model, q0, shapes_from_urdf(path, element='visual'), hand)
    T0 = rd.link_pose(model, q0, FLANGE)
    surface = table_top(load_world(world_file), T0[:2, 3])
    k_z = STIFFNESS[2]
    depth = force / k_z
    start_z, final_z = T0[2, 3], T0[2, 3] - (touching - surface) - depth
    common = nodes.specs[0][2]
    nodes.specs = [
        ('simulator_node', 'simulator', dict(
            common, publish_rate=250.0, world_file=os.path.abspath(world_file), collision_geometry='visual',
            srdf_file=str(rd.bundled_path('urdf/panda_arm.srdf')), ft_sensor_link=FLANGE, contact_rate=CONTACT_RATE)),
        ('dynamics_node', 'dynamics_node', dict(
            urdf_path=common['urdf_path'], joints=common['joints'], mode='cartesian_impedance', publish_command=True,
            impedance_link=FLANGE, stiffness=STIFFNESS, nullspace_stiffness=5.0, joint_state_timeout=0.5,
            observer_gains=[OBSERVER_GAIN], collision_thresholds=[COLLISION_THRESHOLD],
            external_wrench_link=FLANGE, max_pose_error=MAX_POSE_ERROR)),
    ]
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('robot_dynamics_contact_demo')
    executor = make_executor()
    executor.add_node(node)
    spin = spinner(node, executor, nodes)
    pub = node.create_publisher(PoseStamped, f'{namespace}/dynamics_node/target_pose', 10)
    msg = PoseStamped()
    msg.header.frame_id = model.base_link
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y = (float(x) for x in T0[:2, 3])
    o.x, o.y, o.z, o.w = (float(x) for x in matrix_quaternion(T0[:3, :3]))
    forces = closed = settled = None
    try:
        nodes.start()
        forces = Forces(node, model, nodes.processes['simulator'], nodes.processes['dynamics_node'], namespace)
        print(f'Started simulator_node (world {world_file}) and dynamics_node (cartesian_impedance at {FLANGE}, '
              f'momentum observer) in {namespace} (logs in {nodes.folder}); waiting for the loop to close...',
              flush=True)
        spin.until(lambda: forces.torques and forces.q is not None, start_timeout, 'the first impedance torque')
        answer = spin.call(SetBool, nodes.processes['simulator'].topic('~/pause'), SetBool.Request(data=False))
        if not answer.success:
            raise RuntimeError(f'the simulator did not resume: {answer.message}')
        closed = time.monotonic()
        descent = (start_z - final_z) / DESCENT_SPEED
        print(f'Loop closed; the hand is {(touching - surface) * 1e3:.1f} mm above the table (top z = '
              f'{surface:.3f} m); the target goes down at {DESCENT_SPEED * 100:g} cm/s to {depth * 1e3:.1f} mm '
              f'below touching (F / k_z = {force:g} N / {k_z:g} N/m), then stays until the force is steady, '
              f'at most {duration:g} s.', flush=True)
        polled = 0.0
        while time.monotonic() - closed < descent + duration:
            now = time.monotonic()
            if now - closed > descent + STEADY[0] and forces.steady(force, now):
                settled = now - closed - descent
                break
            p.z = float(max(final_z, start_z - DESCENT_SPEED * (now - closed)))
            msg.header.stamp = node.get_clock().now().to_msg()
            pub.publish(msg)
            spin.for_seconds(0.02)
            nodes.check()
            if now - polled > 0.5:
                forces.subscribe_new_links()
                polled = now
    except KeyboardInterrupt:
        print('\nCtrl-C: stopping', flush=True)
    finally:
        nodes.close(executor, node)
    if closed is None:
        return 1
    end = max(t for t, _ in forces.samples['ft_sensor']) if forces.samples['ft_sensor'] else time.monotonic()
    hold = (f'steady after {settled:.2f} s of the hold' if settled is not None else
            f'not steady within {duration:g} s of the hold')
    print(f'\nThe sensor\'s F_z {hold} (range under {STEADY[1] * 100:g} % of the set force over {STEADY[0]:g} s).')
    ok = report(forces, force, closed, end - AVERAGE)
    plot(forces, force, closed, output)
    print(f'\nPlot written to {os.path.abspath(output)}')
    return 0 if ok else 1


def report(forces, force, closed, start):
    """Print the table of the forces since ``start`` and what the observer flagged; False if a source is silent."""
    touch = forces.touched()
    print(f'\nForce on the arm, base frame (z up), mean of the last {AVERAGE:g} s:')
    print(f'{"source":<46}{"F_z [N]":>9}{"|F_xy| [N]":>12}{"F_z / set":>11}')
    print(f'{"set force":<46}{force:9.3f}')
    ok = True
    for key, label in SOURCES:
        f = forces.mean(key, start)
        if f is None:
            print(f'{label:<46}{"no message":>9}')
            ok = False
            continue
        print(f'{label:<46}{f[2]:9.3f}{np.hypot(f[0], f[1]):12.3f}{f[2] / force:11.4f}')
    touch_text = 'never' if touch is None else f'{touch - closed:.3f} s after the loop closed'
    quiet = forces.external_between(closed, np.inf if touch is None else touch - 0.1)
    print(f'\nFirst touch (force-torque sensor): {touch_text}; the observer\'s largest |external joint torque| '
          f'until 0.1 s before it: {quiet:.3f} N m')
    events = [(t, flag, joints) for t, flag, joints in forces.collisions if t >= closed]
    if forces.collisions and forces.collisions[-1][1]:
        state = 'yes, joints over %g N m: %s' % (COLLISION_THRESHOLD, ', '.join(forces.collisions[-1][2]))
    else:
        state = 'no (threshold %g N m)' % COLLISION_THRESHOLD
    first = f', the first {events[0][0] - closed:.3f} s after it' if events else ''
    print(f'Observer: collision at the end: {state} (events since the loop closed: {len(events)}{first})')
    return ok


def plot(forces, force, closed, path):
    """F_z over time of the three sources and the set force; saves a PNG."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    series = [(forces.samples[key], label) for key, label in SOURCES[1:]]
    series += [(samples, 'simulator, ~/contacts/' + link) for link, samples in forces.links.items()]
    for samples, label in series:
        if samples:
            ax.plot([t - closed for t, _ in samples], [f[2] for _, f in samples], '.-', ms=2, label=label)
    ax.axhline(force, color='k', ls=':', label='set force')
    ax.set_xlabel('time since the loop closed [s]')
    ax.set_ylabel('F_z on the arm, base frame [N]')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc='best')
    ax.set_title('The Panda pressing on a table in cartesian_impedance: contact force and observer')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
