"""``roundwise bench context``: what the LLM detection prompt shows, measured without an LLM.

For every task the detection prompts are built exactly as a review builds them (the real
``LLMDetector.plan`` on the round's context, the same token budget), twice: with the diff alone
and with repository context (``bot.review.prompt_context``). Then, for every expert comment
(defect card) of the round it was raised in:

- **line coverage**: are all its commented lines in the prompt (as a numbered diff or context
  line of that file, on its side)?
- **symbol coverage**: of the identifiers it names (backticked, or code-shaped: ``snake_case``,
  ``camelCase``, ``Pascal`` names with two capitals, ``name(``) that the repository defines,
  the share whose definition's first line is in the prompt;
- prompt tokens per pull request (all calls of its rounds) for both prompts, and how the
  context's tokens split between enclosing code, definitions, callers and tests.

Figures are grouped by the comment's context level (AACR's diff/file/repo; MCR cards have none)
and by language. Checkouts at each task's head come from ``--repos``: a folder holding
``<task_id>/`` or ``<owner>__<repo>/``; without one a task's context is its PR's files alone.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bot.review.context import SymbolIndex
from bot.review.engine import RoundContext
from bot.review.llm import LLMClient, LLMConfig, LLMDetector
from bot.review.prompt_context import ContextProvider

from ..tasks.mcr import Task
from .scoring import CONTEXTS

DEFAULT_MODEL = "gpt-4o"  # litellm counts its tokens offline
_BLOCK = re.compile(r'<(round_diff|context_code) file="([^"]*)"[^>]*>\n(.*?)\n</\1>', re.DOTALL)
_CONTEXT_BLOCK = re.compile(r'<context_code [^>]*source="([^"]*)"[^>]*>.*?</context_code>',
                            re.DOTALL)
KINDS = {"enclosing": "enclosing", "code around": "enclosing", "definition": "definition",
         "caller": "caller", "test": "test"}
_NEW_LINE = re.compile(r"^\s*(\d+) \| ", re.MULTILINE)
_OLD_LINE = re.compile(r"^L\s*(\d+) \| ", re.MULTILINE)
_BACKTICKS = re.compile(r"`([^`\n]+)`")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE_SHAPED = re.compile(
    r"\b([A-Za-z_]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
    r"|[A-Z]{2,}[a-z][A-Za-z0-9]*|[A-Za-z_][A-Za-z0-9_]*(?=\())")


def shown_lines(calls: list[list[dict]]) -> set[tuple[str, str, int]]:
    """(path, side, line) of every numbered code line the prompts show."""
    out = set()
    for messages in calls:
        text = "\n".join(str(m.get("content") or "") for m in messages)
        for _, path, body in _BLOCK.findall(text):
            path = path.replace("&quot;", '"')
            out |= {(path, "RIGHT", int(n)) for n in _NEW_LINE.findall(body)}
            out |= {(path, "LEFT", int(n)) for n in _OLD_LINE.findall(body)}
    return out


def context_kinds(calls: list[list[dict]], count) -> dict[str, int]:
    """Tokens of the context blocks in the prompts, by kind of context."""
    out: dict[str, int] = defaultdict(int)
    for messages in calls:
        for m in messages:
            for block in _CONTEXT_BLOCK.finditer(str(m.get("content") or "")):
                kind = next((k for prefix, k in KINDS.items()
                             if block.group(1).startswith(prefix)), "other")
                out[kind] += count(block.group(0))
    return out


def named_identifiers(text: str) -> list[str]:
    """Identifiers a comment names: everything in backticks, and code-shaped words."""
    names = [n for span in _BACKTICKS.findall(text or "") for n in _IDENT.findall(span)]
    names += _CODE_SHAPED.findall(_BACKTICKS.sub(" ", text or ""))
    return [n for n in dict.fromkeys(names) if len(n) >= 3]


def round_context(task: Task, t: int) -> RoundContext:
    """What the bot knows at round ``t`` of a task, before any ledger (no tracked defects)."""
    rnd = task.round(t)
    return RoundContext(
        repo=task.repo or task.task_id, number=int(task.pr.get("number") or 0), round=t,
        head_sha=rnd.head_sha, base_sha=rnd.base_sha or task.pr.get("base_sha"),
        pr_diff=rnd.diff, round_diff=task.diff_between(t - 1, t) if t > 1 else rnd.diff,
        files=task.snapshot(t), title=task.pr.get("title") or "",
        body=task.pr.get("body") or "", linked_issues=list(task.pr.get("linked_issues") or []),
        discussion=list(task.events(t - 1)) if t > 1 else [],
        previous_head=task.round(t - 1).head_sha if t > 1 else None)


def find_checkout(repos: Path | None, task: Task) -> Path | None:
    if repos is None:
        return None
    owner, _, name = (task.repo or "").partition("/")
    for folder in (repos / task.task_id, repos / f"{owner}__{name}"):
        if folder.is_dir():
            return folder
    return None


@dataclass
class Tally:
    """Counts for one group of comments."""

    comments: int = 0
    lines_diff: int = 0
    lines_context: int = 0
    symbols: int = 0
    symbols_diff: int = 0
    symbols_context: int = 0

    def as_dict(self) -> dict:
        def share(k: int, n: int) -> float | None:
            return k / n if n else None

        return {"comments": self.comments, "symbols": self.symbols,
                "line_coverage": {"diff_only": share(self.lines_diff, self.comments),
                                  "with_context": share(self.lines_context, self.comments)},
                "symbol_coverage": {"diff_only": share(self.symbols_diff, self.symbols),
                                    "with_context": share(self.symbols_context, self.symbols)}}


@dataclass
class ContextRun:
    """Options of one measurement."""

    repos: Path | None = None
    budget: int = 24000
    model: str = DEFAULT_MODEL
    cache: Path | None = None
    by_level: dict = field(default_factory=lambda: defaultdict(Tally))
    by_language: dict = field(default_factory=lambda: defaultdict(Tally))
    tokens: list[tuple[str, int, int]] = field(default_factory=list)  # task, diff, context
    checkouts: int = 0
    kinds: dict = field(default_factory=lambda: defaultdict(int))

    def detector(self, provider: ContextProvider) -> LLMDetector:
        client = LLMClient(LLMConfig(model=self.model, max_prompt_tokens=self.budget))
        detector = LLMDetector(client)
        detector.context = provider
        return detector

    def measure(self, task: Task) -> None:
        """Both prompts for every round a card of ``task`` was raised in, and the tallies."""
        checkout = find_checkout(self.repos, task)
        self.checkouts += checkout is not None
        plain = self.detector(ContextProvider(enabled=False))
        provider = ContextProvider(cache_dir=self.cache, locate=lambda _ctx: checkout)
        rich = self.detector(provider)
        level_of = {}
        for card in task.defects:
            level = str(card.get("aacr_context") or "unlabelled").strip().lower()
            level_of[str(card.get("id"))] = CONTEXTS.get(level, level)
        tokens = [0, 0]
        for t in sorted({int(c.get("raised_in_round") or 1) for c in task.defects}):
            ctx = round_context(task, t)
            calls = [plain.plan(ctx).calls, rich.plan(ctx).calls]
            for i, call_list in enumerate(calls):
                tokens[i] += sum(plain.client.count_tokens(m) for m in call_list)
            seen = [shown_lines(c) for c in calls]
            for kind, n in context_kinds(calls[1], plain.client.count_text).items():
                self.kinds[kind] += n
            _, index = provider.repository(ctx)
            for card in task.defects:
                if int(card.get("raised_in_round") or 1) != t:
                    continue
                self._tally(card, seen, index, [self.by_level[level_of[str(card.get("id"))]],
                                                self.by_language[task.language]])
        self.tokens.append((task.task_id, *tokens))

    @staticmethod
    def _tally(card: dict, seen: list[set], index: SymbolIndex, tallies: list[Tally]) -> None:
        path = str(card.get("path") or "").removeprefix("./")
        side = str(card.get("side") or "RIGHT").upper()
        start = card.get("line_start")
        end = card.get("line_end") or start
        lines = [] if start is None else list(range(int(start), int(max(end, start)) + 1))
        hit = [bool(lines) and all((path, side, n) in s for n in lines) for s in seen]
        defined = [n for n in named_identifiers(str(card.get("description") or ""))
                   if n in index.definitions]
        found = [sum(any((d.path, "RIGHT", d.start) in s for d in index.definitions[n])
                     for n in defined) for s in seen]
        for tally in tallies:
            tally.comments += 1
            tally.lines_diff += hit[0]
            tally.lines_context += hit[1]
            tally.symbols += len(defined)
            tally.symbols_diff += found[0]
            tally.symbols_context += found[1]

    def summary(self) -> dict:
        n = len(self.tokens)
        return {
            "tasks": n, "checkouts": self.checkouts, "budget": self.budget, "model": self.model,
            "by_level": {k: v.as_dict() for k, v in sorted(self.by_level.items())},
            "by_language": {k: v.as_dict() for k, v in sorted(self.by_language.items())},
            "tokens_per_pr": {
                "diff_only": sum(d for _, d, _ in self.tokens) / n if n else 0.0,
                "with_context": sum(c for _, _, c in self.tokens) / n if n else 0.0,
                "max_with_context": max((c for _, _, c in self.tokens), default=0),
                "context_by_kind": {k: self.kinds[k] / n for k in sorted(self.kinds)} if n
                else {}},
        }


def measure(tasks: list[Task], repos: str | Path | None = None, budget: int = 24000,
            model: str = DEFAULT_MODEL, cache: str | Path | None = None) -> dict:
    """The figures for ``tasks`` (see the module docstring) as a dict."""
    run = ContextRun(Path(repos) if repos else None, budget, model,
                     Path(cache) if cache else None)
    for task in tasks:
        run.measure(task)
    return run.summary()


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render(summary: dict) -> str:
    """The figures as text tables."""
    lines = [(f"{summary['tasks']} task(s), {summary['checkouts']} with a repository checkout; "
             f"budget {summary['budget']} tokens ({summary['model']} tokenizer)"), ""]
    header = (f"{'':<12} {'comments':>8} {'line cov diff':>14} {'with ctx':>9} "
              f"{'symbols':>8} {'sym cov diff':>13} {'with ctx':>9}")
    for title, groups in (("context level", summary["by_level"]),
                          ("language", summary["by_language"])):
        lines += [f"by {title}", header]
        for name, g in groups.items():
            lc, sc = g["line_coverage"], g["symbol_coverage"]
            lines.append(f"{name:<12} {g['comments']:>8} {_pct(lc['diff_only']):>14} "
                         f"{_pct(lc['with_context']):>9} {g['symbols']:>8} "
                         f"{_pct(sc['diff_only']):>13} {_pct(sc['with_context']):>9}")
        lines.append("")
    tok = summary["tokens_per_pr"]
    lines.append(f"prompt tokens per PR: diff only {tok['diff_only']:.0f}, with context "
                 f"{tok['with_context']:.0f} (largest {tok['max_with_context']})")
    kinds = tok.get("context_by_kind") or {}
    if kinds:
        lines.append("context tokens per PR by kind: " + ", ".join(
            f"{kind} {value:.0f}" for kind, value in kinds.items()))
    return "\n".join(lines)
