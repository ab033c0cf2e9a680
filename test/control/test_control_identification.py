"""robot_dynamics.control.identification without DDS: the checks of a request, the collection's time."""
import pathlib

import pytest

import robot_dynamics as rd
from robot_dynamics.control.identification import Identification, request_problem
from robot_dynamics.control.profiles import JOINT_TORQUE

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def arm():
    return rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'))


def problem(model, link='panda_link7', duration=1.0, n=0, **kw):
    args = dict(running=False, max_points=10, max_duration=60.0, effort_kind=JOINT_TORQUE)
    args.update(kw)
    return request_problem(model, link, duration, n, **args)


def test_a_good_request_has_no_problem(arm):
    assert problem(arm) is None
    assert problem(arm, duration=0.0, n=5) is None


@pytest.mark.parametrize('kw, words', [
    (dict(n=11), ['11 joint states', 'max_request_points (10)']),
    (dict(running=True), ['running already']),
    (dict(link='nope'), ["unknown link 'nope'", 'panda_link7']),
    (dict(link='panda_link0'), ["'panda_link0' is fixed to the base"]),
    (dict(duration=61.0), ['identify_max_duration (60 s)', '61.0']),
    (dict(duration=float('nan')), ['nan']),
    (dict(duration=0.0), ['no data']),
    (dict(effort_kind='motor_current'), ["'motor_current'", 'give samples']),
])
def test_a_bad_request_says_what_is_wrong(arm, kw, words):
    text = problem(arm, **kw)
    for w in words:
        assert w in text, (w, text)


def test_a_moving_base_is_refused(arm):
    floating = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'), root_joint='floating')
    assert 'fixed base' in problem(floating)


def test_the_collection_ends_at_its_time(arm):
    ident = Identification(arm, 'panda_link7', static=False, rest_velocity=0.01)
    ident.collect(1_000_000_000, 0.5)
    assert ident.end_ns == 1_500_000_000 and ident.state() == 'collecting (0 samples)'
    assert ident.tick(1_499_999_999) is False and ident.collection is not None
