"""Real and hostile descriptions through the nodes: on the topic, and as a parameter (issue 31).

- Five of the largest real descriptions of example-robot-data (TIAGo dual, PR2, Talos, ANYmal C and
  UR5 with its 24 comments: xacro output, as every vendor's robot_description is) are published one
  after the other on the ``robot_description`` topic of a running dynamics_node and dynamics_services.
  Each node takes each one (``model_updates``, ``robot``), dynamics_services' gravity service answers
  for it (equal to ``rd.gravity_torques`` of the same file here), and the nodes' own measure of the
  load (``last_description_cpu_seconds``, the CPU time of the thread that loaded it) is under 1 s; the
  wall time from publishing to the answer is printed and must be under 5 s.
- The hostile descriptions of test/hostile_descriptions.py go to both nodes on the topic: each is
  loaded or refused (with its reason) within 1 s of the nodes' CPU, the nodes stay up, and a refused
  one leaves the previous model in place.
- The same descriptions as a node parameter (``urdf_path``, and ``robot_description`` for those under
  2 MB): a refused one stops dynamics_services with exit status 2 and the reason, its log saying the
  decision took under 1 s of CPU; a loaded one gives the node its model.

At 5c0a0a8 the UR5 alone took the node 13.6 s and Talos over 60 s (a regular expression told MJCF from
URDF); the CPU bound fails loudly on such a regression.
"""
import time

import numpy as np
import pytest
from std_msgs.msg import String

import robot_dynamics as rd
from conftest import LATCHED, PANDA
from hostile_descriptions import cases as hostile_cases, refused
from probes import Diagnostics
from reporting import require, write_lines
from robot_dynamics.tools.sample import example_robot_data_dir
from robot_dynamics_interfaces.srv import GravityCompensation

ERD = example_robot_data_dir()
LARGEST = ('tiago_description/robots/tiago_dual.urdf', 'pr2_description/urdf/pr2.urdf',
           'talos_data/robots/talos_reduced.urdf', 'anymal_c_simple_description/urdf/anymal.urdf',
           'ur_description/urdf/ur5_robot.urdf')
CPU_BOUND = 1.0          # [s] of the loading thread's CPU, measured in the node
ANSWER_BOUND = 5.0       # [s] from publishing a description to the gravity service's answer for it
PARAMS = {'diagnostics_period': 0.1}


def _nodes(ros, start_node, topic):
    """dynamics_node and dynamics_services on the description topic ``topic``, and their Diagnostics."""
    node = start_node('dynamics_node', dict(PARAMS, robot_description_topic=topic))
    services = start_node('dynamics_services', dict(PARAMS, robot_description_topic=topic))
    ros.wait_for_service(services.topic('~/gravity_compensation'), process=services)
    return [(node, Diagnostics(ros, node.fqn)), (services, Diagnostics(ros, services.fqn))]


def _counts(diag):
    v = diag.get() or {}
    return int(v.get('model_updates', 0)), int(v.get('descriptions_rejected', 0))


def _gravity(ros, services, model):
    """dynamics_services' gravity torques of ``model`` at its neutral configuration, or None."""
    req = GravityCompensation.Request()
    req.joint_state.name = list(model.joint_names)
    req.joint_state.position = [float(x) for x in model.neutral()]
    res = ros.call(GravityCompensation, services.topic('~/gravity_compensation'), req, timeout=10)
    if res is None or not res.success or list(res.torques.name) != list(model.joint_names):
        return None                     # the previous model still answers, or none
    return np.array(res.torques.effort)


def test_the_largest_real_descriptions_on_the_topic(ros, start_node, request):
    require('example-robot-data', ERD is not None)
    topic = '/rd_descriptions_%d' % time.monotonic_ns()
    pub = ros.publisher(String, topic, LATCHED)
    nodes = _nodes(ros, start_node, topic)
    services = nodes[1][0]
    lines = []
    try:
        for k, name in enumerate(LARGEST):
            path = ERD / name
            model = rd.load_urdf(str(path))
            expected = rd.gravity_torques(model, model.neutral())
            sent = time.monotonic()
            pub.publish(String(data=path.read_text()))
            answer = None
            deadline = sent + 60
            while answer is None and time.monotonic() < deadline:
                answer = _gravity(ros, services, model)
            answered = time.monotonic() - sent
            assert answer is not None, '%s: no gravity answer for it in 60 s' % name
            np.testing.assert_allclose(answer, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
            for proc, diag in nodes:
                v = diag.wait(lambda v: int(v['model_updates']) == k + 1 and v.get('robot') == model.name, 30)
                assert v is not None, '%s did not take %s: %s' % (proc.name, name, diag.get())
                cpu, wall = float(v['last_description_cpu_seconds']), float(v['last_description_seconds'])
                assert cpu < CPU_BOUND, '%s: %s took %.2f s of CPU' % (proc.name, name, cpu)
                lines.append('%s %s: %d joints, load %.3f s CPU, %.3f s wall' % (
                    proc.name.split('_')[1], name, len(model.joint_names), cpu, wall))
            lines.append('%s: gravity answered %.2f s after publishing' % (name, answered))
            assert answered < ANSWER_BOUND, '%s answered %.1f s after the description' % (name, answered)
        assert all(proc.poll() is None for proc, _ in nodes)
    finally:
        for _, diag in nodes:
            ros.node.destroy_subscription(diag.sub)
        write_lines(request, ['real descriptions on the topic:'] + ['  ' + line for line in lines])


def test_hostile_descriptions_on_the_topic(ros, start_node, request):
    topic = '/rd_hostile_%d' % time.monotonic_ns()
    pub = ros.publisher(String, topic, LATCHED)
    pub.publish(String(data=PANDA.read_text()))
    nodes = _nodes(ros, start_node, topic)
    lines = []
    try:
        for proc, diag in nodes:
            assert diag.wait(lambda v: v.get('robot') == 'panda' and v['model_status'] == 'ok', 30), diag.get()
        previous = 'panda'
        for name, text, outcome in hostile_cases():
            before = [_counts(diag) for _, diag in nodes]
            pub.publish(String(data=text))
            loads = not refused(outcome)
            for (proc, diag), (updates, rejected) in zip(nodes, before):
                if loads:
                    v = diag.wait(lambda v: int(v['model_updates']) == updates + 1, 60)
                    assert v is not None and v['robot'] == outcome, '%s: %s not taken: %s' % (
                        proc.name, name, diag.get())
                else:
                    v = diag.wait(lambda v: int(v['descriptions_rejected']) == rejected + 1, 60)
                    assert v is not None, '%s: %s not refused: %s' % (proc.name, name, diag.get())
                    assert outcome in v['_message'] and v['robot'] == previous, v
                    assert v['model_status'] == 'error (previous model kept)', v
                cpu = float(v['last_description_cpu_seconds'])
                assert cpu < CPU_BOUND, '%s: %s took %.2f s of CPU' % (proc.name, name, cpu)
                assert proc.poll() is None, '%s died on %s' % (proc.name, name)
                lines.append('%s %s: %s in %.3f s CPU' % (proc.name.split('_')[1], name,
                                                          'loaded' if loads else 'refused', cpu))
            previous = outcome if loads else previous
    finally:
        for _, diag in nodes:
            ros.node.destroy_subscription(diag.sub)
        write_lines(request, ['hostile descriptions on the topic:'] + ['  ' + line for line in lines])


#: (parameter, case): every case by urdf_path; by robot_description those under 2 MB (a 10 MB string in a
#: YAML parameter file is no way to give a description; urdf_path is).
AS_PARAMETER = [pytest.param(parameter, *case, id='%s: %s' % (parameter, case[0]))
                for parameter in ('urdf_path', 'robot_description') for case in hostile_cases()
                if parameter == 'urdf_path' or len(case[1]) < 2 << 20]


@pytest.mark.parametrize('parameter, name, text, outcome', AS_PARAMETER)
def test_hostile_descriptions_as_a_parameter(ros, start_node, tmp_path, parameter, name, text, outcome):
    path = tmp_path / 'hostile.xml'
    path.write_text(text)
    value = str(path) if parameter == 'urdf_path' else text
    proc = start_node('dynamics_services', dict(PARAMS, **{parameter: value}))
    loads = not refused(outcome)
    if not loads:
        assert proc.wait(timeout=120) == 2, proc.read_log()[-2000:]
        log = proc.read_log()
        assert outcome in log, log[-2000:]
        seconds = float(log.split('(decided in ', 1)[1].split(' s, ', 1)[1].split(' s of CPU)', 1)[0])
        assert seconds < CPU_BOUND, '%s refused after %.2f s of CPU' % (name, seconds)
        return
    diag = Diagnostics(ros, proc.fqn)
    try:
        v = diag.wait(lambda v: v.get('robot') == outcome, 120)
        assert v is not None, proc.read_log()[-2000:]
        assert float(v['last_description_cpu_seconds']) < CPU_BOUND, v
    finally:
        ros.node.destroy_subscription(diag.sub)


def test_an_mjcf_without_its_meshes_as_a_parameter(ros, start_node, tmp_path):
    """urdf_path naming an MJCF whose mesh files are absent: refused naming the file (exit status 2), loaded
    with ``skip_missing_meshes:=true`` (every inertia explicit)."""
    from test_mjcf_elements import INERTIAL, MESHED
    path = tmp_path / 'arm.xml'
    path.write_text(MESHED.format(fore_inertial=INERTIAL))
    refused_proc = start_node('dynamics_services', dict(PARAMS, urdf_path=str(path)))
    assert refused_proc.wait(timeout=120) == 2, refused_proc.read_log()[-2000:]
    assert 'shell.stl' in refused_proc.read_log()
    proc = start_node('dynamics_services', dict(PARAMS, urdf_path=str(path), skip_missing_meshes=True))
    diag = Diagnostics(ros, proc.fqn)
    try:
        v = diag.wait(lambda v: v.get('model_status') == 'ok', 120)
        assert v is not None, proc.read_log()[-2000:]
        assert v['joints'] == ', '.join(rd.load_mjcf(str(path), skip_missing_meshes=True).joint_names)
    finally:
        ros.node.destroy_subscription(diag.sub)
