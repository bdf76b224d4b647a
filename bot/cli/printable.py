"""What the CLI prints, its control characters escaped (``bot.observe.printable``).

``printable`` escapes a text (``roundwise review``'s report, ``roundwise stats``' tables);
``PrintableFormatter`` does the same for the CLI's log lines, its tracebacks included, and
``PrintableWriter`` for everything a command writes to stdout (``roundwise.cli`` puts it round
``sys.stdout``), so no subcommand can forget: newlines and tabs pass, JSON stays valid JSON.
"""

from __future__ import annotations

import logging

from ..observe.printable import printable

__all__ = ["PrintableFormatter", "PrintableWriter", "printable"]


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
