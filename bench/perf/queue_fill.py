"""Opening a throwaway queue store and filling it with a realistic backlog, for the queue bench.

``open_store("sqlite", ...)`` makes a fresh ledger file in a folder; ``open_store("postgresql",
url)`` a fresh schema in that database, dropped by ``close_store``. ``fill`` writes the backlog
in bulk (one statement per engine, not one transaction per job) so that 10,000 jobs take a
second, not a minute; the claim path under test is the store's own.

The backlog of ``queued`` jobs is spread like a busy installation's: most pull requests have
one queued job, a fifth of the jobs belong to pull requests with several queued, and a tenth wait
behind a job of their PR that is running. Finished jobs (``history``) come first, as a day's
worth of done work would before retention prunes it. Insertion order is shuffled (seeded), so
blocked jobs are interleaved with runnable ones.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from pathlib import Path

from bot.store import open_queue_store

REPOS = 50
SEVERAL = 4  # queued jobs per PR in the "several queued" group
BEHIND = 2  # queued jobs behind each running job


@dataclass
class Bench:
    """A store under test and how to get rid of it."""

    engine: str
    store: object
    url: str | None = None
    schema: str | None = None


def open_store(engine: str, folder: Path | None = None, url: str | None = None) -> Bench:
    if engine == "sqlite":
        return Bench(engine, open_queue_store(f"sqlite:///{folder / 'queue.db'}"))
    schema = f"rw_bench_{secrets.token_hex(5)}"
    return Bench(engine, open_queue_store(url, schema=schema), url, schema)


TOUCH = "update jobs set error = error where id = %s"  # a finished job's row: a no-op write


def touch(bench: Bench, job_id: int = 1) -> None:
    """The write baseline: one row updated in a transaction of its own (a durable commit)."""
    if bench.engine == "sqlite":
        with bench.store.ledger.transaction():
            bench.store.db.execute(TOUCH.replace("%s", "?"), [job_id])
    else:
        with bench.store.pool.connection() as conn, conn.transaction():
            conn.execute(TOUCH, [job_id])


def close_store(bench: Bench) -> None:
    bench.store.close()
    if bench.schema:
        import psycopg

        with psycopg.connect(bench.url, autocommit=True) as conn:
            conn.execute(f'drop schema if exists "{bench.schema}" cascade')


def backlog(queued: int, history: int, seed: int = 7) -> list[tuple]:
    """Rows ``(kind, repo, number, status, payload)`` in insertion order."""
    rng = random.Random(seed)
    prs = iter(range(1, 10 ** 9))

    def pr() -> tuple[str, int]:
        number = next(prs)
        return f"bench/repo{number % REPOS}", number

    done = [("comment", *pr(), "done") for _ in range(history)]
    groups: list[list[tuple]] = []
    behind = queued // 10
    for _ in range(behind // BEHIND):
        repo, number = pr()
        groups.append([("round", repo, number, "running")]
                      + [("comment", repo, number, "queued")] * BEHIND)
    several = queued // 5
    for _ in range(several // SEVERAL):
        repo, number = pr()
        groups.append([("comment", repo, number, "queued")] * SEVERAL)
    made = sum(len(g) for g in groups) - behind // BEHIND
    groups += [[("round", *pr(), "queued")] for _ in range(queued - made)]
    # each group keeps its own order (the running job first); groups interleave at random
    turns = [g for g, group in enumerate(groups) for _ in group]
    rng.shuffle(turns)
    cursors = [iter(group) for group in groups]
    ordered = [next(cursors[g]) for g in turns]
    return [(*job, "{}") for job in done + ordered]


def fill(bench: Bench, queued: int, history: int) -> None:
    """Write ``history`` done jobs then ``queued`` queued (and some running) jobs."""
    rows = [(kind, repo, number, 7, status, payload, 0.0, "2026-01-01T00:00:00",
             "bench-runner" if status == "running" else None, 1e12 if status == "running"
             else None) for kind, repo, number, status, payload in backlog(queued, history)]
    columns = ("kind, repo, number, installation_id, status, payload, run_after, created_at, "
               "owner, lease_until")
    if bench.engine == "sqlite":
        with bench.store.ledger.transaction():
            bench.store.db.conn.executemany(
                f"insert into jobs ({columns}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    else:
        with bench.store.pool.connection() as conn, conn.cursor() as cur:
            with cur.copy(f"copy jobs ({columns}) from stdin") as copy:
                for row in rows:
                    copy.write_row(row)
            cur.execute("analyze jobs")


def add_one(bench: Bench, number: int) -> None:
    """One more queued job on a new PR (keeps the depth steady after a claim)."""
    bench.store.enqueue("round", repo=f"bench/repo{number % REPOS}", number=number,
                        installation_id=7, payload={}, delivery_id=None, head_sha=None)

