"""The durable job queue: webhook work stored in the ledger database and worked by async workers.

A webhook handler only verifies, records and enqueues; workers do the slow part. Jobs live in
the ``jobs`` table of the ledger file, so they survive a crash or ``kill -9``: on start-up,
jobs left ``running`` by a dead process are queued again. Jobs of one pull request run one at
a time and in the order they arrived; jobs of different pull requests run concurrently. A
``round`` job that a newer ``round`` job of the same PR has overtaken before it started is
skipped (the newer round covers it). Failures are retried with backoff and end ``failed``,
visibly, after ``max_attempts``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from tracker.ledger import Ledger, now

from . import metrics

log = logging.getLogger(__name__)

migrations = Migrations("roundwise-jobs")


@migrations()
def m001_jobs(db: Database) -> None:
    db["jobs"].create(
        {
            "id": int,
            "delivery_id": str,
            "kind": str,  # round, comment, thread, command, closed, installation
            "repo": str,
            "number": int,
            "installation_id": int,
            "head_sha": str,
            "payload": str,  # JSON
            "status": str,  # queued, running, done, failed, skipped
            "attempts": int,
            "run_after": float,
            "owner": str,
            "error": str,
            "created_at": str,
            "started_at": str,
            "finished_at": str,
        },
        pk="id",
        defaults={"status": "queued", "attempts": 0, "run_after": 0.0},
    )
    db["jobs"].create_index(["status", "run_after"])
    db["jobs"].create_index(["repo", "number", "status"])
    db["jobs"].create_index(["delivery_id", "kind"], unique=True)


@dataclass
class Job:
    id: int
    kind: str
    repo: str | None
    number: int | None
    installation_id: int | None
    payload: dict
    delivery_id: str | None
    head_sha: str | None
    attempts: int

    @classmethod
    def from_row(cls, row: dict) -> Job:
        return cls(row["id"], row["kind"], row["repo"], row["number"], row["installation_id"],
                   json.loads(row["payload"] or "{}"), row["delivery_id"], row["head_sha"],
                   row["attempts"])


class RetryLater(Exception):
    """Raised by a handler for a failure worth trying again (GitHub down, rate limited)."""


class JobQueue:
    """Enqueue, claim and finish jobs in the ledger's database."""

    def __init__(self, ledger: Ledger, *, max_attempts: int = 5, backoff: float = 5.0,
                 clock: Callable[[], float] = time.time):
        self.ledger = ledger
        self.db = ledger.db
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.clock = clock
        migrations.apply(self.db)
        self.wakeup = asyncio.Event()

    def enqueue(self, kind: str, *, repo: str | None = None, number: int | None = None,
                installation_id: int | None = None, payload: dict | None = None,
                delivery_id: str | None = None, head_sha: str | None = None) -> int:
        """Add a job; the same delivery never makes two jobs of one kind (a failed one is
        queued again, which is what a redelivery after a failure should do)."""
        with self.ledger.transaction():
            if delivery_id:
                rows = list(self.db["jobs"].rows_where(
                    "delivery_id = ? and kind = ?", [delivery_id, kind]))
                if rows:
                    row = rows[0]
                    if row["status"] == "failed":
                        self.db["jobs"].update(row["id"], {"status": "queued", "attempts": 0,
                                                           "run_after": 0.0, "error": None})
                    self._wake()
                    return row["id"]
            job_id = self.db["jobs"].insert({
                "delivery_id": delivery_id, "kind": kind, "repo": repo, "number": number,
                "installation_id": installation_id, "head_sha": head_sha,
                "payload": json.dumps(payload or {}), "status": "queued", "attempts": 0,
                "run_after": 0.0, "created_at": now(),
            }).last_pk
        self._wake()
        return job_id

    def _wake(self) -> None:
        self.wakeup.set()
        metrics.QUEUE_DEPTH.set(self.depth())

    def recover(self) -> int:
        """Queue again the jobs a crashed process left running, and free the PR leases it held
        (one server works one ledger file, so at start-up no other holder is alive).
        Returns how many jobs were re-queued."""
        with self.ledger.transaction():
            rows = list(self.db["jobs"].rows_where("status = 'running'"))
            for row in rows:
                self.db["jobs"].update(row["id"], {"status": "queued", "owner": None})
            self.db.execute("delete from leases")
        if rows:
            log.warning("re-queued %d job(s) interrupted by a crash", len(rows))
        return len(rows)

    def claim(self, owner: str) -> Job | None:
        """Take the oldest runnable job whose PR has nothing running and nothing older queued."""
        stamp = self.clock()
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                """
                select * from jobs j where j.status = 'queued' and j.run_after <= ?
                and not exists (
                    select 1 from jobs o where o.repo = j.repo and o.number = j.number
                    and j.number is not null and o.id != j.id
                    and (o.status = 'running' or (o.status = 'queued' and o.id < j.id))
                )
                order by j.id limit 1
                """,
                [stamp],
            ).fetchone()
            if row is None:
                conn.execute("COMMIT")
                return None
            cols = [d[0] for d in conn.execute("select * from jobs limit 0").description]
            job = dict(zip(cols, row))
            if job["kind"] == "round" and self._superseded(conn, job):
                conn.execute(
                    "update jobs set status = 'skipped', finished_at = ?, error = ? where id = ?",
                    [now(), "superseded by a newer push", job["id"]],
                )
                conn.execute(
                    "update deliveries set processed_at = ?, outcome = ? where id = ?",
                    [now(), "skipped: superseded by a newer push", job["delivery_id"]],
                )
                conn.execute("COMMIT")
                metrics.JOBS.labels(kind="round", outcome="skipped").inc()
                return self.claim(owner)
            conn.execute(
                "update jobs set status = 'running', owner = ?, started_at = ?, "
                "attempts = attempts + 1 where id = ?",
                [owner, now(), job["id"]],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        job["attempts"] += 1
        return Job.from_row(job)

    @staticmethod
    def _superseded(conn, job: dict) -> bool:
        newer = conn.execute(
            "select 1 from jobs where repo = ? and number = ? and kind = 'round' "
            "and status = 'queued' and id > ? limit 1",
            [job["repo"], job["number"], job["id"]],
        ).fetchone()
        return newer is not None and not json.loads(job["payload"] or "{}").get("force")

    def finish(self, job: Job, status: str = "done", error: str | None = None) -> None:
        self.db["jobs"].update(job.id, {"status": status, "finished_at": now(), "error": error})
        metrics.JOBS.labels(kind=job.kind, outcome=status).inc()
        metrics.QUEUE_DEPTH.set(self.depth())

    def retry_later(self, job: Job, error: str) -> bool:
        """Queue a failed job again after a backoff; False (and failed) when out of attempts."""
        if job.attempts >= self.max_attempts:
            self.finish(job, "failed", error)
            return False
        wait = self.backoff * 2 ** (job.attempts - 1)
        self.db["jobs"].update(job.id, {"status": "queued", "owner": None, "error": error,
                                        "run_after": self.clock() + wait})
        metrics.JOBS.labels(kind=job.kind, outcome="retry").inc()
        return True

    def depth(self) -> int:
        return self.db.execute(
            "select count(*) from jobs where status in ('queued', 'running')"
        ).fetchone()[0]

    def pending(self, repo: str, number: int) -> int:
        """Jobs of one PR not finished yet (the bench waits for zero)."""
        return self.db.execute(
            "select count(*) from jobs where repo = ? and number = ? "
            "and status in ('queued', 'running')", [repo, number],
        ).fetchone()[0]

    def job(self, job_id: int) -> dict:
        return self.db["jobs"].get(job_id)


Handler = Callable[[Job], Awaitable[None]]


class Workers:
    """A pool of asyncio workers draining a JobQueue with one handler.

    A worker survives a database error (disk full, a lock held too long): it logs one line,
    backs off (up to ``MAX_BACKOFF`` seconds) and tries again, and a job it could not record
    as finished is recorded once the database takes writes again, so no job stays ``running``.
    ``problems()`` tells ``/healthz`` about failing or dead workers. Worker ids carry the
    process id and a random tag, unique per process.
    """

    MAX_BACKOFF = 30.0

    def __init__(self, queue: JobQueue, handler: Handler, *, count: int = 4,
                 owner: str | None = None, poll: float = 0.5):
        self.queue = queue
        self.handler = handler
        self.count = count
        self.owner = owner or f"worker-{os.getpid()}-{secrets.token_hex(3)}"
        self.poll = poll
        self._tasks: list[asyncio.Task] = []
        self._stopping = False
        self.errors: dict[int, str] = {}  # worker index -> its last error, while failing

    def problems(self) -> list[str]:
        """Dead or failing workers, for ``/healthz``."""
        out = [f"worker {i} failing: {e}" for i, e in sorted(self.errors.items())]
        if not self._stopping:
            out += [f"worker {i} is dead" for i, t in enumerate(self._tasks) if t.done()]
        return out

    def start(self) -> None:
        self.queue.recover()
        self._tasks = [asyncio.create_task(self._run(i)) for i in range(self.count)]

    async def stop(self) -> None:
        self._stopping = True
        self.queue.wakeup.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _run(self, index: int) -> None:
        owner = f"{self.owner}-{index}"
        failures = 0
        while not self._stopping:
            try:
                job = self.queue.claim(owner)
            except sqlite3.Error as exc:  # the database: keep the worker, wait, try again
                failures += 1
                await self._back_off(index, failures, exc)
                continue
            if failures:
                failures = 0
                self.errors.pop(index, None)
                log.info("worker %s works again", owner)
            if job is None:
                self.queue.wakeup.clear()
                try:
                    await asyncio.wait_for(self.queue.wakeup.wait(), timeout=self.poll)
                except TimeoutError:
                    pass
                continue
            await self._work(job, index)
            self.queue.wakeup.set()  # the PR's next job may be runnable now

    async def _back_off(self, index: int, failures: int, exc: Exception) -> None:
        wait = min(self.poll * 2 ** failures, self.MAX_BACKOFF)
        self.errors[index] = f"{type(exc).__name__}: {exc}"
        log.warning("worker %d: database error (%s); retrying in %.1fs", index,
                    self.errors[index], wait)
        await asyncio.sleep(wait)

    async def _work(self, job: Job, index: int = 0) -> None:
        try:
            await self.handler(job)
        except asyncio.CancelledError:
            raise
        except RetryLater as exc:
            log.warning("job %s (%s %s#%s) will be retried: %s", job.id, job.kind, job.repo,
                        job.number, exc)
            message = str(exc)
            await self._record(index, lambda: self.queue.retry_later(job, message))
        except sqlite3.Error as exc:  # the database failed under the job: try it again later
            log.warning("job %s (%s %s#%s) hit a database error, will be retried: %s", job.id,
                        job.kind, job.repo, job.number, exc)
            message = f"{type(exc).__name__}: {exc}"
            await self._record(index, lambda: self.queue.retry_later(job, message))
        except Exception as exc:
            log.exception("job %s (%s %s#%s) failed", job.id, job.kind, job.repo, job.number)
            error = f"{type(exc).__name__}: {exc}"
            await self._record(index, lambda: self.queue.finish(job, "failed", error))
        else:
            await self._record(index, lambda: self.queue.finish(job, "done"))

    async def _record(self, index: int, write: Callable[[], object]) -> None:
        """Write a job's outcome, waiting out database errors (never leave it running)."""
        failures = 0
        while True:
            try:
                write()
            except sqlite3.Error as exc:
                if self._stopping:
                    raise
                failures += 1
                await self._back_off(index, failures, exc)
                continue
            if failures:
                self.errors.pop(index, None)
            return
