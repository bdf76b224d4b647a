"""The pull request at a glance, for the top of the summary.

A reviewer opening a pull request first wants to know what it touches. The first round's
summary therefore opens with the changed files grouped by directory, with their added and
removed lines and the open defects in each; later rounds say what that push changed. It is
computed from the diffs the round already read (``diffstat``), with no model and no extra call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from tracker.gitpath import diff_path, header_paths

__all__ = ["FileStat", "diffstat", "glance", "this_push"]

MAX_FILES = 40  # rows in the table; the rest are counted


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int
    removed: int

    def to_json(self) -> list:
        return [self.path, self.added, self.removed]


def diffstat(diff: str) -> list[FileStat]:
    """Added and removed lines per file of a unified git diff, in the diff's order."""
    out: list[FileStat] = []
    path, added, removed, in_hunk = None, 0, 0, False

    def flush() -> None:
        if path is not None:
            out.append(FileStat(path, added, removed))

    for line in diff.splitlines():
        if line.startswith("diff --git "):
            flush()
            names = header_paths(line)
            path = names[1] if names else line.split(" b/", 1)[-1]
            added, removed, in_hunk = 0, 0, False
        elif line.startswith("+++ ") and not in_hunk:
            target = diff_path(line[4:].rstrip("\n").split("\t")[0].strip())
            if target is not None and path is not None:
                path = target
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    flush()
    return out


def code_span(text: str, in_table: bool = False) -> str:
    """``text`` (a file name from the pull request: untrusted) as one Markdown code span,
    whatever backticks, pipes or line breaks it holds: the fence is longer than any run of
    backticks inside, and a table cell's pipes are escaped."""
    text = re.sub(r"[\r\n]+", " ", text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    out = f"{fence}{pad}{text}{pad}{fence}"
    return out.replace("|", "\\|") if in_table else out


def _defects_by_path(rows) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in rows:
        if r.open and r.path:
            out.setdefault(r.path, []).append(r.key)
    return out


def glance(stats: list[FileStat], rows) -> list[str]:
    """Markdown: the changed files grouped by directory, +/- lines and open defects in each."""
    if not stats:
        return []
    total_add, total_del = sum(s.added for s in stats), sum(s.removed for s in stats)
    defects = _defects_by_path(rows)
    title = (f"This pull request at a glance: {len(stats)} file{'s' * (len(stats) != 1)}, "
             f"+{total_add} −{total_del}")
    out = ["<details open>", f"<summary>{title}</summary>", "",
           "| directory | file | + | − | open defects |", "|---|---|--:|--:|---|"]
    shown = sorted(stats, key=lambda s: (str(PurePosixPath(s.path).parent), s.path))
    previous = None
    for s in shown[:MAX_FILES]:
        folder = str(PurePosixPath(s.path).parent)
        folder = "(top)" if folder == "." else folder + "/"
        cell = code_span(folder, in_table=True) if folder != previous else ""
        previous = folder
        keys = ", ".join(defects.get(s.path, [])) or "—"
        out.append(f"| {cell} | {code_span(PurePosixPath(s.path).name, in_table=True)} | "
                   f"+{s.added} | −{s.removed} | "
                   f"{keys} |")
    if len(shown) > MAX_FILES:
        rest = shown[MAX_FILES:]
        out.append(f"| | …and {len(rest)} more | +{sum(s.added for s in rest)} | "
                   f"−{sum(s.removed for s in rest)} | |")
    return out + ["", "</details>", ""]


def this_push(stats: list[FileStat]) -> list[str]:
    """Markdown: one line saying what this push changed."""
    if not stats:
        return ["**This push** changed no file under review.", ""]
    parts = [f"{code_span(s.path)} (+{s.added} −{s.removed})" for s in stats[:8]]
    more = f" and {len(stats) - 8} more" if len(stats) > 8 else ""
    line = (f"**This push** changed {len(stats)} file{'s' * (len(stats) != 1)}: "
            f"{', '.join(parts)}{more}.")
    return [line, ""]
