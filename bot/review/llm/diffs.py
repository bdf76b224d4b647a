"""Unified diffs annotated with new-side line numbers, as the model sees them (``FileDiff``).
"""

from __future__ import annotations

from dataclasses import dataclass

import unidiff

from tracker.anchors import DiffError
from tracker.gitpath import file_path
from tracker.paths import is_docs_path, is_generated_path, is_test_path

from ..engine import RoundContext


@dataclass
class Hunk:
    """One hunk, annotated: its header and (new-side position, text) rows."""

    header: str
    rows: list[tuple[int, str]]  # removed lines sit at the position of the line after them
    added: set[int]  # new line numbers of the lines it adds

    @property
    def lines(self) -> list[str]:
        return [self.header] + [text for _, text in self.rows]


@dataclass
class FileDiff:
    """One file of a unified diff, annotated with line numbers for the model."""

    path: str
    hunks: list[Hunk]

    @property
    def added(self) -> int:
        return sum(len(h.added) for h in self.hunks)

    def text(self) -> str:
        return "\n".join(line for hunk in self.hunks for line in hunk.lines)

    def only(self, keep: list[int]) -> FileDiff:
        """The same file with only the hunks numbered in ``keep``."""
        return FileDiff(self.path, [self.hunks[i] for i in keep])

    def around(self, start: int, end: int, context: int, limit: int) -> str:
        """The diff lines within ``context`` lines of start..end (new side), at most ``limit``."""
        out: list[str] = []
        for hunk in self.hunks:
            rows = [text for pos, text in hunk.rows if start - context <= pos <= end + context]
            if rows:
                out += [hunk.header, *rows]
        if len(out) > limit:
            out = [*out[:limit], f"[... {len(out) - limit} more diff lines cut]"]
        return "\n".join(out)


def _annotate_hunk(hunk: unidiff.Hunk) -> Hunk:
    header = (f"@@ -{hunk.source_start},{hunk.source_length} "
              f"+{hunk.target_start},{hunk.target_length} @@ {hunk.section_header}").rstrip()
    rows: list[tuple[int, str]] = []
    position = hunk.target_start
    for ln in hunk:
        value = ln.value.rstrip("\n")
        if ln.line_type == "+":
            position = ln.target_line_no
            rows.append((position, f"{position:>5} | + {value}"))
        elif ln.line_type == " ":
            position = ln.target_line_no
            rows.append((position, f"{position:>5} |   {value}"))
        elif ln.line_type == "-":
            rows.append((position + (1 if rows else 0), f"L{ln.source_line_no:>4} | - {value}"))
    added = {ln.target_line_no for ln in hunk if ln.line_type == "+"}
    return Hunk(header, rows, added)


def annotate_diff(diff_text: str, patch: unidiff.PatchSet | None = None) -> list[FileDiff]:
    """The files of a diff with hunks whose lines carry their numbers (added, context, removed).

    Deleted and binary files are left out: no comment can be posted on them. ``patch`` is the
    diff already parsed, when the caller has it.
    """
    if patch is None:
        try:
            patch = unidiff.PatchSet(diff_text or "")
        except unidiff.UnidiffParseError:
            return []
    return [FileDiff(file_path(patched), [_annotate_hunk(h) for h in patched])
            for patched in patch
            if not (patched.is_binary_file or patched.is_removed_file or not len(patched))]


def annotated(ctx: RoundContext, diff_text: str) -> list[FileDiff]:
    """``annotate_diff`` of one of the round's diffs, from the round's shared parse, once."""
    def build(text: str) -> list[FileDiff]:
        try:
            return annotate_diff(text, ctx.patches.patch(text))
        except unidiff.UnidiffParseError:
            return []

    return ctx.patches.derived("llm-annotated", diff_text, build)


def file_priority(fd: FileDiff) -> tuple[int, int, str]:
    """Sort key: source before tests, docs and generated files; more added lines first."""
    if is_generated_path(fd.path):
        kind = 3
    elif is_docs_path(fd.path):
        kind = 2
    elif is_test_path(fd.path):
        kind = 1
    else:
        kind = 0
    return kind, -fd.added, fd.path


def location(path: str, start: int, end: int) -> str:
    """``path:start`` or ``path:start-end``, as the prompts name a place."""
    return f"{path}:{start}" if start == end else f"{path}:{start}-{end}"


def authored_changes(ctx: RoundContext) -> list[FileDiff]:
    """The round diff's hunks that belong to the pull request.

    When the branch merged its target between rounds, the diff between the two heads also
    holds the target's changes; a hunk is kept only when it adds a line the PR diff (base..head)
    also adds, or only removes lines in a file the PR touches.
    """
    if not ctx.round_diff.strip():  # a fresh review of the same head: the whole PR
        return annotated(ctx, ctx.pr_diff)
    files = annotated(ctx, ctx.round_diff)
    if ctx.round_diff == ctx.pr_diff:
        return files
    try:
        pr = ctx.patches.map(ctx.pr_diff)
    except DiffError:
        return files
    out = []
    for fd in files:
        if fd.path not in pr.new_files:
            continue
        ours = {line for line, _ in pr.added_lines(fd.path)}
        keep = [i for i, hunk in enumerate(fd.hunks) if hunk.added & ours or not hunk.added]
        if keep:
            out.append(fd if len(keep) == len(fd.hunks) else fd.only(keep))
    return out
