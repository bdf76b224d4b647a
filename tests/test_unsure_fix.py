"""A Resolved the tracker is not sure of, through the real server and the fake GitHub: the
summary and the thread reply ask the reviewer to confirm the fix instead of claiming it, the
``fail_on`` gate does not count it as fixed, and the reviewer resolving the thread settles it.
"""

from __future__ import annotations

import pytest

from bench.replay import payloads

from .server_kit import HEAD1, HEAD2, NUMBER, REPO, SCALE_CORE, running_bot, setup_pr
from .test_checks_server import runs

pytestmark = pytest.mark.asyncio

# Round 2 takes out the bot's two findings (the breakpoint, the print) and rewrites the line
# the reviewer commented on without doing what the comment asks: the rule that resolves it
# ("the line was rewritten") is unsure of that, and no verifier is configured.
ROUND2 = {"app/core.py": SCALE_CORE + "    result = [v * factor for v in values if v]\n"
                                "    return result\n"}
ASK = "This must reject a negative factor before scaling anything."


def summary(bot) -> str:
    [body] = [c["body"] for c in bot.bot_comments() if "roundwise:summary" in c["body"]]
    return body


async def test_an_unsure_resolved_asks_the_reviewer_and_does_not_pass_the_gate(tmp_path,
                                                                               monkeypatch):
    # the rules' own confidences: the line-rewritten rule gives itself 0.6, below SURE
    monkeypatch.setenv("ROUNDWISE_CALIBRATION", "off")
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Minor\n")
        await bot.pull_request("opened")
        await bot.idle()
        comment = bot.fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 7, ASK)
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(bot.fake, REPO, NUMBER, comment))
        await bot.idle()
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        key = bot.ledger.defect_by_comment(pr_id, comment["id"]).key
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2)
        await bot.pull_request("synchronize")
        await bot.idle()

        # the ledger keeps the tracker's answer, as the bench scores it
        assert bot.states()[key] == "Resolved"
        [last] = [h for h in bot.ledger.history(pr_id, key) if h["round"] == 2]
        assert last["decided_by"] == "rule"

        body = summary(bot)
        assert f"**{key}** may be fixed" in body and "Resolve its thread if this is fixed" in body
        assert f"**{key}** New → **Resolved**" not in body  # no claim of the fix
        assert "#### To confirm (1)" in body and f"| {key} |" in body
        assert body.splitlines()[3].startswith("❔ **1 fix to confirm**")

        [reply] = [c["body"] for c in bot.fake.review_comments(REPO, NUMBER)
                   if c.get("in_reply_to_id") == comment["id"]]
        assert f"**{key} may be fixed**" in reply and "Resolve this thread if this is fixed" \
            in reply and "looks resolved" not in reply

        # the gate: fail_on Minor, and the only defect left at or above it is the unsure one
        [run] = runs(bot, HEAD2)
        assert run["conclusion"] == "failure"
        assert run["output"]["title"] == "no open defects, 1 to confirm, 2 resolved"
        assert f"{key} may be fixed, but roundwise is not sure" in run["output"]["summary"]

        # the reviewer confirms by resolving the thread: the gate opens, the summary settles
        thread = bot.fake.resolve_thread(REPO, NUMBER, comment["id"], "rina")
        await bot.deliver("pull_request_review_thread", payloads.review_thread(
            bot.fake, REPO, NUMBER, thread, "resolved", sender="rina"))
        await bot.idle()
        [run] = runs(bot, HEAD2)
        assert run["conclusion"] == "success"
        assert run["output"]["title"] == "no open defects, 3 resolved"
        body = summary(bot)
        assert body.splitlines()[3] == "✅ **No open defects** · 3 resolved."
        assert "To confirm" not in body


async def test_a_sure_resolved_is_claimed_and_passes_the_gate(tmp_path):
    """The same push with the calibrated table: the rule is sure, the fix is claimed."""
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Minor\n")
        await bot.pull_request("opened")
        await bot.idle()
        comment = bot.fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 7, ASK)
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(bot.fake, REPO, NUMBER, comment))
        await bot.idle()
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert "may be fixed" not in summary(bot)
        [run] = runs(bot, HEAD2)
        assert run["conclusion"] == "success"
        assert run["output"]["title"] == "no open defects, 3 resolved"
        assert HEAD1 != HEAD2
