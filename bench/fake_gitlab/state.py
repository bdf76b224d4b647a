"""The fake GitLab's state: projects, commits as file trees, merge requests with their diff
versions and discussions, members, commit statuses; set up and acted on by plain methods.

What the real API does and the bot must cope with is kept: every push adds an MR diff version
(``base``/``start``/``head`` shas); a diff note's ``position`` must name the shas of one of
them and a line that version's diff holds (``new_line`` for an added line, ``old_line`` for a
removed one, both for an unchanged one), else 400; after a push, notes whose line survived
unchanged move to the new version (``original_position`` kept) and the others stay on their
old version, outdated; a commit status moves through GitLab's states (the same state twice is
a 400; a finished one is followed by a new status).
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Any

from ..tasks.diffs import FileDiff, apply_files, diff_trees, map_line

__all__ = ["LEVELS", "WEB", "ApiError", "FakeGitLabState", "line_code", "with_line_codes"]

WEB = "https://gitlab.example"  # the instance's web address in the fake's links

LEVELS = {"guest": 10, "reporter": 20, "developer": 30, "maintainer": 40, "owner": 50}
LINE_CODE_ERROR = ("400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a "
                   "valid line code\"]}")
FINISHED = {"success", "failed", "canceled", "skipped"}
TRANSITIONS = {  # GitLab's CommitStatus events: which states each may follow
    "pending": {"created", "running", "success", "failed", "canceled", "skipped"},
    "running": {"created", "pending"},
    "success": {"created", "pending", "running"},
    "failed": {"created", "pending", "running"},
    "canceled": {"created", "pending", "running"},
    "skipped": {"created", "pending"},
}


class ApiError(Exception):
    def __init__(self, status: int, message: Any, headers: dict[str, str] | None = None):
        super().__init__(str(message))
        self.status, self.message, self.headers = status, message, headers or {}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


@dataclass
class _Note:
    id: int
    author: str
    body: str
    type: str | None  # DiffNote, DiscussionNote or None
    created_at: str
    position: dict | None = None
    original_position: dict | None = None
    resolvable: bool = False
    resolved: bool = False
    resolved_by: str | None = None
    resolved_at: str | None = None
    system: bool = False
    updated_at: str = ""


@dataclass
class _Discussion:
    id: str
    notes: list[_Note]
    individual_note: bool = False
    outdated: bool = False


@dataclass
class _Version:
    id: int
    head: str
    base: str
    start: str
    created_at: str


@dataclass
class _MR:
    iid: int
    id: int
    title: str
    description: str
    author: str
    source_branch: str
    target_branch: str
    base_sha: str  # the merge base
    head_sha: str
    draft: bool = False
    state: str = "opened"
    created_at: str = field(default_factory=lambda: _now())
    updated_at: str = field(default_factory=lambda: _now())
    versions: list[_Version] = field(default_factory=list)
    discussions: list[_Discussion] = field(default_factory=list)


@dataclass
class _Commit:
    message: str
    author: str
    created_at: str


@dataclass
class _Project:
    id: int
    path: str
    default_branch: str
    trees: dict[str, dict[str, str]] = field(default_factory=dict)
    parents: dict[str, list[str]] = field(default_factory=dict)
    commits: dict[str, _Commit] = field(default_factory=dict)  # sha -> message, author, date
    branches: dict[str, str] = field(default_factory=dict)
    mrs: dict[int, _MR] = field(default_factory=dict)
    members: dict[str, int] = field(default_factory=dict)  # username -> access level
    statuses: dict[str, list[dict]] = field(default_factory=dict)  # sha -> oldest first


class FakeGitLabState:
    """In-memory GitLab records. ``bot_username`` is the access token's own user."""

    def __init__(self, bot_username: str = "project_1_bot_roundwise"):
        self.bot_username = bot_username
        self.projects: dict[int, _Project] = {}
        self.users: dict[str, int] = {}
        self._ids = itertools.count(1000)
        self._notes = itertools.count(5001)
        self._diff_cache: dict[tuple, list[FileDiff]] = {}
        self.user_id(bot_username)

    # -- setup -------------------------------------------------------------------------------

    def user_id(self, username: str) -> int:
        return self.users.setdefault(username, len(self.users) + 1)

    def add_project(self, path: str, default_branch: str = "main",
                    files: dict[str, str] | None = None) -> int:
        """A project whose default branch holds ``files`` (none: no commit yet)."""
        project_id = next(self._ids)
        project = self.projects[project_id] = _Project(project_id, path, default_branch)
        project.members[self.bot_username] = LEVELS["developer"]
        if files:
            sha = hashlib.sha1(f"{path}\0initial".encode()).hexdigest()
            self._commit(project, sha, dict(files), [])
            project.branches[default_branch] = sha
        return project_id

    def project(self, ref: int | str) -> _Project:
        if isinstance(ref, int) or str(ref).isdigit():
            found = self.projects.get(int(ref))
        else:
            found = next((p for p in self.projects.values() if p.path == ref), None)
        if found is None:
            raise ApiError(404, "404 Project Not Found")
        return found

    def set_access(self, project_id: int, username: str, role: str | None) -> None:
        self.user_id(username)
        members = self.projects[project_id].members
        if role is None:
            members.pop(username, None)
        else:
            members[username] = LEVELS[role]

    def _commit(self, project: _Project, sha: str, tree: dict[str, str], parents: list[str],
                message: str = "Update", author: str = "") -> None:
        if sha in project.trees and project.trees[sha] != tree:
            raise ValueError(f"sha {sha} already names a different tree")
        project.trees[sha] = tree
        project.parents.setdefault(sha, parents)
        project.commits.setdefault(sha, _Commit(message, author or self.bot_username, _now()))

    def add_mr(self, project_id: int, iid: int, title: str, description: str, author: str,
               target_branch: str, base_sha: str, base_files: dict[str, str]) -> _MR:
        """Open MR ``iid`` from ``<author>/mr-<iid>`` onto ``target_branch`` at ``base_sha``;
        the head equals the base until ``push``."""
        project = self.projects[project_id]
        self.user_id(author)
        project.members.setdefault(author, LEVELS["developer"])
        tip = project.branches.get(target_branch)
        tree = {**(project.trees[tip] if tip else {}), **base_files}
        self._commit(project, base_sha, tree, [tip] if tip and tip != base_sha else [])
        project.branches[target_branch] = base_sha
        source = f"{author}/mr-{iid}"
        project.branches[source] = base_sha
        mr = _MR(iid, next(self._ids), title, description, author, source, target_branch,
                 base_sha, base_sha)
        project.mrs[iid] = mr
        return mr

    def push(self, project_id: int, iid: int, head_sha: str, files: dict[str, str | None],
             messages: list[str] | None = None) -> None:
        """The MR's head moves to ``head_sha`` (``files``: every path that differs from the
        base, None for deleted); a new diff version is made and notes are carried over.
        ``messages`` are the pushed commits' messages, oldest first: the last is ``head_sha``'s,
        the earlier ones get made-up shas and the same tree."""
        project = self.projects[project_id]
        mr = project.mrs[iid]
        if head_sha in project.trees:
            raise ValueError(f"{head_sha} was already pushed")
        tree = apply_files(project.trees[mr.base_sha], files)
        old_head = parent = mr.head_sha
        messages = messages or [f"Update {len(files)} file(s)"]
        for index, message in enumerate(messages[:-1]):
            sha = hashlib.sha1(f"{head_sha}\0{index}".encode()).hexdigest()
            self._commit(project, sha, tree, [parent], message, mr.author)
            parent = sha
        self._commit(project, head_sha, tree, [parent], messages[-1], mr.author)
        mr.head_sha = head_sha
        project.branches[mr.source_branch] = head_sha
        start = project.branches[mr.target_branch]
        mr.versions.append(_Version(next(self._ids), head_sha, mr.base_sha, start, _now()))
        mr.updated_at = _now()
        self._carry_positions(project, mr, old_head)

    def _carry_positions(self, project: _Project, mr: _MR, old_head: str) -> None:
        """GitLab's position tracing: a note whose line stands unchanged in the new version's
        diff moves there; any other stays where it was, outdated."""
        version = mr.versions[-1]
        diffs = {d.path: d for d in self.diff(project, version.base, version.head)}
        for discussion in mr.discussions:
            root = discussion.notes[0]
            pos = root.position
            if root.type != "DiffNote" or not pos or pos.get("head_sha") != old_head:
                continue
            old_text = project.trees[old_head].get(pos.get("new_path") or "")
            new_text = project.trees[version.head].get(pos.get("new_path") or "")
            line = pos.get("new_line")
            moved = map_line(old_text, new_text, line) if line else None
            spot = diffs.get(pos.get("new_path") or "")
            if moved is None or spot is None or moved not in spot.side_lines("RIGHT"):
                discussion.outdated = True
                continue
            new_pos = {**pos, "base_sha": version.base, "start_sha": version.start,
                       "head_sha": version.head, "new_line": moved,
                       "old_line": _old_of(spot, moved)}
            new_pos.pop("line_range", None)
            for note in discussion.notes:
                if note.type == "DiffNote":
                    note.original_position = note.original_position or note.position
                    note.position = new_pos

    # -- reading -----------------------------------------------------------------------------

    def diff(self, project: _Project, old: str, new: str) -> list[FileDiff]:
        key = (project.id, old, new)
        if key not in self._diff_cache:
            self._diff_cache[key] = diff_trees(project.trees[old], project.trees[new])
        return self._diff_cache[key]

    def ancestors(self, project: _Project, sha: str) -> list[str]:
        chain: list[str] = []
        while sha is not None and sha not in chain:
            chain.append(sha)
            parents = project.parents.get(sha) or []
            sha = parents[0] if parents else None
        return chain

    def merge_base(self, project: _Project, a: str, b: str) -> str | None:
        line_a = self.ancestors(project, a)
        return next((s for s in self.ancestors(project, b) if s in line_a), None)

    def resolve_ref(self, project: _Project, ref: str) -> str | None:
        if ref in project.branches:
            return project.branches[ref]
        return ref if ref in project.trees else None

    def mr(self, project: _Project, iid: int) -> _MR:
        if iid not in project.mrs:
            raise ApiError(404, "404 Not found")
        return project.mrs[iid]

    def discussion(self, mr: _MR, discussion_id: str) -> _Discussion:
        found = next((d for d in mr.discussions if d.id == discussion_id), None)
        if found is None:
            raise ApiError(404, "404 Discussion Not Found")
        return found

    # -- writing, as a person or as the bot ----------------------------------------------------

    def _discussion_id(self, *seed: object) -> str:
        return hashlib.sha1(repr(seed).encode()).hexdigest()

    def add_discussion(self, project: _Project, mr: _MR, author: str, body: str,
                       position: dict | None = None) -> _Discussion:
        note_type = "DiscussionNote"  # a thread, even on no line (a plain note's type is null)
        if position is not None:
            self.check_position(project, mr, position)
            position = with_line_codes(position)
            note_type = "DiffNote"
        elif not body.strip():
            raise ApiError(400, {"note": ["can't be blank"]})
        self.user_id(author)
        note = _Note(next(self._notes), author, body, note_type, _now(),
                     position=dict(position) if position else None, resolvable=True)
        discussion = _Discussion(self._discussion_id(mr.id, note.id), [note])
        mr.discussions.append(discussion)
        return discussion

    def add_note(self, mr: _MR, author: str, body: str, discussion_id: str | None = None
                 ) -> tuple[_Discussion, _Note]:
        """A note in a discussion (a reply), or a plain MR note in a discussion of its own."""
        if not body.strip():
            raise ApiError(400, {"note": ["can't be blank"]})
        self.user_id(author)
        if discussion_id is None:
            note = _Note(next(self._notes), author, body, None, _now())
            discussion = _Discussion(self._discussion_id(mr.id, note.id), [note],
                                     individual_note=True)
            mr.discussions.append(discussion)
            return discussion, note
        discussion = self.discussion(mr, discussion_id)
        root = discussion.notes[0]
        note = _Note(next(self._notes), author, body,
                     "DiffNote" if root.type == "DiffNote" else "DiscussionNote", _now(),
                     position=root.position, original_position=root.original_position,
                     resolvable=root.resolvable)
        if discussion.individual_note:
            discussion.individual_note = False
        discussion.notes.append(note)
        return discussion, note

    def add_diff_note(self, project_id: int, iid: int, user: str, path: str, line: int,
                      body: str, side: str = "RIGHT", start_line: int | None = None,
                      in_reply_to: int | None = None) -> tuple[_Discussion, _Note]:
        """A person comments on a line of the MR's latest version as the web UI would (or
        replies in the discussion of note ``in_reply_to``). ValueError when the line is not
        in that version's diff (or a range leaves its hunk), KeyError for an unknown note."""
        project = self.projects[project_id]
        mr = project.mrs[iid]
        if in_reply_to is not None:
            found = next((d for d in mr.discussions if any(n.id == in_reply_to
                                                           for n in d.notes)), None)
            if found is None or found.notes[0].type != "DiffNote":
                raise KeyError(f"no diff note {in_reply_to} on !{iid}")
            return self.add_note(mr, user, body, found.id)
        version = mr.versions[-1]
        spot = next((d for d in self.diff(project, version.base, version.head)
                     if d.path == path), None)
        if spot is None:
            raise ValueError("Path could not be resolved")
        lines = spot.side_lines(side)
        if line not in lines:
            raise ValueError("Line could not be resolved")

        def at(number: int) -> dict:
            new = number if side == "RIGHT" else _new_of(spot, number)
            old = _old_of(spot, number) if side == "RIGHT" else number
            return {"old_line": old, "new_line": new}

        position = {"position_type": "text", "base_sha": version.base,
                    "start_sha": version.start, "head_sha": version.head, "old_path": path,
                    "new_path": path, **at(line)}
        if start_line is not None:
            if start_line >= line or start_line not in lines or lines[start_line] != lines[line]:
                raise ValueError("start line must be in the same hunk, before the line")
            position["line_range"] = {"start": {"type": "new" if side == "RIGHT" else "old",
                                                **at(start_line)},
                                      "end": {"type": "new" if side == "RIGHT" else "old",
                                              **at(line)}}
        discussion = self.add_discussion(project, mr, user, body, position)
        return discussion, discussion.notes[0]

    def resolve(self, mr: _MR, discussion_id: str, resolved: bool, by: str) -> _Discussion:
        discussion = self.discussion(mr, discussion_id)
        if not any(n.resolvable for n in discussion.notes):
            raise ApiError(400, "400 Bad request - discussion is not resolvable")
        for note in discussion.notes:
            if note.resolvable:
                note.resolved = resolved
                note.resolved_by = by if resolved else None
                note.resolved_at = _now() if resolved else None
        return discussion

    def check_position(self, project: _Project, mr: _MR, position: dict) -> None:
        """400 unless ``position`` names one of the MR's diff versions and lines its diff
        holds, the way GitLab wants them."""
        if position.get("position_type", "text") != "text":
            raise ApiError(400, "400 Bad request - position_type must be text")
        shas = (position.get("base_sha"), position.get("start_sha"), position.get("head_sha"))
        version = next((v for v in mr.versions if (v.base, v.start, v.head) == shas), None)
        if version is None:
            raise ApiError(400, "400 Bad request - Note {:position=>[\"is incomplete\"], "
                                ":base=>[\"position does not match a diff version\"]}")
        diffs = self.diff(project, version.base, version.head)
        path = position.get("new_path") or position.get("old_path")
        spot = next((d for d in diffs if d.path == path), None)
        if spot is None or position.get("old_path", path) != position.get("new_path", path):
            raise ApiError(400, LINE_CODE_ERROR)
        ends = [(position.get("old_line"), position.get("new_line"))]
        line_range = position.get("line_range")
        if line_range:
            start = line_range.get("start") or {}
            ends.append((start.get("old_line"), start.get("new_line")))
        for old_line, new_line in ends:
            if not _valid_line(spot, old_line, new_line):
                raise ApiError(400, LINE_CODE_ERROR)

    def set_status(self, project: _Project, sha: str, name: str, state: str, by: str,
                   **fields: Any) -> dict:
        if sha not in project.trees:
            raise ApiError(404, "404 Commit Not Found")
        if state not in TRANSITIONS:
            raise ApiError(400, "400 Bad request - state does not have a valid value")
        ref = fields.get("ref")
        history = project.statuses.setdefault(sha, [])
        latest = next((s for s in reversed(history) if s["name"] == name
                       and (ref is None or s["ref"] == ref)), None)
        if latest is not None and latest["status"] not in FINISHED:
            if latest["status"] not in TRANSITIONS[state]:
                event = {"running": "run", "success": "succeed", "failed": "drop",
                         "canceled": "cancel", "pending": "enqueue", "skipped": "skip"}[state]
                raise ApiError(400, f"Cannot transition status via :{event} from "
                                    f":{latest['status']}")
            latest.update(status=state, description=fields.get("description"),
                          target_url=fields.get("target_url"), finished_at=_now()
                          if state in FINISHED else None)
            return latest
        status = {"id": next(self._ids), "sha": sha, "ref": ref, "status": state, "name": name,
                  "description": fields.get("description"),
                  "target_url": fields.get("target_url"), "created_at": _now(),
                  "started_at": _now() if state == "running" else None,
                  "finished_at": _now() if state in FINISHED else None, "allow_failure": False,
                  "author": {"username": by, "id": self.user_id(by)}}
        history.append(status)
        return status


def line_code(path: str, old_line: object, new_line: object) -> str:
    """GitLab's ``line_code``: the path's sha1, then the old and new line numbers (0: none)."""
    return f"{hashlib.sha1(path.encode()).hexdigest()}_{old_line or 0}_{new_line or 0}"


def with_line_codes(position: dict) -> dict:
    """A position as GitLab stores it: each end of a ``line_range`` carries its ``line_code``."""
    out = dict(position)
    line_range = out.get("line_range")
    if isinstance(line_range, dict):
        path = out.get("new_path") or out.get("old_path") or ""
        out["line_range"] = {end: {**(line_range.get(end) or {}), "line_code": line_code(
            path, (line_range.get(end) or {}).get("old_line"),
            (line_range.get(end) or {}).get("new_line"))} for end in ("start", "end")}
    return out


def _old_of(spot: FileDiff, new_line: int) -> int | None:
    """The old line of an unchanged new line in a file's diff (None for an added line)."""
    for hunk in spot.hunks:
        for tag, old_no, new_no, _ in hunk.numbered():
            if new_no == new_line and tag == " ":
                return old_no
    return None


def _new_of(spot: FileDiff, old_line: int) -> int | None:
    """The new line of an unchanged old line (None for a removed line)."""
    for hunk in spot.hunks:
        for tag, old_no, new_no, _ in hunk.numbered():
            if old_no == old_line and tag == " ":
                return new_no
    return None


def _valid_line(spot: FileDiff, old_line: object, new_line: object) -> bool:
    for hunk in spot.hunks:
        for tag, old_no, new_no, _ in hunk.numbered():
            if tag == "+" and new_line == new_no and old_line is None:
                return True
            if tag == "-" and old_line == old_no and new_line is None:
                return True
            if tag == " " and old_line == old_no and new_line == new_no:
                return True
    return False
