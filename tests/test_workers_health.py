"""Workers outlive database errors, ``/healthz`` tells the truth, one server per ledger file.

The database errors are real SQLite errors raised on the server's own connection (an
authorizer that refuses writes, as a full disk would), lifted later as space would return.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys

import pytest

from .server_kit import APP_ID, app_keys, open_pr, running_bot


def refuse_writes(conn: sqlite3.Connection) -> None:
    """Updates of jobs and writes of the heartbeat fail (the webhook can still enqueue)."""
    def authorize(action, arg1, arg2, db, trigger):
        if action == sqlite3.SQLITE_UPDATE and arg1 == "jobs":
            return sqlite3.SQLITE_DENY
        if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_CREATE_TABLE) and arg1 == "heartbeat":
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK
    conn.set_authorizer(authorize)


async def healthz(bot) -> tuple[int, dict]:
    async with bot.session.get(f"{bot.url}/healthz") as resp:
        return resp.status, await resp.json()


async def test_workers_survive_a_database_error_and_healthz_reports_it(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        assert (await healthz(bot))[0] == 200
        conn = bot.state.ledger.db.conn
        refuse_writes(conn)
        status, _ = await bot.pull_request("opened")
        assert status == 202
        await asyncio.sleep(0.5)
        status, body = await healthz(bot)
        assert status == 503 and body["status"] == "unhealthy"
        assert any("cannot be written" in p for p in body["problems"])
        assert any("failing" in p and "not authorized" in p for p in body["problems"])
        assert [j["status"] for j in bot.jobs()] == ["queued"]
        conn.set_authorizer(None)  # space is back
        await bot.idle(timeout=10)
        assert [j["status"] for j in bot.jobs()] == ["done"]
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert (await healthz(bot)) == (200, {"status": "ok", "queue": 0})
        assert all(not t.done() for t in bot.state.workers._tasks)


@pytest.mark.parametrize("link", [None, "symlink", "hard link"])
async def test_a_second_server_on_the_same_ledger_refuses_to_start(tmp_path, link):
    """By its path, or through a symlink or a hard link to the same file (elsewhere)."""
    async with running_bot(tmp_path) as bot:
        assert str(os.getpid()) in bot.state.workers.owner  # worker ids are per process
        db = bot.config.db_path
        if link:
            (tmp_path / "elsewhere").mkdir()
            db = str(tmp_path / "elsewhere" / "other.db")
            (os.symlink if link == "symlink" else os.link)(bot.config.db_path, db)
        env = {**os.environ, "GITHUB_APP_ID": str(APP_ID), "GITHUB_PRIVATE_KEY": app_keys()[0],
               "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_API_URL": bot.fake.url,
               "ROUNDWISE_DB": db}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "roundwise", "serve", "--port", "0", env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 2
        assert b"another roundwise server" in err and b"ROUNDWISE_DB" in err
        assert b"Traceback" not in err
        open_pr(bot.fake)  # the first server is untouched
        await bot.pull_request("opened")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"]
