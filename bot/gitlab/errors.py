"""GitLab's errors as the forge's typed tree (``bot.forge``), as ``bot.github.errors`` does for
GitHub: code written against the port catches them without knowing the host.

GitLab refuses content with 400 (a note whose position matches no diff version, a line outside
the diff) where GitHub says 422: both are ``Unprocessable`` here, the status kept as sent.
"""

from __future__ import annotations

from typing import Any

from .. import forge

__all__ = ["Forbidden", "GitLabError", "NotAcceptable", "NotFound", "RateLimited", "Unauthorized",
           "Unavailable", "Unprocessable", "error_for"]


class GitLabError(forge.ForgeError):
    """A GitLab API call that failed for good (after retries), with what was asked."""


class Unauthorized(GitLabError, forge.Unauthorized):
    pass


class Forbidden(GitLabError, forge.Forbidden):
    pass


class NotFound(GitLabError, forge.NotFound):
    pass


class NotAcceptable(GitLabError, forge.NotAcceptable):
    """406, or a comparison GitLab gave up on (``compare_timeout``)."""


class Unprocessable(GitLabError, forge.Unprocessable):
    pass


class RateLimited(GitLabError, forge.RateLimited):
    pass


class Unavailable(GitLabError, forge.Unavailable):
    """5xx or no connection."""


_BY_STATUS = {400: Unprocessable, 401: Unauthorized, 403: Forbidden, 404: NotFound, 406: NotAcceptable,
              422: Unprocessable}


def error_for(message: str, *, status: int | None = None, retryable: bool = False,
              **details: Any) -> GitLabError:
    if retryable and status in (403, 429):
        cls: type[GitLabError] = RateLimited
    elif retryable or (status is not None and status >= 500):
        cls = Unavailable
    else:
        cls = _BY_STATUS.get(status, GitLabError)
    return cls(message, status=status, retryable=retryable, **details)
