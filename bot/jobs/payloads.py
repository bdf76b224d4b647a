"""A comment job's payload turned into the tracker's values (people's comments and their code).

The shape is GitHub's webhook comment, which the GitHub backend queues as it came and the
GitLab backend translates its notes into (``bot.gitlab.jobs``), so the host-neutral handlers
(``bot.jobs.handlers``) read one shape whichever host the comment came from.
"""

from __future__ import annotations

import re

from tracker.intake import Comment
from tracker.lines import split_lines

from ..forge.confine import line_span, repo_path

__all__ = ["code_from_hunk", "comment_from_payload"]


def code_from_hunk(diff_hunk: str | None, count: int, side: str = "RIGHT") -> str | None:
    """The last ``count`` lines a review comment sits on, from the hunk GitHub sends with it."""
    if not diff_hunk:
        return None
    keep = ("+", " ") if side != "LEFT" else ("-", " ")
    lines = [ln[1:] for ln in split_lines(diff_hunk)[1:] if ln[:1] in keep]
    return "\n".join(lines[-max(count, 1):]) or None


def _sha(value: object) -> str | None:
    """A commit sha (hex), or None for anything else."""
    return value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{7,64}", value) else None


def comment_from_payload(data: dict, kind: str, bot_logins: set[str]) -> Comment:
    """A comment from its payload; its path confined to the repository, its lines positive
    and its span no longer than the hunk it sits in (``bot.forge.confine``).

    An *outdated* review comment (its lines changed since) has ``line`` null on GitHub; it
    is anchored at ``original_line`` of ``original_commit_id`` and mapped from there, not
    taken for a remark on the whole PR.
    """
    user = data.get("user") or {}
    inline = kind == "review_comment"
    outdated = inline and data.get("line") is None and data.get("original_line") is not None
    hunk = data.get("diff_hunk") if isinstance(data.get("diff_hunk"), str) else ""
    start, line = line_span(
        data.get("original_start_line" if outdated else "start_line"),
        data.get("original_line" if outdated else "line"),
        limit=max(len(split_lines(hunk)) - 1, 1) if hunk else 2000)
    path = repo_path(data.get("path")) if inline else None
    return Comment(
        id=int(data["id"]), kind=kind, author=user.get("login"), body=data.get("body") or "",
        path=path,
        line=line if inline and path else None,
        start_line=start if inline and path else None,
        side=data.get("side") or "RIGHT", in_reply_to=data.get("in_reply_to_id"),
        by_bot=user.get("login") in bot_logins, node_id=data.get("node_id"),
        commit_id=_sha(data.get("original_commit_id" if outdated else "commit_id"))
        if inline else None,
        review_state=str(data.get("state"))[:40].upper()
        if kind == "review" and data.get("state") else None,
    )
