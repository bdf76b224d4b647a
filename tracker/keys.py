"""Defect keys: ``D3`` for a defect, ``D3a``, ``D3b``... for the requests of one comment.

A reviewer's comment that asks for several things becomes one defect per request
(``tracker.requests``); its defects share the comment's number and take a letter each, so the
summary, the threads and ``/roundwise resolve D3b`` show where they came from, and ``D3``
names them all. Keys are read without regard to case ("d3B" is ``D3b``); a PR's next key
counts comments, not requests (after ``D3a``, ``D3b`` comes ``D4``).
"""

from __future__ import annotations

import re
import string

_KEY = re.compile(r"^D(\d{1,9})([a-z]?)$", re.IGNORECASE)
PARTS = string.ascii_lowercase


def canonical(key: str) -> str:
    """A key as the ledger stores it: ``D``, the number, the request's letter in lower case."""
    match = _KEY.match(key.strip())
    if match is None:
        return key.strip().upper()
    return f"D{int(match.group(1))}{match.group(2).lower()}"


def is_key(text: str) -> bool:
    """Whether ``text`` reads as a defect key (``D3``, ``d3``, ``D3b``)."""
    return _KEY.match(text.strip()) is not None


def group(key: str) -> str:
    """The key of the comment a request's defect came from: ``D3b`` -> ``D3``."""
    match = _KEY.match(key)
    return f"D{int(match.group(1))}" if match else key


def part(key: str) -> str:
    """The request's letter (``""`` for a defect that is its comment's only one)."""
    match = _KEY.match(key)
    return match.group(2).lower() if match else ""


def part_key(group_key: str, index: int) -> str:
    """The key of a comment's ``index``-th request (0 -> ``D3a``)."""
    return f"{group(group_key)}{PARTS[index]}"


def order(key: str) -> tuple[int, str]:
    """Keys in the order they were raised: D2 < D3a < D3b < D10."""
    match = _KEY.match(key)
    return (int(match.group(1)), match.group(2).lower()) if match else (0, key)


def fits(key: str, next_key: str) -> bool:
    """Whether a new defect may take ``key`` when the PR's next free key is ``next_key``:
    that key, its first request (``D5a``), or a later request of the comment just before it
    (``D4b`` after ``D4a``)."""
    if key == next_key:
        return True
    number, letter = order(key)
    free = order(next_key)[0]
    return (number == free and letter == "a") or (number == free - 1 and letter not in ("", "a"))
