"""The offline rules as data (``RULES``): a pattern, the languages and files it applies to,
an optional filter, and the MCR type, severity and confidence of what it finds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from .files import ChangedFile
from .languages import (
    ALL_LANGUAGES,
    CLIKE,
    CODE_LANGUAGES,
    CSHARP,
    HASH,
    JAVA,
    JAVASCRIPT,
    JS_TS,
    MARKUP,
    PYTHON,
    TEXT,
    TYPESCRIPT,
    is_auxiliary_path,
)
from .lexer import MAX_LINE


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
