"""Retention: ``ROUNDWISE_RETENTION_DAYS``, the server's periodic prune and ``roundwise db``.

On real SQLite files; what the prune keeps and drops per engine is in test_queue_store.py.
"""

from __future__ import annotations

import asyncio

import pytest

from bot.config.env import ConfigError, retention_days
from bot.jobs import JobQueue
from bot.jobs.retention import cutoff, prune_periodically
from bot.server.hosts import load_config
from bot.store import open_queue_store
from roundwise.cli import main

#: about 0.09 s: a row processed a little while ago is already "old"
TINY = "0.000001"


def _processed(store, delivery: str) -> None:
    store.record_delivery(delivery, "pull_request", "opened", "o/r", 1)
    store.mark_processed(delivery, "ok")


def _age(store, delivery: str, days: float) -> None:
    """Make a processed delivery look ``days`` old (the test's own SQL: no waiting)."""
    when = cutoff(days)
    if hasattr(store, "db"):
        store.db.execute("update deliveries set processed_at = ? where id = ?",
                         [when, delivery])
        store.db.conn.commit()
    else:
        with store.pool.connection() as conn:
            conn.execute("update deliveries set processed_at = %s where id = %s",
                         [when, delivery])


def test_retention_days_default_and_bad_values():
    assert retention_days(None) == 14.0 and retention_days("") == 14.0
    assert retention_days("2.5") == 2.5
    for bad in ("0", "-1", "soon", "inf", "nan"):
        with pytest.raises(ConfigError, match="ROUNDWISE_RETENTION_DAYS"):
            retention_days(bad)
    assert cutoff(1.0) < cutoff(0.5)


def test_the_server_config_reads_retention_the_job_lease_and_a_postgres_url():
    env = {"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": "x", "GITHUB_WEBHOOK_SECRET": "s"}
    with pytest.raises(ConfigError) as err:
        load_config({**env, "ROUNDWISE_RETENTION_DAYS": "never", "ROUNDWISE_JOB_LEASE": "0",
                     "ROUNDWISE_DB": "postgresql://u@h/db?schema=no-dashes"})
    assert "ROUNDWISE_RETENTION_DAYS='never'" in str(err.value)
    assert "ROUNDWISE_JOB_LEASE='0'" in str(err.value)
    assert "schema name" in str(err.value)
    assert "SQLite" not in str(err.value)  # a postgresql:// ledger itself is no problem


def test_db_prune_drops_old_processed_deliveries_and_keeps_the_rest(tmp_path, capsys):
    path = tmp_path / "r.db"
    store = open_queue_store(str(path))
    _processed(store, "old")
    _age(store, "old", 3)
    store.record_delivery("waiting", "pull_request", "opened", "o/r", 1)
    _processed(store, "fresh")
    assert main(["db", "prune", "--db", f"sqlite:///{path}", "--days", "2"]) == 0
    out = capsys.readouterr().out
    assert "dropped 0 finished job(s) and 1 processed deliver(ies)" in out
    assert store.delivery("old") is None
    assert store.delivery("fresh") is not None and store.delivery("waiting") is not None
    store.close()


def test_db_prune_takes_the_days_from_the_environment(tmp_path, capsys, monkeypatch):
    path = tmp_path / "r.db"
    store = open_queue_store(str(path))
    _processed(store, "old")
    _age(store, "old", 20)
    monkeypatch.setenv("ROUNDWISE_DB", str(path))
    monkeypatch.setenv("ROUNDWISE_RETENTION_DAYS", "30")
    assert main(["db", "prune"]) == 0
    assert store.delivery("old") is not None  # 30 days: kept
    monkeypatch.setenv("ROUNDWISE_RETENTION_DAYS", "14")
    assert main(["db", "prune"]) == 0
    assert store.delivery("old") is None
    monkeypatch.setenv("ROUNDWISE_RETENTION_DAYS", "zero")
    assert main(["db", "prune"]) == 2
    assert "ROUNDWISE_RETENTION_DAYS='zero'" in capsys.readouterr().err
    store.close()


def test_db_migrate_creates_the_queue_schema(tmp_path, capsys):
    path = tmp_path / "fresh.db"
    assert main(["db", "migrate", "--db", str(path)]) == 0
    assert "schema up to date" in capsys.readouterr().out
    store = open_queue_store(str(path))
    assert store.db["jobs"].exists() and "lease_until" in store.db["jobs"].columns_dict
    store.close()


async def test_the_server_prunes_periodically(tmp_path):
    store = open_queue_store(str(tmp_path / "p.db"))
    queue = JobQueue(store=store)
    _processed(store, "old")
    _age(store, "old", 1)
    task = asyncio.create_task(prune_periodically(queue, float(TINY), every=0.05))
    try:
        for _ in range(40):
            if store.delivery("old") is None:
                break
            await asyncio.sleep(0.05)
        assert store.delivery("old") is None
        _processed(store, "later")  # pruned on a later pass too, not only at start
        for _ in range(60):
            if store.delivery("later") is None:
                break
            await asyncio.sleep(0.05)
        assert store.delivery("later") is None
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        store.close()


def test_db_migrate_and_prune_on_postgresql(capsys):
    import secrets
    from urllib.parse import quote

    import psycopg

    from .conftest import PG_URL, pg_unreachable

    reason = pg_unreachable()
    if reason:
        pytest.skip(reason)
    schema = f"rw_cli_{secrets.token_hex(6)}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'create schema "{schema}"')
    url = f"{PG_URL}?options={quote(f'-csearch_path={schema}')}"
    try:
        assert main(["db", "migrate", "--db", url]) == 0
        assert "schema up to date" in capsys.readouterr().out
        from bot.store import open_ledger_store

        with open_ledger_store(url) as ledger:
            assert ledger.migrated == []  # the ledger's tables were migrated too
            assert ledger.pull_requests() == []
        store = open_queue_store(url)
        assert store.migrated == []  # the CLI migrated already
        _processed(store, "old")
        _age(store, "old", 3)
        _processed(store, "fresh")
        assert main(["db", "prune", "--db", url, "--days", "2"]) == 0
        assert "1 processed deliver(ies)" in capsys.readouterr().out
        assert store.delivery("old") is None and store.delivery("fresh") is not None
        store.close()
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'drop schema if exists "{schema}" cascade')
