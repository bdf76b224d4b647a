"""The fake GitLab holds the bot to what GitLab does, and the client copes with it.

Positions must name a diff version and a line as GitLab wants it (else 400, which the forge
reads as ``Unprocessable``); notes move with a push or stay outdated; lists are paginated;
one ledger keeps a GitHub PR and a GitLab MR of the same path and number apart, on SQLite and
PostgreSQL; a server for GitLab alone needs no GitHub App.
"""

from __future__ import annotations

import aiohttp
import pytest

from bench.fake_gitlab import FakeGitLab
from bot.config.env import ConfigError
from bot.forge import InlineComment, Unprocessable
from bot.github import RetryPolicy
from bot.gitlab import GitLabClient, GitLabForge
from bot.gitlab.ids import NOTE_BASE, from_note, repo_key, to_note, valid_project_path
from bot.server.hosts import load_config

BASE = "b" * 40
HEAD1, HEAD2 = "1" * 40, "2" * 40
OLD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
NEW1 = OLD.replace("return a + b", "return b + a") + "\n\ndef mul(a, b):\n    return a * b\n"
NEW2 = "# header\n" + NEW1.replace("return a * b", "return b * a")
FAST = RetryPolicy(attempts=3, backoff=0.01, max_wait=1.0, secondary_wait=0.01)


@pytest.fixture
async def gitlab():
    fake = FakeGitLab(token="glpat-t")
    await fake.start()
    project = fake.add_project("grp/sub/proj")
    fake.add_mr(project, 3, "t", "d", "sam", "main", BASE, {"calc.py": OLD})
    fake.push(project, 3, HEAD1, {"calc.py": NEW1})
    async with aiohttp.ClientSession() as session:
        client = GitLabClient(session, fake.url, "glpat-t", retry=FAST)
        forge = GitLabForge(client.project(project), repo_key("grp/sub/proj"), 3,
                            bot_login="roundwise[bot]", web_url=fake.url)
        yield fake, project, client, forge
    await fake.stop()


def _position(fake, project, **lines):
    v = fake.projects[project].mrs[3].versions[-1]
    return {"position_type": "text", "base_sha": v.base, "start_sha": v.start,
            "head_sha": v.head, "old_path": "calc.py", "new_path": "calc.py", **lines}


async def test_positions_must_match_a_diff_version_and_a_line_as_gitlab_wants(gitlab):
    fake, project, client, forge = gitlab
    p = client.project(project)
    with pytest.raises(Unprocessable) as wrong_version:
        await p.create_discussion(3, "x", {**_position(fake, project, new_line=2),
                                           "head_sha": BASE})
    assert wrong_version.value.status == 400
    with pytest.raises(Unprocessable):  # an unchanged line needs old_line too
        await p.create_discussion(3, "x", _position(fake, project, new_line=1))
    with pytest.raises(Unprocessable):  # not in the diff at all
        await p.create_discussion(3, "x", _position(fake, project, new_line=40))
    await p.create_discussion(3, "ok", _position(fake, project, old_line=1, new_line=1))
    await p.create_discussion(3, "ok", _position(fake, project, new_line=2, old_line=None))
    # the forge works the position out itself: added, unchanged and removed lines
    await forge.create_review(3, HEAD1, "", [
        InlineComment("calc.py", 2, "RIGHT", "added <!-- roundwise:new:D1:r1 -->"),
        InlineComment("calc.py", 1, "RIGHT", "context <!-- roundwise:new:D2:r1 -->"),
        InlineComment("calc.py", 2, "LEFT", "removed <!-- roundwise:new:D3:r1 -->")])
    with pytest.raises(Unprocessable) as refused:
        await forge.create_review(3, HEAD1, "", [
            InlineComment("calc.py", 2, "RIGHT", "added <!-- roundwise:new:D1:r1 -->"),
            InlineComment("calc.py", 44, "RIGHT", "far <!-- roundwise:new:D4:r1 -->")])
    assert "calc.py:44" in str(refused.value.errors)
    bodies = [c.body for c in await forge.review_comments(3)]
    assert bodies.count("added <!-- roundwise:new:D1:r1 -->") == 1  # not posted twice


async def test_after_a_push_notes_move_with_their_line_or_stay_outdated(gitlab):
    fake, project, client, _forge = gitlab
    mr = fake.projects[project].mrs[3]
    kept = fake.add_diff_note(project, 3, "rev", "calc.py", 9, "mul: name it product")[0]
    gone = fake.add_diff_note(project, 3, "rev", "calc.py", 10, "use operator.mul")[0]
    fake.push(project, 3, HEAD2, {"calc.py": NEW2})
    assert kept.notes[0].position["head_sha"] == HEAD2 and kept.notes[0].position[
        "new_line"] == 10
    assert kept.notes[0].original_position["head_sha"] == HEAD1
    assert gone.outdated and gone.notes[0].position["head_sha"] == HEAD1
    assert [v.head for v in mr.versions] == [HEAD1, HEAD2]
    assert [v["head_commit_sha"] for v in await client.project(project).versions(3)] == [
        HEAD2, HEAD1]  # newest first, as GitLab lists them


async def test_lists_follow_gitlabs_pagination(gitlab):
    fake, project, _client, forge = gitlab
    mr = fake.projects[project].mrs[3]
    for i in range(230):
        fake.add_note(mr, "rev", f"note {i}")
    comments = await forge.issue_comments(3)
    assert [c.body for c in comments] == [f"note {i}" for i in range(230)]
    pages = [p for m, p, s in fake.requests if p.endswith("/discussions")]
    assert len(pages) == 3  # 100 a page
    assert all(c.id > NOTE_BASE for c in comments)


async def test_status_transitions_and_the_check_run_mapping(gitlab):
    fake, project, client, forge = gitlab
    check = await forge.create_check_run(HEAD1, {"name": "roundwise", "status": "in_progress",
                                                 "output": {"title": "Reviewing"}})
    await forge.update_check_run(check, {"status": "in_progress"})  # the same state: no error
    await forge.update_check_run(check, {"status": "completed", "conclusion": "failure",
                                         "output": {"title": "1 open (1 Major)"}})
    client.status_shas.clear()  # after a restart the sha is found from the MR's versions
    await forge.update_check_run(check, {"status": "completed", "conclusion": "success",
                                         "output": {"title": "no open defects"}})
    history = fake.projects[project].statuses[HEAD1]
    assert [s["status"] for s in history] == ["failed", "success"]
    assert history[0]["ref"] == fake.projects[project].mrs[3].source_branch


async def test_a_bad_token_is_unauthorized_and_not_retried(gitlab):
    fake, project, _client, _forge = gitlab
    async with aiohttp.ClientSession() as session:
        bad = GitLabClient(session, fake.url, "glpat-wrong", retry=FAST)
        from bot.forge import Unauthorized

        seen = len(fake.requests)
        with pytest.raises(Unauthorized):
            await bad.project(project).merge_request(3)
        assert len(fake.requests) - seen == 1


def test_ids_and_paths():
    assert to_note(from_note(5)) == 5 and from_note(1) > 2 ** 52
    with pytest.raises(ValueError):
        to_note(12345)
    assert valid_project_path("grp/sub/proj") and not valid_project_path("one")
    assert not valid_project_path("grp/../etc") and not valid_project_path("grp/x.git")


def test_one_ledger_keeps_both_hosts_apart(any_ledger):
    github = any_ledger.pull_request("octo/widgets", 7, title="on GitHub")
    gitlab = any_ledger.pull_request(repo_key("octo/widgets"), 7, title="on GitLab")
    assert github["id"] != gitlab["id"]
    assert (github["host"], gitlab["host"]) == ("github", "gitlab")
    assert any_ledger.find_pull_request("octo/widgets", 7)["title"] == "on GitHub"
    assert any_ledger.find_pull_request("gitlab:octo/widgets", 7)["title"] == "on GitLab"


def test_a_server_for_gitlab_alone_needs_no_app():
    config = load_config({"GITLAB_TOKEN": "glpat-x", "GITLAB_WEBHOOK_SECRET": "s",
                          "GITLAB_URL": "https://git.example/"})
    assert config.gitlab.url == "https://git.example" and not config.app_id
    assert "glpat" not in repr(config)
    with pytest.raises(ConfigError, match="GITLAB_WEBHOOK_SECRET"):
        load_config({"GITLAB_TOKEN": "glpat-x"})
    with pytest.raises(ConfigError, match="GITHUB_WEBHOOK_SECRET"):  # half an App: say so
        load_config({"GITLAB_TOKEN": "glpat-x", "GITLAB_WEBHOOK_SECRET": "s",
                     "GITHUB_APP_ID": "1"})
    with pytest.raises(ConfigError, match="GITHUB_APP_ID"):
        load_config({})


async def test_the_settings_file_may_live_in_dot_gitlab(gitlab):
    fake, project, _client, forge = gitlab
    tree = fake.projects[project].trees[BASE]
    assert await forge.file_text(".github/roundwise.yml") is None
    tree[".github/roundwise.yml"] = "fail_on: Major\n"
    assert await forge.file_text(".github/roundwise.yml") == "fail_on: Major\n"
    tree[".gitlab/roundwise.yml"] = "fail_on: Minor\n"
    assert await forge.file_text(".github/roundwise.yml") == "fail_on: Minor\n"
    # at a commit, a path is that path: a PR editing .github/roundwise.yml reads as it is
    assert await forge.file_text(".github/roundwise.yml", BASE) == "fail_on: Major\n"
