"""What the summary and the check run say about the changed files a round did not review.

A round that could not review every file (``bot.forge.coverage``: beyond the files GitHub
lists, no patch from GitHub, over the bot's caps; binary files have no lines and only get
named) must say which, and its check must not pass a ``fail_on`` gate: ``gate`` turns the
conclusion the defects give into the repository's ``partial_review`` (``action_required`` by
default, which GitHub does not count as passing a required check; ``neutral``, which it does;
or ``failure``), and without ``fail_on`` a ``success`` into ``neutral``. File names come from
the pull request: they are shown as HTML-escaped ``<code>`` with control characters escaped.
"""

from __future__ import annotations

import html
from collections import Counter

from ..forge.coverage import BINARY, PARTIAL_REVIEW, REASONS, UNLISTED, Unreviewed, holds_gate

__all__ = ["PARTIAL_REVIEW", "check_lines", "gate", "read", "summary_note"]

IN_SUMMARY = 20  # files the PR's summary comment names; the check run names more
IN_CHECK = 200  # at most 160 characters a name: well inside the 65,535 of a check's summary
MAX_NAME = 160  # characters of one file name shown


def read(plan: dict | None) -> tuple[list[Unreviewed], int]:
    """The unreviewed files and the unlisted count from a round's saved plan (JSON)."""
    plan = plan or {}
    items = [Unreviewed(str(u[0]), str(u[1])) for u in plan.get("unreviewed") or []
             if isinstance(u, list | tuple) and len(u) == 2]
    try:
        unlisted = max(int(plan.get("unlisted") or 0), 0)
    except (TypeError, ValueError):
        unlisted = 0
    return items, unlisted


def gate(result: str, fail_on: str | None, unreviewed: list[Unreviewed], unlisted: int,
         partial: str | None = None) -> str:
    """The check's conclusion once what the round left out is counted: never ``success``
    while a changed file with lines went unreviewed; with ``fail_on``, ``partial`` (the
    repository's ``partial_review``) unless the defects already fail it."""
    if not holds_gate(unreviewed, unlisted) or result == "failure":
        return result
    if fail_on:
        return partial if partial in PARTIAL_REVIEW else PARTIAL_REVIEW[0]
    return "neutral" if result == "success" else result


def _name(path: str) -> str:
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in path)
    if len(shown) > MAX_NAME:
        shown = shown[: MAX_NAME - 1] + "…"
    return f"<code>{html.escape(shown)}</code>"


def _counts(unreviewed: list[Unreviewed], unlisted: int) -> tuple[int, str]:
    """How many files in all, and per reason in words (most first)."""
    by = Counter(u.why for u in unreviewed)
    if unlisted:
        by[UNLISTED] += unlisted
    parts = [f"{n} {REASONS.get(why, why)}" for why, n in by.most_common()]
    return sum(by.values()), ", ".join(parts)


def _listing(unreviewed: list[Unreviewed], unlisted: int, limit: int) -> list[str]:
    shown = sorted(unreviewed, key=lambda u: (u.why == BINARY, u.path))[:limit]
    out = [f"- {_name(u.path)}: {REASONS.get(u.why, u.why)}" for u in shown]
    more = len(unreviewed) - len(shown)
    if more:
        out.append(f"- …and {more} more")
    if unlisted:
        out.append(f"- {unlisted} more that GitHub does not list (it lists 3,000 files at most)")
    return out


def _headline(unreviewed: list[Unreviewed], unlisted: int) -> str:
    total, why = _counts(unreviewed, unlisted)
    return f"{total} changed file{'s were' if total != 1 else ' was'} not reviewed: {why}"


def summary_note(unreviewed: list[Unreviewed], unlisted: int) -> list[str]:
    """The summary comment's lines on the files the round did not review (none: [])."""
    if not unreviewed and not unlisted:
        return []
    if holds_gate(unreviewed, unlisted):
        lead = ("⚠️ **Not every changed file was reviewed**, so the `roundwise` check does not "
                "pass as if it had been: with `fail_on` it concludes `partial_review` "
                "(`action_required` unless `.github/roundwise.yml` says otherwise). Split the "
                "pull request to have every file reviewed.")
    else:
        lead = "ℹ️ Binary files changed: they hold no lines to review."
    return [lead, "", f"<details><summary>{_headline(unreviewed, unlisted)}</summary>", "",
            *_listing(unreviewed, unlisted, IN_SUMMARY), "", "</details>"]


def check_lines(unreviewed: list[Unreviewed], unlisted: int, result: str) -> list[str]:
    """The check run's paragraph on the files the round did not review (none: [])."""
    if not unreviewed and not unlisted:
        return []
    lead = (f"**Not every file was reviewed**, so this check concludes `{result}` "
            "(`partial_review` in `.github/roundwise.yml`, with `fail_on`). "
            f"{_headline(unreviewed, unlisted)}."
            if holds_gate(unreviewed, unlisted) else
            f"{_headline(unreviewed, unlisted)}.")
    return [lead, "", *_listing(unreviewed, unlisted, IN_CHECK), ""]
