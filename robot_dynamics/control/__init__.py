"""The torque pipeline of dynamics_node without ROS: plain classes and functions on numpy arrays.

Nothing here imports rclpy or a message package; the nodes in :mod:`robot_dynamics.ros` convert
messages, call these and publish. Every piece is tested without DDS (test/control).

- :mod:`.joint_map`: joint-name mapping and merging of partial joint states;
- :mod:`.staleness`: per-joint staleness, the age of a state by its stamp, the input rate;
- :mod:`.compensation`: the torque laws and the effort limiter;
- :mod:`.impedance_target`: the impedance modes' target, torque rate and law;
- :mod:`.base_state`, :mod:`.base_compensation`: the state of a floating or planar base and the laws
  on the full state;
- :mod:`.closed_loop`: the laws of a closed-loop robot on its actuated joints;
- :mod:`.trajectory`: sampling a desired trajectory, and the efforts of a whole one;
- :mod:`.profiles`: the vendor profiles and the terms the robot compensates itself;
- :mod:`.torque_loop`: one joint state to the command torque, or the reason there is none;
- :mod:`.watchdog`: what the watchdog does when joint states stop or a joint goes stale;
- :mod:`.controller_guard`: when command_watchdog asks the controller_manager to deactivate the controller;
- :mod:`.statistics`: the counters and timings that diagnostics report;
- :mod:`.external_torque`: the momentum observer and collision detection;
- :mod:`.payload_fit`, :mod:`.identification`: payload identification from joint states;
- :mod:`.settings`, :mod:`.laws`, :mod:`.pipeline`: what the pipeline is built from, its laws, and
  :func:`build`, which builds it;
- :mod:`.model_holder`: a node's model, payloads and status, which the services answer from.

Importing this package imports none of its modules (:func:`build` imports :mod:`.pipeline` when called).
"""


def build(model, settings, previous=None, **parts):
    """The :class:`.torque_loop.TorqueLoop` of ``model`` with ``settings`` (a :class:`.settings.PipelineSettings`),
    or the problem (a str) that refuses the model: :func:`.pipeline.build`, where the arguments are told."""
    from .pipeline import build as build_pipeline
    return build_pipeline(model, settings, previous, **parts)
