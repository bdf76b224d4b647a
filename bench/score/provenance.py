"""Own and carried detection: what the bot found itself apart from what it was told.

The MCR-Bench protocol scores every finding a system reports at round t, so a system that
keeps the defects human reviewers raised (told to it through the events of earlier rounds)
and reports them again with a state scores high detection without detecting anything. The
combined figure stays (it is the protocol's), but the bench also splits the matched pairs of
that same one-to-one matching by where each finding came from:

- *own*: findings the bot raised itself (``origin`` ``bot``, the default);
- *carried*: defects people raised earlier (``origin`` ``human``), reported again.

Both are measured against all defects due at the round, so own + carried = combined for
matched pairs and findings. Precision is None (not 0 or 1) when a part has no findings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Protocol

from .metrics import prf


class RoundScore(Protocol):
    """What this module reads of a scored round (``bench.score.scoring.RoundScore``)."""

    matches: list
    findings: list
    due: list

OWN, CARRIED = "own", "carried"


def part_of(finding: dict) -> str:
    """``carried`` for a defect a person raised, ``own`` for one the bot raised."""
    return CARRIED if finding.get("origin") == "human" else OWN


def _counts(rounds: list[RoundScore], part: str) -> tuple[int, int, int]:
    tp = findings = due = 0
    for rs in rounds:
        tp += sum(1 for fi, _, _ in rs.matches if part_of(rs.findings[fi]) == part)
        findings += sum(1 for f in rs.findings if part_of(f) == part)
        due += len(rs.due)
    return tp, findings, due


def part_detection(rounds: list[RoundScore], part: str) -> dict:
    """P/R/F1 of one part over ``rounds`` (precision None when the part found nothing)."""
    tp, findings, due = _counts(rounds, part)
    out = prf(tp, findings, due)
    if not findings:
        out["precision"] = None
    out["rounds"] = len(rounds)
    return out


def _by(rounds: list[RoundScore], key) -> dict[str, list[RoundScore]]:
    groups: dict = defaultdict(list)
    for rs in rounds:
        groups[key(rs)].append(rs)
    return {k: groups[k] for k in sorted(groups)}


def hit_rates(rounds: list[RoundScore], field_name: str,
              matched: Callable[[RoundScore], set[int]]) -> dict:
    """Per ``field_name`` value of the due cards: the share matched, ``matched(round)`` being
    the indices of a round's matched cards."""
    due: dict[str, int] = defaultdict(int)
    hit: dict[str, int] = defaultdict(int)
    for rs in rounds:
        found = matched(rs)
        for ci, card in enumerate(rs.due):
            label = str(card.get(field_name) or "unknown")
            due[label] += 1
            hit[label] += ci in found
    return {label: {"hit_rate": hit[label] / due[label], "hit": hit[label], "due": due[label]}
            for label in sorted(due)}


def own_hit_rates(rounds: list[RoundScore], field_name: str) -> dict:
    """Per ``field_name`` value of the due cards: the share the bot's own findings matched."""
    return hit_rates(rounds, field_name, lambda rs: {
        ci for fi, ci, _ in rs.matches if part_of(rs.findings[fi]) == OWN})


def split_detection(rounds: list[RoundScore]) -> dict:
    """``{"own": ..., "carried": ...}`` for the summary (MCR rounds, already matched)."""
    by_round = _by(rounds, lambda rs: rs.round)
    own = part_detection(rounds, OWN)
    own["round_1"] = part_detection(by_round.get(1, []), OWN)
    own["per_round"] = {f"R{t}": part_detection(group, OWN) for t, group in by_round.items()}
    own["per_language"] = {lang: part_detection(group, OWN) for lang, group
                           in _by(rounds, lambda rs: rs.task.language).items()}
    own["per_type"] = own_hit_rates(rounds, "type")
    carried = part_detection(rounds, CARRIED)
    carried["per_round"] = {f"R{t}": part_detection(group, CARRIED)
                            for t, group in by_round.items()}
    return {OWN: own, CARRIED: carried}
