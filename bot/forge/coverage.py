"""Which changed files a round could not review, and why: a forge's diff with what it left out.

A host does not always give the whole change: GitHub lists at most 3,000 files of a pull
request, sends no patch for a file too large to diff, and a binary file has no lines to review;
the bot's own caps (``bot.config.bounds``) cut the rest. A round that did not see every file
must say so, in its summary and its check run, and must not pass a ``fail_on`` gate as if it
had (``bot.pr.checks``): a contributor could otherwise pad a pull request with files that sort
before the one that matters. ``ListedDiff`` is a forge's diff with the files it left out
(``Unreviewed``, with a reason from ``REASONS``) and how many it did not even list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BINARY", "CAPS", "NO_PATCH", "PARTIAL_REVIEW", "REASONS", "UNLISTED", "ListedDiff",
           "Unreviewed", "holds_gate"]

UNLISTED = "unlisted"  # beyond the files the host lists (GitHub: 3,000)
NO_PATCH = "no_patch"  # the host sent no patch (a diff too large to show)
BINARY = "binary"  # no lines to review
CAPS = "caps"  # over the bot's caps (ROUNDWISE_MAX_REVIEW_*, the read cap)

#: what a round's check may conclude, with ``fail_on``, when it could not review every file (the
#: repository's ``partial_review``; the first is the default): GitHub counts ``neutral`` as
#: passing a required check, ``action_required`` and ``failure`` as not
PARTIAL_REVIEW = ("action_required", "neutral", "failure")

#: each reason in words, as the summary and the check run give it
REASONS = {
    UNLISTED: "beyond the 3,000 files GitHub lists",
    NO_PATCH: "no patch from GitHub (a diff too large for it to show)",
    BINARY: "binary (no lines to review)",
    CAPS: "over the bot's caps (ROUNDWISE_MAX_REVIEW_*)",
}


@dataclass(frozen=True)
class Unreviewed:
    """A changed file the round did not review, and why (a key of ``REASONS``)."""

    path: str
    why: str


@dataclass(frozen=True)
class ListedDiff:
    """A pull request's diff as a forge could give it: the unified diff text, the changed
    files it holds no patch for, and how many changed files the host did not list at all."""

    text: str
    unreviewed: tuple[Unreviewed, ...] = field(default_factory=tuple)
    unlisted: int = 0


def holds_gate(unreviewed: list[Unreviewed] | tuple[Unreviewed, ...], unlisted: int) -> bool:
    """Whether what a round left out keeps its check from passing: any changed file that has
    lines it did not read (a binary file has none)."""
    return unlisted > 0 or any(u.why != BINARY for u in unreviewed)
