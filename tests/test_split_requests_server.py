"""One comment, two requests, through the real server and the fake GitHub.

A reviewer asks for two things in one inline comment: guard a division on the commented line,
and rename two variables on lines the comment names. They become two defects (``Dna``,
``Dnb``), the second anchored at the lines it names; the next push renames the variables only:
one request is Resolved and the other stays Open in the ledger, the summary and the comment's
thread; resolving that thread then resolves both.
"""

from __future__ import annotations

from bench.replay import payloads
from tracker import keys

from .server_kit import BASE_FILES, BASE_SHA, INSTALLATION, REPO, ROUND1_FILES, running_bot

NUMBER = 9
ASK = ("`count` may be zero here: guard the division.\n\n"
       "Also, please rename `low` and `high` on lines 13-14 to `lowest` and `highest`.")
RENAMED = {**ROUND1_FILES, "app/core.py": ROUND1_FILES["app/core.py"].replace(
    "    low = min(result, default=0)\n    high = max(result, default=0)\n"
    "    return [v for v in result if low <= v <= high or v == mean]\n",
    "    lowest = min(result, default=0)\n    highest = max(result, default=0)\n"
    "    return [v for v in result if lowest <= v <= highest or v == mean]\n")}


def sha(round_: int) -> str:
    return f"{round_}{NUMBER}" * 20


async def _push(bot, round_, files, action="synchronize"):
    bot.fake.push(REPO, NUMBER, sha(round_), files)
    await bot.pull_request(action, number=NUMBER)
    await bot.idle()


def _summary(bot) -> str:
    [body] = [c["body"] for c in bot.bot_comments(number=NUMBER) if "roundwise · round" in
              c["body"]]
    return body


async def test_a_comment_asking_for_two_changes_is_two_defects_tracked_apart(tmp_path):
    assert RENAMED != ROUND1_FILES
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        fake.add_installation(INSTALLATION, "octo")
        fake.add_repo(REPO, INSTALLATION, files={})
        fake.add_pr(REPO, NUMBER, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                    BASE_FILES)
        await _push(bot, 1, ROUND1_FILES, "opened")
        asked = fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 12, ASK)
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(fake, REPO, NUMBER, asked))
        await bot.idle()

        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        first = bot.ledger.defect_by_comment(pr_id, asked["id"])
        a, b = first.key, keys.part_key(first.key, 1)
        assert keys.part(a) == "a"
        guard, rename = bot.ledger.defect(pr_id, a), bot.ledger.defect(pr_id, b)
        assert (guard.path, guard.line_start, guard.line_end) == ("app/core.py", 12, 12)
        assert (rename.path, rename.line_start, rename.line_end) == ("app/core.py", 13, 14)
        assert "guard the division" in guard.description and "`low`" not in guard.description
        assert "`lowest`" in rename.description and "division" not in rename.description
        body = _summary(bot)
        assert f"| {a} |" in body and f"| {b} |" in body

        await _push(bot, 2, RENAMED)  # the renames only
        states = bot.states(number=NUMBER)
        assert (states[a], states[b]) == ("Open", "Resolved")
        assert [h["state"] for h in bot.ledger.history(pr_id, b)] == ["New", "Resolved"]
        body = _summary(bot)
        open_part = body.split("#### Open", 1)[1].split("<details>")[0]  # the open table
        assert f"| {a} |" in open_part and f"| {b} |" not in open_part
        assert f"{a} and {b} are the requests of one comment" in open_part
        this_round = body.split("#### This round")[1].split("####")[0]
        assert f"**{b}** New → **Resolved**" in this_round
        assert f"Still open, code untouched: {a}" in this_round
        replies = [c for c in bot.bot_comments(kind="review", number=NUMBER)
                   if c.get("in_reply_to_id") == asked["id"]]
        assert [b in r["body"] for r in replies] == [True]  # its change, in the comment's thread
        assert not any(f"{a} " in r["body"] for r in replies)

        # resolving the comment's thread resolves both of its requests
        thread = fake.resolve_thread(REPO, NUMBER, asked["id"], "rina")
        await bot.deliver("pull_request_review_thread", payloads.review_thread(
            fake, REPO, NUMBER, thread, "resolved", sender="rina"))
        await bot.idle()
        states = bot.states(number=NUMBER)
        assert (states[a], states[b]) == ("Resolved", "Resolved")
        assert bot.ledger.history(pr_id, a)[-1]["rule"] == "thread_resolved"


async def test_a_command_naming_the_comment_resolves_all_its_requests(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        fake.add_installation(INSTALLATION, "octo")
        fake.add_repo(REPO, INSTALLATION, files={})
        fake.set_permission(REPO, "rina", "write")
        fake.add_pr(REPO, NUMBER, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                    BASE_FILES)
        await _push(bot, 1, ROUND1_FILES, "opened")
        asked = fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 12, ASK)
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(fake, REPO, NUMBER, asked))
        await bot.idle()
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        a = bot.ledger.defect_by_comment(pr_id, asked["id"]).key
        group, b = keys.group(a), keys.part_key(a, 1)

        await bot.comment("rina", f"/roundwise resolve {b.lower()}", number=NUMBER)
        await bot.idle()
        states = bot.states(number=NUMBER)
        assert (states[a], states[b]) == ("New", "Resolved")  # one request, by its own key

        await bot.comment("rina", f"/roundwise resolve {group}", number=NUMBER)
        await bot.idle()
        states = bot.states(number=NUMBER)
        assert (states[a], states[b]) == ("Resolved", "Resolved")  # the comment's number: all
        replies = [c["body"] for c in bot.bot_comments(kind="review", number=NUMBER)
                   if c.get("in_reply_to_id") == asked["id"]]
        assert any(f"{a}, {b} marked resolved by @rina" in r for r in replies)


async def test_a_request_quoting_code_of_another_file_is_anchored_there(tmp_path):
    files = {**ROUND1_FILES, "app/extra.py": "def scaled_sum(values, factor):\n"
                                            "    result = [v * factor for v in values]\n"
                                            "    return sum(result)\n"}
    ask = ("Please call `scale` from `add` callers too.\n\nAlso, please remove this copy, "
           "it repeats `scale`:\n```python\nresult = [v * factor for v in values]\n"
           "return sum(result)\n```")
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        fake.add_installation(INSTALLATION, "octo")
        fake.add_repo(REPO, INSTALLATION, files={})
        fake.add_pr(REPO, NUMBER, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                    BASE_FILES)
        await _push(bot, 1, files, "opened")
        asked = fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 5, ask)
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(fake, REPO, NUMBER, asked))
        await bot.idle()
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        a = bot.ledger.defect_by_comment(pr_id, asked["id"]).key
        first, second = bot.ledger.defect(pr_id, a), bot.ledger.defect(pr_id,
                                                                       keys.part_key(a, 1))
        assert (first.path, first.line_start) == ("app/core.py", 5)
        assert (second.path, second.line_start, second.line_end) == ("app/extra.py", 2, 3)
        assert second.code == ("    result = [v * factor for v in values]\n"
                               "    return sum(result)")
