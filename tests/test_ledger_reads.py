"""The dashboard's read-only queries (``bot.store.ledger_reads``) on both engines.

The ledger is written through the store as the bot writes it, then read by a ``LedgerReader``
on a fresh SQLite file and on a fresh PostgreSQL schema (skipped, saying why, when no server
answers at ``ROUNDWISE_TEST_PG``): the same answers, pages and filters, restricted to the
repositories a viewer may see, and no way to write through the reader.
"""

from __future__ import annotations

import sqlite3

import pytest

from bot.store.ledger_reads import LedgerReader
from tracker.lifecycle import State
from tracker.models import Decision, Finding

from .conftest import PG_URL


@pytest.fixture(params=["sqlite", "postgresql"])
def seeded(request, tmp_path):
    """A ledger with three PRs in two repositories, and a reader on it."""
    from bot.store import open_ledger_store

    if request.param == "sqlite":
        target, schema = str(tmp_path / "ledger.db"), None
    else:
        target, schema = PG_URL, request.getfixturevalue("pg_schema")
    ledger = open_ledger_store(target, schema=schema)
    for repo, number in (("o/one", 1), ("o/one", 2), ("o/two", 9)):
        pr = ledger.pull_request(repo, number, title=f"PR {number}", author="sam")["id"]
        ledger.begin_round(pr, "h1")
        ledger.record_round(pr, 1, [], [(Finding(f"bug {i}", path="a.py", line_start=i + 1),
                                         f"code {i}") for i in range(3)], head_sha="h1")
        ledger.finish_round(pr, 1, findings=3)
        ledger.begin_round(pr, "h2")
        ledger.record_round(pr, 2, [Decision("D1", State.RESOLVED, "anchor-modified", "fixed"),
                                    Decision("D2", State.OPEN, "anchor-untouched", "stands")],
                            [], [], head_sha="h2")
        ledger.finish_round(pr, 2, findings=0)
    ledger.update_pull_request(ledger.find_pull_request("o/one", 2)["id"], status="merged")
    one = ledger.find_pull_request("o/one", 1)["id"]
    d1 = ledger.defect(one, "D1")
    ledger.replace_verdicts(one, [
        {"pr_id": one, "defect_id": d1.id, "defect_key": "D1", "round": 2, "kind": "state",
         "transition": "Open→Resolved", "rule": "anchor-modified", "verdict": verdict,
         "signal": "thread unresolved", "signal_round": 3, "by": "rita", "evidence": "",
         "decided_at": "2026-11-30T10:00:00.000+00:00", "at": "2026-11-30T10:00:00.000+00:00"}
        for verdict in ("contradicted", "contradicted", "confirmed")])
    reader = LedgerReader(target, schema=schema)
    yield reader, request.param
    reader.close()
    ledger.close()


def test_the_overview_counts_and_restricts(seeded):
    reader, _ = seeded
    everything = reader.repositories(None)
    assert everything.total == 2
    assert [(r["repo"], r["prs"], r["open_prs"], r["rounds"], r["open_defects"])
            for r in everything] == [("o/one", 2, 1, 4, 4), ("o/two", 1, 1, 2, 2)]
    assert [r["repo"] for r in reader.repositories(["o/two"])] == ["o/two"]
    assert list(reader.repositories([])) == [] and reader.repositories([]).total == 0
    assert [r["repo"] for r in reader.repositories(None, name="TWO")] == ["o/two"]
    assert [r["repo"] for r in reader.repositories(None, name="%")] == []  # a LIKE wildcard
    page = reader.repositories(None, offset=1, size=1)
    assert [r["repo"] for r in page] == ["o/two"] and page.total == 2
    assert sorted(reader.repo_names()) == ["o/one", "o/two"]


def test_a_repositorys_pull_requests_filter_and_page(seeded):
    reader, _ = seeded
    prs = reader.pull_requests("o/one")
    assert prs.total == 2
    assert {(p["number"], p["rounds"], p["open_defects"], p["resolved_defects"]) for p in prs} \
        == {(1, 2, 2, 1), (2, 2, 2, 1)}
    assert [p["number"] for p in reader.pull_requests("o/one", status="merged")] == [2]
    assert reader.pull_requests("o/one", since="2999-01-01").total == 0
    assert reader.pull_requests("o/one", until="2000-01-01").total == 0
    one = reader.pull_requests("o/one", size=1)
    assert len(one) == 1 and one.total == 2
    assert [(r["number"], r["rounds"], r["findings"]) for r in
            reader.findings_by_round("o/one")] == [(1, 2, 6), (2, 2, 0)]


def test_a_pull_requests_timeline_rows(seeded):
    reader, _ = seeded
    pr = reader.pull_request("o/two", 9)
    defects = reader.defects(pr["id"])
    assert [d["key"] for d in defects] == ["D1", "D2", "D3"] and defects.total == 3
    assert [d["key"] for d in reader.defects(pr["id"], state="Resolved")] == ["D1"]
    history = reader.history([d["id"] for d in defects])
    assert [(h["round"], h["state"]) for h in history if h["defect_id"] == defects[0]["id"]] \
        == [(1, "New"), (2, "Resolved")]
    assert [r["number"] for r in reader.rounds(pr["id"])] == [1, 2]
    assert reader.pull_request("o/two", 10) is None


def test_the_reader_cannot_write(seeded):
    reader, _ = seeded
    import psycopg

    with pytest.raises((sqlite3.OperationalError, psycopg.Error)):
        reader.rows("update pull_requests set title = %s", ["changed"])
    assert {p["title"] for p in reader.pull_requests("o/one")} == {"PR 1", "PR 2"}


def test_people_s_verdicts_per_rule_and_by_day(seeded):
    reader, _ = seeded
    assert [dict(r) for r in reader.rule_verdicts("o/one")] == [
        {"rule": "anchor-modified", "confirmed": 1, "contradicted": 2}]
    assert reader.rule_verdicts("o/two") == []
    assert sorted((r["day"], r["kind"], r["what"], r["verdict"], r["n"])
                  for r in reader.verdicts_by_day(["o/one"])) == [
        ("2026-11-30", "state", "Open→Resolved", "confirmed", 1),
        ("2026-11-30", "state", "Open→Resolved", "contradicted", 2)]
    assert reader.verdicts_by_day(["o/one"], since="2026-12-01") == []


def test_a_repositorys_rule_verdicts_count_its_local_branches_only(tmp_path):
    """``roundwise review``'s PRs are ``repo:BRANCH``: counted with ``repo``, as the stores
    count them; ``repo-other`` and ``repo2`` are other repositories."""
    from bot.store import open_ledger_store

    path = str(tmp_path / "ledger.db")
    ledger = open_ledger_store(path)
    for number, repo in enumerate(("o/one", "o/one:feature", "o/one-other", "o/one2"), 1):
        pr = ledger.pull_request(repo, number)["id"]
        ledger.begin_round(pr, "h1")
        ledger.record_round(pr, 1, [], [(Finding("bug", path="a.py", line_start=1), "x")],
                            head_sha="h1")
        defect = ledger.defect(pr, "D1")
        ledger.replace_verdicts(pr, [{
            "pr_id": pr, "defect_id": defect.id, "defect_key": "D1", "round": 1,
            "kind": "state", "transition": "New→Open", "rule": "anchor-untouched",
            "verdict": "confirmed", "signal": "", "signal_round": 2, "by": "rita",
            "evidence": "", "decided_at": "2026-11-30", "at": "2026-11-30"}])
    reader = LedgerReader(path)
    try:
        assert [dict(r) for r in reader.rule_verdicts("o/one")] == [
            {"rule": "anchor-untouched", "confirmed": 2, "contradicted": 0}]
        assert [dict(r) for r in reader.rule_verdicts("o/one")] == \
            [dict(r) for r in ledger.rule_verdicts("o/one")]  # as the store counts them
    finally:
        reader.close()
        ledger.close()
