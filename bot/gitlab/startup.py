"""GitLab's start-up check: the instance answers and takes the token, or one line says why not.

``roundwise serve`` asks ``GET /api/v4/user`` once, before it listens, without retries: an
address that cannot be reached (no such host, refused, timed out), an answer that is not
GitLab's API, or a token GitLab refuses (401, 403) is a problem line and exit 2, as a GitHub
setting that cannot work is. GitLab answering 5xx or 429 is GitLab's passing trouble, not a
setting to fix: the server starts and asks again at the first job.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp

from .settings import GitLabConfig

__all__ = ["PROBE_TIMEOUT", "check_gitlab", "probe"]

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 10.0  # seconds for the one start-up request


def check_gitlab(config: object) -> list[str]:
    """The start-up problems of ``config.gitlab`` (none when GitLab is not configured)."""
    gitlab = getattr(config, "gitlab", None)
    if gitlab is None:
        return []
    problem = asyncio.run(probe(gitlab))
    return [problem] if problem else []


async def probe(config: GitLabConfig, timeout: float = PROBE_TIMEOUT) -> str | None:
    """One ``GET /api/v4/user`` with the token; the problem as a line, or None."""
    url = f"{config.url}/api/v4/user"
    where = f"GITLAB_URL={config.url!r}"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s, \
                s.get(url, headers={"Authorization": f"Bearer {config.token}"},
                      allow_redirects=False) as resp:
            status = resp.status
            try:
                data = await resp.json(content_type=None) if status == 200 else None
            except ValueError:
                data = None
    except TimeoutError:
        return f"{where} did not answer within {timeout:g}s: check the address and that " \
               "this machine can reach it"
    except aiohttp.ClientError as exc:
        reason = str(getattr(exc, "os_error", None) or exc).splitlines()[0][:200]
        return f"{where} cannot be reached ({reason}): check the address and that this " \
               "machine can reach it"
    if status == 401:
        return f"GITLAB_TOKEN was refused by GitLab at {config.url} (401): it is wrong, " \
               "expired or revoked; create an access token (role Developer, scope api)"
    if status == 403:
        return f"GITLAB_TOKEN may not read its own user at {config.url} (403): give the " \
               "access token the api scope"
    if status >= 500 or status == 429:
        log.warning("GitLab at %s answered %d at start-up; starting anyway, asking again at "
                    "the first job", config.url, status)
        return None
    if status != 200 or not isinstance(data, dict) or not data.get("username"):
        return f"{where} does not serve GitLab's API (GET /api/v4/user answered {status}): " \
               "use the instance's address, e.g. https://gitlab.example.com"
    log.info("GitLab at %s: acting as %s", config.url, str(data["username"])[:100])
    return None
