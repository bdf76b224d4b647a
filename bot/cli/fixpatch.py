"""The open defects' fixes as one unified diff (``roundwise review --fix-patch FILE``).

A fix replaces a defect's anchored lines at the reviewed head; ``git apply FILE`` then makes
every suggested change at once, outside GitHub (CI, an editor, a coding agent). Fixes are
applied from the bottom of each file up so line numbers stay true; a fix whose lines overlap
one already taken is left out (and reported), never merged by guesswork.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from tracker import keys as defect_keys
from tracker.lines import split_lines

__all__ = ["fix_patch"]

OPEN = ("New", "Open", "Reopened")


def fix_patch(defects: list[dict], read: Callable[[str], str | None]
              ) -> tuple[str, list[str], list[str]]:
    """(the patch, keys applied, keys skipped) for report ``defects`` (``roundwise review``'s
    JSON shape); ``read(path)`` gives a file's text at the reviewed head."""
    by_path: dict[str, list[dict]] = {}
    for d in defects:
        if d.get("fix") is None or d.get("ignored") or d["state"] not in OPEN:
            continue
        if not d.get("path") or not d.get("line_start"):
            continue
        by_path.setdefault(d["path"], []).append(d)
    out, applied, skipped = [], [], []
    for path in sorted(by_path):
        text = read(path)
        if text is None:
            skipped += [d["key"] for d in by_path[path]]
            continue
        lines = split_lines(text, keepends=True)
        taken_from = len(lines) + 1
        new = list(lines)
        for d in sorted(by_path[path], key=lambda d: -d["line_start"]):
            start, end = d["line_start"], d.get("line_end") or d["line_start"]
            if end >= taken_from or end > len(lines):
                skipped.append(d["key"])
                continue
            fix = d["fix"]
            replacement = [ln + "\n" for ln in fix.split("\n")] if fix else []
            new[start - 1:end] = replacement
            taken_from = start
            applied.append(d["key"])
        if new != lines:
            out += difflib.unified_diff(lines, new, f"a/{path}", f"b/{path}")
    return "".join(out), sorted(applied, key=_num), sorted(skipped, key=_num)


def _num(key: str) -> tuple[int, str]:
    return defect_keys.order(key)
