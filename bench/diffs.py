"""Unified diffs for replayed tasks: build git-style diffs from file texts, and undo them.

Tasks carry each round's changed files as full texts plus the base..head diff. To serve the
diff between two rounds (what GitHub's compare API returns) the bench needs the base text of
files a later round stopped touching; ``reverse_apply`` recovers it from the head text and
the round's diff.
"""

from __future__ import annotations

import difflib

import unidiff


def _lines(text: str) -> list[str]:
    """Lines for difflib; a last line without newline carries git's marker with it."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def file_diff(path: str, old: str | None, new: str | None, old_path: str | None = None) -> str:
    """The git-format diff of one file (``old``/``new`` None when absent); "" if unchanged."""
    old_path = old_path or path
    if old == new and old_path == path:
        return ""
    header = [f"diff --git a/{old_path} b/{path}\n"]
    if old is None:
        header.append("new file mode 100644\n")
    elif new is None:
        header.append("deleted file mode 100644\n")
    header.append("index 0000000..1111111\n" if old is None else
                  "index 1111111..0000000\n" if new is None else "index 1111111..2222222 100644\n")
    body = list(
        difflib.unified_diff(
            _lines(old or ""), _lines(new or ""),
            fromfile="/dev/null" if old is None else f"a/{old_path}",
            tofile="/dev/null" if new is None else f"b/{path}",
            n=3,
        )
    )
    if not body:
        return ""
    return "".join(header) + "".join(body)


def git_diff(old_files: dict[str, str | None], new_files: dict[str, str | None]) -> str:
    """A git-format diff turning ``old_files`` into ``new_files`` (path → text, None = absent)."""
    parts = []
    for path in sorted(set(old_files) | set(new_files)):
        parts.append(file_diff(path, old_files.get(path), new_files.get(path)))
    return "".join(parts)


def reverse_apply(new_text: str | None, patched: unidiff.PatchedFile) -> str | None:
    """The text a file had before ``patched`` turned it into ``new_text``.

    Returns None when the file did not exist before (an added file).
    """
    if patched.is_added_file:
        return None
    new_lines = (new_text or "").splitlines(keepends=True)
    out: list[str] = []
    pos = 0  # index into new_lines
    old_no_newline = False
    for hunk in patched:
        start = hunk.target_start - 1 if hunk.target_length else hunk.target_start
        out.extend(new_lines[pos:start])
        pos = start
        previous = None
        for line in hunk:
            if line.line_type in (" ", "-"):
                out.append(line.value)
            if line.line_type in (" ", "+"):
                pos += 1
            if line.line_type == "\\" and previous in (" ", "-"):
                old_no_newline = True
            if line.line_type != "\\":
                previous = line.line_type
    out.extend(new_lines[pos:])
    text = "".join(out)
    if old_no_newline and text.endswith("\n"):
        text = text[:-1]
    return text
