"""One parse per diff per round: the round's diffs parsed once and shared by every reader.

A round reads the same two diffs (the whole PR's and the round's) in many places: the tracker
maps anchors through them, the engine checks where comments may be posted, the offline
reviewer reads the PR's added lines, the LLM prompt builder annotates the round's hunks and
the verifier shows diff lines near each defect. ``Patches`` (one per ``RoundContext``) parses
each distinct diff text once into a ``unidiff.PatchSet`` that the offline reviewer, the LLM
prompt builder and the tracker's ``DiffMap`` all share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import unidiff

from tracker.anchors import DiffError, DiffMap

__all__ = ["Patches"]

T = TypeVar("T")


class Patches:
    """Parsed diffs of one round, by text. Not thread-safe for writes: fill it on the loop."""

    def __init__(self) -> None:
        self._patches: dict[str, unidiff.PatchSet | Exception] = {}
        self._maps: dict[str, DiffMap | Exception] = {}
        self._derived: dict[tuple[str, str], Any] = {}
        self.parses = 0  # PatchSets and DiffMaps built (what a round costs in parsing)

    def patch(self, text: str) -> unidiff.PatchSet:
        """The diff as unidiff parsed it; raises the parser's error when it is not a diff."""
        text = text or ""
        if text not in self._patches:
            self.parses += 1
            try:
                self._patches[text] = unidiff.PatchSet(text)
            except Exception as exc:  # noqa: BLE001 - kept and raised to every reader alike
                self._patches[text] = exc
        found = self._patches[text]
        if isinstance(found, Exception):
            raise found
        return found

    def map(self, text: str) -> DiffMap:
        """The tracker's view of the diff; raises ``DiffError`` when it is not a diff."""
        text = text or ""
        if text not in self._maps:
            try:
                self._maps[text] = DiffMap(self.patch(text))
            except unidiff.UnidiffParseError as exc:
                self._maps[text] = DiffError(f"not a unified diff: {exc}")
            except Exception as exc:  # noqa: BLE001 - kept and raised to every reader alike
                self._maps[text] = exc
        found = self._maps[text]
        if isinstance(found, Exception):
            raise found
        return found

    def derived(self, kind: str, text: str, build: Callable[[str], T]) -> T:
        """``build(text)`` once per text and ``kind`` (a shape made from ``patch(text)``)."""
        key = (kind, text or "")
        if key not in self._derived:
            self._derived[key] = build(text or "")
        return self._derived[key]
