"""Print a summary at the end of a test module, past pytest's output capture.

The reference comparisons (Pinocchio, example-robot-data, derivatives) keep
their worst errors and print them when their module ends; this is that
printing, in one place.
"""


def write_lines(request, lines):
    """Write ``lines`` to the terminal report of the session of ``request``."""
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    cm = request.config.pluginmanager.get_plugin("capturemanager")
    if tr is None or cm is None:         # pragma: no cover
        print("\n".join(lines))
        return
    with cm.global_and_fixture_disabled():
        for line in lines:
            tr.write_line(line)
