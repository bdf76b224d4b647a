"""The ledger benchmark runs (a smoke test at 10 defects, never a timing)."""

import os

import pytest

from bench import bench_ledger

PG_URL = os.environ.get("ROUNDWISE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def test_the_ledger_bench_runs_and_agrees_with_its_reference(capsys):
    bench_ledger.main(["--sizes", "10", "--rounds", "2"])
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["10"])
    assert len(row) == 7 and row[4].endswith("x") and row[5].endswith("x")


def test_the_bench_runs_on_the_postgresql_ledger_and_agrees_with_its_reference(capsys):
    """The real PostgreSQL ledger against the psycopg reference (each in a schema of its own,
    dropped afterwards); the bench itself checks both stored the same defects and history."""
    from tests.conftest import pg_unreachable

    reason = pg_unreachable()
    if reason:
        pytest.skip(reason)
    bench_ledger.main(["--db", PG_URL, "--sizes", "10", "--rounds", "2"])
    out = capsys.readouterr().out
    assert "backend: postgresql" in out
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["10"])
    assert len(row) == 7 and row[4].endswith("x")
