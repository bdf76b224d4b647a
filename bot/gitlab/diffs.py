"""GitLab's diffs in the shapes the round and GitLab's positions need.

GitLab answers a comparison or an MR version with a list of entries (``old_path``,
``new_path``, ``new_file``, ``deleted_file``, ``renamed_file`` and ``diff``: the hunks without
a file header). ``unified(entries)`` joins them into the git diff a round reads. ``locate``
finds where a line stands in an entry's hunks, which is what a GitLab ``position`` must say
(``new_line`` alone for an added line, ``old_line`` alone for a removed one, both for an
unchanged one: anything else is a 400), and ``hunk_to`` gives the hunk down to a line (GitHub
calls it the comment's ``diff_hunk``), from which the tracker takes a comment's code.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tracker.gitpath import quote

__all__ = ["Located", "hunk_to", "line_code", "locate", "numbered", "unified"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def unified(entries: list[dict]) -> str:
    """A git-format unified diff from GitLab's diff entries (too-large or collapsed entries
    without hunks come as headers alone, like a binary file)."""
    parts = []
    for e in entries:
        old, new = e.get("old_path") or e.get("new_path"), e.get("new_path") or e.get("old_path")
        if not old or not new:
            continue
        a, b = quote(f"a/{old}"), quote(f"b/{new}")  # as git writes names
        parts.append(f"diff --git {a} {b}\n")
        if e.get("renamed_file") and old != new:
            parts.append(f"rename from {quote(old)}\nrename to {quote(new)}\n")
        if e.get("new_file"):
            parts.append(f"new file mode {e.get('b_mode') or '100644'}\n")
        elif e.get("deleted_file"):
            parts.append(f"deleted file mode {e.get('a_mode') or '100644'}\n")
        body = e.get("diff") or ""
        if not body.strip():
            if not (e.get("renamed_file") and old != new):
                parts.append(f"Binary files {a} and {b} differ\n")
            continue
        parts.append("--- " + ("/dev/null" if e.get("new_file") else a) + "\n")
        parts.append("+++ " + ("/dev/null" if e.get("deleted_file") else b) + "\n")
        parts.append(body if body.endswith("\n") else body + "\n")
    return "".join(parts)


def numbered(diff: str) -> Iterator[tuple[int, str, int | None, int | None, str]]:
    """(hunk index, tag, old line, new line, text) for every line of an entry's hunks; tag
    is ``+``, ``-`` or `` ``; ``\\ No newline`` markers are skipped."""
    index, old_no, new_no = -1, 0, 0
    for raw in diff.split("\n"):
        match = _HUNK.match(raw)
        if match:
            index += 1
            old_no, new_no = int(match.group(1)), int(match.group(3))
            continue
        if index < 0 or not raw or raw.startswith("\\"):
            continue
        tag, text = raw[0], raw[1:]
        if tag == "+":
            yield index, tag, None, new_no, text
            new_no += 1
        elif tag == "-":
            yield index, tag, old_no, None, text
            old_no += 1
        elif tag == " ":
            yield index, tag, old_no, new_no, text
            old_no += 1
            new_no += 1


@dataclass(frozen=True)
class Located:
    hunk: int
    old_line: int | None
    new_line: int | None

    @property
    def kind(self) -> str:
        return "old" if self.new_line is None else "new"


def locate(diff: str, line: int, side: str) -> Located | None:
    """Where ``line`` of the new (RIGHT) or old (LEFT) side stands in an entry's hunks."""
    for hunk, tag, old_no, new_no, _ in numbered(diff):
        if side == "LEFT" and old_no == line and tag in "- ":
            return Located(hunk, old_no, new_no if tag == " " else None)
        if side != "LEFT" and new_no == line and tag in "+ ":
            return Located(hunk, old_no if tag == " " else None, new_no)
    return None


def hunk_to(diff: str, line: int, side: str) -> str:
    """The hunk holding ``line`` (of ``side``), its header and its lines down to that line."""
    found = locate(diff, line, side)
    if found is None:
        return ""
    hunk_index, out = -1, []
    for raw in diff.split("\n"):
        if _HUNK.match(raw):
            hunk_index += 1
            if hunk_index > found.hunk:
                break
            out = [raw]
            continue
        if hunk_index != found.hunk:
            continue
        out.append(raw)
        if _ends_at(out[0], [r for r in out[1:] if r and not r.startswith("\\")], line, side):
            break
    return "\n".join(out)


def _ends_at(header: str, body: list[str], line: int, side: str) -> bool:
    match = _HUNK.match(header)
    old_no, new_no = int(match.group(1)) - 1, int(match.group(3)) - 1
    for raw in body:
        if raw[0] in "- ":
            old_no += 1
        if raw[0] in "+ ":
            new_no += 1
    last = body[-1][0] if body else ""
    if side == "LEFT":
        return last in "- " and old_no == line
    return last in "+ " and new_no == line


def line_code(path: str, old_line: int | None, new_line: int | None) -> str:
    """GitLab's ``line_code`` of a line: sha1 of the path, then the old and new numbers."""
    return f"{hashlib.sha1(path.encode()).hexdigest()}_{old_line or 0}_{new_line or 0}"
