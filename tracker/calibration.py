"""How sure a decision is: the chance it is right, as measured for the rule that took it.

Every decision names the rule that took it (``anchor-untouched``, ``stays-resolved``, a
person's ``thread_resolved``...). The rules decide; this module only says how often each rule
was right on the development tasks, so that a decision carries a probability people and the
verifier can use, and stays explainable: "``anchor-untouched`` was right in 33 of 38 pairs".

The table (``calibration.json`` beside this file) is written by
``python -m bench.tune.calibration --write`` from every dev folder pooled; that script also
measures, leave-one-repository-out, how well these probabilities are calibrated (Brier score
and a reliability table). Each rule's rate is shrunk toward the rate of every rule pooled (a
rule seen in few pairs keeps close to that; one never seen gets it): chosen over shrinking
toward the rule's own confidence by the leave-one-repository-out Brier score (0.0599 against
0.0655 at four pairs' worth, when the rules' own confidences had grown too modest).

``ROUNDWISE_CALIBRATION=off`` ignores the table (the rules' own confidences are used).
A decision below ``SURE`` is *unsure*: the summary and the check run show it as "likely
resolved (unverified)" or "likely still open", and a configured verifier takes those first.
No I/O beyond reading the table once.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("calibration.json")
SURE = 0.75  # a decision less likely than this to be right is shown as unsure
PRIOR_WEIGHT = 4.0  # pairs' worth of belief in the pooled rate
HUMAN = 0.95  # a person's explicit action, when the table has not measured it


def base_rule(rule: str | None) -> str:
    """The rule's name without what a verifier added to it (``+confirmed``, ``+weighed``)."""
    return (rule or "").split("+", 1)[0]


@dataclass(frozen=True)
class Calibration:
    """Per rule, how many of its rulings were right and in how many pairs."""

    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule -> (right, n)

    def confidence(self, rule: str | None, own: float) -> float:
        """The chance a ruling of ``rule`` is right: its measured rate shrunk toward the
        pooled rate of every rule; ``own`` (the confidence the rule gives itself) with no table."""
        if not self.counts:
            return own
        right, n = self.counts.get(base_rule(rule), (0, 0))
        return (right + PRIOR_WEIGHT * self.base_rate) / (n + PRIOR_WEIGHT)

    @property
    def base_rate(self) -> float:
        """The share of rulings that were right, every rule pooled."""
        right = sum(r for r, _ in self.counts.values())
        return right / max(sum(n for _, n in self.counts.values()), 1)

    @classmethod
    def fit(cls, outcomes: list[tuple[str, bool]]) -> Calibration:
        """From (rule, right?) outcomes."""
        counts: dict[str, list[int]] = {}
        for rule, right in outcomes:
            row = counts.setdefault(base_rule(rule), [0, 0])
            row[0] += bool(right)
            row[1] += 1
        return cls({k: (r, n) for k, (r, n) in counts.items()})


@lru_cache(maxsize=1)
def _table() -> Calibration:
    try:
        data = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Calibration()
    return Calibration({str(k): (int(v["right"]), int(v["pairs"]))
                        for k, v in (data.get("rules") or {}).items()})


def current() -> Calibration:
    """The table in use (empty when switched off or not written)."""
    if os.environ.get("ROUNDWISE_CALIBRATION", "on").strip().lower() in ("off", "0", "no"):
        return Calibration()
    return _table()


def unsure(confidence: float | None) -> bool:
    return confidence is not None and confidence < SURE


def unsure_label(state: str, confidence: float | None) -> str | None:
    """How an unsure decision is shown, or None for a sure one."""
    if not unsure(confidence):
        return None
    return "likely resolved (unverified)" if str(state) == "Resolved" else "likely still open"
