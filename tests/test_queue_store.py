"""The queue store's contract, run on both engines: SQLite files and a real PostgreSQL.

Every test takes a ``make`` fixture that opens a store on one fresh database (a new SQLite file,
or a new schema in PostgreSQL's ``test`` database, dropped afterwards); calling it twice gives
two stores on the same data, as two processes or replicas would have. The PostgreSQL cases skip
with the reason when no server answers at ``ROUNDWISE_TEST_PG``.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time

import pytest

from bot.jobs import JobQueue, Workers
from bot.store import open_queue_store
from bot.store.ledger_sqlite import now
from tests.conftest import PG_URL, pg_unreachable


@pytest.fixture(params=["sqlite", "postgresql"])
def make(request, tmp_path):
    opened = []
    if request.param == "sqlite":
        path = tmp_path / "queue.db"

        def open_one():
            opened.append(open_queue_store(f"sqlite:///{path}"))
            return opened[-1]
    else:
        reason = pg_unreachable()
        if reason:
            pytest.skip(reason)
        schema = f"rw_test_{secrets.token_hex(6)}"

        def open_one():
            opened.append(open_queue_store(PG_URL, schema=schema))
            return opened[-1]
    yield open_one
    for store in opened:
        store.close()
    if request.param == "postgresql":
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'drop schema if exists "{schema}" cascade')


def add(store, kind="comment", number=1, delivery=None, **payload):
    return store.enqueue(kind, repo="o/r", number=number, installation_id=7, payload=payload,
                         delivery_id=delivery, head_sha=None)


def test_jobs_of_one_pr_are_claimed_in_order_and_one_at_a_time(make):
    store = make()
    first, second, other = add(store, number=1), add(store, number=1), add(store, number=2)
    stamp = time.time()
    a = store.claim("w-a", stamp, 60)
    b = store.claim("w-b", stamp, 60)
    assert (a.id, b.id) == (first, other)  # PR 1's second job waits for its first
    assert a.status == "running" and a.attempts == 1 and a.payload == {}
    assert store.claim("w-c", stamp, 60) is None
    store.finish(a.id, "done", None)
    assert store.claim("w-c", stamp, 60).id == second
    assert store.pending("o/r", 1) == 1 and store.depth() == 2


def test_a_backed_off_job_waits_for_its_time(make):
    store = make()
    job_id = add(store)
    job = store.claim("w", time.time(), 60)
    store.requeue(job.id, "GitHub down", time.time() + 100)
    assert store.claim("w", time.time(), 60) is None
    again = store.claim("w", time.time() + 101, 60)
    assert again.id == job_id and again.attempts == 2 and again.error == "GitHub down"


def test_replicas_never_run_two_jobs_of_a_pr_at_once(make):
    stores = [make() for _ in range(3)]
    for i in range(18):
        add(stores[0], number=i % 3 + 1)
    running: dict[int, int] = {}
    order: dict[int, list[int]] = {1: [], 2: [], 3: []}
    clash = []
    guard = threading.Lock()

    def replica(store, name):
        idle = 0
        while idle < 20:
            job = store.claim(name, time.time(), 60)
            if job is None:
                idle += 1
                time.sleep(0.01)
                continue
            idle = 0
            with guard:
                if job.number in running:
                    clash.append((job.number, running[job.number], job.id))
                running[job.number] = job.id
                order[job.number].append(job.id)
            time.sleep(0.005)
            with guard:
                del running[job.number]
            store.finish(job.id, "done", None)

    threads = [threading.Thread(target=replica, args=(s, f"r{i}")) for i, s in
               enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clash == []
    assert sum(len(ids) for ids in order.values()) == 18
    assert all(ids == sorted(ids) for ids in order.values())
    assert stores[1].depth() == 0


def test_an_overtaken_round_is_skipped_unless_forced(make):
    store = make()
    for delivery in ("d-1", "d-2", "d-3"):
        store.record_delivery(delivery, "pull_request", "synchronize", "o/r", 1)
    old = add(store, "round", delivery="d-1")
    forced = add(store, "round", delivery="d-2", force=True)
    newest = add(store, "round", delivery="d-3")
    stamp = time.time()
    job = store.claim("w", stamp, 60)
    assert job.id == forced  # the first was overtaken; the forced one runs anyway
    assert store.job(old).status == "skipped"
    assert store.delivery("d-1").outcome == "skipped: superseded by a newer push"
    store.finish(job.id, "done", None)
    assert store.claim("w", stamp, 60).id == newest


def test_an_overtaken_round_waits_behind_a_running_job_before_it_is_skipped(make):
    store = make()
    running = add(store, "round", delivery="r-1")
    assert store.claim("w-a", time.time(), 60).id == running
    overtaken, newest = add(store, "round", delivery="r-2"), add(store, "round", delivery="r-3")
    other = add(store, "comment", number=2)
    assert store.claim("w-b", time.time(), 60).id == other  # PR 1 waits for its running job
    assert store.job(overtaken).status == "queued"  # blocked, not yet judged
    assert store.claim("w-b", time.time(), 60) is None
    store.finish(running, "done", None)
    assert store.claim("w-b", time.time(), 60).id == newest
    assert store.job(overtaken).status == "skipped"


def test_a_delivery_makes_one_job_and_a_processed_one_is_a_duplicate(make):
    store = make()
    first = store.accept("g-1", "issue_comment", "created", "comment", repo="o/r", number=1,
                         installation_id=7, payload={"x": 1}, head_sha=None)
    again = store.accept("g-1", "issue_comment", "created", "comment", repo="o/r", number=1,
                         installation_id=7, payload={"x": 1}, head_sha=None)
    assert first == again and store.depth() == 1
    assert store.delivery("g-1").attempts == 2
    store.mark_processed("g-1", "ok")
    assert store.accept("g-1", "issue_comment", "created", "comment", repo="o/r", number=1,
                        installation_id=7, payload={}, head_sha=None) is None
    job = store.claim("w", time.time(), 60)
    assert job.payload == {"x": 1} and job.delivery_id == "g-1"
    store.finish(job.id, "failed", "boom")
    assert add(store, delivery="g-1") == first  # a redelivery queues the failed job again
    assert store.job(first).status == "queued" and store.job(first).attempts == 0


def test_a_pr_lease_held_by_a_live_owner_is_not_taken_but_an_expired_one_is(make):
    one, two = make(), make()
    assert one.acquire_lease(5, "proc-a", ttl=60) is True
    assert two.acquire_lease(5, "proc-b", ttl=60) is False
    assert one.acquire_lease(5, "proc-a", ttl=60) is True  # its owner renews it
    one.release_lease(5, "proc-a")
    assert two.acquire_lease(5, "proc-b", ttl=60) is True
    assert one.acquire_lease(7, "proc-a", ttl=-1) is True  # expired at once
    assert two.acquire_lease(7, "proc-b", ttl=60) is True


def test_a_running_job_is_taken_over_only_when_its_lease_ran_out(make):
    one, two = make(), make()
    job_id = add(one)
    stamp = time.time()
    assert one.claim("replica-a-0", stamp, 60).id == job_id
    assert two.recover(stamp + 30) == 0  # its owner is alive: not taken
    assert two.claim("replica-b-0", stamp + 30, 60) is None
    assert one.renew("replica-a-0", stamp + 120) == 1  # the owner renews its lease
    assert two.recover(stamp + 90) == 0
    assert two.recover(stamp + 121) == 1  # the owner died: taken over
    taken = two.claim("replica-b-0", stamp + 121, 60)
    assert taken.id == job_id and taken.owner == "replica-b-0" and taken.attempts == 2


def test_prune_drops_old_processed_deliveries_and_finished_jobs_only(make):
    store = make()
    for delivery in ("old", "unprocessed", "recent"):
        store.record_delivery(delivery, "pull_request", "opened", "o/r", 1)
    done = add(store, number=1)
    queued = add(store, number=2)
    store.finish(store.claim("w", time.time(), 60).id, "done", None)
    store.mark_processed("old")
    time.sleep(0.01)
    cutoff = now()
    time.sleep(0.01)
    store.mark_processed("recent")
    assert store.prune(cutoff) == {"jobs": 1, "deliveries": 1}
    assert store.delivery("old") is None
    assert store.delivery("recent") is not None and store.delivery("unprocessed") is not None
    assert store.job(done) is None and store.job(queued).status == "queued"


def test_installations_and_forced_rounds(make):
    store = make()
    store.upsert_installation(42, "octo")
    store.upsert_installation(42, "octo", suspended=True)
    assert store.installation(42).suspended is True and store.installation(42).account == "octo"
    store.remove_installation(42)
    assert store.installation(42) is None
    since = now()
    add(store, "round", delivery="f-1", force=True)
    add(store, "round", delivery="f-2")
    assert store.forced_since("o/r", 1, since) == 1


def test_stores_opened_together_migrate_once(make):
    stores = []
    threads = [threading.Thread(target=lambda: stores.append(make())) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stores) == 3
    job_id = add(stores[0])
    assert stores[2].job(job_id).kind == "comment"  # one schema, shared


async def test_workers_drain_the_store_in_order(make):
    store = make()
    queue = JobQueue(store=store, lease=2.0)
    seen = []

    async def handler(job):
        seen.append(job.payload["n"])
        await asyncio.sleep(0.01)

    for n in range(5):
        queue.enqueue("comment", repo="o/r", number=1, payload={"n": n})
    workers = Workers(queue, handler, count=3, poll=0.05)
    workers.start()
    try:
        for _ in range(200):
            if queue.pending("o/r", 1) == 0:
                break
            await asyncio.sleep(0.05)
    finally:
        await workers.stop()
    assert seen == [0, 1, 2, 3, 4]
    assert queue.depth() == 0 and workers.problems() == []


def test_jobs_are_listed_by_pr_and_status_and_counted_by_status(make):
    store = make()
    first = add(store, number=1)
    second = add(store, number=2)
    third = add(store, number=1)
    job = store.claim("w", time.time(), 60)
    store.finish(job.id, "failed", "GitHub down")
    assert [j.id for j in store.jobs()] == [first, second, third]
    assert [j.id for j in store.jobs("o/r", 1)] == [first, third]
    (failed,) = store.jobs("o/r", 1, "failed")
    assert (failed.id, failed.error) == (first, "GitHub down")
    assert store.jobs("o/r", 3) == [] and store.jobs(status="running") == []
    assert store.job_counts() == {"failed": 1, "queued": 2}


def test_a_redelivery_of_an_unprocessed_delivery_counts_an_attempt(make):
    store = make()
    assert store.record_delivery("g-1", "pull_request", "opened", "o/r", 1) is True
    # GitHub redelivers with the same id after a failure: not processed yet, so run it again
    assert store.record_delivery("g-1", "pull_request", "opened", "o/r", 1) is True
    assert store.delivery("g-1").attempts == 2 and store.delivery("g-1").processed_at is None
    store.mark_processed("g-1", "ok")
    assert store.delivery("g-1").outcome == "ok"
    assert store.record_delivery("g-1", "pull_request", "opened", "o/r", 1) is False
    assert store.delivery("nope") is None


def test_accept_many_records_queues_skips_processed_and_requeues_failed_in_one_go(make):
    store = make()
    item = lambda d, n: ((d, "issue_comment", "created", "comment"),
                         {"repo": "o/r", "number": n, "installation_id": 7, "payload": {"n": n}})
    first = store.accept_many([item("x", 1), item("y", 2), item("z", 3)])
    assert len(set(first)) == 3 and None not in first
    store.mark_processed("y")
    store.finish(first[2], "failed", "boom")
    again = store.accept_many([item("x", 1), item("y", 2), item("z", 3), item("w", 4)])
    assert again[0] == first[0]  # unprocessed: the same job, one more attempt
    assert again[1] is None  # processed: a duplicate
    assert again[2] == first[2] and store.job(first[2]).status == "queued"  # failed: again
    assert again[3] not in first and store.job(again[3]).payload == {"n": 4}
    assert [store.delivery(d).attempts for d in "xyzw"] == [2, 1, 2, 1]
    twice = store.accept_many([item("v", 5), item("v", 5)])  # one delivery twice in a batch
    assert twice[0] == twice[1] and store.delivery("v").attempts == 2


def _one_transaction(store, work) -> bool:
    """Whether ``work()`` wrote everything it wrote in one transaction: SQLite's statements
    show one COMMIT; PostgreSQL's changed job rows all carry the writing transaction's id."""
    if hasattr(store, "db"):  # SQLite
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        try:
            work()
        finally:
            store.db.conn.set_trace_callback(None)
        return [s.strip().upper() for s in statements].count("COMMIT") == 1
    work()
    with store.pool.connection() as conn:
        xmins = {r["xmin"] for r in conn.execute(
            "select xmin::text as xmin from jobs where status <> 'queued'").fetchall()}
    return len(xmins) == 1


def test_a_finish_and_the_next_claim_share_one_commit(make):
    store = make()
    first, second = add(store, number=1), add(store, number=2)
    job = store.claim("w-a", time.time(), 60)
    assert job.id == first
    claimed = []
    assert _one_transaction(store, lambda: claimed.append(
        store.finish_and_claim(first, "done", None, "w-a", time.time(), 60)))
    assert store.job(first).status == "done" and store.job(first).error is None
    nxt = claimed[0]
    assert (nxt.id, nxt.status, nxt.owner, nxt.attempts) == (second, "running", "w-a", 1)
    assert store.job(second).status == "running"
    assert store.finish_and_claim(second, "failed", "boom", "w-a", time.time(), 60) is None
    assert (store.job(second).status, store.job(second).error) == ("failed", "boom")


def test_a_finish_that_meets_an_overtaken_round_skips_it_and_claims_the_newest(make):
    store = make()
    running = add(store, "round", number=2, delivery="x-1")
    assert store.claim("w", time.time(), 60).id == running
    for delivery in ("o-1", "o-2"):
        store.record_delivery(delivery, "pull_request", "synchronize", "o/r", 1)
    overtaken, newest = add(store, "round", delivery="o-1"), add(store, "round", delivery="o-2")
    nxt = store.finish_and_claim(running, "done", None, "w", time.time(), 60)
    assert nxt.id == newest and store.job(running).status == "done"
    assert store.job(overtaken).status == "skipped"
    assert store.delivery("o-1").outcome == "skipped: superseded by a newer push"


async def test_a_worker_claims_its_next_job_in_the_commit_that_finishes_the_last(make):
    """One worker, three jobs: while it runs each job after the first, the previous job is
    done, and (PostgreSQL) that finish and this job's claim were one transaction."""
    store = make()
    queue = JobQueue(store=store, lease=5.0)
    ids = [queue.enqueue("comment", repo="o/r", number=n, payload={}) for n in (1, 2, 3)]
    seen: list[tuple[int, str, bool]] = []

    def look(job) -> tuple[int, str, bool]:
        previous = ids[ids.index(job.id) - 1]
        same = True
        if not hasattr(store, "db"):
            with store.pool.connection() as conn:
                same = len({r["x"] for r in conn.execute(
                    "select xmin::text as x from jobs where id = any(%s)",
                    [[previous, job.id]]).fetchall()}) == 1
        return job.id, store.job(previous).status, same

    async def handler(job):
        if job.id != ids[0]:
            seen.append(await queue.call(look, job))

    workers = Workers(queue, handler, count=1, poll=0.05)
    workers.start()
    try:
        for _ in range(200):
            if queue.depth() == 0:
                break
            await asyncio.sleep(0.05)
    finally:
        await workers.stop()
    assert seen == [(ids[1], "done", True), (ids[2], "done", True)]
    assert [store.job(i).status for i in ids] == ["done", "done", "done"]


def test_a_job_that_kills_its_worker_is_given_up_after_its_attempts(make):
    """Each claim counts an attempt: a job whose worker dies every time (taken back by
    ``recover`` each time) reaches ``max_attempts`` and is failed, not run a sixth time."""
    store = make()
    job_id = add(store, kind="round")
    clock = [time.time()]
    queue = JobQueue(store=store, max_attempts=5, lease=60, clock=lambda: clock[0])
    for attempt in range(1, 6):
        claimed = queue.claim(f"worker-{attempt}")
        assert claimed.id == job_id and claimed.attempts == attempt
        clock[0] += 120  # the worker died with it: its lease runs out
        queue.recover()
    assert queue.claim("worker-6") is None
    given_up = store.job(job_id)
    assert given_up.status == "failed" and "interrupted 5 times" in given_up.error


def test_postgresql_plans_the_queue_statements_once_per_connection():
    """The claim and take are planned in 1-5 ms and run in 0.2 ms: a prepared statement on
    the queue's connections keeps its generic plan (the burst drain lost 5% of its workers'
    time to planning). SQLite plans in microseconds: nothing to hold there."""
    reason = pg_unreachable()
    if reason:
        pytest.skip(reason)
    schema = f"rw_test_{secrets.token_hex(6)}"
    store = open_queue_store(PG_URL, schema=schema)
    try:
        with store.pool.connection() as conn:
            assert conn.execute("show plan_cache_mode").fetchone()["plan_cache_mode"] == \
                "force_generic_plan"
        jobs = [add(store, number=n) for n in range(1, 9)]
        job = store.claim("w", time.time(), 60)
        done = [job.id]
        while (job := store.finish_and_claim(job.id, "done", None, "w", time.time(), 60)):
            done.append(job.id)  # past psycopg's fifth run: the prepared, generic plan
        assert done == jobs
    finally:
        store.close()
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'drop schema if exists "{schema}" cascade')


def test_a_batch_keeps_every_payload_and_field_exactly(make):
    """A burst's columns go to PostgreSQL as binary arrays: quotes, backslashes, braces,
    commas, NULs spelled as escapes, non-ASCII and big numbers come back as they went in."""
    store = make()
    tricky = {"t": 'a"b\\c {x,y} [1] ü \u2028 \\u0000 NULL', "k": [1, {"x": None}],
              "big": 2 ** 62, "empty": "", "s": "NULL"}
    batch = [(("d-1", "issue_comment", "created", "comment"),
              {"repo": 'o/"r"', "number": 2 ** 31 - 1, "installation_id": 2 ** 40,
               "payload": tricky, "head_sha": None}),
             (("d-2", "push", None, "round"),
              {"repo": None, "number": None, "installation_id": None, "payload": {},
               "head_sha": "a" * 40})]
    first, second = store.accept_many(batch)
    one, two = store.job(first), store.job(second)
    assert one.payload == tricky and (one.repo, one.number, one.installation_id) == (
        'o/"r"', 2 ** 31 - 1, 2 ** 40)
    assert (two.payload, two.repo, two.number, two.head_sha) == ({}, None, None, "a" * 40)
    assert store.delivery("d-2").action is None and store.delivery("d-1").event == \
        "issue_comment"
