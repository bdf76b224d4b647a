"""What kind of file a path is: test code, generated or vendored code, documentation.

Shared by the decision rules (a "missing tests" defect is answered by test changes) and the
reviewers (test files get fewer rules). Plain string checks, no I/O.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_TEST_DIRS = {"test", "tests", "testing", "spec", "specs", "__tests__", "__test__", "test-d"}
_TEST_NAME = re.compile(
    r"(^test_.*\.py$|.*_test\.(py|go|rb)$|.*(Test|Tests|IT|Spec)\.(java|kt|cs|scala)$|"
    r".*\.(test|spec)\.(js|jsx|ts|tsx|mjs|cjs)$|^conftest\.py$)"
)
_GENERATED = re.compile(
    r"(\.min\.(js|css)$|(^|/)(package-lock\.json|yarn\.lock|pnpm-lock\.yaml|poetry\.lock|"
    r"Cargo\.lock|go\.sum|composer\.lock|Gemfile\.lock)$|(^|/)(vendor|node_modules|dist|build|"
    r"third_party|generated)/|\.designer\.cs$|\.g\.cs$|_pb2\.py$|\.pb\.go$)"
)
_DOCS = re.compile(r"(\.(md|rst|txt|adoc)$|(^|/)(docs?|changelog|changes)/)", re.IGNORECASE)


def is_test_path(path: str) -> bool:
    """Whether a file holds tests (by folder or by name, across common languages)."""
    parts = PurePosixPath(path).parts
    if any(p.lower() in _TEST_DIRS for p in parts[:-1]):
        return True
    return bool(_TEST_NAME.match(parts[-1] if parts else path))


def is_generated_path(path: str) -> bool:
    """Lock files, minified, vendored and generated code: not worth reviewing line by line."""
    return bool(_GENERATED.search(path))


def is_docs_path(path: str) -> bool:
    return bool(_DOCS.search(path))
