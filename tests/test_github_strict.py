"""The bot against a fake GitHub that fails the way GitHub fails, through the real server.

Rate limits per installation (one spent, another served; App-JWT calls counted apart),
conditional reads answered 304 for free, GraphQL's spent budget (HTTP 200 with errors), a
secondary limit that gives only a reset time, an HTML 502 on ``/graphql``, a dismissal GitHub
refuses, files over 1 MB, and a repository name that tries to point the bot's calls at another
endpoint.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from bench.fake_github.state import LINE_ERROR, START_ORDER_ERROR, to_sentence
from bench.replay import payloads
from bot.github import GitHubApp

from .server_kit import (
    HEAD2,
    HEAD3,
    INSTALLATION,
    NUMBER,
    REPO,
    ROUND2_FILES,
    SCALE_ROUND1,
    SCALE_ROUND3,
    Tap,
    open_pr,
    running_bot,
    setup_pr,
)

pytestmark = pytest.mark.asyncio

OTHER, OTHER_INSTALLATION = "other/gadgets", 78


def arrivals(fake, method: str, suffix: str) -> list[float]:
    """When each matching request reached the fake (faults included), as the fake's clock says;
    filled in as requests arrive."""
    seen: list[float] = []
    take = fake._take_fault

    def watch(verb, paths):
        if verb == method and any(p.endswith(suffix) for p in paths):
            seen.append(fake._now())
        return take(verb, paths)

    fake._take_fault = watch
    return seen


async def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.05)


# -- rate-limit budgets ------------------------------------------------------------------------


async def test_one_installation_spent_the_other_still_served(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        fake.add_installation(OTHER_INSTALLATION, "other")
        open_pr(fake, repo=OTHER)  # same files, in the other account
        fake._repos[OTHER].installation_id = OTHER_INSTALLATION
        fake.set_rate_limit(0, installation=INSTALLATION, reset_in=3600)
        await bot.pull_request("opened")
        await bot.pull_request("opened", repo=OTHER)
        await wait_for(lambda: any(j["repo"] == OTHER and j["status"] == "done"
                                   for j in bot.jobs()))
        await wait_for(lambda: any(j["repo"] == REPO and j["status"] == "queued"
                                   and j["error"] for j in bot.jobs()))
        # the other installation's round ran in full
        assert len(bot.bot_reviews(repo=OTHER)) == 1 and bot.bot_comments(repo=OTHER)
        # the spent one waits for its reset (about an hour), not for the queue's backoff
        [waiting] = [j for j in bot.jobs() if j["repo"] == REPO]
        assert "rate limited" in waiting["error"] and waiting["run_after"] > time.time() + 3000
        assert bot.bot_reviews() == [] and bot.bot_comments() == []
        # its token was still minted: App-JWT calls spend the App's own budget
        spent, served = fake.usage(INSTALLATION), fake.usage(OTHER_INSTALLATION)
        assert spent["app_jwt"] == 1 and spent["charged"] == 0 and spent["requests"] >= 1
        assert served["charged"] > 10 and fake.usage()["charged"] == 2  # two token requests


async def test_repeated_reads_are_conditional_and_304s_are_free(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake, tap = bot.fake, Tap(bot.fake)
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        first = fake.usage(INSTALLATION)
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        used = fake.usage(INSTALLATION)
        conditional = [path for method, path, headers in tap.seen
                       if method == "GET" and "If-None-Match" in headers]
        assert any(p.endswith(f"/pulls/{NUMBER}/comments") for p in conditional)
        assert any(p.endswith(f"/pulls/{NUMBER}") for p in conditional)
        assert used["not_modified"] > first["not_modified"]
        assert used["charged"] == used["requests"] - used["not_modified"]
        # a changed list is never answered from the cache: a person's comment is seen
        bot.fake.add_issue_comment(REPO, NUMBER, "sam", "/roundwise status")
        comments = await bot.state.github.repo(INSTALLATION, REPO).issue_comments(NUMBER)
        assert comments[-1]["body"] == "/roundwise status"


# -- GitHub's failure shapes -------------------------------------------------------------------


async def test_graphql_html_502_is_retried_like_a_json_502(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        graphql = arrivals(fake, "POST", "/graphql")
        fake.fail_next("POST", r"^/graphql$", 502,
                       "<html><head><title>502 Bad Gateway</title></head></html>")
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert [(j["status"], j["attempts"]) for j in bot.jobs()][-1] == ("done", 1)
        assert len(graphql) >= 2  # the 502, then the same query again


async def test_graphql_spent_budget_waits_for_the_reset(tmp_path):
    """GitHub answers a spent GraphQL budget with HTTP 200, a RATE_LIMITED error and
    remaining 0: the bot waits for the reset instead of asking again at once."""
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        fake.set_rate_limit(0, resource="graphql", installation=INSTALLATION, reset_in=2)
        until = fake._bucket(f"installation:{INSTALLATION}", "graphql").reset
        graphql = arrivals(fake, "POST", "/graphql")
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert len([t for t in graphql if t < until]) == 1  # asked once while spent
        assert len(graphql) >= 2


async def test_graphql_rate_limit_message_without_a_type_is_a_rate_limit(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        fake.fail_next("POST", r"^/graphql$", 200, {"errors": [{
            "message": f"API rate limit already exceeded for installation ID {INSTALLATION}."}]},
            headers={"x-ratelimit-remaining": "0",
                     "x-ratelimit-reset": str(int(time.time()) + 1)})
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert [j["status"] for j in bot.jobs()] == ["done", "done"]


async def test_secondary_limit_with_only_a_reset_time_is_waited_out(tmp_path):
    """A secondary limit without retry-after, remaining 0 and a reset further off than the
    client will sleep: the job comes back after the reset, not at the queue's backoff
    (requests made while limited can get an App banned)."""
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        posts = arrivals(fake, "POST", f"/pulls/{NUMBER}/reviews")
        fake.fail_secondary_rate_limit("POST", rf"/pulls/{NUMBER}/reviews$", retry_after=None,
                                       reset_in=7)
        until = fake._faults[-1].until
        await bot.pull_request("opened")
        await bot.idle(timeout=30)
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert len([t for t in posts if t < until]) == 1  # no call while limited
        assert len(bot.bot_reviews()) == 1


async def test_a_refused_dismissal_does_not_keep_the_others(tmp_path):
    """Someone dismisses one of the bot's change requests while the bot is dismissing them:
    GitHub refuses that one with 422, and the bot still dismisses the rest."""
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        setup_pr(fake, "fail_on: Major\nreview_event: request_changes\n")
        await bot.pull_request("opened")
        await bot.idle()
        fake.push(REPO, NUMBER, HEAD2, {**SCALE_ROUND1, "docs/notes.md": "Scaling.\n"})
        await bot.pull_request("synchronize")
        await bot.idle()
        asking = [r for r in bot.bot_reviews() if r["state"] == "CHANGES_REQUESTED"]
        assert len(asking) == 2
        tap = Tap(fake)
        tap.hold("PUT", r"/dismissals$")
        fake.push(REPO, NUMBER, HEAD3, SCALE_ROUND3)
        await bot.pull_request("synchronize")
        await asyncio.wait_for(tap.held.wait(), 20)
        fake.dismiss_review(REPO, NUMBER, asking[0]["id"], "maintainer")
        tap.release()
        await bot.idle()
        states = {r["id"]: r["state"] for r in bot.bot_reviews()}
        assert [states[r["id"]] for r in asking] == ["DISMISSED", "DISMISSED"]
        refused = [m for m, p, _ in tap.seen if m == "PUT" and p.endswith("/dismissals")]
        assert len(refused) == 2


async def test_files_over_one_megabyte_are_read_raw(tmp_path):
    """GitHub's contents JSON carries no content for files of 1-100 MB (encoding "none"):
    the bot reads the raw media type instead."""
    big = "require_tests: true\n" + "# padding padding padding padding\n" * 32_000
    assert len(big) > 1024 * 1024
    async with running_bot(tmp_path) as bot:
        fake, tap = bot.fake, Tap(bot.fake)
        open_pr(fake, default_files={".github/roundwise.yml": big})
        await bot.pull_request("opened")
        await bot.idle()
        reads = [h.get("Accept", "") for m, p, h in tap.seen
                 if m == "GET" and p.endswith("/contents/.github/roundwise.yml")]
        assert reads[0].endswith("json") and any("raw" in a for a in reads[1:])
        [summary] = bot.bot_comments()
        assert "larger than" in summary["body"]  # the settings' size limit saw the text
        assert [r["status"] for r in bot.rounds()] == ["complete"]


async def test_githubs_joined_422_messages_fall_back_to_one_comment_at_a_time(tmp_path):
    """GitHub joins several refusals into one string ("... and ..."): the bot does not parse
    them, it posts the comments one at a time and keeps each one GitHub takes."""
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        joined = to_sentence([LINE_ERROR, START_ORDER_ERROR])
        assert joined == f"{LINE_ERROR} and {START_ORDER_ERROR}"
        bot.fake.fail_next("POST", rf"/pulls/{NUMBER}/reviews$", 422, {
            "message": "Unprocessable Entity", "errors": [joined],
            "documentation_url": "https://docs.github.com/rest/pulls/reviews", "status": "422"})
        await bot.pull_request("opened")
        await bot.idle()
        sent = [r.body for r in bot.calls("POST", rf"/pulls/{NUMBER}/reviews$")]
        assert [len(b["comments"]) for b in sent] == [2, 1, 1]
        assert len(bot.bot_comments("review")) == 2
        assert [r["status"] for r in bot.rounds()] == ["complete"]


# -- names that would leave the repository -----------------------------------------------------


@pytest.mark.parametrize("name", ["../../user/repos#x/y", "octo/widgets/../../../user",
                                  "octo/..", "oc to/widgets", "octo/wid%2Fgets"])
async def test_repository_name_cannot_point_calls_at_another_endpoint(tmp_path, name):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        payload = payloads.pull_request(bot.fake, REPO, NUMBER, "opened")
        payload["repository"]["full_name"] = name
        status, answer = await bot.deliver("pull_request", payload)
        assert status == 400 and "full_name" in answer["error"]
        await asyncio.sleep(0.2)
        assert bot.jobs() == []
        assert not any(r.path.startswith("/user") for r in bot.fake.requests)


async def test_client_refuses_bad_names_and_quotes_every_segment(tmp_path):
    async with running_bot(tmp_path) as bot:
        github: GitHubApp = bot.state.github
        for bad in ("../../user/repos#x/y", "octo/..", "-octo/widgets", "octo/", "octo"):
            with pytest.raises(ValueError):
                github.repo(INSTALLATION, bad)
        client = github.repo(INSTALLATION, "octo/wid.get_s-1")
        assert client._url("/pulls/1") == "/repos/octo/wid.get_s-1/pulls/1"
        assert github.repo(INSTALLATION, "octo_acme/x")._url("") == "/repos/octo_acme/x"
