"""The lifecycle state machine: which state changes between rounds are allowed."""

import pytest

from tracker.lifecycle import (
    InvalidTransition,
    State,
    carry_forward,
    check_transition,
    parse_state,
)


@pytest.mark.parametrize(
    "previous,new",
    [
        (None, State.NEW),
        (State.NEW, State.OPEN),
        (State.NEW, State.RESOLVED),
        (State.OPEN, State.OPEN),
        (State.OPEN, State.RESOLVED),
        (State.RESOLVED, State.RESOLVED),
        (State.RESOLVED, State.REOPENED),
        (State.REOPENED, State.OPEN),
        (State.REOPENED, State.RESOLVED),
    ],
)
def test_allowed_transitions(previous, new):
    assert check_transition(previous, new) is new


@pytest.mark.parametrize(
    "previous,new",
    [
        (None, State.OPEN),
        (None, State.RESOLVED),
        (State.NEW, State.NEW),
        (State.NEW, State.REOPENED),
        (State.OPEN, State.NEW),
        (State.OPEN, State.REOPENED),
        (State.RESOLVED, State.OPEN),
        (State.RESOLVED, State.NEW),
        (State.REOPENED, State.REOPENED),
    ],
)
def test_rejected_transitions_say_what_is_allowed(previous, new):
    with pytest.raises(InvalidTransition) as err:
        check_transition(previous, new, "D7")
    message = str(err.value)
    assert message.startswith("defect D7: cannot go from")
    assert "allowed next states" in message


def test_resolved_to_open_message_lists_resolved_and_reopened():
    with pytest.raises(InvalidTransition, match="allowed next states: Resolved, Reopened"):
        check_transition(State.RESOLVED, State.OPEN)


def test_parse_state_accepts_any_case_and_rejects_unknown():
    assert parse_state("open") is State.OPEN
    assert parse_state(" Reopened ") is State.REOPENED
    with pytest.raises(ValueError, match="unknown defect state 'fixed'"):
        parse_state("fixed")


def test_carry_forward():
    assert carry_forward(State.NEW) is State.OPEN
    assert carry_forward(State.REOPENED) is State.OPEN
    assert carry_forward(State.RESOLVED) is State.RESOLVED
    assert str(State.OPEN) == "Open"
