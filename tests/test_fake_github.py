"""The fake GitHub honours the API contract the bot relies on, checked over real HTTP.

Every test starts ``bench.fake_github.FakeGitHub`` on 127.0.0.1 and talks to it with gidgethub's
aiohttp client (as the bot does) or raw aiohttp where headers matter.
"""

from __future__ import annotations

import base64
import datetime
import json
import time

import aiohttp
import gidgethub
import gidgethub.apps
import gidgethub.sansio
import jwt
import pytest
import unidiff
from gidgethub.aiohttp import GitHubAPI
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.fake_github import FakeGitHub
from bench.replay import payloads
from bench.replay.github import throwaway_key
from bench.tasks.diffs import git_diff

APP_ID = 4242
REPO = "octo/widgets"
BASE_SHA = "b" * 40
HEAD1 = "1" * 40
HEAD2 = "2" * 40
APP_PY = "".join(f"line {i}\n" for i in range(1, 21))
THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $cursor: String, $first: Int = 100) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: $first, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line
          comments(first: 100) { nodes { id databaseId fullDatabaseId body author { login } } }
        }
      }
    }
  }
}
"""
RESOLVE = (
    "mutation($id: ID!) "
    "{ resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }"
)


@pytest.fixture(scope="module")
def keys() -> tuple[str, str]:
    return throwaway_key()


@pytest.fixture
async def fake(keys):
    async with FakeGitHub(APP_ID, keys[1]) as server:
        server.add_installation(42, "octo")
        server.add_repo(REPO, 42, files={".github/roundwise.yml": "model: small\n" * 20})
        server.add_pr(REPO, 7, "Add widgets", "Body", "alice", "main", BASE_SHA,
                      {"src/app.py": APP_PY, "README.md": "readme\n"})
        server.push(REPO, 7, HEAD1, {
            "src/app.py": APP_PY.replace("line 3\n", "line three\n").replace(
                "line 15\n", "line 15\nline 15b\n"),
            "src/new.py": "print('hi')",
            "README.md": None,
        })
        yield server


@pytest.fixture
async def session():
    async with aiohttp.ClientSession() as client:
        yield client


async def install_token(fake: FakeGitHub, session, keys) -> str:
    app = GitHubAPI(session, "roundwise-test", base_url=fake.url)
    answer = await gidgethub.apps.get_installation_access_token(
        app, installation_id="42", app_id=str(APP_ID), private_key=keys[0])
    return answer["token"]


@pytest.fixture
async def gh(fake, session, keys) -> GitHubAPI:
    token = await install_token(fake, session, keys)
    return GitHubAPI(session, "roundwise-test", oauth_token=token, base_url=fake.url)


def make_jwt(private_key: str, iat_offset: int, exp_offset: int, iss: str = str(APP_ID)) -> str:
    now = int(time.time())
    return jwt.encode({"iat": now + iat_offset, "exp": now + exp_offset, "iss": iss},
                      private_key, algorithm="RS256")


# ----------------------------------------------------------------------------- auth


async def test_jwt_gets_long_installation_token(fake, session, keys):
    before = time.time()
    app = GitHubAPI(session, "roundwise-test", base_url=fake.url)
    answer = await gidgethub.apps.get_installation_access_token(
        app, installation_id="42", app_id=str(APP_ID), private_key=keys[0])
    assert answer["token"].startswith("ghs_") and len(answer["token"]) > 100
    expires = datetime.datetime.fromisoformat(answer["expires_at"])
    assert abs(expires.timestamp() - (before + 3600)) < 5
    assert answer["repository_selection"] == "all"
    assert fake.token_issuances == 1
    installation = await app.getitem(f"/repos/{REPO}/installation",
                                      jwt=make_jwt(keys[0], -60, 500))
    assert installation["id"] == 42
    assert all("ghs_" not in json.dumps(r) for r in fake.requests)


@pytest.mark.parametrize(
    ("iat", "exp", "iss", "message"),
    [
        (-60, 650, str(APP_ID), "too far in the future"),
        (120, 300, str(APP_ID), "'Issued at'"),
        (-700, -100, str(APP_ID), "future time"),
        (-60, 500, "999", "Integration not found"),
    ],
)
async def test_bad_jwt_is_401(fake, session, keys, iat, exp, iss, message):
    app = GitHubAPI(session, "roundwise-test", base_url=fake.url)
    with pytest.raises(gidgethub.BadRequest) as caught:
        await app.post("/app/installations/42/access_tokens", data=b"",
                       jwt=make_jwt(keys[0], iat, exp, iss))
    assert caught.value.status_code == 401
    assert message in str(caught.value)
    assert fake.token_issuances == 0


async def test_endpoints_need_a_live_installation_token(fake, session, keys):
    url = f"{fake.url}/repos/{REPO}/pulls/7"
    token = await install_token(fake, session, keys)
    for authorization in (None, "token nope", f"bearer {make_jwt(keys[0], -60, 500)}"):
        headers = {"Authorization": authorization} if authorization else {}
        async with session.get(url, headers=headers) as response:
            assert response.status == 401
            assert response.headers["Content-Type"] == "application/json; charset=utf-8"
            assert (await response.json())["message"] == "Bad credentials"
    async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
        assert response.status == 200
    fake.expire_tokens()
    async with session.get(url, headers={"Authorization": f"token {token}"}) as response:
        assert response.status == 401


async def test_token_of_another_installation_sees_404(fake, session, keys):
    fake.add_installation(43, "other")
    fake.add_repo("other/thing", 43)
    token = await install_token(fake, session, keys)
    async with session.get(f"{fake.url}/repos/other/thing/contents/x",
                           headers={"Authorization": f"token {token}"}) as response:
        assert response.status == 404


# ----------------------------------------------------------------------------- reads


async def test_pull_json_and_git_diff(fake, gh, session):
    pr = await gh.getitem(f"/repos/{REPO}/pulls/7")
    assert pr["head"]["sha"] == HEAD1 and pr["base"]["sha"] == BASE_SHA
    assert (pr["changed_files"], pr["additions"], pr["deletions"]) == (3, 3, 2)
    for accept in ("application/vnd.github.v3.diff", "application/vnd.github.diff"):
        text = await gh.getitem(f"/repos/{REPO}/pulls/7", accept=accept)
        assert isinstance(text, str)
        files = {f.path: f for f in unidiff.PatchSet(text)}
        assert files["README.md"].is_removed_file and files["src/new.py"].is_added_file
        assert "\\ No newline at end of file" in str(files["src/new.py"])
        assert [h.target_start for h in files["src/app.py"]] == [1, 13]
    async with session.get(f"{fake.url}/repos/{REPO}/pulls/7", headers={
            "Authorization": f"token {gh.oauth_token}",
            "Accept": "application/vnd.github.diff"}) as response:
        assert response.headers["Content-Type"] == "application/vnd.github.v3.diff; charset=utf-8"
    fake.set_diff_too_large(REPO, 7)
    with pytest.raises(gidgethub.BadRequest) as caught:
        await gh.getitem(f"/repos/{REPO}/pulls/7", accept="application/vnd.github.diff")
    assert caught.value.status_code == 406


async def test_past_300_files_the_diff_is_refused_as_github_does_and_files_list_3000(
        fake, gh, session):
    """GitHub's observed 406 for a diff of over 300 files (status, message, errors,
    documentation URL, the status as a string), pages of at most 100 files, and at most 3,000
    files listed whatever the pull request changes (issue 40, item 1)."""
    fake.add_pr(REPO, 9, "Huge", None, "bob", "main", BASE_SHA, {})
    fake.push(REPO, 9, "9" * 40, {f"f{i:04d}.txt": f"{i}\n" for i in range(3001)})
    async with session.get(f"{fake.url}/repos/{REPO}/pulls/9", headers={
            "Authorization": f"token {gh.oauth_token}",
            "Accept": "application/vnd.github.diff"}) as response:
        assert response.status == 406
        assert await response.json() == {
            "message": "Sorry, the diff exceeded the maximum number of files (300). Consider "
                       "using 'List pull requests files' API or locally cloning the repository "
                       "instead.",
            "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files",
            "status": "406"}
    async with session.get(f"{fake.url}/repos/{REPO}/pulls/9/files", params={"per_page": "500"},
                           headers={"Authorization": f"token {gh.oauth_token}"}) as response:
        assert len(await response.json()) == 100 and 'rel="next"' in response.headers["Link"]
    names = [f["filename"] async for f in gh.getiter(f"/repos/{REPO}/pulls/9/files?per_page=100")]
    assert len(names) == 3000 and names[-1] == "f2999.txt"
    assert (await gh.getitem(f"/repos/{REPO}/pulls/9"))["changed_files"] == 3001


async def test_files_pagination_follows_absolute_links(fake, gh, session):
    fake.add_pr(REPO, 8, "Many", None, "bob", "main", BASE_SHA, {})
    fake.push(REPO, 8, "8" * 40, {f"f{i}.txt": f"{i}\n" for i in range(7)})
    names = [f["filename"] async for f in gh.getiter(f"/repos/{REPO}/pulls/8/files?per_page=3")]
    assert names == [f"f{i}.txt" for i in range(7)]
    pages = [r for r in fake.requests if r.path.endswith("/pulls/8/files")]
    assert [r.query.get("page") for r in pages] == [None, "2", "3"]
    assert pages[1].path.startswith("/repositories/")
    async with session.get(fake.url + pages[1].path, params={"per_page": "3", "page": "2"},
                           headers={"Authorization": f"token {gh.oauth_token}"}) as response:
        link = response.headers["Link"]
    assert link.startswith(f"<{fake.url}/repositories/")
    assert all(f'rel="{rel}"' in link for rel in ("prev", "next", "last", "first"))


async def test_compare_between_pushes(fake, gh):
    # push texts are relative to the base: README.md stays deleted only if said again
    fake.push(REPO, 7, HEAD2, {"src/app.py": APP_PY, "src/new.py": "print('hi')\n",
                               "README.md": None})
    compare = await gh.getitem(f"/repos/{REPO}/compare/{HEAD1}...{HEAD2}")
    assert (compare["status"], compare["ahead_by"], compare["behind_by"]) == ("ahead", 1, 0)
    assert [c["sha"] for c in compare["commits"]] == [HEAD2]
    assert compare["merge_base_commit"]["sha"] == HEAD1
    assert sorted(f["filename"] for f in compare["files"]) == ["src/app.py", "src/new.py"]
    text = await gh.getitem(f"/repos/{REPO}/compare/{HEAD1}...{HEAD2}",
                            accept="application/vnd.github.v3.diff")
    assert {f.path for f in unidiff.PatchSet(text)} == {"src/app.py", "src/new.py"}
    fake.push(REPO, 7, "3" * 40, {"src/app.py": "rewritten\n"}, force=True)
    forced = await gh.getitem(f"/repos/{REPO}/compare/{HEAD2}...{'3' * 40}")
    assert forced["status"] == "diverged"
    assert forced["merge_base_commit"]["sha"] == BASE_SHA


async def test_contents_base64_by_ref(fake, gh):
    config = await gh.getitem(f"/repos/{REPO}/contents/.github/roundwise.yml")
    assert "\n" in config["content"].rstrip("\n")  # wrapped like GitHub's base64
    assert base64.b64decode(config["content"]).decode() == "model: small\n" * 20
    head = await gh.getitem(f"/repos/{REPO}/contents/src/new.py?ref={HEAD1}")
    assert base64.b64decode(head["content"]).decode() == "print('hi')"
    old = await gh.getitem(f"/repos/{REPO}/contents/README.md",
                           accept="application/vnd.github.raw")
    assert old == "readme\n"
    with pytest.raises(gidgethub.BadRequest) as caught:
        await gh.getitem(f"/repos/{REPO}/contents/README.md?ref={HEAD1}")
    assert caught.value.status_code == 404


async def test_pull_commits_and_permission(fake, gh):
    commits = [c async for c in gh.getiter(f"/repos/{REPO}/pulls/7/commits")]
    assert [c["sha"] for c in commits] == [HEAD1]
    assert [p["sha"] for p in commits[0]["parents"]] == [BASE_SHA]
    assert commits[0]["parents"][0]["url"].endswith(f"/commits/{BASE_SHA}")
    fake.set_permission(REPO, "alice", "maintain")
    answer = await gh.getitem(f"/repos/{REPO}/collaborators/alice/permission")
    assert (answer["permission"], answer["role_name"]) == ("write", "maintain")
    owner = await gh.getitem(f"/repos/{REPO}/collaborators/octo/permission")
    assert owner["permission"] == "admin"
    with pytest.raises(gidgethub.BadRequest) as caught:
        await gh.getitem(f"/repos/{REPO}/collaborators/nobody/permission")
    assert caught.value.status_code == 404


# ----------------------------------------------------------------------------- writes


async def test_review_with_valid_comments_creates_threads(fake, gh):
    review = await gh.post(f"/repos/{REPO}/pulls/7/reviews", data={
        "commit_id": HEAD1, "event": "COMMENT", "body": "Round 1",
        "comments": [
            {"path": "src/app.py", "line": 3, "side": "RIGHT", "body": "rename?"},
            {"path": "src/app.py", "line": 3, "side": "LEFT", "body": "was fine"},
            {"path": "src/app.py", "start_line": 14, "line": 16, "body": "range"},
        ],
    })
    assert review["state"] == "COMMENTED" and review["user"]["login"] == "roundwise[bot]"
    comments = [c async for c in gh.getiter(f"/repos/{REPO}/pulls/7/comments")]
    assert [c["pull_request_review_id"] for c in comments] == [review["id"]] * 3
    assert [(c["line"], c["side"], c["start_line"]) for c in comments] == [
        (3, "RIGHT", None), (3, "LEFT", None), (16, "RIGHT", 14)]
    assert comments[0]["user"]["type"] == "Bot" and "in_reply_to_id" not in comments[0]
    assert comments[0]["diff_hunk"].endswith("+line three")
    threads = fake.threads(REPO, 7)
    assert [t["comments"][0]["id"] for t in threads] == [c["id"] for c in comments]
    assert all(t["node_id"].startswith("PRRT_") and not t["is_resolved"] for t in threads)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ({"path": "src/app.py", "line": 9}, "Line could not be resolved"),
        ({"path": "src/app.py", "line": 16, "start_line": 3},
         "Pull request review thread start line must be part of the same hunk as the line."),
        ({"path": "src/app.py", "line": 14, "start_line": 16},
         "pull_request_review_thread.start_line must precede the end line."),
        ({"path": "src/app.py", "position": 99}, "Position could not be resolved"),
        ({"path": "nope.py", "line": 1}, "Path could not be resolved"),
        ({"path": "README.md", "line": 1, "side": "RIGHT"}, "Line could not be resolved"),
    ],
)
async def test_review_outside_diff_is_422_and_posts_nothing(fake, gh, bad, error):
    comments = [{"path": "src/app.py", "line": 3, "body": "ok"}, {**bad, "body": "bad"}]
    # gidgethub 6.0 turns list-of-strings errors into ValidationError (the notes' TypeError
    # was an older gidgethub); the bot must handle both.
    with pytest.raises(gidgethub.ValidationError) as caught:
        await gh.post(f"/repos/{REPO}/pulls/7/reviews",
                      data={"event": "COMMENT", "body": "b", "comments": comments})
    assert caught.value.status_code == 422
    assert caught.value.errors == [error]
    assert fake.reviews(REPO, 7) == [] and fake.review_comments(REPO, 7) == []


async def test_review_needs_known_commit_and_body(fake, gh, session):
    headers = {"Authorization": f"token {gh.oauth_token}"}
    url = f"{fake.url}/repos/{REPO}/pulls/7/reviews"
    for body in ({"commit_id": "f" * 40, "event": "APPROVE"}, {"event": "COMMENT"}):
        async with session.post(url, json=body, headers=headers) as response:
            assert response.status == 422
            answer = await response.json()
            assert answer["errors"] and all(isinstance(e, str) for e in answer["errors"])
    assert fake.reviews(REPO, 7) == []


async def test_reply_joins_thread_and_reply_to_reply_is_404(fake, gh):
    human = fake.add_review_comment(REPO, 7, "carol", "src/app.py", 16, "why 15b?")
    reply = await gh.post(f"/repos/{REPO}/pulls/7/comments/{human['id']}/replies",
                          data={"body": "because"})
    assert reply["in_reply_to_id"] == human["id"] and reply["line"] == 16
    with pytest.raises(gidgethub.BadRequest) as caught:
        await gh.post(f"/repos/{REPO}/pulls/7/comments/{reply['id']}/replies",
                      data={"body": "nested"})
    assert caught.value.status_code == 404
    (thread,) = fake.threads(REPO, 7)
    assert [c["id"] for c in thread["comments"]] == [human["id"], reply["id"]]
    human_reply = fake.add_review_comment(REPO, 7, "carol", "", 0, "ok", in_reply_to=reply["id"])
    assert human_reply["in_reply_to_id"] == human["id"]


async def test_issue_comment_create_list_and_patch(fake, gh):
    fake.add_issue_comment(REPO, 7, "alice", "hello bot")
    made = await gh.post(f"/repos/{REPO}/issues/7/comments", data={"body": "<!-- rw --> v1"})
    assert made["user"] == {**made["user"], "login": "roundwise[bot]", "type": "Bot"}
    edited = await gh.patch(f"/repos/{REPO}/issues/comments/{made['id']}",
                            data={"body": "<!-- rw --> v2"})
    assert edited["id"] == made["id"] and edited["body"] == "<!-- rw --> v2"
    bodies = [c["body"] async for c in gh.getiter(f"/repos/{REPO}/issues/7/comments")]
    assert bodies == ["hello bot", "<!-- rw --> v2"]
    with pytest.raises(gidgethub.InvalidField):
        await gh.patch(f"/repos/{REPO}/issues/comments/{made['id']}", data={})


async def test_push_moves_or_outdates_threads(fake, gh):
    moved = fake.add_review_comment(REPO, 7, "carol", "src/app.py", 16, "keep")
    touched = fake.add_review_comment(REPO, 7, "carol", "src/app.py", 3, "fix")
    new_app = "line 0\n" + APP_PY.replace("line 15\n", "line 15\nline 15b\n")
    fake.push(REPO, 7, HEAD2, {"src/app.py": new_app, "src/new.py": "print('hi')"})
    by_id = {c["id"]: c for c in fake.review_comments(REPO, 7)}
    assert (by_id[moved["id"]]["line"], by_id[moved["id"]]["original_line"]) == (17, 16)
    assert by_id[moved["id"]]["commit_id"] == HEAD2
    assert by_id[touched["id"]]["line"] is None
    assert by_id[touched["id"]]["original_commit_id"] == HEAD1
    assert [t["is_outdated"] for t in fake.threads(REPO, 7)] == [False, True]


# ----------------------------------------------------------------------------- GraphQL


async def test_graphql_threads_and_resolve(fake, gh):
    human = fake.add_review_comment(REPO, 7, "carol", "src/app.py", 3, "nit")
    await gh.post(f"/repos/{REPO}/pulls/7/reviews", data={
        "event": "COMMENT", "body": "r", "comments": [{"path": "src/new.py", "line": 1,
                                                      "body": "newline"}]})
    endpoint = fake.url + "/graphql"
    owner, name = REPO.split("/")
    data = await gh.graphql(THREADS_QUERY, endpoint=endpoint, owner=owner, name=name, number=7,
                            first=1)
    page = data["repository"]["pullRequest"]["reviewThreads"]
    assert page["pageInfo"]["hasNextPage"] is True
    (first,) = page["nodes"]
    assert first["comments"]["nodes"][0]["fullDatabaseId"] == str(human["id"])
    assert first["comments"]["nodes"][0]["author"] == {"login": "carol"}
    data = await gh.graphql(THREADS_QUERY, endpoint=endpoint, owner=owner, name=name, number=7,
                            cursor=page["pageInfo"]["endCursor"])
    (second,) = data["repository"]["pullRequest"]["reviewThreads"]["nodes"]
    assert second["comments"]["nodes"][0]["author"]["login"] == "roundwise"  # no [bot] here
    assert (second["path"], second["line"], second["isOutdated"]) == ("src/new.py", 1, False)

    resolved = await gh.graphql(RESOLVE, endpoint=endpoint, id=second["id"])
    assert resolved == {"resolveReviewThread": {"thread": {"id": second["id"], "isResolved": True}}}
    assert fake.threads(REPO, 7)[1]["resolved_by"] == "roundwise[bot]"
    with pytest.raises(gidgethub.QueryError) as caught:
        await gh.graphql(RESOLVE, endpoint=endpoint, id="PRRT_missing")
    assert caught.value.response["data"] == {"resolveReviewThread": None}
    with pytest.raises(gidgethub.QueryError, match="doesn't exist"):
        await gh.graphql("query { repository(owner: \"octo\", name: \"widgets\") { bogus } }",
                         endpoint=endpoint)


async def test_graphql_without_token_is_auth_failure(fake, session):
    anonymous = GitHubAPI(session, "roundwise-test", base_url=fake.url)
    with pytest.raises(gidgethub.GraphQLAuthorizationFailure):
        await anonymous.graphql(RESOLVE, endpoint=fake.url + "/graphql", id="x")


# ----------------------------------------------------------------------------- faults & limits


async def test_scripted_faults_map_to_gidgethub_exceptions(fake, gh):
    fake.fail_primary_rate_limit("GET", r"/pulls/7$")
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem(f"/repos/{REPO}/pulls/7")
    fake.fail_next("GET", r"/pulls/7$", 502, times=2)
    for _ in range(2):
        with pytest.raises(gidgethub.GitHubBroken):
            await gh.getitem(f"/repos/{REPO}/pulls/7")
    fake.fail_secondary_rate_limit("POST", r"/reviews$", retry_after=7, status=429)
    with pytest.raises(gidgethub.BadRequest) as caught:
        await gh.post(f"/repos/{REPO}/pulls/7/reviews", data={"event": "APPROVE"})
    assert caught.value.status_code == 429 and caught.value.headers["retry-after"] == "7"
    assert (await gh.getitem(f"/repos/{REPO}/pulls/7"))["number"] == 7
    assert fake.reviews(REPO, 7) == []


async def test_rate_limit_headers_and_unknown_route(fake, gh, session):
    headers = {"Authorization": f"token {gh.oauth_token}"}
    seen = []
    for _ in range(2):
        async with session.get(f"{fake.url}/repos/{REPO}/pulls/7", headers=headers) as response:
            assert response.headers["x-ratelimit-resource"] == "core"
            seen.append(int(response.headers["x-ratelimit-remaining"]))
    assert seen[1] == seen[0] - 1
    async with session.get(f"{fake.url}/repos/{REPO}/nothing/here", headers=headers) as response:
        assert response.status == 404
        assert (await response.json())["message"] == "Not Found"
    fake.set_rate_limit(0)
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem(f"/repos/{REPO}/pulls/7")


# ----------------------------------------------------------------------------- payloads


def test_signature_matches_github_test_vector():
    assert payloads.sign(b"Hello, World!", "It's a Secret to Everybody") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")


async def test_payloads_match_fake_state_and_verify(fake):
    fake.push(REPO, 7, HEAD2, {"src/app.py": APP_PY + "more\n"})
    sync = payloads.pull_request(fake, REPO, 7, "synchronize")
    assert (sync["before"], sync["after"]) == (HEAD1, HEAD2)
    assert sync["installation"]["id"] == 42 and sync["repository"]["full_name"] == REPO
    assert sync["pull_request"]["head"]["sha"] == HEAD2 and sync["sender"]["type"] == "User"
    comment = fake.add_issue_comment(REPO, 7, "alice", "@roundwise why?")
    delivery = payloads.issue_comment(fake, REPO, 7, comment)
    assert delivery["issue"]["number"] == 7 and "url" in delivery["issue"]["pull_request"]
    review = payloads.review(fake, REPO, 7, fake.add_review(REPO, 7, "bob", "APPROVE", "lgtm"))
    assert review["review"]["state"] == "approved"
    first = fake.add_review_comment(REPO, 7, "bob", "src/app.py", 21, "hm")
    thread = fake.resolve_thread(REPO, 7, first["id"], "alice")
    resolved = payloads.review_thread(fake, REPO, 7, thread, "resolved")
    assert resolved["thread"]["node_id"].startswith("PRRT_")
    assert resolved["sender"]["login"] == "alice"
    body = payloads.encode(delivery)
    head = {k.lower(): v for k, v in payloads.headers("issue_comment", body, "s3cret").items()}
    event = gidgethub.sansio.Event.from_http(head, body, secret="s3cret")
    assert event.event == "issue_comment" and event.data["comment"]["id"] == comment["id"]
    installed = payloads.installation("created", 42, "octo", repositories=[REPO])
    assert installed["installation"]["account"]["login"] == "octo"
    assert installed["repositories"][0]["full_name"] == REPO


# ----------------------------------------------------------------------------- git_diff


texts = st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", ""]), max_size=12).map(
    lambda lines: "\n".join(lines)))


def text_lines(text: str | None) -> list[str]:
    """A text's lines without terminators ("a\n" and "a" both give ["a"])."""
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


@settings(max_examples=150, deadline=None)
@given(old=texts, new=texts)
def test_git_diff_parses_and_replays(old, new):
    diff = git_diff({"f.txt": old}, {"f.txt": new})
    if old == new:
        assert diff == ""
        return
    (patched,) = unidiff.PatchSet(diff)
    assert ("new file mode" in diff) == (old is None)
    assert ("deleted file mode" in diff) == (new is None)
    if old is None:
        assert patched.is_added_file
    result = text_lines(old)
    for hunk in reversed(list(patched)):
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        target = [line.value.rstrip("\n") for line in hunk if line.is_added or line.is_context]
        result[start:start + hunk.source_length] = target
    assert result == text_lines(new)


# ----------------------------------------------------------------------------- issue 9 knobs


async def test_a_lost_response_is_applied_and_a_slow_one_arrives_late(fake, gh):
    fake.lose_response_next("POST", r"/issues/7/comments$")
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.post(f"/repos/{REPO}/issues/7/comments", data={"body": "once"})
    assert [c["body"] for c in fake.issue_comments(REPO, 7)] == ["once"]  # applied anyway
    assert fake.lost_responses == 1
    fake.lose_response_next("POST", r"/issues/7/comments$", timeout=0.3)
    started = time.monotonic()
    with pytest.raises(gidgethub.GitHubBroken):  # a client that waits gets the 502 late
        await gh.post(f"/repos/{REPO}/issues/7/comments", data={"body": "twice"})
    assert time.monotonic() - started >= 0.3 and len(fake.issue_comments(REPO, 7)) == 2
    fake.slow_next("GET", r"/pulls/7$", 0.3)
    started = time.monotonic()
    assert (await gh.getitem(f"/repos/{REPO}/pulls/7"))["number"] == 7
    assert time.monotonic() - started >= 0.3


async def test_deleting_a_thread_root_deletes_the_thread(fake, gh):
    top = fake.add_review_comment(REPO, 7, "bob", "src/new.py", 1, "Why print?")
    reply = fake.add_review_comment(REPO, 7, "alice", "", 0, "Debugging.", in_reply_to=top["id"])
    fake.delete_review_comment(REPO, 7, reply["id"])
    assert [c["id"] for c in fake.review_comments(REPO, 7)] == [top["id"]]
    fake.delete_review_comment(REPO, 7, top["id"])
    assert fake.review_comments(REPO, 7) == [] and fake.threads(REPO, 7) == []
    with pytest.raises(gidgethub.BadRequest):  # replying to it is GitHub's 404
        await gh.post(f"/repos/{REPO}/pulls/7/comments/{top['id']}/replies",
                      data={"body": "x"})


# ----------------------------------------------------------------------------- budgets, 304s


async def test_rate_limit_budgets_are_per_installation_and_the_app(fake, session, keys):
    fake.add_installation(43, "other")
    fake.add_repo("other/gadgets", 43)
    app = GitHubAPI(session, "roundwise-test", base_url=fake.url)
    other = (await gidgethub.apps.get_installation_access_token(
        app, installation_id="43", app_id=str(APP_ID), private_key=keys[0]))["token"]
    fake.set_rate_limit(0, installation=42, reset_in=600)
    mine = await install_token(fake, session, keys)  # the App's own budget: still served
    spent = {"Authorization": f"token {mine}"}
    async with session.get(f"{fake.url}/repos/{REPO}/pulls/7", headers=spent) as response:
        assert response.status == 403 and response.headers["x-ratelimit-remaining"] == "0"
        assert (await response.json())["message"] == \
            "API rate limit exceeded for installation ID 42."
    async with session.get(f"{fake.url}/repos/other/gadgets/collaborators/other/permission",
                           headers={"Authorization": f"token {other}"}) as response:
        assert response.status == 200  # served, and charged to 43 alone
        assert response.headers["x-ratelimit-remaining"] == str(fake.rate_limit - 1)
    fake.set_rate_limit(0, resource="graphql", installation=42, reset_in=600)
    async with session.post(f"{fake.url}/graphql", headers=spent,
                            json={"query": RESOLVE, "variables": {"id": "x"}}) as response:
        assert response.status == 200 and response.headers["x-ratelimit-remaining"] == "0"
        assert response.headers["x-ratelimit-resource"] == "graphql"
        assert (await response.json())["errors"][0]["type"] == "RATE_LIMITED"
    assert fake.usage(42)["charged"] == 0 and fake.usage(42)["app_jwt"] == 1
    assert fake.usage(43)["charged"] == 1 and fake.usage()["charged"] == 2  # two tokens


async def test_conditional_gets_get_free_304s_until_the_answer_changes(fake, gh, session):
    auth = {"Authorization": f"token {gh.oauth_token}"}
    url = f"{fake.url}/repos/{REPO}/pulls/7"
    async with session.get(url, headers=auth) as response:
        etag, modified = response.headers["ETag"], response.headers["Last-Modified"]
        remaining = int(response.headers["x-ratelimit-remaining"])
    async with session.get(url, headers={**auth, "Accept": "application/vnd.github.diff"}
                           ) as response:
        assert response.headers["ETag"] != etag  # one per media type
    for conditional in ({"If-None-Match": etag}, {"If-None-Match": f'"x", {etag}'},
                        {"If-Modified-Since": modified}):
        async with session.get(url, headers={**auth, **conditional}) as response:
            assert response.status == 304 and await response.read() == b""
            assert int(response.headers["x-ratelimit-remaining"]) == remaining - 1
    fake.add_issue_comment(REPO, 7, "bob", "new")  # the pull's comment count changes
    async with session.get(url, headers={**auth, "If-None-Match": etag}) as response:
        assert response.status == 200 and response.headers["ETag"] != etag
    assert fake.usage(42)["not_modified"] == 3


async def test_dismissing_a_comment_or_a_dismissed_review_is_422(fake, gh):
    url = f"/repos/{REPO}/pulls/7/reviews"
    comment = await gh.post(url, data={"event": "COMMENT", "body": "note"})
    asking = await gh.post(url, data={"event": "REQUEST_CHANGES", "body": "fix"})
    data = {"message": "done"}
    with pytest.raises(gidgethub.BadRequest) as caught:
        await gh.put(f"{url}/{comment['id']}/dismissals", data=data)
    assert caught.value.status_code == 422
    assert (await gh.put(f"{url}/{asking['id']}/dismissals", data=data))["state"] == "DISMISSED"
    with pytest.raises(gidgethub.BadRequest) as caught:
        await gh.put(f"{url}/{asking['id']}/dismissals", data=data)
    assert caught.value.status_code == 422


async def test_contents_over_one_megabyte_come_without_content(fake, gh):
    fake.push(REPO, 7, HEAD2, {"big.txt": "x" * (1024 * 1024 + 1)})
    answer = await gh.getitem(f"/repos/{REPO}/contents/big.txt?ref={HEAD2}")
    assert (answer["encoding"], answer["content"], answer["size"]) == ("none", "", 1024 * 1024 + 1)
    raw = await gh.getitem(f"/repos/{REPO}/contents/big.txt?ref={HEAD2}",
                           accept="application/vnd.github.raw")
    assert len(raw) == 1024 * 1024 + 1


def test_conditional_cache_is_bounded_and_hands_out_copies():
    from bot.github.client import ConditionalCache

    cache = ConditionalCache(size=3, max_bytes=4000)
    scope = cache.scope(42, "json")
    scope["/a"] = ('W/"1"', None, [{"n": 1}], None)
    got = scope["/a"][2]
    got[0]["n"] = 99  # a caller changing its answer
    assert scope["/a"][2] == [{"n": 1}]
    for name in "bcd":
        scope[f"/{name}"] = ('W/"2"', None, {"k": name}, None)
    assert len(cache) == 3 and "/a" not in scope  # least recently used went first
    scope["/big"] = ('W/"3"', None, "x" * 2000, None)  # over a quarter of the bytes: not kept
    assert "/big" not in scope and cache.bytes <= 4000
    assert "/b" not in cache.scope(43, "json")  # installations do not share answers
