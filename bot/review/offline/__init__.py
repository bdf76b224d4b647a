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

The package follows those parts: ``languages``, ``lexer``, ``files`` (``ChangedFile``),
``rules`` (the table), ``ruff`` (with ``tempclean``, which removes the scratch folders of a
killed run) and ``notes`` (E.4); this module runs them on one round.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import PurePosixPath

import unidiff

from tracker.models import Finding, Origin, severity_rank
from tracker.paths import is_generated_path

from .files import ChangedFile, _changed_files
from .fixes import fix_for
from .lexer import lex
from .notes import _missing_tests
from .ruff import RUFF_RULES, _ruff_findings, find_ruff
from .rules import RULES, Hit

__all__ = [
    "RUFF_RULES",
    "RULES",
    "files",
    "find_ruff",
    "languages",
    "lex",
    "lexer",
    "notes",
    "recheck",
    "review_offline",
    "ruff",
    "rules",
    "tempclean",
]

MAX_PER_RULE_PER_FILE = 5  # the first few hits of one rule in one file are enough to act on

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
    patch: unidiff.PatchSet | None = None,
) -> list[Finding]:
    """Review one round without an LLM: static checks on the lines the diff adds.

    ``diff`` is the PR's unified diff (git format, base..head); ``files`` the full head text of
    each changed file (None when deleted). Findings carry right-side line numbers that are all
    added lines, a stable ``rule`` id (``debug-print``, ``ruff:F401``...), ``origin`` bot, and
    the rule's MCR type, severity and confidence. ``ignore_paths`` are fnmatch globs (a glob
    without ``/`` also matches the file name alone). With ``max_findings`` the most severe and
    most confident findings are kept. ``use_ruff=False`` skips ruff even when it is installed.
    The result is sorted by path, line and rule, and the same input always gives the same output.
    ``patch`` is ``diff`` already parsed (the round's shared parse), to save parsing it again.
    """
    ignore = list(ignore_paths or ())
    changed, touched = _changed_files(diff, files if isinstance(files, dict) else {},
                                      patch=patch)
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
                             confidence=confidence, rule=rule_id, origin=Origin.BOT,
                             fix=fix_for(rule_id, cf, span[0], span[1])))

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
