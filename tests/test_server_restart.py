"""``roundwise serve`` as a real process: start-up errors, and ``kill -9`` in the middle of a round.

The fake GitHub runs in the test process; the server is ``python -m roundwise serve`` in a child
process configured through the environment, exactly as in production. To stop the round at a
known point, the test holds the fake's answer to the summary lookup (after the review is on
GitHub, before the summary and the ledger are written), kills the server with SIGKILL and
starts a new one on the same ledger file.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from bench.fake_github import FakeGitHub
from bench.replay import payloads

from .conftest import ROOT
from .server_kit import (
    APP_ID,
    HEAD1,
    NUMBER,
    REPO,
    Tap,
    app_keys,
    assert_one_review_posted,
    open_pr,
)

SECRET = "kill-9-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(fake: FakeGitHub, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "ROUNDWISE_"))}
    env.update({
        "PYTHONPATH": str(ROOT), "GITHUB_APP_ID": str(APP_ID),
        "GITHUB_PRIVATE_KEY": app_keys()[0], "GITHUB_WEBHOOK_SECRET": SECRET,
        "GITHUB_API_URL": fake.url, "ROUNDWISE_DB": str(db), "ROUNDWISE_WORKERS": "1",
        "ROUNDWISE_BOT_LOGIN": fake.bot_login,
    })
    return env


async def start_server(env: dict[str, str], port: int, log: Path):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roundwise", "serve", "--port", str(port), cwd=ROOT, env=env,
        stdout=log.open("ab"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                    if resp.status == 200:
                        return proc
            except aiohttp.ClientConnectionError:
                pass
            assert proc.returncode is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.05)


def job_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("select status, attempts from jobs order by id").fetchall()


async def kill_9(proc) -> None:
    """SIGKILL the server, as an out-of-memory kill or a lost host would: nothing of it runs
    after."""
    proc.send_signal(signal.SIGKILL)
    assert await proc.wait() == -signal.SIGKILL


async def reap(proc) -> None:
    """Kill the server if it still runs (a test that failed midway) and wait for it."""
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


async def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def test_serve_without_configuration_exits_with_the_reason(tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-m", "roundwise", "serve", "--port", "0"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("roundwise cannot start:")
    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_WEBHOOK_SECRET"):
        assert name in done.stderr
    assert not (tmp_path / "roundwise.db").exists()  # nothing created before the check


async def test_kill_9_mid_round_then_restart_finishes_the_round_once(tmp_path):
    db, log = tmp_path / "ledger.db", tmp_path / "server.log"
    async with FakeGitHub(APP_ID, app_keys()[1]) as fake, aiohttp.ClientSession() as session:
        tap = Tap(fake)
        open_pr(fake)
        tap.hold("GET", rf"/issues/{NUMBER}/comments$")  # the summary step
        env, port = server_env(fake, db), free_port()
        proc = await start_server(env, port, log)
        try:
            body = payloads.encode(payloads.pull_request(fake, REPO, NUMBER, "opened"))
            headers = payloads.headers("pull_request", body, SECRET, "kill-9")
            async with session.post(f"http://127.0.0.1:{port}/webhook", data=body,
                                    headers=headers) as resp:
                assert resp.status == 202
            await asyncio.wait_for(tap.held.wait(), 20)
            # Mid-round: the review is on GitHub, the job is running, the round not complete.
            bot_reviews = [r for r in fake.reviews(REPO, NUMBER) if r["body"]]
            assert len(bot_reviews) == 1 and job_rows(db) == [("running", 1)]
            await kill_9(proc)
        finally:
            await reap(proc)
        tap.release()
        assert fake.issue_comments(REPO, NUMBER) == []

        proc = await start_server(env, port, log)  # the same ledger file
        try:
            await wait_for(lambda: job_rows(db) == [("done", 2)], 20, "the job to finish")
            # Redelivered after it finished: nothing more happens.
            async with session.post(f"http://127.0.0.1:{port}/webhook", data=body,
                                    headers=headers) as resp:
                assert (resp.status, await resp.json()) == (200, {"duplicate": "kill-9"})
        finally:
            proc.terminate()
            assert await proc.wait() == 0  # a clean shutdown on SIGTERM

    assert_one_review_posted(fake, HEAD1, ["D1", "D2"])
    with sqlite3.connect(db) as conn:
        rounds = conn.execute("select number, head_sha, status from rounds").fetchall()
        defects = conn.execute("select key, state from defects order by id").fetchall()
        attached = conn.execute("select count(*) from defect_comments").fetchone()[0]
        processed = conn.execute("select processed_at from deliveries where id = 'kill-9'"
                                 ).fetchone()[0]
    assert rounds == [(1, HEAD1, "complete")]
    assert defects == [("D1", "New"), ("D2", "New")] and attached == 2 and processed
    assert "re-queued 1 job(s) interrupted by a crash" in log.read_text()
