"""Replay tasks through the real bot and the fake GitLab, as GitLab would drive it.

``roundwise bench run --forge gitlab`` uses this instead of ``bench.replay.github``: each task gets
a project on the fake GitLab and a merge request; for round t the round's head is pushed (a new
MR diff version), a Merge Request Hook (``open``, then ``update`` with ``oldrev``) is sent to
``POST /gitlab/webhook`` with the hook's secret token, the bench waits for the bot's jobs and
reads the ledger, then acts out the round's human events as a person on GitLab would (a note
on a line of the latest version, a reply in a discussion, a plain MR note, resolving a
discussion) and sends the hooks GitLab sends for them (a Note Hook; for a resolution, an MR
update). A line GitLab would not take becomes a plain note, as on GitHub. The tracker never
learns the host, so the tracking figures must equal those of a run through the fake GitHub.
"""

from __future__ import annotations

import asyncio
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

from bot.config.env import Config
from bot.github import RetryPolicy
from bot.gitlab import GitLabConfig
from bot.gitlab.ids import from_note, repo_key
from bot.review.engine import Engine
from bot.review.llm_config import LLMConfig
from bot.server.app import create_app
from bot.store import open_queue_store
from bot.store.ledger_sqlite import Ledger

from ..fake_gitlab import FakeGitLab, hooks
from ..tasks.mcr import Task
from .github import BotError, collect

__all__ = ["GitLabHarness", "GitLabPosted", "bench_project", "deliver_event", "replay_task"]

GROUP = "bench"
BOT_LOGIN = "roundwise[bot]"


@dataclass
class GitLabHarness:
    """The fake GitLab and the real bot (configured for GitLab alone), both on loopback."""

    db_path: Path
    model: str | None = None
    api_base: str | None = None
    llm_cache: str | None = None
    workers: int = 2
    engine: Engine | None = None
    timeout: float = 300.0  # seconds to wait for one round's jobs
    llm_timeout: float | None = None  # seconds per model call (else ROUNDWISE_LLM_TIMEOUT)
    repo_settings: str | None = None  # every task project's .gitlab/roundwise.yml
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(
        attempts=4, backoff=0.05, max_wait=5.0, secondary_wait=0.2))
    fake: FakeGitLab = field(init=False)
    config: Config = field(init=False)
    url: str = field(init=False)

    async def __aenter__(self) -> Self:
        self.fake = FakeGitLab(token="glpat-" + secrets.token_hex(10))
        await self.fake.start()
        self.secret = secrets.token_hex(16)
        self.config = Config(
            app_id="", private_key="", webhook_secret="", db_path=str(self.db_path),
            workers=self.workers, bot_login=BOT_LOGIN,
            gitlab=GitLabConfig(token=self.fake.token, webhook_secret=self.secret,
                                url=self.fake.url),
            llm=LLMConfig.from_env(os.environ, model=self.model, api_base=self.api_base,
                                   timeout=self.llm_timeout,
                                   cache_dir=self.llm_cache) if self.model else None,
        )
        app = create_app(self.config, engine=self.engine, retry=self.retry, poll=0.05)
        self.app = app
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        self.session = aiohttp.ClientSession()
        self.ledger = Ledger(self.db_path)  # a second connection, to observe
        self.queue = open_queue_store(str(self.db_path), ledger=self.ledger)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.session.close()
        await self._runner.cleanup()
        await self.fake.stop()
        self.ledger.close()

    async def post(self, event: str, payload: dict, delivery: str | None = None, *,
                   token: str | None = "", headers: dict | None = None) -> tuple[int, dict]:
        """POST one hook (``token=""``: the right secret; None: no token header)."""
        sent = hooks.headers(event, self.secret if token == "" else token, delivery)
        sent.update(headers or {})
        async with self.session.post(f"{self.url}/gitlab/webhook", data=hooks.encode(payload),
                                     headers=sent) as resp:
            return resp.status, await resp.json()

    async def deliver(self, event: str, payload: dict, delivery: str | None = None) -> dict:
        status, data = await self.post(event, payload, delivery)
        if status >= 300:
            raise BotError(f"{event} refused ({status}): {data}")
        return data

    async def idle(self, repo: str, number: int) -> None:
        deadline = time.monotonic() + self.timeout
        while self.queue.pending(repo, number):
            if time.monotonic() > deadline:
                raise BotError(f"{repo}!{number}: jobs still pending after {self.timeout}s")
            await asyncio.sleep(0.02)

    def failed_jobs(self, repo: str, number: int) -> list[dict]:
        return [{"id": j.id, "kind": j.kind, "error": j.error}
                for j in self.queue.jobs(repo, number, "failed")]


def bench_project(task: Task) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", task.task_id)[:100].strip(".-") or "task"
    return f"{GROUP}/{name if name[0].isalnum() else 'task-' + name}"


async def replay_task(h: GitLabHarness, task: Task,
                      on_round: Callable[[int], None] | None = None,
                      posted: list[dict] | None = None) -> list[dict]:
    """Play one task through the bot on GitLab; one record per round
    (``bench.replay.github.collect`` shapes, so scoring is the same)."""
    path, iid = bench_project(task), int(task.pr.get("number") or 1)
    repo = repo_key(path)
    author = task.pr.get("author") or "author"
    project = h.fake.add_project(path, task.pr.get("base_ref") or "main",
                                 {".gitlab/roundwise.yml": h.repo_settings}
                                 if h.repo_settings else None)
    base = {p: t for p, t in task.base_files(1).items() if t is not None}
    h.fake.add_mr(project, iid, task.pr.get("title") or task.task_id, task.pr.get("body") or "",
                  author, task.pr.get("base_ref") or "main", task.pr.get("base_sha") or "0" * 40,
                  base)
    ids: dict[int, int] = {}  # task event id -> the fake's note id
    records, watcher = [], None
    for rnd in task.rounds:
        started = time.monotonic()
        used = h.fake.usage(project)["requests"]
        changed = {p: t for p, t in task.snapshot(rnd.number).items() if base.get(p) != t}
        before = h.fake.projects[project].mrs[iid].head_sha
        h.fake.push(project, iid, rnd.head_sha, changed,
                    [c.get("message", "update") for c in rnd.commits][-20:] or None)
        if rnd.number == 1:
            payload = hooks.merge_request(h.fake, project, iid, "open")
        else:
            payload = hooks.merge_request(h.fake, project, iid, "update", oldrev=before)
        await h.deliver("Merge Request Hook", payload)
        await h.idle(repo, iid)
        seconds = time.monotonic() - started
        failed = h.failed_jobs(repo, iid)
        if failed:
            raise BotError(f"{task.task_id} round {rnd.number}: job failed: {failed[-1]}")
        port_ids = {event: from_note(note) for event, note in ids.items()}
        records.append(collect(h.ledger, task, repo, iid, rnd.number, port_ids, seconds))
        if on_round is not None:
            on_round(rnd.number)
        for event in rnd.events:
            await deliver_event(h, project, iid, event, ids)
        await h.idle(repo, iid)
        records[-1]["github"] = {"requests": h.fake.usage(project)["requests"] - used}
        if posted is not None:
            watcher = watcher or GitLabPosted(h.fake, project, iid)
            posted.append(watcher.take(rnd.number, rnd.head_sha))
    return records


async def deliver_event(h: GitLabHarness, project: int, iid: int, event: dict,
                        ids: dict[int, int]) -> None:
    """Act out one human event on the fake GitLab and send the hook it causes."""
    kind, user = event.get("kind"), event.get("author") or "reviewer"
    body = event.get("body") or ""
    mr = h.fake.projects[project].mrs[iid]
    if kind == "review_comment":
        parent = ids.get(event.get("in_reply_to")) if event.get("in_reply_to") else None
        try:
            _, note = h.fake.add_diff_note(
                project, iid, user, event["path"], event["line"], body,
                side=event.get("side") or "RIGHT", start_line=event.get("start_line"),
                in_reply_to=parent)
        except (ValueError, KeyError):  # not a line GitLab takes: a plain note, as on GitHub
            where = f"`{event.get('path')}:{event.get('line')}`: " if event.get("path") else ""
            _, note = h.fake.add_note(mr, user, where + body)
    elif kind in ("issue_comment", "review"):
        if kind == "review" and not body.strip():
            return  # an approval without words: GitLab sends no note
        _, note = h.fake.add_note(mr, user, body)
    elif kind in ("thread_resolved", "thread_unresolved") and ids.get(event.get("comment_id")):
        root = ids[event["comment_id"]]
        found = next((d for d in mr.discussions if d.notes[0].id == root), None)
        if found is None or found.notes[0].type != "DiffNote":
            return
        h.fake.resolve(mr, found.id, kind == "thread_resolved", user)
        await h.deliver("Merge Request Hook",
                        hooks.merge_request(h.fake, project, iid, "update", user=user))
        return
    else:
        return
    ids[event["id"]] = note.id
    await h.deliver("Note Hook", hooks.note(h.fake, project, iid, note.id))


class GitLabPosted:
    """What the bot posted on one task's MR, round by round (``bench.replay.posted``'s shapes)."""

    def __init__(self, fake: FakeGitLab, project: int, iid: int):
        self.fake, self.project, self.iid = fake, project, iid
        self.seen: set[int] = set()

    def take(self, round_number: int, head: str) -> dict:
        mr = self.fake.projects[self.project].mrs[self.iid]
        bot = self.fake.bot_username
        inline, replies, summary, others = [], [], None, []
        for d in mr.discussions:
            for i, n in enumerate(d.notes):
                if n.author != bot:
                    continue
                if "<!-- roundwise:summary -->" in n.body:
                    summary = n.body
                    continue
                if n.id in self.seen:
                    continue
                self.seen.add(n.id)
                if n.type == "DiffNote" and i == 0:
                    inline.append({"id": n.id, "path": (n.position or {}).get("new_path"),
                                   "line": (n.position or {}).get("new_line"),
                                   "start_line": None, "body": n.body})
                elif i > 0:
                    replies.append({"in_reply_to": d.notes[0].id, "body": n.body})
                else:
                    others.append(n.body)
        statuses = [{"name": s["name"], "status": s["status"], "conclusion": s["status"],
                     "output": {"title": s["description"]}, "annotations": []}
                    for s in self.fake.projects[self.project].statuses.get(head, [])]
        reviews = [{"id": round_number, "event": "COMMENTED", "body": "",
                    "comments": inline}] if inline else []
        return {"round": round_number, "head": head, "reviews": reviews, "replies": replies,
                "summary": summary, "comments": others, "check_runs": statuses}
