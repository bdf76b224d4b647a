"""The GitLab backend inside the server: its route, its client and its forge per job.

``mount(app, config)`` adds ``POST /gitlab/webhook`` and returns the ``GitLabService`` the
composition root (``bot.server.app``, through ``bot.gitlab.host``) asks for a job's forge
(``owns``/``forge``) and for the worker pool's handler (``jobs``). At start-up it opens the
client on the server's HTTP session and asks GitLab who the token is (its username marks the
bot's own notes); ``roundwise serve`` has checked the URL and token before (``startup``), so
GitLab being down here only delays that to the first job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

from ..forge import ForgeError
from ..forge.calls import RetryPolicy
from ..jobs import Job
from ..jobs.handlers import Handlers
from .client import GitLabClient
from .forge import GitLabForge
from .ids import is_gitlab, project_path
from .jobs import GitLabJobs
from .settings import GitLabConfig
from .webhooks import GITLAB_APP, handle_gitlab_webhook

__all__ = ["GitLabService", "mount"]

log = logging.getLogger(__name__)


class GitLabService:
    def __init__(self, config: GitLabConfig, bot_login: str):
        self.config = config
        self.bot_login = bot_login
        self.client: GitLabClient | None = None
        self._whoami: asyncio.Task | None = None

    async def start(self, session: aiohttp.ClientSession, retry: RetryPolicy | None) -> None:
        """Open the client; who the token is is asked in the background (start-up does not
        wait for GitLab)."""
        self.client = GitLabClient(session, self.config.url, self.config.token, retry=retry)
        self._whoami = asyncio.create_task(self._ask_who())

    async def _ask_who(self) -> None:
        try:
            me = await self.client.me()
            log.info("GitLab at %s: acting as %s", self.config.url, me.get("username"))
        except ForgeError as exc:
            log.warning("GitLab at %s did not say who the token is (%s); asking again at the "
                        "first job", self.config.url, exc)

    @staticmethod
    def owns(job: Job) -> bool:
        return is_gitlab(job.repo)

    def forge(self, job: Job) -> GitLabForge:
        if self.client is None:
            raise RuntimeError("the GitLab backend has not started")
        project = job.installation_id or project_path(job.repo or "")
        return GitLabForge(self.client.project(project), job.repo or "", job.number,
                           bot_login=self.bot_login, web_url=self.config.url)

    def jobs(self, handlers: Handlers, rest: Callable[[Job], Awaitable[None]] | None = None
             ) -> Callable[[Job], Awaitable[None]]:
        """The worker pool's handler: GitLab's jobs here, the rest to ``rest`` (by default
        ``handlers.handle``)."""
        return GitLabJobs(handlers, self.forge, rest).handle


def mount(app: web.Application, config: GitLabConfig, bot_login: str) -> GitLabService:
    service = GitLabService(config, bot_login)
    app[GITLAB_APP] = service
    app.router.add_post("/gitlab/webhook", handle_gitlab_webhook)
    return service
