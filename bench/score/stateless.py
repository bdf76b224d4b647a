"""The stateless baseline: the paper's pure-LLM protocol, for side-by-side comparison.

At round t the model gets one prompt with the PR, the diffs of rounds 1..t and the people's
events of rounds 1..t-1, and answers with findings each carrying a state. There is no ledger:
nothing ties a round's findings to the previous round's, which is exactly what roundwise's
tracker adds. Records have the same shape as the bot's, so the same scorer reads them.

``stateless_messages``/``parse_stateless`` build and read the baseline's prompt with the
reviewer's own data blocks and parser, so both sides quote untrusted text the same way.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

from bot.review.llm.client import JsonAnswer, LLMClient
from bot.review.llm.diffs import annotate_diff
from bot.review.llm.parse import ItemError, finding_from_item, list_field, load_json_object
from bot.review.llm.prompts import (
    MAX_BODY_CHARS,
    MAX_ISSUE_CHARS,
    MAX_ISSUES,
    cap_text,
    data_block,
    escape_data,
    system_prompt,
)
from bot.review.llm_config import LLMConfig
from tracker.lifecycle import parse_state

from ..tasks.mcr import Task


async def stateless_records(task: Task, model: str, *, api_base: str | None = None,
                            cache_dir: str | Path | None = None,
                            client: LLMClient | None = None) -> list[dict]:
    """One record per round of ``task`` from the stateless prompt."""
    if client is None:  # the bot's model settings (ROUNDWISE_*), with the run's options
        config = LLMConfig.from_env(os.environ, model=model, api_base=api_base)
        client = LLMClient(config, cache_dir=cache_dir)
    rounds = [{"diff": r.diff, "files": r.files} for r in task.rounds]
    events = [r.events for r in task.rounds]
    records = []
    for t in range(1, len(task.rounds) + 1):
        started = time.monotonic()
        answer = await review_stateless(client, task.pr, rounds, events, t)
        items = answer.value[0] if answer.value else []
        defects = [
            {"key": f"R{t}S{i + 1}", "path": item.get("path"),
             "line_start": item.get("line_start"), "line_end": item.get("line_end"),
             "side": item.get("side") or "RIGHT", "description": item.get("description", ""),
             "state": item["state"], "previous_state": None, "type": item.get("type"),
             "severity": item.get("severity"), "origin": "bot", "raised_round": t,
             "comment_ids": [], "rule": None}
            for i, item in enumerate(items)
        ]
        records.append({
            "task": task.task_id, "language": task.language, "round": t,
            "rounds": len(task.rounds), "kind": "aacr" if task.negatives else "mcr",
            "defects": defects, "seconds": round(time.monotonic() - started, 3),
            "prompt_tokens": answer.usage.prompt_tokens,
            "completion_tokens": answer.usage.completion_tokens, "cost": answer.usage.cost,
        })
    return records


def stateless_messages(pr: dict, rounds: list[dict], events: list[list[dict]],
                       t: int) -> list[dict]:
    """The paper's stateless prompt for round ``t``: the whole history in one prompt.

    ``rounds[i]`` has ``diff`` (base..head of round i+1) and ``files``; ``events[i]`` are the
    people's events after round i+1. Rounds 1..t's diffs and the events of rounds 1..t-1 go in.
    """
    parts = [
        data_block("pr_title", escape_data(pr.get("title"))),
        data_block("pr_body", escape_data(cap_text(pr.get("body"), MAX_BODY_CHARS))),
    ]
    issues = pr.get("linked_issues") or []
    if issues:
        parts.append(data_block("linked_issues", "\n".join(
            data_block("issue", escape_data(cap_text(i.get("body"), MAX_ISSUE_CHARS)),
                   number=i.get("number"), title=i.get("title")) for i in issues[:MAX_ISSUES])))
    for i in range(1, t + 1):
        diff = "\n".join(data_block("round_diff", escape_data(fd.text()), file=fd.path)
                         for fd in annotate_diff(rounds[i - 1].get("diff") or ""))
        round_parts = [diff or "(empty diff)"]
        if i < t and i - 1 < len(events) and events[i - 1]:
            round_parts.append(data_block("events", "\n".join(
                data_block("event", escape_data(e.get("body")), id=e.get("id"), kind=e.get("kind"),
                       author=e.get("author"), role=e.get("role"), path=e.get("path"),
                       line=e.get("line"), in_reply_to=e.get("in_reply_to"),
                       state=e.get("state"))
                for e in events[i - 1])))
        parts.append(data_block("round", "\n".join(round_parts), number=i))
    user = "\n".join(parts) + (f"\n\nReview round {t} (the latest) and answer with the JSON "
                               "object only.")
    return [{"role": "system", "content": system_prompt("stateless_system.txt")},
            {"role": "user", "content": user}]


def parse_stateless(text: str) -> tuple[list[dict], Counter]:
    """Findings with a state (New/Open/Resolved/Reopened) from a stateless answer.

    Each item is a Finding's fields plus ``state``; unusable items are dropped and counted.
    Raises OutputError when the answer as a whole is unusable.
    """
    items = list_field(load_json_object(text), "findings")
    out, dropped = [], Counter()
    for item in items:
        try:
            finding = finding_from_item(item)
            state = parse_state(str(item.get("state") or "New"))
        except (ItemError, ValueError):
            dropped["invalid_item"] += 1
            continue
        out.append({**finding.to_dict(), "state": str(state)})
    return out, dropped


async def review_stateless(client: LLMClient, pr: dict, rounds: list[dict],
                           events: list[list[dict]], t: int) -> JsonAnswer:
    """Ask the stateless baseline about round ``t``; ``value`` is ``(items, dropped)`` or None."""
    return await client.complete_json(stateless_messages(pr, rounds, events, t), parse_stateless)
