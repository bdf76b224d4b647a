"""GitHub's errors as the forge's typed tree: ``except NotFound`` instead of testing ``.status``.

Every error the GitHub client raises is a ``GitHubError`` (a ``bot.forge.ForgeError``) and, for
the cases a caller handles, also the forge's own class, so code written against the forge port
catches GitHub's errors without knowing GitHub.
"""

from __future__ import annotations

from .. import forge
from ..forge.calls import ErrorTree

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


#: ``error_for(message, status=..., retryable=..., **details)``: the error for a status
#: (``bot.forge.calls.ErrorTree``; ``GitHubError`` for the others)
error_for = ErrorTree(GitHubError, _BY_STATUS, RateLimited, Unavailable).error_for
