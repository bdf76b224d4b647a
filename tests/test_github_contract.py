"""The fake GitHub against GitHub's own published description of its API.

Every REST endpoint ``bot/github/client.py`` calls is driven with ``githubkit`` (a test
dependency: a client generated from GitHub's OpenAPI description, its pydantic response models
validating each answer), for the 2022-11-28 and the 2026-03-10 API versions. A fake answer that
lacks a field GitHub's schema requires, or gives one the wrong type, fails here: code written
against the fake then reads the fields GitHub really sends. The media types that are not JSON
(diffs, raw file bytes) have no schema; their status and content type are checked instead.
``POST /graphql`` goes through githubkit's GraphQL client (GitHub publishes no response models
for it): the answer must parse and carry the review-thread fields the bot reads.
"""

from __future__ import annotations

import pytest
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy

from bench.fake_github import FakeGitHub
from bot.github.client import RESOLVE_MUTATION, THREADS_QUERY

from .server_kit import APP_ID, app_keys

VERSIONS = ["2022-11-28", "2026-03-10"]
INST, OWNER, NAME, NUMBER = 55, "octo", "widgets", 7
REPO = f"{OWNER}/{NAME}"
BASE, HEAD1, HEAD2 = "b" * 40, "1" * 40, "2" * 40
BASE_FILES = {"app/core.py": "def add(a, b):\n    return a + b\n"}
HEAD_FILES = {"app/core.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"
                             "    return a - b\n",
              "docs/notes.md": "# Notes\n\nSubtraction.\n"}


def world(fake: FakeGitHub) -> dict:
    """A repository with a PR after two pushes, people's comments, a review and a thread reply."""
    fake.add_installation(INST, OWNER, account_type="Organization")
    fake.add_repo(REPO, INST, files={".github/roundwise.yml": "require_tests: true\n"})
    fake.add_pr(REPO, NUMBER, "Subtraction", "Adds sub().", "sam", "main", BASE, BASE_FILES)
    fake.push(REPO, NUMBER, HEAD1, {"app/core.py": HEAD_FILES["app/core.py"]}, ["Add sub"])
    fake.push(REPO, NUMBER, HEAD2, HEAD_FILES, ["Add notes"])
    fake.set_permission(REPO, "rita", "write")
    top = fake.add_review_comment(REPO, NUMBER, "rita", "app/core.py", 6, "Test this?",
                                  start_line=5)
    fake.add_review_comment(REPO, NUMBER, "sam", "app/core.py", 6, "Will do",
                            in_reply_to=top["id"])
    fake.add_issue_comment(REPO, NUMBER, "rita", "Thanks!")
    review = fake.add_review(REPO, NUMBER, "rita", "REQUEST_CHANGES", "Tests, please.")
    return {"comment": top, "review": review}


@pytest.fixture
async def setup():
    async with FakeGitHub(APP_ID, app_keys()[1]) as fake:
        made = world(fake)
        # a cache of its own: githubkit keeps installation tokens in a process-wide one
        app = GitHub(AppAuthStrategy(str(APP_ID), app_keys()[0]), base_url=fake.url + "/",
                     http_cache=False, auto_retry=False, timeout=20,
                     cache_strategy=MemCacheStrategy())
        inst = app.with_auth(app.auth.as_installation(INST))
        yield fake, app, inst, made


def _models(data):
    """Every parsed item, so a list's elements are each validated."""
    return data if isinstance(data, list) else [data]


async def _check_run(inst, version: str):
    return (await inst.rest(version).checks.async_create(
        OWNER, NAME, data={"name": "roundwise", "head_sha": HEAD2, "status": "in_progress",
                           "output": {"title": "Reviewing", "summary": "round 1"}})).parsed_data


async def _bot_review(inst, version: str):
    return (await inst.rest(version).pulls.async_create_review(
        OWNER, NAME, NUMBER, data={
            "commit_id": HEAD2, "body": "roundwise round 1", "event": "COMMENT",
            "comments": [{"path": "docs/notes.md", "line": 3, "side": "RIGHT",
                          "body": "D1: typo"}]})).parsed_data


# Each: what the bot calls (method, path as in bot/github/client.py) -> a githubkit call that
# returns the parsed (schema-validated) answer.
async def token(fake, app, inst, made, v):
    answer = await app.rest(v).apps.async_create_installation_access_token(INST)
    return answer.parsed_data


async def pull(fake, app, inst, made, v):
    return (await inst.rest(v).pulls.async_get(OWNER, NAME, NUMBER)).parsed_data


async def pull_files(fake, app, inst, made, v):
    return (await inst.rest(v).pulls.async_list_files(OWNER, NAME, NUMBER,
                                                     per_page=100)).parsed_data


async def compare(fake, app, inst, made, v):
    return (await inst.rest(v).repos.async_compare_commits(
        OWNER, NAME, f"{HEAD1}...{HEAD2}")).parsed_data


async def contents(fake, app, inst, made, v):
    answer = await inst.rest(v).repos.async_get_content(OWNER, NAME, "app/core.py", ref=HEAD2)
    data = answer.parsed_data
    model = _module(v).ContentFile
    return [data, model.model_validate(answer.json())]


async def contents_default_branch(fake, app, inst, made, v):
    answer = await inst.rest(v).repos.async_get_content(OWNER, NAME, ".github/roundwise.yml")
    return [answer.parsed_data, _module(v).ContentFile.model_validate(answer.json())]


async def review_comments(fake, app, inst, made, v):
    return (await inst.rest(v).pulls.async_list_review_comments(
        OWNER, NAME, NUMBER, per_page=100)).parsed_data


async def create_review(fake, app, inst, made, v):
    return await _bot_review(inst, v)


async def reply(fake, app, inst, made, v):
    return (await inst.rest(v).pulls.async_create_reply_for_review_comment(
        OWNER, NAME, NUMBER, made["comment"]["id"], data={"body": "D1 looks resolved"})
    ).parsed_data


async def issue_comments(fake, app, inst, made, v):
    return (await inst.rest(v).issues.async_list_comments(OWNER, NAME, NUMBER,
                                                         per_page=100)).parsed_data


async def create_issue_comment(fake, app, inst, made, v):
    return (await inst.rest(v).issues.async_create_comment(
        OWNER, NAME, NUMBER, data={"body": "roundwise summary"})).parsed_data


async def edit_issue_comment(fake, app, inst, made, v):
    made_now = await create_issue_comment(fake, app, inst, made, v)
    return (await inst.rest(v).issues.async_update_comment(
        OWNER, NAME, made_now.id, data={"body": "roundwise summary, round 2"})).parsed_data


async def react_issue_comment(fake, app, inst, made, v):
    [comment] = fake.issue_comments(REPO, NUMBER)
    first = await inst.rest(v).reactions.async_create_for_issue_comment(
        OWNER, NAME, comment["id"], data={"content": "-1"})
    again = await inst.rest(v).reactions.async_create_for_issue_comment(
        OWNER, NAME, comment["id"], data={"content": "-1"})
    # GitHub: 201 and the reaction; the same reaction again is 200 and the existing one
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.parsed_data.id == first.parsed_data.id != 0
    return [first.parsed_data, again.parsed_data]


async def app_itself(fake, app, inst, made, v):
    return (await app.rest(v).apps.async_get_authenticated()).parsed_data


async def repo_installation(fake, app, inst, made, v):
    answer = (await app.rest(v).apps.async_get_repo_installation(OWNER, NAME)).parsed_data
    assert answer.id == INST and answer.account is not None
    return answer


async def reviews(fake, app, inst, made, v):
    await _bot_review(inst, v)
    return (await inst.rest(v).pulls.async_list_reviews(OWNER, NAME, NUMBER,
                                                       per_page=100)).parsed_data


async def dismiss_review(fake, app, inst, made, v):
    mine = (await inst.rest(v).pulls.async_create_review(
        OWNER, NAME, NUMBER, data={"commit_id": HEAD2, "body": "Blocking: D1",
                                   "event": "REQUEST_CHANGES"})).parsed_data
    return (await inst.rest(v).pulls.async_dismiss_review(
        OWNER, NAME, NUMBER, mine.id, data={"message": "No blocking defect stands."})
    ).parsed_data


async def create_check_run(fake, app, inst, made, v):
    return await _check_run(inst, v)


async def update_check_run(fake, app, inst, made, v):
    run = await _check_run(inst, v)
    return (await inst.rest(v).checks.async_update(
        OWNER, NAME, run.id, data={"conclusion": "success", "output": {
            "title": "1 defect", "summary": "D1", "annotations": [{
                "path": "docs/notes.md", "start_line": 3, "end_line": 3,
                "annotation_level": "warning", "message": "D1: typo"}]}})).parsed_data


async def list_check_runs(fake, app, inst, made, v):
    await _check_run(inst, v)
    return (await inst.rest(v).checks.async_list_for_ref(OWNER, NAME, HEAD2)).parsed_data


async def permission(fake, app, inst, made, v):
    return (await inst.rest(v).repos.async_get_collaborator_permission_level(
        OWNER, NAME, "rita")).parsed_data


async def graphql(fake, app, inst, made, v):
    data = await inst.async_graphql(THREADS_QUERY, {"owner": OWNER, "name": NAME,
                                                   "number": NUMBER, "cursor": None})
    [thread] = data["repository"]["pullRequest"]["reviewThreads"]["nodes"]
    assert isinstance(thread["id"], str) and isinstance(thread["isResolved"], bool)
    for comment in thread["comments"]["nodes"]:
        assert isinstance(comment["id"], str) and isinstance(comment["databaseId"], int)
        assert isinstance(comment["fullDatabaseId"], str)  # BigInt is a string in GraphQL
        assert isinstance(comment["author"]["login"], str)
    done = await inst.async_graphql(RESOLVE_MUTATION, {"id": thread["id"]})
    assert done["resolveReviewThread"]["thread"] == {"id": thread["id"], "isResolved": True}
    return []


def _module(version: str):
    import importlib

    return importlib.import_module(f"githubkit_schemas.v{version.replace('-', '_')}.models")


ENDPOINTS = {
    "GET /app": app_itself,
    "GET /repos/{o}/{r}/installation": repo_installation,
    "POST /app/installations/{id}/access_tokens": token,
    "GET /repos/{o}/{r}/pulls/{n}": pull,
    "GET /repos/{o}/{r}/pulls/{n}/files": pull_files,
    "GET /repos/{o}/{r}/compare/{base}...{head}": compare,
    "GET /repos/{o}/{r}/contents/{path}?ref": contents,
    "GET /repos/{o}/{r}/contents/{path} (default branch)": contents_default_branch,
    "GET /repos/{o}/{r}/pulls/{n}/comments": review_comments,
    "POST /repos/{o}/{r}/pulls/{n}/reviews": create_review,
    "POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies": reply,
    "GET /repos/{o}/{r}/issues/{n}/comments": issue_comments,
    "POST /repos/{o}/{r}/issues/{n}/comments": create_issue_comment,
    "PATCH /repos/{o}/{r}/issues/comments/{id}": edit_issue_comment,
    "POST /repos/{o}/{r}/issues/comments/{id}/reactions": react_issue_comment,
    "GET /repos/{o}/{r}/pulls/{n}/reviews": reviews,
    "PUT /repos/{o}/{r}/pulls/{n}/reviews/{id}/dismissals": dismiss_review,
    "POST /repos/{o}/{r}/check-runs": create_check_run,
    "PATCH /repos/{o}/{r}/check-runs/{id}": update_check_run,
    "GET /repos/{o}/{r}/commits/{ref}/check-runs": list_check_runs,
    "GET /repos/{o}/{r}/collaborators/{user}/permission": permission,
    "POST /graphql (review threads, resolve)": graphql,
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
async def test_fake_answers_validate_against_githubs_schema(setup, endpoint, version):
    fake, app, inst, made = setup
    parsed = await ENDPOINTS[endpoint](fake, app, inst, made, version)
    for item in _models(parsed):  # the models are built lazily: touch every field
        assert item is not None
        if hasattr(item, "model_dump"):
            item.model_dump()


@pytest.mark.parametrize("version", VERSIONS)
async def test_media_types_without_a_schema(setup, version):
    inst = setup[2]
    client = inst.rest(version)
    diff = await client.pulls.async_get(OWNER, NAME, NUMBER,
                                        headers={"Accept": "application/vnd.github.diff"})
    assert diff.status_code == 200 and diff.text.startswith("diff --git a/app/core.py")
    raw = await client.repos.async_get_content(OWNER, NAME, "app/core.py", ref=HEAD2,
                                               headers={"Accept": "application/vnd.github.raw"})
    assert raw.status_code == 200 and raw.text == HEAD_FILES["app/core.py"]
    compare = await client.repos.async_compare_commits(
        OWNER, NAME, f"{HEAD1}...{HEAD2}", headers={"Accept": "application/vnd.github.diff"})
    assert compare.status_code == 200 and "docs/notes.md" in compare.text


def test_every_client_endpoint_is_covered():
    """Each URL bot/github/client.py builds has a contract case above (a new call without one
    fails here)."""
    import inspect
    import re

    from bot.github import client

    def shape(path: str) -> str:
        path = re.sub(r" \(.*\)$", "", path).split("?")[0]
        return re.sub(r"\{[^}]*\}", "{}", path.removeprefix("/repos/{o}/{r}"))

    source = inspect.getsource(client)
    built = {shape(p) for p in re.findall(r'_url\(\s*f?"([^"]+)"', source)}
    built |= {shape(p) for p in re.findall(r'f"(/app/installations/[^"]+)"', source)}
    covered = {shape(key.split(" ", 1)[1]) for key in ENDPOINTS}
    assert len(built) >= 14, built  # the 14 the client builds today
    assert built <= covered, built - covered


async def _user_token(fake: FakeGitHub) -> str:
    """A person's user access token, through the fake's OAuth web flow."""
    import aiohttp

    fake.oauth_app("Iv23liContract", "contract-secret")
    fake.add_person("rita", {INST: None})
    fake.signed_in = "rita"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{fake.url}/login/oauth/authorize", allow_redirects=False,
                            params={"client_id": "Iv23liContract", "state": "s",
                                    "redirect_uri": "https://rw.example/cb"}) as resp:
            code = resp.headers["Location"].split("code=")[1].split("&")[0]
        async with http.post(f"{fake.url}/login/oauth/access_token",
                             data={"client_id": "Iv23liContract",
                                   "client_secret": "contract-secret", "code": code},
                             headers={"Accept": "application/json"}) as resp:
            return (await resp.json())["access_token"]


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_dashboards_user_calls_validate_against_githubs_schema(setup, version):
    from githubkit import TokenAuthStrategy

    fake, _app, _inst, _made = setup
    person = GitHub(TokenAuthStrategy(await _user_token(fake)), base_url=fake.url + "/",
                    http_cache=False, auto_retry=False, timeout=20)
    rest = person.rest(version)
    assert (await rest.users.async_get_authenticated()).parsed_data.login == "rita"
    listed = (await rest.apps.async_list_installations_for_authenticated_user()).parsed_data
    assert [i.id for i in listed.installations] == [INST] and listed.total_count == 1
    repos = (await rest.apps.async_list_installation_repos_for_authenticated_user(INST)
             ).parsed_data
    assert [r.full_name for r in repos.repositories] == [REPO]
