"""Two ``roundwise serve`` replicas on one PostgreSQL database: one dies mid-round, the other
finishes the round exactly once.

Both servers are real child processes (``python -m roundwise serve``) configured through the
environment, with ``ROUNDWISE_DB=postgresql://...?schema=NAME`` (a fresh schema, dropped
afterwards) and a two-second job lease. They start together, so their start-up migrations race
under the advisory lock. A signed ``pull_request`` delivery goes to replica A; the fake GitHub
holds its answer to the summary lookup (the review is on GitHub, the ledger not written yet),
the replica running the job is killed with SIGKILL and the survivor takes the job over once
its lease runs out. Skips, saying why, without a PostgreSQL server.
"""

from __future__ import annotations

import asyncio

import aiohttp
import psycopg
from psycopg.rows import dict_row

from bench.fake_github import FakeGitHub
from bench.replay import payloads
from bot.store.queue_postgres import MIGRATIONS
from bot.store.schema_postgres import LEDGER_MIGRATIONS

from .conftest import PG_URL
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
from .test_server_restart import (
    SECRET,
    free_port,
    kill_9,
    server_env,
    start_server,
    wait_for,
)

LEASE = 2.0


def rows(schema: str, query: str) -> list[dict]:
    with psycopg.connect(PG_URL, options=f"-c search_path={schema}",
                         row_factory=dict_row) as conn:
        return conn.execute(query).fetchall()


async def test_a_replica_killed_mid_round_is_taken_over_once_by_the_other(tmp_path, pg_schema):
    schema = pg_schema
    async with FakeGitHub(APP_ID, app_keys()[1]) as fake, aiohttp.ClientSession() as session:
        tap = Tap(fake)
        open_pr(fake)
        tap.hold("GET", rf"/issues/{NUMBER}/comments$")  # the summary step
        env = {**server_env(fake, tmp_path / "unused.db"),
               "ROUNDWISE_DB": f"{PG_URL}?schema={schema}",
               "ROUNDWISE_JOB_LEASE": str(LEASE)}
        ports = free_port(), free_port()
        logs = tmp_path / "a.log", tmp_path / "b.log"
        procs = list(await asyncio.gather(*(start_server(env, port, log)
                                             for port, log in zip(ports, logs, strict=True))))
        try:
            assert not (tmp_path / "unused.db").exists()
            assert [r["name"] for r in rows(schema, "select name from roundwise_migrations "
                                                    "order by name")] == \
                sorted(name for name, _ in MIGRATIONS + LEDGER_MIGRATIONS)  # each once
            body = payloads.encode(payloads.pull_request(fake, REPO, NUMBER, "opened"))
            headers = payloads.headers("pull_request", body, SECRET, "replica-1")
            async with session.post(f"http://127.0.0.1:{ports[0]}/webhook", data=body,
                                    headers=headers) as resp:
                assert resp.status == 202
            await asyncio.wait_for(tap.held.wait(), 20)
            # Mid-round: the review is on GitHub, the job is running, the round not complete.
            assert len([r for r in fake.reviews(REPO, NUMBER) if r["body"]]) == 1
            [job] = rows(schema, "select status, attempts, owner from jobs")
            assert (job["status"], job["attempts"]) == ("running", 1)
            # A live owner keeps its job past the lease: it renews it.
            await asyncio.sleep(LEASE * 1.5)
            [still] = rows(schema, "select status, attempts, owner from jobs")
            assert still == job
            pids = [p.pid for p in procs]
            dead = next(i for i, pid in enumerate(pids) if f"-{pid}-" in job["owner"])
            survivor = 1 - dead
            await kill_9(procs[dead])
            tap.release()
            assert fake.issue_comments(REPO, NUMBER) == []

            def done() -> bool:
                return [(r["status"], r["attempts"]) for r in
                        rows(schema, "select status, attempts from jobs")] == [("done", 2)]

            await wait_for(done, 30, "the survivor to finish the job")
            [finished] = rows(schema, "select owner from jobs")
            assert f"-{pids[survivor]}-" in finished["owner"]
            # Redelivered to the survivor after it finished: nothing more happens.
            async with session.post(f"http://127.0.0.1:{ports[survivor]}/webhook", data=body,
                                    headers=headers) as resp:
                assert (resp.status, await resp.json()) == (200, {"duplicate": "replica-1"})
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.terminate()
            codes = [await proc.wait() for proc in procs]
        assert codes[survivor] == 0  # a clean shutdown on SIGTERM

    assert_one_review_posted(fake, HEAD1, ["D1", "D2"])
    assert [(r["number"], r["head_sha"], r["status"]) for r in
            rows(schema, "select * from rounds")] == [(1, HEAD1, "complete")]
    assert [(d["key"], d["state"]) for d in rows(schema, "select * from defects order by id")
            ] == [("D1", "New"), ("D2", "New")]
    assert len(rows(schema, "select id from defect_comments")) == 2
    [delivery] = rows(schema, "select * from deliveries")
    assert delivery["id"] == "replica-1" and delivery["processed_at"]
    assert delivery["outcome"].startswith("round 1 complete")
    assert rows(schema, "select * from leases") == []  # the survivor released the PR
