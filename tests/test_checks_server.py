"""The ``roundwise`` check run through the real server and the fake GitHub's check-runs API:
its lifecycle and conclusion per ``fail_on`` across three rounds, more than 50 annotations,
re-runs, a failed round, and people resolving defects between pushes."""

from __future__ import annotations

import asyncio

import pytest

from bench.replay import payloads

from .conftest import needs_webhook_fixtures
from .server_kit import (
    BASE_SHA,
    HEAD1,
    HEAD2,
    HEAD3,
    INSTALLATION,
    NUMBER,
    REPO,
    SCALE_ROUND2,
    SCALE_ROUND3,
    Tap,
    fixture,
    push,
    repoint,
    running_bot,
    setup_pr,
)

pytestmark = pytest.mark.asyncio

# Round 1: a breakpoint (Major) and a debug print (Minor); round 2 drops the breakpoint;
# round 3 drops the print (server_kit's SCALE_ROUND1..3).


def runs(bot, head: str) -> list[dict]:
    return [r for r in bot.fake.check_runs(REPO, head) if r["name"] == "roundwise"]


@pytest.mark.parametrize("fail_on, expected", [
    (None, ["neutral", "neutral", "success"]),
    ("Major", ["failure", "neutral", "success"]),
    ("Minor", ["failure", "failure", "success"]),
])
async def test_check_run_per_head_with_conclusion_from_fail_on(tmp_path, fail_on, expected):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, f"fail_on: {fail_on}\n" if fail_on else "")
        await bot.pull_request("opened")
        await bot.idle()
        await push(bot, HEAD2, SCALE_ROUND2)
        await push(bot, HEAD3, SCALE_ROUND3)
        seen = []
        for head in (HEAD1, HEAD2, HEAD3):
            [run] = runs(bot, head)  # one check run per reviewed head
            assert run["status"] == "completed" and run["completed_at"]
            seen.append(run["conclusion"])
        assert seen == expected
        first = runs(bot, HEAD1)[0]["output"]
        # The severe part counts what the gate looks at (Major and worse without fail_on).
        assert first["title"] == ("2 open (1 Major, 1 Minor)" if fail_on == "Minor"
                                  else "2 open (1 Major)")
        assert "D1" in first["text"] and "/blob/" + HEAD1 + "/app/core.py#L6" in first["text"]
        assert runs(bot, HEAD2)[0]["output"]["title"] == ("1 open (1 Minor), 1 resolved"
                                                          if fail_on == "Minor"
                                                          else "1 open, 1 resolved")
        assert runs(bot, HEAD3)[0]["output"]["title"] == "no open defects, 2 resolved"
        notes = bot.fake.check_annotations(runs(bot, HEAD1)[0]["id"])
        # red only for what fails the check; the rest are warnings or notices
        assert [(a["start_line"], a["annotation_level"]) for a in notes] == {
            None: [(6, "warning"), (8, "notice")], "Major": [(6, "failure"), (8, "notice")],
            "Minor": [(6, "failure"), (8, "failure")]}[fail_on]


async def test_check_is_in_progress_while_the_round_runs(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Major\n")
        tap = Tap(bot.fake)
        tap.hold("POST", r"/pulls/\d+/reviews$")
        await bot.pull_request("opened")
        await asyncio.wait_for(tap.held.wait(), 10)
        [run] = runs(bot, HEAD1)
        assert (run["status"], run["conclusion"], run["started_at"] is not None) == \
            ("in_progress", None, True)
        tap.release()
        await bot.idle()
        [run] = runs(bot, HEAD1)
        assert (run["status"], run["conclusion"]) == ("completed", "failure")


async def test_more_than_fifty_annotations_are_sent_in_batches(tmp_path):
    files = {f"app/m{i:03}.py": "def f(x):\n    print(x)\n    return x\n" for i in range(120)}
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "max_comments: 200\nfail_on: Minor\n", files=files)
        await bot.pull_request("opened")
        await bot.idle()
        [run] = runs(bot, HEAD1)
        count = len([d for d, s in bot.states().items() if s == "New"])
        assert count == 120
        notes = bot.fake.check_annotations(run["id"])
        assert len(notes) == count and run["output"]["annotations_count"] == count
        assert sorted(a["path"] for a in notes) == sorted(files)
        # GitHub takes at most 50 per request: the fake refuses more, the bot sends 3 PATCHes.
        patches = bot.calls("PATCH", rf"/check-runs/{run['id']}$")
        assert [len(p.body["output"].get("annotations", [])) for p in patches] == [50, 50, 20]
        assert run["conclusion"] == "failure"


async def test_fake_refuses_more_than_fifty_annotations_in_one_request(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        client = bot.state.github.repo(INSTALLATION, REPO)
        note = {"path": "app/core.py", "start_line": 1, "end_line": 1,
                "annotation_level": "warning", "message": "x"}
        from bot.forge import Unprocessable

        with pytest.raises(Unprocessable):
            await client.create_check_run({"name": "x", "head_sha": HEAD1, "output": {
                "title": "t", "summary": "s", "annotations": [note] * 51}})
        with pytest.raises(Unprocessable):  # completed needs a conclusion
            await client.create_check_run({"name": "x", "head_sha": HEAD1,
                                           "status": "completed"})
        assert bot.fake.check_runs(REPO) == []


async def test_rerequested_check_run_and_suite_review_the_head_again(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Major\n")
        await bot.pull_request("opened")
        await bot.idle()
        [run] = runs(bot, HEAD1)
        payload = {"action": "rerequested", "check_run": {
            **run, "pull_requests": []},  # as from a fork: the bot finds the PR in its ledger
            "repository": bot.fake.repo_json(REPO),
            "installation": {"id": INSTALLATION}, "sender": bot.fake.user_json("sam")}
        status, _ = await bot.deliver("check_run", payload)
        assert status == 202
        await bot.idle()
        assert [r["number"] for r in bot.rounds()] == [1, 2]
        assert len(runs(bot, HEAD1)) == 2  # a fresh check run for the new round
        suite = {"action": "rerequested", "check_suite": {
            "id": 1, "head_sha": HEAD1, "pull_requests": [
                {"number": NUMBER, "head": {"sha": HEAD1}, "base": {"sha": BASE_SHA}}],
            "app": {"id": 4242}}, "repository": bot.fake.repo_json(REPO),
            "installation": {"id": INSTALLATION}, "sender": bot.fake.user_json("sam")}
        status, _ = await bot.deliver("check_suite", suite)
        assert status == 202
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"] * 3
        assert all(r["status"] == "completed" for r in runs(bot, HEAD1))


async def test_a_failed_round_completes_its_check_as_neutral_with_the_reason(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Major\n")
        # The review is refused for good (a 403 is not retried): the round fails.
        bot.fake.fail_next("POST", r"/pulls/\d+/reviews$", 403,
                           {"message": "Resource not accessible by integration",
                            "documentation_url": "https://docs.github.com/rest"}, times=20)
        await bot.pull_request("opened")
        await bot.idle()
        assert bot.rounds()[0]["status"] == "failed"
        [run] = runs(bot, HEAD1)
        assert (run["status"], run["conclusion"]) == ("completed", "neutral")
        assert "Round 1 failed" in run["output"]["summary"]
        assert "Resource not accessible by integration" in run["output"]["summary"]


async def test_a_person_resolving_the_blocking_defect_updates_the_check(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Major\n")
        bot.fake.set_permission(REPO, "maintainer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        [run] = runs(bot, HEAD1)
        assert run["conclusion"] == "failure"
        major = next(d.key for d in bot.ledger.defects(
            bot.ledger.find_pull_request(REPO, NUMBER)["id"]) if d.severity == "Major")
        await bot.comment("maintainer", f"/roundwise ignore {major}")
        await bot.idle()
        [run] = runs(bot, HEAD1)
        assert (run["conclusion"], run["output"]["title"]) == ("neutral", "1 open, 1 ignored")
        # An unrelated comment changes nothing, so the check is not touched again.
        updates = bot.fake.check_run_updates(run["id"])
        await bot.comment("sam", "thanks!")
        await bot.idle()
        assert bot.fake.check_run_updates(run["id"]) == updates


async def test_thread_resolved_by_a_person_updates_the_check(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Major\n")
        await bot.pull_request("opened")
        await bot.idle()
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        major = next(d for d in bot.ledger.defects(pr_id) if d.severity == "Major")
        root = bot.ledger.thread_root(pr_id, major.key)
        thread = bot.fake.resolve_thread(REPO, NUMBER, root["id"], "sam")
        status, _ = await bot.deliver("pull_request_review_thread", payloads.review_thread(
            bot.fake, REPO, NUMBER, thread, "resolved", sender="sam"))
        assert status == 202
        await bot.idle()
        [run] = runs(bot, HEAD1)
        assert (run["conclusion"], run["output"]["title"]) == ("neutral", "1 open, 1 resolved")


async def test_review_event_request_changes_then_dismissed_when_fixed(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Major\nreview_event: request_changes\n")
        await bot.pull_request("opened")
        await bot.idle()
        states = [r["state"] for r in bot.bot_reviews()]
        assert states == ["COMMENTED", "CHANGES_REQUESTED"]
        assert "D1 (Major)" in bot.bot_reviews()[-1]["body"]
        await push(bot, HEAD2, SCALE_ROUND2)  # the breakpoint is gone; the Minor print stays
        states = [r["state"] for r in bot.bot_reviews()]
        assert "CHANGES_REQUESTED" not in states and states.count("DISMISSED") == 1
        assert "APPROVED" not in states


async def test_without_review_event_the_bot_only_comments(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Major\n")
        await bot.pull_request("opened")
        await bot.idle()
        assert [r["state"] for r in bot.bot_reviews()] == ["COMMENTED"]


async def test_fail_on_and_review_event_settings_are_checked():
    from bot.config.repo_settings import SettingsError, parse_settings

    assert parse_settings("fail_on: major\n").fail_on == "Major"
    assert parse_settings("fail_on: none\n").fail_on is None
    assert parse_settings("").fail_on is None and parse_settings("").review_event == "comment"
    assert parse_settings("review_event: request_changes\n").review_event == "request_changes"
    for bad in ("fail_on: severe\n", "review_event: approve\n"):
        with pytest.raises(SettingsError):
            parse_settings(bad)


async def test_a_committed_suggestion_resolves_its_defect_and_clears_the_gate(tmp_path):
    before = ("export function check(order, expectedTotal) {\n"
              "  if (order.total == expectedTotal) {\n    return true;\n  }\n  return false;\n}\n")
    after = before.replace("order.total == expectedTotal", "order.total === expectedTotal")
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Minor\n", files={"web/order.js": before})
        await bot.pull_request("opened")
        await bot.idle()
        [comment] = bot.bot_comments("review")
        assert "```suggestion\n  if (order.total === expectedTotal) {\n```" in comment["body"]
        assert runs(bot, HEAD1)[0]["conclusion"] == "failure"
        await push(bot, HEAD2, {"web/order.js": after})  # the author commits the suggestion
        assert bot.states() == {"D1": "Resolved"}
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        assert bot.ledger.history(pr_id, "D1")[-1]["rule"] == "suggestion-applied"
        assert runs(bot, HEAD2)[0]["conclusion"] == "success"


async def test_first_summary_opens_with_the_pr_at_a_glance_then_says_what_a_push_changed(
        tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        [summary] = bot.bot_comments()
        assert "This pull request at a glance: 1 file, +" in summary["body"]
        assert "| `app/` | `core.py` |" in summary["body"]
        await push(bot, HEAD2, SCALE_ROUND2)
        [summary] = bot.bot_comments()
        assert "at a glance" not in summary["body"]
        assert "**This push** changed 1 file: `app/core.py` (+0 −1)." in summary["body"]


@needs_webhook_fixtures
async def test_githubs_recorded_rerequested_payloads_are_routed(tmp_path):
    """GitHub's recorded check_run/check_suite ``rerequested`` payloads: a check run without
    pull requests and unknown to the ledger queues nothing; a suite's pull request is reviewed."""
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        run = repoint(fixture("check_run.rerequested"), bot.fake, number=None)
        status, _ = await bot.deliver("check_run", run)
        assert status == 202
        await bot.idle()
        assert bot.jobs("round") == [] and bot.jobs("rerequest")[0]["status"] == "done"
        suite = repoint(fixture("check_suite.rerequested"), bot.fake, number=None)
        suite["check_suite"]["pull_requests"][0]["number"] = NUMBER
        status, _ = await bot.deliver("check_suite", suite)
        assert status == 202
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert runs(bot, HEAD1)[0]["conclusion"] == "neutral"
