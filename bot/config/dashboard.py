"""The dashboard's settings (``bot.dashboard``): who may sign in, and where people reach the server.

Read from the environment (``.env`` too) by ``roundwise serve`` and ``roundwise dashboard``.
GitHub sign-in needs the App's OAuth client id and secret (``roundwise setup`` writes both);
``ROUNDWISE_DASHBOARD_TOKEN`` gives operators a full view; ``ROUNDWISE_PUBLIC_URL`` is where
people reach the server, for the check run's link and the OAuth callback. With neither way to
sign in, the dashboard is served on a loopback address only (``open_on``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["SETTINGS", "DashboardConfig", "DashboardError", "is_loopback", "web_url"]

#: name -> (meaning, default), as ``bot.config.env.SETTINGS``
SETTINGS: dict[str, tuple[str, str]] = {
    "GITHUB_CLIENT_ID": (("the App's client id (Iv...): people sign in to the dashboard with "
                          "GitHub"), "unset: no GitHub sign-in"),
    "GITHUB_CLIENT_SECRET": ("the App's client secret, for that sign-in",
                             "unset: no GitHub sign-in"),
    "ROUNDWISE_DASHBOARD_TOKEN": (("a full view of the dashboard for whoever sends it "
                                   "(`Authorization: Bearer TOKEN`, or typed once into the "
                                   "sign-in page); at least 16 characters"), "unset"),
    "ROUNDWISE_PUBLIC_URL": (("where people reach this server (https://HOST): the check run's "
                              "Details link opens the pull request's dashboard page, and GitHub "
                              "sign-in returns to HOST/dashboard/oauth/callback"),
                             "unset: no Details link"),
}

MIN_TOKEN = 16


class DashboardError(ValueError):
    """A dashboard setting that cannot be used; the message says how to fix it."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address to listen on) is reachable from this machine only."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def web_url(api_url: str) -> str:
    """GitHub's web address for an API base URL: github.com for api.github.com, the host of
    a GitHub Enterprise ``https://HOST/api/v3``, else the URL itself (a fake serving both)."""
    api = api_url.rstrip("/")
    if api == "https://api.github.com":
        return "https://github.com"
    return api.removesuffix("/api/v3")


@dataclass(frozen=True)
class DashboardConfig:
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    public_url: str | None = None
    api_url: str = "https://api.github.com"  # GitHub's REST base (GITHUB_API_URL)

    @property
    def github_sign_in(self) -> bool:
        return bool(self.client_id and self.client_secret)

    @property
    def web_url(self) -> str:
        return web_url(self.api_url)

    @property
    def open(self) -> bool:
        """No way to sign in is configured: everyone who reaches it sees everything."""
        return not (self.github_sign_in or self.token)

    def problem_on(self, host: str) -> str | None:
        """Why the dashboard must not listen on ``host``, or None."""
        if self.open and not is_loopback(host):
            return (f"the dashboard would show every repository to anyone reaching {host}: "
                    "set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (GitHub sign-in) or "
                    "ROUNDWISE_DASHBOARD_TOKEN, or listen on 127.0.0.1")
        return None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DashboardConfig:
        """The settings in ``env``; raises ``DashboardError`` listing every problem."""
        problems = []
        client_id = (env.get("GITHUB_CLIENT_ID") or "").strip() or None
        secret = (env.get("GITHUB_CLIENT_SECRET") or "").strip() or None
        if bool(client_id) != bool(secret):
            problems.append("GitHub sign-in needs both GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET "
                            "(the App's settings page, 'Client secrets'); set both or neither")
        token = env.get("ROUNDWISE_DASHBOARD_TOKEN") or None
        if token is not None and len(token) < MIN_TOKEN:
            problems.append(f"ROUNDWISE_DASHBOARD_TOKEN is shorter than {MIN_TOKEN} characters: "
                            "use a long random one (python -c 'import secrets; "
                            "print(secrets.token_urlsafe(32))')")
        public = (env.get("ROUNDWISE_PUBLIC_URL") or "").strip().rstrip("/") or None
        if public and not public.startswith(("https://", "http://")):
            problems.append(f"ROUNDWISE_PUBLIC_URL={public!r} must start with https://")
        if problems:
            raise DashboardError("; ".join(problems))
        return cls(client_id=client_id, client_secret=secret, token=token, public_url=public,
                   api_url=(env.get("GITHUB_API_URL") or "https://api.github.com").strip())
