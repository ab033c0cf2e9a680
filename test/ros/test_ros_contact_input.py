"""simulator_node's contact parameters meet hostile input (issue 35; docs/SECURITY.md): one node process per
case, each refused at start with exit status 2 and a message naming the parameter, what was expected and
what came, decided within 1 s of the node's CPU (its log says "decided in"); the node never hangs.

The cases are a few of test/test_contact_scene.py's, which runs all of them (malformed, wrongly typed,
huge and deeply nested world files, alias bombs, malformed SRDFs, the corpus's URDFs whose meshes are
missing, missing files) through the same code path in-process: simulator_node builds its contact scene
with :class:`robot_dynamics.ros.contact_outputs.ContactScene` for each model, and a refusal is the
model's problem (an ERROR status, or at start exit status 2).
"""
import re
import time

import pytest

import robot_dynamics as rd
from conftest import PANDA
from reporting import require
from robot_dynamics.tools.sample import example_robot_data_dir
from test_contact_scene import HOSTILE_SRDFS, HOSTILE_WORLDS

pytestmark = pytest.mark.flaky(reruns=1)

SRDF = str(rd.bundled_path('urdf/panda_arm.srdf'))
BASE = {'urdf_path': str(PANDA), 'collision_geometry': 'visual', 'srdf_file': SRDF, 'start_paused': True,
        'marker_rate': 0.0}
CPU_BOUND = 1.0                  # [s] of the node's CPU for the decision
EXIT_BOUND = 120.0               # [s] from start to exit, warm-up included, on a loaded machine


def _case(cases, name):
    return next(text for n, text, _ in cases if n == name)


def _erd_panda():
    erd = example_robot_data_dir()
    require('example-robot-data', erd is not None)
    return str(erd / 'panda_description/urdf/panda.urdf')


#: (id, files to write {parameter: text}, other parameters, what the log must say)
CASES = [
    ('an alias bomb for a world file', {'world_file': _case(HOSTILE_WORLDS, 'an alias bomb for an inertia')}, {},
     r"parameter 'world_file' '.*': free\[0\] \(c\) inertia \[ixx, iyy, izz, ixy, ixz, iyz\]: expected numbers"),
    ('an entity expansion for an SRDF', {'srdf_file': _case(HOSTILE_SRDFS, 'an entity expansion')}, {},
     r"parameter 'srdf_file' '.*': .*DTD"),
    ('a missing world file', {}, {'world_file': '/nonexistent/world.yaml'},
     r"parameter 'world_file' '/nonexistent/world\.yaml': No such file or directory"),
    ('a force-torque sensor on the base', {}, {'ft_sensor_link': 'panda_link0'},
     r"parameter 'ft_sensor_link': ft sensor: link 'panda_link0' is fixed to the base"),
    ('a robot whose collision meshes are missing', {}, {'urdf_path': _erd_panda, 'collision_geometry': 'collision',
                                                       'srdf_file': ''},
     r"parameter 'collision_geometry' 'collision': the <collision> shapes of urdf_path '.*panda\.urdf': link "
     r"'panda_link0' <collision> 0: mesh 'package://example-robot-data/.*' not found"),
]


@pytest.mark.parametrize('files, params, expected', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_contact_parameters_stop_the_node_with_their_reason(start_node, tmp_path, files, params, expected):
    values = {k: v() if callable(v) else v for k, v in params.items()}
    for parameter, text in files.items():
        path = tmp_path / ('%s.txt' % parameter)
        path.write_text(text)
        values[parameter] = str(path)
    started = time.monotonic()
    proc = start_node('simulator_node', dict(BASE, **values))
    status = proc.wait(timeout=EXIT_BOUND)
    log = proc.read_log()
    print('\n%s: exit status %s after %.1f s' % (proc.label, status, time.monotonic() - started))
    assert status == 2, log[-3000:]
    assert re.search(expected, log), log[-3000:]
    cpu = float(log.split('(decided in ', 1)[1].split(' s, ', 1)[1].split(' s of CPU)', 1)[0])
    assert cpu < CPU_BOUND, log[-3000:]
