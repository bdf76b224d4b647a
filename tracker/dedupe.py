"""Deduplication: is a finding raised this round one of the defects the ledger already tracks?

A finding is a tracked defect when it sits in the same file at (or within a few lines of) the
defect's position *after mapping to the new head*, and says the same thing: the same offline
rule, the same fingerprinted code, or a similar description. Unanchored remarks match on
rule or on a very similar description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .anchors import fingerprint
from .models import Defect, Finding, Origin

LINE_TOLERANCE = 3
TEXT_SIMILAR = 0.35  # token overlap (Jaccard) for an anchored match
TEXT_SAME = 0.6  # for a match without a place

# Chinese, Japanese and Korean are compared by pairs of characters (no spaces split their
# words); every other script by words of three or more letters, as before.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(rf"(?:(?![{_CJK}])[^\W\d])(?:(?![{_CJK}])\w){{2,}}")
_STOP = {"the", "this", "that", "and", "for", "with", "not", "are", "was", "should", "here",
         "can", "use", "you", "instead", "which", "will", "from", "have", "has", "but", "its"}


@dataclass(frozen=True)
class Position:
    """Where a tracked defect stands at the new head (its mapped anchor)."""

    path: str | None
    start: int | None
    end: int | None


def words(text: str) -> set[str]:
    """The meaningful words of a description: words of three or more letters in any script
    but Chinese, Japanese and Korean, and pairs of characters in those."""
    found = {w.lower() for w in _WORD.findall(text or "")} - _STOP
    for run in _CJK_RUN.findall(text or ""):
        found |= {run[i:i + 2] for i in range(max(len(run) - 1, 1))}
    return found


def text_similarity(a: str, b: str) -> float:
    """Jaccard overlap of the meaningful words of two descriptions."""
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def _near(finding: Finding, pos: Position) -> bool:
    if finding.path != pos.path or finding.line_start is None or pos.start is None:
        return False
    return (finding.line_start <= (pos.end or pos.start) + LINE_TOLERANCE
            and finding.line_end >= pos.start - LINE_TOLERANCE)


def same_defect(finding: Finding, defect: Defect, pos: Position,
                code: str | None = None) -> bool:
    """Whether ``finding`` (with the ``code`` it sits on) is ``defect`` at position ``pos``."""
    if finding.rule and defect.rule and finding.rule != defect.rule:
        return False
    if finding.anchored:
        if finding.type == defect.type == "E.4" and finding.path == pos.path:
            return True  # "add tests" is one defect per file, wherever it is pinned
        if not _near(finding, pos):
            return False
        if finding.rule and finding.rule == defect.rule:
            return True
        if finding.origin is Origin.HUMAN and defect.origin is Origin.HUMAN:
            # A person's comment is its own request unless it plainly repeats another
            # person's: two asks on one line are two defects, and fixing one must not resolve
            # the other. (A reviewer echoing the bot's finding on the same code joins it.)
            return text_similarity(finding.description, defect.description) >= TEXT_SAME
        if code and defect.fingerprint and fingerprint(code) == defect.fingerprint:
            return text_similarity(finding.description, defect.description) > 0
        return text_similarity(finding.description, defect.description) >= TEXT_SIMILAR
    if defect.anchored:
        return False
    if finding.rule and finding.rule == defect.rule:
        return True
    return text_similarity(finding.description, defect.description) >= TEXT_SAME


def match_finding(finding: Finding, tracked: list[tuple[Defect, Position]],
                  code: str | None = None) -> Defect | None:
    """The tracked defect this finding repeats, if any (the closest one when several could)."""
    best, best_score = None, -1.0
    for defect, pos in tracked:
        if not same_defect(finding, defect, pos, code):
            continue
        distance = abs((finding.line_start or 0) - (pos.start or 0))
        score = text_similarity(finding.description, defect.description) - distance / 100
        if score > best_score:
            best, best_score = defect, score
    return best
