"""The ledger store seam: ``Ledger`` is the SQLite ``LedgerStore``, and what bot/ used to ask
of the ledger in raw SQL now has methods, checked here on a real SQLite file."""

from __future__ import annotations

import inspect
import sqlite3
import time

import pytest

from tracker.ledger import Ledger, LedgerError, now
from tracker.models import Finding
from tracker.store import LedgerStore, open_ledger_store


def _members(cls) -> list[str]:
    return [n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")]


def test_ledger_implements_every_store_method_with_its_parameters():
    assert _members(LedgerStore)  # the interface is not empty
    for name in _members(LedgerStore):
        wanted = inspect.signature(getattr(LedgerStore, name)).parameters
        have = inspect.signature(getattr(Ledger, name)).parameters
        for param, spec in wanted.items():
            if spec.kind is inspect.Parameter.VAR_KEYWORD:
                continue
            assert param in have, f"Ledger.{name} lacks {param}"


def test_open_ledger_store_takes_paths_and_sqlite_urls_and_refuses_postgres(tmp_path):
    with open_ledger_store(f"sqlite:///{tmp_path / 'a.db'}") as one:
        assert isinstance(one, LedgerStore)
        one.pull_request("o/r", 1)
    with open_ledger_store(str(tmp_path / "a.db")) as again:
        assert [p["number"] for p in again.pull_requests()] == [1]
    with pytest.raises(LedgerError, match="no PostgreSQL store"):
        open_ledger_store("postgresql://postgres@127.0.0.1/test")


def test_pull_requests_by_repo_and_by_id(ledger):
    b = ledger.pull_request("o/b", 2)
    a = ledger.pull_request("o/a", 9)
    ledger.pull_request("o/b", 1)
    assert [(p["repo"], p["number"]) for p in ledger.pull_requests()] == [
        ("o/a", 9), ("o/b", 1), ("o/b", 2)]
    assert [p["number"] for p in ledger.pull_requests("o/b")] == [1, 2]
    assert ledger.pull_request_by_id(a["id"])["repo"] == "o/a"
    assert ledger.pull_request_by_id(b["id"] + 100) is None


def test_the_pr_of_a_check_run_or_head_is_the_latest_rounds(ledger):
    one = ledger.pull_request("o/r", 1)["id"]
    two = ledger.pull_request("o/r", 2)["id"]
    first = ledger.begin_round(one, "aaa")
    ledger.update_round(first["id"], check_run_id=77)
    ledger.begin_round(two, "bbb")
    assert ledger.pr_number_for_check("o/r", 77, None) == 1
    assert ledger.pr_number_for_check("o/r", None, "bbb") == 2
    assert ledger.pr_number_for_check("o/other", 77, "bbb") is None
    assert ledger.round(one, first["number"])["check_run_id"] == 77


def test_people_comments_since_leave_out_the_bot_and_older_ones(ledger):
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
