"""One changed file as the rules see it (``ChangedFile``), read from the PR's diff and head text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import unidiff

from tracker.anchors import strip_prefix
from tracker.paths import is_test_path

from .languages import language_of
from .lexer import lex

log = logging.getLogger(__name__)

@dataclass
class ChangedFile:
    """A file of the diff at head: its added lines, and every line we know around them.

    ``lines`` is the whole head text when ``files`` gave one that agrees with the diff, else
    only the lines the hunks show (context and added). Line numbers are 1-based, right side.
    """

    path: str
    added: dict[int, str]
    lines: dict[int, str]
    text: str | None  # head text, when it agrees with the diff
    language: str = field(init=False)
    is_test: bool = field(init=False)

    def __post_init__(self):
        self.language = language_of(self.path)
        self.is_test = is_test_path(self.path)

    @cached_property
    def _views(self) -> tuple[dict[int, str], dict[int, str], set[int]]:
        numbers = sorted(self.lines)
        code: dict[int, str] = {}
        comments: dict[int, str] = {}
        inside: set[int] = set()
        # Lex each run of consecutive known lines on its own: state cannot cross a gap.
        start = 0
        for k in range(1, len(numbers) + 1):
            if k == len(numbers) or numbers[k] != numbers[k - 1] + 1:
                run = numbers[start:k]
                c, m, f = lex([self.lines[n] for n in run], self.language)
                code.update(zip(run, c, strict=True))
                comments.update(zip(run, m, strict=True))
                inside.update(n for n, flag in zip(run, f, strict=True) if flag)
                start = k
        return code, comments, inside

    @property
    def code(self) -> dict[int, str]:
        """Per line: the code with string contents blanked and comments removed."""
        return self._views[0]

    @property
    def comments(self) -> dict[int, str]:
        """Per line: the comment text (with its marker), empty when none."""
        return self._views[1]

    @property
    def continued(self) -> set[int]:
        """Lines that start inside a block comment or a multi-line string."""
        return self._views[2]

    def view(self, name: str) -> dict[int, str]:
        """One of the per-line views by name: ``code``, ``comment`` or ``raw``."""
        return {"code": self.code, "comment": self.comments, "raw": self.lines}[name]

    def code_line(self, n: int) -> bool:
        """Whether line ``n`` holds code, not just blanks, quotes or a comment."""
        return bool(self.code.get(n, "").strip().strip("\"'`@$;{}()").strip())

    def next_lines(self, n: int, limit: int = 40) -> Iterator[int]:
        """Known line numbers after ``n`` that are not blank, in order, stopping at a gap."""
        k = n + 1
        while k in self.lines and k <= n + limit:
            if self.lines[k].strip():
                yield k
            k += 1

    @cached_property
    def head(self) -> str:
        """The head text, or the lines the diff shows when we have no text to trust."""
        return self.text if self.text is not None else "\n".join(self.lines.values())


def _changed_files(diff: str, files: dict[str, str | None], *,
                   patch: unidiff.PatchSet | None = None) -> tuple[list[ChangedFile], list[str]]:
    """The diff's files at head (added lines and known lines), and every path it touches.

    ``patch`` is ``diff`` already parsed, when the caller has it.
    """
    if patch is None:
        try:
            patch = unidiff.PatchSet(diff or "")
        except Exception as exc:  # noqa: BLE001 - arbitrary input must not crash a review
            log.warning("offline review: cannot parse the diff (%s)", exc)
            return [], []
    out: list[ChangedFile] = []
    touched: list[str] = []
    for patched in patch:
        path = strip_prefix(patched.target_file)
        old = strip_prefix(patched.source_file)
        touched.extend(p for p in (path, old) if p)
        if path is None or patched.is_removed_file or patched.is_binary_file:
            continue
        added: dict[int, str] = {}
        shown: dict[int, str] = {}
        for hunk in patched:
            for ln in hunk:
                if ln.target_line_no is None or ln.line_type not in ("+", " "):
                    continue
                text = ln.value.rstrip("\n").rstrip("\r")
                shown[ln.target_line_no] = text
                if ln.line_type == "+":
                    added[ln.target_line_no] = text
        if not added:
            continue
        head = files.get(path) if isinstance(files, dict) else None
        text = head if isinstance(head, str) and "\x00" not in head[:8192] else None
        if isinstance(head, str) and text is None:
            continue  # binary content
        if text is not None:
            full = [s.rstrip("\r") for s in text.split("\n")]
            if all(n <= len(full) and full[n - 1] == s for n, s in added.items()):
                shown = {i: s for i, s in enumerate(full, 1)}
            else:
                text = None  # the text does not belong to this diff: trust the diff alone
        out.append(ChangedFile(path, added, shown, text))
    return out, touched
