"""What every code host's replay shares: the bot on loopback, the round loop, the ledger read.

``BotHarness`` starts the real roundwise server on 127.0.0.1 for a ``Config`` its host's harness
builds (around that host's fake), opens a second ledger connection to observe, and waits for a
pull request's jobs (``idle``). ``play`` is the loop of one task: for each round the host
pushes the head and delivers the hook that makes it a round (``TaskOnHost.push``), the loop
waits for the bot, reads the ledger (``collect``), then the host acts out the round's human
events and the loop counts the host's requests the round cost. A host's replay says only how
its fake is set up and driven (``bench.replay.github``, ``bench.replay.gitlab``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from bot.config.env import Config
from bot.forge.calls import RetryPolicy
from bot.review.engine import Engine
from bot.review.llm_config import LLMConfig
from bot.server.app import create_app
from bot.store import open_queue_store
from bot.store.ledger_sqlite import Ledger
from tracker import keys

from ..tasks.mcr import Task

__all__ = ["BotError", "BotHarness", "TaskOnHost", "collect", "play"]


class BotError(RuntimeError):
    """The bot refused a delivery or a round's jobs failed."""


@dataclass
class BotHarness:
    """The real bot on loopback, for one host's fake; ``serve`` it from ``__aenter__``."""

    db_path: Path
    model: str | None = None
    api_base: str | None = None
    llm_cache: str | None = None
    workers: int = 2
    engine: Engine | None = None
    timeout: float = 300.0  # seconds to wait for one round's jobs
    llm_timeout: float | None = None  # seconds per model call (else ROUNDWISE_LLM_TIMEOUT)
    repo_settings: str | None = None  # every task repository's settings file
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(
        attempts=4, backoff=0.05, max_wait=5.0, secondary_wait=0.2))
    config: Config = field(init=False)
    url: str = field(init=False)

    def llm(self) -> LLMConfig | None:
        """The bot's model: ROUNDWISE_* as the server reads them, with the run's options."""
        if not self.model:
            return None
        return LLMConfig.from_env(os.environ, model=self.model, api_base=self.api_base,
                                  timeout=self.llm_timeout, cache_dir=self.llm_cache)

    async def serve(self, config: Config) -> None:
        """Start the server for ``config`` and the connections that observe it."""
        self.config = config
        self.app = create_app(config, engine=self.engine, retry=self.retry, poll=0.05)
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        self.session = aiohttp.ClientSession()
        self.ledger = Ledger(self.db_path)  # a second connection, to observe
        self.queue = open_queue_store(str(self.db_path), ledger=self.ledger)

    async def __aexit__(self, *exc) -> None:
        await self.session.close()
        await self._runner.cleanup()
        await self.fake.stop()
        self.ledger.close()

    async def idle(self, repo: str, number: int) -> None:
        """Wait until the bot has no queued or running job for the pull request."""
        deadline = time.monotonic() + self.timeout
        while self.queue.pending(repo, number):
            if time.monotonic() > deadline:
                raise BotError(f"{repo} {number}: jobs still pending after {self.timeout}s")
            await asyncio.sleep(0.02)

    def failed_jobs(self, repo: str, number: int) -> list[dict]:
        return [{"id": j.id, "kind": j.kind, "error": j.error}
                for j in self.queue.jobs(repo, number, "failed")]


class TaskOnHost(Protocol):
    """One task's pull request on a host's fake, as the round loop drives it."""

    repo: str  # the ledger's key for the repository
    number: int

    async def push(self, rnd: Any) -> None:
        """Push the round's head and deliver the hook that makes it a round."""

    async def deliver_event(self, event: dict, ids: dict[int, int]) -> None:
        """Act out one human event and deliver its hook; ``ids``: event id -> host id."""

    def comment_ids(self, ids: dict[int, int]) -> dict[int, int]:
        """``ids`` as the ledger's comment ids."""

    def usage(self) -> dict[str, int]:
        """The host's request counters for the task's repository so far."""

    def posted(self, round_number: int, head: str) -> dict:
        """What the bot posted in the round (``bench.replay.posted``'s shapes)."""


async def play(h: BotHarness, task: Task, on: TaskOnHost,
               on_round: Callable[[int], None] | None = None,
               posted: list[dict] | None = None) -> list[dict]:
    """Play one task; one record per round (``collect``), with the host's requests of the
    round (its review and the events after it) under ``github``."""
    ids: dict[int, int] = {}  # task event id -> the host's comment id
    records = []
    for rnd in task.rounds:
        started = time.monotonic()
        used = on.usage()
        await on.push(rnd)
        await h.idle(on.repo, on.number)
        seconds = time.monotonic() - started
        failed = h.failed_jobs(on.repo, on.number)
        if failed:
            raise BotError(f"{task.task_id} round {rnd.number}: job failed: {failed[-1]}")
        records.append(collect(h.ledger, task, on.repo, on.number, rnd.number,
                               on.comment_ids(ids), seconds))
        if on_round is not None:
            on_round(rnd.number)
        for event in rnd.events:
            await on.deliver_event(event, ids)
        await h.idle(on.repo, on.number)
        after = on.usage()
        records[-1]["github"] = {k: after[k] - used.get(k, 0) for k in after}
        if posted is not None:
            posted.append(on.posted(rnd.number, rnd.head_sha))
    return records


def collect(ledger: Ledger, task: Task, repo: str, number: int, t: int, ids: dict[int, int],
            seconds: float) -> dict:
    """What the ledger says at round ``t``: every tracked defect with its state."""
    back = {fake: event for event, fake in ids.items()}
    pr = ledger.find_pull_request(repo, number)
    defects, tokens = [], {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
    if pr is not None:
        history = ledger.states_by_round(pr["id"])
        decided = {d.get("key"): d for d in (ledger.plan(pr["id"], t) or {}).get("decisions")
                   or []}
        every = ledger.defects(pr["id"])
        # a comment's later requests (D3b...) carry its comment, which the first (D3a) keeps
        first_ids = {keys.group(d.key): d.comment_ids for d in every if keys.part(d.key) == "a"}
        for d in every:
            comment_ids = d.comment_ids or (first_ids.get(keys.group(d.key), [])
                                            if keys.part(d.key) else [])
            states = history.get(d.key, {})
            state = _state_at(states, t)
            if state is None or d.ignored:
                continue
            defects.append({
                "key": d.key, "path": d.path, "line_start": d.line_start, "line_end": d.line_end,
                "side": d.side, "description": d.description, "state": state,
                "previous_state": _state_at(states, t - 1), "type": d.type,
                "severity": d.severity, "origin": d.origin.value, "raised_round": d.raised_round,
                "comment_ids": sorted(back[c] for c in comment_ids if c in back),
                "rule": d.rule,
                # the round's decision's confidence, while the state is still that decision's
                "decision_confidence": decided[d.key].get("confidence")
                if d.key in decided and decided[d.key].get("state") == state else None,
            })
        row = ledger.round(pr["id"], t)
        if row:
            tokens = {k: row[k] or 0 for k in tokens}
        saved = ledger.plan(pr["id"], t) or {}
        usage = saved.get("usage") or {}
        tokens.update(llm_calls=int(usage.get("calls") or 0),
                      llm_failed=int(usage.get("failed") or 0),
                      dropped=dict(saved.get("dropped") or {}))
    return {"task": task.task_id, "language": task.language, "round": t,
            "rounds": len(task.rounds), "kind": "aacr" if task.task_id.startswith("aacr__")
            else "mcr", "defects": defects, "seconds": round(seconds, 3), **tokens}


def _state_at(states: dict[int, str], t: int) -> str | None:
    known = [r for r in states if r <= t]
    return states[max(known)] if known else None
