"""Who may force a re-review (``/roundwise review``), and how often.

A forced round reviews the head again even when it was reviewed already: with a model behind
the bot, each one is a bill. Anyone who can comment could otherwise run up that bill, so a
forced review needs write access to the repository or authorship of the pull request, and each
pull request gets at most ``PER_HOUR`` of them in any hour.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .queue import JobQueue

__all__ = ["PER_HOUR", "WRITE", "may_force", "recent_forced"]

PER_HOUR = 3
WRITE = {"admin", "maintain", "write"}


def recent_forced(queue: JobQueue, repo: str, number: int, *, hours: float = 1.0) -> int:
    """Forced rounds queued for the PR in the last ``hours``."""
    since = (datetime.now(UTC) - timedelta(hours=hours)).isoformat(timespec="milliseconds")
    return queue.store.forced_since(repo, number, since)


def may_force(permission: str, user: str | None, pr_author: str | None, already: int
              ) -> str | None:
    """None when ``user`` may force a review now, else why not (for a reply)."""
    if permission not in WRITE and (not user or user != pr_author):
        return "only the pull request's author or people with write access can " \
               "`/roundwise review`"
    if already >= PER_HOUR:
        return f"this pull request had {already} forced reviews in the last hour; " \
               "the next push is reviewed as usual"
    return None
