"""Which of a comment's requests a gold card is.

A reviewer's comment that asks for several things is tracked as one defect per request
(``D3a``, ``D3b``: ``tracker.requests``), and a task may label those requests as separate cards
that name the same comment in ``comment_ids``. Scoring a card against the wrong request scores
the tracker on a question it was not asked, so a card is matched to the request made from the
same comment that is most like it: the same file and overlapping lines first, then the words
they share; on a tie, the card's rank among the comment's cards picks the request of that rank
(annotators list a comment's requests in the order it asks them).
"""

from __future__ import annotations

from tracker.dedupe import text_similarity


def _overlap(card: dict, request: dict) -> bool:
    if not card.get("path") or card.get("path") != request.get("path"):
        return False
    start, end = card.get("line_start"), card.get("line_end") or card.get("line_start")
    r_start = request.get("line_start")
    r_end = request.get("line_end") or r_start
    if None in (start, end, r_start, r_end):
        return False
    return start <= r_end and r_start <= end


def pick_request(card: dict, requests: list[dict], rank: int = 0) -> dict | None:
    """The request (a dict with ``key``, ``path``, ``line_start``, ``line_end`` and
    ``description``) of one comment that ``card`` is; ``rank`` is the card's place among the
    cards that name that comment."""
    if not requests:
        return None
    if len(requests) == 1:
        return requests[0]

    def score(item: tuple[int, dict]) -> tuple[float, float]:
        i, request = item
        near = 1.0 if _overlap(card, request) else 0.0
        words = text_similarity(card.get("description") or "", request.get("description") or "")
        return near + words, -abs(i - rank)

    return max(enumerate(requests), key=score)[1]
