"""Nothing posted twice across lost answers and crashes (issue 19, items 5 and 6), through the
real server and the fake GitHub: a check run GitHub created but whose answer was lost is found
and reused, not created again; a state reply a killed round posted is not posted again by the
round of the next push."""

from __future__ import annotations

import asyncio
import sqlite3

import aiohttp
import pytest

from bench.fake_github import FakeGitHub
from bench.replay import payloads
from bot.pr import checks, render

from .server_kit import (
    APP_ID,
    HEAD1,
    HEAD2,
    HEAD3,
    NUMBER,
    REPO,
    ROUND2_FILES,
    Tap,
    app_keys,
    open_pr,
    running_bot,
)
from .test_server_restart import (
    SECRET,
    free_port,
    job_rows,
    kill_9,
    reap,
    server_env,
    start_server,
    wait_for,
)


async def test_a_check_run_created_but_answered_502_is_reused(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        bot.fake.lose_response_next("POST", r"/check-runs$")
        await bot.pull_request("opened")
        await bot.idle()
        assert bot.fake.lost_responses == 1
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        runs = [r for r in bot.fake.check_runs(REPO, HEAD1) if r["name"] == checks.NAME]
        assert [r["status"] for r in runs] == ["completed"]  # one run, none left in_progress
        assert bot.rounds()[0]["check_run_id"] == runs[0]["id"]
        assert len(bot.calls("POST", r"/check-runs$")) == 1


async def test_kill_9_after_a_state_reply_then_a_newer_push_says_it_once(tmp_path):
    """Round 2 replies "D1 looks resolved", then the server is killed before the ledger knows;
    a newer push comes and a new server's round 3 finds D1 resolved again: one reply."""
    db, log = tmp_path / "ledger.db", tmp_path / "server.log"
    async with FakeGitHub(APP_ID, app_keys()[1]) as fake, aiohttp.ClientSession() as session:
        tap = Tap(fake)
        open_pr(fake)
        env, port = server_env(fake, db), free_port()
        url = f"http://127.0.0.1:{port}/webhook"

        async def deliver(action: str, delivery: str) -> None:
            body = payloads.encode(payloads.pull_request(fake, REPO, NUMBER, action))
            async with session.post(url, data=body, headers=payloads.headers(
                    "pull_request", body, SECRET, delivery)) as resp:
                assert resp.status == 202

        proc = await start_server(env, port, log)
        try:
            await deliver("opened", "d-1")
            await wait_for(lambda: job_rows(db) == [("done", 1)], 20, "round 1")
            fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)  # tests added: D1 is resolved
            tap.hold("GET", rf"/issues/{NUMBER}/comments$")  # round 2's summary step
            await deliver("synchronize", "d-2")
            await asyncio.wait_for(tap.held.wait(), 20)
            assert [render.read_marker(c["body"]) for c in replies(fake)] == [
                ("state", "D1", 2)]
            await kill_9(proc)
        finally:
            await reap(proc)
        tap.release()
        fake.push(REPO, NUMBER, HEAD3, {**ROUND2_FILES, "tests/test_more.py": (
            "from app.core import scale\n\n\ndef test_empty():\n    assert scale([], 2) == []\n")})
        proc = await start_server(env, port, log)
        try:
            await deliver("synchronize", "d-3")
            await wait_for(lambda: all(s == "done" for s, _ in job_rows(db)), 30, "round 3")
        finally:
            proc.terminate()
            assert await proc.wait() == 0
        resolved = [c for c in replies(fake) if "D1 looks resolved" in c["body"]]
        assert len(resolved) == 1, [c["body"] for c in replies(fake)]
        with sqlite3.connect(db) as conn:
            rounds = conn.execute("select number, head_sha, status from rounds order by number"
                                  ).fetchall()
            state = conn.execute("select state from defects where key = 'D1'").fetchone()[0]
        assert rounds[-1][1:] == (HEAD3, "complete") and state == "Resolved"
        assert [r[2] for r in rounds] == ["complete", "superseded", "complete"]
        # the killed round's check run is completed too, not left spinning on HEAD2
        assert {(r["head_sha"], r["status"]) for r in fake.check_runs(REPO)} == {
            (HEAD1, "completed"), (HEAD2, "completed"), (HEAD3, "completed")}


def replies(fake) -> list[dict]:
    return [c for c in fake.review_comments(REPO, NUMBER)
            if c["user"]["login"] == fake.bot_login and c.get("in_reply_to_id")]


@pytest.mark.parametrize("then", ["same head", "newer push"])
async def test_kill_9_between_creating_a_check_run_and_recording_it_reuses_it(tmp_path, then):
    """GitHub created the round's check run, then the server died before it heard back: the
    restarted server finds that run (head sha, name, the round's external id) and completes it
    instead of creating a second one that would leave the first spinning; when a newer push
    overtook the round, it completes that run as superseded."""
    db, log = tmp_path / "ledger.db", tmp_path / "server.log"
    async with FakeGitHub(APP_ID, app_keys()[1]) as fake, aiohttp.ClientSession() as session:
        open_pr(fake)
        fake.lose_response_next("POST", r"/check-runs$", timeout=4)  # applied, answer held
        env, port = server_env(fake, db), free_port()
        proc = await start_server(env, port, log)
        try:
            body = payloads.encode(payloads.pull_request(fake, REPO, NUMBER, "opened"))
            async with session.post(f"http://127.0.0.1:{port}/webhook", data=body,
                                    headers=payloads.headers("pull_request", body, SECRET,
                                                             "d-1")) as resp:
                assert resp.status == 202
            await wait_for(lambda: fake.check_runs(REPO, HEAD1), 20, "the check run")
            await kill_9(proc)
        finally:
            await reap(proc)
        if then == "newer push":
            fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        proc = await start_server(env, port, log)
        try:
            await wait_for(lambda: job_rows(db) and job_rows(db)[0][0] == "done", 20, "the job")
        finally:
            proc.terminate()
            assert await proc.wait() == 0
        runs = [r for r in fake.check_runs(REPO, HEAD1) if r["name"] == checks.NAME]
        assert [r["status"] for r in runs] == ["completed"]
        if then == "newer push":
            assert runs[0]["output"]["title"] == "Superseded by a newer push"
            assert [r["status"] for r in fake.check_runs(REPO, HEAD2)] == ["completed"]
