"""The ledger store seam on both engines: ``Ledger`` (SQLite) and ``PostgresLedgerStore``
implement ``LedgerStore``, and what bot/ and the tracker used to ask in raw SQL has methods.

Tests taking ``any_ledger`` or ``make_ledger`` (tests/conftest.py) run on a fresh SQLite file
and on a fresh PostgreSQL schema (dropped afterwards); the PostgreSQL cases skip, saying why,
when no server answers at ``ROUNDWISE_TEST_PG``."""

from __future__ import annotations

import inspect
import sqlite3
import time

import pytest

from bot.store import open_ledger_store as open_any_store
from bot.store import split_schema
from bot.store.ledger_postgres import PostgresLedgerStore
from bot.store.ledger_sqlite import Ledger, LedgerError, now
from bot.store.schema_postgres import LEDGER_MIGRATIONS
from tracker.lifecycle import InvalidTransition, State
from tracker.models import DecidedBy, Decision, Finding, Origin, Signal
from tracker.store import LedgerStore
from tracker.verdicts import refresh, summarise

from .conftest import PG_URL


def _members(cls) -> list[str]:
    return [n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")]


@pytest.mark.parametrize("engine", [Ledger, PostgresLedgerStore])
def test_both_engines_implement_every_store_method_with_its_parameters(engine):
    assert _members(LedgerStore)  # the interface is not empty
    for name in _members(LedgerStore):
        wanted = inspect.signature(getattr(LedgerStore, name)).parameters
        have = inspect.signature(getattr(engine, name)).parameters
        for param, spec in wanted.items():
            if spec.kind is inspect.Parameter.VAR_KEYWORD:
                continue
            assert param in have, f"{engine.__name__}.{name} lacks {param}"


def test_the_store_opens_sqlite_by_url_or_path(tmp_path):
    with open_any_store(f"sqlite:///{tmp_path / 'a.db'}") as one:
        assert isinstance(one, LedgerStore)
        one.pull_request("o/r", 1)
    with open_any_store(str(tmp_path / "a.db")) as again:
        assert [p["number"] for p in again.pull_requests()] == [1]
    with open_any_store(str(tmp_path / "a.db")) as same:  # the one chooser: SQLite here
        assert isinstance(same, Ledger) and not getattr(same, "threaded", False)


def test_the_bot_opens_a_postgres_ledger_in_the_schema_its_url_names(pg_schema):
    with open_any_store(f"{PG_URL}?schema={pg_schema}") as store:
        assert isinstance(store, LedgerStore) and store.threaded
        assert store.migrated == [name for name, _ in LEDGER_MIGRATIONS]
        store.pull_request("o/r", 5)
    with open_any_store(PG_URL, schema=pg_schema) as again:  # migrations applied once
        assert again.migrated == [] and again.find_pull_request("o/r", 5)["number"] == 5


def test_split_schema_takes_the_schema_out_of_the_url_and_checks_it():
    assert split_schema("postgresql://u@h/db") == ("postgresql://u@h/db", None)
    assert split_schema("postgresql://u@h/db?sslmode=require&schema=rw_a") == (
        "postgresql://u@h/db?sslmode=require", "rw_a")
    with pytest.raises(ValueError, match="schema name"):
        split_schema("postgresql://u@h/db?schema=a;drop")


def test_pull_requests_by_repo_and_by_id(any_ledger):
    ledger = any_ledger
    b = ledger.pull_request("o/b", 2)
    a = ledger.pull_request("o/a", 9)
    ledger.pull_request("o/b", 1)
    assert [(p["repo"], p["number"]) for p in ledger.pull_requests()] == [
        ("o/a", 9), ("o/b", 1), ("o/b", 2)]
    assert [p["number"] for p in ledger.pull_requests("o/b")] == [1, 2]
    assert ledger.pull_request_by_id(a["id"])["repo"] == "o/a"
    assert ledger.pull_request_by_id(b["id"] + 100) is None


def test_the_pr_of_a_check_run_or_head_is_the_latest_rounds(any_ledger):
    ledger = any_ledger
    one = ledger.pull_request("o/r", 1)["id"]
    two = ledger.pull_request("o/r", 2)["id"]
    first = ledger.begin_round(one, "aaa")
    ledger.update_round(first["id"], check_run_id=77)
    ledger.begin_round(two, "bbb")
    assert ledger.pr_number_for_check("o/r", 77, None) == 1
    assert ledger.pr_number_for_check("o/r", None, "bbb") == 2
    assert ledger.pr_number_for_check("o/other", 77, "bbb") is None
    assert ledger.round(one, first["number"])["check_run_id"] == 77


def test_people_comments_since_leave_out_the_bot_and_older_ones(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "aaa")
    finding = Finding("off by one", path="a.py", line_start=3, line_end=3)
    defect = ledger.add_defect(pr, finding, 1)
    ledger.attach_comment(defect.id, 1, author="roundwise[bot]", body="raised",
                          posted_by_bot=True)
    ledger.attach_comment(defect.id, 2, author="ann", body="early")
    time.sleep(0.01)
    since = now()
    ledger.attach_comment(defect.id, 3, author="bob", body="still wrong")
    assert [c["body"] for c in ledger.people_comments_since(pr, "")] == ["early",
                                                                          "still wrong"]
    assert ledger.people_comments_since(pr, since) == [
        {"key": defect.key, "author": "bob", "body": "still wrong"}]


def test_heartbeat_writes_and_fails_loudly_on_a_read_only_ledger(tmp_path):
    path = tmp_path / "h.db"
    with Ledger(path) as ledger:
        ledger.heartbeat()
        assert ledger.db["heartbeat"].count == 1
    with Ledger(path) as ledger:
        ledger.db.execute("PRAGMA query_only = ON")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ledger.heartbeat()


def test_the_postgres_heartbeat_writes_and_fails_loudly_when_it_cannot(pg_schema):
    import psycopg

    with open_any_store(PG_URL, schema=pg_schema) as store:
        store.heartbeat()
        store.heartbeat()
        with store.pool.connection() as conn:
            assert conn.execute("select count(*) as n from heartbeat").fetchone()["n"] == 1
            conn.execute("revoke all on heartbeat from public")
            conn.execute("alter table heartbeat rename to heartbeat_gone")
        with pytest.raises(psycopg.errors.UndefinedTable):
            store.heartbeat()


def _round_one(ledger, count=3):
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    ledger.record_round(pr, 1, [], [(Finding(f"bug {i}", path="a.py", line_start=i + 1),
                                     f"code {i}") for i in range(count)], head_sha="h1")
    ledger.finish_round(pr, 1)
    ledger.begin_round(pr, "h2")
    return pr


def test_record_round_applies_decisions_in_order_and_the_last_of_a_round_stands(any_ledger):
    ledger = any_ledger
    pr = _round_one(ledger)
    created = ledger.record_round(pr, 2, [
        Decision("D1", State.RESOLVED, "anchor-modified", "changed", code="fixed 0", path="b.py",
                 line_start=9, line_end=10),
        Decision("d1", State.OPEN, "reviewer-disputes", "no", decided_by=DecidedBy.HUMAN),
        Decision("D2", State.OPEN, "carried", "still there", signals=["ann replied"]),
    ], [(Finding("new one", path="c.py", line_start=4), "x = 4")], ["D4"], head_sha="h2")
    assert [(d.key, d.state, d.raised_round, d.anchor_sha) for d in created] == [
        ("D4", State.NEW, 2, "h2")]
    one, two, three = ledger.defects(pr)[:3]
    assert (one.state, one.state_round, one.path, one.line_start, one.line_end) == (
        State.OPEN, 2, "b.py", 9, 10)
    assert (one.code, one.resolved_code, one.anchor_sha) == ("fixed 0", "code 0", "h2")
    assert (two.state, two.code, three.state, three.anchor_sha) == (
        State.OPEN, "code 1", State.NEW, "h1")
    assert [(h["state"], h["decided_by"]) for h in ledger.history(pr, "D1")] == [
        ("New", "rule"), ("Resolved", "rule"), ("Open", "human")]
    assert ledger.history(pr, "D2")[-1]["evidence"] == "still there | signals: ann replied"
    assert ledger.states_by_round(pr)["D1"] == {1: "New", 2: "Open"}


def test_record_round_checks_every_decision_before_writing_any(any_ledger):
    ledger = any_ledger
    pr = _round_one(ledger)
    good = Decision("D1", State.RESOLVED, "anchor-modified", "changed")
    with pytest.raises(InvalidTransition):
        ledger.record_round(pr, 2, [good, Decision("D2", State.REOPENED, "x", "y")])
    with pytest.raises(LedgerError, match="no defect D9"):
        ledger.record_round(pr, 2, [good, Decision("D9", State.OPEN, "x", "y")])
    with pytest.raises(LedgerError, match="next free key is D4"):
        ledger.record_round(pr, 2, [good], [(Finding("late"), None)], ["D7"])
    assert [d.state for d in ledger.defects(pr)] == [State.NEW] * 3
    assert all(len(ledger.history(pr, k)) == 1 for k in ("D1", "D2", "D3"))


def test_record_round_writes_a_round_in_a_few_statements_on_postgres(pg_schema):
    from contextlib import contextmanager

    with open_any_store(PG_URL, schema=pg_schema) as store:
        pr = _round_one(store, count=40)
        statements = []

        class CountingCursor:
            def __init__(self, cur):
                self.cur = cur

            def executemany(self, query, rows):
                statements.append(query)
                return self.cur.executemany(query, rows)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.cur.close()

        class Counting:
            def __init__(self, conn):
                self.conn = conn

            def execute(self, *args, **kw):
                statements.append(args[0])
                return self.conn.execute(*args, **kw)

            def cursor(self):
                return CountingCursor(self.conn.cursor())

            def __getattr__(self, name):
                return getattr(self.conn, name)

        plain = store._conn

        @contextmanager
        def counted():
            with plain() as conn:
                yield Counting(conn)

        store._conn = counted
        store.record_round(pr, 2, [Decision(f"D{i + 1}", State.RESOLVED, "m", "gone")
                                   for i in range(40)],
                           [(Finding(f"n{i}", path="z.py", line_start=i + 1), None)
                            for i in range(10)], head_sha="h2")
        store._conn = plain
        assert len(statements) <= 8, statements
        assert [d.state for d in store.defects(pr)] == [State.RESOLVED] * 40 + [State.NEW] * 10


def test_nested_transactions_roll_back_only_the_inner_block(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    with ledger.transaction():
        ledger.add_defect(pr, Finding("kept"), 0)
        with pytest.raises(RuntimeError), ledger.transaction():
            ledger.add_defect(pr, Finding("dropped"), 0)
            raise RuntimeError("inner fails")
        ledger.add_defect(pr, Finding("kept too"), 0)
    with pytest.raises(RuntimeError), ledger.transaction():
        ledger.add_defect(pr, Finding("outer dropped"), 0)
        raise RuntimeError("outer fails")
    assert [(d.key, d.description) for d in ledger.defects(pr)] == [
        ("D1", "kept"), ("D2", "kept too")]


def test_two_stores_on_one_database_see_each_others_writes(make_ledger):
    one, two = make_ledger(), make_ledger()
    pr = one.pull_request("o/r", 3, title="first")["id"]
    assert two.pull_request("o/r", 3, author="sam")["id"] == pr
    assert one.find_pull_request("o/r", 3)["author"] == "sam"
    two.begin_round(pr, "h1")
    assert one.begin_round(pr, "h1")["number"] == 1  # resumed, not a second round
    one.add_defect(pr, Finding("bug"), 1)
    with pytest.raises(LedgerError, match="next free key is D2"):
        two.add_defect(pr, Finding("again"), 1, key="D1")


def test_ignoring_editing_signals_and_threads(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    d = ledger.add_defect(pr, Finding("typo", origin=Origin.HUMAN, author="rina",
                                      comment_id=9_000_000_001), 1)
    assert d.comment_ids == [9_000_000_001]  # GitHub ids need 64 bits
    assert ledger.set_description(pr, "D1", "typo in the name").description == \
        "typo in the name"
    ledger.add_signal(pr, d, 1, Signal("reviewer_disputes", "D1", "sam", "not a bug", 7))
    assert ledger.signals(pr, 1) == [Signal("reviewer_disputes", "D1", "sam", "not a bug", 7)]
    assert ledger.signals(pr, 2) == []
    (row,) = ledger.signal_rows(pr, "D1")
    assert (row["kind"], row["round"], row["author"], row["comment_id"]) == \
        ("reviewer_disputes", 1, "sam", 7) and row["at"]
    ignored = ledger.set_ignored(pr, "D1", "rina", 1)
    assert ignored.ignored and ledger.defects(pr, include_ignored=False) == []
    assert ledger.history(pr, "D1")[-1]["rule"] == "ignored"
    assert ledger.previous_state(ignored, 2) is State.NEW
    assert ledger.previous_state(ignored, 3) is State.OPEN
    with pytest.raises(LedgerError, match="no defect D5"):
        ledger.set_description(pr, "D5", "x")


def test_verdicts_are_stored_and_counted_through_the_store(any_ledger):
    ledger = any_ledger
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    d = ledger.add_defect(pr, Finding("bug", path="a.py", line_start=1), 1)
    ledger.attach_comment(d.id, 11, author="roundwise[bot]", posted_by_bot=True)
    ledger.finish_round(pr, 1)
    ledger.begin_round(pr, "h2")
    ledger.record_decision(pr, 2, Decision("D1", State.RESOLVED, "command_resolve",
                                           "ann ran /roundwise resolve",
                                           decided_by=DecidedBy.HUMAN))
    activity = ledger.defect_activity(d.id)
    assert [h["state"] for h in activity["state_history"]] == ["New", "Resolved"]
    assert [c["id"] for c in activity["defect_comments"]] == [11]
    verdicts = refresh(ledger, pr, {"roundwise[bot]"})
    assert verdicts and refresh(ledger, pr, {"roundwise[bot]"}) == verdicts  # replaced
    counts = summarise(ledger)["o/r"]["findings"]
    assert counts["accepted"] + counts["dismissed"] == sum(
        v.kind == "finding" for v in verdicts)
    assert summarise(ledger, repo="o/other") == {}


def test_stores_opened_together_on_postgres_migrate_once(pg_schema):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: open_any_store(PG_URL, schema=pg_schema), range(4)))
    try:
        assert sorted(len(s.migrated) for s in stores) == [0, 0, 0, len(LEDGER_MIGRATIONS)]
        stores[0].pull_request("o/r", 1)
        assert [p["number"] for p in stores[3].pull_requests()] == [1]
    finally:
        for store in stores:
            store.close()


def test_rule_verdicts_count_peoples_verdicts_per_rule_of_a_repository(any_ledger):
    from tracker.verdicts import rule_record

    mine = any_ledger.pull_request("o/r", 1)["id"]
    branch = any_ledger.pull_request("local:o/r:topic", 2)["id"]
    other = any_ledger.pull_request("o/other", 3)["id"]

    def row(pr_id, rule, verdict, kind="state"):
        return {"pr_id": pr_id, "defect_key": "D1", "round": 2, "kind": kind,
                "transition": "New→Resolved", "rule": rule, "verdict": verdict,
                "signal": "thread_unresolved", "signal_round": 3, "by": "rina",
                "evidence": "", "decided_at": now(), "at": now()}

    any_ledger.replace_verdicts(mine, [row(mine, "anchor-modified", "confirmed"),
                                       row(mine, "anchor-modified", "contradicted"),
                                       row(mine, "anchor-untouched", "contradicted"),
                                       row(mine, "tests-added", "accepted", kind="finding")])
    any_ledger.replace_verdicts(branch, [row(branch, "anchor-modified", "confirmed")])
    any_ledger.replace_verdicts(other, [row(other, "anchor-modified", "contradicted")])
    assert rule_record(any_ledger, "o/r") == {"anchor-modified": (1, 2),
                                              "anchor-untouched": (0, 1)}
    # the local CLI's PRs (one per branch) count for the whole local repository
    assert rule_record(any_ledger, "local:o/r:other-branch") == {"anchor-modified": (1, 1)}
    assert rule_record(any_ledger, "o/none") == {}
