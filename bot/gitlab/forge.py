"""``GitLabForge``: the forge port over GitLab's REST API, for one merge request's project.

GitLab's words for the port's: a pull request is a merge request (``iid``), a review thread
is a *discussion* (the first note's ``type`` is ``DiffNote`` when it sits on lines), a review
comment is a note in one, the sticky summary is a plain MR note edited in place, write access
is the Developer role (access level 30), and the check run is a commit status named
``roundwise`` on the head. A review has no batch on GitLab: each inline comment becomes its own
discussion whose ``position`` names the MR diff version of the head (``base_sha``,
``start_sha``, ``head_sha``) and the line as GitLab wants it (``new_line`` for an added line,
``old_line`` for a removed one, both for an unchanged one); GitLab refuses any other with 400,
which the round reads as ``Unprocessable`` and answers as for GitHub (one by one, then on the
last line alone). Comment ids are GitLab's note ids moved into their own range
(``bot.gitlab.ids``); the token's own user shows as the bot's login.
"""

from __future__ import annotations

import logging
import re

from tracker.discussion import first_lines

from ..config.repo_settings import PATH as SETTINGS_PATH
from ..forge import Comment, Forge, InlineComment, PullRequest, Thread
from ..forge.confine import repo_path
from .client import ProjectClient
from .diffs import line_code, locate, unified
from .errors import NotAcceptable, NotFound, Unavailable, Unprocessable
from .ids import from_note, project_path, to_note

__all__ = ["GitLabForge", "access_permission", "status_fields"]

log = logging.getLogger(__name__)

#: GitLab's access levels as the port's permissions (Developer can push: "write")
LEVELS = ((50, "admin"), (40, "maintain"), (30, "write"), (5, "read"))
STATUS_NAME = "roundwise"
GITLAB_SETTINGS_PATH = ".gitlab/roundwise.yml"  # read before .github/roundwise.yml
MAX_DESCRIPTION = 255  # GitLab cuts a commit status's description there


def access_permission(level: int) -> str:
    for floor, name in LEVELS:
        if level >= floor:
            return name
    return "none"


def status_fields(fields: dict) -> dict | None:
    """A check run's fields (GitHub's shape, ``bot.pr.checks``) as a commit status's, or None
    when they change nothing a status shows (more annotations)."""
    status, conclusion = fields.get("status"), fields.get("conclusion")
    if status == "completed":
        state = {"failure": "failed", "cancelled": "canceled", "skipped": "skipped",
                 "timed_out": "failed", "action_required": "failed"}.get(conclusion or "",
                                                                          "success")
    elif status == "in_progress":
        state = "running"
    elif status == "queued":
        state = "pending"
    else:
        return None
    title = ((fields.get("output") or {}).get("title") or "").strip()
    if conclusion == "neutral" and title:
        title = f"{title} (not blocking)"
    return {"state": state, "name": fields.get("name") or STATUS_NAME,
            "description": title[:MAX_DESCRIPTION]}


class GitLabForge(Forge):
    """One merge request's project on GitLab."""

    def __init__(self, project: ProjectClient, repo: str, iid: int | None, *, bot_login: str,
                 web_url: str):
        self.project = project
        self.repo = repo  # the ledger's key, ``gitlab:group/project``
        self.iid = iid
        self.bot_login = bot_login
        self.web_url = web_url.rstrip("/")
        self._mr: dict | None = None

    # -- reading -----------------------------------------------------------------------------

    async def pull(self, number: int) -> PullRequest:
        data = await self.project.merge_request(number)
        self._mr = data
        refs = data.get("diff_refs") or {}
        return PullRequest(
            number=int(data.get("iid") or number), title=data.get("title") or "",
            body=data.get("description") or "",
            author=await self._login((data.get("author") or {}).get("username")),
            head_sha=data.get("sha") or refs.get("head_sha"),
            base_sha=refs.get("base_sha"), open=data.get("state") == "opened",
            draft=bool(data.get("draft") or data.get("work_in_progress")))

    async def pull_diff(self, number: int) -> str:
        return unified(await self.project.mr_diffs(number))

    async def compare_diff(self, base: str, head: str) -> str:
        if base == head:
            return ""
        data = await self.project.compare(base, head)
        if data.get("compare_timeout"):
            raise NotAcceptable("the comparison timed out on GitLab", status=406)
        return unified(data.get("diffs") or [])

    async def commit_messages(self, base: str, head: str) -> list[str]:
        if base == head:
            return []
        commits = (await self.project.compare(base, head)).get("commits") or []
        return first_lines([str(c.get("message") or c.get("title") or "") for c in commits
                            if isinstance(c, dict)])

    async def compare_status(self, base: str, head: str) -> str:
        if base == head:
            return "identical"
        found = await self.project.merge_base(base, head)
        if found is None:
            return ""
        return "ahead" if found == base else "behind" if found == head else "diverged"

    async def file_text(self, path: str, ref: str | None = None) -> str | None:
        if repo_path(path) != path:
            log.warning("not reading %r: not a path inside the repository", path[:200])
            return None
        if ref is None:  # the default branch: the settings, read from there only
            ref = await self.project.default_branch()
            if path == SETTINGS_PATH:  # on GitLab, .gitlab/roundwise.yml first
                found = await self.project.file_raw(GITLAB_SETTINGS_PATH, ref)
                if found is not None:
                    return found
        return await self.project.file_raw(path, ref)

    # -- discussions -------------------------------------------------------------------------

    async def _login(self, username: str | None) -> str | None:
        """A username as the round knows it: the token's own user is the bot."""
        if username is None:
            return None
        me = self.project.client.known_username()
        if me is None:
            try:
                me = (await self.project.client.me()).get("username")
            except (Unavailable, NotFound):
                me = None
        return self.bot_login if username == me else username

    async def _discussions(self, number: int) -> list[tuple[dict, bool, list[dict]]]:
        """(discussion, on lines, its people's and the bot's notes), system notes left out."""
        out = []
        for d in await self.project.discussions(number):
            notes = [n for n in d.get("notes") or [] if isinstance(n, dict)]
            if not notes:
                continue
            inline = notes[0].get("type") == "DiffNote"
            out.append((d, inline, [n for n in notes if not n.get("system")]))
        return out

    async def _comment(self, note: dict) -> Comment:
        return Comment(from_note(note["id"]),
                       await self._login((note.get("author") or {}).get("username")),
                       note.get("body") or "")

    async def review_comments(self, number: int) -> list[Comment]:
        return [await self._comment(n) for _, inline, notes in await self._discussions(number)
                if inline for n in notes]

    async def issue_comments(self, number: int) -> list[Comment]:
        return [await self._comment(n) for _, inline, notes in await self._discussions(number)
                if not inline for n in notes]

    async def review_threads(self, number: int) -> list[Thread]:
        out = []
        for d, inline, notes in await self._discussions(number):
            if not inline:
                continue
            resolvable = [n for n in notes if n.get("resolvable")]
            resolved = bool(resolvable) and all(n.get("resolved") for n in resolvable)
            out.append(Thread(str(d["id"]), resolved,
                              tuple(from_note(n["id"]) for n in notes)))
        return out

    async def create_review(self, number: int, head_sha: str, body: str,
                            comments: list[InlineComment]) -> None:
        """One discussion per comment (GitLab has no review batch; ``body`` is the summary's
        to say). Comments already there (the same body: every one carries a hidden marker)
        are not posted again; those GitLab refuses are raised together as Unprocessable."""
        if not comments:
            return
        version = await self._version(number, head_sha)
        entries = (await self.project.version(number, version["id"])).get("diffs") or []
        have = {c.body for c in await self.review_comments(number)}
        refused = []
        for comment in comments:
            if comment.body in have:
                continue
            position = _position(version, entries, comment)
            if position is None:
                refused.append(f"{comment.path}:{comment.line}: not a line of the diff")
                continue
            try:
                await self.project.create_discussion(number, comment.body, position)
            except Unprocessable as exc:
                refused.append(f"{comment.path}:{comment.line}: {exc}")
        if refused:
            raise Unprocessable("GitLab refused inline comments", status=400, errors=refused)

    async def _version(self, number: int, head_sha: str) -> dict:
        """The MR diff version of ``head_sha`` (GitLab makes one per push, a moment after it:
        none yet is worth retrying)."""
        for version in await self.project.versions(number):
            if version.get("head_commit_sha") == head_sha:
                return version
        raise Unavailable(f"GitLab has no diff version of {head_sha[:12]} yet", retryable=True)

    async def _discussion_of(self, number: int, comment_id: int) -> dict:
        note = to_note(comment_id)
        for d, _, notes in await self._discussions(number):
            if any(n.get("id") == note for n in notes):
                return d
        raise NotFound(f"no discussion holds note {note}", status=404)

    async def reply(self, number: int, comment_id: int, body: str) -> int:
        discussion = await self._discussion_of(number, comment_id)
        note = await self.project.add_note(number, discussion["id"], body)
        return from_note(note["id"])

    async def resolve_thread(self, thread_id: str) -> None:
        if self.iid is None:
            raise ValueError("resolving a discussion needs the merge request")
        await self.project.resolve_discussion(self.iid, thread_id, True)

    async def unresolve_thread(self, thread_id: str) -> None:
        if self.iid is None:
            raise ValueError("unresolving a discussion needs the merge request")
        await self.project.resolve_discussion(self.iid, thread_id, False)

    async def create_issue_comment(self, number: int, body: str) -> int:
        note = await self.project.create_note(number, self._links(body))
        return from_note(note["id"])

    async def edit_issue_comment(self, comment_id: int, body: str) -> None:
        if self.iid is None:
            raise ValueError("editing a note needs the merge request")
        await self.project.edit_note(self.iid, to_note(comment_id), self._links(body))

    def _links(self, body: str) -> str:
        """The summary's links to the file at the head, pointed at GitLab (the renderer
        writes GitHub's ``/blob/`` URLs; GitLab's are ``/-/blob/`` with ``#L3-5`` ranges)."""
        prefix = re.escape(f"https://github.com/{self.repo}/blob/")
        target = f"{self.web_url}/{project_path(self.repo)}/-/blob/"

        def one(match: re.Match) -> str:
            rest = re.sub(r"#L(\d+)-L(\d+)$", r"#L\1-\2", match.group(1))
            return target + rest

        return re.sub(prefix + r"([^)\s]*)", one, body)

    async def permission(self, user: str) -> str:
        user_id = await self.project.user_id(user)
        if user_id is None:
            return "none"
        return access_permission(await self.project.access_level(user_id))

    # -- the merge gate: a commit status -----------------------------------------------------

    async def create_check_run(self, head_sha: str, fields: dict) -> int | None:
        data = status_fields(fields)
        if data is None:
            return None
        status = await self._post_status(head_sha, data)
        return int(status["id"]) if status and status.get("id") is not None else None

    async def update_check_run(self, check_run_id: int, fields: dict) -> None:
        data = status_fields(fields)
        if data is None:
            return
        sha = self.project.client.status_shas.get(int(check_run_id)) or \
            await self._status_sha(int(check_run_id))
        if sha is None:
            raise NotFound(f"no commit of this merge request has status {check_run_id}",
                           status=404)
        await self._post_status(sha, data)

    async def _post_status(self, sha: str, data: dict) -> dict | None:
        mr = self._mr
        if mr is None and self.iid is not None:
            mr = self._mr = await self.project.merge_request(self.iid)
        if mr and mr.get("source_branch"):
            data = {**data, "ref": mr["source_branch"]}
        if self.iid is not None:
            data["target_url"] = (f"{self.web_url}/{project_path(self.repo)}"
                                  f"/-/merge_requests/{self.iid}")
        try:
            status = await self.project.set_status(sha, data)
        except Unprocessable as exc:
            if "transition" in str(exc).lower():  # already in that state: nothing to change
                return None
            raise
        if status and status.get("id") is not None:
            self.project.client.status_shas[int(status["id"])] = sha
        return status

    async def _status_sha(self, status_id: int) -> str | None:
        """The commit a status was posted on (after a restart): the MR's versions' heads."""
        if self.iid is None:
            return None
        for version in await self.project.versions(self.iid):
            sha = version.get("head_commit_sha")
            if sha and any(s.get("id") == status_id for s in await self.project.statuses(sha)):
                self.project.client.status_shas[status_id] = sha
                return sha
        return None


def _position(version: dict, entries: list[dict], comment: InlineComment) -> dict | None:
    """GitLab's ``position`` of an inline comment on one diff version, or None when the line
    is not in that version's diff."""
    side = "LEFT" if comment.side == "LEFT" else "RIGHT"
    key = "old_path" if side == "LEFT" else "new_path"
    entry = next((e for e in entries if e.get(key) == comment.path), None)
    if entry is None:
        return None
    end = locate(entry.get("diff") or "", comment.line, side)
    if end is None:
        return None
    old_path, new_path = entry.get("old_path") or comment.path, entry.get("new_path") or \
        comment.path
    position = {"position_type": "text", "base_sha": version["base_commit_sha"],
                "start_sha": version["start_commit_sha"],
                "head_sha": version["head_commit_sha"], "old_path": old_path,
                "new_path": new_path, "old_line": end.old_line, "new_line": end.new_line}
    if comment.start_line is not None and comment.start_line < comment.line:
        start = locate(entry.get("diff") or "", comment.start_line, side)
        if start is not None and start.hunk == end.hunk:
            position["line_range"] = {
                "start": {"line_code": line_code(new_path, start.old_line, start.new_line),
                          "type": start.kind, "old_line": start.old_line,
                          "new_line": start.new_line},
                "end": {"line_code": line_code(new_path, end.old_line, end.new_line),
                        "type": end.kind, "old_line": end.old_line, "new_line": end.new_line}}
        else:
            return None  # a range across hunks: the round retries on the last line alone
    return position
