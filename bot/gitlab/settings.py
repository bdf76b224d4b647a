"""The GitLab backend's settings: a project or group access token, the instance, the hook secret.

``SETTINGS`` joins ``bot.server.hosts.SETTINGS`` (``docs/configuration.md`` lists them);
``GitLabConfig.from_env`` reads them, and is None when ``GITLAB_TOKEN`` is unset (the server
then serves GitHub only). A server may serve GitLab alone: the GitHub App's settings are then
not required.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULT_GITLAB_URL", "SETTINGS", "GitLabConfig"]

DEFAULT_GITLAB_URL = "https://gitlab.com"

#: name -> (meaning, default), as ``bot.server.hosts.SETTINGS``
SETTINGS: dict[str, tuple[str, str]] = {
    "GITLAB_TOKEN": (("a project or group access token (role Developer or above, scope "
                      "`api`); set it to review GitLab merge requests"), "unset"),
    "GITLAB_URL": ("the GitLab instance (self-managed: https://HOST)", DEFAULT_GITLAB_URL),
    "GITLAB_WEBHOOK_SECRET": (("the secret token of the project's or group's webhook; every "
                               "hook's `X-Gitlab-Token` is compared with it"),
                              "required with GITLAB_TOKEN (or the signing token)"),
    "GITLAB_WEBHOOK_SIGNING_TOKEN": (("the webhook's signing token (`whsec_...`, GitLab's "
                                      "newer HMAC-SHA256 `webhook-signature`), checked when a "
                                      "hook carries that header"), "unset"),
}


@dataclass
class GitLabConfig:
    token: str = field(repr=False)
    webhook_secret: str = field(repr=False)
    url: str = DEFAULT_GITLAB_URL
    signing_key: bytes | None = field(default=None, repr=False)  # from whsec_<base64>

    @classmethod
    def from_env(cls, env: Mapping[str, str], problems: list[str]) -> GitLabConfig | None:
        """The GitLab settings, or None when ``GITLAB_TOKEN`` is unset; each problem found is
        appended to ``problems`` as a line saying how to fix it."""
        token = (env.get("GITLAB_TOKEN") or "").strip()
        secret = env.get("GITLAB_WEBHOOK_SECRET") or ""
        url = (env.get("GITLAB_URL") or DEFAULT_GITLAB_URL).strip().rstrip("/")
        if not token:
            if secret:
                problems.append("GITLAB_WEBHOOK_SECRET is set but GITLAB_TOKEN is not: create "
                                "a project access token (role Developer, scope api)")
            return None
        signing = (env.get("GITLAB_WEBHOOK_SIGNING_TOKEN") or "").strip()
        key = None
        if signing:
            try:
                key = base64.b64decode(signing.removeprefix("whsec_"), validate=True)
            except (ValueError, binascii.Error):
                key = None
            if not key:
                problems.append("GITLAB_WEBHOOK_SIGNING_TOKEN must be the whsec_<base64> "
                                "signing token GitLab shows for the webhook")
        if not secret and not signing:
            problems.append("GITLAB_WEBHOOK_SECRET is not set: use the secret token given to "
                            "the GitLab webhook (every hook's X-Gitlab-Token is checked)")
        if not url.startswith(("http://", "https://")):
            problems.append(f"GITLAB_URL={url!r} must start with https:// (or http:// for a "
                            "local test server)")
        return cls(token=token, webhook_secret=secret, url=url, signing_key=key)
