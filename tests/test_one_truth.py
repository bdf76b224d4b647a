"""One truth on the PR, through the real server and the fake GitHub: people's comments refresh
the summary as well as the check; a defect that is back unfolds its thread; the bot's own
static findings resolve when their check stops firing; a model's fix is a one-click suggestion
only on the lines it quoted; the check says which ``fail_on`` would fail it."""

from __future__ import annotations

import json
import re

import pytest

from bench.replay import payloads
from bench.scripted_llm import ScriptedLLM, system_text
from bot.review.llm_config import LLMConfig

from .server_kit import (
    HEAD1,
    HEAD2,
    HEAD3,
    NUMBER,
    REPO,
    SCALE_ROUND1,
    SCALE_ROUND2,
    push,
    running_bot,
    setup_pr,
)

pytestmark = pytest.mark.asyncio

def summary(bot) -> str:
    [comment] = bot.bot_comments()
    return comment["body"]


def check(bot, head: str) -> dict:
    [run] = [r for r in bot.fake.check_runs(REPO, head) if r["name"] == "roundwise"]
    return run


def thread_of(bot, key: str) -> dict:
    pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
    root = bot.ledger.thread_root(pr_id, key)["id"]
    [thread] = [t for t in bot.fake.threads(REPO, NUMBER) if t["comments"][0]["id"] == root]
    return thread


# -- 1. the summary follows every change of the ledger, as the check does ----------------------


async def test_reviewers_comments_refresh_the_summary_with_the_check(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        assert "**2 open defects" in summary(bot)
        for line, text in ((7, "This must reject a negative factor; raise ValueError."),
                           (9, "Please name this `scaled`, `result` says nothing.")):
            comment = bot.fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", line, text)
            await bot.deliver("pull_request_review_comment",
                              payloads.review_comment(bot.fake, REPO, NUMBER, comment))
            await bot.idle()
        assert check(bot, HEAD1)["output"]["title"].startswith("4 open")
        body = summary(bot)
        assert "**4 open defects" in body  # was "2 open defects": the summary lagged the check
        assert "| D3 |" in body and "| D4 |" in body
        # each comment's job edits the summary once, and before it updates the check
        summary_id = bot.bot_comments()[0]["id"]
        calls = [(r.method, r.path) for r in bot.fake.requests if r.method == "PATCH" and (
            r.path.endswith(f"/issues/comments/{summary_id}") or "/check-runs/" in r.path)]
        after_round = calls[-4:]
        assert [("issue" if "issues" in p else "check") for _m, p in after_round] == \
            ["issue", "check", "issue", "check"]


async def test_a_comment_that_changes_nothing_leaves_the_summary_alone(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        await push(bot, HEAD2, SCALE_ROUND2)  # round 2 changes states: "This round" has lines
        before = summary(bot)
        summary_id = bot.bot_comments()[0]["id"]
        edits = len(bot.calls("PATCH", rf"/issues/comments/{summary_id}$"))
        await bot.comment("sam", "thanks, looking at the print next")
        await bot.idle()
        # re-rendered from the ledger, the summary reads as the round wrote it: no edit
        assert len(bot.calls("PATCH", rf"/issues/comments/{summary_id}$")) == edits
        assert summary(bot) == before


async def test_a_command_shows_in_this_round_of_the_summary(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        bot.fake.set_permission(REPO, "maintainer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        await bot.comment("maintainer", "/roundwise resolve D2")
        await bot.idle()
        body = summary(bot)
        assert "**D2** New → **Resolved** (a person's action): maintainer " \
               "ran /roundwise resolve" in body
        assert "- D2: `command_resolve` (a person's action)" in body  # in the folded why
        assert "**1 open defect, 1 Major**" in body
        # the bot's own thread of D2 is folded, as a round would fold it
        assert thread_of(bot, "D2")["is_resolved"] is True


# -- 2. a defect that is back unfolds its thread ------------------------------------------------


async def test_a_reopened_defect_unresolves_its_thread(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        await push(bot, HEAD2, SCALE_ROUND2)  # the breakpoint (D1) is gone: resolved, thread folded
        assert bot.states()["D1"] == "Resolved"
        assert thread_of(bot, "D1")["is_resolved"] is True
        await push(bot, HEAD3, SCALE_ROUND1)  # and back
        assert bot.states()["D1"] == "Reopened"
        thread = thread_of(bot, "D1")
        assert thread["is_resolved"] is False  # GitHub shows "D1 is back" unfolded
        assert any("D1 is back" in c["body"] for c in thread["comments"])


async def test_a_reviewer_saying_it_is_not_fixed_unresolves_the_bots_thread(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        await push(bot, HEAD2, SCALE_ROUND2)
        assert thread_of(bot, "D1")["is_resolved"] is True
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        root = bot.ledger.thread_root(pr_id, "D1")["id"]
        reply = bot.fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 6,
                                            "Still not right: the debugger call moved, not gone.",
                                            in_reply_to=root)
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(bot.fake, REPO, NUMBER, reply))
        await bot.idle()
        assert bot.states()["D1"] in ("Open", "Reopened")
        assert thread_of(bot, "D1")["is_resolved"] is False


# -- 3. the bot's own static findings re-checked at the new head --------------------------------


UNUSED = {"app/paths.py": "import os\n\n\ndef home():\n    return '~'\n"}
USED = {"app/paths.py": "import os\n\n\ndef home():\n    return os.path.expanduser('~')\n"}


async def test_an_unused_import_resolves_once_the_import_is_used(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "fail_on: Minor\n", files=UNUSED)
        await bot.pull_request("opened")
        await bot.idle()
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        [d1] = bot.ledger.defects(pr_id)
        assert (d1.rule, d1.line_start) == ("ruff:F401", 1)
        assert check(bot, HEAD1)["conclusion"] == "failure"
        await push(bot, HEAD2, USED)  # `os` is used now; the import line did not change
        assert bot.states() == {"D1": "Resolved"}
        last = bot.ledger.history(pr_id, "D1")[-1]
        assert last["rule"] == "check-silent" and last["decided_by"] == "rule"
        assert "the ruff:F401 check no longer fires at app/paths.py:1" in last["evidence"]
        assert check(bot, HEAD2)["conclusion"] == "success"  # `fail_on: Minor` passes again
        assert thread_of(bot, "D1")["is_resolved"] is True
        await push(bot, HEAD3, UNUSED)  # unused again: the same check fires again
        assert bot.states() == {"D1": "Reopened"}


async def test_a_static_finding_whose_check_still_fires_stays_open(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, files=UNUSED)
        await bot.pull_request("opened")
        await bot.idle()
        still = {"app/paths.py": "import os\n\n\ndef home():\n    return '~/'\n"}
        await push(bot, HEAD2, still)
        assert bot.states() == {"D1": "Open"}


# -- 4. a model's fix is a suggestion only on the lines it quoted --------------------------------


QUOTA = ("export function underQuota(used, limit) {\n"      # 1
         "  if (limit === undefined) {\n"                    # 2
         "    limit = 100;\n"                                # 3
         "  }\n"                                             # 4
         "  const spare = limit - used;\n"                   # 5
         "  if (spare < 0) {\n"                              # 6
         "    return false;\n"                               # 7
         "  }\n"                                             # 8
         "  const debug = false;\n"                          # 9
         "  const strict = true;\n"                          # 10
         "  if (used = limit) {\n"                           # 11: the defect
         "    return used < 100;\n"                          # 12
         "  }\n"                                             # 13
         "  return strict && !debug;\n"                      # 14
         "}\n")


def quota_model(request: dict) -> str:
    if "defect verifier" in system_text(request):
        return json.dumps({"verdicts": []})
    return json.dumps({"findings": [
        {"path": "web/quota.js", "line_start": 12, "line_end": 12,  # the wrong line
         "description": "Assignment instead of comparison: `used = limit` is always truthy.",
         "type": "F.2", "severity": "Major", "confidence": 0.9,
         "code": "  if (used = limit) {", "fix": "  if (used === limit) {"},
        {"path": "web/quota.js", "line_start": 5, "line_end": 5,  # right line, right quote
         "description": "`spare` can be negative; name says otherwise.", "type": "E.1.1",
         "severity": "Minor", "confidence": 0.8,
         "code": "  const spare = limit - used;", "fix": "  const spare = Math.max(limit - used, 0);"},
    ]})


async def test_a_fix_on_other_lines_than_it_quotes_is_plain_text(tmp_path):
    async with ScriptedLLM(quota_model) as model:
        llm = LLMConfig(model="openai/scripted", api_base=model.url, api_key="sk-test")
        async with running_bot(tmp_path, llm=llm) as bot:
            setup_pr(bot.fake, "static_checks: false\n", files={"web/quota.js": QUOTA})
            await bot.pull_request("opened")
            await bot.idle()
            comments = {c["line"]: c["body"] for c in bot.bot_comments("review")}
    wrong, right = comments[12], comments[5]
    assert "```suggestion" not in wrong  # it would have replaced `return used < 100;`
    assert "Possible fix, not offered as a one-click suggestion" in wrong
    assert "  if (used === limit) {" in wrong
    assert "```suggestion\n  const spare = Math.max(limit - used, 0);\n```" in right


# -- 5. the check says which fail_on would fail it ---------------------------------------------


async def test_the_check_names_the_fail_on_that_would_fail_it(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        await push(bot, HEAD2, SCALE_ROUND2)  # only the Minor print is open
        text = check(bot, HEAD2)["output"]["summary"]
        assert "fail_on: Major" not in text  # which would not fail it
        assert "`fail_on: Minor`" in text and "the 1 Minor defect stands" in text
        assert re.search(r"Open defects stand, but the check is not set to fail", text)
