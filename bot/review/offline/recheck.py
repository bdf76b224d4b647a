"""Re-running the offline reviewer's own checks on whole files at a new head.

The offline reviewer only reports what lands on lines a pull request adds; a finding it raised
earlier may stop being true without its lines changing at all (``import os`` is no longer
unused once later code uses ``os``: ruff stays silent, the anchored line stands). ``fires``
answers the question the engine asks at every round: at this head, where does each of the
given checks fire in this file? The whole file is looked at (every line counts as added), no
per-file cap applies and no rule is left out as redundant, so "not in the answer" means "the
check is silent there".

A check that cannot be run is left out of the answer (``checked`` says which were run): an
unknown rule id, a ruff rule when ruff is not installed or did not answer, a missing or binary
file. Callers treat those as "cannot tell", never as "no longer fires".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracker.paths import is_generated_path

from .files import ChangedFile
from .ruff import _ruff_findings, find_ruff
from .rules import RULES

__all__ = ["Recheck", "fires", "is_offline_rule"]

_IDS = {rule.id for rule in RULES}


def is_offline_rule(rule_id: str | None) -> bool:
    """Whether ``rule_id`` names one of the offline reviewer's checks."""
    return bool(rule_id) and (rule_id in _IDS or rule_id.startswith("ruff:"))


@dataclass
class Recheck:
    """Per ``(path, rule id)`` that could be checked: the line spans where the check fires."""

    hits: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)

    def checked(self, path: str, rule_id: str) -> bool:
        return (path, rule_id) in self.hits

    def fires_on(self, path: str, rule_id: str, start: int, end: int) -> bool | None:
        """Whether the check fires on any of lines ``start..end`` (None: it was not checked)."""
        spans = self.hits.get((path, rule_id))
        if spans is None:
            return None
        return any(s <= end and start <= e for s, e in spans)


def fires(files: dict[str, str | None], wanted: dict[str, set[str]], *,
          use_ruff: bool = True) -> Recheck:
    """Run the checks ``wanted[path]`` on each file's text in ``files`` (see the module doc)."""
    out = Recheck()
    ruff_files: list[tuple[ChangedFile, set[str]]] = []
    for path, rule_ids in sorted(wanted.items()):
        text = files.get(path)
        if not isinstance(text, str) or "\x00" in text[:8192]:
            continue
        if is_generated_path(path, text):
            continue  # the reviewer never checks these: nothing to say either way
        lines = {i: s.rstrip("\r") for i, s in enumerate(text.split("\n"), 1)}
        cf = ChangedFile(path, dict(lines), lines, text)
        for rule in RULES:
            if rule.id not in rule_ids:
                continue
            spans = out.hits.setdefault((path, rule.id), [])
            if rule.relevant(cf):
                spans.extend((h.start, h.end) for h in rule.find(cf))
        ruff_ids = {r for r in rule_ids if r.startswith("ruff:")}
        if ruff_ids:
            ruff_files.append((cf, ruff_ids))
    ruff = find_ruff() if use_ruff and ruff_files else None
    if ruff:
        ran: list = []
        found = list(_ruff_findings(ruff, [cf for cf, _ in ruff_files], ran))
        # A file that no longer parses says nothing about its other checks.
        broken = {cf.path for cf, _h, rule_id, _r, _m in found if rule_id == "ruff:syntax"}
        if ran:  # ruff answered: silence now means the check does not fire
            for cf, ids in ruff_files:
                for rule_id in ids:
                    if cf.path in broken and rule_id != "ruff:syntax":
                        continue
                    out.hits.setdefault((cf.path, rule_id), [])
            for cf, hit, rule_id, _rr, _message in found:
                if (cf.path, rule_id) in out.hits:
                    out.hits[(cf.path, rule_id)].append((hit.start, hit.end))
    return out
