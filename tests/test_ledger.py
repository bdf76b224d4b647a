"""The ledger: schema, keys, transitions, transactions, deliveries. The core cases take
``any_ledger`` and run on both engines (a SQLite file, a fresh PostgreSQL schema)."""

import asyncio
import json
import subprocess
import sys

import pytest

from bot.store.ledger_sqlite import Ledger, LedgerError
from bot.store.schema_sqlite import migrations
from tracker.lifecycle import InvalidTransition, State
from tracker.models import DecidedBy, Decision, Finding, Origin
from tracker.serial import PRSerializer


def finding(path="app.py", line=3, **kw):
    return Finding(description=kw.pop("description", "bug"), path=path, line_start=line,
                   line_end=line, **kw)


def test_schema_is_migrated_once_and_uses_wal(tmp_path):
    path = tmp_path / "l.db"
    with Ledger(path) as led:
        assert led.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = set(led.db.table_names())
    assert {"pull_requests", "rounds", "defects", "state_history", "defect_comments",
            "deliveries", "installations", "signals", "leases", "verdicts", "learnings"} <= tables
    with Ledger(path) as led:  # reopening applies nothing twice
        names = [r["name"] for r in led.db["_sqlite_migrations"].rows]
        assert names == sorted(set(names)) and len(names) == len(migrations._migrations)


def test_keys_are_stable_per_pr_and_history_records_new(any_ledger):
    ledger = any_ledger
    a = ledger.pull_request("o/r", 1, author="sam")["id"]
    b = ledger.pull_request("o/r", 2)["id"]
    ledger.begin_round(a, "h1")
    d1 = ledger.add_defect(a, finding(), 1, code="x = 1")
    d2 = ledger.add_defect(a, finding(line=9), 1)
    e1 = ledger.add_defect(b, finding(), 0)
    assert (d1.key, d2.key, e1.key) == ("D1", "D2", "D1")
    assert d1.state is State.NEW and d1.fingerprint
    hist = ledger.history(a, "D1")
    assert [(h["round"], h["state"], h["decided_by"]) for h in hist] == [(1, "New", "rule")]
    assert ledger.pull_request("o/r", 1)["author"] == "sam"


def test_decisions_follow_the_lifecycle_and_can_be_revised_within_a_round(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    ledger.add_defect(pr, finding(), 1)
    ledger.finish_round(pr, 1)
    ledger.begin_round(pr, "h2")
    ledger.record_decision(pr, 2, Decision("D1", State.RESOLVED, "anchor-modified", "changed"))
    # a reviewer disputes it within round 2: Open is valid because round 1 ended New
    d = ledger.record_decision(pr, 2, Decision("D1", State.OPEN, "reviewer-disputes", "no",
                                               decided_by=DecidedBy.HUMAN))
    assert d.state is State.OPEN and d.state_round == 2
    ledger.finish_round(pr, 2)
    ledger.begin_round(pr, "h3")
    ledger.record_decision(pr, 3, Decision("D1", State.RESOLVED, "anchor-modified", "fixed"))
    ledger.finish_round(pr, 3)
    ledger.begin_round(pr, "h4")
    with pytest.raises(InvalidTransition, match="cannot go from Resolved to Open"):
        ledger.record_decision(pr, 4, Decision("D1", State.OPEN, "x", "y"))
    ledger.record_decision(pr, 4, Decision("D1", State.REOPENED, "fingerprint-reappeared", "back"))
    assert ledger.states_by_round(pr) == {"D1": {1: "New", 2: "Open", 3: "Resolved",
                                                 4: "Reopened"}}
    with pytest.raises(LedgerError, match="already decided at round 4"):
        ledger.record_decision(pr, 3, Decision("D1", State.RESOLVED, "x", "y"))
    with pytest.raises(LedgerError, match="no defect D9"):
        ledger.defect(pr, "D9")


def test_raised_round_allows_only_new_or_resolved(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    ledger.add_defect(pr, finding(), 1)
    with pytest.raises(LedgerError, match="can only be New or Resolved"):
        ledger.record_decision(pr, 1, Decision("D1", State.OPEN, "x", "y"))


def test_record_round_is_all_or_nothing(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    ledger.add_defect(pr, finding(), 1)
    ledger.add_defect(pr, finding(line=8), 1)
    ledger.finish_round(pr, 1)
    ledger.begin_round(pr, "h2")
    good = Decision("D1", State.RESOLVED, "anchor-modified", "changed")
    bad = Decision("D2", State.REOPENED, "nonsense", "New cannot become Reopened")
    with pytest.raises(InvalidTransition):
        ledger.record_round(pr, 2, [good, bad], [(finding(line=20), None)])
    assert [d.state for d in ledger.defects(pr)] == [State.NEW, State.NEW]
    assert len(ledger.defects(pr)) == 2  # the new finding was not kept either


def test_resolving_keeps_the_old_code_for_reopen_detection(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    ledger.add_defect(pr, finding(), 1, code="bad()")
    ledger.finish_round(pr, 1)
    ledger.begin_round(pr, "h2")
    d = ledger.record_decision(pr, 2, Decision("D1", State.RESOLVED, "m", "e", code="good()"))
    assert d.resolved_code == "bad()" and d.code == "good()"


def test_rounds_resume_after_a_crash_and_do_not_duplicate(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    r1 = ledger.begin_round(pr, "h1", "base")
    again = ledger.begin_round(pr, "h1", "base")  # the job ran again before completing
    assert r1["number"] == again["number"] == 1 and again["status"] == "running"
    ledger.finish_round(pr, 1, findings=2)
    done = ledger.begin_round(pr, "h1")
    assert done["status"] == "complete" and done["number"] == 1
    assert ledger.begin_round(pr, "h1", force=True)["number"] == 2
    ledger.finish_round(pr, 2, status="failed", error="boom")
    assert ledger.last_round(pr)["number"] == 1
    assert ledger.find_pull_request("o/r", 1)["last_reviewed_sha"] == "h1"
    with pytest.raises(LedgerError, match="complete or failed"):
        ledger.finish_round(pr, 2, status="weird")


def test_usage_adds_up(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    ledger.add_usage(pr, 1, 100, 20, 0.5)
    ledger.add_usage(pr, 1, 50, 5, 0.25)
    row = ledger.round(pr, 1)
    assert (row["prompt_tokens"], row["completion_tokens"], row["cost"]) == (150, 25, 0.75)


def test_comments_link_to_defects_and_threads(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    d = ledger.add_defect(pr, finding(origin=Origin.HUMAN, author="rina"), 0)
    ledger.attach_comment(d.id, 501, author="rina", body="bug")
    ledger.attach_comment(d.id, 502, author="sam", body="fixed", in_reply_to=501)
    ledger.attach_comment(d.id, 502, author="sam", body="fixed", in_reply_to=501)  # idempotent
    ledger.set_thread(pr, "D1", "PRRT_1")
    assert ledger.defect_by_comment(pr, 502).key == "D1"
    assert ledger.defect_by_thread(pr, "PRRT_1").key == "D1"
    assert ledger.thread_root(pr, "D1")["id"] == 501
    assert ledger.defect(pr, "d1").comment_ids == [501, 502]


def test_ledger_is_readable_with_the_sqlite_utils_cli(tmp_path):
    path = tmp_path / "l.db"
    with Ledger(path) as led:
        pr = led.pull_request("o/r", 1)["id"]
        led.add_defect(pr, finding(description="cache checked after the DB call"), 0)
    out = subprocess.run(
        [sys.executable, "-m", "sqlite_utils", "rows", str(path), "defects"],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = json.loads(out)
    assert rows[0]["key"] == "D1" and rows[0]["description"] == "cache checked after the DB call"


async def test_rounds_of_one_pr_never_interleave_but_different_prs_do(tmp_path):
    from bot.store import open_queue_store

    serial = PRSerializer(open_queue_store(str(tmp_path / "l.db")), poll=0.005)
    log = []
    both_inside = asyncio.Event()
    inside = set()

    async def work(pr, tag):
        async with serial.hold(pr):
            log.append(("in", pr, tag))
            inside.add((pr, tag))
            if len({p for p, _ in inside}) == 2:
                both_inside.set()
            await asyncio.sleep(0.02)
            inside.discard((pr, tag))
            log.append(("out", pr, tag))

    await asyncio.gather(work(1, "a"), work(1, "b"), work(2, "c"))
    pr1 = [e for e in log if e[1] == 1]
    assert pr1 == [("in", 1, "a"), ("out", 1, "a"), ("in", 1, "b"), ("out", 1, "b")]
    assert both_inside.is_set()  # PR 2 ran while PR 1 was busy


def test_leases_serialise_across_connections(tmp_path):
    from bot.store import open_queue_store

    path = str(tmp_path / "l.db")
    one, two = open_queue_store(path), open_queue_store(path)
    try:
        assert one.acquire_lease(5, "proc-a") is True
        assert two.acquire_lease(5, "proc-b") is False
        assert two.acquire_lease(6, "proc-b") is True
        one.release_lease(5, "proc-a")
        assert two.acquire_lease(5, "proc-b") is True
        assert one.acquire_lease(7, "proc-a", ttl=-1) is True  # an expired lease
        assert two.acquire_lease(7, "proc-b") is True
    finally:
        one.close()
        two.close()
