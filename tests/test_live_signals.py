"""Live quality signals end to end: three PRs through the real server and the fake GitHub.

People resolve, unresolve, reply and ignore; the ledger's ``verdicts`` rows, ``GET /metrics``
and ``roundwise stats`` must show the counts worked out by hand below.
"""

from __future__ import annotations

import json

from bench.replay import payloads
from roundwise.cli import main
from tracker.verdicts import DISAGREE

from .server_kit import (
    BASE_FILES,
    BASE_SHA,
    INSTALLATION,
    REPO,
    ROUND1_FILES,
    ROUND2_FILES,
    metric,
    running_bot,
)

# PR 8 and 9 rounds: round 2 edits the `mean` line (line 12) a reviewer commented on.
MEAN_FIXED = {**ROUND1_FILES, "app/core.py": ROUND1_FILES["app/core.py"].replace(
    "    mean = total / count if count else 0\n",
    "    mean = total / count if count > 0 else 0.0\n")}
MEAN_LINE = 12


def sha(number: int, round_: int) -> str:
    return f"{number}{round_}" * 20


async def _push(bot, number, head, files, action):
    bot.fake.push(REPO, number, head, files)
    await bot.pull_request(action, number=number)
    await bot.idle()


async def _thread(bot, number, comment_id, action, user):
    fake = bot.fake
    thread = fake.resolve_thread(REPO, number, comment_id, user) if action == "resolved" \
        else fake.unresolve_thread(REPO, number, comment_id)
    await bot.deliver("pull_request_review_thread",
                      payloads.review_thread(fake, REPO, number, thread, action, sender=user))
    await bot.idle()


async def _reply(bot, number, to, user, body):
    fake = bot.fake
    comment = fake.add_review_comment(REPO, number, user, None, None, body, in_reply_to=to)
    await bot.deliver("pull_request_review_comment",
                      payloads.review_comment(fake, REPO, number, comment))
    await bot.idle()
    return comment


async def _comment(bot, number, user, line, body):
    fake = bot.fake
    comment = fake.add_review_comment(REPO, number, user, "app/core.py", line, body)
    await bot.deliver("pull_request_review_comment",
                      payloads.review_comment(fake, REPO, number, comment))
    await bot.idle()
    return comment


def _root(bot, number, key):
    pr = bot.ledger.find_pull_request(REPO, number)
    return bot.ledger.thread_root(pr["id"], key)["id"]


async def three_prs(bot) -> dict[str, int]:
    """The scenario: three PRs of one repository, people acting on the bot's decisions;
    returns the ids of rina's comments on PRs 8 and 9."""
    fake = bot.fake
    fake.add_installation(INSTALLATION, "octo")
    fake.add_repo(REPO, INSTALLATION, files={".github/roundwise.yml": "require_tests: true\n"})
    fake.set_permission(REPO, "wendy", "write")
    for number in (7, 8, 9):
        fake.add_pr(REPO, number, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                    BASE_FILES)
        await _push(bot, number, sha(number, 1), ROUND1_FILES, "opened")

    # PR 7
    await _push(bot, 7, sha(7, 2), ROUND2_FILES, "synchronize")
    await _thread(bot, 7, _root(bot, 7, "D1"), "unresolved", "rina")
    await _push(bot, 7, sha(7, 3), {**ROUND2_FILES, "app/extra.py": "X = 1\n"}, "synchronize")
    await _thread(bot, 7, _root(bot, 7, "D2"), "resolved", "rina")

    # PR 8
    c8 = await _comment(bot, 8, "rina", MEAN_LINE, "`mean` divides by `count`; guard it.")
    await _reply(bot, 8, _root(bot, 8, "D2"), "sam", "The print is intended, a debug aid.")
    await _push(bot, 8, sha(8, 2), MEAN_FIXED, "synchronize")
    await _reply(bot, 8, c8["id"], "rina", "Still wrong: the zero case is not handled.")

    # PR 9
    c9 = await _comment(bot, 9, "rina", MEAN_LINE, "`mean` divides by `count`; guard it.")
    await bot.comment("wendy", "/roundwise ignore D2", number=9)
    await bot.idle()
    await _push(bot, 9, sha(9, 2), MEAN_FIXED, "synchronize")
    await _reply(bot, 9, c9["id"], "rina", "Looks good, thanks.")
    await _thread(bot, 9, c9["id"], "resolved", "rina")
    return {"c8": c8["id"], "c9": c9["id"]}


async def test_three_prs_people_judge_the_bot(tmp_path, capsys):
    async with running_bot(tmp_path) as bot:
        await three_prs(bot)
        rows = [(r["number"], r["defect_key"], r["kind"], r["transition"], r["verdict"],
                 r["signal"], r["by"])
                for r in bot.ledger.db.query(
                    "select p.number, v.* from verdicts v join pull_requests p "
                    "on p.id = v.pr_id order by p.number, v.defect_key, v.kind")]
        text = await bot.metrics()
    # By hand. Round 1 of each PR: the bot raises D1 (no tests) and D2 (a print).
    # PR 7: round 2 adds tests (D1 Resolved by tests-added: finding accepted), rina unresolves
    #   D1's thread (New→Resolved contradicted); round 3 changes nothing relevant, D2 is Open
    #   in rounds 2 and 3, then rina resolves it: finding dismissed, Open→Open contradicted.
    # PR 8: sam calls the print "intended" (D2 dismissed); rina's D3 on the `mean` line is
    #   edited in round 2 (New→Resolved), rina replies "Still wrong" (contradicted).
    # PR 9: wendy ignores D2 (dismissed); rina's D3 is resolved by the bot in round 2, then
    #   rina accepts and resolves the thread: one decision, confirmed once.
    assert rows == [
        (7, "D1", "finding", "raised", "accepted", "code-changed", None),
        (7, "D1", "state", "New→Resolved", "contradicted", "thread_unresolved", "rina"),
        (7, "D2", "finding", "raised", "dismissed", "thread_resolved", "rina"),
        (7, "D2", "state", "Open→Open", "contradicted", "thread_resolved", "rina"),
        (8, "D2", "finding", "raised", "dismissed", "reply-disagrees", "sam"),
        (8, "D3", "state", "New→Resolved", "contradicted", "reviewer_disputes", "rina"),
        (9, "D2", "finding", "raised", "dismissed", "command_ignore", "wendy"),
        (9, "D3", "state", "New→Resolved", "confirmed", "thread_resolved", "rina"),
    ]
    # Findings: 1 accepted, 3 dismissed (acceptance 1/4). New→Resolved: 1 confirmed,
    # 2 contradicted (2/3). Open→Open: 1 contradicted (1/1).
    live = {"repo": REPO}
    assert metric(text, "roundwise_live_verdicts", kind="finding", transition="raised",
                  verdict="accepted", **live) == 1
    assert metric(text, "roundwise_live_verdicts", kind="finding", transition="raised",
                  verdict="dismissed", **live) == 3
    assert metric(text, "roundwise_live_verdicts", kind="state", transition="New→Resolved",
                  verdict="confirmed", **live) == 1
    assert metric(text, "roundwise_live_verdicts", kind="state", transition="New→Resolved",
                  verdict="contradicted", **live) == 2
    assert metric(text, "roundwise_live_verdicts", kind="state", transition="Open→Open",
                  verdict="contradicted", **live) == 1
    assert metric(text, "roundwise_live_acceptance_rate", **live) == 0.25
    assert metric(text, "roundwise_live_contradiction_rate", transition="New→Resolved",
                  **live) == 0.6667
    assert metric(text, "roundwise_live_contradiction_rate", transition="Open→Open",
                  **live) == 1.0

    ledger = str(tmp_path / "ledger.db")
    capsys.readouterr()
    assert main(["stats", "--ledger", ledger, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["repos"] == {REPO: {
        "findings": {"accepted": 1, "dismissed": 3, "acceptance_rate": 0.25},
        "states": {"New→Resolved": {"confirmed": 1, "contradicted": 2,
                                    "contradiction_rate": 0.6667},
                   "Open→Open": {"confirmed": 0, "contradicted": 1,
                                 "contradiction_rate": 1.0}}}}
    assert "weak" in out["note"]
    # the per-repository confidence: each judged rule's development rate, updated with the
    # state verdicts above (3 New→Resolved, 1 Open→Open; 1 confirmed)
    rows = out["confidence"][REPO]
    assert sum(r["judged"] for r in rows) == 4 and sum(r["confirmed"] for r in rows) == 1
    for r in rows:
        if r["confirmed"] == 0:  # contradicted only: trusted less here than on unseen code
            assert r["here"] < r["development"]
    assert main(["stats", "--ledger", ledger]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split() == [REPO, "finding", "raised", "1", "3", "25.0%"]
    assert table[2].split() == [REPO, "state", "New→Resolved", "1", "2", "66.7%"]
    assert table[3].split() == [REPO, "state", "Open→Open", "0", "1", "100.0%"]
    assert "labels are weak" in table[-1]
    assert main(["stats", "--ledger", ledger, "--repo", "octo/other", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["repos"] == {}
    assert main(["stats", "--ledger", ledger, "--since", "2999-01-01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["repos"] == {}


def test_disagreeing_replies():
    assert DISAGREE.search("This is intended, see the spec")
    assert DISAGREE.search("False positive: the value is never None.")
    assert DISAGREE.search("won't fix")
    assert not DISAGREE.search("Fixed in the last push, thanks")
    assert not DISAGREE.search("Good catch, will change it")


def test_same_millisecond_events_keep_their_causal_order(tmp_path):
    """Bot decision, a person's thread action and the decision it causes, all stamped alike."""
    from bot.store.ledger_sqlite import Ledger
    from tracker.intake import take_thread
    from tracker.lifecycle import State
    from tracker.models import Decision, Finding
    from tracker.verdicts import classify

    with Ledger(tmp_path / "l.db") as led:
        pr = led.pull_request("o/r", 1, author="sam")["id"]
        led.begin_round(pr, "1" * 40)
        for key_line in (2, 9):
            d = led.add_defect(pr, Finding("close `f`", path="a.py", line_start=key_line,
                                           origin="human", author="rina"), 1)
            led.attach_comment(d.id, 100 + key_line, author="rina")
        led.finish_round(pr, 1)
        led.begin_round(pr, "2" * 40)
        for key in ("D1", "D2"):
            led.record_decision(pr, 2, Decision(key, State.RESOLVED, "anchor-modified", "x"))
        led.finish_round(pr, 2)
        take_thread(led, pr, resolved=True, by="rina", comment_ids=[102])  # D1: confirms
        take_thread(led, pr, resolved=False, by="rina", comment_ids=[109])  # D2: contradicts
        for table in ("state_history", "signals"):
            led.db.execute(f"update {table} set at = '2026-01-01T00:00:00.000+00:00'")
        assert led.defect(pr, "D2").state is State.OPEN
        got = {(v.defect_key, v.transition, v.verdict, v.signal) for v in classify(led, pr)}
    assert got == {("D1", "New→Resolved", "confirmed", "thread_resolved"),
                   ("D2", "New→Resolved", "contradicted", "thread_unresolved")}


def test_a_resolve_command_is_a_persons_action(tmp_path):
    from bot.store.ledger_sqlite import Ledger
    from tracker.lifecycle import State
    from tracker.models import DecidedBy, Decision, Finding
    from tracker.verdicts import classify

    with Ledger(tmp_path / "l.db") as led:
        pr = led.pull_request("o/r", 1, author="sam")["id"]
        for n in (1, 2, 3):
            led.begin_round(pr, str(n) * 40)
            if n == 1:
                led.add_defect(pr, Finding("leftover print", path="a.py", line_start=3), 1)
            else:
                led.record_decision(pr, n, Decision("D1", State.OPEN, "anchor-untouched", "x"))
            led.finish_round(pr, n)
        led.record_decision(pr, 3, Decision("D1", State.RESOLVED, "command_resolve",
                                            "wendy ran /roundwise resolve",
                                            decided_by=DecidedBy.HUMAN))
        got = {(v.kind, v.transition, v.verdict, v.signal, v.by) for v in classify(led, pr)}
    # Open in rounds 2 and 3, then resolved by a person with no change: both verdicts.
    assert got == {("finding", "raised", "dismissed", "command_resolve", "wendy"),
                   ("state", "Open→Open", "contradicted", "command_resolve", "wendy")}
