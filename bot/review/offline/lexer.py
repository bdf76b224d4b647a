"""A small lexer: per line, the code (string contents blanked) and the comment text.

It lets a rule about code ignore strings and comments, and a rule about comments ignore code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .languages import (
    CLIKE,
    CSHARP,
    HASH,
    JAVA,
    JAVASCRIPT,
    MARKUP,
    PYTHON,
    SQL,
    TEXT,
    TYPESCRIPT,
)

MAX_LINE = 2000  # longer lines (minified code, data blobs) are not matched

@dataclass(frozen=True)
class _Syntax:
    line_comments: tuple[str, ...] = ()
    block: tuple[str, str] | None = None
    # opener -> (closer, may span lines, backslash escapes, doubled-quote escapes)
    strings: tuple[tuple[str, str, bool, bool, bool], ...] = ()
    regex_literals: bool = False


_DQ = ('"', '"', False, True, False)
_SQ = ("'", "'", False, True, False)
_BLOCK = ("/*", "*/")
_SYNTAX = {
    PYTHON: _Syntax(("#",), None, (('"""', '"""', True, True, False),
                                   ("'''", "'''", True, True, False), _DQ, _SQ)),
    JAVA: _Syntax(("//",), _BLOCK, (('"""', '"""', True, True, False), _DQ, _SQ)),
    JAVASCRIPT: _Syntax(("//",), _BLOCK, (_DQ, _SQ, ("`", "`", True, True, False)), True),
    CSHARP: _Syntax(("//",), _BLOCK, (('"""', '"""', True, False, False),
                                      ('@$"', '"', True, False, True),
                                      ('$@"', '"', True, False, True),
                                      ('@"', '"', True, False, True), _DQ, _SQ)),
    CLIKE: _Syntax(("//",), _BLOCK, (_DQ, ("`", "`", True, False, False))),
    HASH: _Syntax(("#",), None, (_DQ, _SQ)),
    SQL: _Syntax(("--",), _BLOCK, (_SQ,)),
    MARKUP: _Syntax((), ("<!--", "-->"), ()),
    TEXT: _Syntax(),
}
_SYNTAX[TYPESCRIPT] = _SYNTAX[JAVASCRIPT]
_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^") | {""}
_REGEX_LITERAL = re.compile(r"/(?![*/])(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*")


def _opener_pattern(syntax: _Syntax) -> re.Pattern | None:
    tokens = list(syntax.line_comments) + [s[0] for s in syntax.strings]
    if syntax.block:
        tokens.append(syntax.block[0])
    tokens.sort(key=len, reverse=True)
    alternatives = [re.escape(t) for t in tokens]
    if syntax.regex_literals:
        alternatives.append("/")
    return re.compile("|".join(alternatives)) if alternatives else None


_OPENERS = {lang: _opener_pattern(s) for lang, s in _SYNTAX.items()}


def _string_end(line: str, i: int, spec: tuple[str, str, bool, bool, bool]) -> int:
    """Index just past the closing delimiter of a string starting at ``i``, or -1."""
    _, closer, _, escapes, doubled = spec
    n = len(line)
    while i < n:
        ch = line[i]
        if escapes and ch == "\\":
            i += 2
            continue
        if line.startswith(closer, i):
            if doubled and line.startswith(closer * 2, i):
                i += 2 * len(closer)
                continue
            return i + len(closer)
        i += 1
    return -1


def lex(lines: list[str], language: str) -> tuple[list[str], list[str], list[bool]]:
    """Split each line into its code (string contents removed) and its comment text.

    Also says, per line, whether it starts inside a block comment or a multi-line string.

    The state (inside a block comment or a multi-line string) carries from line to line;
    single-line strings left open are closed at the end of their line, so one odd line cannot
    derail the rest of the file.
    """
    syntax = _SYNTAX.get(language, _SYNTAX[TEXT])
    opener = _OPENERS.get(language)
    specs = {s[0]: s for s in syntax.strings}
    code_out: list[str] = []
    comment_out: list[str] = []
    inside_out: list[bool] = []
    in_block = False
    in_string: tuple[str, str, bool, bool, bool] | None = None
    for line in lines:
        code: list[str] = []
        comment: list[str] = []
        inside_out.append(in_block or in_string is not None)
        i, n = 0, len(line)
        if n > MAX_LINE:
            code_out.append("")
            comment_out.append("")
            continue
        while i < n:
            if in_block:
                end = line.find(syntax.block[1], i)
                if end < 0:
                    comment.append(line[i:])
                    break
                comment.append(line[i:end])
                i, in_block = end + len(syntax.block[1]), False
                code.append(" ")
                continue
            if in_string is not None:
                end = _string_end(line, i, in_string)
                if end < 0:
                    if not in_string[2]:
                        in_string = None
                    break
                code.append(in_string[1])
                i, in_string = end, None
                continue
            m = opener.search(line, i) if opener else None
            if m is None:
                code.append(line[i:])
                break
            code.append(line[i : m.start()])
            token = m.group()
            if token in syntax.line_comments:
                comment.append(line[m.start() :])
                break
            if syntax.block and token == syntax.block[0]:
                in_block, i = True, m.end()
                comment.append(token)
                continue
            if token == "/":  # division, or a JavaScript regex literal
                before = "".join(code).rstrip()
                literal = _REGEX_LITERAL.match(line, m.start())
                after_operator = before[-1:] in _REGEX_BEFORE
                if literal and (after_operator or before.endswith(("return", "typeof"))):
                    code.append("/./")
                    i = literal.end()
                else:
                    code.append("/")
                    i = m.end()
                continue
            code.append(token)
            in_string, i = specs[token], m.end()
        if in_string is not None and not in_string[2]:
            in_string = None
        code_out.append("".join(code))
        comment_out.append("".join(comment))
    return code_out, comment_out, inside_out
