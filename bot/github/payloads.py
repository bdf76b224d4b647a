"""GitHub's webhook payloads turned into the tracker's values (people's comments and their code).

Kept beside the GitHub client because these shapes are GitHub's: another forge brings its own.
"""

from __future__ import annotations

from tracker.intake import Comment

__all__ = ["code_from_hunk", "comment_from_payload"]


def code_from_hunk(diff_hunk: str | None, count: int, side: str = "RIGHT") -> str | None:
    """The last ``count`` lines a review comment sits on, from the hunk GitHub sends with it."""
    if not diff_hunk:
        return None
    keep = ("+", " ") if side != "LEFT" else ("-", " ")
    lines = [ln[1:] for ln in diff_hunk.splitlines()[1:] if ln[:1] in keep]
    return "\n".join(lines[-max(count, 1):]) or None


def comment_from_payload(data: dict, kind: str, bot_logins: set[str]) -> Comment:
    user = data.get("user") or {}
    return Comment(
        id=int(data["id"]), kind=kind, author=user.get("login"), body=data.get("body") or "",
        path=data.get("path") if kind == "review_comment" else None,
        line=data.get("line") if kind == "review_comment" else None,
        start_line=data.get("start_line") if kind == "review_comment" else None,
        side=data.get("side") or "RIGHT", in_reply_to=data.get("in_reply_to_id"),
        by_bot=user.get("login") in bot_logins, node_id=data.get("node_id"),
        commit_id=data.get("commit_id") if kind == "review_comment" else None,
    )
