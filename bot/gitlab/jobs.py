"""The GitLab jobs, before the host-neutral handlers (``bot.jobs.handlers``) take over.

A GitLab Note hook says less than GitHub's comment payloads: a reply names its discussion, not
the note it answers, and no hunk comes with a note on lines. ``gitlab_note`` jobs read the
discussion and the diff the note's position names, and hand the handlers the comment in the
shape they know (``comment`` or ``command``). ``gitlab_push`` jobs queue a round for every open
MR of the pushed branch. GitLab sends no hook when one thread is resolved, so ``gitlab_sync``
(an MR update that is not a push) and every GitLab round first read the discussions and turn
resolutions people made since into ``thread`` jobs, as GitHub's thread events would be. Every
other job goes to the handlers as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from tracker.lifecycle import State
from tracker.models import SignalKind

from ..forge import ForgeError
from ..jobs import Job, RetryLater
from ..jobs.handlers import Handlers
from ..jobs.slash_commands import parse_command
from ..store.offload import off_loop
from .diffs import hunk_to
from .forge import GitLabForge
from .ids import from_note, is_gitlab

__all__ = ["GitLabJobs"]

log = logging.getLogger(__name__)

RESOLVED, UNRESOLVED = str(SignalKind.THREAD_RESOLVED), str(SignalKind.THREAD_UNRESOLVED)


class GitLabJobs:
    """The worker pool's handler: GitLab's own jobs here, the rest to ``handlers``."""

    def __init__(self, handlers: Handlers, forge_for: Callable[[Job], GitLabForge],
                 rest: Callable[[Job], Awaitable[None]] | None = None):
        self.handlers = handlers
        self.forge_for = forge_for
        self.rest = rest or handlers.handle  # the jobs that are not GitLab's

    async def handle(self, job: Job) -> None:
        if job.kind == "round" and is_gitlab(job.repo):
            try:
                await self.sync(job)
            except ForgeError as exc:  # the round reads GitLab too, and retries as it must
                log.info("threads of %s!%s not read before the round: %s", job.repo,
                         job.number, exc)
            await self.handlers.handle(job)
            return
        own = {"gitlab_note": self.note, "gitlab_push": self.push, "gitlab_sync": self.sync}
        if job.kind not in own:
            await self.rest(job)
            return
        try:
            outcome = await own[job.kind](job)
        except ForgeError as exc:
            if exc.retryable:
                raise RetryLater(str(exc), after=getattr(exc, "retry_after", None)) from exc
            raise
        if outcome is None:  # handed on: the handlers recorded it
            return
        log.info("job %s %s %s!%s: %s", job.id, job.kind, job.repo, job.number, outcome)
        store, call = self.handlers.queue.store, self.handlers.queue.call
        if job.delivery_id and await call(store.delivery, job.delivery_id):
            await call(store.mark_processed, job.delivery_id, outcome[:200])

    # -- notes -------------------------------------------------------------------------------

    async def note(self, job: Job) -> str | None:
        """A person's note, as the comment or command the handlers take; None once handed on."""
        forge = self.forge_for(job)
        note = job.payload.get("note") or {}
        author = await forge._login((job.payload.get("user") or {}).get("username"))
        mr = await forge.project.merge_request(job.number)
        pr_author = await forge._login((mr.get("author") or {}).get("username"))
        body = note.get("note") or ""
        comment = {"id": from_note(note["id"]), "user": {"login": author}, "body": body}
        action = "edited" if note.get("action") == "update" else "created"
        discussion = None
        if note.get("discussion_id"):
            discussion = await forge.project.discussion(job.number, note["discussion_id"])
        notes = [n for n in (discussion or {}).get("notes") or [] if not n.get("system")]
        if notes and notes[0].get("type") == "DiffNote":
            inline = await self._inline(forge, notes, note, comment)
            if inline is None:
                return "a note on lines the merge request's diffs do not hold"
            payload = {"action": action, "kind": "review_comment", "comment": inline,
                       "pr_author": pr_author}
            kind = "comment"
        elif action == "created" and parse_command(body):
            payload, kind = {"comment": comment, "pr_author": pr_author}, "command"
        else:
            payload = {"action": action, "kind": "issue_comment", "comment": comment,
                       "pr_author": pr_author}
            kind = "comment"
        await self.handlers.handle(replace(job, kind=kind, payload=payload))
        if kind == "comment":  # "Comment & resolve" resolves a thread with a note
            await self.sync(replace(job, delivery_id=None))
        return None

    async def _inline(self, forge: GitLabForge, notes: list[dict], note: dict,
                      comment: dict) -> dict | None:
        """The note as a review comment: the root's position, the hunk down to its line."""
        root = notes[0]
        position = root.get("position") or {}
        side = "RIGHT" if position.get("new_line") is not None else "LEFT"
        line = position.get("new_line") if side == "RIGHT" else position.get("old_line")
        path = position.get("new_path") if side == "RIGHT" else position.get("old_path")
        if not isinstance(line, int) or not isinstance(path, str):
            return None
        start = ((position.get("line_range") or {}).get("start") or {})
        start_line = start.get("new_line") if side == "RIGHT" else start.get("old_line")
        hunk = ""
        base, head = position.get("base_sha"), position.get("head_sha")
        if isinstance(base, str) and isinstance(head, str):
            key = "new_path" if side == "RIGHT" else "old_path"
            diffs = (await forge.project.compare(base, head)).get("diffs") or []
            entry = next((e for e in diffs if e.get(key) == path), None)
            hunk = hunk_to(entry.get("diff") or "", line, side) if entry else ""
        reply = root.get("id") != note.get("id")
        return {**comment, "path": path, "line": line,
                "start_line": start_line if isinstance(start_line, int) and
                start_line < line else None,
                "side": side, "diff_hunk": hunk, "commit_id": head,
                "in_reply_to_id": from_note(root["id"]) if reply else None,
                "node_id": note.get("discussion_id")}

    # -- pushes ------------------------------------------------------------------------------

    async def push(self, job: Job) -> str:
        forge = self.forge_for(job)
        branch, after = job.payload["branch"], job.payload["after"]
        queued = []
        for mr in await forge.project.open_merge_requests(branch):
            iid = mr.get("iid")
            if not isinstance(iid, int):
                continue
            await self.handlers.queue.call(
                self.handlers.queue.enqueue, "round", repo=job.repo, number=iid,
                installation_id=job.installation_id, payload={"action": "synchronize"},
                delivery_id=f"{job.delivery_id}:push:{iid}", head_sha=after)
            queued.append(f"!{iid}")
        return f"review queued for {', '.join(queued)}" if queued else \
            f"no open merge request from {branch}"

    # -- thread resolutions ------------------------------------------------------------------

    async def sync(self, job: Job) -> str:
        """People's resolutions of the MR's diff discussions since they were last read, each
        handed to the handlers as a ``thread`` job."""
        ledger = self.handlers.ledger
        pr = await off_loop(ledger, ledger.find_pull_request, job.repo, job.number)
        if pr is None:
            return "nothing tracked on this merge request yet"
        forge = self.forge_for(job)
        changed = []
        for d, inline, notes in await forge._discussions(job.number):
            resolvable = [n for n in notes if n.get("resolvable")]
            if not inline or not resolvable:
                continue
            resolved = all(n.get("resolved") for n in resolvable)
            by = await self._resolver(forge, resolvable) if resolved else None
            action = await off_loop(ledger, _thread_change, ledger, pr["id"], str(d["id"]),
                                    [from_note(n["id"]) for n in notes], resolved, by,
                                    self.handlers.bot_logins)
            if action is None:
                continue
            await self.handlers.handle(replace(
                job, kind="thread", delivery_id=None,
                payload={"action": action, "node_id": str(d["id"]), "by": by,
                         "comment_ids": [from_note(n["id"]) for n in notes]}))
            changed.append(f"{d['id'][:8]} {action}")
        return "; ".join(changed) or "no thread changed"

    async def _resolver(self, forge: GitLabForge, notes: list[dict]) -> str | None:
        who = next((n.get("resolved_by") for n in reversed(notes) if n.get("resolved_by")),
                   None)
        return await forge._login((who or {}).get("username")) if who else None


def _thread_change(ledger, pr_id: int, node_id: str, comment_ids: list[int], resolved: bool,
                   by: str | None, bots: set[str]) -> str | None:
    """``resolved`` or ``unresolved`` when the discussion's state is a person's change the
    ledger has not taken yet, else None. The bot's own resolutions are not people's; a
    defect the tracker resolved on its own keeps an unresolved thread without it counting."""
    defect = ledger.defect_by_thread(pr_id, node_id)
    for cid in comment_ids:
        defect = defect or ledger.defect_by_comment(pr_id, cid)
    if defect is None:
        return None
    kinds = [r["kind"] for r in ledger.signal_rows(pr_id, defect.key)
             if r["kind"] in (RESOLVED, UNRESOLVED)]
    last = kinds[-1] if kinds else None
    if resolved:
        return "resolved" if last != RESOLVED and by is not None and by not in bots else None
    if last == RESOLVED:
        return "unresolved"
    bot_resolved = (defect.origin.value == "bot" and defect.state is State.RESOLVED
                    and defect.thread_node_id == node_id)
    return "unresolved" if bot_resolved else None

