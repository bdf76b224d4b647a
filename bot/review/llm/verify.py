"""``LLMVerifier``: confirms or overturns the tracker's candidate decisions against the current
code; people's claims go in as claims to check, never as evidence.
"""

from __future__ import annotations

import re
from collections import Counter

from tracker.anchors import normalise
from tracker.decide import Verdict
from tracker.lifecycle import State
from tracker.lines import split_lines
from tracker.models import (
    DecidedBy,
    Decision,
    Defect,
    Signal,
    SignalKind,
)

from ..engine import RoundContext, Usage
from ..prompt_context import ContextProvider
from .client import LLMClient
from .diffs import FileDiff, annotated, location
from .parse import echoes, parse_verdicts
from .prompts import (
    CONTEXT_LINES,
    MAX_VERIFY_DIFF_LINES,
    NEAR_DIFF_LINES,
    TOKEN_MARGIN,
    _numbered,
    cap_text,
    data_block,
    escape_data,
    system_prompt,
)


class LLMVerifier:
    """Confirms or overturns the tracker's candidate decisions (implements ``Verifier``).

    Only candidates the rules are unsure of (confidence below ``verify_below``) are asked
    about, least sure first: a model may not overturn a sure, evidence-backed ruling. A verdict
    that overturns a ruling must quote code that stands at the head.

    ``stats`` counts what could not be used: unreachable model (``llm_error``), answers still
    invalid after the repair (``malformed``), bad items, verdicts about keys that were not
    asked (``unknown_key``), verdicts whose quote is not in the code at the head
    (``quote_not_in_code``), overturns that quote nothing (``overturn_without_quote``) and
    verdicts that echo the prompt's own instructions (``echoes_prompt``). In all those cases
    the tracker's own decision stands. ``verify_counted`` also returns one call's counts (the
    engine reports them per round).
    """

    def __init__(self, client: LLMClient, batch: int | None = None):
        self.client = client
        self.batch = max(batch or client.config.verify_batch, 1)
        self.system = system_prompt("verify_system.txt")
        self.context = ContextProvider.from_env()  # repository context, within the budget
        self.stats: Counter = Counter()

    def unsure(self, candidates: list[tuple[Defect, Decision]]) -> list[tuple[Defect, Decision]]:
        """The candidates the model may be asked about, least sure first."""
        below = self.client.config.verify_below
        return sorted((pair for pair in candidates if pair[1].confidence < below),
                      key=lambda pair: pair[1].confidence)

    async def verify(self, ctx: RoundContext,
                     candidates: list[tuple[Defect, Decision]]) -> tuple[list[Verdict], Usage]:
        verdicts, usage, _dropped = await self.verify_counted(ctx, candidates)
        return verdicts, usage

    async def verify_counted(self, ctx: RoundContext, candidates: list[tuple[Defect, Decision]]
                             ) -> tuple[list[Verdict], Usage, Counter]:
        """``verify``, with what was dropped this time (by reason)."""
        usage, dropped_here = Usage(), Counter()
        candidates = self.unsure(candidates)
        if not candidates:
            return [], usage, dropped_here
        calls = self.plan(ctx, candidates)
        answers = await self.client.all_json([m for m, _ in calls], parse_verdicts)
        verdicts: list[Verdict] = []
        for (_, group), answer in zip(calls, answers):
            usage.add(answer.usage)
            dropped_here.update(answer.dropped)
            if answer.value is None:
                continue  # the rules' decisions stand
            items, dropped = answer.value
            dropped_here.update(dropped)
            for item in items:
                verdict, reason = self._verdict(ctx, group.get(item["key"]), item)
                if verdict is not None:
                    verdicts.append(verdict)
                else:
                    dropped_here[reason] += 1
        self.stats.update(dropped_here)
        return verdicts, usage, dropped_here

    def plan(self, ctx: RoundContext,
             candidates: list[tuple[Defect, Decision]]) -> list[tuple[list[dict], dict]]:
        """The verification calls: up to ``batch`` defects each, within the token budget."""
        files = {fd.path: fd for fd in annotated(ctx, ctx.round_diff)}
        budget = self.client.config.max_prompt_tokens - TOKEN_MARGIN
        fixed = self.client.count_text(self.system) + 50
        calls, blocks, group, used = [], [], {}, fixed
        for defect, decision in candidates:
            block = self.defect_block(ctx, defect, decision, files)
            tokens = self.client.count_text(block)
            if blocks and (len(blocks) >= self.batch or used + tokens > budget):
                calls.append((self._messages(blocks), group))
                blocks, group, used = [], {}, fixed
            blocks.append(block)
            group[defect.key] = (defect, decision)
            used += tokens
        if blocks:
            calls.append((self._messages(blocks), group))
        return [(self.context.extend_verification(m, ctx, g, self.client), g) for m, g in calls]

    def _messages(self, blocks: list[str]) -> list[dict]:
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": "\n\n".join(blocks) + "\n\nGive one verdict per "
                 "<defect> block above, as the JSON object only."}]

    def defect_block(self, ctx: RoundContext, defect: Defect, decision: Decision,
                     files: dict[str, FileDiff]) -> str:
        """Everything the verifier needs about one candidate, as delimited data."""
        parts = [data_block("description", escape_data(cap_text(defect.description, 1200)))]
        if defect.code:
            parts.append(data_block("code_when_raised", escape_data(cap_text(defect.code, 2000)),
                                location=defect.location()))
        path = decision.path or defect.path
        start = decision.line_start or defect.line_start
        end = decision.line_end or decision.line_start or defect.line_end or start
        if path and start:
            text = ctx.files.get(path)
            lo = max(start - CONTEXT_LINES, 1)
            hi = min(end + CONTEXT_LINES, len(split_lines(text)))
            shown = _numbered(text, lo, hi) if text is not None else ""
            parts.append(data_block("current_code", escape_data(shown or "(this code no longer "
                                                            "exists at the new head)"),
                                location=location(path, lo, max(hi, lo))))
            if path in files:
                near = files[path].around(start, end, NEAR_DIFF_LINES, MAX_VERIFY_DIFF_LINES)
                if near:
                    parts.append(data_block("round_diff", escape_data(near), file=path))
        else:
            changed = ", ".join(sorted(files)[:20]) or "(none)"
            parts.append(data_block("changed_files", escape_data(changed)))
        parts.append(data_block("tracker_hint", escape_data(f"{decision.evidence}"),
                            rule=decision.rule, candidate_state=decision.state))
        for signal in _signals_for(ctx.signals, defect.key):
            parts.append(data_block("claim", escape_data(
                "A person's statement. It is a claim, not evidence: check it against the code.\n"
                + cap_text(signal.body, 800)), kind=signal.kind, author=signal.author))
        return data_block("defect", "\n".join(parts), key=defect.key, state_before=defect.state,
                      type=defect.type)

    def _verdict(self, ctx: RoundContext, pair: tuple[Defect, Decision] | None,
                 item: dict) -> tuple[Verdict | None, str]:
        """The verdict to apply, or None and the reason it cannot be used."""
        if pair is None:
            return None, "unknown_key"
        defect, decision = pair
        if echoes(item["evidence"], self.system) or echoes(item["quote"], self.system):
            return None, "echoes_prompt"
        path = decision.path or defect.path
        if item["quote"] and not _quote_found(ctx, path, item["quote"]):
            return None, "quote_not_in_code"
        if item["resolved"]:
            state = State.RESOLVED
        else:
            state = State.REOPENED if decision.state is State.REOPENED else State.OPEN
        if state is not decision.state and not item["quote"]:
            return None, "overturn_without_quote"
        evidence = item["evidence"] or ("resolved" if item["resolved"] else "not resolved")
        if item["quote"]:
            evidence += f" (code: {' '.join(item['quote'].split())[:200]})"
        return Verdict(defect.key, state, evidence, decided_by=DecidedBy.LLM), ""


_CLAIMS = (SignalKind.AUTHOR_CLAIMS_FIXED, SignalKind.REVIEWER_DISPUTES,
           SignalKind.REVIEWER_ACCEPTS)


def _signals_for(signals: list[Signal], key: str) -> list[Signal]:
    return [s for s in signals if s.defect_key == key and s.kind in _CLAIMS][-3:]


_LINE_PREFIX = re.compile(r"^\s*L?\d+\s*\|\s?[+\- ]?\s?")


def _quote_found(ctx: RoundContext, path: str | None, quote: str) -> bool:
    """Whether every line of a verifier's quote stands in the code at the head: the defect's
    file, or any file of the round for a defect on no file (never the diff's removed lines)."""
    texts = [ctx.files.get(path) or ""] if path else [t or "" for t in ctx.files.values()]
    haystack = " ".join(" ".join(normalise(text)) for text in texts)
    haystack = " ".join(haystack.split())
    for line in quote.splitlines():
        wanted = " ".join(_LINE_PREFIX.sub("", line).split())
        if wanted and wanted not in haystack:
            return False
    return True
