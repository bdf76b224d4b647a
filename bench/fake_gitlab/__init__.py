"""A fake GitLab REST API (v4) served over real HTTP on 127.0.0.1, for tests and replay.

As the fake GitHub does for GitHub, it keeps what the bot meets on a real GitLab: MR diff
versions per push, positions that must name one (else 400), notes carried to a new version or
left outdated after a push, discussions resolved and unresolved, commit statuses and their
state transitions, access levels, pagination headers, ``RateLimit-*`` budgets with 429 and
``Retry-After``, and scripted 5xx. ``state`` holds the records, ``rest`` the HTTP handlers,
``hooks`` builds the webhooks GitLab would send.
"""

from __future__ import annotations

from aiohttp import web

from .rest import RestApi
from .state import LEVELS, ApiError

__all__ = ["LEVELS", "ApiError", "FakeGitLab", "hooks", "rest", "state"]


class FakeGitLab(RestApi):
    """In-memory GitLab on loopback: ``await start()``, then point the bot at ``url``."""

    url: str = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        await self._runner.cleanup()
