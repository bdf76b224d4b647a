"""Anchors across rounds: where a tracked defect's lines went, and whether they were touched.

A defect is anchored to a line range in one file at one head. When the author pushes again,
``DiffMap(diff)`` (the unified diff from the previously reviewed head to the new head) maps each
anchor to where its lines now stand and classifies what happened to them:

- ``untouched``: every anchored line survives unchanged and nothing was inserted between them;
  the mapped range holds exactly the same text.
- ``modified``: some anchored line was removed or replaced, or lines were inserted inside it.
- ``deleted``: every anchored line was removed and nothing replaced them, or the file was deleted.

The diff is parsed as unidiff parses it (``tracker.diffparse``: each hunk's lines read when first
asked for), so renames, deleted and binary files and "\\ No newline at end of file" markers are
handled. A fingerprint of the anchored code (its
whitespace-normalised text) lets the tracker notice the same code coming back later.
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from itertools import accumulate, compress

import unidiff

from .diffparse import hunk_lines, hunk_rows, parse, plain_rows
from .gitpath import diff_path
from .lines import place, split_lines
from .roundcache import per_text

NEARBY_LINES = 1  # an edit on the line just before or after an anchor counts as next to it
RENAME_SIMILARITY = 0.5  # a deleted and an added file this alike are one file renamed (git -M)
MAX_RENAME_PAIRS = 400  # deleted x added pairs compared at most, to bound the work


class DiffError(ValueError):
    """The text given as a unified diff could not be parsed."""


class Status(str, Enum):
    UNTOUCHED = "untouched"
    MODIFIED = "modified"
    DELETED = "deleted"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Anchor:
    """A line range (1-based, inclusive) in one file, on the new (RIGHT) side unless said."""

    path: str
    start: int
    end: int
    side: str = "RIGHT"

    def __post_init__(self):
        if self.start < 1 or self.end < self.start:
            raise ValueError(f"bad anchor range {self.start}-{self.end} in {self.path}")


def _anchor(path: str, start: int, end: int, side: str) -> Anchor:
    """``Anchor(path, start, end, side)`` for a range worked out while mapping: the same
    check, without a frozen dataclass's ``__init__`` (a quarter of the time, for every anchor
    of every round)."""
    if start < 1 or end < start:
        raise ValueError(f"bad anchor range {start}-{end} in {path}")
    anchor = object.__new__(Anchor)
    anchor.__dict__.update(path=path, start=start, end=end, side=side)
    return anchor


@dataclass
class Mapped:
    """What became of one anchor in a new round."""

    status: Status
    anchor: Anchor | None  # where the lines stand now; None when the file is gone
    removed: list[str] = field(default_factory=list)  # anchored lines that were removed
    added: list[str] = field(default_factory=list)  # lines added inside or in place of the range
    nearby_change: bool = False  # an edit within NEARBY_LINES lines of the range
    renamed_from: str | None = None

    @property
    def touched(self) -> bool:
        return self.status is not Status.UNTOUCHED

    @cached_property
    def rewritten(self) -> bool:
        """Whether the removed and the added lines differ beyond whitespace: worked out once
        per mapping, which every defect of the same anchor (a function's scope) shares."""
        return normalise(self.removed) != normalise(self.added)

    def describe(self) -> str:
        """One sentence of evidence, in a reviewer's words."""
        where = place(self.anchor.path, self.anchor.start, self.anchor.end) if self.anchor \
            else "-"
        if self.status is Status.UNTOUCHED:
            note = "; the code next to it changed" if self.nearby_change else ""
            moved = f", in the file renamed from {self.renamed_from}" if self.renamed_from \
                else ""
            return f"the lines it is on did not change (now {where}{moved}){note}"
        if self.status is Status.DELETED:
            if self.anchor is None:
                return "the file it is in was deleted"
            n = len(self.removed)
            what = "the line it is on was" if n == 1 else f"the {n} lines it is on were"
            return f"{what} removed (near {where})"
        removed, added = len(self.removed), len(self.added)
        single = self.anchor is not None and self.anchor.start == self.anchor.end
        if removed == added == 1:
            what = "the line was rewritten" if single else "one of its lines was rewritten"
        elif not removed:
            what = ("a line was" if added == 1 else f"{added} lines were") + " added to it"
        elif not added:
            what = ("a line was" if removed == 1 else f"{removed} lines were") + \
                " removed from it"
        elif removed == added:
            what = f"{removed} of its lines were rewritten"
        else:
            what = f"{_lines(removed)} of it became {_lines(added)}"
        return f"{what} (now {where})"


def _lines(n: int) -> str:
    return f"{n} line{'s' * (n != 1)}"


def strip_prefix(name: str | None) -> str | None:
    """A diff header's path unquoted and without git's ``a/``/``b/`` prefix; None for
    ``/dev/null`` (``tracker.gitpath``)."""
    return diff_path(name)


class FileMap:
    """Line mapping for one file of a diff, from the old side to the new side."""

    def __init__(self, patched: unidiff.PatchedFile):
        self.patched = patched
        self.old_path = strip_prefix(patched.source_file)
        self.new_path = strip_prefix(patched.target_file)
        self.binary = patched.is_binary_file
        self.removed_file = patched.is_removed_file or self.new_path is None
        self.added_file = patched.is_added_file
        # Per hunk: (source_start, source_end_exclusive, the hunk); its lines (``_rows``)
        # are read when first needed
        self._hunks: list[tuple[int, int, unidiff.Hunk]] = []
        self._lines: dict[int, tuple[list[str], list[int], list[int]]] = {}
        self._starts: list[int] = []
        self._ends: list[int] = []  # exclusive source end of each hunk, increasing too
        self._line_maps: dict[int, dict[int, int | None]] = {}
        self._deltas: list[int] = []  # cumulative (target - source) offset after each hunk
        self._old: tuple[str | None, str | None] | None = None  # (new text, old text)
        # built on first use, once per file: the removed old lines in runs; the lines it adds
        self._dead: tuple[list[int], list[int], list[int]] | None = None
        self._added: list[tuple[int, str]] | None = None
        self._removed: list[tuple[int, str]] | None = None
        self._removed_text: dict[str, str] = {}
        delta = 0
        for hunk in patched:
            start = hunk.source_start if hunk.source_length else hunk.source_start + 1
            end = start + hunk.source_length
            self._hunks.append((start, end, hunk))
            self._starts.append(start)
            self._ends.append(end)
            delta += hunk.target_length - hunk.source_length
            self._deltas.append(delta)
        self.changed = bool(self._hunks) or self.binary or self.old_path != self.new_path
        self.edited = bool(self._hunks)  # some line of it was added or removed

    def _rows(self, i: int) -> tuple[list[str], list[int], list[int]]:
        """Hunk ``i``'s added, removed and context lines as text (type and line, no
        newline), each one's old position (for a '+' line, the old line it follows) and new
        position (for a '-' line, the new line before it); worked out once per hunk."""
        known = self._lines.get(i)
        if known is None:
            start, _, hunk = self._hunks[i]
            rows = hunk_rows(hunk)
            kinds = [row[:1] for row in rows]
            at = list(accumulate([k != "+" for k in kinds], initial=start - 1))
            new = list(accumulate([k != "-" for k in kinds], initial=hunk.target_start - 1))
            known = self._lines[i] = (rows, at[1:], new[1:])
        return known

    def map_line(self, line: int) -> int | None:
        """The new line number of old line ``line``, or None if it was removed."""
        i = bisect.bisect_right(self._starts, line) - 1
        if i < 0:
            return line
        if line < self._ends[i]:  # inside hunk i (it starts at or before ``line``)
            inside = self._line_maps.get(i)
            return (inside if inside is not None else self._inside(i)).get(line)  # None: removed
        return line + self._deltas[i]

    def _inside(self, i: int) -> dict[int, int | None]:
        """Old line -> new line (None when removed) within hunk ``i``, built once per hunk."""
        if i not in self._line_maps:
            rows, at, new = self._rows(i)
            self._line_maps[i] = {at[k]: None if row[:1] == "-" else new[k]
                                  for k, row in enumerate(rows) if row[:1] != "+"}
        return self._line_maps[i]

    def map_range(self, anchor: Anchor) -> Mapped:
        rename = self.old_path if self.old_path != self.new_path else None
        if self.removed_file:
            return Mapped(Status.DELETED, None, renamed_from=None)
        if self.binary:
            # Binary content cannot be mapped line by line: any change is a modification.
            a = Anchor(self.new_path, anchor.start, anchor.end, anchor.side)
            return Mapped(Status.MODIFIED, a, renamed_from=rename)
        lo, hi = anchor.start, anchor.end
        removed: list[str] = []
        added: list[str] = []
        added_at: list[int] = []  # new line numbers of the added lines
        nearby = False
        first = bisect.bisect_left(self._ends, lo - NEARBY_LINES)  # hunks before cannot reach
        starts, ends = self._starts, self._ends
        for i in range(first, len(starts)):
            if starts[i] - NEARBY_LINES > hi:
                break  # hunks are in order: none after this one reaches the range either
            if ends[i] - 1 + NEARBY_LINES < lo:
                continue
            rows, at, new_at = self._rows(i)
            # Only lines whose old position is within NEARBY_LINES of the range can count;
            # positions never decrease along a hunk, so they are one slice of it.
            for k in range(bisect.bisect_left(at, lo - NEARBY_LINES),
                           bisect.bisect_right(at, hi + NEARBY_LINES)):
                row, last_source = rows[k], at[k]
                kind = row[:1]
                if kind == "-":
                    if lo <= last_source <= hi:
                        removed.append(row[1:])
                    elif lo - NEARBY_LINES <= last_source <= hi + NEARBY_LINES:
                        nearby = True
                elif kind != "+":
                    continue
                elif lo <= last_source < hi or (last_source == hi and _after_removed(rows, k)):
                    added.append(row[1:])  # inserted inside, or replacing the end
                    added_at.append(new_at[k])
                elif lo - NEARBY_LINES <= last_source <= hi + NEARBY_LINES:
                    nearby = True
        first = self.map_line(lo)
        last = first if hi == lo else self.map_line(hi)
        if first is None or last is None:  # an end was removed: look for the survivors
            kept = self._kept_ends(lo, hi)
        else:
            kept = [first] if last == first else [first, last]
        if not removed and not added:
            new = _anchor(self.new_path, kept[0], kept[-1], anchor.side)
            return Mapped(Status.UNTOUCHED, new, removed, added, nearby, rename)  # both empty
        if kept or added_at:
            span = kept + added_at
            new = _anchor(self.new_path, min(span), max(span), anchor.side)
        else:
            new = _anchor(self.new_path, *self._gap_after(lo), "RIGHT")  # as before: not the side
        status = Status.DELETED if not kept and not added else Status.MODIFIED
        return Mapped(status, new, removed, added, nearby, rename)

    def _removed_runs(self) -> tuple[list[int], list[int], list[int]]:
        """The old lines ``map_line`` answers None for, increasing, and for each the first and
        the last old line of the run of such lines it is in."""
        if self._dead is None:
            dead = sorted(
                line
                for i in range(len(self._hunks))
                for row, line in zip(self._rows(i)[0], self._rows(i)[1])
                if row[:1] == "-" and bisect.bisect_right(self._starts, line) - 1 == i
            )
            first, last = list(dead), list(dead)
            for k in range(1, len(dead)):
                if dead[k] == dead[k - 1] + 1:
                    first[k] = first[k - 1]
            for k in range(len(dead) - 2, -1, -1):
                if dead[k + 1] == dead[k] + 1:
                    last[k] = last[k + 1]
            self._dead = (dead, first, last)
        return self._dead

    def _run_of(self, line: int) -> tuple[int, int]:
        """The first and last old line of the run of removed lines holding ``line`` (one
        ``map_line`` answers None for)."""
        dead, first, last = self._removed_runs()
        k = bisect.bisect_left(dead, line)
        if k < len(dead) and dead[k] == line:
            return first[k], last[k]
        low = high = line  # not a '-' line of its hunk: only a malformed diff gets here
        while low > 1 and self.map_line(low - 1) is None:
            low -= 1
        while self.map_line(high + 1) is None:
            high += 1
        return low, high

    def _kept_ends(self, lo: int, hi: int) -> list[int]:
        """The new lines of the first and last of old lines lo..hi that survive (one when
        they are the same line, none when all were removed). A diff keeps surviving lines in
        order, so these two bound where all of them went."""
        first = self.map_line(lo)
        if first is None:
            low = self._run_of(lo)[1] + 1
            if low > hi:
                return []
            first = self.map_line(low)
        last = self.map_line(hi) if hi != lo else first
        if last is None:
            last = self.map_line(self._run_of(hi)[0] - 1)
        return [first] if last == first else [first, last]

    def _gap_after(self, lo: int) -> tuple[int, int]:
        """Where a fully removed range used to begin, as a one-line range in the new file."""
        before = lo - 1
        new = self.map_line(before) if before >= 1 else None
        if before >= 1 and new is None:
            before = self._run_of(before)[0] - 1
            new = self.map_line(before) if before >= 1 else None
        line = (new or 0) + 1 if before >= 1 else 1
        return line, line

    def hunk_lines(self) -> tuple[set[int], set[int]]:
        """Line numbers inside the diff's hunks: (new side: added and context lines,
        old side: removed and context lines). Review comments may only sit on these."""
        right: set[int] = set()
        left: set[int] = set()
        for i in range(len(self._hunks)):
            rows, at, new = self._rows(i)
            for row, old_no, new_no in zip(rows, at, new):
                kind = row[:1]
                if kind != "-":
                    right.add(new_no)
                if kind != "+":
                    left.add(old_no)
        return right, left

    def removed_lines(self) -> list[tuple[int, str]]:
        """(old line number, text) of every line this diff removes from the file, listed once
        per file: treat it as read-only."""
        if self._removed is None:
            self._removed = [
                (line, row[1:])
                for i in range(len(self._hunks))
                for row, line in zip(self._rows(i)[0], self._rows(i)[1])
                if row[:1] == "-"
            ]
        return self._removed

    def removed_text(self, end: str = "") -> str:
        """The removed lines joined by newlines, followed by ``end``; one string per file."""
        if end not in self._removed_text:
            self._removed_text[end] = "\n".join(text for _, text in self.removed_lines()) + end
        return self._removed_text[end]

    def old_text(self, new_text: str | None) -> str | None:
        """The file's text before this diff, from its text after it (None if it was added);
        worked out once for the same ``new_text``."""
        if self._old is None or self._old[0] is not new_text:
            self._old = (new_text, reverse_apply(new_text, self.patched))
        return self._old[1]

    def added_lines(self) -> list[tuple[int, str]]:
        """(new line number, text) of every line this diff adds to the file, listed once per
        file: treat it as read-only."""
        if self._added is None:
            self._added = [
                (line, row[1:])
                for i in range(len(self._hunks))
                for row, line in zip(self._rows(i)[0], self._rows(i)[2])
                if row[:1] == "+"
            ]
        return self._added


def _after_removed(rows: list[str], k: int) -> bool:
    """Whether added line ``rows[k]`` follows a removed line (so it replaces it), with only
    added lines between them."""
    k -= 1
    while k >= 0 and rows[k][:1] == "+":
        k -= 1
    return k >= 0 and rows[k][:1] == "-"


class DiffMap:
    """All files of one unified diff, ready to map anchors from its old side to its new side."""

    def __init__(self, diff: str | unidiff.PatchSet):
        """``diff`` is the diff's text, or the same diff already parsed by unidiff (so a
        round that parses its diffs once can share them with the tracker)."""
        if isinstance(diff, unidiff.PatchSet):
            patch = diff
        else:
            try:
                patch = parse(diff or "")
            except unidiff.UnidiffParseError as exc:
                raise DiffError(f"not a unified diff: {exc}") from exc
        self.files: dict[str, FileMap] = {}
        self.new_files: dict[str, FileMap] = {}
        for patched in patch:
            fm = FileMap(patched)
            if fm.old_path is not None:
                self.files[fm.old_path] = fm
            if fm.new_path is not None:
                self.new_files[fm.new_path] = fm
        self.renames: dict[str, str] = {}  # old path -> new path, found by similarity
        self._pair_renames()
        self._mapped: dict[Anchor, Mapped] = {}

    def _pair_renames(self) -> None:
        """Pair deleted files with added files whose text is alike, as ``git diff -M`` does,
        so that a defect in a file that was renamed and edited follows it instead of reading
        as deleted."""
        gone = [fm for fm in self.files.values() if fm.removed_file and not fm.binary]
        born = [fm for fm in self.new_files.values() if fm.added_file and not fm.binary]
        if not gone or not born or len(gone) * len(born) > MAX_RENAME_PAIRS:
            return
        taken: set[str] = set()
        for old in gone:
            old_lines = [text for _, text in old.removed_lines()]
            best, best_ratio = None, RENAME_SIMILARITY
            for new in born:
                if new.new_path in taken:
                    continue
                new_lines = [text for _, text in new.added_lines()]
                matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
                if matcher.real_quick_ratio() < best_ratio or matcher.quick_ratio() < best_ratio:
                    continue
                ratio = matcher.ratio()
                if ratio >= best_ratio:
                    best, best_ratio = new, ratio
            if best is None:
                continue
            taken.add(best.new_path)
            new_lines = [text for _, text in best.added_lines()]
            text = "".join(difflib.unified_diff(
                [ln + "\n" for ln in old_lines], [ln + "\n" for ln in new_lines],
                f"a/{old.old_path}", f"b/{best.new_path}", n=3,
            ))
            if not text:  # identical content: a pure rename
                text = (f"diff --git a/{old.old_path} b/{best.new_path}\nsimilarity index 100%\n"
                        f"rename from {old.old_path}\nrename to {best.new_path}\n")
            try:
                renamed = FileMap(unidiff.PatchSet(text)[0])
            except (unidiff.UnidiffParseError, IndexError):
                continue
            renamed.old_path, renamed.new_path = old.old_path, best.new_path
            renamed.removed_file = renamed.added_file = False
            self.files[old.old_path] = self.new_files[best.new_path] = renamed
            self.renames[old.old_path] = best.new_path

    def touched_paths(self) -> set[str]:
        """Every path (old or new name) this diff touches."""
        return set(self.files) | set(self.new_files)

    def map(self, anchor: Anchor) -> Mapped:
        """Map an anchor on the old side of the diff to the new side (once per anchor: the
        defects of one function share its scope). Treat the answer as read-only."""
        if (known := self._mapped.get(anchor)) is None:
            known = self._mapped[anchor] = self._map(anchor)
        return known

    def _map(self, anchor: Anchor) -> Mapped:
        fm = self.files.get(anchor.path)
        if fm is None:
            if anchor.path in self.new_files and self.new_files[anchor.path].added_file:
                # The path was deleted earlier and is created again now: treat as rewritten.
                return Mapped(Status.MODIFIED, anchor)
            return Mapped(Status.UNTOUCHED, anchor)
        return fm.map_range(anchor)

    def added_lines(self, path: str) -> list[tuple[int, str]]:
        """The lines this diff adds to ``path`` (by its new name); read-only."""
        fm = self.new_files.get(path)
        return fm.added_lines() if fm else []


def normalise(lines: list[str] | str) -> list[str]:
    """Anchored code as compared across rounds: whitespace collapsed, blank lines dropped."""
    if isinstance(lines, str):
        lines = split_lines(lines)
    # whitespace runs as one space, the ends stripped: str.split's whitespace is the regular
    # expression \s's, code point for code point
    out = [" ".join(ln.split()) for ln in lines]
    return [ln for ln in out if ln]


def fingerprint(lines: list[str] | str) -> str:
    """A short stable hash of the anchored code, insensitive to indentation and blank lines."""
    return hashlib.sha1("\n".join(normalise(lines)).encode()).hexdigest()[:16]


def excerpt(text: str | None, start: int, end: int) -> list[str]:
    """Lines start..end (1-based, inclusive) of a file's text; empty if the file is missing."""
    if text is None:
        return []
    return list(file_lines(text)[max(start - 1, 0) : max(end, 0)])


@per_text(maxsize=64)
def file_lines(text: str) -> tuple[str, ...]:
    """A file's lines as git numbers them (``split_lines``), split once however many defects
    read them."""
    return tuple(split_lines(text))


@per_text(maxsize=64)
def normalised_lines(text: str) -> tuple[list[tuple[int, str]], Occurrences]:
    """A file's non-blank lines as (line number, normalised text), and where (index into that
    list) each normalised line occurs (``Occurrences``: a mapping, read-only)."""
    lines = file_lines(text)
    normed = list(map(" ".join, map(str.split, lines)))  # as ``normalise``, line by line
    texts = list(filter(None, normed))
    norm = list(zip(compress(range(1, len(lines) + 1), normed), texts))
    return norm, Occurrences(texts)


class Occurrences(Mapping):
    """Normalised line -> the indexes (into the non-blank lines) where it occurs, increasing.
    Built at C speed: the first place and the count of every line at once, the other places
    of a line that occurs more than once when it is first asked for."""

    def __init__(self, texts: list[str]):
        self._texts = texts
        # the first index of each line: a later (smaller) index overwrites a larger one
        self._first = dict(zip(reversed(texts), range(len(texts) - 1, -1, -1)))
        self._counts = Counter(texts) if len(self._first) < len(texts) else None
        self._found: dict[str, list[int]] = {}

    def __getitem__(self, line: str) -> list[int]:
        first = self._first[line]
        if self._counts is None or self._counts[line] == 1:
            return [first]
        found = self._found.get(line)
        if found is None:
            found, index = [first], self._texts.index
            while len(found) < self._counts[line]:
                found.append(index(line, found[-1] + 1))
            self._found[line] = found
        return found

    def __iter__(self):
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)


def distinctive(lines: list[str] | str, minimum: int = 12) -> bool:
    """Whether code is specific enough to recognise elsewhere (not just ``}`` or ``return``)."""
    return sum(len(ln.replace(" ", "")) for ln in normalise(lines)) >= minimum


def find_code(text: str | None, code: list[str] | str, near: int | None = None
              ) -> tuple[int, int] | None:
    """Where the normalised ``code`` occurs in ``text``, as a 1-based line range, or None.

    With ``near``, the occurrence closest to that line wins; otherwise the first.
    """
    target = normalise(code)
    if not target or text is None:
        return None
    norm, where = normalised_lines(text)
    k = len(target)
    best = None
    for j in where.get(target[0], ()):
        if j + k <= len(norm) and [n for _, n in norm[j : j + k]] == target:
            found = (norm[j][0], norm[j + k - 1][0])
            if near is None:
                return found
            if best is None or abs(found[0] - near) < abs(best[0] - near):
                best = found
    return best


def similarity(a: list[str] | str, b: list[str] | str) -> float:
    """How alike two pieces of code are (0..1), ignoring whitespace differences."""
    return difflib.SequenceMatcher(None, "\n".join(normalise(a)), "\n".join(normalise(b))).ratio()


def similarity_bound(a: list[str] | str, b: list[str] | str) -> float:
    """At least ``similarity(a, b)``, at the cost of counting characters (difflib's
    ``quick_ratio``)."""
    return difflib.SequenceMatcher(None, "\n".join(normalise(a)),
                                   "\n".join(normalise(b))).quick_ratio()


def reverse_apply(new_text: str | None, patched: unidiff.PatchedFile) -> str | None:
    """The text a file had before ``patched`` turned it into ``new_text``.

    Returns None when the file did not exist before (an added file).
    """
    if patched.is_added_file:
        return None
    new_lines = split_lines(new_text, keepends=True)
    out: list[str] = []
    pos = 0  # index into new_lines
    old_no_newline = False
    for hunk in patched:
        start = hunk.target_start - 1 if hunk.target_length else hunk.target_start
        out.extend(new_lines[pos:start])
        pos = start
        previous = None
        rows = plain_rows(hunk)
        if rows is not None:  # the body as text: its old lines, and as many new as it says
            out.extend([row[1:] + "\n" for row in rows if row[:1] != "+"])
            pos += hunk.target_length
            previous = rows[-1][:1]
        for line in hunk if rows is not None else hunk_lines(hunk):
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
