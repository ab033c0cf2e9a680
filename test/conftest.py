"""Test-session settings shared by every test module.

In CI (the CI environment variable set, not "0" or "false") a test
dependency is never skipped: a ``pytest.importorskip`` that cannot import
its module fails the test, or the module that calls it at import time,
naming the module (issue 33). Locally it skips, as pytest does.
"""
import os

import pytest

# Keep DDS discovery on loopback even when pytest is run without scripts/test.sh
# (Fast DDS otherwise announces itself by multicast on every interface).
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def in_ci():
    """True when the CI environment variable is set (and not "", "0" or "false")."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def _missing_dependency(excinfo):
    """The reason of a skip raised by pytest.importorskip ("could not import 'yaml': ..."), else None."""
    if excinfo is None or not excinfo.errisinstance(pytest.skip.Exception):
        return None
    reason = str(excinfo.value)
    return reason if reason.startswith("could not import") else None


def _fail_in_ci(report, reason):
    report.outcome = "failed"
    report.longrepr = "%s, and CI is set: a test dependency is never skipped in CI (test/conftest.py)" % reason


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    reason = _missing_dependency(call.excinfo)
    if reason and in_ci():
        _fail_in_ci(report, reason)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    if report.skipped and in_ci():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if "could not import" in reason:
            _fail_in_ci(report, reason)
    return report
