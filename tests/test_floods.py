"""A stranger's flood of commands and a row of Re-run clicks (issue 19, item 11), through the
real server and the fake GitHub: one refusal comment per person and pull request, a 👎 on the
rest; Re-runs are forced rounds under the same hourly limit as ``/roundwise review``."""

from __future__ import annotations

import asyncio

from bot.jobs.forced import PER_HOUR

from .server_kit import HEAD1, INSTALLATION, NUMBER, REPO, open_pr, running_bot


async def test_fifty_commands_from_a_stranger_get_one_refusal_comment(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        commands = ["/roundwise resolve D1", "/roundwise ignore D2", "/roundwise review"]
        await asyncio.gather(*(bot.comment("mallory", commands[i % 3]) for i in range(50)))
        await bot.idle()
        answers = [c for c in bot.bot_comments() if c["body"].startswith("@mallory")]
        assert len(answers) == 1
        mine = [c for c in bot.fake.issue_comments(REPO, NUMBER)
                if c["user"]["login"] == "mallory"]
        quiet = [c for c in mine if c["reactions"]["-1"] == 1]
        assert len(mine) == 50 and len(quiet) == 49  # the rest get a 👎, not a comment
        assert bot.states() == {"D1": "New", "D2": "New"}  # and nothing was done
        assert len(bot.rounds()) == 1
        # someone else is still answered, once
        await bot.comment("eve", "/roundwise resolve D1")
        await bot.idle()
        assert len([c for c in bot.bot_comments() if c["body"].startswith("@eve")]) == 1


async def test_re_run_clicks_are_forced_rounds_under_the_hourly_limit(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        [run] = [r for r in bot.fake.check_runs(REPO, HEAD1) if r["name"] == "roundwise"]
        for _ in range(5):
            payload = {"action": "rerequested", "check_run": {**run, "pull_requests": [
                {"number": NUMBER, "head": {"sha": HEAD1}, "base": {"sha": "b" * 40}}]},
                "repository": bot.fake.repo_json(REPO), "installation": {"id": INSTALLATION},
                "sender": bot.fake.user_json("sam")}
            status, _ = await bot.deliver("check_run", payload)
            assert status == 202
            await bot.idle()
        assert len(bot.rounds()) == 1 + PER_HOUR
        refused = [j for j in bot.jobs("rerequest") if j["status"] == "done"]
        assert len(refused) == 5
        # the limit is one budget: a /roundwise review by the author is refused now too
        await bot.comment("sam", "/roundwise review")
        await bot.idle()
        assert len(bot.rounds()) == 1 + PER_HOUR
        assert any("forced reviews in the last hour" in c["body"] for c in bot.bot_comments())
