"""Fixes the offline rules can offer with certainty, as a replacement for the flagged line.

A fix is posted as a ```suggestion the author commits with one click, so it must never break
the code: only single-line hits, only when the whole line is the flagged statement (a debug
print or breakpoint with balanced brackets, nothing else on the line), never when deleting it
would leave a Python block empty, and for loose equality only when the code view (strings and
comments blanked) shows the same operators as a scan of the raw line. Anything less certain
gets no fix: the finding's description already says what to do.
"""

from __future__ import annotations

import re

from .files import ChangedFile
from .languages import JS_TS, PYTHON

__all__ = ["fix_for"]

_PY_DELETE = re.compile(r"^\s*(print\(.*\)|breakpoint\(\)|i?pdb\.set_trace\(\)"
                        r"|import i?pdb\s*;\s*i?pdb\.set_trace\(\))\s*$")
_JS_DELETE = re.compile(r"^\s*(console\.(log|debug|trace|dir|table)\(.*\)\s*;?|debugger\s*;?)\s*$")
_LOOSE = re.compile(r"(?<![=!<>])(==|!=)(?!=)")


def fix_for(rule_id: str, cf: ChangedFile, start: int, end: int) -> str | None:
    """The replacement text for lines ``start..end`` of ``cf`` ("" deletes them), or None."""
    if start != end or start not in cf.lines or start not in cf.code:
        return None
    raw, code = cf.lines[start], cf.code[start]
    if rule_id in ("debug-print", "debugger-statement"):
        return "" if _deletable(cf, start, raw, code) else None
    if rule_id == "loose-equality":
        return _strict(raw, code)
    return None


def _balanced(code: str) -> bool:
    depth = 0
    for ch in code:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _deletable(cf: ChangedFile, n: int, raw: str, code: str) -> bool:
    if cf.language != PYTHON and cf.language not in JS_TS:
        return False
    pattern = _PY_DELETE if cf.language == PYTHON else _JS_DELETE
    if not pattern.match(code) or not _balanced(code) or raw.rstrip().endswith("\\"):
        return False
    if cf.language != PYTHON:
        return True
    # Python: the line must not be the only statement of its block.
    indent = len(raw) - len(raw.lstrip())
    before = next((cf.lines[k] for k in range(n - 1, 0, -1)
                   if k in cf.lines and cf.lines[k].strip()), None)
    after = next((cf.lines[k] for k in range(n + 1, n + 200)
                  if k in cf.lines and cf.lines[k].strip()), None)
    if before is None:
        return False  # not enough of the file known to be sure
    if before.split("#")[0].rstrip().endswith(":"):
        return after is not None and len(after) - len(after.lstrip()) == indent
    return True


def _strict(raw: str, code: str) -> str | None:
    """``==``/``!=`` outside strings and comments made strict; None unless the scan of the raw
    line finds exactly the operators the lexer's code view shows."""
    spots, quote, i = [], None, 0
    while i < len(raw):
        ch = raw[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif raw.startswith("//", i) or raw.startswith("/*", i):
            break
        elif raw.startswith(("==", "!="), i) and raw[i + 2:i + 3] != "=" \
                and (i == 0 or raw[i - 1] not in "=!<>"):
            spots.append(i)
            i += 2
            continue
        i += 1
    if quote or not spots or len(spots) != len(_LOOSE.findall(code)):
        return None
    out, last = [], 0
    for i in spots:
        out.append(raw[last:i + 2] + "=")
        last = i + 2
    return "".join(out) + raw[last:]
