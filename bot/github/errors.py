"""GitHub's errors as the forge's typed tree: ``except NotFound`` instead of testing ``.status``.

Every error the GitHub client raises is a ``GitHubError`` (a ``bot.forge.ForgeError``) and, for
the cases a caller handles, also the forge's own class, so code written against the forge port
catches GitHub's errors without knowing GitHub.
"""

from __future__ import annotations

from typing import Any

from .. import forge

__all__ = ["Forbidden", "GitHubError", "NotAcceptable", "NotFound", "RateLimited",
           "Unauthorized", "Unavailable", "Unprocessable", "error_for"]


class GitHubError(forge.ForgeError):
    """A GitHub API call that failed for good (after retries), with what was asked."""


class Unauthorized(GitHubError, forge.Unauthorized):
    pass


class Forbidden(GitHubError, forge.Forbidden):
    pass


class NotFound(GitHubError, forge.NotFound):
    pass


class NotAcceptable(GitHubError, forge.NotAcceptable):
    """406: e.g. a pull request diff too large for the diff media type."""


class Unprocessable(GitHubError, forge.Unprocessable):
    pass


class RateLimited(GitHubError, forge.RateLimited):
    pass


class Unavailable(GitHubError, forge.Unavailable):
    """5xx or no connection."""


_BY_STATUS = {401: Unauthorized, 403: Forbidden, 404: NotFound, 406: NotAcceptable,
              422: Unprocessable}


def error_for(message: str, *, status: int | None = None, retryable: bool = False,
              **details: Any) -> GitHubError:
    """The error class for an HTTP ``status`` (``GitHubError`` for the others)."""
    if retryable and status in (403, 429):
        cls: type[GitHubError] = RateLimited
    elif retryable or (status is not None and status >= 500):
        cls = Unavailable
    else:
        cls = _BY_STATUS.get(status, GitHubError)
    return cls(message, status=status, retryable=retryable, **details)
