"""The ledger benchmark runs (a smoke test at 10 defects, never a timing)."""

import os

import pytest

import bot.store
from bench import bench_ledger

PG_URL = os.environ.get("ROUNDWISE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def test_the_ledger_bench_runs_and_agrees_with_its_reference(capsys):
    bench_ledger.main(["--sizes", "10", "--rounds", "2"])
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["10"])
    assert len(row) == 7 and row[4].endswith("x") and row[5].endswith("x")


@pytest.mark.skipif(hasattr(bot.store, "open_ledger_store"), reason="a PostgreSQL ledger exists")
def test_without_a_postgresql_ledger_the_bench_says_so():
    with pytest.raises(SystemExit, match="no PostgreSQL ledger"):
        bench_ledger.main(["--db", "postgresql://127.0.0.1:5432/test", "--sizes", "10"])


def test_the_postgresql_reference_stores_what_the_ledger_stores(monkeypatch, tmp_path, capsys):
    """The psycopg reference, checked against a SQLite ledger standing in for the engine."""
    import psycopg

    from tracker.ledger import Ledger

    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {PG_URL} ({exc})")
    monkeypatch.setattr(bot.store, "open_ledger_store", lambda target: Ledger(tmp_path / "l.db"),
                        raising=False)
    bench_ledger.main(["--db", PG_URL, "--sizes", "10", "--rounds", "2"])
    assert "backend: postgresql" in capsys.readouterr().out
