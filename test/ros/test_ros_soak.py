"""The 60-second soak (bench/sim_loop.py): simulator_node + dynamics_node in a closed loop at 1 kHz.

The 10-minute version is ``.venv/bin/python bench/sim_loop.py --duration 600``
(docs/VERIFICATION.md, "Soak"); this one runs in CI. It runs the script as users do,
a separate process that starts both nodes, and checks its JSON result:
nothing lost, memory growth under 5 MB, the real-time factor held, and a
p99 latency that does not grow over the run. dynamics_node subscribes to
joint_states with reliable QoS here: with its default best-effort
subscription DDS may drop samples under load (38 of 61,026 in one CI run),
and "nothing lost" is then not a property of the loop.
"""
import json
import os
import statistics
import subprocess
import sys

from conftest import ROOT
import pytest

# Times DDS delivery to this test process on a 2-core machine, where a late
# wake-up of this process can fail a run: one rerun, every assertion each time.
pytestmark = pytest.mark.flaky(reruns=1)

DURATION = float(os.environ.get('RD_SOAK_SECONDS', '60'))


def test_sixty_second_closed_loop_soak():
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'bench' / 'sim_loop.py'), '--duration', str(DURATION), '--window', '10',
         '--joint-states-reliability', 'reliable', '--json-only'],
        capture_output=True, text=True, timeout=DURATION + 300)
    assert proc.stdout.strip(), proc.stderr
    result = json.loads(proc.stdout[proc.stdout.index('{'):])
    print(json.dumps(result, indent=1))
    assert result['joint_states_considered'] >= 0.95 * 1000 * DURATION, result
    assert result['lost'] == 0, result
    assert result['commands_rejected'] == 0, result
    assert max(result['memory_growth_mb'].values()) < 5.0, result
    assert result['real_time_factor'] >= 0.97, result
    # Stable p99: the median of the later windows is not above twice that of the
    # earlier ones (plus 2 ms): a queue or a leak that grows would show; a single
    # slow window on a shared machine does not fail the test.
    p99 = result['p99_ms_by_window']
    half = len(p99) // 2
    assert statistics.median(p99[half:]) <= 2.0 * statistics.median(p99[:half]) + 2.0, p99
