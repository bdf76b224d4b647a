"""Later evidence corrects an earlier state, through the real server and the fake GitHub.

A push edits the line a reviewer commented on and the tracker resolves the defect; then the
reviewer raises it again (or the author says it is still to be done): the defect is back to
Open at once, the summary says why, and the same code evidence does not resolve it again at
the next push.
"""

from __future__ import annotations

import pytest

from bench.replay import payloads

from .server_kit import BASE_FILES, BASE_SHA, INSTALLATION, REPO, ROUND1_FILES, running_bot

NUMBER = 8
MEAN_LINE = 12
MEAN_EDITED = {**ROUND1_FILES, "app/core.py": ROUND1_FILES["app/core.py"].replace(
    "    mean = total / count if count else 0\n",
    "    mean = total / count if count > 0 else 0.0\n")}
UNRELATED = {**MEAN_EDITED, "app/extra.py": "X = 1\n"}


def sha(round_: int) -> str:
    return f"{round_}{NUMBER}" * 20


async def _push(bot, round_, files, action="synchronize"):
    bot.fake.push(REPO, NUMBER, sha(round_), files)
    await bot.pull_request(action, number=NUMBER)
    await bot.idle()


async def _inline(bot, user, body, in_reply_to=None):
    fake = bot.fake
    path, line = (None, None) if in_reply_to else ("app/core.py", MEAN_LINE)
    comment = fake.add_review_comment(REPO, NUMBER, user, path, line, body,
                                      in_reply_to=in_reply_to)
    await bot.deliver("pull_request_review_comment",
                      payloads.review_comment(fake, REPO, NUMBER, comment))
    await bot.idle()
    return comment


async def _open(bot):
    fake = bot.fake
    fake.add_installation(INSTALLATION, "octo")
    fake.add_repo(REPO, INSTALLATION, files={})
    fake.add_pr(REPO, NUMBER, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                BASE_FILES)
    await _push(bot, 1, ROUND1_FILES, "opened")


def _key(bot, comment_id) -> str:
    pr = bot.ledger.find_pull_request(REPO, NUMBER)
    return bot.ledger.defect_by_comment(pr["id"], comment_id).key


def _summary(bot) -> str:
    bodies = [c["body"] for c in bot.bot_comments(number=NUMBER) if "roundwise · round" in
              c["body"]]
    assert len(bodies) == 1, "one sticky summary"
    return bodies[0]


def _history(bot, key):
    pr = bot.ledger.find_pull_request(REPO, NUMBER)
    return [(h["round"], h["state"], h["rule"]) for h in bot.ledger.history(pr["id"], key)]


async def test_a_reviewer_repeating_the_request_after_the_fix_sends_it_back_to_open(tmp_path):
    async with running_bot(tmp_path) as bot:
        await _open(bot)
        asked = await _inline(bot, "rina", "`mean` divides by `count`; guard it against zero.")
        key = _key(bot, asked["id"])
        await _push(bot, 2, MEAN_EDITED)
        assert bot.states(number=NUMBER)[key] == "Resolved"  # the line was edited

        again = await _inline(bot, "rina", "`mean` still divides by `count`; guard it "
                                           "against zero.")
        assert _key(bot, again["id"]) == key, "the repeat joins the same defect"
        assert bot.states(number=NUMBER)[key] == "Open"
        assert _history(bot, key)[-1] == (2, "Open", "reviewer-repeats")
        summary = _summary(bot)
        assert f"**{key}** back to **Open** (was Resolved by the code)" in summary
        assert "rina raised it again after it was resolved" in summary

        await _push(bot, 3, UNRELATED)  # nothing new on that line
        assert bot.states(number=NUMBER)[key] == "Open"
        assert _history(bot, key)[-1][:2] == (3, "Open")


@pytest.mark.parametrize("asker, ask, replier, reply, rule, shown", [
    # the author promises the change after the push that looked like the fix
    ("rina", "`mean` divides by `count`; guard it against zero.", "sam",
     "Good point, will do in the next commit.", "author-promises", "**{key}** back to **Open**"),
    # the reviewer says, in Chinese, it is still not right: "count can still be zero"
    ("li", "`mean` 除以 `count`，请处理 count 为零的情况。", "li", "还是不对：count 仍然可能为零。",
     "reviewer-disputes", "li replied that it is not fixed"),
])
async def test_a_reply_after_the_resolving_push_sends_it_back_to_open(
        tmp_path, asker, ask, replier, reply, rule, shown):
    async with running_bot(tmp_path) as bot:
        await _open(bot)
        asked = await _inline(bot, asker, ask)
        key = _key(bot, asked["id"])
        await _push(bot, 2, MEAN_EDITED)
        assert bot.states(number=NUMBER)[key] == "Resolved"

        await _inline(bot, replier, reply, in_reply_to=asked["id"])
        assert bot.states(number=NUMBER)[key] == "Open"
        assert _history(bot, key)[-1] == (2, "Open", rule)
        assert shown.format(key=key) in _summary(bot)
        await _push(bot, 3, UNRELATED)
        assert bot.states(number=NUMBER)[key] == "Open"


async def test_an_unsure_decision_is_shown_as_such_in_the_summary_and_the_check(tmp_path):
    # A remark on the whole PR naming no code, then a push: ``pr-unaddressed`` keeps it Open,
    # a ruling the calibration table measured right in little more than half of its pairs.
    async with running_bot(tmp_path) as bot:
        await _open(bot)
        await bot.comment("rina", "Please make the error messages friendlier for users.",
                          number=NUMBER)
        await bot.idle()
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        remark = next(d for d in bot.ledger.defects(pr["id"]) if d.author == "rina")
        await _push(bot, 2, MEAN_EDITED)
        plan = bot.ledger.plan(pr["id"], 2)
        decided = next(d for d in plan["decisions"] if d["key"] == remark.key)
        assert decided["rule"] == "pr-unaddressed" and decided["confidence"] < 0.7
        assert f"| {remark.key} | Open (likely still open) |" in _summary(bot)
        [run] = [r for r in bot.fake.check_runs(REPO, sha(2)) if r["name"] == "roundwise"]
        shown = round(100 * decided["confidence"])
        assert f"**{remark.key}** likely still open, {shown}% likely right: a remark on the " \
            "whole PR that names no code" in run["output"]["summary"]
        assert "pr-unaddressed" not in run["output"]["summary"]  # the rule's name is folded
