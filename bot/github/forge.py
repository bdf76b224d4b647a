"""``GitHubForge``: the forge port over GitHub's REST and GraphQL (a thin ``RepoClient`` wrapper).

It turns GitHub's JSON into the port's values and back; every call, retry and error is the
client's (``bot.github.client``).
"""

from __future__ import annotations

from tracker.discussion import first_lines

from ..forge import Comment, Forge, InlineComment, PullRequest, Review, Thread
from ..forge.coverage import ListedDiff
from .client import RepoClient
from .files import listed_pull_diff

__all__ = ["GitHubForge"]


class GitHubForge(Forge):
    """One repository on GitHub, as one App installation."""

    def __init__(self, client: RepoClient):
        self.client = client

    async def pull(self, number: int) -> PullRequest:
        data = await self.client.pull(number)
        return PullRequest(
            number=int(data.get("number") or number), title=data.get("title") or "",
            body=data.get("body") or "", author=(data.get("user") or {}).get("login"),
            head_sha=data["head"]["sha"], base_sha=(data.get("base") or {}).get("sha"),
            open=data.get("state") == "open", draft=bool(data.get("draft")),
            changed_files=_count(data.get("changed_files")),
        )

    async def pull_diff(self, number: int) -> str:
        return await self.client.pull_diff(number)

    async def compare_diff(self, base: str, head: str) -> str:
        return await self.client.compare_diff(base, head)

    async def listed_pull_diff(self, pull: PullRequest) -> ListedDiff:
        return await listed_pull_diff(self.client, pull.number, pull.changed_files)

    async def compare_status(self, base: str, head: str) -> str:
        return await self.client.compare_status(base, head)

    async def commit_messages(self, base: str, head: str) -> list[str]:
        return first_lines(await self.client.commit_messages(base, head))

    async def file_text(self, path: str, ref: str | None = None) -> str | None:
        return await self.client.file_text(path, ref)

    async def review_comments(self, number: int) -> list[Comment]:
        return [_comment(c) for c in await self.client.review_comments(number)]

    async def issue_comments(self, number: int) -> list[Comment]:
        return [_comment(c) for c in await self.client.issue_comments(number)]

    async def review_threads(self, number: int) -> list[Thread]:
        out = []
        for thread in await self.client.review_threads(number):
            ids = []
            for c in thread["comments"]["nodes"]:
                cid = c.get("fullDatabaseId") or c.get("databaseId")
                if cid is not None:
                    ids.append(int(cid))
            out.append(Thread(thread["id"], bool(thread["isResolved"]), tuple(ids)))
        return out

    async def create_review(self, number: int, head_sha: str, body: str,
                            comments: list[InlineComment]) -> None:
        await self.client.create_review(number, head_sha, body, [_inline(c) for c in comments])

    async def reply(self, number: int, comment_id: int, body: str) -> int:
        return int((await self.client.reply(number, comment_id, body))["id"])

    async def resolve_thread(self, thread_id: str) -> None:
        await self.client.resolve_thread(thread_id)

    async def unresolve_thread(self, thread_id: str) -> None:
        await self.client.unresolve_thread(thread_id)

    async def create_issue_comment(self, number: int, body: str) -> int:
        return int((await self.client.create_issue_comment(number, body))["id"])

    async def edit_issue_comment(self, comment_id: int, body: str) -> None:
        await self.client.edit_issue_comment(comment_id, body)

    async def permission(self, user: str) -> str:
        return await self.client.permission(user)

    async def reviews(self, number: int) -> list[Review]:
        return [Review(int(r["id"]), (r.get("user") or {}).get("login"), r.get("state") or "",
                       r.get("body") or "") for r in await self.client.reviews(number)]

    async def request_changes(self, number: int, head_sha: str, body: str) -> None:
        await self.client.create_review(number, head_sha, body, [], event="REQUEST_CHANGES")

    async def dismiss_review(self, number: int, review_id: int, message: str) -> None:
        await self.client.dismiss_review(number, review_id, message)

    async def create_check_run(self, head_sha: str, fields: dict) -> int | None:
        return int((await self.client.create_check_run({**fields, "head_sha": head_sha}))["id"])

    async def update_check_run(self, check_run_id: int, fields: dict) -> None:
        await self.client.update_check_run(check_run_id, fields)

    async def find_check_run(self, head_sha: str, name: str, external_id: str) -> int | None:
        found = await self.client.find_check_run(head_sha, name, external_id)
        return int(found["id"]) if found else None

    async def react(self, comment_id: int, content: str) -> None:
        await self.client.react_issue_comment(comment_id, content)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _comment(data: dict) -> Comment:
    down = (data.get("reactions") or {}).get("-1") if isinstance(data.get("reactions"), dict) \
        else 0
    return Comment(int(data["id"]), (data.get("user") or {}).get("login"), data.get("body") or "",
                   down if isinstance(down, int) and not isinstance(down, bool) and down > 0
                   else 0)


def _inline(c: InlineComment) -> dict:
    """A review comment in the create-review API's shape."""
    out = {"path": c.path, "line": c.line, "side": c.side, "body": c.body}
    if c.start_line is not None and c.start_line < c.line:
        out["start_line"] = c.start_line
        out["start_side"] = c.side
    return out
