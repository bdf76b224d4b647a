"""What each kind of job does: rounds, people's comments, thread actions, commands, closing.

``Handlers.handle(job)`` is the worker pool's handler. Round jobs go to ``RoundRunner``;
comments, replies and thread resolutions go into the ledger through ``tracker.intake``;
``/roundwise`` commands are checked (write access for resolve/ignore/unmute, through the API)
and carried out. Whatever a job changes in the ledger, every surface that shows it follows
(``bot.round.surfaces``). Every action stays inside the repository and pull request the job came
from.
"""

from __future__ import annotations

import logging

from tracker import keys as defect_keys
from tracker import learnings
from tracker.anchors import DiffError, DiffMap, find_code
from tracker.intake import same_comment, take_comment, take_thread
from tracker.ledger_base import LedgerError
from tracker.lifecycle import State
from tracker.models import DecidedBy, Decision, SignalKind
from tracker.requests import MAX_PLACE_FILES, quoted_code, wants_files
from tracker.rules import SWITCHES
from tracker.store import LedgerStore

from ..forge import ForgeError
from ..pr import render
from ..round import RoundRunner
from ..round.surfaces import refresh_surfaces
from ..store.offload import off_loop
from . import live
from .forced import PER_HOUR, may_force, recent_forced
from .payloads import code_from_hunk, comment_from_payload
from .queue import Job, JobQueue, RetryLater
from .slash_commands import NEEDS_WRITE, parse_command

log = logging.getLogger(__name__)

WRITE = {"admin", "write", "maintain"}


class Handlers:
    def __init__(self, ledger: LedgerStore, queue: JobQueue, rounds: RoundRunner,
                 *, bot_logins: set[str]):
        self.ledger = ledger
        self.queue = queue
        self.rounds = rounds
        self.bot_logins = bot_logins

    async def handle(self, job: Job) -> None:
        handler = getattr(self, f"on_{job.kind}", None)
        if handler is None:
            raise ValueError(f"unknown job kind {job.kind!r}")
        try:
            outcome = await handler(job)
        except ForgeError as exc:
            if exc.retryable:
                raise RetryLater(str(exc), after=getattr(exc, "retry_after", None)) from exc
            raise
        log.info("job %s %s %s#%s: %s", job.id, job.kind, job.repo, job.number, outcome)
        await self._db(live.after_job, self.ledger, job.repo, job.number, self.bot_logins)
        store, call = self.queue.store, self.queue.call
        if job.delivery_id and await call(store.delivery, job.delivery_id):  # not derived jobs
            await call(store.mark_processed, job.delivery_id, str(outcome or "ok")[:200])

    async def _db(self, fn, /, *args, **kwargs):
        """A ledger call, off the event loop when the ledger is a network database."""
        return await off_loop(self.ledger, fn, *args, **kwargs)

    async def on_round(self, job: Job) -> str:
        return await self.rounds.run(job)

    async def _pr_id(self, job: Job, author: str | None = None) -> int:
        return (await self._db(self.ledger.pull_request, job.repo, job.number,
                               installation_id=job.installation_id, author=author))["id"]

    async def on_comment(self, job: Job) -> str:
        data, kind, action = job.payload["comment"], job.payload["kind"], job.payload["action"]
        pr_id = await self._pr_id(job, job.payload.get("pr_author"))
        pr = await self._db(self.ledger.find_pull_request, job.repo, job.number)
        comment = comment_from_payload(data, kind, self.bot_logins)
        if action == "deleted":
            defect = await self._db(self.ledger.defect_by_comment, pr_id, comment.id)
            root = defect and await self._db(self.ledger.thread_root, pr_id, defect.key)
            if defect and defect.origin.value == "human" and (root is None or root["id"] ==
                                                              comment.id):
                keys = await self._db(self._ignore_deleted, pr_id, defect, comment.id)
                await self._refresh(job)
                return f"{', '.join(keys)} ignored: its comment was deleted"
            return "nothing to do"
        count = (comment.line - comment.start_line + 1) if comment.start_line and comment.line \
            else 1
        code = code_from_hunk(data.get("diff_hunk"), count, comment.side or "RIGHT")
        files = await self._request_files(job, comment, pr_id)
        outcome = await self._db(take_comment, self.ledger, pr_id, comment,
                                 pr_author=pr["author"], code=code, files=files)
        disputed = outcome.signal in (SignalKind.REVIEWER_DISPUTES, SignalKind.REVIEWER_REPEATS)
        await self._refresh(job, [d.key for d in outcome.defects] if disputed else [])
        keys = ", ".join(d.key for d in outcome.defects)
        return f"{outcome.action} {keys} {outcome.reason}"

    async def _request_files(self, job: Job, comment, pr_id: int) -> dict[str, str | None]:
        """The files where the requests of a comment that asks for several things find their
        own place (``tracker.requests.own_place``), read only for such a comment that quotes
        code or names lines: the commented file, then, while code it quotes is found in none
        read so far, the PR's other files in path order, at most ``MAX_PLACE_FILES``."""
        if not (SWITCHES["split_requests"] and wants_files(comment.body)):
            return {}
        forge = self.rounds.forge(job)
        last = await self._db(self.ledger.last_round, pr_id)
        ref = comment.commit_id or (last or {}).get("head_sha")
        files: dict[str, str | None] = {}
        try:
            if comment.path and comment.line:
                files[comment.path] = await forge.file_text(comment.path, ref)
            missing = [b for b in quoted_code(comment.body)
                       if not any(find_code(t, b) for t in files.values())]
            if not missing:
                return files
            try:
                paths = sorted(DiffMap(await forge.pull_diff(job.number)).new_files)
            except DiffError:
                return files
            for path in [p for p in paths if p != comment.path][:MAX_PLACE_FILES]:
                files[path] = await forge.file_text(path, ref)
                missing = [b for b in missing if not find_code(files[path], b)]
                if not missing:
                    break
        except ForgeError as exc:
            if exc.retryable:
                raise
            log.info("could not read the files of comment %s: %s", comment.id, exc)
        return files

    def _ignore_deleted(self, pr_id: int, defect, comment_id: int) -> list[str]:
        """The comment that raised a person's defect is gone: so are its requests."""
        number = self.ledger.current_round(pr_id)
        parts = same_comment(self.ledger, pr_id, defect)
        for part in parts:
            self.ledger.set_ignored(pr_id, part.key, f"deletion of comment {comment_id}", number)
        return [part.key for part in parts]

    async def on_thread(self, job: Job) -> str:
        pr_id = await self._pr_id(job)
        outcome = await self._db(
            take_thread, self.ledger, pr_id, resolved=job.payload["action"] == "resolved",
            by=job.payload.get("by"), node_id=job.payload.get("node_id"),
            comment_ids=[c for c in job.payload.get("comment_ids") or [] if c])
        await self._refresh(job)  # the thread itself already shows what the person did
        return f"{outcome.action} {outcome.defect.key if outcome.defect else outcome.reason}"

    async def on_rerequest(self, job: Job) -> str:
        """Someone re-ran the bot's check: review the head of each pull request it is for."""
        numbers = list(job.payload.get("numbers") or [])
        if not numbers:
            number = await self._db(self.ledger.pr_number_for_check, job.repo,
                                    job.payload.get("check_run_id"),
                                    job.payload.get("head_sha"))
            numbers = [number] if number is not None else []
        limited = []
        for number in list(numbers):
            # a Re-run is a forced round as `/roundwise review` is: under the same limit
            if await self.queue.call(recent_forced, self.queue, job.repo, number) >= PER_HOUR:
                limited.append(number)
                numbers.remove(number)
                continue
            await self.queue.call(self.queue.enqueue, "round", repo=job.repo, number=number,
                                  installation_id=job.installation_id, payload={"force": True},
                                  delivery_id=f"{job.delivery_id}:rerequest:{number}",
                                  head_sha=job.payload.get("head_sha"))
        if limited:
            log.info("re-run of %s #%s refused: %d forced reviews an hour at most", job.repo,
                     ", #".join(map(str, limited)), PER_HOUR)
        if numbers:
            return f"review queued for #{', #'.join(map(str, numbers))}"
        return f"refused: #{', #'.join(map(str, limited))} had {PER_HOUR} forced reviews " \
            "in the last hour" if limited else "no pull request known for this check"

    async def _refresh(self, job: Job, changed: list[str] = ()) -> None:
        """A person changed the ledger: the summary, the check and the threads of ``changed``
        defects follow, once each (``bot.round.surfaces``)."""
        pr = await self._db(self.ledger.find_pull_request, job.repo, job.number)
        if pr is not None:
            await refresh_surfaces(self.rounds.forge(job), self.ledger, pr,
                                   bot_logins=self.bot_logins, changed=list(changed))

    async def on_closed(self, job: Job) -> str:
        pr_id = await self._pr_id(job)
        status = "merged" if job.payload.get("merged") else "closed"
        await self._db(self.ledger.update_pull_request, pr_id, status=status)
        return f"pull request {status}; final states kept"

    async def on_installation(self, job: Job) -> str:
        inst = job.payload["installation"]
        action = job.payload.get("action")
        account = (inst.get("account") or {}).get("login")
        if job.payload.get("event") == "installation" and action == "deleted":
            await self.queue.call(self.queue.store.remove_installation, inst["id"])
        else:
            await self.queue.call(self.queue.store.upsert_installation, inst["id"], account,
                                  action == "suspend")
        return f"installation {inst['id']} {action}"

    async def on_command(self, job: Job) -> str:
        data = job.payload["comment"]
        command = parse_command(data.get("body"))
        user = (data.get("user") or {}).get("login")
        gh = self.rounds.forge(job)
        pr_id = await self._pr_id(job, job.payload.get("pr_author"))
        if command is None:
            return "no command"
        if command.error or command.name == "unknown":
            await self._refuse(gh, job, user, f"error:{command.name}",  # once per mistake
                               f"@{user} {command.error}.\n\n{render.HELP}")
            return command.error or "unknown"
        if command.name == "help":
            await gh.create_issue_comment(job.number, render.HELP)
            return "help"
        if command.name == "review":  # bot.jobs.forced: write access or the author; a rate limit
            already = await self.queue.call(recent_forced, self.queue, job.repo, job.number)
            refusal = may_force(await gh.permission(user), user, job.payload.get("pr_author"),
                                already)
            if refusal:
                await self._refuse(gh, job, user, "refused", f"@{user} {refusal}.")
                return f"refused: {refusal}"
            await self.queue.call(self.queue.enqueue, "round", repo=job.repo,
                                  number=job.number, installation_id=job.installation_id,
                                  payload={"force": True}, delivery_id=f"{job.delivery_id}:review")
            return "review queued"
        if command.name == "status":
            rows = [{"key": d.key, "state": str(d.state) + (" (ignored)" if d.ignored else ""),
                     "location": d.location(), "description": d.description}
                    for d in await self._db(self.ledger.defects, pr_id)]
            await gh.create_issue_comment(job.number, render.status_table(rows))
            return "status posted"
        if command.name in NEEDS_WRITE:
            permission = await gh.permission(user)
            if permission not in WRITE:
                await self._refuse(gh, job, user, "refused",
                                   f"@{user} only people with write access can "
                                   f"`/roundwise {command.name}`.")
                return f"refused: {user} has {permission} access"
            if command.name == "unmute":
                return await self._unmute(gh, job, command.key, user)
            return await self._resolve_or_ignore(gh, job, pr_id, command.name, command.key, user)
        return "nothing to do"

    async def _refuse(self, gh, job: Job, user: str | None, why: str, text: str) -> None:
        """Say no once per person, pull request and kind of no (``why``); after that a 👎 on
        the command instead of one more comment. The first answer is a ``refusal`` job whose
        delivery id names the person and PR, so the queue's uniqueness (kept across restarts
        and replicas) decides which command is the first."""
        comment_id = job.payload["comment"].get("id")
        job_id = await self.queue.call(
            self.queue.enqueue, "refusal", repo=job.repo, number=job.number,
            installation_id=job.installation_id,
            payload={"comment_id": comment_id, "body": text},
            delivery_id=f"refusal:{why}:{job.repo}#{job.number}:{user}")
        first = await self.queue.call(self.queue.store.job, job_id)
        if first is not None and first.payload.get("comment_id") == comment_id:
            return  # the refusal job posts the answer
        try:
            await gh.react(comment_id, "-1")
        except ForgeError as exc:  # a reaction is a courtesy: a refusal never fails the job
            if exc.retryable:
                raise
            log.info("could not react to comment %s: %s", comment_id, exc)

    async def on_refusal(self, job: Job) -> str:
        """The first refusal of a person's commands on a pull request, as a comment."""
        await self.rounds.forge(job).create_issue_comment(job.number, job.payload["body"])
        return "refusal posted"

    async def _unmute(self, gh, job: Job, kind: str, user: str) -> str:
        """``/roundwise unmute KIND``: post that kind of finding again in this repository."""
        was = await self._db(learnings.unmute, self.ledger, job.repo, kind, user)
        if was is None:
            held = sorted(await self._db(learnings.muted, self.ledger, job.repo))
            await gh.create_issue_comment(job.number, (
                f"@{user} `{kind}` findings are not held back here"
                + (f"; held back: {', '.join(f'`{k}`' for k in held)}." if held else ".")))
            return f"{kind} was not muted"
        await gh.create_issue_comment(job.number, (
            f"`{kind}` findings will be posted again in {learnings.learning_repo(job.repo)} "
            f"(unmuted by @{user}; they had been dismissed {was.dismissed} of {was.judged} "
            "times)."))
        await self._refresh(job)
        return f"{kind} unmuted by {user}"

    async def _resolve_or_ignore(self, gh, job: Job, pr_id: int, name: str, key: str,
                                 user: str) -> str:
        try:
            defects = [await self._db(self.ledger.defect, pr_id, key)]
        except LedgerError as exc:  # D3 names every request of comment D3 (D3a, D3b...)
            defects = [d for d in await self._db(self.ledger.defects, pr_id)
                       if defect_keys.group(d.key) == key and defect_keys.part(d.key)]
            if not defects:
                await gh.create_issue_comment(job.number, f"@{user} {exc}.")
                return str(exc)
        number = await self._db(self.ledger.current_round, pr_id)
        for defect in defects:
            if name == "ignore":
                await self._db(self.ledger.set_ignored, pr_id, defect.key, user, number)
            elif defect.state is not State.RESOLVED:
                await self._db(self.ledger.record_decision, pr_id, number, Decision(
                    defect.key, State.RESOLVED, "command_resolve",
                    f"{user} ran /roundwise resolve", decided_by=DecidedBy.HUMAN))
        keys = [d.key for d in defects]
        shown = ", ".join(keys)
        root = await self._db(self.ledger.thread_root, pr_id, keys[0])
        if root is not None:
            await gh.reply(job.number, root["id"], f"{shown} marked {name}d by @{user}.\n"
                           f"{render.marker(name, keys[0], number)}")
        await self._refresh(job, keys)
        return f"{shown} {name}d by {user}"
