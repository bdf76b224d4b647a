"""A round's decisions applied in memory first, so a ledger engine writes them all at once.

``Ledger.record_decision`` checks one decision against the lifecycle and writes it; a round
has dozens. ``apply_decisions`` runs the same checks, in order, over defect rows read once
(and the state each defect ended the previous rounds in), and returns the changed rows and the
history rows to store: an engine writes them in a few set-based statements, and every engine
decides exactly alike. It does no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from .anchors import fingerprint as code_fingerprint
from .lifecycle import State, carry_forward, check_transition, parse_state
from .models import Decision

__all__ = ["DEFECT_COLUMNS", "apply_decisions", "previous_state"]

#: the defect columns a decision may change (what an engine writes back)
DEFECT_COLUMNS = ("state", "state_round", "updated_at", "path", "line_start", "line_end",
                  "anchor_sha", "code", "fingerprint", "resolved_code")


def previous_state(last: tuple[str, int] | None, round_number: int) -> State | None:
    """The state a defect ended round ``round_number - 1`` in, from its last history row
    before ``round_number`` (``(state, round)``), None when it had none."""
    if last is None:
        return None
    state = parse_state(last[0])
    return state if last[1] == round_number - 1 else carry_forward(state)


def apply_decisions(rows: dict[str, dict], last: dict[int, tuple[str, int]],
                    round_number: int, decisions: Iterable[Decision], head_sha: str | None,
                    stamp: str) -> tuple[list[dict], list[dict]]:
    """Check and apply ``decisions`` to ``rows`` (defect rows by key, changed in place).

    ``last`` maps a defect id to its last history row before this round. Returns the changed
    defect rows (each once) and the history rows, in decision order. Raises ``LedgerError``
    or ``InvalidTransition`` before anything is written, as ``record_decision`` does.
    """
    from .ledger import LedgerError

    changed: dict[int, dict] = {}
    history: list[dict] = []
    for decision in decisions:
        row = rows.get(decision.key.upper())
        if row is None:
            raise LedgerError(f"no defect {decision.key} on this pull request")
        key = row["key"]
        if round_number < row["state_round"]:
            raise LedgerError(f"{key} was already decided at round {row['state_round']}; "
                              f"cannot decide round {round_number}")
        if round_number == row["raised_round"]:
            # Still the round it was raised in: it stays New unless a person resolves it.
            if decision.state not in (State.NEW, State.RESOLVED):
                raise LedgerError(
                    f"{key} was raised in round {round_number}: it can only be New or "
                    f"Resolved there, not {decision.state}")
        else:
            check_transition(previous_state(last.get(row["id"]), round_number), decision.state,
                             key)
        if decision.state is State.RESOLVED and parse_state(row["state"]) is not State.RESOLVED:
            row["resolved_code"] = row["code"]
        row.update(state=decision.state.value, state_round=round_number, updated_at=stamp)
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
        history.append({"defect_id": row["id"], "round": round_number,
                        "state": str(decision.state), "rule": decision.rule,
                        "evidence": evidence, "decided_by": str(decision.decided_by),
                        "at": stamp})
    return list(changed.values()), history
