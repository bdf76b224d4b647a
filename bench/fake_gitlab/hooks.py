"""GitLab webhook bodies built from the fake GitLab's state, shaped like GitLab's own.

The fake sends no hooks itself: a test or the bench builds one here and posts it with
``headers`` (``X-Gitlab-Event``, ``X-Gitlab-Token``, ``X-Gitlab-Event-UUID`` and
``Idempotency-Key``), as GitLab would.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import FakeGitLab

__all__ = ["encode", "headers", "merge_request", "note", "push"]


def _project(fake: FakeGitLab, project_id: int) -> dict[str, Any]:
    project = fake.projects[project_id]
    return {"id": project.id, "name": project.path.rsplit("/", 1)[-1],
            "path_with_namespace": project.path, "default_branch": project.default_branch,
            "web_url": f"https://gitlab.example/{project.path}"}


def merge_request(fake: FakeGitLab, project_id: int, iid: int, action: str,
                  oldrev: str | None = None, *, user: str | None = None) -> dict[str, Any]:
    """A Merge Request Hook; ``update`` after a push carries ``oldrev``."""
    project = fake.projects[project_id]
    mr = project.mrs[iid]
    attrs = {**fake._mr_json(project, mr), "action": action,
             "last_commit": {"id": mr.head_sha}, "state": mr.state}
    if oldrev:
        attrs["oldrev"] = oldrev
    return {"object_kind": "merge_request", "event_type": "merge_request",
            "user": fake._user(user or mr.author), "project": _project(fake, project_id),
            "object_attributes": attrs}


def note(fake: FakeGitLab, project_id: int, iid: int, note_id: int, action: str = "create"
         ) -> dict[str, Any]:
    """A Note Hook for note ``note_id`` of MR ``iid``."""
    project = fake.projects[project_id]
    mr = project.mrs[iid]
    discussion, found = next((d, n) for d in mr.discussions for n in d.notes
                             if n.id == note_id)
    attrs = {**fake._note_json(mr, found), "note": found.body, "discussion_id": discussion.id,
             "noteable_type": "MergeRequest", "project_id": project.id, "action": action}
    return {"object_kind": "note", "event_type": "note", "user": fake._user(found.author),
            "project": _project(fake, project_id), "object_attributes": attrs,
            "merge_request": {"id": mr.id, "iid": mr.iid, "title": mr.title,
                              "author_id": fake.user_id(mr.author), "state": mr.state}}


def push(fake: FakeGitLab, project_id: int, branch: str, before: str, after: str,
         user: str = "author") -> dict[str, Any]:
    return {"object_kind": "push", "event_name": "push", "before": before, "after": after,
            "ref": f"refs/heads/{branch}", "user_username": user,
            "project": _project(fake, project_id), "commits": [], "total_commits_count": 0}


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def headers(event: str, token: str | None, delivery: str | None = None) -> dict[str, str]:
    """GitLab's hook headers; ``delivery`` is the event's UUID (fresh when None)."""
    delivery = delivery or str(uuid.uuid4())
    out = {"Content-Type": "application/json", "X-Gitlab-Event": event,
           "X-Gitlab-Event-UUID": delivery, "Idempotency-Key": delivery,
           "X-Gitlab-Instance": "https://gitlab.example", "User-Agent": "GitLab/17.0.0"}
    if token is not None:
        out["X-Gitlab-Token"] = token
    return out
