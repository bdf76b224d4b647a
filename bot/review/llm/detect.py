"""``LLMDetector``: detection on what changed this round, split by file and packed into a token
budget, with the ledger's tracked defects listed so they are not raised again.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from tracker.anchors import Anchor, DiffError, DiffMap
from tracker.models import Defect

from ..engine import Detection, RoundContext
from ..paths import PathRule, instructions_for
from ..prompt_context import ContextProvider
from .client import LLMClient
from .diffs import FileDiff, authored_changes, file_priority, location
from .fixes import checked_fix
from .parse import echoes, parse_findings
from .prompts import (
    MAX_BODY_CHARS,
    MAX_CODE_LINES,
    MAX_DESCRIPTION_CHARS,
    MAX_DISCUSSION_CHARS,
    MAX_ISSUE_CHARS,
    MAX_ISSUES,
    MAX_TRACKED_LISTED,
    TOKEN_MARGIN,
    _numbered,
    cap_text,
    data_block,
    escape_data,
    system_prompt,
)

log = logging.getLogger(__name__)

@dataclass
class Piece:
    """A part of the round diff small enough for one call: one file, or some of its hunks."""

    path: str
    text: str
    tokens: int
    rank: tuple


@dataclass
class DetectPlan:
    """The detection calls for one round, and what had to be left out."""

    calls: list[list[dict]]
    dropped: Counter = field(default_factory=Counter)


class LLMDetector:
    """Detection on what changed this round (implements the engine's ``Detector``)."""

    name = "llm"

    def __init__(self, client: LLMClient):
        self.client = client
        self.system = system_prompt("detect_system.txt")
        self.context = ContextProvider.from_env()  # repository context, within the budget

    async def detect(self, ctx: RoundContext) -> Detection:
        plan = self.plan(ctx)
        detection = Detection([], dropped=Counter(plan.dropped))
        answers = await self.client.all_json(plan.calls, parse_findings)
        floor = self.client.config.min_confidence
        for answer in answers:
            detection.usage.add(answer.usage)
            detection.dropped.update(answer.dropped)
            if answer.value is None:
                continue
            findings, item_dropped = answer.value
            detection.dropped.update(item_dropped)
            for finding in findings:
                if finding.confidence < floor:
                    detection.dropped["low_confidence"] += 1
                elif echoes(finding.description, self.system):
                    detection.dropped["echoes_prompt"] += 1  # the answer shape pasted back
                else:
                    checked = checked_fix(finding, ctx.files)
                    if checked.fix is None and finding.fix is not None:
                        detection.dropped["fix_not_on_quoted_lines"] += 1  # kept, as text
                    detection.findings.append(checked)
        return detection

    def plan(self, ctx: RoundContext) -> DetectPlan:
        """The prompts for this round, split by file and capped to the token budget (no I/O)."""
        header = self.header(ctx)
        fixed = self.client.count_tokens(self._messages(header, []))
        room = self.client.config.max_prompt_tokens - fixed - TOKEN_MARGIN
        if room <= 0:
            files = {fd.path for fd in authored_changes(ctx)}
            log.warning("the detection prompt's header alone is over the token budget")
            return DetectPlan([], Counter({"over_budget_files": len(files)} if files else {}))
        pieces = self.pieces(ctx, room)
        batches, left_out = _pack(pieces, self.context.diff_room(room),
                                  max(self.client.config.max_calls, 1))
        if left_out:  # no room kept for context when the diff needs all of it
            batches, left_out = _pack(pieces, room, max(self.client.config.max_calls, 1))
        plan = DetectPlan([])
        rules = ctx.settings.paths
        for batch in batches:
            messages = self._messages(header, batch, rules)
            while len(batch) > 1 and \
                    self.client.count_tokens(messages) > self.client.config.max_prompt_tokens:
                left_out.append(batch.pop())
                messages = self._messages(header, batch, rules)
            plan.calls.append(self.context.extend(messages, ctx, [p.path for p in batch],
                                                  self.client))
        if left_out:
            plan.dropped["over_budget_files"] = len({p.path for p in left_out})
        return plan

    def _messages(self, header: str, pieces: list[Piece],
                  rules: list[PathRule] = ()) -> list[dict]:
        diff = "\n".join(p.text for p in pieces) or "(no changed files in this part)"
        told = instructions_for(rules, [p.path for p in pieces])
        if told:  # the repository's own instructions for these files (its default branch)
            diff += "\n\n" + "\n".join(
                data_block("path_instructions", escape_data(text), glob=glob)
                for glob, text in told)
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": f"{header}\n\n{diff}\n\nReview the <round_diff> "
                 "blocks above and answer with the JSON object only."}]

    def header(self, ctx: RoundContext) -> str:
        """The data blocks every detection call of the round repeats: PR, ledger, discussion."""
        parts = [
            data_block("pr_title", escape_data(cap_text(ctx.title, 300))),
            data_block("pr_body", escape_data(cap_text(ctx.body, MAX_BODY_CHARS))),
        ]
        if ctx.linked_issues:
            parts.append(data_block("linked_issues", "\n".join(
                data_block("issue", escape_data(cap_text(i.get("body"), MAX_ISSUE_CHARS)),
                       number=i.get("number"), title=i.get("title"))
                for i in ctx.linked_issues[:MAX_ISSUES])))
        parts.append(data_block("tracked_defects", tracked_block(ctx) or "(none)"))
        if ctx.discussion:
            parts.append(data_block("discussion", discussion_block(ctx.discussion)))
        return "\n".join(parts)

    def pieces(self, ctx: RoundContext, room: int) -> list[Piece]:
        """This round's diff as prompt pieces, highest priority first, each within ``room``."""
        out: list[Piece] = []
        for fd in sorted(authored_changes(ctx), key=file_priority):
            if ctx.settings.skipped(fd.path):  # ignore_paths, and paths entries with skip
                continue
            out.extend(self._split(fd, room))
        return out

    def _split(self, fd: FileDiff, room: int) -> list[Piece]:
        rank = file_priority(fd)
        whole = data_block("round_diff", escape_data(fd.text()), file=fd.path)
        tokens = self.client.count_text(whole)
        if tokens <= room:
            return [Piece(fd.path, whole, tokens, rank)]
        cap = room * 0.9  # slack for the part's own tags and token-count drift
        groups: list[list[str]] = [[]]
        used = 0.0
        for hunk in fd.hunks:
            lines = hunk.lines
            size = self.client.count_text("\n".join(lines))
            # A hunk too big for one call is cut at line boundaries.
            sizes = [size] if size <= cap else [self.client.count_text(ln) + 1 for ln in lines]
            chunks = [lines] if size <= cap else [[ln] for ln in lines]
            for chunk, tokens in zip(chunks, sizes):
                if groups[-1] and used + tokens > cap:
                    groups.append([])
                    used = 0.0
                groups[-1].extend(chunk)
                used += tokens
        out = []
        for n, group in enumerate(groups, start=1):
            text = data_block("round_diff", escape_data("\n".join(group)), file=fd.path,
                          part=f"{n}/{len(groups)}")
            out.append(Piece(fd.path, text, self.client.count_text(text), rank + (n,)))
        return out


def _pack(pieces: list[Piece], room: int, max_calls: int) -> tuple[list[list[Piece]], list[Piece]]:
    """First-fit the pieces (in priority order) into at most ``max_calls`` calls."""
    batches: list[list[Piece]] = []
    sizes: list[int] = []
    left_out: list[Piece] = []
    for piece in pieces:
        if room <= 0 or piece.tokens > room:
            left_out.append(piece)
            continue
        for i, size in enumerate(sizes):
            if size + piece.tokens <= room:
                batches[i].append(piece)
                sizes[i] += piece.tokens
                break
        else:
            if len(batches) < max_calls:
                batches.append([piece])
                sizes.append(piece.tokens)
            else:
                left_out.append(piece)
    return batches, left_out


def tracked_block(ctx: RoundContext) -> str:
    """The ledger's tracked defects: key, state, location now, description, and (for unresolved
    ones in files this round touches) the current code.

    Unresolved defects and those in touched files come first; past ``MAX_TRACKED_LISTED`` the
    rest are only counted.
    """
    try:
        diff = ctx.patches.map(ctx.round_diff)
    except DiffError:
        diff = None
    touched = diff.touched_paths() if diff else set()
    rows = []
    for defect in ctx.tracked:
        if defect.ignored:
            continue
        path, start, end = _current_anchor(defect, diff)
        rows.append((not defect.state.unresolved, path not in touched, defect, path, start, end))
    rows.sort(key=lambda r: r[:2])
    blocks = [_tracked_defect(ctx, d, p, s, e, p in touched)
              for *_, d, p, s, e in rows[:MAX_TRACKED_LISTED]]
    if len(rows) > MAX_TRACKED_LISTED:
        blocks.append(f"[... {len(rows) - MAX_TRACKED_LISTED} more tracked defects not listed]")
    return "\n".join(blocks)


def _tracked_defect(ctx: RoundContext, defect: Defect, path: str | None, start: int, end: int,
                    touched: bool) -> str:
    where = defect.location() if path is None else location(path, start, end)
    body = [data_block("description", escape_data(cap_text(defect.description, MAX_DESCRIPTION_CHARS)))]
    if defect.state.unresolved and touched and start:
        code = _numbered(ctx.files.get(path), start, min(end, start + MAX_CODE_LINES - 1))
        if code:
            body.append(data_block("current_code", escape_data(code)))
    return data_block("defect", "\n".join(body), key=defect.key, state=defect.state,
                  location=where, type=defect.type, severity=defect.severity)


def _current_anchor(defect: Defect, diff: DiffMap | None) -> tuple[str | None, int, int]:
    """Where a tracked defect's lines stand after this round's push."""
    if not defect.anchored:
        return None, 0, 0
    start, end = defect.line_start, defect.line_end or defect.line_start
    if diff is None or defect.side == "LEFT":
        return defect.path, start, end
    try:
        mapped = diff.map(Anchor(defect.path, start, end))
    except ValueError:
        return defect.path, start, end
    if mapped.anchor is None:
        return None, 0, 0
    return mapped.anchor.path, mapped.anchor.start, mapped.anchor.end


def discussion_block(discussion: list[dict]) -> str:
    """People's comments since the last round, each in a ``<comment>`` block, capped."""
    out, used = [], 0
    for item in discussion:
        body = escape_data(cap_text(item.get("body"), 1200))
        if used + len(body) > MAX_DISCUSSION_CHARS:
            out.append("[... more comments left out]")
            break
        used += len(body)
        user = item.get("user")
        author = item.get("author") or (user.get("login") if isinstance(user, dict) else None)
        out.append(data_block("comment", body, author=author, role=item.get("role"),
                          path=item.get("path"), line=item.get("line")))
    return "\n".join(out)
