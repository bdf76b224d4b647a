"""Exactly once on GitHub's side, through the real server and the fake GitHub (issue 9).

A write GitHub applied but whose answer was lost (a 502, a timeout) is not sent again; a
deleted bot thread does not block the PR; a push during a round does not change what the round
reads; a round a newer push overtook hands its posted defects on instead of posting them twice.
"""

from __future__ import annotations

from bot.github import RetryPolicy
from bot.pr import render

from .server_kit import (
    HEAD1,
    HEAD2,
    NUMBER,
    REPO,
    ROUND1_FILES,
    ROUND2_FILES,
    open_pr,
    running_bot,
)

SHORT_TIMEOUT = RetryPolicy(attempts=4, backoff=0.02, max_wait=3.0, secondary_wait=0.1,
                            timeout=1.0)


def top_level(bot) -> list[dict]:
    return [c for c in bot.bot_comments("review") if not c.get("in_reply_to_id")]


async def test_a_review_applied_but_answered_502_is_not_posted_again(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        bot.fake.lose_response_next("POST", rf"/pulls/{NUMBER}/reviews$")
        await bot.pull_request("opened")
        await bot.idle()
        assert bot.fake.lost_responses == 1
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert len(bot.bot_reviews()) == 1
        assert sorted(render.read_marker(c["body"]) for c in top_level(bot)) == [
            ("new", "D1", 1), ("new", "D2", 1)]
        assert len(bot.calls("POST", rf"/pulls/{NUMBER}/reviews$")) == 1


async def test_a_summary_applied_but_timed_out_is_not_posted_again(tmp_path):
    async with running_bot(tmp_path, retry=SHORT_TIMEOUT) as bot:
        open_pr(bot.fake)
        bot.fake.lose_response_next("POST", rf"/issues/{NUMBER}/comments$", timeout=1.5)
        await bot.pull_request("opened")
        await bot.idle()
        assert bot.fake.lost_responses == 1
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        summaries = [c for c in bot.bot_comments() if render.SUMMARY_MARKER in c["body"]]
        assert len(summaries) == 1


async def test_a_reply_applied_but_answered_502_is_not_posted_again(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        bot.fake.lose_response_next("POST", r"/comments/\d+/replies$")
        await bot.pull_request("synchronize")
        await bot.idle()
        assert bot.fake.lost_responses == 1
        replies = [c for c in bot.bot_comments("review") if c.get("in_reply_to_id")]
        assert [render.read_marker(c["body"]) for c in replies] == [("state", "D1", 2)]
        assert bot.states() == {"D1": "Resolved", "D2": "Open"}


async def test_a_deleted_bot_thread_does_not_block_the_pull_request(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        d1 = next(c for c in top_level(bot) if render.read_marker(c["body"])[1] == "D1")
        bot.fake.delete_review_comment(REPO, NUMBER, d1["id"])
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)  # tests added: D1 is resolved
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert bot.states() == {"D1": "Resolved", "D2": "Open"}
        [summary] = bot.bot_comments()
        assert "threads were deleted on GitHub" in summary["body"] and "D1" in summary["body"]
        assert bot.jobs()[-1]["status"] == "done"


async def test_a_push_during_a_round_does_not_change_what_it_reviews(tmp_path):
    """The head moves between reading the PR and reading its diff: the round still reviews,
    and posts inline on, the head it read (one review, no 422)."""
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        later = {**ROUND1_FILES, "app/extra.py": "def shout(x):\n    print(x)\n    return x\n"}
        original = fake._handle

        async def handle(request, path, body, parsed):
            response = await original(request, path, body, parsed)
            if request.method == "GET" and path.endswith(f"/pulls/{NUMBER}") and \
                    "diff" not in request.headers.get("Accept", "") and fake.head_sha(
                        REPO, NUMBER) == HEAD1:
                fake.push(REPO, NUMBER, HEAD2, later)  # someone pushes right now
            return response

        fake._handle = handle
        await bot.pull_request("opened")
        await bot.idle()
        [rnd] = bot.rounds()
        assert rnd["status"] == "complete" and rnd["head_sha"] == HEAD1
        [review] = bot.bot_reviews()
        assert review["commit_id"] == HEAD1
        paths = {c["path"] for c in top_level(bot)}
        assert paths == {"app/core.py"}  # app/extra.py is not in the head reviewed
        posts = bot.calls("POST", rf"/pulls/{NUMBER}/reviews$")
        assert len(posts) == 1


async def test_a_round_overtaken_by_a_push_hands_on_what_it_posted(tmp_path):
    """Round 1 posts its review, then cannot write the summary and fails; a newer push comes.
    Round 2 tracks D1 and D2 (posted by round 1) instead of posting them again."""
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        fake.fail_next("POST", rf"/issues/{NUMBER}/comments$", 403,
                       {"message": "Resource not accessible by integration",
                        "documentation_url": "https://docs.github.com/rest", "status": "403"})
        await bot.pull_request("opened")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["failed"]
        assert len(top_level(bot)) == 2

        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["superseded", "complete"]
        assert sorted(render.read_marker(c["body"]) for c in top_level(bot)) == [
            ("new", "D1", 1), ("new", "D2", 1)]  # nothing posted twice
        assert bot.states() == {"D1": "Resolved", "D2": "Open"}
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        assert bot.ledger.thread_root(pr["id"], "D2")["id"] in {c["id"] for c in top_level(bot)}
