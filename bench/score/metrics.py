"""The MCR-Bench metrics, computed from labelled states and a system's answers.

Pure functions over plain data, so every figure can be checked by hand in a test: which cards
are due and which answers are findings at a round, line-range proximity, the one-to-one
matching between findings and cards, precision/recall/F1, the state confusion matrix,
percentiles, and the tracking scores. ``bench.score.scoring`` applies them to tasks and records.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

UNRESOLVED = {"New", "Open", "Reopened"}
STATE_ORDER = ("New", "Open", "Resolved", "Reopened")


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
    confidence: float | None = None  # of the decision behind ``answer``, when known

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
    settled_errors = sum(1 for p in settled if not settled_ok(p))
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
        **sure_scores(live, correct),
    }


def sure_scores(live: list[TrackPair], correct: list[bool]) -> dict:
    """Of the live pairs whose decision's confidence is known: the share below
    ``tracker.calibration.SURE`` (unsure, shown as such on the PR) and the accuracy on the
    rest. Nothing when no confidence is known."""
    from tracker.calibration import unsure

    known = [(p, ok) for p, ok in zip(live, correct) if p.confidence is not None]
    if not known:
        return {}
    sure = [ok for p, ok in known if not unsure(p.confidence)]
    return {"unsure_share": round(1 - len(sure) / len(known), 4),
            "sure_accuracy": round(sum(sure) / len(sure), 4) if sure else None,
            "sure_n": len(sure)}


def settled_ok(pair: TrackPair) -> bool:
    """Whether the answer for a settled pair is right (kept Resolved, or caught coming back)."""
    if pair.gold == "Reopened":
        return pair.answer in UNRESOLVED
    return pair.answer == "Resolved"


# --- detection -------------------------------------------------------------------------------


def card_due(states: list[str | None], t: int) -> bool:
    """Whether a card with per-round ``states`` is due at round ``t`` (1-based).

    Due: New, Open or Reopened at t, or Resolved at t after not being Resolved at t-1 (which
    includes a card first seen at t already Resolved). Resolved earlier: not due.
    """
    if t < 1 or t > len(states):
        return False
    state = states[t - 1]
    if state in UNRESOLVED:
        return True
    if state == "Resolved":
        return t == 1 or states[t - 2] != "Resolved"
    return False


def is_finding(defect: dict) -> bool:
    """Whether a system defect counts as a finding at its round.

    Its state is New, Open or Reopened, or it turned Resolved at this round (previous state
    not Resolved, including none). A defect that was Resolved already is not a finding.
    """
    state = defect.get("state")
    if state in UNRESOLVED:
        return True
    return state == "Resolved" and defect.get("previous_state") != "Resolved"


def prf(tp: int, predicted: int, gold: int) -> dict:
    """Precision, recall and F1 from true positives and the two totals (0 when undefined)."""
    return {
        "precision": _safe(tp, predicted),
        "recall": _safe(tp, gold),
        "f1": _safe(2 * tp, predicted + gold),  # = 2PR / (P + R), without rounding noise
        "tp": tp,
        "findings": predicted,
        "due": gold,
    }


def line_gap(a: tuple[int | None, int | None], b: tuple[int | None, int | None]) -> int:
    """Lines between two inclusive ranges (0 when they overlap or either has no lines)."""
    a_start, a_end = a
    b_start, b_end = b
    if a_start is None or b_start is None:
        return 0
    a_end = a_start if a_end is None else max(a_end, a_start)
    b_end = b_start if b_end is None else max(b_end, b_start)
    return max(0, b_start - a_end, a_start - b_end)


def max_matching(rows: int, cols: int,
                 costs: dict[tuple[int, int], float]) -> list[tuple[int, int]]:
    """A maximum one-to-one matching of a bipartite graph, cheapest among the maximum ones.

    ``costs[(i, j)]`` (in [0, 1]) lists the edges between row i and column j. Solved exactly
    with the Hungarian algorithm on a square matrix where a missing edge costs more than any
    whole matching of real edges, so more pairs always beat cheaper pairs. Rows and columns
    without edges are left out first, so the matrix stays small. Returns the matched
    (row, col) pairs, sorted.
    """
    if not costs:
        return []
    row_ids = sorted({i for i, _ in costs if 0 <= i < rows})
    col_ids = sorted({j for _, j in costs if 0 <= j < cols})
    n = max(len(row_ids), len(col_ids))
    big = float(n + 1)
    matrix = [[big] * n for _ in range(n)]
    for a, i in enumerate(row_ids):
        for b, j in enumerate(col_ids):
            matrix[a][b] = costs.get((i, j), big)
    pairs = []
    for a, b in enumerate(_hungarian(matrix)):
        if a < len(row_ids) and b < len(col_ids) and (row_ids[a], col_ids[b]) in costs:
            pairs.append((row_ids[a], col_ids[b]))
    return sorted(pairs)


def _hungarian(matrix: list[list[float]]) -> list[int]:
    """Minimum-cost perfect assignment of a square matrix: the column of each row.

    Shortest augmenting paths with row/column potentials, O(n^3).
    """
    n = len(matrix)
    row_pot = [0.0] * (n + 1)
    col_pot = [0.0] * (n + 1)
    owner = [0] * (n + 1)  # owner[j]: 1-based row assigned to column j (0 = free)
    for row in range(1, n + 1):
        owner[0] = row
        slack = [math.inf] * (n + 1)
        came_from = [0] * (n + 1)
        used = [False] * (n + 1)
        col = 0
        while owner[col]:
            used[col] = True
            i, delta, nxt = owner[col], math.inf, 0
            for j in range(1, n + 1):
                if used[j]:
                    continue
                reduced = matrix[i - 1][j - 1] - row_pot[i] - col_pot[j]
                if reduced < slack[j]:
                    slack[j], came_from[j] = reduced, col
                if slack[j] < delta:
                    delta, nxt = slack[j], j
            for j in range(n + 1):
                if used[j]:
                    row_pot[owner[j]] += delta
                    col_pot[j] -= delta
                else:
                    slack[j] -= delta
            col = nxt
        while col:
            prev = came_from[col]
            owner[col] = owner[prev]
            col = prev
    assignment = [0] * n
    for j in range(1, n + 1):
        assignment[owner[j] - 1] = j - 1
    return assignment


def state_confusion(pairs: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Gold x predicted counts over New/Open/Resolved/Reopened (extra states get a row/column)."""
    pairs = list(pairs)
    labels = list(STATE_ORDER)
    for gold, pred in pairs:
        for state in (gold, pred):
            if state not in labels:
                labels.append(state)
    matrix = {g: {p: 0 for p in labels} for g in labels}
    for gold, pred in pairs:
        matrix[gold][pred] += 1
    return matrix


def accuracy(pairs: Iterable[tuple[str, str]]) -> float:
    """Share of (gold, predicted) pairs that agree exactly."""
    pairs = list(pairs)
    return _safe(sum(1 for gold, pred in pairs if gold == pred), len(pairs))


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of ``values``; 0.0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def spread(values: list[float]) -> dict:
    """Total, mean, median and p99 of per-round values."""
    return {
        "total": sum(values),
        "per_round_mean": statistics.fmean(values) if values else 0.0,
        "per_round_median": statistics.median(values) if values else 0.0,
        "per_round_p99": percentile(values, 99),
    }
