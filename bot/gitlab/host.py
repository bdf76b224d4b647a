"""The GitLab backend's entry in ``bot.server.hosts``: its settings and ``POST /gitlab/webhook``.

GitLab is optional: it is configured when ``GITLAB_TOKEN`` is set (``settings.GitLabConfig``),
and then mounted as ``service.GitLabService``, which owns the ``gitlab:`` repositories' jobs;
``startup.check_gitlab`` asks the instance who the token is before the server listens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..forge.host import Host
from .service import GitLabService, mount
from .settings import SETTINGS, GitLabConfig
from .startup import check_gitlab

__all__ = ["GITLAB"]


def _read(env: Mapping[str, str], problems: list[str], required: bool) -> GitLabConfig | None:
    return GitLabConfig.from_env(env, problems)


def _mount(app: Any, config: Any) -> GitLabService | None:
    return mount(app, config.gitlab, config.bot_login) if config.gitlab else None


GITLAB = Host(name="gitlab", settings=SETTINGS, read=_read, mount=_mount,
              fields=lambda settings: {"gitlab": settings}, title="GitLab",
              route="POST /gitlab/webhook",
              configured=lambda config: config.gitlab is not None, check=check_gitlab,
              describe=lambda config: f"GitLab at {config.gitlab.url}")
