"""One review round of one pull request, from the PR's new head to what lands on GitHub.

``RoundRunner.run(job)`` fetches the PR, its whole diff, the diff since the last reviewed head
and the changed files; runs the engine against the ledger's tracked defects; and keeps the
result as the round's *plan* in the ledger. It then posts from the plan, idempotently (every
body carries a marker, so a job that runs again after a crash skips what is already there):
one review with the new defects inline, replies in the threads of tracked defects whose state
changed, GitHub threads resolved for the bot's own resolved defects, and the sticky summary.
Only when everything is posted does the plan go into the ledger, in one transaction, with the
round marked complete: a round that fails part-way never resolves anything; it is marked
failed with the error, and resumes from its plan when its job runs again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict

from tracker.interdiff import interdiff
from tracker.ledger import Ledger
from tracker.lifecycle import State
from tracker.models import Decision, Defect, Finding, SignalKind
from tracker.serial import PRSerializer

from . import metrics, render
from .github import GitHubApp, GitHubError, RepoClient
from .jobs import Job
from .review.engine import DiffLines, Engine, RoundContext, RoundResult, Settings
from .settings import PATH as SETTINGS_PATH
from .settings import SettingsError, parse_settings

log = logging.getLogger(__name__)

MAX_FILES = 300  # changed files whose text is fetched for one round


def decision_to_dict(d: Decision) -> dict:
    out = asdict(d)
    out["state"], out["decided_by"] = str(d.state), str(d.decided_by)
    return out


def plan_from(result: RoundResult, ctx: RoundContext, first_key: int) -> dict:
    """The round's outcome as plain JSON, with keys reserved for the new defects."""
    return {
        "decisions": [decision_to_dict(d) for d in result.decisions],
        "new": [
            {"key": f"D{first_key + i}", "finding": f.to_dict(),
             "code": ctx.code_at(f.path, f.line_start, f.line_end)}
            for i, f in enumerate(result.findings)
        ],
        "repeated": sorted(result.repeated),
        "dropped": dict(result.dropped),
        "usage": asdict(result.usage),
        "notes": result.notes,
        "posted": {},
    }


class RoundRunner:
    """Carries out ``round`` jobs."""

    def __init__(self, ledger: Ledger, app: GitHubApp, engine: Engine, serializer: PRSerializer,
                 *, bot_login: str, bot_logins: set[str], review_drafts: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.ledger = ledger
        self.bot_login = bot_login
        self.app = app
        self.engine = engine
        self.serializer = serializer
        self.bot_logins = bot_logins
        self.review_drafts = review_drafts
        self.clock = clock

    async def run(self, job: Job) -> str:
        gh = self.app.repo(job.installation_id, job.repo)
        pr_json = await gh.pull(job.number)
        if pr_json.get("state") != "open":
            return "skipped: the pull request is not open"
        settings, settings_error = await self._settings(gh)
        if pr_json.get("draft") and not settings.review_drafts and not job.payload.get("force"):
            return "skipped: draft pull request"
        head = pr_json["head"]["sha"]
        pr = self.ledger.pull_request(job.repo, job.number, status="open",  # maybe reopened
                                      installation_id=job.installation_id,
                                      title=pr_json.get("title"),
                                      author=(pr_json.get("user") or {}).get("login"))
        async with self.serializer.hold(pr["id"]):
            started = self.clock()
            rnd = self.ledger.begin_round(pr["id"], head, pr_json["base"]["sha"],
                                          force=bool(job.payload.get("force")))
            if rnd["status"] == "complete":
                return f"skipped: {head[:7]} was already reviewed in round {rnd['number']}"
            number = rnd["number"]
            try:
                plan = self.ledger.plan(pr["id"], number)
                if plan is None:
                    plan = await self._compute(gh, pr, pr_json, number, settings)
                    self.ledger.save_plan(pr["id"], number, plan)
                await self._post(gh, pr, number, head, plan, settings_error)
                self._apply(pr["id"], number, plan)
            except Exception as exc:  # visible in the ledger; the job retries or fails
                self.ledger.finish_round(pr["id"], number, "failed",
                                         error=f"{type(exc).__name__}: {exc}"[:500])
                raise
            metrics.ROUND_SECONDS.observe(self.clock() - started)
            return f"round {number} complete: {len(plan['new'])} new"

    async def _settings(self, gh: RepoClient) -> tuple[Settings, str | None]:
        text = await gh.file_text(SETTINGS_PATH)  # default branch only, never the PR's head
        try:
            return parse_settings(text, default_drafts=self.review_drafts), None
        except SettingsError as exc:
            return Settings(review_drafts=self.review_drafts), str(exc)

    async def _compute(self, gh: RepoClient, pr: dict, pr_json: dict, number: int,
                       settings: Settings) -> dict:
        head = pr_json["head"]["sha"]
        previous = self.ledger.last_round(pr["id"])
        pr_diff = await gh.pull_diff(pr["number"])
        if previous is None:
            round_diff = pr_diff  # the first round: the whole PR is new
        elif previous["head_sha"] == head:
            round_diff = ""  # ``/roundwise review`` of the same head: nothing moved
        tracked = self.ledger.defects(pr["id"], include_ignored=False)
        upstream_diff = ""
        if previous is not None and previous["head_sha"] != head:
            round_diff, upstream_diff = await self._round_diff(gh, previous, head, pr_diff,
                                                               tracked)
        anchor_diffs = await self._anchor_diffs(gh, tracked, previous, head)
        changed = DiffLines(pr_diff).paths()
        paths = sorted(changed)[:MAX_FILES]
        paths += sorted({d.path for d in tracked if d.path and d.path not in changed})
        files = {p: await gh.file_text(p, head) for p in paths}
        ctx = RoundContext(
            repo=pr["repo"], number=pr["number"], round=number, head_sha=head,
            base_sha=pr_json["base"]["sha"], pr_diff=pr_diff, round_diff=round_diff,
            files=files, title=pr_json.get("title") or "", body=pr_json.get("body") or "",
            tracked=tracked, signals=self.ledger.signals(pr["id"], previous["number"]
                                                         if previous else 0),
            discussion=self._discussion(pr["id"], previous), settings=settings,
            previous_head=previous["head_sha"] if previous else None,
            anchor_diffs=anchor_diffs, upstream_diff=upstream_diff,
        )
        result = await self.engine.review(ctx)
        metrics.LLM_TOKENS.labels(kind="prompt").inc(result.usage.prompt_tokens)
        metrics.LLM_TOKENS.labels(kind="completion").inc(result.usage.completion_tokens)
        return plan_from(result, ctx, int(self.ledger.next_key(pr["id"])[1:]))

    @staticmethod
    async def _round_diff(gh: RepoClient, previous: dict, head: str, pr_diff: str,
                          tracked: list[Defect]) -> tuple[str, str]:
        """The author's change since the last review, and the upstream changes to set aside.

        A push on top of the reviewed head: compare(old, new), nothing upstream. A rebase or
        force-push (the old head is no ancestor of the new one): the interdiff of the PR's
        diffs at both heads (``tracker.interdiff``), so upstream edits move no defect and
        resolve none.
        """
        old = previous["head_sha"]
        if await gh.compare_status(old, head) in ("ahead", "identical", ""):
            return await gh.compare_diff(old, head), ""
        old_pr_diff = await gh.compare_diff(previous["base_sha"] or old, old)
        paths = sorted(DiffLines(old_pr_diff).paths() | DiffLines(pr_diff).paths()
                       | {d.path for d in tracked if d.path})[:MAX_FILES]
        before = {p: await gh.file_text(p, old) for p in paths}
        after = {p: await gh.file_text(p, head) for p in paths}
        moved = interdiff(old_pr_diff, pr_diff, before, after)
        log.info("%s is not an ancestor of %s: reviewing the interdiff", old[:7], head[:7])
        return moved.round, moved.upstream

    @staticmethod
    async def _anchor_diffs(gh: RepoClient, tracked: list[Defect], previous: dict | None,
                            head: str) -> dict[str, str]:
        """Diffs to the head from the commits people commented on that the bot never
        reviewed (a failed round, a comment on a push still queued)."""
        reviewed = previous["head_sha"] if previous else None
        out: dict[str, str] = {}
        for sha in sorted({d.anchor_sha for d in tracked if d.anchor_sha} - {reviewed}):
            if sha == head:
                out[sha] = ""
                continue
            try:
                out[sha] = await gh.compare_diff(sha, head)
            except GitHubError as exc:
                if exc.status not in (404, 422):
                    raise
                log.info("cannot compare %s...%s (%s); mapping from the last review", sha,
                         head, exc.status)
        return out

    def _discussion(self, pr_id: int, previous: dict | None) -> list[dict]:
        since = previous["finished_at"] if previous else ""
        rows = self.ledger.db.query(
            "select d.key, c.author, c.body from defect_comments c join defects d "
            "on d.id = c.defect_id where d.pr_id = ? and c.posted_by_bot = 0 "
            "and c.created_at >= ? order by c.id", [pr_id, since or ""],
        )
        return [dict(r) for r in rows]

    # -- posting -------------------------------------------------------------------------------

    async def _post(self, gh: RepoClient, pr: dict, number: int, head: str, plan: dict,
                    settings_error: str | None) -> None:
        existing = await gh.review_comments(pr["number"])
        posted = _markers(existing, self.bot_logins)
        await self._post_review(gh, pr, number, head, plan, posted)
        existing = await gh.review_comments(pr["number"])
        posted = _markers(existing, self.bot_logins)
        plan["posted"]["new"] = {key: cid for (kind, key, r), cid in posted.items()
                                 if kind == "new" and r == number}
        await self._post_replies(gh, pr, number, plan, posted)
        await self._resolve_threads(gh, pr, plan)
        await self._post_summary(gh, pr, number, head, plan, settings_error)
        self.ledger.save_plan(pr["id"], number, plan)

    async def _post_review(self, gh: RepoClient, pr: dict, number: int, head: str, plan: dict,
                           posted: dict) -> None:
        comments = []
        for item in plan["new"]:
            f = item["finding"]
            if f["path"] is None or f["line_start"] is None or \
                    ("new", item["key"], number) in posted:
                continue
            comments.append(_review_comment(item["key"], Finding(**f), number))
        if not comments:
            return
        body = f"roundwise round {number}: {len(comments)} new defect(s). " \
               f"{render.marker('review', '-', number)}"
        try:
            await gh.create_review(pr["number"], head, body, comments)
            return
        except GitHubError as exc:
            if exc.status != 422:
                raise
            log.warning("GitHub rejected the review of round %d (%s); posting one by one",
                        number, exc.errors or exc)
        dropped = []
        for comment in comments:
            for attempt in _fallbacks(comment):
                try:
                    await gh.create_review(pr["number"], head, body, [attempt])
                    break
                except GitHubError as exc:
                    if exc.status != 422:
                        raise
            else:
                dropped.append(comment["body"].split("**")[1])
        plan["posted"]["not_inline"] = dropped

    async def _post_replies(self, gh: RepoClient, pr: dict, number: int, plan: dict,
                            posted: dict) -> None:
        defects = {d.key: d for d in self.ledger.defects(pr["id"])}
        replies = {}
        for raw in plan["decisions"]:
            decision = Decision(**raw)
            defect = defects.get(decision.key)
            if defect is None or not _needs_reply(defect, decision):
                continue
            root = self.ledger.thread_root(pr["id"], decision.key)
            if root is None:
                continue
            reply_id = posted.get(("state", decision.key, number))  # posted before a crash
            if reply_id is None:
                reply_id = (await gh.reply(pr["number"], root["id"],
                                           render.state_reply(defect, decision, number)))["id"]
            replies[decision.key] = reply_id
        plan["posted"]["replies"] = replies

    async def _resolve_threads(self, gh: RepoClient, pr: dict, plan: dict) -> None:
        resolved = [Decision(**d) for d in plan["decisions"]]
        keys = {d.key for d in resolved if d.state is State.RESOLVED}
        defects = [d for d in self.ledger.defects(pr["id"]) if d.key in keys
                   and d.origin.value == "bot" and d.state is not State.RESOLVED]
        if not defects:
            return
        threads = await gh.review_threads(pr["number"])
        by_comment = {}
        for thread in threads:
            for c in thread["comments"]["nodes"]:
                cid = c.get("fullDatabaseId") or c.get("databaseId")
                if cid is not None:
                    by_comment[int(cid)] = thread
        done = {}
        for defect in defects:
            root = self.ledger.thread_root(pr["id"], defect.key)
            thread = by_comment.get(root["id"]) if root else None
            if thread is None:
                continue
            if not thread["isResolved"]:
                await gh.resolve_thread(thread["id"])
            done[defect.key] = thread["id"]
        plan["posted"]["threads"] = done

    async def _post_summary(self, gh: RepoClient, pr: dict, number: int, head: str,
                            plan: dict, settings_error: str | None) -> None:
        body = self.summary_body(pr["id"], number, head, plan, settings_error)
        await post_summary(gh, pr["number"], body, self.bot_logins)

    def summary_body(self, pr_id: int, number: int, head: str, plan: dict | None,
                     settings_error: str | None = None) -> str:
        rows, changes = summary_rows(self.ledger, pr_id, number, plan)
        notes = []
        if plan and plan["posted"].get("not_inline"):
            notes.append("GitHub would not take these as inline comments: "
                         + ", ".join(plan["posted"]["not_inline"]) + ".")
        for note in (plan or {}).get("notes", []):
            notes.append(f"Note: {note} (Set `require_tests: true` in "
                         "`.github/roundwise.yml` to track this as a defect.)")
        if settings_error:
            notes.append(f"⚠️ {settings_error}; using the defaults.")
        return render.summary(rows, number, head, changes, notes)

    # -- ledger --------------------------------------------------------------------------------

    def _apply(self, pr_id: int, number: int, plan: dict) -> None:
        """Put the plan into the ledger and complete the round, all in one transaction."""
        decisions = [Decision(**d) for d in plan["decisions"]]
        new = [(Finding(**item["finding"]), item["code"]) for item in plan["new"]]
        keys = [item["key"] for item in plan["new"]]
        posted = plan["posted"]
        head = self.ledger.round(pr_id, number)["head_sha"]
        with self.ledger.transaction():
            self.ledger.record_round(pr_id, number, decisions, new, keys, head_sha=head)
            for key, cid in (posted.get("new") or {}).items():
                defect = self.ledger.defect(pr_id, key)
                self.ledger.attach_comment(defect.id, cid, author=self.bot_login,
                                           posted_by_bot=True)
            for key, cid in (posted.get("replies") or {}).items():
                root = self.ledger.thread_root(pr_id, key)
                self.ledger.attach_comment(self.ledger.defect(pr_id, key).id, cid,
                                           in_reply_to=root["id"] if root else None,
                                           posted_by_bot=True)
            for key, node in (posted.get("threads") or {}).items():
                self.ledger.set_thread(pr_id, key, node)
            usage = plan["usage"]
            self.ledger.add_usage(pr_id, number, usage["prompt_tokens"],
                                  usage["completion_tokens"], usage["cost"])
            self.ledger.finish_round(pr_id, number, "complete", findings=len(new))


def _needs_reply(defect: Defect, decision: Decision) -> bool:
    """Reply in a thread when the state changed, or when a claimed fix is not in the code."""
    previous = defect.state
    if decision.state is previous:
        return False
    if previous is State.NEW and decision.state is State.OPEN:
        claimed = any(str(SignalKind.AUTHOR_CLAIMS_FIXED) in s for s in decision.signals)
        return claimed or decision.rule.endswith("+overturned")
    return True


def _review_comment(key: str, finding: Finding, number: int) -> dict:
    comment = {"path": finding.path, "line": finding.line_end, "side": finding.side,
               "body": render.inline_comment(key, finding, number)}
    if finding.line_start is not None and finding.line_start < finding.line_end:
        comment["start_line"] = finding.line_start
        comment["start_side"] = finding.side
    return comment


def _fallbacks(comment: dict) -> list[dict]:
    """The comment as it is, then re-anchored to its last line alone."""
    out = [comment]
    if "start_line" in comment:
        out.append({k: v for k, v in comment.items() if k not in ("start_line", "start_side")})
    return out


def _markers(comments: list[dict], bot_logins: set[str]) -> dict[tuple[str, str, int], int]:
    out = {}
    for c in comments:
        if (c.get("user") or {}).get("login") not in bot_logins:
            continue
        found = render.read_marker(c.get("body"))
        if found:
            out.setdefault(found, c["id"])
    return out


def summary_rows(ledger: Ledger, pr_id: int, number: int,
                 plan: dict | None) -> tuple[list[dict], list[str]]:
    """Rows for the summary table, with this round's plan laid over the ledger."""
    history = ledger.states_by_round(pr_id)
    decisions = {d["key"]: d for d in (plan or {}).get("decisions", [])}
    rows, changes = [], []
    for defect in ledger.defects(pr_id):
        state, last = str(defect.state), _last_change(history.get(defect.key, {}))
        location = defect.location()
        if defect.key in decisions:
            d = decisions[defect.key]
            if d["state"] != state:
                changes.append(f"{defect.key}: {state} → {d['state']} ({d['rule']}: "
                               f"{d['evidence'][:160]})")
                last = number
            state = d["state"]
            if d.get("path") and d.get("line_start"):
                location = Defect(key="", description="", origin="bot", state="New",
                                  raised_round=0, state_round=0, path=d["path"],
                                  line_start=d["line_start"],
                                  line_end=d.get("line_end")).location()
        rows.append({"key": defect.key, "state": state, "severity": defect.severity,
                     "type": defect.type, "location": location, "raised": defect.raised_round,
                     "last_change": last, "origin": defect.origin.value,
                     "description": defect.description, "ignored": defect.ignored})
    for item in (plan or {}).get("new", []):
        f = Finding(**item["finding"])
        changes.append(f"{item['key']}: New ({f.severity} {f.type})")
        loc = Defect(key="", description="", origin="bot", state="New", raised_round=0,
                     state_round=0, path=f.path, line_start=f.line_start,
                     line_end=f.line_end).location()
        rows.append({"key": item["key"], "state": "New", "severity": f.severity, "type": f.type,
                     "location": loc, "raised": number, "last_change": number,
                     "origin": f.origin.value, "description": f.description, "ignored": False})
    return rows, changes


def _last_change(states: dict[int, str]) -> int:
    last, previous = 0, None
    for rnd in sorted(states):
        if states[rnd] != previous:
            last, previous = rnd, states[rnd]
    return last


async def post_summary(gh: RepoClient, number: int, body: str, bot_logins: set[str]) -> None:
    """Edit the PR's sticky summary comment in place, or create it the first time."""
    for comment in await gh.issue_comments(number):
        user = comment.get("user") or {}
        if user.get("login") in bot_logins and render.SUMMARY_MARKER in (comment.get("body") or ""):
            if comment.get("body") != body:
                await gh.edit_issue_comment(comment["id"], body)
            return
    await gh.create_issue_comment(number, body)
