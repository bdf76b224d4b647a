"""GitLab's webhooks as GitLab documents them, against the bot's router and the fake's hooks.

The examples below are written for these tests from GitLab's webhook events documentation
(Merge Request events, Comment on a merge request and on a code line, Push events): the fields
and their kinds as documented, values of our own. The bot routes each as it should, and the fake
GitLab's hooks (``bench.fake_gitlab.hooks``, what every GitLab server test and replay sends)
carry exactly the documented fields at every level the bot could read: a field only the fake
sends, or one it lacks, fails here before code comes to depend on it.
"""

from __future__ import annotations

import copy

import pytest

from bench.fake_gitlab import FakeGitLab, hooks
from bot.gitlab.webhooks import route

SHA_A, SHA_B, SHA_C = "a" * 40, "b" * 40, "c" * 40
POSITION = {"base_sha": SHA_A, "start_sha": SHA_A, "head_sha": SHA_B,
            "old_path": "app/core.py", "new_path": "app/core.py", "position_type": "text",
            "old_line": None, "new_line": 4, "line_range": None}


def _user(uid: int, name: str) -> dict:
    return {"id": uid, "name": name.title(), "username": name,
            "avatar_url": "https://secure.gravatar.com/avatar/x?s=80&d=identicon",
            "email": "[REDACTED]"}


def _project() -> dict:
    return {"id": 15, "name": "widgets", "description": "", "web_url":
            "https://gitlab.example/octo/widgets", "avatar_url": None,
            "git_ssh_url": "git@gitlab.example:octo/widgets.git",
            "git_http_url": "https://gitlab.example/octo/widgets.git", "namespace": "octo",
            "visibility_level": 0, "path_with_namespace": "octo/widgets",
            "default_branch": "main", "ci_config_path": "",
            "homepage": "https://gitlab.example/octo/widgets",
            "url": "git@gitlab.example:octo/widgets.git",
            "ssh_url": "git@gitlab.example:octo/widgets.git",
            "http_url": "https://gitlab.example/octo/widgets.git"}


def _repository() -> dict:
    return {"name": "widgets", "url": "git@gitlab.example:octo/widgets.git",
            "description": "", "homepage": "https://gitlab.example/octo/widgets"}


def _commit(sha: str) -> dict:
    return {"id": sha, "message": "Scale values\n", "title": "Scale values",
            "timestamp": "2026-12-01T21:04:05+08:00",
            "url": f"https://gitlab.example/octo/widgets/-/commit/{sha}",
            "author": {"name": "Sam", "email": "sam@example.com"}}


def _merge_request() -> dict:
    return {"id": 301, "iid": 7, "target_branch": "main", "source_branch": "sam/scale",
            "source_project_id": 15, "author_id": 3, "assignee_ids": [], "assignee_id": None,
            "reviewer_ids": [], "title": "Scale values",
            "created_at": "2026-12-01 13:04:05 UTC", "updated_at": "2026-12-01 13:09:11 UTC",
            "last_edited_at": None, "last_edited_by_id": None, "milestone_id": None,
            "state_id": 1, "state": "opened", "blocking_discussions_resolved": True,
            "work_in_progress": False, "draft": False, "first_contribution": False,
            "merge_status": "can_be_merged", "detailed_merge_status": "mergeable",
            "target_project_id": 15, "description": "Adds scale().",
            "prepared_at": "2026-12-01 13:04:06 UTC", "total_time_spent": 0,
            "time_change": 0, "human_total_time_spent": None, "human_time_change": None,
            "human_time_estimate": None,
            "url": "https://gitlab.example/octo/widgets/-/merge_requests/7",
            "source": _project(), "target": _project(), "last_commit": _commit(SHA_B),
            "labels": [], "head_pipeline_id": None, "merge_commit_sha": None,
            "merge_user_id": None}


def merge_request_hook(action: str, oldrev: str | None = None) -> dict:
    attrs = {**_merge_request(), "action": action}
    if oldrev:
        attrs["oldrev"] = oldrev
    return {"object_kind": "merge_request", "event_type": "merge_request",
            "user": _user(3, "sam"), "project": _project(), "object_attributes": attrs,
            "labels": [], "changes": {}, "assignees": [], "reviewers": [],
            "repository": _repository()}


def note_hook(*, on_line: bool, system: bool = False, noteable: str = "MergeRequest") -> dict:
    attrs = {"id": 1244, "note": "Please name this constant.", "noteable_type": noteable,
             "author_id": 4, "created_at": "2026-12-01 13:20:00 UTC",
             "updated_at": "2026-12-01 13:20:00 UTC", "project_id": 15, "attachment": None,
             "line_code": None, "commit_id": "", "noteable_id": 301, "system": system,
             "st_diff": None, "updated_by_id": None, "type": None, "position": None,
             "original_position": None, "resolved_at": None, "resolved_by_id": None,
             "resolved_by_push": None, "change_position": None,
             "discussion_id": "6a9c1750b37d513a43987b574953fceb50b03ce7",
             "confidential": False, "internal": False, "action": "create",
             "url": "https://gitlab.example/octo/widgets/-/merge_requests/7#note_1244"}
    if on_line:
        attrs.update(type="DiffNote", position=copy.deepcopy(POSITION),
                     original_position=copy.deepcopy(POSITION), commit_id=SHA_B,
                     line_code="1f2e3d4c5b6a79880796a5b4c3d2e1f0a9b8c7d6_0_4")
    hook = {"object_kind": "note", "event_type": "note", "user": _user(4, "rita"),
            "project_id": 15, "project": _project(), "object_attributes": attrs,
            "repository": _repository()}
    if noteable == "MergeRequest":
        hook["merge_request"] = _merge_request()
    return hook


def push_hook(before: str, after: str) -> dict:
    return {"object_kind": "push", "event_name": "push", "before": before, "after": after,
            "ref": "refs/heads/sam/scale", "ref_protected": False, "checkout_sha": after,
            "message": None, "user_id": 3, "user_name": "Sam", "user_username": "sam",
            "user_email": "", "user_avatar": None, "project_id": 15, "project": _project(),
            "commits": [{**_commit(after), "added": [], "modified": ["app/core.py"],
                         "removed": []}],
            "total_commits_count": 1, "push_options": {},
            "repository": {**_repository(),
                           "git_http_url": "https://gitlab.example/octo/widgets.git",
                           "git_ssh_url": "git@gitlab.example:octo/widgets.git",
                           "visibility_level": 0}}


# -- the bot's router on documented hooks ------------------------------------------------------

@pytest.mark.parametrize(("hook", "kind", "detail"), [
    (merge_request_hook("open"), "round", {"action": "opened"}),
    (merge_request_hook("reopen"), "round", {"action": "reopened"}),
    (merge_request_hook("update", oldrev=SHA_A), "round", {"action": "synchronize"}),
    (merge_request_hook("update"), "gitlab_sync", {}),  # a title edit, a thread resolved
    (merge_request_hook("merge"), "closed", {"merged": True}),
    (merge_request_hook("close"), "closed", {"merged": False}),
])
def test_merge_request_hooks_route_as_documented(hook, kind, detail):
    found = route("Merge Request Hook", hook, "project_15_bot")
    assert (found.kind, found.repo, found.number, found.installation_id) == (
        kind, "gitlab:octo/widgets", 7, 15)
    assert found.payload == detail
    if kind == "round":
        assert found.head_sha == SHA_B  # object_attributes.last_commit.id


@pytest.mark.parametrize("on_line", [False, True])
def test_notes_on_a_merge_request_route_as_documented(on_line):
    found = route("Note Hook", note_hook(on_line=on_line), "project_15_bot")
    assert (found.kind, found.repo, found.number) == ("gitlab_note", "gitlab:octo/widgets", 7)
    assert found.payload["user"] == {"username": "rita"}
    note = found.payload["note"]
    assert note["id"] == 1244 and note["note"] == "Please name this constant."
    assert note["type"] == ("DiffNote" if on_line else None)
    assert (note["position"] or {}).get("new_line") == (4 if on_line else None)


def test_notes_the_bot_does_not_take():
    assert route("Note Hook", note_hook(on_line=False, system=True), None).kind is None
    assert route("Note Hook", note_hook(on_line=False, noteable="Issue"), None).kind is None
    own = note_hook(on_line=False)
    own["user"] = _user(9, "project_15_bot")
    assert route("Note Hook", own, "project_15_bot").kind is None


def test_push_hooks_route_as_documented():
    found = route("Push Hook", push_hook(SHA_A, SHA_C), None)
    assert (found.kind, found.repo, found.head_sha) == ("gitlab_push", "gitlab:octo/widgets",
                                                        SHA_C)
    assert found.payload == {"branch": "sam/scale", "after": SHA_C}
    assert route("Push Hook", push_hook(SHA_A, "0" * 40), None).kind is None  # branch deleted


# -- the fake's hooks carry exactly the documented fields --------------------------------------

def keys(value: object, path: str = "") -> set[str]:
    """Every key path in a hook (lists by their first item), to compare shapes, not values."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            out.add(f"{path}.{key}")
            out |= keys(item, f"{path}.{key}")
    elif isinstance(value, list) and value:
        out |= keys(value[0], f"{path}[]")
    return out


@pytest.fixture
async def fake():
    fake = FakeGitLab()
    project = fake.add_project("octo/widgets")
    fake.add_mr(project, 7, "Scale values", "Adds scale().", "sam", "main", SHA_A,
                {"app/core.py": "def add(a, b):\n    return a + b\n"})
    fake.push(project, 7, SHA_B, {"app/core.py": "def add(a, b):\n    return a + b\n\n\n"
                                                 "LIMIT = 3\n"}, ["Scale values"])
    fake.push(project, 7, SHA_C, {"app/core.py": "def add(a, b):\n    return a + b\n\n\n"
                                                 "LIMIT = 4\n"}, ["Raise the limit"])
    return fake, project


def test_the_fakes_merge_request_hook_has_the_documented_shape(fake):
    fake, project = fake
    made = hooks.merge_request(fake, project, 7, "update", oldrev=SHA_B)
    assert keys(made) == keys(merge_request_hook("update", oldrev=SHA_A))
    assert made["object_attributes"]["created_at"].endswith(" UTC")
    assert made["object_attributes"]["last_commit"]["timestamp"].endswith("+08:00")
    for rest_only in ("diff_refs", "sha", "author", "web_url", "references"):
        assert rest_only not in made["object_attributes"]


@pytest.mark.parametrize("on_line", [False, True])
def test_the_fakes_note_hooks_have_the_documented_shape(fake, on_line):
    fake, project = fake
    mr = fake.projects[project].mrs[7]
    if on_line:
        _, made_note = fake.add_diff_note(project, 7, "rita", "app/core.py", 5,
                                          "Please name this constant.")
    else:
        _, made_note = fake.add_note(mr, "rita", "Please name this constant.")
    made = hooks.note(fake, project, 7, made_note.id)
    documented = note_hook(on_line=on_line)
    # a position's optional line_range aside, the fields are the documented ones
    assert keys(made) - {".object_attributes.position.line_range",
                         ".object_attributes.original_position.line_range"} == \
        keys(documented) - {".object_attributes.position.line_range",
                            ".object_attributes.original_position.line_range"}
    attrs = made["object_attributes"]
    for rest_only in ("author", "body", "resolvable", "resolved_by", "noteable_iid"):
        assert rest_only not in attrs and rest_only not in made
    assert attrs["created_at"].endswith(" UTC") and attrs["author_id"] == fake.user_id("rita")
    assert attrs["url"].endswith(f"#note_{made_note.id}")
    if on_line:
        assert attrs["line_code"].endswith("_0_5") and attrs["commit_id"] == SHA_C
        assert attrs["original_position"]["new_line"] == 5


def test_the_fakes_push_hook_has_the_documented_shape(fake):
    fake, project = fake
    made = hooks.push(fake, project, "sam/mr-7", SHA_B, SHA_C, user="sam")
    assert keys(made) == keys(push_hook(SHA_B, SHA_C))
    assert [c["id"] for c in made["commits"]] == [SHA_C] and made["total_commits_count"] == 1
    assert made["commits"][0]["message"] == "Raise the limit"
