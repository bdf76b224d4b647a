"""The lines a round's diff adds, indexed once per file and shared by every defect and rule.

The rules ask the same questions of a round's added lines for every defect: does this file
add a line inside these lines, which tokens do its added lines use, does a name occur in an
added line of this region but outside the anchor. Answered by scanning the added lines, each
question costs the size of the diff, and a round costs defects × changed lines. Here each
file's added lines are listed, numbered, joined, tokenised and inverted (token -> the added
lines using it) once per ``DiffMap`` (one diff of one round), so each answer is a dictionary
look-up or a bisect.
"""

from __future__ import annotations

import bisect
import re
import threading
import weakref
from collections import Counter
from collections.abc import Container

from .anchors import DiffMap, file_lines, normalise, normalised_lines
from .diffparse import hunk_lines, plain_rows
from .paths import is_test_path
from .scope import token_set, tokens

__all__ = ["FileChanges", "changed_tokens", "changes", "files_holding", "swapped_tokens",
           "touched_paths", "touches_tests"]


class FileChanges:
    """One file's added lines in one diff (by its new path), with their indexes."""

    def __init__(self, added: list[tuple[int, str]]):
        self.lines = added  # (new line number, text), in diff order
        self._numbers = sorted(n for n, _ in added)
        self._by_line: dict[int, str] | None = None
        self._text: str | None = None
        self._tokens: Counter | None = None
        self._where: dict[str, list[int]] | None = None
        self._matches: dict[re.Pattern, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.lines)

    @property
    def by_line(self) -> dict[int, str]:
        """New line number -> text of each added line (read-only)."""
        if self._by_line is None:
            self._by_line = dict(self.lines)
        return self._by_line

    @property
    def text(self) -> str:
        """The added lines' text, joined by newlines."""
        if self._text is None:
            self._text = "\n".join(text for _, text in self.lines)
        return self._text

    @property
    def tokens(self) -> Counter:
        """``scope.tokens`` of the added text (read-only)."""
        if self._tokens is None:
            self._tokens = tokens(self.text)
        return self._tokens

    def adds_within(self, lo: int, hi: int) -> bool:
        """Whether an added line's new number is in lo..hi."""
        k = bisect.bisect_left(self._numbers, lo)
        return k < len(self._numbers) and self._numbers[k] <= hi

    def any_match(self, pattern: re.Pattern) -> bool:
        """Whether ``pattern.match`` matches an added line."""
        if pattern not in self._matches:
            self._matches[pattern] = any(pattern.match(text) for _, text in self.lines)
        return self._matches[pattern]

    def tokens_between(self, region: tuple[int, int] | None, outside: range) -> _Present:
        """The tokens of the added lines in ``region`` (inclusive; None for the whole file)
        that are not in ``outside``, as a mapping ``token -> truthy``, like ``tokens`` of
        those lines' text: ``found[t]`` costs a bisect, whatever the number of lines."""
        if self._where is None:
            where: dict[str, list[int]] = {}
            for n, text in self.lines:
                for token in token_set(text):  # no token spans a line
                    numbers = where.get(token)
                    if numbers is None:
                        where[token] = [n]
                    else:
                        numbers.append(n)
            for numbers in where.values():
                numbers.sort()
            self._where = where
        return _Present(self._where, region, outside)


class _Present(Container):
    """``found[token]``: whether the token is on an added line in a region, outside a range."""

    def __init__(self, where: dict[str, list[int]], region: tuple[int, int] | None,
                 outside: range):
        self.where = where
        self.lo, self.hi = region if region is not None else (float("-inf"), float("inf"))
        self.outside = (outside.start, outside.stop - 1) if len(outside) else None

    def _any(self, numbers: list[int], lo, hi) -> bool:
        if lo > hi:
            return False
        k = bisect.bisect_left(numbers, lo)
        return k < len(numbers) and numbers[k] <= hi

    def __getitem__(self, token: str) -> bool:
        numbers = self.where.get(token)
        if not numbers:
            return False
        if self.outside is None:
            return self._any(numbers, self.lo, self.hi)
        start, end = self.outside
        return self._any(numbers, self.lo, min(self.hi, start - 1)) or \
            self._any(numbers, max(self.lo, end + 1), self.hi)

    def __contains__(self, token) -> bool:
        return self[token]


class _DiffIndex:
    """Everything indexed about one diff (it must not refer to the diff: it is the value of a
    weak-keyed map, and would keep its key alive)."""

    def __init__(self):
        self.files: dict[str, FileChanges] = {}
        self.changed: Counter | None = None
        self.touched: frozenset[str] | None = None
        self.tests: bool | None = None
        self.swapped: dict[str, tuple[str, tuple[Counter, Counter] | None]] = {}
        # for one ``files`` map: normalised line -> the paths (sorted) adding lines that hold it
        self.holding: tuple[dict, dict[str, list[str]]] | None = None


_indexes: weakref.WeakKeyDictionary[DiffMap, _DiffIndex] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _index(diff: DiffMap) -> _DiffIndex:
    with _lock:  # rounds may be decided in threads; each diff gets one index
        index = _indexes.get(diff)
        if index is None:
            index = _indexes[diff] = _DiffIndex()
        return index


def changes(diff: DiffMap, path: str) -> FileChanges:
    """The lines ``diff`` adds to ``path`` (its new name), indexed once per diff."""
    index = _index(diff)
    found = index.files.get(path)
    if found is None:
        found = index.files[path] = FileChanges(diff.added_lines(path))
    return found


def touched_paths(diff: DiffMap) -> frozenset[str]:
    """``diff.touched_paths()``, worked out once per diff."""
    index = _index(diff)
    if index.touched is None:
        index.touched = frozenset(diff.touched_paths())
    return index.touched


def touches_tests(diff: DiffMap) -> bool:
    """Whether ``diff`` touches a test file (``paths.is_test_path``), worked out once per diff."""
    index = _index(diff)
    if index.tests is None:
        index.tests = any(is_test_path(p) for p in touched_paths(diff))
    return index.tests


def swapped_tokens(diff: DiffMap, path: str, new_path: str | None, old_text: str | None,
                   new_text: str | None) -> tuple[Counter, Counter] | None:
    """``scope.tokens`` of the lines ``diff`` adds to the file ``path`` (``new_path`` now) and
    of the lines it removes, when those lines are all that differs between ``old_text`` and
    ``new_text``: ``old_text`` is what ``FileMap.old_text`` gave back from ``new_text``, and
    every hunk's new side stands in ``new_text`` where the diff says. A token's count in the
    new text is then its count in the old one plus the added less the removed. None when
    that does not hold (the caller reads the whole text)."""
    fm = diff.files.get(path)
    if fm is None or fm.removed_file or not fm.new_path or new_path != fm.new_path or \
            path in diff.renames or diff.new_files.get(new_path) is not fm or \
            old_text is None or not new_text or not new_text.endswith("\n") or \
            fm.old_text(new_text) is not old_text:
        return None
    index = _index(diff)
    known = index.swapped.get(path)
    if known is None or known[0] is not new_text:
        removed = _removed_if_in_place(fm.patched, file_lines(new_text))
        swapped = None if removed is None else (changes(diff, new_path).tokens,
                                                tokens("\n".join(removed)))
        known = index.swapped[path] = (new_text, swapped)
    return known[1]


def _removed_if_in_place(patched, lines: tuple[str, ...]) -> list[str] | None:
    """The removed lines of every hunk, when each hunk has its context and added lines at its
    place in ``lines``, the hunks in order, each of its lines ending in a newline and no
    "\\" marker among them; else None."""
    removed: list[str] = []
    end = 0
    for hunk in patched:
        rows = plain_rows(hunk)
        if rows is not None and len(hunk):
            return None  # lines after the body (markers, blank lines)
        if rows is None:
            read = hunk_lines(hunk)
            if any(ln.line_type not in ("+", "-", " ") or not ln.value.endswith("\n")
                   for ln in read):
                return None
            rows = [ln.line_type + ln.value[:-1] for ln in read]
        start = hunk.target_start - 1 if hunk.target_length else hunk.target_start
        new = [row[1:] for row in rows if row[0] != "-"]
        if start < end or len(new) != hunk.target_length or \
                list(lines[start:start + len(new)]) != new:
            return None
        removed += [row[1:] for row in rows if row[0] == "-"]
        end = start + len(new)
    return removed


def changed_tokens(diff: DiffMap) -> Counter:
    """``scope.tokens`` of every line ``diff`` adds or removes, in any file (read-only)."""
    index = _index(diff)
    if index.changed is None:
        index.changed = tokens("\n".join(
            text for p in diff.touched_paths()
            for _, text in diff.added_lines(p) + (diff.files[p].removed_lines()
                                                  if p in diff.files else [])
        ))
    return index.changed


def files_holding(diff: DiffMap, files: dict[str, str | None], code: list[str] | str
                  ) -> list[tuple[str, str | None]]:
    """``sorted(files.items())`` less the files where ``anchors.find_code(text, code)`` cannot
    find ``code``: those ``diff`` adds no line to, and those whose text (whole, at the new
    head) has no line like ``code``'s first. One look-up per call, whatever the number of
    files; ``files`` is read once per diff (a round's texts do not change while it is
    decided)."""
    target = normalise(code)
    if not target:
        return []
    index = _index(diff)
    holding = index.holding
    if holding is None or holding[0] is not files:
        by_line: dict[str, list[str]] = {}
        for path, text in sorted(files.items()):
            if text is None or not diff.added_lines(path):
                continue
            for line in normalised_lines(text)[1]:
                by_line.setdefault(line, []).append(path)
        holding = index.holding = (files, by_line)
    return [(path, files[path]) for path in holding[1].get(target[0], ())]
