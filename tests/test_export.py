"""``roundwise bench export`` / ``bench build`` and scoring only where people gave a signal.

The three PRs of ``test_live_signals`` are driven through the real server and fake GitHub,
closed, exported from the real ledger file, and replayed by ``bench run``; a small git
repository built in a tmp folder shows ``--git-dir`` and ``bench build`` filling diffs, files and
commits.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

from bench.replay import payloads
from bench.report import compare
from bench.score.judge import OfflineJudge
from bench.score.scoring import score
from bench.tasks.mcr import load_task, parse_task
from bot.store.ledger_sqlite import Ledger
from roundwise.cli import main
from tracker.intake import take_thread
from tracker.lifecycle import State
from tracker.models import Decision, Finding

from .server_kit import REPO, running_bot
from .test_live_signals import sha, three_prs

H = "human-signal"


async def test_export_writes_what_people_did_and_bench_run_scores_it(tmp_path, capsys):
    async with running_bot(tmp_path) as bot:
        ids = await three_prs(bot)
        for number, merged in ((7, True), (8, True), (9, False)):
            bot.fake.close_pr(REPO, number, merged=merged)
            await bot.deliver("pull_request", payloads.pull_request(bot.fake, REPO, number,
                                                                    "closed"))
        await bot.idle()
        roots = {n: {d.key: (bot.ledger.thread_root(pr["id"], d.key) or {}).get("id")
                     for d in bot.ledger.defects(pr["id"])}
                 for n in (7, 8, 9) if (pr := bot.ledger.find_pull_request(REPO, n))}
    ledger, out = str(tmp_path / "ledger.db"), tmp_path / "tasks"
    assert main(["bench", "export", "--ledger", ledger, "--repo", REPO, "--out",
                 str(out)]) == 0
    assert "3 task(s) written" in capsys.readouterr().out
    tasks = {p.name: json.loads(p.read_text()) for p in sorted(out.iterdir())}
    assert sorted(tasks) == ["octo__widgets-7.json", "octo__widgets-8.json",
                             "octo__widgets-9.json"]
    t7, t8, t9 = (tasks[f"octo__widgets-{n}.json"] for n in (7, 8, 9))
    for n, task in ((7, t7), (8, t8), (9, t9)):
        assert [r["head_sha"] for r in task["rounds"]] == \
            [sha(n, r) for r in range(1, len(task["rounds"]) + 1)]
        parse_task(task)  # a valid mcr-task/1
    assert (t7["pr"]["status"], t9["pr"]["status"]) == ("merged", "closed")

    def cards(task):
        return {c["id"]: (c["origin"], c["states"], c["label_sources"], c["bot_states"])
                for c in task["defects"]}

    # PR 7: D1 accepted (tests added) then its thread unresolved by rina: Open by people from
    # round 2 on, the bot's Resolved beside it; D2 dismissed (resolved unchanged): no card.
    assert cards(t7) == {"D1": ("bot", ["New", "Open", "Open"], [H, H, H],
                                ["New", "Resolved", None])}
    assert [d["defect"] for d in t7["dismissed_findings"]] == ["D2"]
    assert [(e["kind"], e["author"], e["comment_id"]) for e in t7["rounds"][1]["events"]] == \
        [("thread_unresolved", "rina", roots[7]["D1"])]
    assert [(e["kind"], e["author"]) for e in t7["rounds"][2]["events"]] == \
        [("thread_resolved", "rina")]
    # PR 8: rina's D3, resolved by the bot in round 2 and disputed by her: Open.
    assert cards(t8) == {"D3": ("human", ["New", "Open"], [H, H], [None, "Resolved"])}
    [d3] = t8["defects"]
    assert d3["comment_ids"] == [ids["c8"]] and d3["raised_in_round"] == 1
    assert [(e["kind"], e["author"], e["in_reply_to"]) for e in t8["rounds"][0]["events"]] == \
        [("review_comment", "rina", None), ("review_comment", "sam", roots[8]["D2"])]
    assert [(e["author"], e["in_reply_to"], e["body"][:11]) for e in t8["rounds"][1]["events"]] \
        == [("rina", ids["c8"], "Still wrong")]
    # PR 9: rina's D3, resolved by the bot in round 2 and confirmed by her: Resolved.
    assert cards(t9) == {"D3": ("human", ["New", "Resolved"], [H, H], [None, "Resolved"])}
    assert [d["defect"] for d in t9["dismissed_findings"]] == ["D2"]
    decided = {(d["defect"], d["round"], d["state"], d["rule"]) for d in t9["bot_decisions"]}
    assert ("D3", 2, "Resolved", "anchor-modified") in decided
    # the print wendy ignored is not raised again by the same check (it once came back as D4)
    assert not any(d[0] == "D4" for d in decided)

    # bench run loads the exported tasks and scores states only where people gave a signal.
    run = tmp_path / "run"
    assert await asyncio.to_thread(main, ["bench", "run", "--tasks", str(out), "--out",
                                          str(run), "--quiet"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["tasks"] == 3 and summary["run"]["tasks_failed"] == {}
    assert summary["human_signal"]["tasks"] == 3
    assert summary["human_signal"]["labelled_states"] == 3 + 2 + 2
    assert "agreement with people" in capsys.readouterr().out


def test_states_without_a_human_signal_are_not_scored():
    card = {"id": "D1", "path": "a.py", "line_start": 2, "line_end": 2, "raised_in_round": 1,
            "description": "`x` is never closed", "states": ["New", "Open", "Resolved"],
            "comment_ids": [11]}
    rounds = [{"round": r, "head_sha": str(r) * 40, "diff": "", "files": {},
               "events": [{"kind": "review_comment", "id": 11, "author": "rina",
                           "path": "a.py", "line": 2, "body": card["description"]}]
               if r == 1 else []} for r in (1, 2, 3)]

    def record(t, state):
        return {"task": "t", "round": t, "rounds": 3, "kind": "mcr", "defects": [
            {"key": "D1", "path": "a.py", "line_start": 2, "line_end": 2, "state": state,
             "description": card["description"], "comment_ids": [11], "origin": "human",
             "raised_round": 1}]}

    records = [record(1, "New"), record(2, "Resolved"), record(3, "Resolved")]

    def run(labels):
        task = {"schema": "mcr-task/1", "task_id": "t", "repo": "o/r", "pr": {"number": 1},
                "rounds": rounds, "defects": [{**card, **labels}]}
        return score([parse_task(task)], records, OfflineJudge())

    plain = run({})
    # Two live pairs: round 2's Open answered Resolved (wrong), round 3's Resolved (right).
    assert (plain["tracking"]["n"], plain["tracking"]["state_accuracy"]) == (2, 0.5)
    assert "human_signal" not in plain
    weak = run({"label_sources": [H, None, H]})
    # Round 2 has no human signal: its pair is gone, round 3's stays.
    assert (weak["tracking"]["n"], weak["tracking"]["state_accuracy"]) == (1, 1.0)
    assert weak["human_signal"]["labelled_states"] == 2
    assert weak["state_n"] == plain["state_n"] - 1
    # bench compare shows agreement with people beside the usual figures.
    rows = {line.split("  ")[0]: line.split() for line in compare(plain, weak).splitlines()}
    assert rows["agreement with people: tracking"][-3:] == ["-", "1.000", "-"]
    assert rows["human-signal states"][-3:] == ["-", "2", "-"]


def _git(cwd, *args):
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_git_dir_fills_diffs_files_and_commits(tmp_path, capsys):
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "sam@example.com")
    _git(repo, "config", "user.name", "sam")
    (repo / "app.py").write_text("def f(x):\n    return x\n")
    (repo / "old.txt").write_text("bye\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "app.py").write_text("def f(x):\n    print(x)\n    return x\n")
    _git(repo, "rm", "-q", "old.txt")
    _git(repo, "commit", "-qam", "add a print")
    head1 = _git(repo, "rev-parse", "HEAD")
    (repo / "app.py").write_text("def f(x):\n    return x\n\n\nY = 2\n")
    _git(repo, "commit", "-qam", "drop the print")
    head2 = _git(repo, "rev-parse", "HEAD")

    path = tmp_path / "ledger.db"
    with Ledger(path) as led:
        pr = led.pull_request("o/r", 3, author="sam", title="f")
        led.begin_round(pr["id"], head1, base)
        led.add_defect(pr["id"], Finding("stray print", path="app.py", line_start=2,
                                         origin="human", author="rina"), 1, code="    print(x)")
        led.finish_round(pr["id"], 1)
        led.attach_comment(led.defect(pr["id"], "D1").id, 900, author="rina",
                           body="stray print")
        led.begin_round(pr["id"], head2, base)
        led.record_decision(pr["id"], 2, Decision("D1", State.RESOLVED, "subject-removed",
                                                  "print gone"))
        led.finish_round(pr["id"], 2)
        take_thread(led, pr["id"], resolved=True, by="rina", comment_ids=[900])
        led.update_pull_request(pr["id"], status="merged")

    out = tmp_path / "tasks"
    assert main(["bench", "export", "--ledger", str(path), "--out", str(out),
                 "--git-dir", str(repo)]) == 0
    task = load_task(out / "o__r-3.json")
    assert [r.head_sha for r in task.rounds] == [head1, head2]
    assert task.round(1).files == {"app.py": "def f(x):\n    print(x)\n    return x\n",
                                   "old.txt": None}
    assert task.round(2).files == {"app.py": "def f(x):\n    return x\n\n\nY = 2\n",
                                   "old.txt": None}
    assert "+    print(x)" in task.round(1).diff and "-bye" in task.round(1).diff
    assert [c["message"] for c in task.round(1).commits] == ["add a print"]
    assert [c["message"] for c in task.round(2).commits] == ["drop the print"]
    # rina raised it and confirmed the bot's Resolved by resolving the thread.
    [card] = task.defects
    assert (card["states"], card["label_sources"]) == (["New", "Resolved"], [H, H])

    # Without --git-dir the rounds are empty; bench build fills them later, in place.
    bare = tmp_path / "bare"
    assert main(["bench", "export", "--ledger", str(path), "--out", str(bare)]) == 0
    assert load_task(bare / "o__r-3.json").round(1).files == {}
    assert main(["bench", "build", "--tasks", str(bare), "--git-dir", str(repo)]) == 0
    assert "1 task(s) filled" in capsys.readouterr().out
    rebuilt = load_task(bare / "o__r-3.json")
    assert rebuilt.round(2).files == task.round(2).files
    assert rebuilt.round(1).diff == task.round(1).diff


def test_label_agreement_compares_human_signals_with_the_tasks_labels(tmp_path, capsys):
    from bench.studies import label_agreement
    from tracker.models import DecidedBy

    run = tmp_path / "run"
    (run / "work").mkdir(parents=True)
    with Ledger(run / "work" / "ledger.db") as led:
        pr = led.pull_request("bench/t1", 1, author="sam")
        led.begin_round(pr["id"], "1" * 40, "0" * 40)
        d1 = led.add_defect(pr["id"], Finding("close `f`", path="a.py", line_start=2,
                                              origin="human", author="rina"), 1)
        led.attach_comment(d1.id, 500, author="rina", body="close `f`")
        led.add_defect(pr["id"], Finding("unused import", path="a.py", line_start=1,
                                         origin="human", author="rina"), 1)
        led.finish_round(pr["id"], 1)
        led.begin_round(pr["id"], "2" * 40, "0" * 40)
        led.record_decision(pr["id"], 2, Decision("D1", State.RESOLVED, "anchor-modified", "x"))
        led.record_decision(pr["id"], 2, Decision("D1", State.OPEN, "reviewer-disputes",
                                                  "rina: still open",
                                                  decided_by=DecidedBy.HUMAN))
        led.finish_round(pr["id"], 2)
    task = {"schema": "mcr-task/1", "task_id": "t1", "repo": "o/r", "pr": {"number": 1},
            "rounds": [{"round": r, "head_sha": str(r) * 40, "diff": "", "files": {},
                        "events": []} for r in (1, 2)],
            "defects": [{"id": "C1", "path": "a.py", "line_start": 2, "raised_in_round": 1,
                         "states": ["New", "Resolved"], "comment_ids": [11]},
                        {"id": "C2", "path": "b.py", "line_start": 5, "raised_in_round": 2,
                         "states": [None, "New"], "comment_ids": [12]}]}
    (tmp_path / "t1.json").write_text(json.dumps(task))
    (run / "results.jsonl").write_text(json.dumps(
        {"task": "t1", "round": 2, "matches": [], "defects": [
            {"key": "D1", "comment_ids": [11]}]}) + "\n")
    out = label_agreement.agreement(run, [str(tmp_path / "t1.json")])
    # C1: New at round 1 (rina raised it: agree), Resolved at round 2 where rina's dispute
    # says Open (disagree). C2 got no signal. D2 has human labels but no task card.
    assert out["by_task_state"]["New"] == {"states": 2, "human_signal": 1, "coverage": 0.5,
                                           "agree": 1, "agreement": 1.0}
    assert out["by_task_state"]["Resolved"] == {"states": 1, "human_signal": 1,
                                                "coverage": 1.0, "agree": 0, "agreement": 0.0}
    assert out["confusion"] == {"New->New": 1, "Resolved->Open": 1}
    assert out["unmapped_labels"] == {"human": 1}  # D2 New; its carried Open has no signal
    assert out["total"] == {"states": 3, "human_signal": 2, "agree": 1}
    assert label_agreement.main(["--run", str(run), "--tasks", str(tmp_path / "t1.json")]) == 0
    assert "Resolved->Open 1" in capsys.readouterr().out


async def test_replay_acts_out_exported_thread_resolutions(tmp_path):
    from bench.replay.github import Harness, bench_repo, replay_task

    from .conftest import EXAMPLES

    task = load_task(EXAMPLES / "example-python-profile-cache.json")
    # As an exported task would carry it: rina resolves her "add tests" thread (event 2)
    # right after round 1, before any test exists.
    task.rounds[0].events.append({"kind": "thread_resolved", "comment_id": 2,
                                  "author": "rina", "defect": "D3"})
    async with Harness(tmp_path / "ledger.db") as h:
        records = await replay_task(h, task)
        pr = h.ledger.find_pull_request(bench_repo(task), task.pr["number"])
        [key] = [d["key"] for d in records[1]["defects"] if d["comment_ids"] == [2]]
        last = h.ledger.history(pr["id"], key)
    # Without the event it is Open in round 2 (anchor-untouched); people resolved it.
    assert [d["state"] for d in records[1]["defects"] if d["key"] == key] == ["Resolved"]
    assert [(x["round"], x["state"], x["rule"], x["decided_by"]) for x in last][:2] == \
        [(1, "New", "raised-by-review-comment", "human"),
         (1, "Resolved", "thread_resolved", "human")]
