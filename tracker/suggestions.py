"""What a GitHub ```suggestion block in a comment proposes.

A reviewer's suggestion is the most direct evidence the tracker has (``suggestion-applied``),
and the bot writes its own fixes as suggestion blocks (``tracker.models``), so both read the
block here. Plain text in, lines out; no I/O.
"""

from __future__ import annotations

import re

_SUGGESTION_BLOCK = re.compile(r"```suggestion[^\n]*\n(.*?)^\s*```",
                               re.DOTALL | re.MULTILINE | re.IGNORECASE)


def suggestion(body: str | None) -> list[str] | None:
    """The replacement lines of a GitHub ```suggestion block, if the comment has one."""
    match = _SUGGESTION_BLOCK.search(body or "")
    if match is None:
        return None
    return match.group(1).splitlines()
