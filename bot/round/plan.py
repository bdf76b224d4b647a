"""A round's plan and record: typed values that the ledger keeps as JSON between the steps.

``plan(engine, inputs)`` turns what ``gather`` collected into a ``RoundPlan``: the decision for
every tracked defect and the new defects with their reserved keys. It reads neither the forge
nor the ledger (the engine may call a model). The plan is saved before anything is posted, so a
round that fails part-way resumes from it; ``RoundRecord`` is what ``publish`` posted (comment
and thread ids), saved with the plan and written into the ledger by ``commit``.

``to_json``/``from_json`` are the only place a plan turns into plain data and back.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field

from tracker.learnings import kind_of
from tracker.models import Decision, Finding

from ..pr.overview import diffstat
from ..review.engine import Engine, Usage
from .gather import RoundInputs

__all__ = ["NewDefect", "RoundPlan", "RoundRecord", "plan"]


@dataclass
class NewDefect:
    """A defect this round raises: its reserved key, the finding and the code it sits on."""

    key: str
    finding: Finding
    code: str | None = None

    def to_json(self) -> dict:
        return {"key": self.key, "finding": self.finding.to_dict(), "code": self.code}

    @classmethod
    def from_json(cls, data: dict) -> NewDefect:
        return cls(data["key"], Finding(**data["finding"]), data.get("code"))


@dataclass
class RoundRecord:
    """What publishing a round left on the forge, for the ledger to remember."""

    new: dict[str, int] = field(default_factory=dict)  # key -> inline comment id
    replies: dict[str, int] = field(default_factory=dict)  # key -> reply id
    threads: dict[str, str] = field(default_factory=dict)  # key -> resolved thread id
    not_inline: list[str] = field(default_factory=list)  # keys the forge refused inline
    vanished: list[str] = field(default_factory=list)  # keys whose thread was deleted
    summary_id: int | None = None  # the sticky summary comment, and a hash of what it shows:
    summary_sha: str | None = None  # a person's action re-renders it only when that changes

    def to_json(self) -> dict:
        out: dict = {}
        for name in ("new", "replies", "threads", "not_inline", "vanished", "summary_id",
                     "summary_sha"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict | None) -> RoundRecord:
        data = data or {}
        return cls(new={k: int(v) for k, v in (data.get("new") or {}).items()},
                   replies={k: int(v) for k, v in (data.get("replies") or {}).items()},
                   threads=dict(data.get("threads") or {}),
                   not_inline=list(data.get("not_inline") or []),
                   vanished=list(data.get("vanished") or []),
                   summary_id=int(data["summary_id"]) if data.get("summary_id") else None,
                   summary_sha=data.get("summary_sha"))


@dataclass
class RoundPlan:
    """One round's outcome, decided and not yet published or recorded."""

    decisions: list[Decision]
    new: list[NewDefect]
    repeated: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    notes: list[str] = field(default_factory=list)
    posted: RoundRecord = field(default_factory=RoundRecord)
    # [path, added, removed] per file of the diff the summary's overview shows: the whole PR
    # on the first round ("pr"), the push since the last review later ("push").
    files: list[list] = field(default_factory=list)
    scope: str = "pr"
    walkthrough: str | None = None  # the model's overview of the PR (first round, LLM only)
    # new findings held back (not posted, not tracked): {"finding": ..., "why": "muted" or
    # "converge"}, and for each muted kind that held one back, [dismissed, judged]
    held: list[dict] = field(default_factory=list)
    muted: dict[str, list[int]] = field(default_factory=dict)
    converge: list = field(default_factory=list)  # [after_round, min_severity] when it held any
    skipped: list[str] = field(default_factory=list)  # what the round did not review, and why
    # the changed files it did not review: [path, why] (``bot.forge.coverage``), and how many
    # the host did not list; the check run reads them from the saved plan
    unreviewed: list[list[str]] = field(default_factory=list)
    unlisted: int = 0

    def decision(self, key: str) -> Decision | None:
        return next((d for d in self.decisions if d.key == key), None)

    def to_json(self) -> dict:
        return {
            "decisions": [_decision_json(d) for d in self.decisions],
            "new": [item.to_json() for item in self.new],
            "repeated": list(self.repeated),
            "dropped": dict(self.dropped),
            "usage": asdict(self.usage),
            "notes": list(self.notes),
            "posted": self.posted.to_json(),
            "files": [list(f) for f in self.files],
            "scope": self.scope,
            "walkthrough": self.walkthrough,
            "held": [dict(h) for h in self.held],
            "muted": {k: list(v) for k, v in self.muted.items()},
            "converge": list(self.converge),
            "skipped": list(self.skipped),
            "unreviewed": [list(u) for u in self.unreviewed],
            "unlisted": self.unlisted,
        }

    @classmethod
    def from_json(cls, data: dict) -> RoundPlan:
        return cls(
            decisions=[Decision(**d) for d in data.get("decisions") or []],
            new=[NewDefect.from_json(i) for i in data.get("new") or []],
            repeated=list(data.get("repeated") or []),
            dropped=dict(data.get("dropped") or {}),
            usage=Usage(**(data.get("usage") or {})),
            notes=list(data.get("notes") or []),
            posted=RoundRecord.from_json(data.get("posted")),
            files=[list(f) for f in data.get("files") or []],
            scope=data.get("scope") or "pr",
            walkthrough=data.get("walkthrough"),
            held=[dict(h) for h in data.get("held") or []],
            muted={k: list(v) for k, v in (data.get("muted") or {}).items()},
            converge=list(data.get("converge") or []),
            skipped=list(data.get("skipped") or []),
            unreviewed=[list(u) for u in data.get("unreviewed") or []],
            unlisted=int(data.get("unlisted") or 0),
        )

    def held_findings(self) -> list[tuple[Finding, str]]:
        return [(Finding(**h["finding"]), h["why"]) for h in self.held]


def _decision_json(d: Decision) -> dict:
    out = asdict(d)
    out["state"], out["decided_by"] = str(d.state), str(d.decided_by)
    return out


async def plan(engine: Engine, inputs: RoundInputs) -> RoundPlan:
    """Review the round and reserve keys for its new defects (no forge, no ledger)."""
    ctx = inputs.context
    result = await engine.review(ctx)
    walkthrough = None
    if ctx.previous_head is None and getattr(engine, "walkthrough", None) is not None:
        walkthrough, usage = await engine.walkthrough.write(ctx)
        result.usage.add(usage)
    stats = await asyncio.to_thread(  # a parse of the diff: off the loop, as the engine's
        diffstat, ctx.pr_diff if ctx.previous_head is None else ctx.round_diff)
    return RoundPlan(
        decisions=list(result.decisions),
        new=[NewDefect(f"D{inputs.first_key + i}", f,
                       ctx.code_at(f.path, f.line_start, f.line_end))
             for i, f in enumerate(result.findings)],
        repeated=sorted(result.repeated),
        dropped=dict(result.dropped),
        usage=result.usage,
        notes=list(result.notes),
        files=[s.to_json() for s in stats],
        scope="pr" if ctx.previous_head is None else "push",
        walkthrough=walkthrough,
        held=[{"finding": f.to_dict(), "why": why} for f, why in result.held],
        muted={kind: [ctx.muted[kind].dismissed, ctx.muted[kind].judged]
               for kind in sorted({kind_of(f.rule, f.type) for f, why in result.held
                                   if why == "muted"}) if kind in ctx.muted},
        converge=[ctx.settings.converge_after, ctx.settings.converge_severity]
        if any(why == "converge" for _f, why in result.held) else [],
        skipped=list(ctx.skipped),
        unreviewed=[[u.path, u.why] for u in ctx.unreviewed],
        unlisted=ctx.unlisted,
    )
