"""Text a terminal shows as it is: control characters from a pull request made visible.

A file name, a description or an evidence quote comes from the code under review, and a
terminal or a CI log obeys what it carries: ESC sequences recolour, retitle or rewrite what the
reader sees, a CR overwrites the line it is on, and Unicode's bidirectional overrides reorder
it. ``printable`` writes every such character as an escape (``\\x1b``, ``\\r``, ``\\u202e``)
before the CLI prints it; ``PrintableFormatter`` does the same for the CLI's log lines, and
``PrintableWriter`` for everything a command writes to stdout (``roundwise.cli`` puts it round
``sys.stdout``), so no subcommand can forget: newlines and tabs pass, JSON stays valid JSON.
"""

from __future__ import annotations

import logging
import re

__all__ = ["PrintableFormatter", "PrintableWriter", "printable"]

# C0 (but tab and newline, which the caller keeps or not), DEL, C1, and the bidirectional
# embeddings, overrides and isolates (the "Trojan Source" characters) and the line and
# paragraph separators that some terminals and logs break on.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_AND_BREAKS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    """C0 as ``\\x1b`` (``\\t``, ``\\n``, ``\\r`` by name); the rest as ``\\u009b``, which a JSON
    string may hold too (JSON never holds C0 raw, but may hold DEL, C1 and bidi characters)."""
    code = ord(match.group())
    return {9: "\\t", 10: "\\n", 13: "\\r"}.get(code) or (
        f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}")


def printable(text: object, *, lines: bool = False) -> str:
    """``text`` with every control character written as an escape; ``lines``: newlines and
    tabs kept (a multi-line text the caller lays out), else escaped too (a name on one line)."""
    text = "" if text is None else str(text)
    return (_CONTROL if lines else _CONTROL_AND_BREAKS).sub(_escape, text)


class PrintableFormatter(logging.Formatter):
    """A log formatter whose lines carry no control character from the message or its
    arguments (newlines included: one record, one line)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


class PrintableWriter:
    """A text stream that writes what it is given with its control characters escaped (tabs
    and newlines kept); everything else is the wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text, lines=True))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
