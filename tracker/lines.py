"""Lines as git and GitHub number them: a file is split at "\\n" and nowhere else.

``place`` writes a span of them as a reader expects it: ``app.py:6``, ``app.py:6-8``.

Python's ``str.splitlines`` also breaks at form feeds, vertical tabs, lone carriage returns,
U+2028 and other separators. Real source files hold them (a ^L page break in C or Python, a
U+2028 inside a JavaScript string), and every line number after one would be off by one: an
anchor would read the wrong code. Everything that turns a file into numbered lines uses
``split_lines``.
"""

from __future__ import annotations

__all__ = ["place", "split_lines"]


def place(path: str, start: int, end: int | None = None) -> str:
    """``path:start``, or ``path:start-end`` for a span of more than one line."""
    return f"{path}:{start}" if end is None or end == start else f"{path}:{start}-{end}"


def split_lines(text: str | None, keepends: bool = False) -> list[str]:
    """The lines of ``text`` as git counts them. Without ``keepends`` a line's "\\r\\n" ending
    goes too (a CRLF file reads like an LF one); a carriage return elsewhere stays."""
    if not text:
        return []
    parts = text.split("\n")
    if keepends:
        out = [p + "\n" for p in parts[:-1]]
        return out + [parts[-1]] if parts[-1] else out
    if parts[-1] == "":
        parts.pop()
    return [p.removesuffix("\r") for p in parts]
