"""Resolved, but not sure: the defects whose fix a person is asked to confirm.

The tracker marks a decision less likely than ``tracker.calibration.SURE`` to be right as
unsure, and a configured verifier takes those first. A Resolved that only a rule's unsure
ruling stands behind (no verifier confirmed it, no person resolved the thread since) must not
read as a fix: the summary and the thread reply ask the reviewer to resolve the thread if it is
fixed, the bot leaves that thread unfolded for them, and the merge gate (``fail_on``) still
counts the defect as standing. The ledger keeps the tracker's Resolved, so the tracker's
answers, the bench's scores and ``--json`` are unchanged.

What made a defect Resolved is the decision that moved it there (a later round's
``stays-resolved`` says the code did not come back, not that the fix was right), read from the
completed rounds' saved plans and the round being published.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from tracker.calibration import unsure
from tracker.models import Decision, SignalKind
from tracker.store import LedgerStore

__all__ = ["hedged", "is_hedged"]

_CONFIRMS = (str(SignalKind.THREAD_RESOLVED), str(SignalKind.COMMAND_RESOLVE))


def is_hedged(state: str, confidence: float | None, decided_by: str | None) -> bool:
    """Whether a decision is a Resolved only a rule's unsure ruling stands behind."""
    return str(state) == "Resolved" and str(decided_by or "rule") == "rule" and \
        unsure(confidence)


def hedged(store: LedgerStore, pr_id: int, pending: Iterable[Decision] = (),
           number: int | None = None) -> set[str]:
    """The keys of the PR's Resolved defects (not ignored) whose Resolved is hedged.
    ``pending``: the decisions of round ``number``, being published (not in the ledger yet)."""
    entered: dict[str, tuple[int, bool]] = {}  # key -> (round it became Resolved, hedged)
    last: dict[str, str] = {}
    steps = []
    for rnd in sorted(store.rounds(pr_id), key=lambda r: r["number"]):
        if rnd.get("status") != "complete" or not rnd.get("plan") or rnd["number"] == number:
            continue
        plan = json.loads(rnd["plan"]) if isinstance(rnd["plan"], str | bytes) else rnd["plan"]
        steps += [(rnd["number"], d.get("key"), d.get("state"), d.get("confidence"),
                   d.get("decided_by")) for d in plan.get("decisions") or []]
    steps += [(number, d.key, str(d.state), d.confidence, str(d.decided_by)) for d in pending]
    for rnd_number, key, state, confidence, decided_by in steps:
        if state == "Resolved" and (last.get(key) != "Resolved" or decided_by != "rule"):
            entered[key] = (rnd_number, is_hedged(state, confidence, decided_by))
        last[key] = state
    candidates = {key for key, (_, unsure_) in entered.items()
                  if unsure_ and last.get(key) == "Resolved"}
    if not candidates:
        return set()
    decided_now = {d.key for d in pending}
    out = set()
    for defect in store.defects(pr_id):
        if defect.key not in candidates or defect.ignored:
            continue
        if defect.key not in decided_now and str(defect.state) != "Resolved":
            continue  # a person changed it since the round
        since = entered[defect.key][0]
        confirmed = any(s["kind"] in _CONFIRMS and (s.get("round") or 0) >= since
                        for s in store.signal_rows(pr_id, defect.key))
        if not confirmed:
            out.add(defect.key)
    return out
