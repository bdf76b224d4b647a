"""GitLab's errors as the forge's typed tree (``bot.forge``), as ``bot.github.errors`` does for
GitHub: code written against the port catches them without knowing the host.

GitLab refuses content with 400 (a note whose position matches no diff version, a line outside
the diff) where GitHub says 422: both are ``Unprocessable`` here, the status kept as sent.
"""

from __future__ import annotations

from .. import forge
from ..forge.calls import ErrorTree

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


#: ``error_for(message, status=..., retryable=..., **details)``: the error for a status
#: (``bot.forge.calls.ErrorTree``; ``GitLabError`` for the others)
error_for = ErrorTree(GitLabError, _BY_STATUS, RateLimited, Unavailable).error_for
