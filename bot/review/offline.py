"""The offline reviewer: static checks restricted to the lines a pull request adds.

When no LLM is configured roundwise still reviews, in the spirit of MCR-Bench's Hybrid-Review
baseline: ``review_offline(diff, files)`` runs ruff on changed Python files and a table of
small per-language rules on every changed text file, and keeps only what lands on lines the
diff adds (right side). Its findings go to the same tracker as the LLM's, so they are followed
across rounds like any other.

Rule families (see ``RULES`` and ``RUFF_RULES`` for the exact table):

- ruff (Python): a curated set of high-signal diagnostics (undefined names, unused imports and
  variables, bare or blind excepts, mutable defaults, hard-coded passwords, unsafe calls...),
  never style or formatting;
- leftover debugging: ``print(``, ``console.log``, ``System.out.println``,
  ``Console.WriteLine``, ``printStackTrace()``, ``debugger;``, ``breakpoint()``;
- new TODO/FIXME/XXX/HACK comments, commented-out code blocks, blanket lint suppressions;
- hard-coded credentials, private keys and cloud-key-shaped strings;
- swallowed exceptions (``except Exception: pass``, empty ``catch {}``);
- language pitfalls: loose ``==`` in JavaScript, ``any`` and ``@ts-ignore`` in TypeScript,
  ``==`` on Java strings, ``async void`` and blocking waits in C#, ``eval``, ``innerHTML``,
  SQL built by concatenation, literal sleeps, ``assert`` as validation;
- E.4: source files changed but no test file added or changed.

Generated, vendored, lock and minified files are skipped; test files get fewer rules (prints,
sleeps and asserts are fine there). Each file is read through a small lexer that separates
code from comments and blanks string contents, so a rule about code does not fire on a
string or a comment and a rule about comments does not fire on code.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

import unidiff

from tracker.models import Finding, Origin, severity_rank
from tracker.paths import is_generated_path, is_test_path

log = logging.getLogger(__name__)

MAX_LINE = 2000  # longer lines (minified code, data blobs) are not matched
MAX_PER_RULE_PER_FILE = 5  # the first few hits of one rule in one file are enough to act on
RUFF_TIMEOUT = 60

# --------------------------------------------------------------------------------------------
# Languages and file classes
# --------------------------------------------------------------------------------------------

PYTHON, JAVA, CSHARP = "python", "java", "csharp"
JAVASCRIPT, TYPESCRIPT = "javascript", "typescript"
CLIKE, HASH, SQL, MARKUP, TEXT = "c-like", "hash", "sql", "markup", "text"
SOURCE_LANGUAGES = frozenset({PYTHON, JAVA, JAVASCRIPT, TYPESCRIPT, CSHARP})
JS_TS = frozenset({JAVASCRIPT, TYPESCRIPT})
CODE_LANGUAGES = SOURCE_LANGUAGES | {CLIKE, HASH, SQL}
ALL_LANGUAGES = CODE_LANGUAGES | {MARKUP, TEXT}

_EXTENSIONS = {
    PYTHON: ".py .pyw",
    JAVA: ".java",
    JAVASCRIPT: ".js .jsx .mjs .cjs",
    TYPESCRIPT: ".ts .tsx .mts .cts",
    CSHARP: ".cs",
    CLIKE: ".c .h .cc .cpp .cxx .hpp .hh .go .rs .kt .kts .swift .scala .php .dart .m .mm "
    ".groovy .gradle .css .scss .less .proto",
    HASH: ".sh .bash .zsh .rb .yml .yaml .toml .pl .pm .r .cfg .ini .conf .ps1 .tf .mk .env",
    SQL: ".sql",
    MARKUP: ".md .markdown .rst .html .htm .xml .xaml .csproj .props .targets .svg .vue",
}
LANGUAGE_BY_EXTENSION = {ext: lang for lang, exts in _EXTENSIONS.items() for ext in exts.split()}
_HASH_NAMES = {"dockerfile", "makefile", "gemfile", "rakefile", "procfile", ".gitignore"}


def language_of(path: str) -> str:
    """The language a path is reviewed as, from its extension (``text`` when unknown)."""
    name = PurePosixPath(path).name
    lower = name.lower()
    if lower in _HASH_NAMES or lower.startswith(("dockerfile.", ".env")):
        return HASH
    return LANGUAGE_BY_EXTENSION.get(PurePosixPath(lower).suffix, TEXT)


_AUX_DIR = re.compile(
    r"(^|/)(scripts?|bin|tools?|examples?|samples?|demos?|docs?|benchmarks?|bench|"
    r"[\w.-]*(Samples?|Benchmarks?|Tools?|Examples?|Demos?|Desktop))/"
)
_CLI_NAME = re.compile(r"(^|[._-])cli([._-]|$)|^(__main__|setup|manage|noxfile|fabfile|tasks)\.py$"
                       r"|^Program\.cs$", re.IGNORECASE)


def is_auxiliary_path(path: str) -> bool:
    """Scripts, examples, benchmarks, docs and command-line entry points: printing is their job."""
    return bool(_AUX_DIR.search(path) or _CLI_NAME.search(PurePosixPath(path).name))


# --------------------------------------------------------------------------------------------
# A small lexer: per line, the code (string contents blanked) and the comment text
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# One changed file as the rules see it
# --------------------------------------------------------------------------------------------


@dataclass
class ChangedFile:
    """A file of the diff at head: its added lines, and every line we know around them.

    ``lines`` is the whole head text when ``files`` gave one that agrees with the diff, else
    only the lines the hunks show (context and added). Line numbers are 1-based, right side.
    """

    path: str
    added: dict[int, str]
    lines: dict[int, str]
    text: str | None  # head text, when it agrees with the diff
    language: str = field(init=False)
    is_test: bool = field(init=False)

    def __post_init__(self):
        self.language = language_of(self.path)
        self.is_test = is_test_path(self.path)

    @cached_property
    def _views(self) -> tuple[dict[int, str], dict[int, str], set[int]]:
        numbers = sorted(self.lines)
        code: dict[int, str] = {}
        comments: dict[int, str] = {}
        inside: set[int] = set()
        # Lex each run of consecutive known lines on its own: state cannot cross a gap.
        start = 0
        for k in range(1, len(numbers) + 1):
            if k == len(numbers) or numbers[k] != numbers[k - 1] + 1:
                run = numbers[start:k]
                c, m, f = lex([self.lines[n] for n in run], self.language)
                code.update(zip(run, c, strict=True))
                comments.update(zip(run, m, strict=True))
                inside.update(n for n, flag in zip(run, f, strict=True) if flag)
                start = k
        return code, comments, inside

    @property
    def code(self) -> dict[int, str]:
        """Per line: the code with string contents blanked and comments removed."""
        return self._views[0]

    @property
    def comments(self) -> dict[int, str]:
        """Per line: the comment text (with its marker), empty when none."""
        return self._views[1]

    @property
    def continued(self) -> set[int]:
        """Lines that start inside a block comment or a multi-line string."""
        return self._views[2]

    def view(self, name: str) -> dict[int, str]:
        """One of the per-line views by name: ``code``, ``comment`` or ``raw``."""
        return {"code": self.code, "comment": self.comments, "raw": self.lines}[name]

    def code_line(self, n: int) -> bool:
        """Whether line ``n`` holds code, not just blanks, quotes or a comment."""
        return bool(self.code.get(n, "").strip().strip("\"'`@$;{}()").strip())

    def next_lines(self, n: int, limit: int = 40) -> Iterator[int]:
        """Known line numbers after ``n`` that are not blank, in order, stopping at a gap."""
        k = n + 1
        while k in self.lines and k <= n + limit:
            if self.lines[k].strip():
                yield k
            k += 1

    @cached_property
    def head(self) -> str:
        """The head text, or the lines the diff shows when we have no text to trust."""
        return self.text if self.text is not None else "\n".join(self.lines.values())


def _strip_prefix(name: str | None) -> str | None:
    if not name or name in ("/dev/null", "dev/null"):
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def _changed_files(diff: str, files: dict[str, str | None]) -> tuple[list[ChangedFile], list[str]]:
    """The diff's files at head (added lines and known lines), and every path it touches."""
    try:
        patch = unidiff.PatchSet(diff or "")
    except Exception as exc:  # noqa: BLE001 - a parser on arbitrary input must not crash a review
        log.warning("offline review: cannot parse the diff (%s)", exc)
        return [], []
    out: list[ChangedFile] = []
    touched: list[str] = []
    for patched in patch:
        path = _strip_prefix(patched.target_file)
        old = _strip_prefix(patched.source_file)
        touched.extend(p for p in (path, old) if p)
        if path is None or patched.is_removed_file or patched.is_binary_file:
            continue
        added: dict[int, str] = {}
        shown: dict[int, str] = {}
        for hunk in patched:
            for ln in hunk:
                if ln.target_line_no is None or ln.line_type not in ("+", " "):
                    continue
                text = ln.value.rstrip("\n").rstrip("\r")
                shown[ln.target_line_no] = text
                if ln.line_type == "+":
                    added[ln.target_line_no] = text
        if not added:
            continue
        head = files.get(path) if isinstance(files, dict) else None
        text = head if isinstance(head, str) and "\x00" not in head[:8192] else None
        if isinstance(head, str) and text is None:
            continue  # binary content
        if text is not None:
            full = [s.rstrip("\r") for s in text.split("\n")]
            if all(n <= len(full) and full[n - 1] == s for n, s in added.items()):
                shown = {i: s for i, s in enumerate(full, 1)}
            else:
                text = None  # the text does not belong to this diff: trust the diff alone
        out.append(ChangedFile(path, added, shown, text))
    return out, touched


# --------------------------------------------------------------------------------------------
# Rules as data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """Where a rule fired (right-side lines, inclusive) and the text it fired on."""

    start: int
    end: int
    match: str = ""


@dataclass(frozen=True)
class Rule:
    """One offline check: where it applies, how it finds hits, and what it reports.

    A rule with a ``pattern`` is matched against one view of every added line (``code``:
    string contents blanked and comments removed; ``comment``: the comment text; ``raw``: the
    line as written); ``accept`` may veto a match. A rule with ``check`` finds its own hits
    (multi-line constructs). ``description`` may use ``{m}``, the flagged code, shortened.
    """

    id: str
    languages: frozenset[str]
    type: str
    severity: str
    confidence: float
    description: str
    pattern: re.Pattern | None = None
    view: str = "code"
    in_tests: bool = False
    in_auxiliary: bool = True
    applies: Callable[[ChangedFile], bool] | None = None
    accept: Callable[[re.Match, ChangedFile, int], bool] | None = None
    check: Callable[[ChangedFile], Iterable[Hit]] | None = None

    def relevant(self, cf: ChangedFile) -> bool:
        """Whether the rule applies to this file (language, test or auxiliary file, filter)."""
        if cf.language not in self.languages:
            return False
        if cf.is_test and not self.in_tests:
            return False
        if not self.in_auxiliary and is_auxiliary_path(cf.path):
            return False
        return self.applies is None or self.applies(cf)

    def find(self, cf: ChangedFile) -> Iterator[Hit]:
        """The rule's hits in this file, in line order (not yet clipped to added lines)."""
        if self.check is not None:
            yield from self.check(cf)
            return
        view = cf.view(self.view)
        for n in sorted(cf.added):
            text = view.get(n, "")
            if not text or len(text) > MAX_LINE:
                continue
            m = self.pattern.search(text)
            if m and (self.accept is None or self.accept(m, cf, n)):
                yield Hit(n, n, cf.lines.get(n, "").strip())


def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _langs(*names: str) -> frozenset[str]:
    return frozenset(names)


# --- helpers used by rule filters ----------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"example|sample|dummy|fake|placeholder|changeme|change_me|redacted|your[_-]|xxxx|\*\*\*"
    r"|\.\.\.|<|>|\$\{|\{\{|%\(|%s|test|secret_key_here|^[x*#.-]+$",
    re.IGNORECASE,
)


def looks_secret(value: str) -> bool:
    """Whether a string literal looks like a real credential rather than a name or a message."""
    if not 8 <= len(value) <= 200 or any(c.isspace() for c in value):
        return False
    if _PLACEHOLDER.search(value) or "://" in value or value.startswith("/"):
        return False
    # identifiers, env var names, dotted paths and kebab-case labels are not secrets
    return not re.fullmatch(r"[A-Za-z_./:-]+", value)


_SECRET_ASSIGNMENT = _rx(
    r"(?i)\b[\w.-]*?(?:password|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?key"
    r"|auth[_-]?token|access[_-]?token|private[_-]?key|client[_-]?secret|token)[\"']?\s*"
    r"(?::=|=>|=(?!=)|:(?!:))\s*[@$]?[rbuf]?([\"'`])([^\"'`\s]{8,200})\1"
)
_STRING_LITERAL = re.compile(r"([\"'])((?:[^\"'\\]|\\.){8,200}?)\1")


def _secret_value(m: re.Match, cf: ChangedFile, n: int) -> bool:
    return looks_secret(m.group(2))


def _not_example_file(cf: ChangedFile) -> bool:
    return not re.search(r"example|sample|template|fixture|mock|demo|docs?/", cf.path,
                         re.IGNORECASE)


def _python_print_is_debug(m: re.Match, cf: ChangedFile, n: int) -> bool:
    return "file=" not in cf.lines.get(n, "")


def _python_not_cli(cf: ChangedFile) -> bool:
    return not re.search(
        r"^if __name__ == ['\"]__main__['\"]|^\s*import (argparse|click|typer)\b"
        r"|^\s*from (argparse|click|typer) import",
        cf.head,
        re.MULTILINE,
    )


def _js_not_cli(cf: ChangedFile) -> bool:
    return not cf.head.startswith("#!") and not re.search(r"\b(yargs|commander)\b", cf.head[:5000])


def _java_not_main(cf: ChangedFile) -> bool:
    return not re.search(r"\bstatic\s+void\s+main\s*\(", cf.head)


def _csharp_not_main(cf: ChangedFile) -> bool:
    return not re.search(r"\bstatic\s+(async\s+)?(void|int|Task(<int>)?)\s+Main\s*\(", cf.head)


def _not_declaration_file(cf: ChangedFile) -> bool:
    return not cf.path.endswith(".d.ts")


def _assert_is_validation(m: re.Match, cf: ChangedFile, n: int) -> bool:
    """An ``assert`` with a message for the user (a check of input), on one line.

    Asserts without a message are usually internal invariants, and ``assert x is not None`` or
    ``assert isinstance(...)`` narrow a type for the type checker: neither is flagged.
    """
    rest = cf.code.get(n, "")[m.end() :]
    if re.match(r"\s*(isinstance\(|[\w.]+\s+is\s+(not\s+)?None\b|False\b|0\b)", rest):
        return False
    depth = 0
    for ch in rest:
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            return True
    return False


def _loose_equality(m: re.Match, cf: ChangedFile, n: int) -> bool:
    code = cf.code.get(n, "")
    around = code[max(0, m.start() - 40) : m.end() + 12]
    if re.search(r"(==|!=)\s*(null|undefined)\b|\b(null|undefined)\s*(==|!=)(?!=)", around):
        return False  # `x == null` is the accepted idiom for "null or undefined"
    return "typeof" not in around


def _async_void_not_handler(m: re.Match, cf: ChangedFile, n: int) -> bool:
    name, params = m.group(1), m.group(2) or ""
    return not (re.search(r"EventArgs|\bsender\b", params) or name.startswith("On")
                or name.endswith(("Handler", "_Click", "Callback")))


def _inner_html_dynamic(m: re.Match, cf: ChangedFile, n: int) -> bool:
    """Assigning markup built from values, not a fixed string."""
    raw = cf.lines.get(n, "")
    if "${" in raw:
        return True
    rhs = cf.code.get(n, "")[m.end() :].strip().rstrip(";").strip()
    return not re.fullmatch(r"(\"\"|''|``)?", rhs)


_SQL_STRING = re.compile(
    r"(?i)(?:[\"'`]|\b[fF][\"'])\s*(?:SELECT\b[^\"'`]*?\bFROM\b|INSERT\s+INTO\b|UPDATE\s+\w+\s+SET\b"
    r"|DELETE\s+FROM\b)"
)
_SQL_INTERPOLATION = re.compile(
    r"[\"'`]\s*\+\s*[\w(]|[\w)\]]\s*\+\s*[\"'`]|\$\{|\b[fF][\"'][^\"']*\{|\.format\(|[\"']\s*%\s*[\w(]"
    r"|\$@?\"|String\.format\(|string\.Format\("
)


def _sql_built_from_values(m: re.Match, cf: ChangedFile, n: int) -> bool:
    return bool(_SQL_INTERPOLATION.search(cf.lines.get(n, "")))


_PY_EXCEPT = re.compile(r"^(\s*)except\s*(?:\(?\s*(?:Exception|BaseException)\s*\)?"
                        r"(?:\s+as\s+\w+)?)?\s*:\s*(pass|\.\.\.)?\s*$")
_C_CATCH_EMPTY = re.compile(
    r"\bcatch\s*(?:\([^()]*\))?\s*\{\s*\}|\.catch\(\s*(?:\(\s*\w*\s*\)|\w+)\s*=>\s*\{\s*\}\s*\)"
    r"|\.catch\(\s*function\s*\w*\s*\([^)]*\)\s*\{\s*\}\s*\)"
)
_C_CATCH_OPEN = re.compile(r"\bcatch\s*(?:\([^()]*\))?\s*\{\s*$")


def _swallowed_exceptions(cf: ChangedFile) -> Iterator[Hit]:
    """``except Exception: pass`` and empty ``catch`` blocks, with no comment saying why.

    The handler line itself may be context: an added ``pass`` that empties an existing handler
    counts too (the finding then sits on the added part only).
    """
    near = {n - k for n in cf.added for k in (1, 2, 3)} & cf.lines.keys()
    for n in sorted(near | cf.added.keys()):
        code = cf.code.get(n, "")
        if cf.comments.get(n):
            continue
        if cf.language == PYTHON:
            m = _PY_EXCEPT.match(code)
            if not m:
                continue
            if m.group(2):
                yield Hit(n, n, code.strip())
                continue
            body = list(cf.next_lines(n, 6))
            if not body or not re.fullmatch(r"\s*(pass|\.\.\.)\s*", cf.lines[body[0]]):
                continue
            indent = len(m.group(1))
            if len(cf.lines[body[0]]) - len(cf.lines[body[0]].lstrip()) <= indent:
                continue
            after = next(cf.next_lines(body[0]), None)
            if after is None and cf.text is None:
                continue  # the block might go on past what the hunk shows
            if after is not None and len(cf.lines[after]) - len(cf.lines[after].lstrip()) > indent:
                continue
            yield Hit(n, body[0], code.strip())
        else:
            m = _C_CATCH_EMPTY.search(code)
            if m:
                yield Hit(n, n, m.group())
                continue
            m = _C_CATCH_OPEN.search(code)
            if not m:
                continue
            body = list(cf.next_lines(n, 3))
            closes = body and cf.code.get(body[0], "").strip().startswith("}")
            if closes and not cf.comments.get(body[0]):
                yield Hit(n, body[0], m.group())


_PY_CODE_COMMENT = re.compile(
    r"^(import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|return\b|raise \w|yield\b"
    r"|(if|elif|while|with) .+:$|else:$|try:$|finally:$|except\b.*:$|for \w.* in .+:$"
    r"|print\(|self\.\w+|[\w.\[\]'\"]+\s*(=|\+=|-=|\*=)\s*\S|[\w.]+\(.*\)$|pass$|break$|continue$)"
)
_C_CODE_COMMENT = re.compile(
    r"^(.*[;{]$|\}.*$|(if|for|while|switch|catch)\s*\(.*|return\b.*;$|(const|let|var|import|export"
    r"|public|private|protected|static|final|using|await)\s.*[;({=]$)"
)
_PROSE = re.compile(r"\b[A-Za-z]+,? [A-Za-z]+ [A-Za-z]+ [A-Za-z]+ [A-Za-z]+\b|https?://|\b(TODO|FIXME|NOTE)\b")


_DIRECTIVE = re.compile(r"(type|noqa|pragma|pylint|eslint|@ts-|prettier-|istanbul|c8)\b")


def _comment_body(cf: ChangedFile, n: int) -> str | None:
    """The text of a line that is nothing but a ``#`` or ``//`` comment, else None."""
    if cf.code.get(n, "").strip() or n in cf.continued:
        return None
    m = re.match(r"\s*(#|//)(?!/|!|\s*-\*-)\s?(.*)$", cf.comments.get(n, ""))
    return m.group(2).strip() if m else None


def _looks_like_code(body: str, language: str) -> bool:
    if not body or _PROSE.search(body) or _DIRECTIVE.match(body):
        return False
    pattern = _PY_CODE_COMMENT if language in (PYTHON, HASH) else _C_CODE_COMMENT
    return bool(pattern.match(body))


def _commented_out_code(cf: ChangedFile) -> Iterator[Hit]:
    """Two or more consecutive added comment lines that read as code, not prose."""
    block: list[int] = []
    for n in sorted(cf.added) + [0]:
        body = _comment_body(cf, n) if n else None
        code_like = body is not None and _looks_like_code(body, cf.language)
        if code_like and (not block or n == block[-1] + 1):
            block.append(n)
            continue
        if len(block) >= 2:
            yield Hit(block[0], block[-1], _comment_body(cf, block[0]) or "")
        block = [n] if code_like else []


def _blocking_wait(m: re.Match, cf: ChangedFile, n: int) -> bool:
    return "await " not in cf.code.get(n, "")[: m.start()]


# --- the table -------------------------------------------------------------------------------

_DEBUG_WHY = (
    "it bypasses the project's logging and ends up in production output; use the logger or "
    "remove it."
)

RULES: tuple[Rule, ...] = (
    Rule("debug-print", _langs(PYTHON), "E.3.1", "Minor", 0.55,
         "Leftover debug print `{m}`: " + _DEBUG_WHY,
         _rx(r"^\s*print\("), in_auxiliary=False, applies=_python_not_cli,
         accept=_python_print_is_debug),
    Rule("debug-print", JS_TS, "E.3.1", "Minor", 0.5,
         "Leftover debug logging `{m}`: " + _DEBUG_WHY,
         _rx(r"\bconsole\.(log|debug|trace|dir|table)\s*\("), in_auxiliary=False,
         applies=_js_not_cli),
    Rule("debug-print", _langs(JAVA), "E.3.1", "Minor", 0.55,
         "Leftover console output `{m}`: " + _DEBUG_WHY,
         _rx(r"\bSystem\.(out|err)\.print(ln|f)?\s*\("), in_auxiliary=False,
         applies=_java_not_main),
    Rule("debug-print", _langs(CSHARP), "E.3.1", "Minor", 0.5,
         "Leftover console output `{m}` in library code: " + _DEBUG_WHY,
         _rx(r"\bConsole\.(Write|WriteLine)\s*\("), in_auxiliary=False, applies=_csharp_not_main),
    Rule("print-stack-trace", _langs(JAVA), "F.4", "Minor", 0.55,
         "`{m}` dumps the error to stderr and carries on: log it through the logger or propagate "
         "it so the failure is handled.",
         _rx(r"\.printStackTrace\(\s*\)")),
    Rule("debugger-statement", JS_TS, "E.3.1", "Major", 0.9,
         "A `debugger;` statement was left in: it pauses execution whenever dev tools are open.",
         _rx(r"(?<![\w.$])debugger\s*(;|$)"), in_tests=True),
    Rule("debugger-statement", _langs(PYTHON), "E.3.1", "Major", 0.9,
         "A breakpoint was left in (`{m}`): it stops the program waiting for a debugger.",
         _rx(r"(?<![\w.])(breakpoint\(\)|i?pdb\.set_trace\(\)|import\s+i?pdb\b)"), in_tests=True),
    Rule("debugger-statement", _langs(CSHARP), "E.3.1", "Major", 0.85,
         "A `Debugger.Break()` was left in: it stops the program whenever a debugger is attached.",
         _rx(r"\bDebugger\.Break\(\s*\)"), in_tests=True),
    Rule("todo-comment", CODE_LANGUAGES | {MARKUP}, "E.3.1", "Minor", 0.45,
         "New TODO-style comment `{m}`: unfinished work is being merged; finish it in this PR or "
         "track it in an issue.",
         _rx(r"\b(TODO|FIXME|XXX|HACK)\b.*|(?i:@todo\b|\btodo\s*:).*"), view="comment",
         in_tests=True),
    Rule("hardcoded-secret", CODE_LANGUAGES | {TEXT}, "F.7", "Major", 0.6,
         "A credential is hard-coded in a string literal: anyone with the source has it, and "
         "rotating it means a release; read it from the environment or a secret store.",
         _SECRET_ASSIGNMENT, view="raw", applies=_not_example_file, accept=_secret_value),
    Rule("private-key", ALL_LANGUAGES, "F.7", "Critical", 0.85,
         "A private key is committed to the repository; it must be revoked and kept out of source "
         "control.",
         _rx(r"-----BEGIN (RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----"),
         view="raw", in_tests=True),
    Rule("cloud-key", ALL_LANGUAGES, "F.7", "Critical", 0.8,
         "A string shaped like a live access key is committed; revoke it and load it from a secret "
         "store.",
         _rx(r"\b(AKIA|ASIA)(?!IOSFODNN7EXAMPLE)[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{36}\b"
             r"|\bxox[baprs]-[0-9A-Za-z-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b|\bsk_live_[0-9A-Za-z]{20,}"),
         view="raw", in_tests=True),
    Rule("swallowed-exception", _langs(PYTHON, JAVA, JAVASCRIPT, TYPESCRIPT, CSHARP, CLIKE),
         "F.4", "Normal", 0.65,
         "The exception is swallowed (`{m}` with an empty body): failures vanish silently; "
         "handle, log or re-raise it, or say in a comment why it is safe to ignore.",
         check=_swallowed_exceptions),
    Rule("commented-out-code", _langs(PYTHON, JAVA, JAVASCRIPT, TYPESCRIPT, CSHARP, CLIKE, HASH),
         "E.3.1", "Minor", 0.45,
         "Commented-out code is being added (`{m}` ...): dead code confuses readers; delete it "
         "(version control keeps it).",
         check=_commented_out_code, in_tests=True),
    Rule("loose-equality", _langs(JAVASCRIPT, TYPESCRIPT), "F.2", "Minor", 0.4,
         "Loose equality in `{m}` coerces types before comparing and can match unexpected "
         "values; use `===` / `!==`.",
         _rx(r"(?<![=!<>])(==|!=)(?!=)"), accept=_loose_equality),
    Rule("ts-any", _langs(TYPESCRIPT), "F.2", "Minor", 0.4,
         "`any` in `{m}` turns off type checking for this value; give it a real type (or "
         "`unknown` and narrow it).",
         _rx(r":\s*any\b(?![\w$])|\bas\s+any\b|<any>|\bany\[\]"), applies=_not_declaration_file),
    Rule("ts-ignore", _langs(TYPESCRIPT, JAVASCRIPT), "F.2", "Minor", 0.55,
         "`{m}` silences every type error on the next line, including future ones; fix the "
         "type or use `@ts-expect-error` with a reason.",
         _rx(r"@ts-(ignore|nocheck)\b"), view="comment"),
    Rule("blanket-suppression", _langs(PYTHON), "E.3.2", "Minor", 0.45,
         "A blanket suppression in `{m}` silences every diagnostic on the line; name the "
         "specific code.",
         _rx(r"#\s*(noqa\b(?!\s*:)|type:\s*ignore\b(?!\s*\[))"), view="comment"),
    Rule("blanket-suppression", JS_TS, "E.3.2", "Minor", 0.45,
         "`{m}` names no rule, so it turns off every lint rule; name the specific rule.",
         _rx(r"eslint-disable(-next-line|-line)?\s*(\*/)?\s*$"), view="comment"),
    Rule("java-string-identity", _langs(JAVA), "F.2", "Major", 0.8,
         "Strings are compared with `==`/`!=` in `{m}`, which tests reference identity, not "
         "content; use `equals()`.",
         _rx(r"\"\"\s*[!=]=(?!=)|(?<![=!<>])[!=]=\s*\"\"")),
    Rule("async-void", _langs(CSHARP), "F.2", "Normal", 0.6,
         "An `async void` method (`{m}`) cannot be awaited and its exceptions crash the process; "
         "return `Task` unless this is an event handler.",
         _rx(r"\basync\s+void\s+(\w+)\s*\(([^)]*)"), accept=_async_void_not_handler),
    Rule("blocking-wait", _langs(CSHARP), "F.2", "Normal", 0.55,
         "Blocking on a task in `{m}` can deadlock under a synchronization context and wastes a "
         "thread; `await` it instead.",
         _rx(r"(?:Async\([^;]*?\)|\b\w*[Tt]ask\w*)\s*\.\s*(?:Result\b(?!\s*=(?!=))|Wait\(\s*\)"
             r"|GetAwaiter\(\s*\)\s*\.\s*GetResult\(\s*\))|\bTask\.WaitAll\("),
         accept=_blocking_wait),
    Rule("literal-sleep", _langs(PYTHON), "F.6", "Minor", 0.35,
         "A fixed sleep in `{m}` stalls the caller and usually papers over a race; wait on the "
         "actual condition or make the delay configurable.",
         _rx(r"\btime\.sleep\(\s*[\d.]+\s*\)")),
    Rule("literal-sleep", _langs(JAVA, CSHARP), "F.6", "Minor", 0.35,
         "A fixed sleep in `{m}` stalls the thread and usually papers over a race; wait on the "
         "actual condition or make the delay configurable.",
         _rx(r"\bThread\.[sS]leep\(\s*\d+[lL]?\s*\)")),
    Rule("eval", _langs(PYTHON), "F.7", "Major", 0.6,
         "`{m}` runs arbitrary code: if any part of the input is user-controlled this is code "
         "injection; use a parser (e.g. `ast.literal_eval`) or explicit dispatch.",
         _rx(r"(?<![\w.])(eval|exec)\(")),
    Rule("eval", JS_TS, "F.7", "Major", 0.6,
         "`{m}` runs arbitrary code: if any part of the input is user-controlled this is code "
         "injection; use `JSON.parse` or explicit dispatch.",
         _rx(r"(?<![\w.$])eval\(|\bnew\s+Function\(")),
    Rule("inner-html", JS_TS, "F.7", "Normal", 0.45,
         "Markup built from values is injected as HTML in `{m}`: unescaped data here is an XSS "
         "hole; use `textContent` or escape the values.",
         _rx(r"\.(innerHTML|outerHTML)\s*\+?=(?!=)|\binsertAdjacentHTML\(|\bdocument\.write\("),
         accept=_inner_html_dynamic),
    Rule("sql-concatenation", _langs(PYTHON, JAVA, JAVASCRIPT, TYPESCRIPT, CSHARP), "F.7", "Major",
         0.5,
         "SQL is built by pasting values into the query string in `{m}`: this invites SQL "
         "injection; use bound parameters.",
         _SQL_STRING, view="raw", accept=_sql_built_from_values),
    Rule("assert-validation", _langs(PYTHON), "F.4", "Minor", 0.25,
         "`{m}` checks a runtime condition in non-test code, but asserts are stripped under "
         "`python -O`; raise a proper exception instead.",
         _rx(r"^\s*assert\b"), in_auxiliary=False, accept=_assert_is_validation),
)


# --------------------------------------------------------------------------------------------
# ruff
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuffRule:
    """How one ruff diagnostic code is reported: MCR type, severity, confidence, and why."""

    type: str
    severity: str
    confidence: float
    why: str
    in_tests: bool = True
    accept: Callable[[ChangedFile, int, str], bool] | None = None  # (file, line, ruff message)


def _really_unused(cf: ChangedFile, n: int, message: str) -> bool:
    """F401, except re-exports in ``__init__.py`` and names used only in ``# type:`` comments."""
    if PurePosixPath(cf.path).name == "__init__.py":
        return False
    m = re.search(r"`([\w.]+)(?: as (\w+))?` imported but unused", message)
    if not m:
        return True
    name = m.group(2) or m.group(1).rsplit(".", 1)[-1]
    return not re.search(rf"#\s*type:.*\b{re.escape(name)}\b", cf.head)


def _line_has_secret(cf: ChangedFile, n: int, message: str) -> bool:
    return any(looks_secret(m.group(2)) for m in _STRING_LITERAL.finditer(cf.lines.get(n, "")))


_UNUSED = "Dead code misleads readers and hides what the change really needs."
_FORMAT = "The format string and its arguments do not match, which fails or prints the wrong text."
_PLE = "Python rejects or misbehaves on this at runtime."
_R = RuffRule
RUFF_RULES: dict[str, RuffRule] = {
    "F401": _R("E.3.1", "Minor", 0.7, _UNUSED, accept=_really_unused),
    "F811": _R("E.3.1", "Minor", 0.6, "The first definition is dead and the second one silently "
               "wins.", in_tests=False),
    "F841": _R("E.3.1", "Minor", 0.65, _UNUSED),
    "F402": _R("F.2", "Minor", 0.5, "The loop variable shadows the import, so later uses get the "
               "wrong object."),
    "F821": _R("F.2", "Major", 0.8, "This raises NameError when the line runs."),
    "F822": _R("F.1", "Major", 0.8, "`from module import *` will fail on this name."),
    "F823": _R("F.2", "Major", 0.8, "This raises UnboundLocalError when the line runs."),
    "F632": _R("F.2", "Major", 0.8, "`is` compares identity; with a literal the result depends on "
               "interning. Use `==`."),
    "F601": _R("F.2", "Normal", 0.7, "The later value silently overwrites the earlier one."),
    "F602": _R("F.2", "Normal", 0.7, "The later value silently overwrites the earlier one."),
    **{code: _R("F.2", "Normal", 0.7, _FORMAT) for code in (
        "F501", "F502", "F503", "F504", "F505", "F506", "F507", "F508", "F509",
        "F521", "F522", "F523", "F524", "F525")},
    "F541": _R("E.3.1", "Trivial", 0.45, "The `f` prefix does nothing here; drop it (or add the "
               "missing placeholder)."),
    "F631": _R("F.4", "Major", 0.8, "A non-empty tuple is always true, so this assert never "
               "fails."),
    **{code: _R("F.2", "Major", 0.8, _PLE) for code in ("F701", "F702", "F704", "F706", "F707")},
    "E721": _R("E.3.2", "Minor", 0.4, "Use `isinstance()` (or `is` for exact types)."),
    "E722": _R("F.4", "Normal", 0.6, "A bare `except:` also catches KeyboardInterrupt and "
               "SystemExit and hides real errors; catch the exceptions you expect."),
    "BLE001": _R("F.4", "Minor", 0.3, "Catching every exception hides unexpected errors; catch "
                 "the specific ones this code can handle.", in_tests=False),
    "B002": _R("F.2", "Major", 0.8, "Python has no `++`: this is two unary plus signs."),
    "B003": _R("F.2", "Normal", 0.6, "Rebinding `os.environ` does not change the process "
               "environment."),
    "B004": _R("F.2", "Minor", 0.5, "`hasattr(x, '__call__')` is unreliable; use `callable(x)`."),
    "B005": _R("F.2", "Normal", 0.6, "`strip` with a multi-character string strips a character "
               "set, not a prefix/suffix."),
    "B006": _R("F.2", "Normal", 0.7, "The default is created once and shared between calls, so "
               "mutations leak across calls; default to None."),
    "B011": _R("F.4", "Normal", 0.6, "`assert False` is removed under `python -O`; raise "
               "AssertionError instead."),
    "B012": _R("F.2", "Major", 0.7, "A jump in `finally` swallows any exception in flight."),
    "B014": _R("E.3.1", "Minor", 0.5, "The except clause names redundant exception types."),
    "B015": _R("F.2", "Normal", 0.6, "The comparison result is discarded; an `assert` is probably "
               "missing."),
    "B016": _R("F.2", "Normal", 0.7, "Raising a literal is a TypeError."),
    "B017": _R("E.4", "Minor", 0.5, "Expecting any Exception lets the test pass for the wrong "
               "reason; expect the specific exception."),
    "B018": _R("F.2", "Minor", 0.5, "The expression's value is discarded; it does nothing.",
               in_tests=False),
    "B019": _R("F.3", "Minor", 0.5, "Caching a method keeps every `self` alive for the life of "
               "the cache."),
    "B020": _R("F.2", "Normal", 0.6, "The loop variable overwrites the iterable it loops over."),
    "B021": _R("E.1.2", "Minor", 0.6, "An f-string is not a docstring; it is just an expression."),
    "B022": _R("E.3.1", "Trivial", 0.5, "`contextlib.suppress()` without exceptions does nothing."),
    "B023": _R("F.2", "Normal", 0.5, "The closure sees the loop variable's last value, not the "
               "one at definition time."),
    "B025": _R("F.2", "Minor", 0.6, "The second handler for the same exception never runs."),
    "B029": _R("F.4", "Normal", 0.7, "`except ()` catches nothing."),
    "B030": _R("F.4", "Major", 0.7, "Except handlers must name exception classes."),
    "B031": _R("F.2", "Normal", 0.6, "The group iterator is exhausted after its first use."),
    "B032": _R("F.2", "Normal", 0.7, "This is an annotation, not an assignment or comparison."),
    "B033": _R("F.2", "Minor", 0.6, "The set literal repeats an item."),
    "B034": _R("F.2", "Minor", 0.5, "Pass `count`/`flags` by keyword; positionally they are "
               "easily swapped."),
    "B035": _R("F.2", "Normal", 0.6, "The dict comprehension uses a constant key, so it keeps "
               "only one item."),
    "B039": _R("F.2", "Normal", 0.6, "The mutable default is shared by every context."),
    "B904": _R("F.4", "Minor", 0.35, "Raise with `from err` (or `from None`) so the original "
               "cause is kept in the traceback."),
    "S105": _R("F.7", "Major", 0.55, "Hard-coded credentials leak with the source; load them from "
               "the environment or a secret store.", in_tests=False, accept=_line_has_secret),
    "S106": _R("F.7", "Major", 0.55, "Hard-coded credentials leak with the source; load them from "
               "the environment or a secret store.", in_tests=False, accept=_line_has_secret),
    "S107": _R("F.7", "Major", 0.5, "Hard-coded credentials leak with the source; load them from "
               "the environment or a secret store.", in_tests=False, accept=_line_has_secret),
    "S113": _R("F.3", "Minor", 0.5, "Without a timeout the request can hang forever.",
               in_tests=False),
    "S501": _R("F.7", "Major", 0.7, "Turning off certificate checks allows man-in-the-middle "
               "attacks.", in_tests=False),
    "S506": _R("F.7", "Major", 0.7, "`yaml.load` without SafeLoader can construct arbitrary "
               "objects; use `yaml.safe_load`.", in_tests=False),
    "S602": _R("F.7", "Normal", 0.5, "`shell=True` lets shell metacharacters in arguments run "
               "commands; pass an argument list.", in_tests=False),
    "S605": _R("F.7", "Normal", 0.4, "Starting a process through the shell allows command "
               "injection; use subprocess with a list.", in_tests=False),
    "S608": _R("F.7", "Major", 0.45, "Building SQL from strings invites injection; use bound "
               "parameters.", in_tests=False),
    **{code: _R("F.2", "Normal", 0.6, _PLE) for code in (
        "PLE0100", "PLE0101", "PLE0115", "PLE0116", "PLE0117", "PLE0118", "PLE0237", "PLE0241",
        "PLE0302", "PLE0303", "PLE0304", "PLE0305", "PLE0307", "PLE0308", "PLE0309", "PLE0604",
        "PLE0605", "PLE0643", "PLE0704", "PLE1132", "PLE1141", "PLE1142", "PLE1300", "PLE1307",
        "PLE1310", "PLE1507", "PLE1519", "PLE1520", "PLE1700", "PLE4703")},
    "PLE1205": _R("F.2", "Minor", 0.6, "The logging call's arguments do not match its format "
                  "string, so the message is lost."),
    "PLE1206": _R("F.2", "Minor", 0.6, "The logging call's arguments do not match its format "
                  "string, so the message is lost."),
    "PLE2502": _R("F.7", "Major", 0.8, "Bidirectional control characters can make code read "
                  "differently from how it runs."),
    "PLW0120": _R("F.2", "Minor", 0.5, "The loop has no `break`, so its `else` always runs."),
    "PLW0127": _R("F.2", "Normal", 0.6, "Assigning a variable to itself does nothing; a different "
                  "target was probably meant."),
    "PLW0128": _R("F.2", "Minor", 0.6, "The same name is assigned twice in one statement."),
    "PLW0129": _R("F.4", "Normal", 0.7, "A non-empty string is always true, so this assert never "
                  "fails."),
    "PLW0133": _R("F.2", "Major", 0.8, "The exception is created but never raised."),
    "PLW0177": _R("F.2", "Normal", 0.7, "Comparisons with NaN are always false; use "
                  "`math.isnan`."),
    "PLW0245": _R("F.2", "Major", 0.8, "`super` without parentheses is the builtin, not the "
                  "parent class."),
    "PLW0602": _R("E.3.1", "Minor", 0.5, "The `global` statement is unnecessary: the name is "
                  "never assigned."),
    "PLW0603": _R("E.3.2", "Minor", 0.3, "Mutating module globals makes the code hard to test "
                  "and reason about.", in_tests=False),
    "PLW0642": _R("F.2", "Normal", 0.6, "Reassigning `self`/`cls` only rebinds a local name."),
    "PLW0711": _R("F.4", "Major", 0.8, "`except A or B` catches only A; use a tuple."),
    "PLW1501": _R("F.2", "Major", 0.7, "The file mode is invalid and `open` will raise."),
    "PLW1507": _R("F.2", "Normal", 0.6, "A shallow copy of `os.environ` is still `os.environ`'s "
                  "type and behaviour; use `os.environ.copy()`."),
    "PLW1508": _R("F.2", "Normal", 0.6, "Environment variable defaults must be strings."),
    "PLW2101": _R("F.2", "Normal", 0.7, "The lock is created inside `with`, so nothing is "
                  "actually locked."),
    "PLW2901": _R("E.3.1", "Minor", 0.35, "Overwriting the loop variable inside the loop is "
                  "confusing and error-prone.", in_tests=False),
    "RUF006": _R("F.2", "Normal", 0.6, "The task may be garbage-collected before it finishes; "
                 "keep a reference to it."),
    "RUF018": _R("F.2", "Major", 0.7, "The assignment disappears under `python -O`."),
    "RUF024": _R("F.2", "Normal", 0.7, "Every key shares the same mutable value."),
    "RUF027": _R("F.2", "Normal", 0.45, "The string has `{name}` placeholders but no `f` prefix, "
                 "so users see the braces literally."),
    "ASYNC210": _R("F.6", "Normal", 0.5, "A blocking HTTP call inside `async` code stalls the "
                   "event loop."),
    "ASYNC230": _R("F.6", "Minor", 0.35, "Blocking file I/O inside `async` code stalls the "
                   "event loop."),
    "ASYNC251": _R("F.6", "Normal", 0.6, "`time.sleep` inside `async` code stalls the event "
                   "loop; use `await asyncio.sleep`."),
    "SIM115": _R("F.3", "Minor", 0.5, "The file is opened outside a `with` block, so it leaks if "
                 "an exception happens before `close()`."),
    "PIE794": _R("F.2", "Minor", 0.6, "The class field is defined twice; the first is dead."),
    "PIE796": _R("F.2", "Normal", 0.6, "Enum members share a value, so one is an alias of "
                 "the other."),
}
RUFF_SYNTAX = _R("F.2", "Major", 0.7, "The file no longer parses.")

_ruff_unknown: set[str] = set()  # codes this ruff rejected as unknown selectors


def find_ruff() -> str | None:
    """The ruff executable next to the running interpreter, else on PATH, else None."""
    local = Path(sys.executable).parent / ("ruff.exe" if os.name == "nt" else "ruff")
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("ruff")


def _ruff_hits(ruff: str, targets: list[ChangedFile]) -> Iterator[tuple[ChangedFile, dict]]:
    """Run ruff once on the head text of the given Python files; yield (file, diagnostic)."""
    with tempfile.TemporaryDirectory(prefix="roundwise-ruff-") as tmp:
        root = os.path.realpath(tmp)
        by_file: dict[str, ChangedFile] = {}
        for i, cf in enumerate(targets):
            rel = PurePosixPath(cf.path)
            if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                rel = PurePosixPath(f"_{i}", rel.name or "file.py")
            dest = os.path.join(root, *rel.parts)
            if os.path.realpath(dest) in by_file:
                dest = os.path.join(root, f"_{i}", rel.name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8", errors="replace", newline="") as fh:
                fh.write(cf.text)
            by_file[os.path.realpath(dest)] = cf
        for _ in range(5):  # drop selectors an older ruff does not know, then retry
            codes = [c for c in RUFF_RULES if c not in _ruff_unknown]
            cmd = [ruff, "check", "--output-format", "json", "--no-cache", "--isolated",
                   "--preview", "--exit-zero", "--target-version", "py312",
                   "--select", ",".join(codes), *by_file]
            try:
                proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False,
                                      timeout=RUFF_TIMEOUT, encoding="utf-8", errors="replace")
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("offline review: ruff did not run (%s)", exc)
                return
            unknown = re.findall(r"[Uu]nknown rule selector:? `?(\w+)`?", proc.stderr or "")
            if proc.returncode == 2 and unknown and not set(unknown) <= _ruff_unknown:
                _ruff_unknown.update(unknown)
                continue
            break
        try:
            diagnostics = json.loads(proc.stdout or "[]")
        except ValueError:
            log.warning("offline review: ruff gave no JSON (rc=%s): %s", proc.returncode,
                        (proc.stderr or "")[:300])
            return
        for d in diagnostics if isinstance(diagnostics, list) else []:
            cf = by_file.get(os.path.realpath(str(d.get("filename", ""))))
            if cf is not None:
                yield cf, d


def _ruff_findings(
    ruff: str, files: list[ChangedFile]
) -> Iterator[tuple[ChangedFile, Hit, str, RuffRule, str]]:
    """Ruff's diagnostics on added lines of changed Python files, with the rule that maps them."""
    targets = [cf for cf in files if cf.language == PYTHON and cf.text is not None
               and cf.path.endswith((".py", ".pyw"))]
    if not targets:
        return
    diagnostics: dict[str, list[tuple[ChangedFile, dict]]] = {}
    for cf, d in _ruff_hits(ruff, targets):
        diagnostics.setdefault(cf.path, []).append((cf, d))
    for items in diagnostics.values():
        # A file that fails to parse on lines this PR did not add is not valid Python 3 to
        # begin with (Python 2, a template): its syntax errors say nothing about the change.
        syntax_rows = [(d.get("location") or {}).get("row") for _, d in items if not d.get("code")]
        trust_syntax = all(row in items[0][0].added for row in syntax_rows)
        for cf, d in items:
            code = d.get("code")
            start = (d.get("location") or {}).get("row")
            end = (d.get("end_location") or {}).get("row") or start
            if not isinstance(start, int) or start not in cf.added:
                continue
            if code:
                rule = RUFF_RULES.get(code)
                rule_id = f"ruff:{code}"
            else:
                rule, rule_id = (RUFF_SYNTAX if trust_syntax else None), "ruff:syntax"
            if rule is None or (cf.is_test and not rule.in_tests):
                continue
            message = str(d.get("message") or "").strip().rstrip(".")
            if rule.accept is not None and not rule.accept(cf, start, message):
                continue
            end = max(start, end if isinstance(end, int) else start)
            yield cf, Hit(start, end), rule_id, rule, message


# --------------------------------------------------------------------------------------------
# E.4: source changed, no test changed
# --------------------------------------------------------------------------------------------

_NOT_SOURCE = re.compile(r"(^|/)(setup|conftest|noxfile|manage|conf)\.py$|\.config\.[cm]?[jt]s$"
                         r"|(^|/)(gulpfile|gruntfile|webpack[\w.-]*|rollup[\w.-]*|vite[\w.-]*)\.[jt]s$",
                         re.IGNORECASE)


_DEFINITION = {
    PYTHON: _rx(r"^\s*(async\s+def|def|class)\s+[A-Za-z_]\w*"),
    JAVASCRIPT: _rx(r"^\s*(export\s+)?(default\s+)?(async\s+)?(function\b|class\s+\w+)|"
                    r"^\s*(export\s+)?(const|let)\s+\w+\s*=\s*(async\s+)?(\(|\w+\s*=>|function)|"
                    r"^\s*(async\s+)?(static\s+)?[A-Za-z_$][\w$]*\s*\([^)]*\)\s*\{"),
    JAVA: _rx(r"^\s*((public|private|protected|static|final|abstract|synchronized)\s+)+"
              r"[\w<>\[\],.?\s]*\b\w+\s*\(|^\s*(public\s+)?(final\s+)?(class|interface|record"
              r"|enum)\s+\w+"),
    CSHARP: _rx(r"^\s*((public|private|protected|internal|static|async|override|virtual|"
                r"sealed|abstract)\s+)+[\w<>\[\],.?\s]*\b\w+\s*\(|^\s*((public|internal)\s+)?"
                r"(static\s+|sealed\s+|partial\s+)*(class|interface|record|struct)\s+\w+"),
}
_DEFINITION[TYPESCRIPT] = _DEFINITION[JAVASCRIPT]
MIN_UNTESTED_LINES = 10  # less new code than this is not worth asking for tests


def _missing_tests(files: list[ChangedFile], touched: list[str]) -> Finding | None:
    """One E.4 finding when source files gain new behaviour but no test file is touched.

    New behaviour means a new function, method or class with at least MIN_UNTESTED_LINES
    added code lines in that file; edits inside existing code are not flagged, which is what
    keeps this check from firing on every pull request.
    """
    if any(is_test_path(p) for p in touched):
        return None
    sources = []
    for cf in files:
        if (cf.language not in SOURCE_LANGUAGES or cf.is_test or is_auxiliary_path(cf.path)
                or _NOT_SOURCE.search(cf.path)):
            continue
        code_lines = [n for n in cf.added if cf.code_line(n)]
        pattern = _DEFINITION[cf.language]
        definitions = [n for n in code_lines if pattern.search(cf.code.get(n, ""))]
        if definitions and len(code_lines) >= MIN_UNTESTED_LINES:
            sources.append((-len(code_lines), cf.path, min(definitions), cf))
    if not sources:
        return None
    sources.sort(key=lambda s: s[:3])
    _, path, first, cf = sources[0]
    others = len(sources) - 1
    more = f" and {others} other source file{'s' if others > 1 else ''}" if others else ""
    return Finding(
        description=f"This change adds new code to `{path}`{more} but adds or updates no test, "
        "so the new behaviour is unverified and can regress unnoticed; add tests that cover it.",
        path=path, line_start=first, line_end=first, type="E.4", severity="Minor",
        confidence=0.3, rule="missing-tests", origin=Origin.BOT,
    )


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


# Rule -> rules whose findings it makes redundant on overlapping lines (the same problem seen
# twice, e.g. ruff's bare-except on the handler our swallowed-exception already reports).
SUPERSEDES: dict[str, frozenset[str]] = {
    "swallowed-exception": frozenset({"ruff:E722", "ruff:BLE001"}),
    "hardcoded-secret": frozenset({"ruff:S105", "ruff:S106", "ruff:S107"}),
    "cloud-key": frozenset({"hardcoded-secret", "ruff:S105", "ruff:S106", "ruff:S107"}),
    "private-key": frozenset({"hardcoded-secret"}),
    "sql-concatenation": frozenset({"ruff:S608"}),
    "ruff:ASYNC251": frozenset({"literal-sleep"}),
    "ruff:B011": frozenset({"assert-validation"}),
}


def _drop_duplicates(found: list[Finding]) -> list[Finding]:
    """Drop findings another rule already reports on overlapping lines (see ``SUPERSEDES``)."""
    by_path: dict[str | None, list[Finding]] = {}
    for f in found:
        by_path.setdefault(f.path, []).append(f)

    def covered(f: Finding) -> bool:
        return any(
            f.rule in SUPERSEDES.get(g.rule or "", ())
            and g.line_start <= f.line_end and f.line_start <= g.line_end
            for g in by_path[f.path]
            if g is not f and g.line_start is not None and f.line_start is not None
        )

    return [f for f in found if not covered(f)]


def _clip(hit: Hit, added: dict[int, str]) -> tuple[int, int] | None:
    """The run of added lines a hit may be reported on: from its first added line onwards."""
    start = next((n for n in range(hit.start, hit.end + 1) if n in added), None)
    if start is None:
        return None
    end = start
    while end + 1 <= hit.end and end + 1 in added:
        end += 1
    return start, end


def _ignored(path: str, globs: Iterable[str]) -> bool:
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatchcase(path, g) or ("/" not in g and fnmatch.fnmatchcase(name, g))
               for g in globs)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split()).replace("`", "'")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def review_offline(
    diff: str,
    files: dict[str, str | None],
    *,
    ignore_paths: Iterable[str] = (),
    max_findings: int | None = None,
    use_ruff: bool = True,
) -> list[Finding]:
    """Review one round without an LLM: static checks on the lines the diff adds.

    ``diff`` is the PR's unified diff (git format, base..head); ``files`` the full head text of
    each changed file (None when deleted). Findings carry right-side line numbers that are all
    added lines, a stable ``rule`` id (``debug-print``, ``ruff:F401``...), ``origin`` bot, and
    the rule's MCR type, severity and confidence. ``ignore_paths`` are fnmatch globs (a glob
    without ``/`` also matches the file name alone). With ``max_findings`` the most severe and
    most confident findings are kept. ``use_ruff=False`` skips ruff even when it is installed.
    The result is sorted by path, line and rule, and the same input always gives the same output.
    """
    ignore = list(ignore_paths or ())
    changed, touched = _changed_files(diff, files if isinstance(files, dict) else {})
    changed = [
        cf for cf in changed
        if not _ignored(cf.path, ignore)
        and not is_generated_path(cf.path, cf.head if 1 in cf.lines else None)
    ]
    found: list[Finding] = []
    per_rule: dict[tuple[str, str], int] = {}

    def add(cf: ChangedFile, hit: Hit, rule_id: str, type_: str, severity: str,
            confidence: float, description: str) -> None:
        span = _clip(hit, cf.added)
        key = (cf.path, rule_id)
        if span is None or per_rule.get(key, 0) >= MAX_PER_RULE_PER_FILE:
            return
        per_rule[key] = per_rule.get(key, 0) + 1
        found.append(Finding(description=description, path=cf.path, line_start=span[0],
                             line_end=span[1], type=type_, severity=severity,
                             confidence=confidence, rule=rule_id, origin=Origin.BOT))

    for cf in changed:
        for rule in RULES:
            if rule.relevant(cf):
                for hit in rule.find(cf):
                    add(cf, hit, rule.id, rule.type, rule.severity, rule.confidence,
                        rule.description.format(m=_short(hit.match)))
    ruff = find_ruff() if use_ruff else None
    if ruff:
        for cf, hit, rule_id, rr, message in _ruff_findings(ruff, changed):
            add(cf, hit, rule_id, rr.type, rr.severity, rr.confidence,
                f"{_short(message, 160)} ({rule_id}). {rr.why}")
    missing = _missing_tests(changed, [p for p in touched if not _ignored(p, ignore)])
    if missing is not None:
        found.append(missing)

    result = _drop_duplicates(found)
    if max_findings is not None:
        result.sort(key=lambda f: (-severity_rank(f.severity), -f.confidence, f.path or "",
                                   f.line_start or 0, f.rule or ""))
        result = result[: max(0, max_findings)]
    result.sort(key=lambda f: (f.path or "", f.line_start or 0, f.rule or "", f.line_end or 0,
                               f.description))
    return result
