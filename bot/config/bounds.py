"""How much of a pull request one round reviews: at most so many files, changed lines and bytes.

A contributor can open a PR of thousands of files or tens of megabytes; reviewing all of it
would hold a worker (and, in pure-Python parsing, the interpreter) for minutes and take
gigabytes. ``bound_diff`` keeps the diff's file sections in order while they fit the
``ReviewLimits`` (``ROUNDWISE_MAX_REVIEW_FILES``, ``_LINES``, ``_BYTES``) and says what it left
out and why, for the round's summary, and which files (``bound_listed``). It scans the text
once. ``binary_paths`` names the diff's binary files (no lines to review).
"""

from __future__ import annotations

from dataclasses import dataclass

from tracker.gitpath import header_paths

__all__ = ["DEFAULT", "ReviewLimits", "binary_paths", "bound_diff", "bound_listed",
           "too_large_note"]

SECTION = "diff --git "


@dataclass(frozen=True)
class ReviewLimits:
    max_files: int = 3000  # as many as GitHub lists for a pull request
    max_lines: int = 20_000
    max_bytes: int = 2 * 1024 * 1024


DEFAULT = ReviewLimits()


def _sections(diff: str) -> list[str]:
    """The diff cut before each ``diff --git`` line (a preamble, if any, is its own part)."""
    cuts = [0] if diff.startswith(SECTION) else []
    at = diff.find("\n" + SECTION)
    while at != -1:
        cuts.append(at + 1)
        at = diff.find("\n" + SECTION, at + 1)
    if not cuts or cuts[0] != 0:
        cuts.insert(0, 0)
    return [diff[a:b] for a, b in zip(cuts, [*cuts[1:], len(diff)]) if b > a]


def _path(section: str) -> str | None:
    """The new path a section's ``diff --git`` line names (None: a preamble, or unreadable)."""
    if not section.startswith(SECTION):
        return None
    found = header_paths(section.split("\n", 1)[0])
    return found[1] if found else None


def binary_paths(diff: str) -> list[str]:
    """The files of ``diff`` git shows as binary (``Binary files ... differ`` or a ``GIT binary
    patch``, no hunk): changed, with no lines to review."""
    if "Binary files " not in diff and "GIT binary patch" not in diff:
        return []
    out = []
    for part in _sections(diff):
        head = part.split("\n@@", 1)[0]
        if "\nBinary files " in head or "\nGIT binary patch" in head:
            path = _path(part)
            if path:
                out.append(path)
    return out


def bound_diff(diff: str, limits: ReviewLimits) -> tuple[str, str | None]:
    """The part of ``diff`` a round reviews, and a note on what it left out (None: nothing)."""
    kept, note, _ = bound_listed(diff, limits)
    return kept, note


def bound_listed(diff: str, limits: ReviewLimits) -> tuple[str, str | None, list[str]]:
    """``bound_diff`` and the paths of the files it left out."""
    if len(diff) <= limits.max_bytes and diff.count("\n") <= limits.max_lines and \
            diff.count("\n" + SECTION) + 1 <= limits.max_files:
        return diff, None, []
    kept: list[str] = []
    left: list[str] = []
    files = lines = size = 0
    skipped = skipped_lines = 0
    why: set[str] = set()
    for part in _sections(diff):
        n = part.count("\n")
        over = ("files" if files + 1 > limits.max_files else
                "lines" if lines + n > limits.max_lines else
                "bytes" if size + len(part) > limits.max_bytes else None)
        if over:
            skipped += 1
            skipped_lines += n
            why.add(over)
            left.append(_path(part) or "?")
            continue
        kept.append(part)
        files, lines, size = files + 1, lines + n, size + len(part)
    if not skipped:
        return diff, None, []
    reasons = {"files": f"{limits.max_files} files", "lines": f"{limits.max_lines} diff lines",
               "bytes": f"{limits.max_bytes // 1024} KB of diff"}
    note = (f"{skipped} changed file{'s' if skipped != 1 else ''} ({skipped_lines} diff lines) "
            f"{'were' if skipped != 1 else 'was'} not reviewed: one round reviews at most "
            + " and ".join(reasons[k] for k in ("files", "lines", "bytes") if k in why)
            + f" (this one reviewed {files} file{'s' if files != 1 else ''}, in diff order); "
            "split the pull request to have the rest reviewed.")
    return "".join(kept), note, left


def too_large_note(reason: str) -> str:
    return (f"This pull request is too large to review ({reason}): nothing was reviewed this "
            "round; split it into smaller pull requests.")
