"""Text a terminal or a log shows as it is: control characters from a pull request made visible.

A file name, a description or an evidence quote comes from the code under review, and a
terminal, a CI log or a log viewer obeys what it carries: ESC sequences recolour, retitle or
rewrite what the reader sees, a CR overwrites the line it is on, a newline forges a log line of
its own, and Unicode's bidirectional overrides reorder text. ``printable`` writes every such
character as an escape (``\\x1b``, ``\\r``, ``\\u202e``); ``EscapingFormatter`` does it to the
message of every log line (the server's, ``bot.server.logs``), leaving a traceback's own lines
as they are. The CLI's outputs use it too (``bot.cli.printable``).
"""

from __future__ import annotations

import logging
import re

__all__ = ["EscapingFormatter", "printable"]

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


class EscapingFormatter(logging.Formatter):
    """A log formatter whose message (with its arguments) carries no control character, a
    newline included: one record, one line, whatever a pull request put in it."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)
