"""The stateless baseline: the paper's pure-LLM protocol, for side-by-side comparison.

At round t the model gets one prompt with the PR, the diffs of rounds 1..t and the people's
events of rounds 1..t-1, and answers with findings each carrying a state. There is no ledger:
nothing ties a round's findings to the previous round's, which is exactly what roundwise's
tracker adds. Records have the same shape as the bot's, so the same scorer reads them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bot.review.llm import LLMClient, review_stateless
from bot.review.llm_config import LLMConfig

from .tasks import Task


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
