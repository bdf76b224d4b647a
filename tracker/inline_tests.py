"""Tests that live in the code's own file, by the conventions of the languages that do so.

``tracker.paths.is_test_path`` knows test *files*. Some languages keep unit tests beside the
code instead: Rust's ``#[cfg(test)] mod tests``, Zig's ``test "name" { ... }`` and D's
``unittest { ... }`` blocks, Python doctests (``>>>`` in a docstring), Elixir's ``iex>``
examples. A request for tests on such a file is answered there, so the rules read these lines
as test code too. Pure text functions, no I/O.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from .roundcache import per_text

_RUST_TESTS = re.compile(r"^\s*#\[cfg\(test\)\]")
_BLOCK_OPENS = {".zig": re.compile(r"^(\s*)test\b[^{]*\{\s*$"),
                ".d": re.compile(r"^(\s*)unittest\b[^{]*\{?\s*$")}
_PY_DOCTEST = re.compile(r"^\s*>>>\s")
_IEX = re.compile(r"^\s*(iex|\.\.\.)(\(\d+\))?>\s")
_DOCTEST = {".py": _PY_DOCTEST, ".pyi": _PY_DOCTEST, ".ex": _IEX, ".exs": _IEX}


@per_text(maxsize=64)
def inline_test_lines(path: str, text: str | None) -> frozenset[int]:
    """The 1-based lines of ``text`` (the file at ``path``) that are test code kept in the
    code's own file; empty for languages that keep tests apart."""
    if not text:
        return frozenset()
    suffix = PurePosixPath(path).suffix.lower()
    lines = text.split("\n")
    if suffix == ".rs":
        start = next((n for n, line in enumerate(lines, 1) if _RUST_TESTS.match(line)), None)
        return frozenset(range(start, len(lines) + 1)) if start else frozenset()
    if suffix in _BLOCK_OPENS:
        return frozenset(_blocks(lines, _BLOCK_OPENS[suffix]))
    if suffix in _DOCTEST:
        return frozenset(n for n, line in enumerate(lines, 1) if _DOCTEST[suffix].match(line))
    return frozenset()


def _blocks(lines: list[str], opens: re.Pattern) -> set[int]:
    """Lines of each block that ``opens`` starts, up to the closing brace at its indentation."""
    out: set[int] = set()
    indent = None
    for number, line in enumerate(lines, 1):
        if indent is None:
            m = opens.match(line)
            if m:
                indent = m.group(1)
                out.add(number)
            continue
        out.add(number)
        if line.rstrip() == indent + "}":
            indent = None
    return out
