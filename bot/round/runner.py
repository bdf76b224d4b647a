"""``RoundRunner``: the server's ``round`` job, the four steps in order under the PR's lease.

It knows no host: ``forge_for(job)`` (given by the composition root, ``bot.server.app``) returns the
job's repository as a ``Forge``.

It reads the PR and the repository's settings from the forge (skipping closed and draft PRs),
opens or resumes the round in the ledger, then: ``gather`` → ``plan`` (saved in the ledger
before anything is posted) → ``publish`` → ``commit``. A round that fails part-way is marked
failed with the error and resumes from its saved plan when its job runs again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tracker import learnings, verdicts
from tracker.intake import take_reaction
from tracker.serial import PRSerializer
from tracker.store import LedgerStore

from ..config.bounds import DEFAULT as DEFAULT_LIMITS
from ..config.bounds import ReviewLimits
from ..forge import Comment, Forge
from ..observe import metrics
from ..pr import checks
from ..review.engine import Engine
from ..store import Job
from ..store.offload import off_loop
from .commit import commit
from .gather import gather, read_settings
from .handover import close_superseded
from .plan import RoundPlan, plan
from .publish import publish, summary_body

__all__ = ["RoundRunner"]


class RoundRunner:
    """Carries out ``round`` jobs."""

    def __init__(self, ledger: LedgerStore, forge_for: Callable[[Job], Forge], engine: Engine,
                 serializer: PRSerializer, *, bot_login: str, bot_logins: set[str],
                 review_drafts: bool = False, limits: ReviewLimits = DEFAULT_LIMITS,
                 clock: Callable[[], float] = time.monotonic, public_url: str | None = None):
        self.ledger = ledger
        self.bot_login = bot_login
        self.forge_for = forge_for
        self.engine = engine
        self.serializer = serializer
        self.bot_logins = bot_logins
        self.review_drafts = review_drafts
        self.limits = limits
        self.clock = clock
        self.public_url = public_url  # ROUNDWISE_PUBLIC_URL: the check's Details link

    def details_url(self, pr: dict) -> str | None:
        """The pull request's dashboard page, when people can reach this server."""
        if not self.public_url:
            return None
        return f"{self.public_url}/dashboard/repo/{pr['repo']}/pull/{pr['number']}"

    def forge(self, job: Job) -> Forge:
        """The forge (repository on the host) the job's pull request lives on."""
        return self.forge_for(job)

    async def run(self, job: Job) -> str:
        forge = self.forge(job)
        pull = await forge.pull(job.number)
        if not pull.open:
            return "skipped: the pull request is not open"
        settings, settings_error = await read_settings(forge, self.review_drafts)
        if pull.draft and not settings.review_drafts and not job.payload.get("force"):
            return "skipped: draft pull request"
        db, ledger = self._db, self.ledger
        pr = await db(ledger.pull_request, job.repo, job.number, status="open",  # maybe reopened
                      installation_id=job.installation_id, title=pull.title,
                      author=pull.author)
        async with self.serializer.hold(pr["id"]):
            started = self.clock()
            await close_superseded(forge, self.ledger, pr, pull.head_sha,
                                   bot_logins=self.bot_logins, bot_login=self.bot_login)
            last = await db(ledger.last_round, pr["id"], status=None)
            rnd = await db(ledger.begin_round, pr["id"], pull.head_sha, pull.base_sha,
                           force=bool(job.payload.get("force")))
            resumed = bool(last and last["id"] == rnd["id"])
            if rnd["status"] == "complete":
                return f"skipped: {pull.head_sha[:7]} was already reviewed in round {rnd['number']}"
            comments = await self._reactions(forge, pr)
            number = rnd["number"]
            await checks.start(forge, self.ledger, pr["id"], number, pull.head_sha,
                               resumed=resumed, details_url=self.details_url(pr))
            try:
                saved = await db(ledger.plan, pr["id"], number)
                if saved is None:
                    inputs = await gather(forge, self.ledger, pr, pull, number, settings,
                                          self.limits)
                    the_plan = await plan(self.engine, inputs)
                    metrics.LLM_TOKENS.labels(kind="prompt").inc(the_plan.usage.prompt_tokens)
                    metrics.LLM_TOKENS.labels(kind="completion").inc(
                        the_plan.usage.completion_tokens)
                    await db(ledger.save_plan, pr["id"], number, the_plan.to_json())
                else:
                    the_plan = RoundPlan.from_json(saved)
                record = await publish(forge, self.ledger, pr, number, pull.head_sha, the_plan,
                                       bot_logins=self.bot_logins, settings_error=settings_error,
                                       comments=comments)
                the_plan.posted = record
                await db(ledger.save_plan, pr["id"], number, the_plan.to_json())
                await db(commit, ledger, pr["id"], number, the_plan, record,
                         bot_login=self.bot_login)
            except Exception as exc:  # visible in the ledger; the job retries or fails
                await db(ledger.finish_round, pr["id"], number, "failed",
                         error=f"{type(exc).__name__}: {exc}"[:500])
                await checks.fail(forge, self.ledger, pr["id"], number,
                                  f"{type(exc).__name__}: {exc}")
                raise
            await checks.complete(forge, self.ledger, pr, number, pull.head_sha,
                                  settings.fail_on, settings.partial_review)
            if settings.review_event == "request_changes":
                await checks.verdict(forge, self.ledger, pr, number, pull.head_sha,
                                     settings.fail_on, self.bot_logins)
            metrics.ROUND_SECONDS.observe(self.clock() - started)
            return f"round {number} complete: {len(the_plan.new)} new"

    async def _reactions(self, forge: Forge, pr: dict) -> list[Comment]:
        """👎 on the bot's inline comments since the last round, as people's dismissals; when
        there are new ones, the repository's learnings are recounted before this round. The
        review comments read (``publish`` starts from them)."""
        taken = 0
        comments = await forge.review_comments(pr["number"])
        for comment in comments:
            if comment.thumbs_down and comment.author in self.bot_logins:
                outcome = await self._db(take_reaction, self.ledger, pr["id"], comment.id,
                                         comment.thumbs_down)
                taken += outcome.action == "updated"
        if taken:
            await self._db(verdicts.refresh, self.ledger, pr["id"], self.bot_logins)
            await self._db(learnings.refresh, self.ledger, pr["repo"])
        return comments

    async def _db(self, fn, /, *args, **kwargs):
        """A ledger call, off the event loop when the ledger is a network database."""
        return await off_loop(self.ledger, fn, *args, **kwargs)

    async def summary_body(self, pr_id: int, number: int, head: str,
                           plan: RoundPlan | None = None) -> str:
        return await self._db(summary_body, self.ledger, pr_id, number, head, plan)
