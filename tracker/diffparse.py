"""A diff parsed as unidiff parses it, with each hunk's lines read only when asked for.

unidiff builds an object per diff line with a regular expression each: on a push of 20,000
changed lines that is most of the cost of mapping every anchor. ``parse`` lets unidiff read
everything but the hunks' bodies (files, renames, modes, binary files, markers), in its
``metadata_only`` mode: each run of hunks with nothing between them reaches it as one hunk
with a one-line stand-in body, while the real bodies are found (and checked as unidiff checks
them: line types, lengths) by counting their lines; the hunks then get their real ranges and
counts back. Its lines are read on first use
(``hunk_lines``), line for line as unidiff's full parse would: the same types, values and line
numbers, and the same "\\ No newline at end of file" markers. A hunk nobody asks about is never
read.
"""

from __future__ import annotations

from collections.abc import Iterator

import unidiff
from unidiff.constants import RE_HUNK_EMPTY_BODY_LINE, RE_HUNK_HEADER

__all__ = ["Line", "hunk_lines", "hunk_rows", "parse", "plain_rows"]

# what unidiff reads in place of a hunk's body: a one-line hunk of one context line
_STAND_IN = ("@@ -1 +1 @@\n", " \n")


class Line:
    """One line of a hunk, with the attributes of ``unidiff.patch.Line`` the tracker reads."""

    __slots__ = ("line_type", "source_line_no", "target_line_no", "value")

    def __init__(self, line_type: str, value: str, source_line_no: int | None,
                 target_line_no: int | None):
        self.line_type = line_type
        self.value = value
        self.source_line_no = source_line_no
        self.target_line_no = target_line_no


class _Body:
    """Where a hunk's lines are in the diff (``lines[start:end]`` of its text split at
    newlines), and once read, the lines."""

    __slots__ = ("end", "lines", "markers", "open_end", "plain", "read", "start")

    def __init__(self, lines: list[str], start: int, end: int, open_end: bool, markers: bool,
                 plain: bool):
        self.lines, self.start, self.end, self.markers = lines, start, end, markers
        self.plain = plain and not open_end  # only " ", "+", "-" lines, each with a newline
        self.open_end = open_end  # its last line is the text's last, without a newline
        self.read: list | None = None


def parse(text: str) -> unidiff.PatchSet:
    """``text`` parsed as ``unidiff.PatchSet(text)`` would be; read hunks with ``hunk_lines``.
    Raises ``unidiff.UnidiffParseError`` as unidiff does."""
    lines = text.split("\n")
    closed = text.endswith("\n") or not text
    count = len(lines) - 1 if closed else len(lines)  # lines[count] is "" when closed
    # hunks in runs with nothing between them: unidiff reads one stand-in per run
    runs: list[list[tuple]] = []

    def fed() -> Iterator[str]:
        i, after_body = 0, False
        while i < count:
            line = lines[i]
            full = line + "\n" if i < count - 1 or closed else line
            header = RE_HUNK_HEADER.match(full) if line.startswith("@@ -") else None
            if header is None:
                yield full
                i, after_body = i + 1, False
                continue
            numbers = _numbers(header)
            end, added, removed, markers, plain = _body_end(lines, i + 1, count, numbers)
            hunk = (numbers, header.group(5), added, removed,
                    _Body(lines, i + 1, end, end == count and not closed, markers, plain))
            if after_body:  # straight after another hunk: the file is the same
                runs[-1].append(hunk)
            else:
                runs.append([hunk])
                yield from _STAND_IN
            i, after_body = end, True

    patch = unidiff.PatchSet(fed(), metadata_only=True)
    stand_ins = [(patched, hunk) for patched in patch for hunk in patched]
    if len(stand_ins) != len(runs):  # pragma: no cover - every hunk header is one of ours
        return unidiff.PatchSet(text)
    real: dict[int, list] = {}
    for (patched, stand_in), run in zip(stand_ins, runs):
        made = [stand_in] + [unidiff.Hunk(*numbers, section) for numbers, section, *_ in run[1:]]
        after = list(stand_in)  # markers and blank lines unidiff put after the run's last body
        del stand_in[:]
        made[-1].extend(after)
        for hunk, (numbers, section, added, removed, body) in zip(made, run):
            (hunk.source_start, hunk.source_length, hunk.target_start,
             hunk.target_length) = numbers
            hunk.section_header = section
            hunk._added, hunk._removed = added, removed
            hunk._roundwise_body = body
        real.setdefault(id(patched), []).extend(made)
    for patched in patch:
        if id(patched) in real:
            patched[:] = real[id(patched)]
    return patch


def _numbers(match) -> tuple[int, int, int, int]:
    src, src_len, tgt, tgt_len = match.groups()[:4]
    return (int(src), 1 if src_len is None else int(src_len),
            int(tgt), 1 if tgt_len is None else int(tgt_len))


def _body_end(lines: list[str], i: int, count: int, numbers: tuple[int, int, int, int]
              ) -> tuple[int, int, int, bool, bool]:
    """Where the body starting at ``lines[i]`` ends (exclusive), its added and removed lines
    (as unidiff's hunk parse counts them, with its errors), whether it holds a "\\" marker
    and whether every line starts with " ", "+" or "-"."""
    source, source_len, target, target_len = numbers
    source_end, target_end = source + source_len, target + target_len
    added = removed = 0
    markers = blank = False
    while i < count:
        kind = lines[i][:1]
        i += 1
        if kind == "+":
            target += 1
            added += 1
        elif kind == "-":
            source += 1
            removed += 1
        elif kind == " ":
            source, target = source + 1, target + 1
        elif kind in ("", "\r"):
            source, target, blank = source + 1, target + 1, True
        elif kind == "\\":
            markers = True
        else:
            raise unidiff.UnidiffParseError(f"Hunk diff line expected: {lines[i - 1]}")
        if source > source_end or target > target_end:
            raise unidiff.UnidiffParseError("Hunk is longer than expected")
        if source == source_end and target == target_end:
            return i, added, removed, markers, not (markers or blank)
    raise unidiff.UnidiffParseError("Hunk is shorter than expected")


def hunk_rows(hunk: unidiff.Hunk) -> list[str]:
    """The added, removed and context lines of ``hunk`` as text: the line's type ("+", "-",
    else context) then the line without its newline ("\\" markers left out). A new list,
    made without an object per line."""
    body = getattr(hunk, "_roundwise_body", None)
    if body is None:  # parsed in full by unidiff
        return [ln.line_type + ln.value.rstrip("\n") for ln in hunk
                if ln.line_type in ("+", "-", " ")]
    rows = body.lines[body.start:body.end]
    return [row for row in rows if row[:1] != "\\"] if body.markers else rows


def plain_rows(hunk: unidiff.Hunk) -> list[str] | None:
    """The body of a hunk ``parse`` read whose lines all start with " ", "+" or "-" and end
    with a newline, as text without the newlines (a new list); else None. The
    hunk itself then lists only what unidiff put after the body (markers, blank lines)."""
    body = getattr(hunk, "_roundwise_body", None)
    if body is None or not body.plain:
        return None
    return body.lines[body.start:body.end]


def hunk_lines(hunk: unidiff.Hunk) -> list:
    """Every line of ``hunk`` (context, removed, added, "\\" markers) with its type, value and
    line numbers, as unidiff's full parse lists them; read once. Treat it as read-only."""
    body = getattr(hunk, "_roundwise_body", None)
    if body is None:
        return hunk  # parsed in full by unidiff
    if body.read is None:
        # after the body: the markers and blank lines unidiff's own pass appended (as Lines)
        body.read = _read(body, hunk) + [
            Line(ln.line_type, ln.value, ln.source_line_no, ln.target_line_no) for ln in hunk]
    return body.read


def _read(body: _Body, hunk: unidiff.Hunk) -> list[Line]:
    """The lines of ``body``, numbered from the hunk's starts."""
    source, target = hunk.source_start, hunk.target_start
    out: list[Line] = []
    last = body.end - 1
    for k in range(body.start, body.end):
        line = body.lines[k]
        kind = line[:1]
        value = line[1:] if body.open_end and k == last else line[1:] + "\n"
        if kind == "+":
            out.append(Line("+", value, None, target))
            target += 1
        elif kind == "-":
            out.append(Line("-", value, source, None))
            source += 1
        elif kind == " ":
            out.append(Line(" ", value, source, target))
            source, target = source + 1, target + 1
        elif kind == "\\":
            out.append(Line("\\", value, None, None))
        else:  # a blank line ("\n", "\r\n"): context, its value what unidiff keeps of it
            full = line if body.open_end and k == last else line + "\n"
            out.append(Line(" ", RE_HUNK_EMPTY_BODY_LINE.match(full).group("value"), source,
                            target))
            source, target = source + 1, target + 1
    return out
