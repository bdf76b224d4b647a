"""The fake GitLab against GitLab's own Python client, endpoint by endpoint.

Every REST endpoint the bot's GitLab client calls (``bot/gitlab/client.py``; the fake's
``ROUTES`` list them) is driven with ``python-gitlab`` (a test dependency), which parses each
answer into its objects; each answer carries the fields GitLab's REST documentation gives it
(the ones listed per endpoint below) and the status GitLab answers with (201 for what is
created, 400 for a position no diff version holds, 401 for a wrong token, 404 for what is not
there). A new endpoint in the client without a case here fails ``test_every_route_is_covered``.
"""

from __future__ import annotations

import asyncio
import re

import gitlab
import pytest

from bench.fake_gitlab import FakeGitLab
from bench.fake_gitlab.rest import ROUTES

PATH, IID = "octo/widgets", 7
BASE, HEAD1, HEAD2 = "b" * 40, "1" * 40, "2" * 40
BASE_FILES = {"app/core.py": "def add(a, b):\n    return a + b\n"}
HEAD_FILES = {"app/core.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"
                             "    return a - b\n"}
TOKEN = "glpat-contract"


def has(obj, *fields: str) -> None:
    """``obj`` (a python-gitlab object or a dict) carries every field, dotted paths too."""
    data = obj.asdict() if hasattr(obj, "asdict") else obj
    for dotted in fields:
        value = data
        for part in dotted.split("."):
            assert isinstance(value, dict) and part in value, f"{dotted} missing: {data}"
            value = value[part]


@pytest.fixture
async def world():
    fake = FakeGitLab(token=TOKEN)
    await fake.start()
    project = fake.add_project(PATH, files={"README.md": "# widgets\n"})
    fake.add_mr(project, IID, "Subtraction", "Adds sub().", "sam", "main", BASE, BASE_FILES)
    fake.push(project, IID, HEAD1, HEAD_FILES, ["Add sub", "Fix a typo"])
    fake.set_access(project, "rita", "developer")
    _, person = fake.add_diff_note(project, IID, "rita", "app/core.py", 6, "Test this?")
    gl = gitlab.Gitlab(fake.url, private_token=TOKEN, retry_transient_errors=False)
    try:
        yield fake, project, gl, person
    finally:
        await fake.stop()


def status_of(fake: FakeGitLab, method: str, pattern: str) -> int:
    """The status of the last request ``method`` to a path matching ``pattern``."""
    return next(s for m, p, s in reversed(fake.requests) if m == method and re.search(pattern, p))


async def run(func, *args):
    return await asyncio.to_thread(func, *args)


async def test_users_and_the_project(world):
    fake, _, gl, _ = world
    await run(gl.auth)
    has(gl.user, "id", "username", "name", "state", "avatar_url", "web_url")
    assert gl.user.username == fake.bot_username
    [rita] = await run(lambda: gl.users.list(username="rita"))
    has(rita, "id", "username", "name", "state", "avatar_url", "web_url")
    assert await run(lambda: gl.users.list(username="nobody")) == []
    found = await run(gl.projects.get, PATH)
    has(found, "id", "name", "path", "path_with_namespace", "name_with_namespace",
        "default_branch", "web_url", "namespace.id", "namespace.full_path", "namespace.kind")
    assert (found.name, found.path, found.namespace["full_path"]) == ("widgets", "widgets",
                                                                      "octo")
    member = await run(lambda: found.members_all.get(fake.user_id("rita")))
    has(member, "id", "username", "access_level", "web_url", "expires_at")
    assert member.access_level == 30
    with pytest.raises(gitlab.GitlabGetError) as missing:
        await run(lambda: found.members_all.get(fake.user_id("stranger")))
    assert missing.value.response_code == 404
    bad = gitlab.Gitlab(fake.url, private_token="glpat-wrong", retry_transient_errors=False)
    with pytest.raises(gitlab.GitlabAuthenticationError) as refused:
        await run(bad.auth)
    assert refused.value.response_code == 401


async def test_merge_requests_versions_and_diffs(world):
    _, project, gl, _ = world
    found = await run(gl.projects.get, PATH)
    mr = await run(found.mergerequests.get, IID)
    has(mr, "id", "iid", "project_id", "title", "description", "state", "created_at",
        "updated_at", "detailed_merge_status", "merge_status", "references.full",
        "references.short", "sha", "draft", "author.username", "author.web_url",
        "source_branch", "target_branch", "web_url", "diff_refs.base_sha",
        "diff_refs.start_sha", "diff_refs.head_sha")
    assert mr.references["full"] == f"{PATH}!{IID}" and mr.sha == HEAD1
    [listed] = await run(lambda: found.mergerequests.list(source_branch=mr.source_branch,
                                                          state="opened"))
    assert listed.iid == IID
    with pytest.raises(gitlab.GitlabGetError) as missing:
        await run(found.mergerequests.get, 99)
    assert missing.value.response_code == 404
    [version] = await run(lambda: mr.diffs.list(get_all=True))  # GET .../versions
    has(version, "id", "head_commit_sha", "base_commit_sha", "start_commit_sha",
        "created_at", "merge_request_id", "state", "real_size")
    one = await run(mr.diffs.get, version.id)
    assert one.diffs and one.diffs[0]["new_path"] == "app/core.py"
    diffs = await run(lambda: gl.http_list(f"/projects/{project}/merge_requests/{IID}/diffs",
                                           get_all=True))
    has(diffs[0], "old_path", "new_path", "a_mode", "b_mode", "new_file", "renamed_file",
        "deleted_file", "diff")


async def test_discussions_notes_and_resolving(world):
    fake, project, gl, _ = world
    found = await run(gl.projects.get, PATH)
    mr = await run(lambda: found.mergerequests.get(IID, lazy=True))
    [theirs] = await run(lambda: mr.discussions.list(get_all=True))
    first = theirs.attributes["notes"][0]
    has(first, "id", "type", "body", "author.web_url", "created_at", "updated_at",
        "system", "noteable_id", "noteable_type", "noteable_iid", "resolvable", "resolved",
        "resolved_by", "resolved_at", "position.base_sha", "position.new_line", "commit_id")
    assert first["type"] == "DiffNote" and first["commit_id"] == HEAD1
    version = fake.projects[project].mrs[IID].versions[-1]
    position = {"position_type": "text", "base_sha": version.base, "start_sha": version.start,
                "head_sha": version.head, "old_path": "app/core.py",
                "new_path": "app/core.py", "old_line": None, "new_line": 6,
                "line_range": {"start": {"type": "new", "old_line": None, "new_line": 5},
                               "end": {"type": "new", "old_line": None, "new_line": 6}}}
    made = await run(mr.discussions.create, {"body": "D1: test sub()", "position": position})
    assert status_of(fake, "POST", r"/discussions$") == 201
    line_range = made.attributes["notes"][0]["position"]["line_range"]
    assert line_range["start"]["line_code"].endswith("_0_5")
    assert line_range["end"]["line_code"].endswith("_0_6")
    with pytest.raises(gitlab.GitlabCreateError) as refused:
        await run(mr.discussions.create, {"body": "nowhere", "position": {
            **position, "head_sha": "9" * 40, "line_range": None}})
    assert refused.value.response_code == 400
    thread = await run(mr.discussions.create, {"body": "Overall: fine."})
    assert thread.attributes["notes"][0]["type"] == "DiscussionNote"  # a thread, not null
    reply = await run(thread.notes.create, {"body": "D1 is fixed"})
    assert status_of(fake, "POST", r"/discussions/[0-9a-f]+/notes$") == 201
    has(reply, "id", "type", "body", "author.username", "created_at", "resolvable",
        "resolved", "resolved_at", "noteable_iid")
    assert reply.type == "DiscussionNote"
    again = await run(mr.discussions.get, made.id)
    again.resolved = True
    await run(again.save)
    resolved = (await run(mr.discussions.get, made.id)).attributes["notes"][0]
    assert resolved["resolved"] is True and resolved["resolved_at"]
    assert resolved["resolved_by"]["username"] == fake.bot_username
    note = await run(mr.notes.create, {"body": "<!-- roundwise:summary --> round 1"})
    assert status_of(fake, "POST", rf"/merge_requests/{IID}/notes$") == 201
    has(note, "id", "body", "author.username", "created_at", "noteable_iid", "system")
    assert note.type is None  # a plain note on the MR
    edited = await run(lambda: mr.notes.get(note.id, lazy=True))
    edited.body = "<!-- roundwise:summary --> round 2"
    await run(edited.save)
    assert status_of(fake, "PUT", rf"/notes/{note.id}$") == 200
    assert fake.projects[project].mrs[IID].discussions[-1].notes[0].body.endswith("round 2")


async def test_repository_compare_merge_base_and_files(world):
    _, _, gl, _ = world
    found = await run(gl.projects.get, PATH)
    compared = await run(found.repository_compare, BASE, HEAD1)
    has(compared, "commit.id", "commits", "diffs", "compare_timeout", "compare_same_ref")
    assert [c["title"] for c in compared["commits"]] == ["Add sub", "Fix a typo"]
    has(compared["commits"][0], "id", "short_id", "title", "message", "author_name",
        "author_email", "authored_date", "committer_name", "committed_date", "created_at",
        "parent_ids", "web_url")
    base = await run(found.repository_merge_base, [BASE, HEAD1])
    assert base["id"] == BASE
    text = await run(lambda: found.files.raw("app/core.py", ref=HEAD1))
    assert text.decode() == HEAD_FILES["app/core.py"]
    with pytest.raises(gitlab.GitlabGetError) as missing:
        await run(lambda: found.files.raw("nope.py", ref=HEAD1))
    assert missing.value.response_code == 404


async def test_commit_statuses(world):
    fake, _, gl, _ = world
    found = await run(gl.projects.get, PATH)
    commit = await run(lambda: found.commits.get(HEAD1, lazy=True))
    running = await run(commit.statuses.create, {"state": "running", "name": "roundwise",
                                                 "description": "Reviewing"})
    assert status_of(fake, "POST", r"/statuses/") == 201
    has(running, "id", "sha", "ref", "status", "name", "description", "target_url",
        "created_at", "started_at", "finished_at", "allow_failure", "coverage",
        "author.username", "author.web_url")
    with pytest.raises(gitlab.GitlabCreateError) as refused:  # running, then running again
        await run(commit.statuses.create, {"state": "running", "name": "roundwise"})
    assert refused.value.response_code == 400
    await run(commit.statuses.create, {"state": "success", "name": "roundwise",
                                       "description": "No open defects"})
    [latest] = await run(lambda: commit.statuses.list(get_all=True))
    assert (latest.status, latest.description) == ("success", "No open defects")


COVERED = {
    "user": test_users_and_the_project, "users": test_users_and_the_project,
    "project": test_users_and_the_project, "member": test_users_and_the_project,
    "merge_requests": test_merge_requests_versions_and_diffs,
    "merge_request": test_merge_requests_versions_and_diffs,
    "versions": test_merge_requests_versions_and_diffs,
    "version": test_merge_requests_versions_and_diffs,
    "diffs": test_merge_requests_versions_and_diffs,
    "discussions": test_discussions_notes_and_resolving,
    "create_discussion": test_discussions_notes_and_resolving,
    "discussion": test_discussions_notes_and_resolving,
    "resolve": test_discussions_notes_and_resolving,
    "reply": test_discussions_notes_and_resolving,
    "create_note": test_discussions_notes_and_resolving,
    "edit_note": test_discussions_notes_and_resolving,
    "compare": test_repository_compare_merge_base_and_files,
    "merge_base": test_repository_compare_merge_base_and_files,
    "raw": test_repository_compare_merge_base_and_files,
    "set_status": test_commit_statuses, "statuses": test_commit_statuses,
}


def test_every_route_is_covered():
    """Each endpoint the fake serves (the ones the bot's client calls) has a case above, and
    each call the bot's client makes is one the fake serves."""
    import inspect

    from bot.gitlab import client

    assert {name for _, _, name in ROUTES} == set(COVERED)
    source = inspect.getsource(client)
    called = set(re.findall(r'_(?:url|mr)\(\s*f?"(/[a-z_/]+)', source))
    served = {re.sub(r"\(\?P<\w+>[^)]+\)", "", p).split("/api/v4/projects")[-1]
              for _, p, _ in ROUTES}
    served_words = {w for p in served for w in p.split("/") if w}
    assert called and all(all(w in served_words for w in c.split("/") if w) for c in called), \
        called
