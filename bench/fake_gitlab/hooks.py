"""GitLab webhook bodies built from the fake GitLab's state, in the shapes GitLab documents.

The fake sends no hooks itself: a test or the bench builds one here and posts it with
``headers`` (``X-Gitlab-Event``, ``X-Gitlab-Token``, ``X-Gitlab-Event-UUID`` and
``Idempotency-Key``), as GitLab would. Hooks are not the REST API's objects: a hook's user is
``{id, name, username, avatar_url, email}``, its merge request names its author by
``author_id`` and carries ``url``, ``source``, ``target`` and ``last_commit`` (no
``diff_refs``, ``sha`` or ``author``), a note's ``object_attributes`` hold ``note`` (not
``body``), ``author_id``, ``line_code``, ``commit_id``, ``url`` and, on a line,
``position`` and ``original_position``; times are ``2021-02-08 13:44:27 UTC`` (a note, a merge
request) or ISO with an offset (a commit's ``timestamp``). ``tests/test_gitlab_hooks.py`` holds
these shapes against examples written from GitLab's webhook documentation.
"""

from __future__ import annotations

import datetime
import json
import uuid
from typing import TYPE_CHECKING, Any

from .state import WEB, line_code

if TYPE_CHECKING:
    from . import FakeGitLab
    from .state import _MR, _Note, _Project

__all__ = ["encode", "headers", "hook_time", "merge_request", "note", "push"]


def hook_time(iso: str) -> str:
    """A REST time (``2026-12-06T03:40:00.000Z``) as hooks write it (``... UTC``)."""
    when = datetime.datetime.fromisoformat(iso)
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _commit_time(iso: str) -> str:
    """A commit's ``timestamp`` as hooks write it: ISO with the committer's offset."""
    when = datetime.datetime.fromisoformat(iso)
    return when.astimezone(datetime.timezone(datetime.timedelta(hours=8))).isoformat(
        timespec="seconds")


def _user(fake: FakeGitLab, username: str) -> dict[str, Any]:
    web = fake.web
    return {"id": fake.user_id(username), "name": username, "username": username,
            "avatar_url": f"{web}/uploads/-/system/user/avatar/{fake.user_id(username)}/a.png",
            "email": "[REDACTED]"}


def _project(fake: FakeGitLab, project: _Project) -> dict[str, Any]:
    namespace, _, name = project.path.rpartition("/")
    web = f"{fake.web}/{project.path}"
    return {"id": project.id, "name": name, "description": "", "web_url": web,
            "avatar_url": None, "git_ssh_url": f"git@gitlab.example:{project.path}.git",
            "git_http_url": f"{web}.git", "namespace": namespace.rsplit("/", 1)[-1],
            "visibility_level": 0, "path_with_namespace": project.path,
            "default_branch": project.default_branch, "ci_config_path": "",
            "homepage": web, "url": f"git@gitlab.example:{project.path}.git",
            "ssh_url": f"git@gitlab.example:{project.path}.git", "http_url": f"{web}.git"}


def _repository(fake: FakeGitLab, project: _Project) -> dict[str, Any]:
    web = f"{fake.web}/{project.path}"
    return {"name": project.path.rsplit("/", 1)[-1], "url": f"git@gitlab.example:"
            f"{project.path}.git", "description": "", "homepage": web}


def _last_commit(fake: FakeGitLab, project: _Project, sha: str) -> dict[str, Any]:
    web = fake.web
    commit = project.commits.get(sha)
    message = commit.message if commit else ""
    author = commit.author if commit else ""
    return {"id": sha, "message": message, "title": message.split("\n", 1)[0],
            "timestamp": _commit_time(commit.created_at) if commit else None,
            "url": f"{web}/{project.path}/-/commit/{sha}",
            "author": {"name": author, "email": f"{author}@example.com"}}


def _mr(fake: FakeGitLab, project: _Project, mr: _MR) -> dict[str, Any]:
    """A merge request as hooks carry it (``object_attributes``, a note's ``merge_request``)."""
    web = fake.web
    return {
        "id": mr.id, "iid": mr.iid, "target_branch": mr.target_branch,
        "source_branch": mr.source_branch, "source_project_id": project.id,
        "author_id": fake.user_id(mr.author), "assignee_ids": [], "assignee_id": None,
        "reviewer_ids": [], "title": mr.title, "created_at": hook_time(mr.created_at),
        "updated_at": hook_time(mr.updated_at), "last_edited_at": None,
        "last_edited_by_id": None, "milestone_id": None, "state_id": 1, "state": mr.state,
        "blocking_discussions_resolved": True, "work_in_progress": mr.draft,
        "draft": mr.draft, "first_contribution": False, "merge_status": "can_be_merged",
        "detailed_merge_status": "mergeable", "target_project_id": project.id,
        "description": mr.description, "prepared_at": hook_time(mr.created_at),
        "total_time_spent": 0, "time_change": 0, "human_total_time_spent": None,
        "human_time_change": None, "human_time_estimate": None,
        "url": f"{web}/{project.path}/-/merge_requests/{mr.iid}",
        "source": _project(fake, project), "target": _project(fake, project),
        "last_commit": _last_commit(fake, project, mr.head_sha), "labels": [],
        "head_pipeline_id": None, "merge_commit_sha": None, "merge_user_id": None,
    }


def merge_request(fake: FakeGitLab, project_id: int, iid: int, action: str,
                  oldrev: str | None = None, *, user: str | None = None) -> dict[str, Any]:
    """A Merge Request Hook; ``update`` after a push carries ``oldrev``."""
    project = fake.projects[project_id]
    mr = project.mrs[iid]
    attrs = {**_mr(fake, project, mr), "action": action}
    if oldrev:
        attrs["oldrev"] = oldrev
    return {"object_kind": "merge_request", "event_type": "merge_request",
            "user": _user(fake, user or mr.author), "project": _project(fake, project),
            "object_attributes": attrs, "labels": [], "changes": {}, "assignees": [],
            "reviewers": [], "repository": _repository(fake, project)}


def _note_attrs(fake: FakeGitLab, project: _Project, mr: _MR, discussion_id: str,
                found: _Note, action: str) -> dict[str, Any]:
    web = fake.web
    position = found.position if found.type == "DiffNote" else None
    code = None
    if position:
        code = line_code(position.get("new_path") or position.get("old_path") or "",
                         position.get("old_line"), position.get("new_line"))
    return {
        "id": found.id, "note": found.body, "noteable_type": "MergeRequest",
        "author_id": fake.user_id(found.author), "created_at": hook_time(found.created_at),
        "updated_at": hook_time(found.updated_at or found.created_at),
        "project_id": project.id, "attachment": None, "line_code": code,
        "commit_id": (found.original_position or position or {}).get("head_sha", ""),
        "noteable_id": mr.id, "system": found.system, "st_diff": None,
        "updated_by_id": None, "type": found.type, "position": position,
        "original_position": (found.original_position or position) if position else None,
        "resolved_at": hook_time(found.resolved_at) if found.resolved_at else None,
        "resolved_by_id": fake.user_id(found.resolved_by) if found.resolved_by else None,
        "resolved_by_push": None, "change_position": None, "discussion_id": discussion_id,
        "confidential": False, "internal": False, "action": action,
        "url": f"{web}/{project.path}/-/merge_requests/{mr.iid}#note_{found.id}",
    }


def note(fake: FakeGitLab, project_id: int, iid: int, note_id: int, action: str = "create"
         ) -> dict[str, Any]:
    """A Note Hook for note ``note_id`` of MR ``iid`` (a plain note, a thread's, a line's)."""
    project = fake.projects[project_id]
    mr = project.mrs[iid]
    discussion, found = next((d, n) for d in mr.discussions for n in d.notes
                             if n.id == note_id)
    return {"object_kind": "note", "event_type": "note", "user": _user(fake, found.author),
            "project_id": project.id, "project": _project(fake, project),
            "object_attributes": _note_attrs(fake, project, mr, discussion.id, found, action),
            "repository": _repository(fake, project), "merge_request": _mr(fake, project, mr)}


def push(fake: FakeGitLab, project_id: int, branch: str, before: str, after: str,
         user: str = "author") -> dict[str, Any]:
    """A Push Hook of ``branch`` from ``before`` to ``after``: its new commits, oldest first,
    at most 20 listed (``total_commits_count`` counts them all)."""
    project = fake.projects[project_id]
    web = fake.web
    chain = fake.ancestors(project, after)
    new = chain[: chain.index(before)] if before in chain else chain[:1]
    commits = [{**_last_commit(fake, project, sha), "added": [], "modified": [], "removed": []}
               for sha in reversed(new)][-20:]
    return {"object_kind": "push", "event_name": "push", "before": before, "after": after,
            "ref": f"refs/heads/{branch}", "ref_protected": False, "checkout_sha": after,
            "message": None, "user_id": fake.user_id(user), "user_name": user,
            "user_username": user, "user_email": "", "user_avatar": None,
            "project_id": project.id, "project": _project(fake, project), "commits": commits,
            "total_commits_count": len(new), "push_options": {},
            "repository": {**_repository(fake, project),
                           "git_http_url": f"{web}/{project.path}.git",
                           "git_ssh_url": f"git@gitlab.example:{project.path}.git",
                           "visibility_level": 0}}


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def headers(event: str, token: str | None, delivery: str | None = None) -> dict[str, str]:
    """GitLab's hook headers; ``delivery`` is the event's UUID (fresh when None)."""
    delivery = delivery or str(uuid.uuid4())
    out = {"Content-Type": "application/json", "X-Gitlab-Event": event,
           "X-Gitlab-Event-UUID": delivery, "Idempotency-Key": delivery,
           "X-Gitlab-Webhook-UUID": str(uuid.uuid5(uuid.NAMESPACE_URL, WEB)),
           "X-Gitlab-Instance": WEB, "User-Agent": "GitLab/17.0.0"}
    if token is not None:
        out["X-Gitlab-Token"] = token
    return out
