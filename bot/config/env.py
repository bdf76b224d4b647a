"""Server configuration from the environment, checked at start-up with messages that say how to fix.

The server's own settings (``OWN_SETTINGS``, with the LLM's ``LLM_SETTINGS`` and the prompt
context's ``CONTEXT_SETTINGS``) are read here; each code-host backend brings its own (its
``bot.forge.host.Host`` entry: the settings and how they are read), and the list of backends
is handed in by the layer that composes them (``bot.server.hosts``): ``settings_of(hosts)`` is
every variable, the settings table of ``docs/configuration.md`` (a test compares them), and
``read_config(env, hosts)`` the checked ``Config``. No backend is imported here. ``Config.forges``
holds the backends' settings by backend, GitHub's App and ``gitlab`` also in fields of their own.
The LLM settings are parsed once, into ``Config.llm``, which the server's engine is built from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..forge.host import Host
from ..review.llm_config import LLM_SETTINGS, LLMConfig
from ..review.prompt_context import CONTEXT_SETTINGS
from ..store.queue_base import sqlite_path
from .bounds import ReviewLimits
from .dashboard import SETTINGS as DASHBOARD_SETTINGS
from .dashboard import DashboardConfig, DashboardError

__all__ = ["DEFAULT_API_URL", "OWN_SETTINGS", "Config", "ConfigError", "config_fields",
           "read_config", "read_forges", "settings_of"]

#: GitHub's REST base URL, the default of ``Config.api_url`` (GitHub's App, ``bot.github.host``)
DEFAULT_API_URL = "https://api.github.com"


#: the server's own variables, after the code-host backends' (``settings_of``)
OWN_SETTINGS: dict[str, tuple[str, str]] = {
    "ROUNDWISE_DB": (("the ledger and job queue: a SQLite file (a path or sqlite:///PATH, one "
                      "server) or postgresql://USER@HOST/DB[?schema=NAME] (any number of "
                      "replicas)"), "roundwise.db"),
    "ROUNDWISE_JOB_LEASE": (("seconds a claimed job stays its server's without renewal "
                             "(renewed every quarter of it); a dead replica's jobs are taken "
                             "over once it runs out"), "600"),
    "ROUNDWISE_RETENTION_DAYS": (("days processed deliveries and finished jobs are kept "
                                  "before the server's hourly prune (or `roundwise db prune`) "
                                  "drops them; the ledger is kept"), "14"),
    **LLM_SETTINGS,
    **CONTEXT_SETTINGS,
    "ROUNDWISE_WORKERS": ("concurrent jobs (different PRs)", "4"),
    "ROUNDWISE_BOT_LOGIN": ("the App's bot login, to recognise its own comments",
                            "roundwise[bot]"),
    "ROUNDWISE_REVIEW_DRAFTS": ("review draft PRs unless a repo's settings say otherwise",
                                "false"),
    "ROUNDWISE_MAX_REVIEW_FILES": (("changed files one round reviews, in diff order; the "
                                    "summary and the check run name those left out"), "3000"),
    "ROUNDWISE_MAX_REVIEW_LINES": ("diff lines one round reviews (whole files)", "20000"),
    "ROUNDWISE_MAX_REVIEW_BYTES": ("bytes of diff one round reviews (whole files)", "2097152"),
    # not the server's: `roundwise bench mine` reads repositories the App is not installed on
    "GITHUB_TOKEN": ("`roundwise bench mine` only: a token that can read the mined repository",
                     "unset"),
    "ROUNDWISE_CHECK_MODEL": ("at start-up, make one tiny call to the model (1 = on)", "0"),
    "ROUNDWISE_LOG_FORMAT": ("server log lines: text, or json (one object a line)", "text"),
    "ROUNDWISE_METRICS_TOKEN": (("`GET /metrics` answers only a scrape that sends "
                                 "`Authorization: Bearer TOKEN` (its labels name repositories); "
                                 "unset, only a scraper on the loopback address is answered"),
                                "unset: loopback scrapes only"),
    **DASHBOARD_SETTINGS,  # the dashboard under /dashboard (bot.config.dashboard)
}


def settings_of(hosts: Sequence[Host]) -> dict[str, tuple[str, str]]:
    """Every environment variable of a server with these backends, name -> (meaning, default):
    each backend's, in the list's order, then the server's own."""
    return {**{name: meaning for host in hosts for name, meaning in host.settings.items()},
            **OWN_SETTINGS}


def read_forges(env: Mapping[str, str], problems: list[str],
                hosts: Sequence[Host]) -> dict[str, Any]:
    """Each backend's settings by name (None: not configured). The later entries are read
    first, so the first, the default backend, knows whether it is required; problems are
    appended in that order."""
    first, *others = hosts
    found = {host.name: host.read(env, problems, False) for host in others}
    found[first.name] = first.read(env, problems,
                                   all(value is None for value in found.values()))
    return {host.name: found[host.name] for host in hosts}


def config_fields(forges: Mapping[str, Any], hosts: Sequence[Host]) -> dict[str, Any]:
    """The ``Config`` fields the backends' settings fill (GitHub's App, ``gitlab``)."""
    return {key: value for host in hosts for key, value in host.fields(forges[host.name]).items()}


LOG_FORMATS = ("text", "json")


class ConfigError(ValueError):
    """A missing or invalid setting; the message names it and says how to fix it."""


@dataclass
class Config:
    app_id: str
    private_key: str = field(repr=False)
    webhook_secret: str = field(repr=False)
    api_url: str = DEFAULT_API_URL
    db_path: str = "roundwise.db"
    llm: LLMConfig | None = None  # None: the offline reviewer
    workers: int = 4
    bot_login: str = "roundwise[bot]"
    review_drafts: bool = False
    check_model: bool = False  # one tiny call to the model at start-up
    log_format: str = "text"
    retention_days: float = 14.0  # processed deliveries and finished jobs (bot.jobs.retention)
    job_lease: float = 600.0  # seconds; a dead replica's jobs are taken over after it
    gitlab: Any = None  # bot.gitlab.settings.GitLabConfig; None: no GitLab
    review_limits: ReviewLimits = field(default_factory=ReviewLimits)  # bot.config.bounds
    #: who may sign in to the dashboard, and the public URL (bot.config.dashboard)
    dashboard: DashboardConfig = field(default_factory=DashboardConfig)
    #: every code-host backend's settings by name, as ``read_forges`` read them
    forges: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def model(self) -> str | None:
        return self.llm.model if self.llm else None

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


def retention_days(value: str | None) -> float:
    """``ROUNDWISE_RETENTION_DAYS`` as a number of days (default 14)."""
    if value is None or value.strip() == "":
        return 14.0
    try:
        days = float(value)
        if not days > 0 or days == float("inf"):
            raise ValueError
    except ValueError:
        raise ConfigError(f"ROUNDWISE_RETENTION_DAYS={value!r} must be a number of days above "
                          "0") from None
    return days


def read_config(env: Mapping[str, str] | None, hosts: Sequence[Host]) -> Config:
    """Read and check every setting of a server with these backends (``bot.server.hosts``
    hands in its list); raises ConfigError listing all problems at once."""
    env = os.environ if env is None else env
    problems: list[str] = []
    forges = read_forges(env, problems, hosts)  # GitHub, GitLab, ...

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

    try:
        check_model = _bool("ROUNDWISE_CHECK_MODEL", env.get("ROUNDWISE_CHECK_MODEL"), False)
    except ConfigError as exc:
        problems.append(str(exc))
        check_model = False

    log_format = (env.get("ROUNDWISE_LOG_FORMAT") or "text").strip().lower()
    if log_format not in LOG_FORMATS:
        problems.append(f"ROUNDWISE_LOG_FORMAT={log_format!r} must be text or json")

    try:
        keep_days = retention_days(env.get("ROUNDWISE_RETENTION_DAYS"))
    except ConfigError as exc:
        problems.append(str(exc))
        keep_days = 14.0

    limits = {}
    for name, limit in (("ROUNDWISE_MAX_REVIEW_FILES", "max_files"),
                        ("ROUNDWISE_MAX_REVIEW_LINES", "max_lines"),
                        ("ROUNDWISE_MAX_REVIEW_BYTES", "max_bytes")):
        value = env.get(name)
        if value:
            try:
                limits[limit] = int(value)
                if limits[limit] < 1:
                    raise ValueError
            except ValueError:
                problems.append(f"{name}={value!r} must be a whole number of at least 1")
                limits.pop(limit, None)

    lease = env.get("ROUNDWISE_JOB_LEASE") or "600"
    try:
        job_lease = float(lease)
        if not job_lease > 0 or job_lease == float("inf"):
            raise ValueError
    except ValueError:
        problems.append(f"ROUNDWISE_JOB_LEASE={lease!r} must be a number of seconds above 0")
        job_lease = 600.0

    db = env.get("ROUNDWISE_DB") or "roundwise.db"
    from ..store.target import TargetError, check_target

    try:  # the scheme and the URL's form; the folder or the server in bot.server.startup
        check_target(db, folder=False, reach=False)
    except TargetError as exc:
        problems.append(f"ROUNDWISE_DB: {exc}")

    dashboard = DashboardConfig()
    try:
        dashboard = DashboardConfig.from_env(env)
    except DashboardError as exc:
        problems.append(str(exc))

    llm = None
    try:
        llm = LLMConfig.from_env(env)
    except ValueError as exc:
        if env.get("ROUNDWISE_MODEL"):
            problems.append(str(exc))

    if problems:
        raise ConfigError("roundwise cannot start:\n  - " + "\n  - ".join(problems))
    return Config(
        **config_fields(forges, hosts),
        db_path=sqlite_path(db),
        llm=llm,
        workers=n_workers,
        bot_login=env.get("ROUNDWISE_BOT_LOGIN") or "roundwise[bot]",
        review_drafts=drafts,
        check_model=check_model,
        log_format=log_format,
        retention_days=keep_days,
        job_lease=job_lease,
        review_limits=ReviewLimits(**limits),
        dashboard=dashboard,
        forges=forges,
    )
