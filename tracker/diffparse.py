"""A diff parsed as unidiff parses it, with each hunk's lines read only when asked for.

unidiff builds an object per diff line with a regular expression each: on a push of 20,000
changed lines that is most of the cost of mapping every anchor. ``parse`` lets unidiff read the
headers (files, renames, modes, binary files, hunk ranges) in its ``metadata_only`` mode, which
skips the lines, then finds each hunk's body in the text and reads it on first use
(``hunk_lines``), line for line as unidiff's full parse would: the same line types, values and
line numbers, and the same "\\ No newline at end of file" markers. A hunk nobody asks about is
never read. When the text's hunk headers do not line up with unidiff's hunks, the diff is
parsed in full instead, so the answer is unidiff's either way.
"""

from __future__ import annotations

import re

import unidiff
from unidiff.constants import RE_HUNK_EMPTY_BODY_LINE

__all__ = ["Line", "hunk_lines", "parse"]

# unidiff's hunk header (``RE_HUNK_HEADER``), at the start of any line: no other line of a
# diff unidiff accepts starts with "@@ -" (hunk lines start with " ", "+", "-" or "\\")
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))?\ @@[ ]?.*$", re.MULTILINE)


class Line:
    """One line of a hunk, with the attributes of ``unidiff.patch.Line`` the tracker reads."""

    __slots__ = ("line_type", "value", "source_line_no", "target_line_no")

    def __init__(self, line_type: str, value: str, source_line_no: int | None,
                 target_line_no: int | None):
        self.line_type = line_type
        self.value = value
        self.source_line_no = source_line_no
        self.target_line_no = target_line_no


class _Body:
    """Where a metadata-only hunk's lines are in the diff text, and once read, the lines."""

    __slots__ = ("text", "at", "lines")

    def __init__(self, text: str, at: int):
        self.text, self.at, self.lines = text, at, None


def parse(text: str) -> unidiff.PatchSet:
    """``text`` parsed as ``unidiff.PatchSet(text)`` would be; read hunks with ``hunk_lines``.
    Raises ``unidiff.UnidiffParseError`` as unidiff does."""
    patch = unidiff.PatchSet(text, metadata_only=True)
    hunks = [hunk for patched in patch for hunk in patched]
    headers = list(_HUNK_HEADER.finditer(text))
    if len(headers) != len(hunks) or any(
            (h.source_start, h.source_length, h.target_start, h.target_length)
            != _numbers(m) for h, m in zip(hunks, headers)):
        return unidiff.PatchSet(text)  # headers we cannot line up: unidiff's full parse
    for hunk, match in zip(hunks, headers):
        end = match.end()
        hunk._roundwise_body = _Body(text, end + 1 if end < len(text) else end)
    return patch


def _numbers(match: re.Match) -> tuple[int, int, int, int]:
    src, src_len, tgt, tgt_len = match.groups()
    return (int(src), 1 if src_len is None else int(src_len),
            int(tgt), 1 if tgt_len is None else int(tgt_len))


def hunk_lines(hunk: unidiff.Hunk) -> list:
    """Every line of ``hunk`` (context, removed, added, "\\" markers) with its type, value and
    line numbers, as unidiff's full parse lists them; read once. Treat it as read-only."""
    body = getattr(hunk, "_roundwise_body", None)
    if body is None:
        return hunk  # parsed in full by unidiff
    if body.lines is None:
        # markers and blank lines unidiff's header pass appended after the body (as Lines)
        body.lines = _read(body.text, body.at, hunk) + [
            Line(ln.line_type, ln.value, ln.source_line_no, ln.target_line_no) for ln in hunk]
    return body.lines


def _read(text: str, at: int, hunk: unidiff.Hunk) -> list[Line]:
    """The body of ``hunk`` from offset ``at``, line by line as unidiff's ``_parse_hunk``:
    it ends once both sides' lengths are reached (after one line at least)."""
    source, target = hunk.source_start, hunk.target_start
    source_end, target_end = source + hunk.source_length, target + hunk.target_length
    out: list[Line] = []
    size = len(text)
    while at < size:
        nl = text.find("\n", at)
        end = size if nl < 0 else nl + 1
        line = text[at:end]
        at = end
        kind = line[0]
        if kind == "+":
            out.append(Line("+", line[1:], None, target))
            target += 1
        elif kind == "-":
            out.append(Line("-", line[1:], source, None))
            source += 1
        elif kind == " ":
            out.append(Line(" ", line[1:], source, target))
            source, target = source + 1, target + 1
        elif kind == "\\":
            out.append(Line("\\", line[1:], None, None))
        else:  # an empty line ("\n", "\r\n"): context, its value what unidiff keeps of it
            match = RE_HUNK_EMPTY_BODY_LINE.match(line)
            if match is None or match.group("line_type"):
                raise unidiff.UnidiffParseError(f"Hunk diff line expected: {line}")
            out.append(Line(" ", match.group("value"), source, target))
            source, target = source + 1, target + 1
        if source >= source_end and target >= target_end:
            break
    return out
