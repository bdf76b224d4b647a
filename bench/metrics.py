"""The MCR-Bench metrics, computed from labelled states and a system's answers.

Pure functions over plain data, so every figure can be checked by hand in a test.
"""

from __future__ import annotations

from dataclasses import dataclass

UNRESOLVED = {"New", "Open", "Reopened"}


def _safe(num: float, den: float) -> float:
    return num / den if den else 0.0


@dataclass(frozen=True)
class TrackPair:
    """One (defect, round t >= 2) pair for tracking: the labels at t-1 and t, and the answer.

    ``answer`` is the state the system gave the defect at round t, or None when the system
    does not track it at all (which counts as wrong).
    """

    task: str
    defect: str
    round: int
    before: str  # label at t-1
    gold: str  # label at t
    answer: str | None

    @property
    def live(self) -> bool:
        return self.before in UNRESOLVED

    @property
    def settled(self) -> bool:
        return self.before == "Resolved"


def live_class(state: str | None) -> str | None:
    """Collapse a state to the live-pair classes: Open (still unresolved) or Resolved."""
    if state is None:
        return None
    return "Resolved" if state == "Resolved" else "Open"


def tracking_scores(pairs: list[TrackPair]) -> dict:
    """Tracking as the task format defines it.

    Live pairs (unresolved at t-1): plain accuracy and balanced accuracy (mean per-class
    recall over the classes Open and Resolved that occur in the gold labels). Settled pairs
    (Resolved at t-1): errors are answers that re-raise or reopen a defect that stayed
    Resolved, or that miss one that really came back (Reopened).
    """
    live = [p for p in pairs if p.live]
    settled = [p for p in pairs if p.settled]
    correct = [live_class(p.answer) == live_class(p.gold) for p in live]
    recalls = {}
    for cls in ("Open", "Resolved"):
        members = [ok for p, ok in zip(live, correct) if live_class(p.gold) == cls]
        if members:
            recalls[cls] = sum(members) / len(members)
    settled_errors = sum(1 for p in settled if not _settled_ok(p))
    return {
        "n": len(live),
        "state_accuracy": _safe(sum(correct), len(live)),
        "balanced_accuracy": _safe(sum(recalls.values()), len(recalls)),
        "recall_by_state": recalls,
        "support_by_state": {
            cls: sum(1 for p in live if live_class(p.gold) == cls) for cls in ("Open", "Resolved")
        },
        "untracked": sum(1 for p in live if p.answer is None),
        "settled_n": len(settled),
        "settled_errors": settled_errors,
    }


def _settled_ok(pair: TrackPair) -> bool:
    if pair.gold == "Reopened":
        return pair.answer in UNRESOLVED
    return pair.answer == "Resolved"
