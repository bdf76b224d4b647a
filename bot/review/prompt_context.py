"""Repository context in the LLM prompts: the hooks ``LLMDetector`` and ``LLMVerifier`` call.

``bot.review.context`` picks code (pure); this module decides where the repository is, caches
its symbol index per head, and adds the picked code to one detection call within what the
token budget leaves after the diff, so context never crowds the diff out (and, the same way,
to one verification call around its defects' current lines). Settings:

- ``ROUNDWISE_REPOS``: a folder of repository checkouts named ``<owner>__<repo>`` (the AACR
  layout) or ``<repo>`` (the bench names its fake repositories ``bench/<task_id>``, so a
  folder of checkouts named by task id serves ``bench run``). Unset, or no checkout for a
  repository: the context comes from the pull request's own files (enclosing functions,
  definitions and callers among them).
- ``ROUNDWISE_CONTEXT_CACHE``: where the symbol indexes are cached as JSON (one file per
  repository and head); default ``context-index`` beside the ledger (``ROUNDWISE_DB``).
- ``ROUNDWISE_CONTEXT``: ``off`` leaves the prompt as the diff alone.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .context import (
    ChangedFile,
    Placed,
    RepoFiles,
    Section,
    SymbolIndex,
    build_sections,
    changed_files_from,
    fit,
)

if TYPE_CHECKING:
    from .engine import RoundContext

WRAPPER = "repository_context"
BLOCK = "context_code"
MIN_ROOM = 80  # tokens: below this no context is added
CONTEXT_SHARE = 0.35  # of a detection call's room kept for context when the calls allow it
_LOOKALIKE = re.compile(rf"<(\s*/?\s*)({WRAPPER}|{BLOCK})\b", re.IGNORECASE)


def _attr(value: Any) -> str:
    text = str(value).replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(text.split())[:300]


def render_section(section: Section, start: int, end: int, code: str) -> str:
    """One section as a data block naming its file, lines and why it is there."""
    from .llm.prompts import escape_data  # the detector's own neutralising of tag look-alikes

    safe = _LOOKALIKE.sub(lambda m: "&lt;" + m.group(1) + m.group(2), escape_data(code))
    return (f'<{BLOCK} file="{_attr(section.path)}" lines="{start}-{end}" '
            f'source="{_attr(section.why)}">\n{safe.rstrip()}\n</{BLOCK}>')


def wrap(placed: list[Placed]) -> str:
    return f"<{WRAPPER}>\n" + "\n".join(p.text for p in placed) + f"\n</{WRAPPER}>"


def _insert(messages: list[dict], block: str) -> list[dict]:
    """The messages with ``block`` before the closing instruction of the last user message."""
    out = [dict(m) for m in messages]
    content = out[-1]["content"]
    body, sep, instruction = content.rpartition("\n\n")
    out[-1]["content"] = f"{body}\n\n{block}{sep}{instruction}" if sep else f"{content}\n\n{block}"
    return out


# The variables ``ContextProvider.from_env`` reads; ``bot.server.hosts.SETTINGS`` lists them too.
CONTEXT_SETTINGS: dict[str, tuple[str, str]] = {
    "ROUNDWISE_REPOS": ("a folder of repository checkouts named <owner>__<repo>",
                        "unset"),
    "ROUNDWISE_CONTEXT_CACHE": ("where symbol indexes are cached as JSON",
                                "context-index"),
    "ROUNDWISE_CONTEXT": ("off leaves the LLM prompt as the diff alone", "on"),
}

@dataclass
class ContextProvider:
    """Adds repository context to detection calls (see the module docstring)."""

    repos_dir: Path | None = None
    cache_dir: Path | None = None
    enabled: bool = True
    locate: Callable[[RoundContext], Path | None] | None = None
    _indexes: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ContextProvider:
        """The provider the ``CONTEXT_SETTINGS`` variables describe."""
        env = os.environ if environ is None else environ
        repos = env.get("ROUNDWISE_REPOS")
        cache = env.get("ROUNDWISE_CONTEXT_CACHE") or str(
            Path(env.get("ROUNDWISE_DB") or "roundwise.db").parent / "context-index")
        return cls(repos_dir=Path(repos) if repos else None, cache_dir=Path(cache),
                   enabled=(env.get("ROUNDWISE_CONTEXT") or "on").lower() not in
                   ("off", "0", "false", "no"))

    def checkout(self, ctx: RoundContext) -> Path | None:
        """The folder holding ``ctx.repo`` checked out, if any."""
        if self.locate is not None:
            return self.locate(ctx)
        if self.repos_dir is None:
            return None
        owner, _, name = ctx.repo.partition("/")
        for folder in (self.repos_dir / f"{owner}__{name}", self.repos_dir / name):
            if name and folder.is_dir():
                return folder
        return None

    def repository(self, ctx: RoundContext) -> tuple[RepoFiles, SymbolIndex]:
        """The repository at the round's head and its symbol index (built once per head)."""
        root = self.checkout(ctx)
        key = (ctx.repo, ctx.head_sha, str(root))
        if key not in self._indexes:
            repo = RepoFiles(root, overlay=dict(ctx.files))
            cache_file = None
            if root is not None and self.cache_dir is not None:  # PR files alone: cheap
                digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
                cache_file = self.cache_dir / f"{digest}.json"
            if len(self._indexes) >= 4:
                self._indexes.pop(next(iter(self._indexes)))
            self._indexes[key] = (repo, SymbolIndex.cached(repo, cache_file))
        return self._indexes[key]

    def placed(self, ctx: RoundContext, paths: list[str], room: int, count_text) -> list[Placed]:
        """The context for the diff of ``paths`` that fits in ``room`` tokens."""
        from .llm.diffs import authored_changes, file_priority

        wanted = set(paths)
        diff_files = sorted((fd for fd in authored_changes(ctx) if fd.path in wanted),
                            key=file_priority)
        if not diff_files:
            return []
        repo, index = self.repository(ctx)
        sections = build_sections(changed_files_from(diff_files), repo, index)
        overhead = count_text(wrap([]))
        return fit(sections, repo, room - overhead, count_text, render_section)

    def diff_room(self, room: int) -> int:
        """The room a detection call's diff is packed into first: ``CONTEXT_SHARE`` of it is
        kept for context. The detector packs into the whole room when the diff would not fit
        in its calls that way, so context never pushes any of the diff out."""
        return int(room * (1 - CONTEXT_SHARE)) if self.enabled else room

    def extend(self, messages: list[dict], ctx: RoundContext, paths: list[str],
               client) -> list[dict]:
        """``messages`` of one detection call with context added within the budget left."""
        return self._add(messages, client,
                         lambda room: self.placed(ctx, paths, room, client.count_text))

    def extend_verification(self, messages: list[dict], ctx: RoundContext, group: dict,
                            client) -> list[dict]:
        """``messages`` of one verification call with the context of its defects' current
        anchors (enclosing code, definitions they use, callers, tests) within the budget."""
        anchors: dict[str, ChangedFile] = {}
        for defect, decision in group.values():
            path = decision.path or defect.path
            start = decision.line_start or defect.line_start
            end = decision.line_end or decision.line_start or defect.line_end or start
            if not path or not start or not ctx.files.get(path):
                continue
            cf = anchors.setdefault(path, ChangedFile(path, []))
            cf.hunks.append((start, max(end, start)))
            cf.added |= set(range(start, max(end, start) + 1))
        if not anchors:
            return messages

        def placed(room: int) -> list[Placed]:
            repo, index = self.repository(ctx)
            sections = build_sections(list(anchors.values()), repo, index)
            return fit(sections, repo, room - client.count_text(wrap([])), client.count_text,
                       render_section)

        return self._add(messages, client, placed)

    def _add(self, messages: list[dict], client,
             placed_for: Callable[[int], list[Placed]]) -> list[dict]:
        if not self.enabled:
            return messages
        limit = client.config.max_prompt_tokens
        room = limit - client.count_tokens(messages) - 64
        if room < MIN_ROOM:
            return messages
        placed = placed_for(room)
        while placed:
            out = _insert(messages, wrap(placed))
            if client.count_tokens(out) <= limit:
                return out
            placed.pop()  # the counter's drift between pieces and the whole message
        return messages
