"""ruff on the changed Python files: a curated table of high-signal diagnostics (``RUFF_RULES``,
read from ``ruff_rules.toml``), never style; run once per round on the files' head text.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
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


#: the ``accept`` checks ``ruff_rules.toml`` may name
ACCEPTS: dict[str, Callable[[ChangedFile, int, str], bool]] = {
    "really_unused": _really_unused, "line_has_secret": _line_has_secret}


def _load_rules() -> tuple[dict[str, RuffRule], RuffRule]:
    """``ruff_rules.toml``: each code's ``RuffRule`` in the table's order, and the syntax one."""
    text = resources.files(__package__).joinpath("ruff_rules.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)

    def rule(entry: dict) -> RuffRule:
        return RuffRule(entry["type"], entry["severity"], entry["confidence"], entry["why"],
                        entry.get("in_tests", True),
                        ACCEPTS[entry["accept"]] if "accept" in entry else None)

    return {code: rule(entry) for entry in table["rules"] for code in entry["codes"]}, \
        rule(table["syntax"])


RUFF_RULES, RUFF_SYNTAX = _load_rules()

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
            cmd = [ruff, "check", "--output-format", "json-lines", "--no-cache", "--isolated",
                   "--preview", "--exit-zero", "--target-version", "py312",
                   "--select", ",".join(codes), *by_file]
            try:
                proc = subprocess.run(cmd, cwd=root, capture_output=True, check=False,
                                      timeout=RUFF_TIMEOUT)
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("offline review: ruff did not run (%s)", exc)
                return
            stderr = (proc.stderr or b"").decode("utf-8", "replace")
            unknown = re.findall(r"[Uu]nknown rule selector:? `?(\w+)`?", stderr)
            if proc.returncode == 2 and unknown and not set(unknown) <= _ruff_unknown:
                _ruff_unknown.update(unknown)
                continue
            break
        try:
            # one diagnostic a line, decoded one by one: a big PR's answer is megabytes, and
            # one ``json.loads`` of it held the GIL (so the server's loop) for tens of ms
            diagnostics = [json.loads(line) for line in io.BytesIO(proc.stdout or b"")
                           if line.strip()]
        except ValueError:
            log.warning("offline review: ruff gave no JSON (rc=%s): %s", proc.returncode,
                        stderr[:300])
            return
        if ran is not None:
            ran.append(True)
        for d in diagnostics:
            if not isinstance(d, dict):
                continue
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
