"""Who sees what: the viewer of a dashboard request, and the repositories they may see.

A request is shown the ledger only as one of these viewers:

- an operator sending ``Authorization: Bearer ROUNDWISE_DASHBOARD_TOKEN`` (compared in
  constant time), or holding a session started by typing that token: every repository;
- a person signed in with GitHub: the repositories of the App's installations their account
  can access, as GitHub listed them, asked again once the session's check is older than
  ``RECHECK`` (a token GitHub no longer takes ends the session);
- anyone, when no way to sign in is configured and the dashboard listens on loopback only
  (``DashboardConfig.open``; it refuses to start elsewhere).

Everyone else is nobody: ``viewer`` returns None and the page answers with the sign-in page,
naming no repository. Repository names are matched without regard to case, as GitHub does.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from ..config.dashboard import DashboardConfig
from .oauth import Expired, SignInError, person
from .sessions import COOKIE, RECHECK, Session, Sessions

__all__ = ["Viewer", "token_matches", "viewer"]


@dataclass(frozen=True)
class Viewer:
    login: str
    repos: frozenset[str] | None  # lower-case full names; None: every repository
    session: Session | None = None

    def sees(self, repo: str) -> bool:
        return self.repos is None or repo.lower() in self.repos

    def visible(self, names: Sequence[str]) -> list[str] | None:
        """Of the ledger's repository ``names``, the ones this viewer sees (None: all)."""
        if self.repos is None:
            return None
        return [name for name in names if name.lower() in self.repos]


def token_matches(config: DashboardConfig, offered: str | None) -> bool:
    if not config.token or not offered:
        return False
    return hmac.compare_digest(offered.encode(), config.token.encode())


async def viewer(request: web.Request, config: DashboardConfig, sessions: Sessions,
                 http: aiohttp.ClientSession | None) -> Viewer | None:
    """The request's viewer, or None (see the module docstring)."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value:
        return Viewer("operator", None) if token_matches(config, value.strip()) else None
    session = sessions.find(request.cookies.get(COOKIE))
    if session is not None:
        if session.kind == "token":
            return Viewer(session.login, None, session) if config.token else None
        if session.kind == "github" and config.github_sign_in:
            return await _rechecked(session, config, sessions, http)
        return None
    if config.open:
        return Viewer("local", None)
    return None


async def _rechecked(session: Session, config: DashboardConfig, sessions: Sessions,
                     http: aiohttp.ClientSession | None) -> Viewer | None:
    if sessions.clock() - session.checked >= RECHECK:
        if http is None or not session.github_token:
            sessions.end(session)
            return None
        try:
            found = await person(http, config.api_url, session.github_token)
        except Expired:
            sessions.end(session)
            return None
        except SignInError:  # GitHub unreachable: show nothing rather than stale access
            return None
        session.repos = frozenset(name.lower() for name in found.repos)
        session.checked = sessions.clock()
    return Viewer(session.login, session.repos, session)
