"""Server configuration from the environment, checked at start-up with messages that say how to fix.

| variable | meaning | default |
|---|---|---|
| ``GITHUB_APP_ID`` | the App's numeric id (or client id) | required |
| ``GITHUB_PRIVATE_KEY`` / ``GITHUB_PRIVATE_KEY_PATH`` | the App's PEM private key, inline or a file | one required |
| ``GITHUB_WEBHOOK_SECRET`` | the webhook secret set on the App | required |
| ``GITHUB_API_URL`` | REST base URL (GitHub Enterprise: ``https://HOST/api/v3``) | ``https://api.github.com`` |
| ``ROUNDWISE_DB`` | path of the ledger SQLite file | ``roundwise.db`` |
| ``ROUNDWISE_MODEL`` | a litellm model string; unset = offline reviewer | unset |
| ``ROUNDWISE_API_BASE`` | base URL for the model's API (OpenAI-compatible servers) | unset |
| ``ROUNDWISE_API_KEY`` | key for that server (providers' own keys come from their variables) | unset |
| ``ROUNDWISE_FALLBACK_MODEL`` | a second model tried when the first keeps failing | unset |
| ``ROUNDWISE_LLM_TIMEOUT`` | seconds per LLM call | ``60`` |
| ``ROUNDWISE_MAX_PROMPT_TOKENS`` | prompt budget per call; larger diffs are split by file | ``24000`` |
| ``ROUNDWISE_WORKERS`` | concurrent jobs (different PRs) | ``4`` |
| ``ROUNDWISE_BOT_LOGIN`` | the App's bot login, to recognise its own comments | ``roundwise[bot]`` |
| ``ROUNDWISE_REVIEW_DRAFTS`` | review draft PRs unless a repo's settings say otherwise | ``false`` |
| ``ROUNDWISE_LLM_CACHE`` | folder for an on-disk cache of LLM answers | unset |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_API_URL = "https://api.github.com"


class ConfigError(ValueError):
    """A missing or invalid setting; the message names it and says how to fix it."""


@dataclass
class Config:
    app_id: str
    private_key: str = field(repr=False)
    webhook_secret: str = field(repr=False)
    api_url: str = DEFAULT_API_URL
    db_path: str = "roundwise.db"
    model: str | None = None
    api_base: str | None = None
    workers: int = 4
    bot_login: str = "roundwise[bot]"
    review_drafts: bool = False
    llm_cache: str | None = None

    @property
    def bot_logins(self) -> set[str]:
        """The bot's login as REST (``name[bot]``) and GraphQL (``name``) show it."""
        base = self.bot_login.removesuffix("[bot]")
        return {self.bot_login, base, f"{base}[bot]"}


def _bool(name: str, value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={value!r} is not a boolean; use true or false")


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Read and check every setting; raises ConfigError listing all problems at once."""
    env = os.environ if env is None else env
    problems: list[str] = []

    app_id = (env.get("GITHUB_APP_ID") or "").strip()
    if not app_id:
        problems.append("GITHUB_APP_ID is not set: use the App ID from the App's settings page")

    key = env.get("GITHUB_PRIVATE_KEY") or ""
    key_path = env.get("GITHUB_PRIVATE_KEY_PATH") or ""
    if not key and key_path:
        try:
            key = Path(key_path).expanduser().read_text()
        except OSError as exc:
            problems.append(f"GITHUB_PRIVATE_KEY_PATH={key_path!r} cannot be read ({exc.strerror})")
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
            from cryptography.hazmat.primitives.serialization import load_pem_private_key

            load_pem_private_key(key.encode(), password=None)
        except (ValueError, TypeError) as exc:
            problems.append(f"the private key cannot be loaded: {exc}")

    secret = env.get("GITHUB_WEBHOOK_SECRET") or ""
    if not secret:
        problems.append("GITHUB_WEBHOOK_SECRET is not set: use the webhook secret configured "
                        "on the App (every delivery's signature is checked with it)")

    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if not api_url.startswith(("http://", "https://")):
        problems.append(f"GITHUB_API_URL={api_url!r} must start with https:// (or http:// for "
                        "a local test server)")

    workers = env.get("ROUNDWISE_WORKERS") or "4"
    try:
        n_workers = int(workers)
        if n_workers < 1:
            raise ValueError
    except ValueError:
        problems.append(f"ROUNDWISE_WORKERS={workers!r} must be a whole number of at least 1")
        n_workers = 4

    try:
        drafts = _bool("ROUNDWISE_REVIEW_DRAFTS", env.get("ROUNDWISE_REVIEW_DRAFTS"), False)
    except ConfigError as exc:
        problems.append(str(exc))
        drafts = False

    if env.get("ROUNDWISE_MODEL"):
        from .review.llm import LLMConfig

        try:
            LLMConfig.from_env(env)
        except ValueError as exc:
            problems.append(str(exc))

    if problems:
        raise ConfigError("roundwise cannot start:\n  - " + "\n  - ".join(problems))
    return Config(
        app_id=app_id,
        private_key=key,
        webhook_secret=secret,
        api_url=api_url,
        db_path=env.get("ROUNDWISE_DB") or "roundwise.db",
        model=env.get("ROUNDWISE_MODEL") or None,
        api_base=env.get("ROUNDWISE_API_BASE") or None,
        workers=n_workers,
        bot_login=env.get("ROUNDWISE_BOT_LOGIN") or "roundwise[bot]",
        review_drafts=drafts,
        llm_cache=env.get("ROUNDWISE_LLM_CACHE") or None,
    )
