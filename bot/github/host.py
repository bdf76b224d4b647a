"""The GitHub backend's entry in ``bot.server.hosts``: the App's settings and ``POST /webhook``.

``read`` checks the App's settings (its id, its private key, the webhook secret, the REST base
URL) with messages that say how to fix each; they are required unless another backend is
configured and none of the App's variables is set (a server for GitLab alone). ``GitHubService``
is GitHub inside the server: ``/webhook`` when the App is configured, the ``GitHubApp`` client on
the server's session (``State.github``), and the forge of every job no other backend owns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config.env import DEFAULT_API_URL
from ..forge.appkeys import STATE
from ..forge.host import Handle, Host
from .client import GitHubApp
from .forge import GitHubForge
from .webhooks import handle_webhook

__all__ = ["APP_VARS", "CLIENT_ID", "DEFAULT_API_URL", "GITHUB", "SETTINGS", "GitHubService",
           "read"]

#: name -> (meaning, default), as ``bot.server.hosts.SETTINGS``
SETTINGS: dict[str, tuple[str, str]] = {
    "GITHUB_APP_ID": ("the App's numeric id (or its client id, Iv...)", "required"),
    "GITHUB_PRIVATE_KEY": ("the App's PEM private key, inline", "this or the path required"),
    "GITHUB_PRIVATE_KEY_PATH": ("the App's PEM private key, as a file",
                                "this or the key required"),
    "GITHUB_WEBHOOK_SECRET": ("the webhook secret set on the App", "required"),
    "GITHUB_API_URL": ("REST base URL (GitHub Enterprise: https://HOST/api/v3)", DEFAULT_API_URL),
}

#: an App's client id (``Iv1.`` and 16 hex digits, or ``Iv23`` and letters/digits)
CLIENT_ID = re.compile(r"Iv[0-9A-Za-z.]{10,}")
APP_VARS = ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH",
            "GITHUB_WEBHOOK_SECRET")


def read(env: Mapping[str, str], problems: list[str], required: bool) -> dict[str, str]:
    """The App's ``Config`` fields (``app_id``, ``private_key``, ``webhook_secret``,
    ``api_url``); each problem is appended as a line saying how to fix it."""
    app_checks = len(problems)

    app_id = (env.get("GITHUB_APP_ID") or "").strip()
    if not app_id:
        problems.append("GITHUB_APP_ID is not set: use the App ID from the App's settings page")
    elif not (app_id.isdigit() or CLIENT_ID.fullmatch(app_id)):
        problems.append(f"GITHUB_APP_ID={app_id!r} is not an App id: use the number shown as "
                        "'App ID' on the App's settings page (or its client id, Iv...)")

    key = env.get("GITHUB_PRIVATE_KEY") or ""
    key_path = env.get("GITHUB_PRIVATE_KEY_PATH") or ""
    if not key and key_path:
        try:
            key = Path(key_path).expanduser().read_text()
        except OSError as exc:
            problems.append(f"GITHUB_PRIVATE_KEY_PATH={key_path!r} cannot be read ({exc.strerror})")
    if len(key) > 1 and key[0] == key[-1] == '"':
        key = key[1:-1]  # a quoted value passed through as is (docker run --env-file)
    if key and "\\n" in key and "\n" not in key:
        key = key.replace("\\n", "\n")  # keys pasted into one-line env files
    if not key and not key_path:
        problems.append("no private key: set GITHUB_PRIVATE_KEY_PATH to the .pem file "
                        "GitHub generated for the App (or GITHUB_PRIVATE_KEY to its text)")
    elif key and "PRIVATE KEY-----" not in key:
        problems.append("the private key is not a PEM key (expected '-----BEGIN ... PRIVATE "
                        "KEY-----'); download a new one from the App's settings page")
    elif key:
        try:
            from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
            from cryptography.hazmat.primitives.serialization import load_pem_private_key

            loaded = load_pem_private_key(key.encode(), password=None)
            if not isinstance(loaded, RSAPrivateKey):
                problems.append(f"the private key is a {type(loaded).__name__.lstrip('_')}, "
                                "not an RSA key: GitHub signs App tokens with RS256; download "
                                "the .pem from the App's settings page")
        except (ValueError, TypeError) as exc:
            problems.append(f"the private key cannot be loaded: {exc}")

    secret = env.get("GITHUB_WEBHOOK_SECRET") or ""
    if not secret:
        problems.append("GITHUB_WEBHOOK_SECRET is not set: use the webhook secret configured "
                        "on the App (every delivery's signature is checked with it)")

    if not required and not any(env.get(name) for name in APP_VARS):
        del problems[app_checks:]  # another backend serves: there is no App to check

    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if not api_url.startswith(("http://", "https://")):
        problems.append(f"GITHUB_API_URL={api_url!r} must start with https:// (or http:// for "
                        "a local test server)")
    return {"app_id": app_id, "private_key": key, "webhook_secret": secret, "api_url": api_url}


class GitHubService:
    """GitHub inside one server; without an App (``app_id`` empty) it has no client."""

    def __init__(self, app: Any, config: Any):
        self.app = app
        self.config = config
        self.github: GitHubApp | None = None

    async def start(self, session: Any, retry: Any) -> None:
        state = self.app[STATE]
        if self.config.app_id:
            state.github = GitHubApp(session, self.config.app_id, self.config.private_key,
                                     self.config.api_url, retry=retry)
            await state.github.load_key()
        self.github = state.github

    def owns(self, job: Any) -> bool:
        return True  # the default host: asked last, it takes what no other backend owns

    def forge(self, job: Any) -> GitHubForge:
        return GitHubForge(self.github.repo(job.installation_id, job.repo))

    def jobs(self, handlers: Any, rest: Handle) -> Handle:
        return rest  # GitHub's jobs are the host-neutral handlers' own


def _mount(app: Any, config: Any) -> GitHubService:
    if config.app_id:  # no App, no GitHub deliveries (a server for another backend alone)
        app.router.add_post("/webhook", handle_webhook)
    return GitHubService(app, config)


GITHUB = Host(name="github", settings=SETTINGS, read=read, mount=_mount, fields=dict,
              title="GitHub", route="POST /webhook",
              configured=lambda config: bool(config.app_id),
              describe=lambda config: f"GitHub App {config.app_id} at {config.api_url}")
