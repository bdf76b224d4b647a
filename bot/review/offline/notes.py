"""E.4: source changed but no test changed (a tracked defect or a summary note, by setting).
"""

from __future__ import annotations

import re

from tracker.models import Finding, Origin
from tracker.paths import is_test_path

from .files import ChangedFile
from .languages import (
    CSHARP,
    JAVA,
    JAVASCRIPT,
    PYTHON,
    SOURCE_LANGUAGES,
    TYPESCRIPT,
    is_auxiliary_path,
)
from .rules import _rx

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
