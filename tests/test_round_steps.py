"""A round in four steps over the forge port, on the fake GitHub over HTTP, and its typed plan."""

from __future__ import annotations

import json

import aiohttp
import pytest

from bench.fake_github import FakeGitHub
from bot import forge as port
from bot.github import GitHubApp, GitHubForge
from bot.github.errors import GitHubError, NotFound, RateLimited, Unprocessable, error_for
from bot.review.engine import offline_engine
from bot.round import RoundPlan, commit, gather, plan, publish, read_settings
from tracker.lifecycle import State

from .server_kit import (
    APP_ID,
    FAST_RETRY,
    HEAD1,
    HEAD2,
    INSTALLATION,
    NUMBER,
    REPO,
    ROUND2_FILES,
    app_keys,
    open_pr,
)

BOT = {"roundwise[bot]", "roundwise"}


def test_github_errors_are_the_forge_error_tree():
    assert isinstance(error_for("x", status=404), port.NotFound)
    assert isinstance(error_for("x", status=422), port.Unprocessable)
    limited = error_for("x", status=429, retryable=True)
    assert isinstance(limited, RateLimited) and isinstance(limited, port.RateLimited)
    assert isinstance(error_for("x", status=502), port.Unavailable)
    other = error_for("x", status=418)
    assert type(other) is GitHubError and other.status == 418
    assert NotFound("gone").status == 404 and Unprocessable("no").status == 422


async def one_round(forge, ledger, number_of_round: int, head: str):
    pull = await forge.pull(NUMBER)
    assert pull.head_sha == head
    settings, error = await read_settings(forge)
    pr = ledger.pull_request(REPO, NUMBER, installation_id=INSTALLATION, title=pull.title)
    rnd = ledger.begin_round(pr["id"], pull.head_sha, pull.base_sha)
    assert rnd["number"] == number_of_round
    inputs = await gather(forge, ledger, pr, pull, rnd["number"], settings)
    the_plan = await plan(offline_engine(), inputs)
    record = await publish(forge, ledger, pr, rnd["number"], head, the_plan, bot_logins=BOT,
                           settings_error=error)
    commit(ledger, pr["id"], rnd["number"], the_plan, record, bot_login="roundwise[bot]")
    return pr, the_plan, record


async def test_gather_plan_publish_commit_on_the_fake_github(ledger):
    private, public = app_keys()
    async with FakeGitHub(APP_ID, public) as fake, aiohttp.ClientSession() as session:
        open_pr(fake)
        forge = GitHubForge(GitHubApp(session, APP_ID, private, fake.url, retry=FAST_RETRY)
                            .repo(INSTALLATION, REPO))
        pull = await forge.pull(NUMBER)
        assert (pull.number, pull.title, pull.author, pull.open) == (NUMBER, "Scale values",
                                                                      "sam", True)
        assert await forge.file_text("no/such/file.py") is None
        with pytest.raises(port.NotFound) as caught:
            await forge.pull(999)
        assert caught.value.status == 404

        pr, first, record = await one_round(forge, ledger, 1, HEAD1)
        assert first.new and record.new == {i.key: record.new[i.key] for i in first.new
                                            if i.finding.path}
        # the plan is a typed value that survives JSON unchanged
        again = RoundPlan.from_json(json.loads(json.dumps(first.to_json())))
        assert again == first
        # commit put the new defects and their inline comments into the ledger
        for item in first.new:
            defect = ledger.defect(pr["id"], item.key)
            assert defect.state is State.NEW
            if item.key in record.new:
                assert ledger.thread_root(pr["id"], item.key)["id"] == record.new[item.key]
        posted = [c for c in fake.review_comments(REPO, NUMBER) if "**D" in c["body"]]
        assert {c["id"] for c in posted} == set(record.new.values())

        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        _, second, record2 = await one_round(forge, ledger, 2, HEAD2)
        resolved = [d.key for d in second.decisions if d.state is State.RESOLVED]
        assert resolved  # the second push fixes the print
        assert record2.threads and set(record2.threads) == {k for k in resolved
                                                            if k in record.new}
        threads = await forge.review_threads(NUMBER)
        assert all(t.resolved for t in threads if t.id in record2.threads.values())
        assert [r["status"] for r in ledger.rounds(pr["id"])] == ["complete", "complete"]
