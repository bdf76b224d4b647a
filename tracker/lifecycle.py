"""The defect lifecycle: the four MCR-Bench states and the transitions allowed between rounds.

A defect's state is decided once per round. ``check_transition(previous, new)`` says whether a
defect that ended round t-1 in ``previous`` may stand in ``new`` at round t; ``None`` for
``previous`` means the defect did not exist yet. A decision can be revised within the same round
(a human resolving a thread after the bot spoke): the revised state is validated against the
previous round's state, exactly like the first decision of the round was.
"""

from __future__ import annotations

from enum import Enum


class State(str, Enum):
    NEW = "New"
    OPEN = "Open"
    RESOLVED = "Resolved"
    REOPENED = "Reopened"

    def __str__(self) -> str:  # so f-strings and the ledger show "Open", not "State.OPEN"
        return self.value

    @property
    def unresolved(self) -> bool:
        """True for the states in which a defect still needs work (New, Open, Reopened)."""
        return self is not State.RESOLVED


class InvalidTransition(ValueError):
    """A state change the lifecycle does not allow, e.g. Resolved straight to Open."""

    def __init__(self, previous: State | None, new: State, defect: str = ""):
        self.previous = previous
        self.new = new
        who = f"defect {defect}: " if defect else ""
        allowed = ", ".join(s.value for s in sorted(ALLOWED[previous], key=_order))
        super().__init__(
            f"{who}cannot go from {previous.value if previous else 'nothing'} to {new.value}; "
            f"allowed next states: {allowed}"
        )


def _order(state: State) -> int:
    return list(State).index(state)


ALLOWED: dict[State | None, frozenset[State]] = {
    None: frozenset({State.NEW}),
    State.NEW: frozenset({State.OPEN, State.RESOLVED}),
    State.OPEN: frozenset({State.OPEN, State.RESOLVED}),
    State.REOPENED: frozenset({State.OPEN, State.RESOLVED}),
    State.RESOLVED: frozenset({State.RESOLVED, State.REOPENED}),
}


def parse_state(value: str | State) -> State:
    """Turn ``"open"``, ``"Open"`` or ``State.OPEN`` into a State, with a clear error otherwise."""
    if isinstance(value, State):
        return value
    if (exact := _BY_VALUE.get(value)) is not None:
        return exact
    for state in State:
        if str(value).strip().lower() == state.value.lower():
            return state
    raise ValueError(
        f"unknown defect state {value!r}; expected one of {', '.join(s.value for s in State)}"
    )


_BY_VALUE = {state.value: state for state in State}


def check_transition(previous: State | None, new: State, defect: str = "") -> State:
    """Return ``new`` if a defect may go from ``previous`` (last round) to ``new`` (this round).

    Raises InvalidTransition otherwise.
    """
    if new not in ALLOWED[previous]:
        raise InvalidTransition(previous, new, defect)
    return new


def carry_forward(previous: State) -> State:
    """The state a defect keeps at a new round when nothing says otherwise.

    New and Reopened become Open (raised earlier, still unresolved); Resolved stays Resolved.
    """
    return State.RESOLVED if previous is State.RESOLVED else State.OPEN
