"""The queue's speed work: the claim's plan, the webhook path's statements, the depth gauge, and
the queue and acknowledgement benches run small (scripts, not timed tests: nothing here
asserts a duration)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter

import pytest

from bench.perf import ack as bench_ack
from bench.perf import queue as bench_queue
from bench.perf.queue_drain import buckets
from bench.perf.queue_fill import backlog
from bot.jobs import JobQueue
from bot.jobs import queue as jobs
from bot.store import open_queue_store
from bot.store import queue_sqlite as sqlite_store


@pytest.fixture
def store(tmp_path):
    opened = open_queue_store(f"sqlite:///{tmp_path / 'q.db'}")
    yield opened
    opened.close()


def test_the_sqlite_claim_walks_the_queued_jobs_index_without_sorting(store):
    plan = " | ".join(r[3] for r in store.db.execute(
        "explain query plan " + sqlite_store.CLAIM, [0.0]).fetchall())
    assert "jobs_queued" in plan and "TEMP B-TREE" not in plan, plan


def test_the_claim_index_holds_only_queued_jobs(store):
    a = store.enqueue("comment", repo="o/r", number=1, payload={})
    store.enqueue("comment", repo="o/r", number=2, payload={})
    store.finish(a, "done", None)
    sql = store.db.execute(
        "select sql from sqlite_master where name = 'jobs_queued'").fetchone()[0]
    assert "where status = 'queued'" in sql.lower()
    assert store.claim("w", 1e12, 60).number == 2


def test_accept_records_once_and_a_failed_job_is_queued_again_on_redelivery(store):
    first = store.accept("d-1", "pull_request", "opened", "round", repo="o/r", number=1,
                         installation_id=7, payload={"action": "opened"}, head_sha="abc")
    assert store.accept("d-1", "pull_request", "opened", "round", repo="o/r", number=1,
                        installation_id=7, payload={}, head_sha="abc") == first
    assert store.delivery("d-1").attempts == 2
    job = store.claim("w", 1e12, 60)
    assert (job.id, job.payload, job.head_sha, job.installation_id) == (
        first, {"action": "opened"}, "abc", 7)
    store.finish(first, "failed", "boom")
    assert store.accept("d-1", "pull_request", "opened", "round", repo="o/r", number=1,
                        installation_id=7, payload={}, head_sha="abc") == first
    again = store.job(first)
    assert (again.status, again.attempts, again.error) == ("queued", 0, None)
    store.mark_processed("d-1")
    assert store.accept("d-1", "pull_request", "opened", "round", repo="o/r", number=1,
                        installation_id=7, payload={}, head_sha="abc") is None


def test_accept_rolls_back_the_delivery_when_the_job_cannot_be_written(store):
    store.db.execute("create trigger no_jobs before insert on jobs "
                     "begin select raise(abort, 'disk full'); end")
    with pytest.raises(sqlite3.IntegrityError):
        store.accept("d-2", "issue_comment", "created", "comment", repo="o/r", number=1,
                     installation_id=7, payload={}, head_sha=None)
    assert store.delivery("d-2") is None  # GitHub's redelivery will find nothing recorded


def test_the_depth_gauge_is_not_counted_at_every_enqueue(store, monkeypatch):
    counted = []
    real = store.depth
    monkeypatch.setattr(store, "depth", lambda: counted.append(1) or real())
    queue = JobQueue(store=store)
    for n in range(30):
        queue.enqueue("comment", repo="o/r", number=n)
    assert len(counted) == 1  # the first refreshes it; the rest within DEPTH_EVERY do not
    monkeypatch.setattr(jobs, "DEPTH_EVERY", 0.0)
    queue.enqueue("comment", repo="o/r", number=99)
    assert len(counted) == 2


def test_the_backlog_mixes_single_several_and_blocked_prs_in_order():
    rows = backlog(1000, history=200)
    status = Counter(r[3] for r in rows)
    assert status["queued"] == 1000 and status["done"] == 200 and status["running"] == 50
    per_pr: dict[int, list[str]] = {}
    for _, _, number, state, _ in rows:
        per_pr.setdefault(number, []).append(state)
    sizes = Counter(len(v) for v in per_pr.values() if "done" not in v)
    assert sizes[1] == 700 and sizes[4] == 50 and sizes[3] == 50
    assert all(v[0] == "running" for v in per_pr.values() if "running" in v)
    queued = [r[2] for r in rows if r[3] == "queued"]
    assert queued[:50] != sorted(queued[:50])  # interleaved, not grouped


def test_drain_buckets_are_rates_over_the_time_spent_at_each_depth():
    samples = [(0.0, 0, 0), (1.0, 150, 80), (2.0, 250, 160), (4.0, 420, 320)]
    out = buckets(samples, 200)
    assert [(b["low"], b["seconds"], b["finished"]) for b in out] == [(0, 2.0, 160),
                                                                      (200, 2.0, 160)]
    assert [b["rate"] for b in out] == [80.0, 80.0]


def test_the_queue_bench_runs_small(capsys):
    assert bench_queue.main(["--sizes", "40", "--claims", "5", "--engines", "sqlite",
                             "--explain", "--drain-seconds", "1.5", "--drain-work", "0.01",
                             "--drain-rate", "100"]) == 0
    out = capsys.readouterr().out
    assert "jobs_queued" in out and "sqlite" in out and "burst drain, sqlite" in out


def test_the_ack_bench_runs_small_and_refuses_an_engine_the_app_lacks(capsys):
    """Both references and the app, one small round each; an engine that cannot serve is
    refused with the reason."""
    assert bench_ack.main(["--deliveries", "10", "--rounds", "1"]) in (0, 1)
    out = capsys.readouterr().out
    assert "bare p99" in out and "app p99 / bare p99:" in out
    # the durable reference commits each delivery as the app must; its ratio is the verdict
    assert "durable p99" in out and "app p99 / durable p99:" in out
    assert "the verdict is against the durable reference" in out
    assert out.splitlines()[2].split()[3::4] == ["10", "10", "10"]  # every delivery answered
    code = bench_ack.main(["--deliveries", "5", "--rounds", "1",
                           "--db", "postgresql://postgres@127.0.0.1:9/none"])
    err = capsys.readouterr().err  # no ledger engine for it yet, or no server on port 9
    assert code == 2 and "the app cannot run on postgresql://" in err


async def test_deliveries_arriving_together_commit_once_and_a_bad_one_fails_alone(store,
                                                                                   monkeypatch):
    queue = JobQueue(store=store)
    batches = []
    real_many = store.accept_many
    monkeypatch.setattr(store, "accept_many", lambda items: batches.append(len(items))
                        or real_many(items))
    real_accept = store._accept  # both accept and accept_many record through it

    def accept(delivery_id, *args):
        if delivery_id == "bad":
            raise sqlite3.IntegrityError("no")
        return real_accept(delivery_id, *args)

    monkeypatch.setattr(store, "_accept", accept)

    def one(delivery, number):
        return queue.accept_soon(delivery, "issue_comment", "created", "comment", repo="o/r",
                                 number=number, installation_id=7, payload={"n": number})

    ids = await asyncio.gather(one("a", 1), one("b", 2), one("a", 1))
    assert batches == [3] and ids[0] == ids[2] != ids[1]  # one transaction; "a" is one job
    assert store.delivery("a").attempts == 2
    results = await asyncio.gather(one("c", 3), one("bad", 4), one("d", 5),
                                   return_exceptions=True)
    assert isinstance(results[1], sqlite3.IntegrityError)
    assert all(isinstance(r, int) for r in (results[0], results[2]))
    assert store.delivery("bad") is None and store.job(results[2]).payload == {"n": 5}
    store.mark_processed("a")
    assert await one("a", 1) is None  # a processed delivery is a duplicate, batched or not


def test_the_payload_walk_keeps_its_limits():
    from bot.forge.body import MAX_DEPTH, parse_payload

    def nested(levels: int) -> bytes:  # objects and arrays in turn, ``levels`` deep
        return ('{"a":[' * (levels // 2) + "1" + "]}" * (levels // 2)).encode()

    assert parse_payload(nested(MAX_DEPTH)) is not None
    for bad in (nested(MAX_DEPTH + 2), b"[" * 5000 + b"]" * 5000,
                b'{"a": [1, {"b": 9223372036854775808}]}', b"{'a': 1}", b'{"a": NaN}'):
        with pytest.raises(ValueError):
            parse_payload(bad)
    try:  # past every 64-bit integer: refused, or read as a float; never an int SQLite chokes on
        beyond = parse_payload(b"-9223372036854775809")
    except ValueError:
        beyond = None
    assert not isinstance(beyond, int)
    assert parse_payload(b'{"a": [true, -9223372036854775808, 1.5e300, null, "x"]}')


@pytest.mark.parametrize("size", [100, 300_000])
async def test_a_signed_body_is_read_whole_small_large_or_chunked(tmp_path, size):
    from bench.replay import payloads

    from .server_kit import running_bot

    async with running_bot(tmp_path, start_workers=False) as bot:
        body = payloads.encode({"zen": "x" * size, "hook_id": 1})
        secret = bot.config.webhook_secret
        assert (await bot.post(body, payloads.headers("ping", body, secret)))[0] == 200

        async def chunked():  # no Content-Length: read in chunks, spooled
            for start in range(0, len(body), 70_000):
                yield body[start:start + 70_000]

        async with bot.session.post(f"{bot.url}/webhook", data=chunked(),
                                    headers=payloads.headers("ping", body, secret)) as resp:
            assert resp.status == 200
        tampered = body[:-2] + b" }"
        assert (await bot.post(tampered, payloads.headers("ping", body, secret)))[0] == 401


async def test_on_postgresql_a_burst_commits_together_in_a_thread_and_a_bad_one_fails_alone(
        pg_schema, monkeypatch):
    import threading

    import psycopg

    from tests.conftest import PG_URL

    store = open_queue_store(PG_URL, schema=pg_schema)
    try:
        queue = JobQueue(store=store)
        batches, threads = [], set()
        real_many = store.accept_many

        def many(items):
            batches.append(len(items))
            threads.add(threading.get_ident())
            return real_many(items)

        monkeypatch.setattr(store, "accept_many", many)

        def one(delivery, number):
            return queue.accept_soon(delivery, "issue_comment", "created", "comment",
                                     repo="o/r", number=number, installation_id=7,
                                     payload={"n": number})

        ids = await asyncio.gather(one("a", 1), one("b", 2), one("c", 3))
        assert batches == [3] and len(set(ids)) == 3  # one transaction, one statement
        assert threads and threading.get_ident() not in threads  # off the event loop
        ids = await asyncio.gather(one("a", 1), one("d", 4), one("a", 1))
        assert batches == [3, 3] and ids[0] == ids[2] != ids[1]  # "a" twice: one job
        assert store.delivery("a").attempts == 3
        results = await asyncio.gather(one("e", 5), one("bad", 2 ** 40), one("f", 6),
                                       return_exceptions=True)  # no integer column holds it
        assert isinstance(results[1], psycopg.DataError)
        assert store.delivery("bad") is None and store.job(results[2]).payload == {"n": 6}
        store.mark_processed("a")
        assert await one("a", 1) is None
    finally:
        store.close()


def test_settling_the_heap_freezes_start_up_and_collects_the_young_less_often():
    """What ``roundwise serve`` does once it listens (and the ack bench does to both servers)."""
    import gc

    from bot.server.serving import GC_THRESHOLDS, settle_heap

    before = gc.get_threshold()
    try:
        settle_heap()
        assert gc.get_threshold() == GC_THRESHOLDS and GC_THRESHOLDS[0] > before[0]
        assert gc.get_freeze_count() > 1000  # the modules and objects start-up made
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
