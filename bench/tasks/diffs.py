"""Unified diffs for replayed tasks and the fake GitHub: build git-format diffs, and undo them.

``git_diff(old_files, new_files)`` renders what ``git diff`` prints between two path -> text
maps (3 lines of context, git's hunk headings, ``\\ No newline at end of file``); the fake
GitHub serves it and validates review comments against ``FileDiff``. Tasks carry each round's
changed files as full texts plus the base..head diff; to serve the diff between two rounds the
bench needs the base text of files a later round stopped touching, which ``reverse_apply``
recovers from the head text and the round's diff.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from tracker.anchors import reverse_apply  # noqa: F401 - re-exported for the task loader
from tracker.gitpath import quote

CONTEXT_LINES = 3


def _git_lines(text: str | None) -> list[str]:
    """Split like git: only on "\\n", keeping terminators; the last line may lack one."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def blob_sha(text: str) -> str:
    """The git blob id of a file's text."""
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _hunk_range(start: int, count: int) -> str:
    return str(start) if count == 1 else f"{start},{count}"


@dataclass
class Hunk:
    """One ``@@`` hunk: line numbers as git prints them and ``(tag, text)`` lines."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[tuple[str, str]]
    section: str = ""

    @property
    def header(self) -> str:
        old = _hunk_range(self.old_start, self.old_count)
        new = _hunk_range(self.new_start, self.new_count)
        return f"@@ -{old} +{new} @@" + (f" {self.section}" if self.section else "")

    def numbered(self) -> Iterator[tuple[str, int | None, int | None, str]]:
        """Each line as (tag, old line number, new line number, text)."""
        old_no, new_no = self.old_start, self.new_start
        for tag, text in self.lines:
            if tag == " ":
                yield tag, old_no, new_no, text
                old_no, new_no = old_no + 1, new_no + 1
            elif tag == "-":
                yield tag, old_no, None, text
                old_no += 1
            else:
                yield tag, None, new_no, text
                new_no += 1

    def render(self, upto: int | None = None) -> str:
        """The hunk text; with ``upto`` only its first ``upto`` lines."""
        out = [self.header + "\n"]
        for tag, text in self.lines[:upto]:
            out.append(tag + text)
            if not text.endswith("\n"):
                out.append("\n\\ No newline at end of file\n")
        return "".join(out)


def _section(old_lines: list[str], before: int) -> str:
    """git's default hunk heading: the last line above the hunk starting with a letter, _ or $."""
    for line in reversed(old_lines[:before]):
        if line[:1].isalpha() or line[:1] in ("_", "$"):
            return line.rstrip()[:80]
    return ""


def _hunks(old: str | None, new: str | None) -> list[Hunk]:
    a, b = _git_lines(old), _git_lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    hunks = []
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        lines: list[tuple[str, str]] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [(" ", line) for line in a[i1:i2]]
                continue
            lines += [("-", line) for line in a[i1:i2]]
            lines += [("+", line) for line in b[j1:j2]]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        old_count, new_count = i2 - i1, j2 - j1
        hunks.append(Hunk(i1 + 1 if old_count else i1, old_count,
                          j1 + 1 if new_count else j1, new_count, lines, _section(a, i1)))
    return hunks


@dataclass
class FileDiff:
    """The diff of one path between two trees, with what review validation needs."""

    path: str
    old: str | None
    new: str | None
    hunks: list[Hunk]

    @property
    def status(self) -> str:
        if self.old is None:
            return "added"
        return "removed" if self.new is None else "modified"

    @property
    def additions(self) -> int:
        return sum(tag == "+" for hunk in self.hunks for tag, _ in hunk.lines)

    @property
    def deletions(self) -> int:
        return sum(tag == "-" for hunk in self.hunks for tag, _ in hunk.lines)

    @property
    def blob(self) -> str:
        text = self.new if self.new is not None else self.old
        return blob_sha(text or "")

    @property
    def patch(self) -> str:
        """Hunks without the file header, as GitHub's DiffEntry ``patch`` (no final newline)."""
        return "".join(hunk.render() for hunk in self.hunks).removesuffix("\n")

    def render(self) -> str:
        """This file's part of a git diff."""
        old_blob = blob_sha(self.old)[:7] if self.old is not None else "0000000"
        new_blob = blob_sha(self.new)[:7] if self.new is not None else "0000000"
        a, b = quote(f"a/{self.path}"), quote(f"b/{self.path}")  # as git writes names
        out = [f"diff --git {a} {b}\n"]
        if self.old is None:
            out += ["new file mode 100644\n", f"index {old_blob}..{new_blob}\n"]
        elif self.new is None:
            out += ["deleted file mode 100644\n", f"index {old_blob}..{new_blob}\n"]
        else:
            out.append(f"index {old_blob}..{new_blob} 100644\n")
        if self.hunks:
            out.append("--- /dev/null\n" if self.old is None else f"--- {a}\n")
            out.append("+++ /dev/null\n" if self.new is None else f"+++ {b}\n")
            out += [hunk.render() for hunk in self.hunks]
        return "".join(out)

    def side_lines(self, side: str) -> dict[int, int]:
        """Line numbers a comment may use on ``side`` (LEFT old, RIGHT new) -> hunk index."""
        found = {}
        for index, hunk in enumerate(self.hunks):
            for tag, old_no, new_no, _ in hunk.numbered():
                if side == "RIGHT" and tag in " +":
                    found[new_no] = index
                elif side == "LEFT" and tag in " -":
                    found[old_no] = index
        return found

    def _positions(self) -> Iterator[tuple[int, int, str, int | None, int | None]]:
        """(position, hunk index, tag, old no, new no); later ``@@`` lines take a position."""
        position = 0
        for index, hunk in enumerate(self.hunks):
            if index:
                position += 1
            for tag, old_no, new_no, _ in hunk.numbered():
                position += 1
                yield position, index, tag, old_no, new_no

    def position_of(self, line: int, side: str) -> int | None:
        """The legacy diff ``position`` of a line on a side, if it is in the diff."""
        for position, _, tag, old_no, new_no in self._positions():
            if (side == "RIGHT" and new_no == line and tag in " +") or (
                side == "LEFT" and old_no == line and tag == "-"
            ):
                return position
        return None

    def at_position(self, position: int) -> tuple[int, str] | None:
        """(line, side) of a legacy ``position``."""
        for pos, _, tag, old_no, new_no in self._positions():
            if pos == position:
                return (old_no, "LEFT") if tag == "-" else (new_no, "RIGHT")
        return None

    def diff_hunk(self, line: int, side: str) -> str:
        """GitHub's ``diff_hunk``: the hunk header and lines down to the commented line."""
        for hunk in self.hunks:
            for count, (tag, old_no, new_no, _) in enumerate(hunk.numbered(), 1):
                if (side == "RIGHT" and new_no == line and tag in " +") or (
                    side == "LEFT" and old_no == line and tag in " -"
                ):
                    return hunk.render(count).removesuffix("\n")
        return ""


def apply_files(tree: dict[str, str], files: dict[str, str | None]) -> dict[str, str]:
    """A new tree: ``tree`` with ``files`` written over it (None: the path deleted)."""
    out = dict(tree)
    for path, text in files.items():
        if text is None:
            out.pop(path, None)
        else:
            out[path] = text
    return out


def diff_trees(old_files: dict[str, str | None], new_files: dict[str, str | None]
               ) -> list[FileDiff]:
    """Per-file diffs (sorted by path) between two path -> text maps; None means absent."""
    diffs = []
    for path in sorted(set(old_files) | set(new_files)):
        old, new = old_files.get(path), new_files.get(path)
        if old != new:
            diffs.append(FileDiff(path, old, new, _hunks(old, new)))
    return diffs


def git_diff(old_files: dict[str, str | None], new_files: dict[str, str | None]) -> str:
    """The git-format unified diff (3 lines of context) from ``old_files`` to ``new_files``.

    Both map path -> full text, or None for a file that does not exist on that side.
    """
    return "".join(file_diff.render() for file_diff in diff_trees(old_files, new_files))


def map_line(old: str | None, new: str | None, line: int) -> int | None:
    """Where 1-based ``line`` of ``old`` stands in ``new`` if it survived unchanged."""
    matcher = difflib.SequenceMatcher(None, _git_lines(old), _git_lines(new), autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal" and i1 < line <= i2:
            return j1 + line - i1
    return None


def file_diff(path: str, old: str | None, new: str | None) -> str:
    """The git-format diff of one file (``old``/``new`` None when absent); "" if unchanged."""
    return git_diff({path: old}, {path: new})
