"""``python -m bench.faults.load_cluster`` at smoke size: two real ``roundwise serve`` replicas on
one PostgreSQL schema, one SIGKILLed and restarted mid-run, duplicate and out-of-order deliveries;
every check passes. Skips, saying why, without a PostgreSQL server; exit status 2 then."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import pytest

from .conftest import PG_URL, ROOT, pg_unreachable


def test_load_cluster_smoke():
    reason = pg_unreachable()
    if reason:
        pytest.skip(reason)
    run = subprocess.run(
        [sys.executable, "-m", "bench.faults.load_cluster", "--prs", "4", "--pushes", "2",
         "--replicas", "2", "--kills", "1", "--lease", "3", "--duplicate-rate", "0.5",
         "--out-of-order-rate", "0.5", "--timeout", "25", "--seed", "4", "--db", PG_URL,
         "--json"],
        cwd=ROOT, check=False, capture_output=True, text=True, timeout=60)
    assert run.stdout, run.stderr[-3000:]
    figures = json.loads(run.stdout)
    assert run.returncode == 0, (figures["problems"], run.stderr[-2000:])
    assert figures["ok"] and figures["problems"] == []
    assert figures["deliveries"] == 8 and figures["deliveries_processed"] == 8
    assert figures["duplicates_sent"] > 0 and figures["out_of_order"] > 0
    assert figures["kills"] == 1 and figures["replica_starts"] == 3
    assert figures["heads_reviewed_twice"] == 0 and figures["comments_posted_twice"] == 0
    assert figures["final_heads_unreviewed"] == 0 and figures["failed_jobs"] == 0
    assert set(figures["jobs"]) <= {"done", "skipped"}
    with psycopg.connect(PG_URL) as conn:  # the schema is dropped afterwards
        assert conn.execute("select 1 from information_schema.schemata where schema_name = %s",
                            [figures["schema"]]).fetchone() is None


def test_load_cluster_without_postgresql_exits_2():
    run = subprocess.run(
        [sys.executable, "-m", "bench.faults.load_cluster", "--db",
         "postgresql://postgres@127.0.0.1:1/nowhere"],
        cwd=ROOT, check=False, capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert "PostgreSQL is not reachable at postgresql://postgres@127.0.0.1:1/nowhere" in \
        run.stderr
    assert run.stdout == ""
