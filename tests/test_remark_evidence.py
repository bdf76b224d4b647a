"""Evidence for remarks on the whole PR, through the real server and the fake GitHub.

A remark names no code, so a push alone does not show it was met (``pr-unaddressed``). Two
things do: a commit of the push saying it addresses the review, and the remark's reviewer
approving after the push. Commit messages come from GitHub's comparison of the two heads, the
same request that tells a push from a rebase.
"""

from __future__ import annotations

from bench.replay import payloads

from .server_kit import BASE_FILES, BASE_SHA, INSTALLATION, REPO, ROUND1_FILES, running_bot

NUMBER = 11
EDITED = {**ROUND1_FILES, "app/core.py": ROUND1_FILES["app/core.py"] + "\n# reworded\n"}
REMARK = "Please make the error messages friendlier for users."


def sha(round_: int) -> str:
    return f"{round_}b" * 20


async def _setup(bot):
    fake = bot.fake
    fake.add_installation(INSTALLATION, "octo")
    fake.add_repo(REPO, INSTALLATION, files={})
    fake.add_pr(REPO, NUMBER, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                BASE_FILES)
    fake.push(REPO, NUMBER, sha(1), ROUND1_FILES)
    await bot.pull_request("opened", number=NUMBER)
    await bot.idle()
    await bot.comment("rina", REMARK, number=NUMBER)
    await bot.idle()
    pr = bot.ledger.find_pull_request(REPO, NUMBER)
    return next(d.key for d in bot.ledger.defects(pr["id"]) if d.author == "rina")


async def _push(bot, round_, messages):
    bot.fake.push(REPO, NUMBER, sha(round_), EDITED if round_ == 2 else
                  {**EDITED, "app/more.py": "Y = 2\n"}, messages)
    await bot.pull_request("synchronize", number=NUMBER)
    await bot.idle()


def _last(bot, key):
    pr = bot.ledger.find_pull_request(REPO, NUMBER)
    h = bot.ledger.history(pr["id"], key)[-1]
    return h["state"], h["rule"]


async def test_a_push_whose_commit_says_it_addresses_the_review_resolves_a_remark(tmp_path):
    async with running_bot(tmp_path) as bot:
        key = await _setup(bot)
        await _push(bot, 2, ["Reword a comment", "Apply suggestions from code review"])
        assert _last(bot, key) == ("Resolved", "remark-review-commit")


async def test_without_such_a_commit_the_remark_stays_open(tmp_path):
    async with running_bot(tmp_path) as bot:
        key = await _setup(bot)
        await _push(bot, 2, ["Reword a comment"])
        assert _last(bot, key) == ("Open", "pr-unaddressed")


async def test_the_reviewer_approving_after_a_push_resolves_their_remark(tmp_path):
    async with running_bot(tmp_path) as bot:
        key = await _setup(bot)
        await _push(bot, 2, ["Reword a comment"])
        review = bot.fake.add_review(REPO, NUMBER, "rina", "APPROVED", "")
        await bot.deliver("pull_request_review",
                          payloads.review(bot.fake, REPO, NUMBER, review))
        await bot.idle()
        await _push(bot, 3, ["Another file"])
        assert _last(bot, key) == ("Resolved", "remark-approved")
