"""What the reference comparisons share: a summary printed past pytest's output capture, and
the rule for a missing reference.

The reference comparisons (Pinocchio, example-robot-data, derivatives, code
generation, retiming) keep their worst errors and print them when their
module ends (:func:`write_lines`); a reference they need that is not
installed skips them locally and fails them in CI (:func:`require`).
"""
import os

import pytest


def require(what, present):
    """Skip without ``what``; fail instead when CI is set (there it must be installed)."""
    if present:
        return
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail("%s is not installed, and CI is set: the test environment must provide it" % what)
    pytest.skip("%s is not installed" % what)


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
