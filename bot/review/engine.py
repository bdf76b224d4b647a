"""The review engine: one round of one PR in, new findings and a decision per tracked defect out.

``Engine.review(context)`` runs the tracker's deterministic decisions, every detector (the
offline static reviewer, and the LLM when one is configured), drops findings that could not be
posted (outside the diff, outside the PR, ignored or skipped paths, rules a path drops), folds
findings that repeat a tracked defect into that defect instead of raising it again, drops those
that repeat a defect people ignored, re-checks the bot's own static findings at the head
(``bot.review.recheck``), lets a verifier confirm or overturn the tracker's candidates, holds
back what people keep dismissing here and, with ``converge``, later rounds' minor findings, and
applies the repository's limits (minimum severity, maximum comments).

The server posts from the result, the ledger stores it, the bench scores it. Detectors and
verifiers are small protocols, so the LLM path (``bot.review.llm``) and the offline path
(``bot.review.offline``) plug in the same way.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Protocol

from tracker.anchors import DiffMap, excerpt, fingerprint
from tracker.decide import RoundInput, Verdict, apply_verdict, decide_round
from tracker.dedupe import TEXT_SIMILAR, Position, match_finding, same_defect, text_similarity
from tracker.learnings import Learning, kind_of
from tracker.lifecycle import State
from tracker.models import Decision, Defect, Finding, Signal, severity_rank

from ..forge.coverage import Unreviewed
from .offline import review_offline
from .patch import Patches
from .paths import PathRule, matches_any
from .recheck import recheck_static


@dataclass
class Settings:
    """Per-repository review settings (``.github/roundwise.yml`` on the default branch)."""

    ignore_paths: list[str] = field(default_factory=list)
    review_drafts: bool = False
    max_comments: int = 20
    min_severity: str = "Minor"
    static_checks: bool = True
    require_tests: bool = False  # track "code changed, no test changed" as a defect
    fail_on: str | None = None  # the check run fails while a defect this severe stands
    review_event: str = "comment"  # or "request_changes" while blocking defects stand
    # the check's conclusion, with ``fail_on`` set, when a round could not review every file
    partial_review: str = "action_required"
    # ``converge``: after round ``converge_after``, new findings below ``converge_severity``
    # are held back (shown folded in the summary, never posted inline).
    converge_after: int | None = None
    converge_severity: str = "Major"
    paths: list[PathRule] = field(default_factory=list)  # per-glob instructions, skips

    def skipped(self, path: str | None) -> bool:
        """Whether ``path`` is excluded from review (``ignore_paths`` or ``paths: skip``)."""
        return bool(path) and (matches_any(path, self.ignore_paths)
                               or any(r.skip and r.matches(path) for r in self.paths))


@dataclass
class RoundContext:
    """Everything the engine may look at for one round. All PR text is untrusted data."""

    repo: str
    number: int
    round: int
    head_sha: str
    base_sha: str | None
    pr_diff: str  # base..head, the whole PR
    round_diff: str  # previously reviewed head..head (the whole PR on the first round)
    files: dict[str, str | None]  # head text of every changed file and of tracked files
    title: str = ""
    body: str = ""
    linked_issues: list[dict] = field(default_factory=list)
    tracked: list[Defect] = field(default_factory=list)
    discussion: list[dict] = field(default_factory=list)  # people's comments since last round
    signals: list[Signal] = field(default_factory=list)
    settings: Settings = field(default_factory=Settings)
    previous_head: str | None = None
    anchor_diffs: dict[str, str] = field(default_factory=dict)  # commit -> diff to head
    upstream_diff: str = ""  # previous head -> itself rebased onto a new base (after a rebase)
    patches: Patches = field(default_factory=Patches, repr=False, compare=False)
    # kinds of finding people keep dismissing in this repository (``tracker.learnings``)
    muted: dict[str, Learning] = field(default_factory=dict)
    ignored: list[Defect] = field(default_factory=list)  # defects people ignored
    messages: list[str] = field(default_factory=list)  # this push's commit messages (first lines)
    # per rule, (confirmed, judged) of the bot's state decisions here (``tracker.verdicts``)
    verdicts: dict[str, tuple[int, int]] = field(default_factory=dict)
    # what the round left out of its diff and why (``bot.config.bounds``), for the summary
    skipped: list[str] = field(default_factory=list)
    # the changed files it did not review, with why (``bot.forge.coverage``), and how many
    # the host did not even list: for the summary and the check run's gate
    unreviewed: list[Unreviewed] = field(default_factory=list)
    unlisted: int = 0

    def code_at(self, path: str | None, start: int | None, end: int | None) -> str | None:
        if not path or start is None:
            return None
        lines = excerpt(self.files.get(path), start, end or start)
        return "\n".join(lines) if lines else None


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    calls: int = 0
    cached: int = 0  # answers served from the on-disk cache (no tokens spent)
    failed: int = 0  # model calls that got no answer (after retries, and once more later)

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost += other.cost
        self.calls += other.calls
        self.cached += other.cached
        self.failed += other.failed


@dataclass
class Detection:
    """What one detector found."""

    findings: list[Finding]
    usage: Usage = field(default_factory=Usage)
    dropped: Counter = field(default_factory=Counter)


@dataclass
class RoundResult:
    findings: list[Finding]  # new defects to raise this round
    decisions: list[Decision]  # one per tracked (not ignored) defect
    repeated: dict[str, Finding] = field(default_factory=dict)  # tracked key -> repeat
    dropped: Counter = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    notes: list[str] = field(default_factory=list)  # for the summary, not tracked
    # new findings not posted: (finding, why) with why "muted" (a kind people keep dismissing)
    # or "converge" (below ``converge``'s severity after its round); shown folded in the summary
    held: list[tuple[Finding, str]] = field(default_factory=list)

    def code_for(self, ctx: RoundContext, finding: Finding) -> str | None:
        return ctx.code_at(finding.path, finding.line_start, finding.line_end)


class Detector(Protocol):
    name: str

    async def detect(self, ctx: RoundContext) -> Detection: ...


class Verifier(Protocol):
    async def verify(self, ctx: RoundContext,
                     candidates: list[tuple[Defect, Decision]]) -> tuple[list[Verdict], Usage]: ...


class OfflineDetector:
    """The static reviewer: ruff and per-language rules on the lines the PR adds."""

    name = "offline"

    async def detect(self, ctx: RoundContext) -> Detection:
        try:
            patch = ctx.patches.patch(ctx.pr_diff)
        except Exception:  # noqa: BLE001 - the reviewer reports what it cannot parse
            patch = None
        skip = [r.glob for r in ctx.settings.paths if r.skip]
        findings = await asyncio.to_thread(
            review_offline, ctx.pr_diff, ctx.files,
            ignore_paths=[*ctx.settings.ignore_paths, *skip], patch=patch,
        )
        return Detection(findings)


class DiffLines:
    """Which lines of which files a review comment may sit on (inside the PR diff's hunks)."""

    def __init__(self, pr_diff: str, *, diff_map: DiffMap | None = None):
        self.right: dict[str, set[int]] = {}
        self.left: dict[str, set[int]] = {}
        for path, fm in (diff_map or DiffMap(pr_diff)).new_files.items():
            self.right[path], self.left[path] = fm.hunk_lines()

    def paths(self) -> set[str]:
        return set(self.right)

    def fit(self, finding: Finding) -> Finding:
        """``finding`` where a comment can sit, when a model wrote it loosely: a diff-style
        ``a/``/``b/`` prefix dropped, and a span wider than the changed lines (a whole file, a
        whole function) clamped to the first run of the diff's lines inside it."""
        path = finding.path
        if path is None:
            return finding
        if path not in self.right and path[:2] in ("a/", "b/") and path[2:] in self.right:
            finding = replace(finding, path=path[2:])
        if finding.line_start is None or finding.path not in self.right:
            return finding
        lines = self.left[finding.path] if finding.side == "LEFT" else self.right[finding.path]
        start, end = finding.line_start, finding.line_end
        if start in lines and end in lines:
            return finding
        inside = [n for n in range(start, end + 1) if n in lines]
        if not inside:
            return finding  # nothing of it in the diff: dropped as outside it
        last = inside[0]
        while last + 1 in lines and last + 1 <= end:
            last += 1
        # a fix was written for the lines the model named, not for these
        return replace(finding, line_start=inside[0], line_end=last, fix=None, quote=None)

    def valid(self, finding: Finding) -> str | None:
        """None when the finding can be posted where it is, else the reason it cannot."""
        if finding.path is None:
            return None  # a remark on the whole PR goes into the summary
        if finding.path not in self.right:
            return "outside_pr"
        if finding.line_start is None:
            return None
        lines = self.left[finding.path] if finding.side == "LEFT" else self.right[finding.path]
        if finding.line_end not in lines or finding.line_start not in lines:
            return "outside_diff"
        return None


class Engine:
    """Review rounds with the given detectors and optional verifier."""

    def __init__(self, detectors: list[Detector], verifier: Verifier | None = None,
                 walkthrough=None):
        self.detectors = detectors
        self.verifier = verifier
        self.walkthrough = walkthrough  # writes the first summary's overview (LLM engines)

    async def review(self, ctx: RoundContext) -> RoundResult:
        # The CPU work of a round (parsing diffs, deciding, sorting findings) runs in a worker
        # thread: a PR of thousands of files must not hold the event loop, which answers
        # webhooks and /healthz for every other tenant meanwhile.
        decisions = await asyncio.to_thread(self._decide, ctx)
        result = RoundResult(findings=[], decisions=decisions)
        detections = await asyncio.gather(*(d.detect(ctx) for d in self._detectors(ctx)))
        raw: list[Finding] = []
        for detection in detections:
            raw.extend(detection.findings)
            result.usage.add(detection.usage)
            result.dropped.update(detection.dropped)
        await asyncio.to_thread(self._sort, ctx, raw, result)
        self._still_detected(ctx, result)
        if self._static(ctx):
            await asyncio.to_thread(recheck_static, ctx, result)
        await self._verify(ctx, result)
        self._limit(ctx, result)
        return result

    @staticmethod
    def _decide(ctx: RoundContext) -> list[Decision]:
        rnd = RoundInput(ctx.round, ctx.patches.map(ctx.round_diff), ctx.files, ctx.signals,
                         {sha: ctx.patches.map(text) for sha, text in ctx.anchor_diffs.items()},
                         upstream=ctx.patches.map(ctx.upstream_diff) if ctx.upstream_diff
                         else None, messages=list(ctx.messages), verdicts=dict(ctx.verdicts))
        return decide_round(ctx.tracked, rnd)

    def _sort(self, ctx: RoundContext, raw: list[Finding], result: RoundResult) -> None:
        """Each raw finding: dropped (with why), folded into the tracked defect it repeats, or
        kept as new. A new finding is compared only with the kept ones it could duplicate
        (same file; remarks without a place with each other), so this is linear in the
        findings of a PR of thousands of files, not quadratic."""
        postable = DiffLines(ctx.pr_diff, diff_map=ctx.patches.map(ctx.pr_diff))
        tracked = self._positions(ctx, result.decisions)
        taken: set[str] = set()  # ignored defects a finding of this round already repeats
        kept: dict[tuple[str | None, bool], list[Finding]] = {}  # (path, anchored) -> new
        unanchored: list[Finding] = []
        for finding in raw:
            finding = postable.fit(finding)
            if finding.rule == "missing-tests" and not ctx.settings.require_tests:
                result.notes.append(finding.description)  # a nudge, not a tracked defect
                result.dropped["tests_not_required"] += 1
                continue
            reason = postable.valid(finding) or self._ignored(ctx, finding)
            if reason:
                result.dropped[reason] += 1
                continue
            code = ctx.code_at(finding.path, finding.line_start, finding.line_end)
            repeat = match_finding(finding, tracked, code)
            if repeat is not None:
                result.repeated.setdefault(repeat.key, finding)
                continue
            if self._repeats_ignored(finding, code, ctx.ignored, taken):
                result.dropped["repeats_ignored"] += 1  # people said no to it already
                continue
            # ``same_defect`` needs the same path for an anchored finding, and an unanchored
            # defect for an unanchored one (an E.4 on the file aside): nothing else can be
            peers = [*kept.get((finding.path, True), ()), *kept.get((finding.path, False), ())] \
                if finding.anchored else unanchored
            if any(same_defect(finding, _as_defect(f), _position(f)) for f in peers):
                result.dropped["duplicate"] += 1
                continue
            result.findings.append(finding)
            kept.setdefault((finding.path, finding.anchored), []).append(finding)
            if not finding.anchored:
                unanchored.append(finding)

    @staticmethod
    def _repeats_ignored(finding: Finding, code: str | None, ignored: list[Defect],
                         taken: set[str]) -> bool:
        """Whether ``finding`` is a defect people ignored, found again: the same check (or
        the same words) on the same code in the same file, each ignored defect matched once,
        by the finding nearest to where it was (its place is not followed once ignored)."""
        if not ignored or code is None or finding.path is None:
            return False
        mark = fingerprint(code)
        best = None
        for d in ignored:
            if d.key in taken or d.path != finding.path or d.fingerprint != mark:
                continue
            if finding.rule and d.rule and finding.rule != d.rule:
                continue
            if not (finding.rule and finding.rule == d.rule) and \
                    text_similarity(finding.description, d.description) < TEXT_SIMILAR:
                continue
            distance = abs((finding.line_start or 0) - (d.line_start or 0))
            if best is None or distance < best[0]:
                best = (distance, d.key)
        if best is None:
            return False
        taken.add(best[1])
        return True

    def _static(self, ctx: RoundContext) -> bool:
        """Whether the offline checks run this round (so their findings can be re-checked)."""
        return ctx.settings.static_checks and any(isinstance(d, OfflineDetector)
                                                  for d in self.detectors)

    def _detectors(self, ctx: RoundContext) -> list[Detector]:
        return [d for d in self.detectors
                if ctx.settings.static_checks or not isinstance(d, OfflineDetector)]

    @staticmethod
    def _positions(ctx: RoundContext, decisions: list[Decision]) -> list[tuple[Defect, Position]]:
        by_key = {d.key: d for d in decisions}
        out = []
        for defect in ctx.tracked:
            decision = by_key.get(defect.key)
            if decision is None:
                continue  # ignored
            out.append((defect, Position(decision.path or defect.path,
                                         decision.line_start or defect.line_start,
                                         decision.line_end or defect.line_end)))
        return out

    @staticmethod
    def _ignored(ctx: RoundContext, finding: Finding) -> str | None:
        if ctx.settings.skipped(finding.path):
            return "ignored_path"
        if finding.rule and any(finding.rule in r.ignore_rules and r.matches(finding.path)
                                for r in ctx.settings.paths):
            return "ignored_rule"
        return None

    @staticmethod
    def _still_detected(ctx: RoundContext, result: RoundResult) -> None:
        """A deterministic check that still fires where a defect was is the best verifier."""
        by_key = {d.key: d for d in ctx.tracked}
        for i, decision in enumerate(result.decisions):
            finding = result.repeated.get(decision.key)
            if finding is None or not finding.rule:
                continue
            defect = by_key[decision.key]
            where = f"{finding.path}:{finding.line_start}"
            if decision.state is State.RESOLVED and decision.candidate and \
                    defect.state is not State.RESOLVED:
                result.decisions[i] = apply_verdict(decision, Verdict(
                    decision.key, State.OPEN,
                    f"the {finding.rule} check still fires at {where}", decided_by="rule"))
            elif decision.state is State.RESOLVED and defect.state is State.RESOLVED:
                result.decisions[i] = Decision(
                    decision.key, State.REOPENED, "detected-again",
                    f"the {finding.rule} check fires again at {where}", path=finding.path,
                    line_start=finding.line_start, line_end=finding.line_end,
                    code=ctx.code_at(finding.path, finding.line_start, finding.line_end),
                )

    async def _verify(self, ctx: RoundContext, result: RoundResult) -> None:
        if self.verifier is None:
            return
        by_key = {d.key: d for d in ctx.tracked}
        candidates = sorted(((by_key[d.key], d) for d in result.decisions if d.candidate),
                            key=lambda pair: pair[1].confidence)  # the least sure first
        if not candidates:
            return
        counted = getattr(self.verifier, "verify_counted", None)
        if counted is not None:  # the LLM verifier says what it could not use, by reason
            verdicts, usage, dropped = await counted(ctx, candidates)
            result.dropped.update({f"verify_{k}": v for k, v in dropped.items()})
        else:
            verdicts, usage = await self.verifier.verify(ctx, candidates)
        result.usage.add(usage)
        by_verdict = {v.key: v for v in verdicts}
        result.decisions = [apply_verdict(d, by_verdict.get(d.key)) for d in result.decisions]

    @staticmethod
    def _limit(ctx: RoundContext, result: RoundResult) -> None:
        floor = severity_rank(ctx.settings.min_severity)
        kept = [f for f in result.findings if severity_rank(f.severity) >= floor]
        result.dropped["below_min_severity"] += len(result.findings) - len(kept)
        kept = _hold_back(ctx, kept, result.held)
        kept.sort(key=lambda f: (-severity_rank(f.severity), -f.confidence, f.path or "",
                                 f.line_start or 0))
        cap = max(ctx.settings.max_comments, 0)
        result.dropped["over_max_comments"] += max(len(kept) - cap, 0)
        result.findings = sorted(kept[:cap], key=lambda f: (f.path or "", f.line_start or 0))
        result.dropped = Counter({k: v for k, v in result.dropped.items() if v})


MUTE_BELOW = severity_rank("Major")  # a muted kind's findings at Major or above are posted


def _hold_back(ctx: RoundContext, findings: list[Finding],
               held: list[tuple[Finding, str]]) -> list[Finding]:
    """The findings to post; the others go to ``held`` with why: a kind people keep
    dismissing here (``muted``), or, after ``converge``'s round, one below its severity."""
    settings = ctx.settings
    converging = settings.converge_after is not None and ctx.round > settings.converge_after
    floor = severity_rank(settings.converge_severity)
    out = []
    for f in findings:
        # Anyone who can comment on a PR can dismiss a finding, so what people dismiss never
        # silences a Major or worse one (a contributor must not mute, say, hard-coded secrets).
        if kind_of(f.rule, f.type) in ctx.muted and severity_rank(f.severity) < MUTE_BELOW:
            held.append((f, "muted"))
        elif converging and severity_rank(f.severity) < floor:
            held.append((f, "converge"))
        else:
            out.append(f)
    return out


def _position(f: Finding) -> Position:
    return Position(f.path, f.line_start, f.line_end)


def _as_defect(f: Finding) -> Defect:
    return Defect(key="", description=f.description, origin=f.origin, state=State.NEW,
                  raised_round=0, state_round=0, path=f.path, line_start=f.line_start,
                  line_end=f.line_end, rule=f.rule)


def model_silence_note(number: int, usage: Usage) -> str:
    """What the summary and the check run say when model calls got no answer."""
    asked = usage.calls + usage.failed
    return (f"The model did not answer in round {number} ({usage.failed} of {asked} "
            f"call{'s' * (asked != 1)} "
            "got no answer, each retried): this round was tracked from the code only.")


def offline_engine() -> Engine:
    """The engine with no LLM: static checks plus the deterministic tracker."""
    return Engine([OfflineDetector()])
