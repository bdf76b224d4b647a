"""ruff on the changed Python files: a curated table of high-signal diagnostics (``RUFF_RULES``),
never style; run once per round on the files' head text.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .files import ChangedFile
from .languages import PYTHON
from .rules import (
    _STRING_LITERAL,
    Hit,
    looks_secret,
)
from .tempclean import prefix as scratch_prefix

log = logging.getLogger(__name__)

RUFF_TIMEOUT = 60

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


def _ruff_hits(ruff: str, targets: list[ChangedFile], ran: list | None = None
               ) -> Iterator[tuple[ChangedFile, dict]]:
    """Run ruff once on the head text of the given Python files; yield (file, diagnostic).
    ``ran`` (when given) gets ``True`` appended once ruff's answer was read: yielding nothing
    then means ruff found nothing, not that it failed."""
    with tempfile.TemporaryDirectory(prefix=scratch_prefix()) as tmp:
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
        if ran is not None and isinstance(diagnostics, list):
            ran.append(True)
        for d in diagnostics if isinstance(diagnostics, list) else []:
            cf = by_file.get(os.path.realpath(str(d.get("filename", ""))))
            if cf is not None:
                yield cf, d


def _ruff_findings(
    ruff: str, files: list[ChangedFile], ran: list | None = None
) -> Iterator[tuple[ChangedFile, Hit, str, RuffRule, str]]:
    """Ruff's diagnostics on added lines of changed Python files, with the rule that maps them."""
    targets = [cf for cf in files if cf.language == PYTHON and cf.text is not None
               and cf.path.endswith((".py", ".pyw"))]
    if not targets:
        return
    diagnostics: dict[str, list[tuple[ChangedFile, dict]]] = {}
    for cf, d in _ruff_hits(ruff, targets, ran):
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
