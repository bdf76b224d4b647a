"""Replay tasks through the real bot, over HTTP, exactly as GitHub would drive it.

``Harness`` starts the fake GitHub and the real roundwise server on 127.0.0.1 (a throwaway App
key, a random webhook secret, a fresh ledger file). ``replay_task`` then plays one task: for
each round it pushes the round's head to the fake, sends a signed ``pull_request`` webhook
(``opened``, then ``synchronize``), waits until the bot's jobs for the PR are done and reads
what the ledger says; then it delivers the round's human events as the webhooks GitHub would
send (review comments, replies, reviews, PR comments, and the thread resolutions exported tasks
carry), so the bot knows them in the next round.

Each task's repository belongs to its own installation of the App (the fake keeps a rate-limit
budget per installation, as GitHub does), and each round's record says how many GitHub requests
the bot made for it (``github``: requests, free 304s, charged, token requests).

The bench reads the ledger file only to observe; everything it asks of the bot goes through
``POST /webhook``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import aiohttp
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.config.env import Config
from bot.github import RetryPolicy
from bot.review.engine import Engine
from bot.review.llm_config import LLMConfig
from bot.server.app import create_app
from bot.store import open_queue_store
from bot.store.ledger_sqlite import Ledger

from ..fake_github import FakeGitHub
from ..tasks.mcr import Task
from . import payloads
from .posted import Posted

APP_ID = 4242
INSTALLATION = 77  # the first task's installation; each later task gets the next id
OWNER = "bench"


def throwaway_key() -> tuple[str, str]:
    """A fresh RSA key pair for the fake App (private PEM, public PEM); never stored."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class BotError(RuntimeError):
    """The bot refused a delivery or a round's jobs failed."""


@dataclass
class Harness:
    """The fake GitHub and the real bot, both on loopback, plus a way to talk to the bot."""

    db_path: Path
    model: str | None = None
    api_base: str | None = None
    llm_cache: str | None = None
    workers: int = 2
    engine: Engine | None = None
    timeout: float = 300.0  # seconds to wait for one round's jobs
    llm_timeout: float | None = None  # seconds per model call (else ROUNDWISE_LLM_TIMEOUT)
    repo_settings: str | None = None  # every task repository's .github/roundwise.yml
    fake: FakeGitHub = field(init=False)
    config: Config = field(init=False)
    url: str = field(init=False)

    async def __aenter__(self) -> Self:
        private, public = throwaway_key()
        self.fake = FakeGitHub(APP_ID, public)  # each task its own installation and budget
        await self.fake.start()
        self._installations = itertools.count(INSTALLATION)
        self.config = Config(
            app_id=str(APP_ID), private_key=private, webhook_secret=secrets.token_hex(16),
            api_url=self.fake.url, db_path=str(self.db_path), workers=self.workers,
            bot_login=self.fake.bot_login,
            # the bot's model: ROUNDWISE_* as the server reads them, with the run's options
            llm=LLMConfig.from_env(os.environ, model=self.model, api_base=self.api_base,
                                   timeout=self.llm_timeout,
                                   cache_dir=self.llm_cache) if self.model else None,
        )
        app = create_app(self.config, engine=self.engine,
                         retry=RetryPolicy(attempts=4, backoff=0.05, max_wait=5.0,
                                           secondary_wait=0.2), poll=0.05)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.session = aiohttp.ClientSession()
        self.ledger = Ledger(self.db_path)  # a second connection, to observe
        self.queue = open_queue_store(str(self.db_path), ledger=self.ledger)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.session.close()
        await self._runner.cleanup()
        await self.fake.stop()
        self.ledger.close()

    async def deliver(self, event: str, payload: dict, delivery_id: str | None = None) -> dict:
        """Sign and POST one webhook; raises BotError unless the bot accepts it."""
        body = payloads.encode(payload)
        headers = payloads.headers(event, body, self.config.webhook_secret, delivery_id)
        async with self.session.post(f"{self.url}/webhook", data=body, headers=headers) as resp:
            data = await resp.json()
            if resp.status >= 300:
                raise BotError(f"{event} delivery refused ({resp.status}): {data}")
            return data

    async def idle(self, repo: str, number: int) -> None:
        """Wait until the bot has no queued or running job for the PR."""
        deadline = time.monotonic() + self.timeout
        while True:
            if self.queue.pending(repo, number) == 0:
                return
            if time.monotonic() > deadline:
                raise BotError(f"{repo}#{number}: jobs still pending after {self.timeout}s")
            await asyncio.sleep(0.02)

    def new_installation(self) -> int:
        """A fresh installation of the App, with its own rate-limit budgets, as each task's
        repository would have on GitHub (big task sets do not share one 5,000 an hour)."""
        installation_id = next(self._installations)
        self.fake.add_installation(installation_id, OWNER)
        return installation_id

    def failed_jobs(self, repo: str, number: int) -> list[dict]:
        return [{"id": j.id, "kind": j.kind, "error": j.error}
                for j in self.queue.jobs(repo, number, "failed")]


def bench_repo(task: Task) -> str:
    """A repository name for the task on the fake (unique per task, in GitHub's characters)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", task.task_id)[:100].strip(".") or "task"
    return f"{OWNER}/{name}"


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}


async def replay_task(h: Harness, task: Task,
                      on_round: Callable[[int], None] | None = None,
                      posted: list[dict] | None = None) -> list[dict]:
    """Play one task through the bot; one record per round (see ``collect``). ``on_round``
    is told each round's number once its record is taken; ``posted``, when given, gets what
    the bot posted in each round (``bench.replay.posted``)."""
    repo, number = bench_repo(task), int(task.pr.get("number") or 1)
    author = task.pr.get("author") or "author"
    installation = h.new_installation()
    h.fake.add_repo(repo, installation, files={".github/roundwise.yml": h.repo_settings}
                    if h.repo_settings else None)
    base = {p: t for p, t in task.base_files(1).items() if t is not None}
    h.fake.add_pr(repo, number, task.pr.get("title") or task.task_id, task.pr.get("body") or "",
                  author, task.pr.get("base_ref") or "main",
                  task.pr.get("base_sha") or "0" * 40, base)
    ids: dict[int, int] = {}  # task event id -> the fake's comment id
    records = []
    watcher = None
    for rnd in task.rounds:
        started = time.monotonic()
        used = h.fake.usage(installation)
        snapshot = task.snapshot(rnd.number)
        changed = {p: t for p, t in snapshot.items() if base.get(p) != t}
        h.fake.push(repo, number, rnd.head_sha, changed,
                    [c.get("message", "update") for c in rnd.commits][-20:] or None)
        action = "opened" if rnd.number == 1 else "synchronize"
        await h.deliver("pull_request", payloads.pull_request(h.fake, repo, number, action))
        await h.idle(repo, number)
        seconds = time.monotonic() - started
        failed = h.failed_jobs(repo, number)
        if failed:
            raise BotError(f"{task.task_id} round {rnd.number}: job failed: {failed[-1]}")
        records.append(collect(h.ledger, task, repo, number, rnd.number, ids, seconds))
        if on_round is not None:
            on_round(rnd.number)
        for event in rnd.events:
            await deliver_event(h, repo, number, event, ids)
        await h.idle(repo, number)
        # the bot's GitHub requests for the round: its review and the events after it
        records[-1]["github"] = _delta(h.fake.usage(installation), used)
        if posted is not None:
            watcher = watcher or Posted(h.fake, repo, number)
            posted.append(watcher.take(rnd.number, rnd.head_sha))
    return records


async def deliver_event(h: Harness, repo: str, number: int, event: dict,
                        ids: dict[int, int]) -> None:
    """Act out one human event on the fake GitHub and send the webhook it causes."""
    kind, user = event.get("kind"), event.get("author") or "reviewer"
    body = event.get("body") or ""
    if kind == "review_comment":
        parent = ids.get(event.get("in_reply_to")) if event.get("in_reply_to") else None
        try:
            comment = h.fake.add_review_comment(
                repo, number, user, event["path"], event["line"], body,
                side=event.get("side") or "RIGHT", start_line=event.get("start_line"),
                in_reply_to=parent)
        except (ValueError, KeyError):
            # Not a line GitHub would take (or a reply to an unknown comment): keep the
            # remark as a PR comment so nothing is lost.
            where = f"`{event.get('path')}:{event.get('line')}`: " if event.get("path") else ""
            comment = h.fake.add_issue_comment(repo, number, user, where + body)
            ids[event["id"]] = comment["id"]
            await h.deliver("issue_comment", payloads.issue_comment(h.fake, repo, number,
                                                                    comment))
            return
        ids[event["id"]] = comment["id"]
        await h.deliver("pull_request_review_comment",
                        payloads.review_comment(h.fake, repo, number, comment))
    elif kind == "issue_comment":
        comment = h.fake.add_issue_comment(repo, number, user, body)
        ids[event["id"]] = comment["id"]
        await h.deliver("issue_comment", payloads.issue_comment(h.fake, repo, number, comment))
    elif kind == "review":
        state = (event.get("state") or "COMMENTED").upper()
        review = h.fake.add_review(repo, number, user, state, body)
        ids[event["id"]] = review["id"]
        await h.deliver("pull_request_review", payloads.review(h.fake, repo, number, review))
    elif kind in ("thread_resolved", "thread_unresolved") and ids.get(event.get("comment_id")):
        # Exported tasks (``bench.tasks.export``) carry people's thread actions: act them out too.
        try:
            root = ids[event["comment_id"]]
            thread = h.fake.resolve_thread(repo, number, root, user) \
                if kind == "thread_resolved" else h.fake.unresolve_thread(repo, number, root)
        except KeyError:  # the thread's comment became a PR comment: no thread to act on
            return
        await h.deliver("pull_request_review_thread", payloads.review_thread(
            h.fake, repo, number, thread, kind.removeprefix("thread_"), sender=user))


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
        for d in ledger.defects(pr["id"]):
            states = history.get(d.key, {})
            state = _state_at(states, t)
            if state is None or d.ignored:
                continue
            defects.append({
                "key": d.key, "path": d.path, "line_start": d.line_start, "line_end": d.line_end,
                "side": d.side, "description": d.description, "state": state,
                "previous_state": _state_at(states, t - 1), "type": d.type,
                "severity": d.severity, "origin": d.origin.value, "raised_round": d.raised_round,
                "comment_ids": sorted(back[c] for c in d.comment_ids if c in back),
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
