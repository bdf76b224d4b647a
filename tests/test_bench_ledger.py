"""The ledger benchmark runs (a smoke test at 10 defects, never a timing)."""

import os

import pytest

from bench.perf import ledger as bench_ledger

PG_URL = os.environ.get("ROUNDWISE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def test_the_ledger_bench_runs_and_agrees_with_its_reference(capsys):
    bench_ledger.main(["--sizes", "10", "--rounds", "2", "--big-sizes", ""])
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["10"])
    assert len(row) == 10 and row[4].endswith("x") and row[5].endswith("x") and row[8].endswith("x")


def test_the_bench_runs_on_the_postgresql_ledger_and_agrees_with_its_reference(capsys):
    """The real PostgreSQL ledger against the psycopg reference (each in a schema of its own,
    dropped afterwards); the bench itself checks both stored the same defects and history."""
    from tests.conftest import pg_unreachable

    reason = pg_unreachable()
    if reason:
        pytest.skip(reason)
    bench_ledger.main(["--db", PG_URL, "--sizes", "10", "--rounds", "2", "--big-sizes", ""])
    out = capsys.readouterr().out
    assert "backend: postgresql" in out
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["10"])
    assert len(row) == 10 and row[4].endswith("x") and row[9].endswith("x")


def test_the_big_diff_cases_run_and_check_every_anchor_against_the_reference(capsys):
    """Both shapes, small: one line each with the ratios; the bench itself stops if the
    tracker and the reference put any anchor in different places."""
    bench_ledger.main(["--sizes", "", "--big-sizes", "30", "--changed", "400",
                       "--big-rounds", "2"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines()
            if line.split()[:1] in (["hunks"], ["giant"])]
    assert [r[0] for r in rows] == ["hunks", "giant"]
    assert all(len(r) == 12 and r[10].endswith("x") and r[11].endswith("x")
               and r[10].count("/") == 2 and int(r[4]) == 30 for r in rows)
    assert int(rows[0][2]) > 20 and int(rows[1][2]) == 1  # many hunks; one hunk


def test_the_big_diff_check_stops_on_a_misplaced_anchor():
    from bench.perf.bigdiff import check_mapping
    from tracker.anchors import Anchor, Mapped, Status
    from tracker.lifecycle import State
    from tracker.models import Defect, Origin

    anchor = Anchor("a.py", 3, 3)
    defect = Defect("D7", "x", Origin.BOT, State.OPEN, 1, 1, "a.py", 3, 3)
    mine = {anchor: Mapped(Status.UNTOUCHED, Anchor("a.py", 4, 4))}
    check_mapping([defect], [anchor], mine, {anchor: (Status.UNTOUCHED, "a.py", 4, 4)}, "ok")
    with pytest.raises(SystemExit, match="D7 at a.py:3-3"):
        check_mapping([defect], [anchor], mine, {anchor: (Status.UNTOUCHED, "a.py", 5, 5)}, "x")
