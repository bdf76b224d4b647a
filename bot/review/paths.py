"""Per-path settings: which files a repository wants skipped, and what to tell the model about
the others (``paths:`` in ``.github/roundwise.yml``).

One glob matcher for every path setting (``ignore_paths`` and ``paths``), used by the engine,
the offline reviewer and the LLM detector alike: ``fnmatch`` on the whole path (``*`` also
crosses ``/``, so ``migrations/**`` is everything under ``migrations/``), and a glob without
``/`` also matches the file's name alone (``*.lock`` or ``package-lock.json`` anywhere).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

__all__ = ["MAX_INSTRUCTIONS", "PathRule", "instructions_for", "matches", "matches_any"]

MAX_INSTRUCTIONS = 2000  # characters of one glob's instructions


def matches(glob: str, path: str) -> bool:
    """Whether ``path`` (repository-relative, ``/``-separated) falls under ``glob``."""
    return fnmatch.fnmatchcase(path, glob) or (
        "/" not in glob and fnmatch.fnmatchcase(PurePosixPath(path).name, glob))


def matches_any(path: str, globs: Iterable[str]) -> bool:
    return any(matches(g, path) for g in globs)


@dataclass(frozen=True)
class PathRule:
    """One entry of ``paths:``: files under ``glob`` are skipped, or reviewed with
    ``instructions`` given to the model, and without the offline checks ``ignore_rules``."""

    glob: str
    skip: bool = False
    instructions: str = ""
    ignore_rules: tuple[str, ...] = field(default_factory=tuple)

    def matches(self, path: str | None) -> bool:
        return bool(path) and matches(self.glob, path)


def instructions_for(rules: Iterable[PathRule], paths: Iterable[str]) -> list[tuple[str, str]]:
    """``(glob, instructions)`` of every rule with instructions that matches one of ``paths``,
    in the order the repository wrote them."""
    paths = list(paths)
    return [(r.glob, r.instructions) for r in rules
            if r.instructions and not r.skip and any(r.matches(p) for p in paths)]
