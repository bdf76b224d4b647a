"""People's text quoted by the bot pings no one, and a huge comment is not stored whole
(issue 19, item 10), through the real server and the fake GitHub."""

from __future__ import annotations

import re

from bench.replay import payloads
from tracker.intake import MAX_COMMENT

from .server_kit import HEAD2, NUMBER, REPO, ROUND2_FILES, open_pr, running_bot

# what GitHub would take for a mention (of a person or a team) or an issue reference
PING = re.compile(r"(?<![\w@.+-])@[A-Za-z0-9_]|(?<!&)#\d")
# GitHub notifies from neither a fenced block nor a code span
CODE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$|(`+)[^`]*?\2", re.DOTALL | re.MULTILINE)
NOISE = " ".join(f"@user{i}" for i in range(3000)) + " @octo/everyone #4242 octo/widgets#99"


def bodies(bot) -> list[str]:
    """Every body the bot posted on the PR: comments, thread replies, reviews."""
    out = [c["body"] for c in bot.bot_comments()]
    out += [c["body"] for c in bot.bot_comments("review")]
    out += [r["body"] for r in bot.fake.reviews(REPO, NUMBER)
            if r["user"]["login"] == bot.fake.bot_login and r["body"]]
    return out


async def test_a_comment_full_of_mentions_is_quoted_without_pinging_anyone(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        remark = fake.add_review_comment(
            REPO, NUMBER, "rita", "app/core.py", 7,
            f"This must handle an empty list, please fix. {NOISE}")
        status, _ = await bot.deliver("pull_request_review_comment",
                                      payloads.review_comment(fake, REPO, NUMBER, remark))
        assert status == 202
        await bot.idle()
        assert "D3" in bot.states()  # the remark is a tracked defect, its text the noise
        await bot.comment("rita", f"/roundwise status {NOISE}")
        await bot.idle()
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        posted = bodies(bot)
        assert any("user1" in b for b in posted)  # the remark is shown...
        assert len(posted) >= 4
        prose = [CODE.sub("", b) for b in posted]
        pings = [m.group(0) for b in prose for m in PING.finditer(b)]
        ctx = [b[max(0, m.start() - 60):m.end() + 20] for b in prose for m in PING.finditer(b)]
        assert pings == [], ctx[:6]  # ...but nobody is mentioned and nothing is referenced


async def test_a_one_megabyte_comment_is_not_stored_whole(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        huge = "This must handle an empty list, please fix. " + "x" * (1024 * 1024)
        remark = fake.add_review_comment(REPO, NUMBER, "rita", "app/core.py", 7, huge)
        status, _ = await bot.deliver("pull_request_review_comment",
                                      payloads.review_comment(fake, REPO, NUMBER, remark))
        assert status == 202
        await bot.idle()
        db = bot.ledger.db
        stored = [len(body or "") for (body,) in db.execute("select body from defect_comments")]
        texts = [len(t or "") for (t,) in db.execute("select description from defects")]
        payload = max(len(p) for (p,) in db.execute("select payload from jobs"))
        assert stored and max(stored) <= MAX_COMMENT
        assert max(texts) <= MAX_COMMENT
        assert payload <= MAX_COMMENT + 16_384  # the job's copy of the comment is cut too
