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
The server, the round loop and the ledger read are ``bench.replay.rounds``'s.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

from bot.config.env import Config
from bot.gitlab import GitLabConfig
from bot.gitlab.ids import from_note, repo_key

from ..fake_gitlab import FakeGitLab, hooks
from ..tasks.mcr import Task
from .rounds import BotError, BotHarness, play

__all__ = ["GitLabHarness", "GitLabPosted", "MergeRequestOnGitLab", "bench_project",
           "deliver_event", "replay_task"]

GROUP = "bench"
BOT_LOGIN = "roundwise[bot]"


@dataclass
class GitLabHarness(BotHarness):
    """The fake GitLab and the real bot (configured for GitLab alone), both on loopback."""

    fake: FakeGitLab = field(init=False)

    async def __aenter__(self) -> Self:
        self.fake = FakeGitLab(token="glpat-" + secrets.token_hex(10))
        await self.fake.start()
        self.secret = secrets.token_hex(16)
        await self.serve(Config(
            app_id="", private_key="", webhook_secret="", db_path=str(self.db_path),
            workers=self.workers, bot_login=BOT_LOGIN,
            gitlab=GitLabConfig(token=self.fake.token, webhook_secret=self.secret,
                                url=self.fake.url),
            llm=self.llm()))
        return self

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


def bench_project(task: Task) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", task.task_id)[:100].strip(".-") or "task"
    return f"{GROUP}/{name if name[0].isalnum() else 'task-' + name}"


async def replay_task(h: GitLabHarness, task: Task,
                      on_round: Callable[[int], None] | None = None,
                      posted: list[dict] | None = None) -> list[dict]:
    """Play one task through the bot on GitLab; one record per round
    (``bench.replay.rounds.collect`` shapes, so scoring is the same)."""
    return await play(h, task, MergeRequestOnGitLab(h, task), on_round, posted)


class MergeRequestOnGitLab:
    """One task's merge request on the fake GitLab (``bench.replay.rounds.TaskOnHost``)."""

    def __init__(self, h: GitLabHarness, task: Task):
        self.h, self.task = h, task
        path, self.number = bench_project(task), int(task.pr.get("number") or 1)
        self.repo = repo_key(path)
        self.project = h.fake.add_project(path, task.pr.get("base_ref") or "main",
                                          {".gitlab/roundwise.yml": h.repo_settings}
                                          if h.repo_settings else None)
        self.base = {p: t for p, t in task.base_files(1).items() if t is not None}
        h.fake.add_mr(self.project, self.number, task.pr.get("title") or task.task_id,
                      task.pr.get("body") or "", task.pr.get("author") or "author",
                      task.pr.get("base_ref") or "main", task.pr.get("base_sha") or "0" * 40,
                      self.base)
        self.watcher: GitLabPosted | None = None

    async def push(self, rnd) -> None:
        changed = {p: t for p, t in self.task.snapshot(rnd.number).items()
                   if self.base.get(p) != t}
        fake, project, iid = self.h.fake, self.project, self.number
        before = fake.projects[project].mrs[iid].head_sha
        fake.push(project, iid, rnd.head_sha, changed,
                  [c.get("message", "update") for c in rnd.commits][-20:] or None)
        if rnd.number == 1:
            payload = hooks.merge_request(fake, project, iid, "open")
        else:
            payload = hooks.merge_request(fake, project, iid, "update", oldrev=before)
        await self.h.deliver("Merge Request Hook", payload)

    async def deliver_event(self, event: dict, ids: dict[int, int]) -> None:
        await deliver_event(self.h, self.project, self.number, event, ids)

    def comment_ids(self, ids: dict[int, int]) -> dict[int, int]:
        return {event: from_note(note) for event, note in ids.items()}

    def usage(self) -> dict[str, int]:
        return {"requests": self.h.fake.usage(self.project)["requests"]}

    def posted(self, round_number: int, head: str) -> dict:
        self.watcher = self.watcher or GitLabPosted(self.h.fake, self.project, self.number)
        return self.watcher.take(round_number, head)


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
