"""A model's fix becomes a one-click suggestion only where it replaces the code it is about.

A ```` ```suggestion ```` block replaces exactly the lines a comment sits on. Models cite line
numbers loosely (line 12 for the problem on line 11), and a suggestion on the wrong lines,
committed with one click, replaces good code. So the detection prompt asks for the code the fix
replaces (``"code"``) beside its line numbers, and ``checked_fix`` compares text, not numbers:
the lines ``line_start..line_end`` of the file at the head must hold the quoted code (compared
line by line, ignoring indentation and blank lines). When they do not, or the model quoted
nothing, the fix is kept as plain text in the description, for a person to apply by hand.
"""

from __future__ import annotations

from dataclasses import replace

from tracker.anchors import excerpt
from tracker.models import Finding

__all__ = ["checked_fix", "same_code"]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def same_code(quoted: str | None, actual: list[str] | None) -> bool:
    """Whether ``quoted`` is the text of the ``actual`` lines (whitespace aside)."""
    if quoted is None or not actual:
        return False
    return _lines(quoted) == _lines("\n".join(actual)) and bool(_lines(quoted))


def checked_fix(finding: Finding, files: dict[str, str | None]) -> Finding:
    """``finding`` as it may be posted: its fix kept for a suggestion when the lines it would
    replace are the lines the model quoted, else moved into the description as plain text."""
    if finding.fix is None or finding.side != "RIGHT" or finding.line_start is None:
        return finding
    actual = excerpt(files.get(finding.path or ""), finding.line_start,
                     finding.line_end or finding.line_start)
    if same_code(finding.quote, actual):
        return finding
    span = (f"line {finding.line_start}" if finding.line_end in (None, finding.line_start)
            else f"lines {finding.line_start}-{finding.line_end}")
    why = ("the model did not quote the code it replaces" if finding.quote is None
           else f"the code the model quoted is not what {span} hold")
    fix = finding.fix if finding.fix.strip() else "(delete the lines)"
    text = (f"{finding.description.rstrip()}\n\nPossible fix, not offered as a one-click "
            f"suggestion ({why}); check where it belongs before applying it:\n\n"
            f"```\n{fix}\n```")
    return replace(finding, description=text, fix=None)
