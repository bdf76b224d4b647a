"""Paths and line numbers from outside (webhook payloads, the model), made safe to use.

A signed payload can still carry what GitHub never sends: a ``path`` such as
``../../other/contents/secret.txt`` would become an API request outside the repository, a
comment at line -5 breaks every later round, and a line span of ten million freezes the event
loop in whatever walks it. ``repo_path`` normalises a path and confines it to the repository
(None when it leaves it); ``line_span`` keeps line numbers positive and spans within a bound.
"""

from __future__ import annotations

import posixpath

__all__ = ["MAX_SPAN", "line_number", "line_span", "repo_path"]

MAX_SPAN = 2000  # lines one comment or defect may cover (a diff hunk is far shorter)
MAX_LINE = 10_000_000


def repo_path(path: object) -> str | None:
    """``path`` as a clean relative path inside the repository, or None."""
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        return None
    clean = posixpath.normpath(path)
    if clean.startswith(("/", "../")) or clean == "." or clean == "..":
        return None
    return clean


def line_number(value: object) -> int | None:
    """A 1-based line number, or None for anything else (negative, zero, huge, not an int)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINE:
        return None
    return value


def line_span(start: object, end: object, limit: int = MAX_SPAN) -> tuple[int | None, int | None]:
    """``(start, end)`` cleaned: end a line number, start before it and at most ``limit``
    lines above it (None when there is no range)."""
    end, start = line_number(end), line_number(start)
    if end is None:
        return None, None
    if start is None or start >= end:
        return None, end
    return max(start, end - max(limit, 1) + 1), end
