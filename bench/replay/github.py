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

import itertools
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.config.env import Config

from ..fake_github import FakeGitHub
from ..tasks.mcr import Task
from . import payloads
from .posted import Posted
from .rounds import BotError, BotHarness, collect, play

__all__ = ["APP_ID", "BotError", "Harness", "PullRequestOnGitHub", "bench_repo", "collect",
           "deliver_event", "replay_task", "throwaway_key"]

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


@dataclass
class Harness(BotHarness):
    """The fake GitHub and the real bot, both on loopback, plus a way to talk to the bot."""

    fake: FakeGitHub = field(init=False)

    async def __aenter__(self) -> Self:
        private, public = throwaway_key()
        self.fake = FakeGitHub(APP_ID, public)  # each task its own installation and budget
        await self.fake.start()
        self._installations = itertools.count(INSTALLATION)
        await self.serve(Config(
            app_id=str(APP_ID), private_key=private, webhook_secret=secrets.token_hex(16),
            api_url=self.fake.url, db_path=str(self.db_path), workers=self.workers,
            bot_login=self.fake.bot_login, llm=self.llm()))
        return self

    async def deliver(self, event: str, payload: dict, delivery_id: str | None = None) -> dict:
        """Sign and POST one webhook; raises BotError unless the bot accepts it."""
        body = payloads.encode(payload)
        headers = payloads.headers(event, body, self.config.webhook_secret, delivery_id)
        async with self.session.post(f"{self.url}/webhook", data=body, headers=headers) as resp:
            data = await resp.json()
            if resp.status >= 300:
                raise BotError(f"{event} delivery refused ({resp.status}): {data}")
            return data

    def new_installation(self) -> int:
        """A fresh installation of the App, with its own rate-limit budgets, as each task's
        repository would have on GitHub (big task sets do not share one 5,000 an hour)."""
        installation_id = next(self._installations)
        self.fake.add_installation(installation_id, OWNER)
        return installation_id


def bench_repo(task: Task) -> str:
    """A repository name for the task on the fake (unique per task, in GitHub's characters)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", task.task_id)[:100].strip(".") or "task"
    return f"{OWNER}/{name}"


async def replay_task(h: Harness, task: Task,
                      on_round: Callable[[int], None] | None = None,
                      posted: list[dict] | None = None) -> list[dict]:
    """Play one task through the bot; one record per round (``bench.replay.rounds.collect``).
    ``on_round`` is told each round's number once its record is taken; ``posted``, when given,
    gets what the bot posted in each round (``bench.replay.posted``)."""
    return await play(h, task, PullRequestOnGitHub(h, task), on_round, posted)


class PullRequestOnGitHub:
    """One task's pull request on the fake GitHub (``bench.replay.rounds.TaskOnHost``)."""

    def __init__(self, h: Harness, task: Task):
        self.h, self.task = h, task
        self.repo, self.number = bench_repo(task), int(task.pr.get("number") or 1)
        self.installation = h.new_installation()
        h.fake.add_repo(self.repo, self.installation,
                        files={".github/roundwise.yml": h.repo_settings}
                        if h.repo_settings else None)
        self.base = {p: t for p, t in task.base_files(1).items() if t is not None}
        h.fake.add_pr(self.repo, self.number, task.pr.get("title") or task.task_id,
                      task.pr.get("body") or "", task.pr.get("author") or "author",
                      task.pr.get("base_ref") or "main", task.pr.get("base_sha") or "0" * 40,
                      self.base)
        self.watcher: Posted | None = None

    async def push(self, rnd) -> None:
        changed = {p: t for p, t in self.task.snapshot(rnd.number).items()
                   if self.base.get(p) != t}
        self.h.fake.push(self.repo, self.number, rnd.head_sha, changed,
                         [c.get("message", "update") for c in rnd.commits][-20:] or None)
        action = "opened" if rnd.number == 1 else "synchronize"
        await self.h.deliver("pull_request", payloads.pull_request(self.h.fake, self.repo,
                                                                   self.number, action))

    async def deliver_event(self, event: dict, ids: dict[int, int]) -> None:
        await deliver_event(self.h, self.repo, self.number, event, ids)

    def comment_ids(self, ids: dict[int, int]) -> dict[int, int]:
        return ids  # GitHub's comment ids are the ledger's

    def usage(self) -> dict[str, int]:
        return self.h.fake.usage(self.installation)

    def posted(self, round_number: int, head: str) -> dict:
        self.watcher = self.watcher or Posted(self.h.fake, self.repo, self.number)
        return self.watcher.take(round_number, head)


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
