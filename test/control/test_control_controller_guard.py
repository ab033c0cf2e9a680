"""robot_dynamics.control.controller_guard without DDS: when command_watchdog asks for a deactivation."""
import pytest

from robot_dynamics.control.controller_guard import (
    ANSWER_WAIT, ESCALATE_AFTER, RETRY_FIRST, RETRY_MAX, ControllerGuard, backoff)

T = 0.1     # command_timeout [s]


def tripped_guard():
    """A guard whose commands stopped at 1.0 s (last command) and that sent its deactivation at 1.1 s."""
    g = ControllerGuard(T)
    g.activity('active', 0.5)
    g.command(1.0)
    assert g.due(1.1) == 'timeout'
    g.sent(1.1)
    return g


def test_nothing_is_asked_before_the_first_command_even_for_an_active_controller():
    g = ControllerGuard(T)
    assert g.activity('active', 0.0) is None
    assert g.due(100.0) is None and not g.armed
    assert g.summary(100.0) == (0, 'waiting for the first command')


def test_the_commands_stopping_ask_once_after_the_timeout():
    g = ControllerGuard(T)
    assert g.command(1.0) == 'armed'
    assert g.command(1.5) is None
    assert g.due(1.5 + T - 1e-3) is None
    assert g.due(1.5 + T) == 'timeout'
    g.sent(1.6)
    assert g.due(1.7) is None                          # in flight
    assert g.answered(True, 1.61) is None
    assert g.due(5.0) is None and g.confirmed          # once per pause
    assert g.summary(5.0)[0] == 1


def test_a_refusal_is_retried_with_a_doubling_bounded_wait_until_ok():
    assert [backoff(n) for n in (1, 2, 3, 4, 5, 6, 7, 20)] == [
        RETRY_FIRST, 2 * RETRY_FIRST, 4 * RETRY_FIRST, 8 * RETRY_FIRST, 16 * RETRY_FIRST, RETRY_MAX, RETRY_MAX,
        RETRY_MAX]
    g = tripped_guard()
    assert g.answered(False, 1.12) == pytest.approx(RETRY_FIRST)
    assert g.due(1.12 + RETRY_FIRST - 1e-6) is None
    assert g.due(1.12 + RETRY_FIRST) == 'retry'
    g.sent(1.17)
    assert g.answered(False, 1.18) == pytest.approx(2 * RETRY_FIRST)
    assert not g.escalated
    assert g.due(1.28) == 'retry'
    g.sent(1.28)
    assert g.answered(True, 1.29) is None
    assert g.confirmed and g.failures == 0 and g.refusals == 2 and g.requests == 3
    g.activity('inactive', 1.295)
    assert g.due(10.0) is None


def test_the_third_failure_in_a_row_escalates_and_the_retries_go_on():
    g = tripped_guard()
    now = 1.1
    for k in range(1, ESCALATE_AFTER + 3):
        wait = g.answered(False, now)
        assert wait == pytest.approx(backoff(k))
        assert g.escalated == (k >= ESCALATE_AFTER)
        now += wait
        assert g.due(now) == 'retry'
        g.sent(now)
    level, message = g.summary(now)
    assert level == 2 and 'NOT deactivated' in message
    assert g.answered(True, now) is None
    assert not g.escalated and g.summary(now)[0] == 1


def test_an_unanswered_request_counts_as_a_failure():
    g = tripped_guard()
    assert not g.overdue(1.1 + ANSWER_WAIT)
    assert g.overdue(1.1 + ANSWER_WAIT + 0.01)
    assert g.answered(False, 2.2) == pytest.approx(RETRY_FIRST)
    assert g.due(2.25) == 'retry'


def test_a_missing_service_is_tried_every_timeout_and_escalates_too():
    g = ControllerGuard(T)
    g.command(0.0)
    assert g.due(0.1) == 'timeout'
    for k in range(ESCALATE_AFTER):
        g.unavailable(0.1 + k * T)
        assert g.due(0.1 + (k + 1) * T - 1e-6) is None
        assert g.due(0.1 + (k + 1) * T) == 'retry'
    assert g.escalated


def test_a_reactivation_while_the_commands_are_absent_is_undone_at_once():
    g = tripped_guard()
    g.answered(True, 1.11)
    assert g.activity('inactive', 1.111) is None       # confirmed already by the answer
    for k in range(10):                                 # a controller_stopper, ten times
        t = 2.0 + k
        assert g.activity('active', t) == 'reactivated'
        assert g.due(t) == 'reactivated'                # no wait for a timeout: the commands are long gone
        g.sent(t)
        g.answered(True, t + 0.002)
        assert g.activity('inactive', t + 0.003) is None
    assert g.reactivations == 10 and g.requests == 11
    assert g.activity('active', 20.0) == 'reactivated' and g.activity('active', 20.1) is None   # an edge, once


def test_a_reactivation_seen_while_a_request_is_in_flight_asks_again_after_the_answer():
    g = tripped_guard()
    g.answered(True, 1.11)
    g.activity('inactive', 1.111)
    assert g.activity('active', 2.0) == 'reactivated'
    g.sent(2.0)
    assert g.activity('inactive', 2.001) == 'confirmed' and g.activity('active', 2.002) == 'reactivated'
    assert g.due(2.003) is None                         # in flight: not twice at once
    assert g.answered(True, 2.004) == 0.0               # it may have been served before the activation
    assert g.due(2.004) == 'reactivated'


def test_an_activity_report_confirms_a_deactivation_and_ends_the_retries():
    g = tripped_guard()
    g.answered(False, 1.12)                             # refused ...
    assert g.activity('inactive', 1.13) == 'confirmed'  # ... but the manager reports it inactive
    assert g.due(5.0) is None and g.confirmed and g.failures == 0


def test_a_refusal_after_the_manager_reported_inactive_is_not_retried():
    g = tripped_guard()
    g.activity('inactive', 1.105)
    assert g.answered(False, 1.11) is None and g.due(5.0) is None


def test_a_controller_still_reported_active_long_after_an_ok_is_asked_again():
    g = tripped_guard()
    g.answered(True, 1.11)                              # the inactive report never comes
    assert g.due(1.11 + RETRY_MAX - 0.01) is None
    assert g.due(1.11 + RETRY_MAX) == 'still active'


def test_reports_while_the_commands_flow_change_nothing_and_commands_end_a_timeout():
    g = ControllerGuard(T)
    g.command(0.0)
    assert g.activity('inactive', 0.01) is None and g.activity('active', 0.02) is None
    assert g.due(0.05) is None
    g = tripped_guard()
    g.answered(False, 1.12)
    assert g.command(1.13) == 'resumed'
    assert not g.tripped and g.failures == 0 and g.due(1.2) is None
    assert g.summary(1.2) == (0, 'commands flowing')
    g = tripped_guard()
    g.command(1.105)                                    # back while the request is in flight
    assert g.answered(False, 1.11) is None and g.due(1.15) is None
