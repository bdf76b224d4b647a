"""The forge port: what a review round needs from a code host, in the host's own terms.

A round reads a pull request, its diffs and files (``ForgeReader``) and, on a host that takes
comments, posts a review, replies, resolves threads and keeps a summary (``Forge``). The round
(``bot.round``) only speaks this interface; ``bot.github.GitHubForge`` speaks GitHub's REST and
GraphQL behind it, ``bot.forge.localgit.LocalGitForge`` reads a local repository (it posts nothing:
``roundwise review`` prints its report instead). Adding a forge is one module implementing
these methods (the shape follows gidgethub's ``abc.py``: the interface here, thin backends).

Errors are one tree, whatever the host: ``ForgeError`` with ``status`` and ``retryable``, and a
subclass per case a round handles differently (``NotFound``, ``Unprocessable``...).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from .coverage import ListedDiff

__all__ = [
    "Comment", "Forbidden", "Forge", "ForgeError", "ForgeReader", "InlineComment",
    "NotAcceptable", "NotFound", "PullRequest", "RateLimited", "Review", "Thread",
    "Unauthorized",
    "Unavailable", "Unprocessable",
]


# --------------------------------------------------------------------------- errors


class ForgeError(Exception):
    """A call to the forge that failed for good (after the backend's retries)."""

    status: int | None = None

    def __init__(self, message: str, *, status: int | None = None, method: str = "",
                 url: str = "", errors: Any = None, retryable: bool = False):
        super().__init__(f"{method} {url}: {message}" if method else message)
        if status is not None or self.status is None:
            self.status = status
        self.method = method
        self.url = url
        self.errors = errors
        self.retryable = retryable


class Unauthorized(ForgeError):
    status = 401


class Forbidden(ForgeError):
    """No permission (a rate limit is ``RateLimited``)."""

    status = 403


class NotFound(ForgeError):
    status = 404


class NotAcceptable(ForgeError):
    """The host will not give what was asked in that form (e.g. a diff too large)."""

    status = 406


class Unprocessable(ForgeError):
    """The host refused the content (e.g. an inline comment outside the diff)."""

    status = 422


class RateLimited(ForgeError):
    """Too many calls; worth retrying later (``retry_after`` seconds from now, when the host
    said and it was longer than the backend would wait)."""

    retry_after: float | None = None


class Unavailable(ForgeError):
    """The host is down or unreachable; worth retrying later."""


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    body: str
    author: str | None
    head_sha: str
    base_sha: str | None
    open: bool = True
    draft: bool = False
    changed_files: int | None = None  # as the host counts them (None: it does not say)


@dataclass(frozen=True)
class Comment:
    """A comment on the pull request (inline or not)."""

    id: int
    author: str | None
    body: str
    thumbs_down: int = 0  # 👎 reactions (GitHub sends no webhook for them: read when listed)


@dataclass(frozen=True)
class Thread:
    """A review thread: its id, whether it is resolved, and its comments' ids."""

    id: str
    resolved: bool
    comment_ids: tuple[int, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Review:
    """A submitted review: who wrote it and its state (``COMMENTED``, ``CHANGES_REQUESTED``,
    ``APPROVED``, ``DISMISSED``)."""

    id: int
    author: str | None
    state: str
    body: str = ""


@dataclass(frozen=True)
class InlineComment:
    """A comment to post on lines of the new (RIGHT) or old (LEFT) side of the diff."""

    path: str
    line: int
    side: str
    body: str
    start_line: int | None = None

    def last_line_only(self) -> InlineComment:
        """The comment on its last line alone; a suggestion for the whole range would replace
        that one line, so it is dropped."""
        body = re.sub(r"\n*Suggested fix \([^)]*\):\n\n(`{3,4})suggestion\n.*?^\1$\n*", "\n\n",
                      self.body, flags=re.DOTALL | re.MULTILINE)
        return InlineComment(self.path, self.line, self.side, body)


# --------------------------------------------------------------------------- the port


class ForgeReader(ABC):
    """What a round reads from one repository on the host."""

    @abstractmethod
    async def pull(self, number: int) -> PullRequest: ...

    @abstractmethod
    async def pull_diff(self, number: int) -> str:
        """The pull request's whole diff (base...head), unified."""

    @abstractmethod
    async def compare_diff(self, base: str, head: str) -> str:
        """The unified diff from commit ``base`` to commit ``head``."""

    async def listed_pull_diff(self, pull: PullRequest) -> ListedDiff:
        """The pull request's diff with the changed files it has no patch for and why
        (``bot.forge.coverage``), for a pull request too large to compare whole. A forge
        whose ``pull_diff`` is always whole keeps this default."""
        return ListedDiff(await self.pull_diff(pull.number))

    async def compare_status(self, base: str, head: str) -> str:
        """How commit ``head`` relates to ``base``: ``ahead`` (base is its ancestor),
        ``behind``, ``diverged`` (a rebase or force-push) or ``identical``. A forge that cannot
        tell says ``ahead``, and rounds are reviewed as plain pushes."""
        return "ahead"

    async def commit_messages(self, base: str, head: str) -> list[str]:
        """The first lines of the messages of the commits from ``base`` to ``head``, oldest
        first (at most ``MAX_MESSAGES``), as evidence of what a push meant to do. A forge
        that cannot tell gives none."""
        return []

    @abstractmethod
    async def file_text(self, path: str, ref: str | None = None) -> str | None:
        """A file's text at ``ref`` (the default branch when None); None when absent."""


class Forge(ForgeReader):
    """A host that takes a round's comments, too."""

    @abstractmethod
    async def review_comments(self, number: int) -> list[Comment]: ...

    @abstractmethod
    async def review_threads(self, number: int) -> list[Thread]: ...

    @abstractmethod
    async def create_review(self, number: int, head_sha: str, body: str,
                            comments: list[InlineComment]) -> None: ...

    @abstractmethod
    async def reply(self, number: int, comment_id: int, body: str) -> int:
        """Reply in the thread of ``comment_id``; the reply's id."""

    @abstractmethod
    async def resolve_thread(self, thread_id: str) -> None: ...

    @abstractmethod
    async def unresolve_thread(self, thread_id: str) -> None:
        """Unfold a resolved thread (its defect is back: the reply must be seen)."""

    @abstractmethod
    async def issue_comments(self, number: int) -> list[Comment]: ...

    @abstractmethod
    async def create_issue_comment(self, number: int, body: str) -> int: ...

    @abstractmethod
    async def edit_issue_comment(self, comment_id: int, body: str) -> None: ...

    @abstractmethod
    async def permission(self, user: str) -> str:
        """``admin``, ``maintain``, ``write``, ``read`` or ``none``."""

    # The merge gate (``bot.pr.checks``): a host without these keeps the defaults and the round
    # goes on without requesting changes.

    async def reviews(self, number: int) -> list[Review]:
        return []

    async def request_changes(self, number: int, head_sha: str, body: str) -> None:
        """Submit a review that requests changes, with ``body`` and no inline comments."""

    async def dismiss_review(self, number: int, review_id: int, message: str) -> None:
        """Dismiss one of the bot's reviews (that requested changes), saying why."""

    # Check runs (the merge gate, ``bot.pr.checks``). A forge without them keeps these defaults:
    # creating answers None and the round goes on without a check.

    async def create_check_run(self, head_sha: str, fields: dict) -> int | None:
        """Create a check run on commit ``head_sha``; its id. ``fields`` in GitHub's shape
        (``name``, ``status``, ``conclusion``, ``output``...)."""
        return None

    async def update_check_run(self, check_run_id: int, fields: dict) -> None:
        """Change a check run; ``output.annotations`` are added to those it has."""

    async def find_check_run(self, head_sha: str, name: str, external_id: str) -> int | None:
        """The id of the check run named ``name`` with ``external_id`` on ``head_sha`` (one
        created before a crash), or None."""
        return None

    async def react(self, comment_id: int, content: str) -> None:
        """React to a PR (conversation) comment, e.g. ``-1`` for a quiet refusal; a forge
        without reactions keeps this default and the refusal stays silent."""
