"""command_watchdog's decisions as its own log states them, for the tests that run it beside a command stream.

On a loaded 2-core machine a real gap over ``command_timeout`` happens in a stream that should flow, and the
watchdog is then right to deactivate the controller. So a test does not assert that no deactivation happened
while the commands flowed (that is DDS and scheduler timing); it asserts that each one is a decision of the
watchdog on a gap it measured, where the decision is made (:func:`assert_justified`):

- ``no command on <topic> for <gap> s (timeout <timeout> s)``: the timeout (command_watchdog.check);
- ``... while no command comes (none on <topic> for <gap> s)``: the controller activated again while tripped
  (command_watchdog._on_activity);
- ``deactivating <c> again through <s> (after <n> failures in a row; no command for <gap> s)``: a retry;
- ``... still reports <c> active after the manager answered ok: deactivating it again``.

Each line is written before its request goes out, so a deactivation a manager's record shows has its line in
the log by then: read the record first, then the log. The log gives the gap with 3 decimals.

A test that needs its stream to flow without such a gap (the exact deactivations, refusals and times after
its last command) runs it again from a fresh manager and watchdog when :func:`voided` says the watchdog
rightly acted on one, at most :data:`ATTEMPTS` times.
"""
import re

TIMEOUT_LINE = re.compile(r'no command on (\S+) for ([0-9.]+) s \(timeout ([0-9.]+) s\)')
REACTIVATED_LINE = re.compile(r'while no command comes \(none on (\S+) for ([0-9.]+) s\)')
RETRY_LINE = re.compile(r'again through \S+ \(after [0-9]+ failures in a row; no command for ([0-9.]+) s\)')
STILL_ACTIVE_LINE = 'active after the manager answered ok: deactivating it again'
RESUMED_LINE = re.compile(r'commands on (\S+) again: watching again')
#: how many times a test streams its commands, each from a fresh manager and watchdog, for one without a gap
ATTEMPTS = 5


def lines(log):
    """The complete lines of ``log`` (a line being written is left out)."""
    return [line for line in log.splitlines(keepends=True) if line.endswith('\n')]


def decisions(log, topic):
    """The deactivations the watchdog decided, as ``log`` states them: [(reason, topic, gap [s] or None, timeout
    [s] or None)]; ``topic`` is the watchdog's own, for the lines that do not name it."""
    found = []
    for line in lines(log):
        timeout, reactivated, retry = TIMEOUT_LINE.search(line), REACTIVATED_LINE.search(line), RETRY_LINE.search(line)
        if timeout:
            found.append(('timeout', timeout.group(1), float(timeout.group(2)), float(timeout.group(3))))
        elif reactivated:
            found.append(('reactivated', reactivated.group(1), float(reactivated.group(2)), None))
        elif retry:
            found.append(('retry', topic, float(retry.group(1)), None))
        elif STILL_ACTIVE_LINE in line:
            found.append(('still active', topic, None, None))
    return found


def tripped(log):
    """Whether the watchdog's last word on the commands in ``log`` is a timeout (no 'commands ... again' after)."""
    said = [line for line in lines(log) if TIMEOUT_LINE.search(line) or RESUMED_LINE.search(line)]
    return bool(said) and TIMEOUT_LINE.search(said[-1]) is not None


def assert_justified(deactivations, log, topic, timeout, who='the'):
    """Assert that ``deactivations`` (how many the manager's record shows, read before ``log``) are each a
    decision of the watchdog whose ``log`` this is, watching ``topic`` with ``command_timeout`` = ``timeout`` [s]:
    no more of them than its decisions, the first decision a timeout, every decision on ``topic`` and on a gap it
    measured of at least ``timeout``."""
    decided = decisions(log, topic)
    assert deactivations <= len(decided), (
        '%s controller was deactivated %d times, %s watchdog decided %d deactivations %s:\n%s'
        % (who, deactivations, who, len(decided), decided, log))
    assert not decided or decided[0][0] == 'timeout', 'a deactivation before any timeout %s:\n%s' % (decided, log)
    for reason, acted_on, gap, said_timeout in decided:
        assert acted_on == topic, '%s watchdog acted on %s, not on %s:\n%s' % (who, acted_on, topic, log)
        assert said_timeout is None or said_timeout == timeout, (
            '%s watchdog times out at %s s, not %s s:\n%s' % (who, said_timeout, timeout, log))
        assert gap is None or gap >= timeout, (
            '%s watchdog deactivated (%s) on a gap of %.3f s, under its timeout %.3f s:\n%s'
            % (who, reason, gap, timeout, log))


def resumed(log):
    """How many times commands came again after a timeout in ``log`` ('commands on <topic> again'): each is a
    deactivation the watchdog decided on a gap inside a stream that then went on."""
    return sum(1 for line in lines(log) if RESUMED_LINE.search(line))


def voided(deactivations, log, topic, timeout, who='the'):
    """Whether a stream of commands the watchdog whose ``log`` this is has taken (read after its last decision
    on it) had a gap over ``timeout`` [s] the watchdog rightly acted on: then the attempt proves nothing about
    the stream's end and is made again. Either way, each of the ``deactivations`` (the manager's record, read
    before ``log``) must be a decision of the watchdog (:func:`assert_justified`)."""
    assert_justified(deactivations, log, topic, timeout, who)
    return resumed(log) > 0
