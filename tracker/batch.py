"""A round's decisions checked and applied in memory, so the ledger writes them all at once.

``apply_decisions`` runs, decision by decision and in order, the checks and changes
``Ledger.record_decision`` makes, over defect rows read once with the state each defect ended
the previous round in. It returns the defect rows to write back (each once, final values) and
the history rows to insert, in decision order. A decision may revise an earlier one of the same
round: it sees the row as the earlier one left it. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from .anchors import fingerprint as code_fingerprint
from .keys import canonical
from .ledger_base import LedgerError
from .lifecycle import State, carry_forward, check_transition, parse_state
from .models import Decision

__all__ = ["WRITTEN", "apply_decisions", "state_before"]

#: the defect columns a decision may change, in the order the ledger writes them back
WRITTEN = ("state", "state_round", "updated_at", "path", "line_start", "line_end",
           "anchor_sha", "code", "fingerprint", "resolved_code")


def state_before(last: tuple[str, int] | None, round_number: int) -> State | None:
    """The state a defect ended round ``round_number - 1`` in, from its last history row
    before ``round_number`` as ``(state, round)``; None when it has none (not raised yet)."""
    if last is None:
        return None
    state = parse_state(last[0])
    return state if last[1] == round_number - 1 else carry_forward(state)


def apply_decisions(rows: dict[str, dict], last: dict[int, tuple[str, int]],
                    round_number: int, decisions: Iterable[Decision], head_sha: str | None,
                    stamp: str) -> tuple[list[dict], list[tuple]]:
    """Check and apply ``decisions`` to ``rows`` (defect rows by key, changed in place).

    ``last`` maps a defect id to its last history row before this round. Returns the changed
    rows and the history rows as ``(defect_id, round, state, rule, evidence, decided_by, at)``.
    Raises ``LedgerError`` or ``InvalidTransition`` before anything is written.
    """
    changed: dict[int, dict] = {}
    history: list[tuple] = []
    for decision in decisions:
        row = rows.get(canonical(decision.key))
        if row is None:
            raise LedgerError(f"no defect {decision.key} on this pull request")
        key, state = row["key"], decision.state
        if round_number < row["state_round"]:
            raise LedgerError(f"{key} was already decided at round {row['state_round']}; "
                              f"cannot decide round {round_number}")
        if round_number == row["raised_round"]:
            # Still the round it was raised in: it stays New unless a person resolves it.
            if state not in (State.NEW, State.RESOLVED):
                raise LedgerError(f"{key} was raised in round {round_number}: it can only be "
                                  f"New or Resolved there, not {state}")
        else:
            check_transition(state_before(last.get(row["id"]), round_number), state, key)
        if state is State.RESOLVED and parse_state(row["state"]) is not State.RESOLVED:
            row["resolved_code"] = row["code"]
        row.update(state=state.value, state_round=round_number, updated_at=stamp)
        if decision.path is not None and decision.line_start is not None:
            row.update(path=decision.path, line_start=decision.line_start,
                       line_end=decision.line_end)
        if head_sha is not None:
            row["anchor_sha"] = head_sha  # the new position is at this round's head
        if decision.code is not None:
            row.update(code=decision.code, fingerprint=code_fingerprint(decision.code))
        changed[row["id"]] = row
        evidence = decision.evidence
        if decision.signals:
            evidence += " | signals: " + "; ".join(decision.signals)
        history.append((row["id"], round_number, state.value, decision.rule, evidence,
                        decision.decided_by.value, stamp))
    return list(changed.values()), history
