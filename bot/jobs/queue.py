"""The durable job queue: webhook work stored in a queue store and worked by async workers.

A webhook handler only verifies, records and enqueues; workers do the slow part. Jobs live in
a ``QueueStore`` (``bot.store``: the ledger's SQLite file by default, or PostgreSQL), so they
survive a crash or ``kill -9``: on start-up, jobs left ``running`` by a dead process are
queued again (on a shared PostgreSQL store, once their owner's lease has run out). Jobs of one pull request run one at
a time and in the order they arrived; jobs of different pull requests run concurrently. A
``round`` job that a newer ``round`` job of the same PR has overtaken before it started is
skipped (the newer round covers it). Failures are retried with backoff and end ``failed``,
visibly, after ``max_attempts``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bot.store.ledger_sqlite import Ledger

from ..observe import metrics
from ..store import DB_ERRORS, Job, QueueStore
from ..store.queue_sqlite import SqliteQueueStore

__all__ = ["Job", "JobQueue", "RetryLater", "Workers"]

log = logging.getLogger(__name__)


class RetryLater(Exception):
    """Raised by a handler for a failure worth trying again (GitHub down, rate limited);
    ``after``: not before this many seconds (a rate limit's reset), whatever the backoff."""

    def __init__(self, message: str = "", *, after: float | None = None):
        super().__init__(message)
        self.after = after


#: seconds between refreshes of the queue-depth gauge on enqueue and finish (a count of the
#: backlog: at every webhook it would cost more the deeper the queue; ``/metrics`` always counts)
DEPTH_EVERY = 1.0
GIVEN_UP = ("given up: interrupted {} times before it finished (each claim counts an "
            "attempt; the job may kill its worker)")


class JobQueue:
    """Enqueue, claim and finish jobs in a ``QueueStore`` (by default the ledger's file).

    The policy lives here (backoff, attempts, wake-ups, metrics); the SQL in the store.
    ``lease`` is how long a claimed job is its owner's before another replica may take it
    over; workers renew it while they run the job.
    """

    def __init__(self, ledger: Ledger | None = None, *, store: QueueStore | None = None,
                 max_attempts: int = 5, backoff: float = 5.0, lease: float = 600.0,
                 clock: Callable[[], float] = time.time):
        if store is None:
            store = SqliteQueueStore(ledger)
        self.store = store
        self.ledger = ledger
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.lease = lease
        self.clock = clock
        self.wakeup = asyncio.Event()
        self._depth_at = float("-inf")  # when the depth gauge was last refreshed (monotonic)
        self._batch: list | None = None  # deliveries waiting for accept_soon's commit
        self._commits: set[asyncio.Task] = set()  # batches committing in a thread
        self._loop: asyncio.AbstractEventLoop | None = None  # the workers', once seen

    async def call(self, fn: Callable[..., Any], *args, **kwargs) -> Any:
        """Run a store call from the event loop: in a thread when the store is a network
        database, directly for SQLite (one connection, used one call at a time)."""
        if self.store.threaded:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    def enqueue(self, kind: str, *, repo: str | None = None, number: int | None = None,
                installation_id: int | None = None, payload: dict | None = None,
                delivery_id: str | None = None, head_sha: str | None = None) -> int:
        """Add a job; the same delivery never makes two jobs of one kind (a failed one is
        queued again, which is what a redelivery after a failure should do)."""
        job_id = self.store.enqueue(kind, repo=repo, number=number,
                                    installation_id=installation_id, payload=payload or {},
                                    delivery_id=delivery_id, head_sha=head_sha)
        self._wake()
        return job_id

    def accept(self, delivery_id: str, event: str, action: str | None, kind: str, *,
               repo: str | None = None, number: int | None = None,
               installation_id: int | None = None, payload: dict | None = None,
               head_sha: str | None = None) -> int | None:
        """Record a webhook delivery and queue its job, together; None when the delivery was
        already fully processed (a duplicate)."""
        job_id = self.store.accept(delivery_id, event, action, kind, repo=repo, number=number,
                                   installation_id=installation_id, payload=payload or {},
                                   head_sha=head_sha)
        if job_id is not None:
            self._wake()
        return job_id

    async def accept_soon(self, delivery_id: str, event: str, action: str | None, kind: str,
                          **fields) -> int | None:
        """``accept`` from the event loop, with group commit: deliveries that reach this
        point in the same turn of the loop are recorded in one transaction, and each caller
        resumes once it committed (a burst pays one commit per batch, not one per delivery).
        On SQLite the batch commits on the loop; on a network store (PostgreSQL) in a thread,
        while the next batch gathers. A batch that fails is retried one delivery at a time,
        so one bad delivery fails alone."""
        if not hasattr(self.store, "accept_many"):
            return await self.call(self.accept, delivery_id, event, action, kind, **fields)
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        if self._batch is None:
            self._batch = []
            if not self._commits:  # else the commit under way starts this batch when done
                loop.call_soon(self._commit_batch)
        self._batch.append(((delivery_id, event, action, kind), fields, done))
        return await done

    def _commit_batch(self) -> None:
        batch, self._batch = self._batch or [], None
        if not batch:
            return
        if not self.store.threaded:
            self._settle(batch, self._accept_batch(batch))
            return
        # One batch commits at a time; what arrives meanwhile waits and goes in the next,
        # so a burst pays a few durable commits, not one per loop turn.
        task = asyncio.ensure_future(self._commit_off_loop(batch))
        self._commits.add(task)  # held until done (the loop keeps only weak references)

    async def _commit_off_loop(self, batch: list) -> None:
        try:
            results = await asyncio.to_thread(self._accept_batch, batch)
        except asyncio.CancelledError:  # the server is stopping: the callers are told so
            for _, _, done in batch:
                done.cancel()
            raise
        finally:
            self._commits.discard(asyncio.current_task())
        self._settle(batch, results)
        if self._batch:
            self._commit_batch()

    def _accept_each(self, batch: list) -> list:
        results: list = []
        for args, fields, _ in batch:
            try:
                results.append(self.store.accept(*args, **fields))
            except Exception as exc:  # noqa: BLE001 - handed to that delivery's caller
                results.append(exc)
        return results

    def _accept_batch(self, batch: list) -> list:
        """The batch in one transaction; after a failure, one delivery at a time."""
        try:
            return self.store.accept_many([(a, k) for a, k, _ in batch])
        except Exception:  # noqa: BLE001 - one by one, so each gets its own outcome
            return self._accept_each(batch)

    def _settle(self, batch: list, results: list) -> None:
        for (_, _, done), result in zip(batch, results, strict=True):
            if done.cancelled():
                continue
            if isinstance(result, Exception):
                done.set_exception(result)
            else:
                done.set_result(result)
        if any(r is not None and not isinstance(r, Exception) for r in results):
            self._wake()

    def _wake(self) -> None:
        """Wake idle workers (from the loop, or from a thread running a store call) and
        refresh the depth gauge."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a thread: the event belongs to the loop
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self.wakeup.set)
        else:
            self._loop = asyncio.get_running_loop()
            self.wakeup.set()
        self._gauge_depth()

    def _gauge_depth(self) -> None:
        """Refresh the depth gauge, at most every ``DEPTH_EVERY`` seconds; never a network
        store's query on the event loop."""
        stamp = time.monotonic()
        if stamp - self._depth_at < DEPTH_EVERY:
            return
        self._depth_at = stamp
        if self.store.threaded and self._loop is not None and self._on_loop():
            self._loop.run_in_executor(None, lambda: metrics.QUEUE_DEPTH.set(self.depth()))
        else:
            metrics.QUEUE_DEPTH.set(self.depth())

    @staticmethod
    def _on_loop() -> bool:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    def recover(self) -> int:
        """Queue again the jobs a dead process left running, and free the PR leases it held.
        SQLite: one server works one ledger file, so at start-up no other holder is alive and
        every running job is taken back; a shared store takes back only expired leases.
        A job already claimed ``max_attempts`` times is not taken back but failed (a job
        that kills its worker, out of memory say, would otherwise loop for ever).
        Returns how many jobs were re-queued."""
        stamp = self.clock() if self.store.threaded else None
        lost = self.store.give_up(stamp, self.max_attempts, GIVEN_UP.format(self.max_attempts))
        if lost:
            log.error("gave up %d job(s) interrupted by a crash %d times", lost,
                      self.max_attempts)
        count = self.store.recover(stamp)
        if count:
            log.warning("re-queued %d job(s) interrupted by a crash", count)
        return count

    def claim(self, owner: str) -> Job | None:
        """Take the oldest runnable job whose PR has nothing running and nothing older queued."""
        return self.store.claim(owner, self.clock(), self.lease)

    def finish(self, job: Job, status: str = "done", error: str | None = None) -> None:
        self.store.finish(job.id, status, error)
        metrics.JOBS.labels(kind=job.kind, outcome=status).inc()
        self._gauge_depth()

    def finish_and_claim(self, job: Job, owner: str, status: str = "done",
                         error: str | None = None) -> Job | None:
        """``finish`` the job and ``claim`` the next for ``owner`` in one transaction (one
        durable commit where there would be two): both or neither."""
        nxt = self.store.finish_and_claim(job.id, status, error, owner, self.clock(),
                                          self.lease)
        metrics.JOBS.labels(kind=job.kind, outcome=status).inc()
        self._gauge_depth()
        return nxt

    def retry_later(self, job: Job, error: str, after: float | None = None) -> bool:
        """Queue a failed job again after a backoff (or ``after`` seconds, when longer: a rate
        limit's reset); False (and failed) when out of attempts."""
        if job.attempts >= self.max_attempts:
            self.finish(job, "failed", error)
            return False
        wait = max(self.backoff * 2 ** (job.attempts - 1), after or 0.0)
        self.store.requeue(job.id, error, self.clock() + wait)
        metrics.JOBS.labels(kind=job.kind, outcome="retry").inc()
        return True

    def depth(self) -> int:
        return self.store.depth()

    def pending(self, repo: str, number: int) -> int:
        """Jobs of one PR not finished yet (the bench waits for zero)."""
        return self.store.pending(repo, number)

    def job(self, job_id: int) -> Job | None:
        return self.store.job(job_id)


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
        self._janitor: asyncio.Task | None = None
        self._stopping = False
        self.errors: dict[int, str] = {}  # worker index -> its last error, while failing

    def problems(self) -> list[str]:
        """Dead or failing workers, for ``/healthz``."""
        out = [f"worker {i} failing: {e}" for i, e in sorted(self.errors.items())]
        if not self._stopping:
            out += [f"worker {i} is dead" for i, t in enumerate(self._tasks) if t.done()]
        return out

    def start(self) -> None:
        self.queue._loop = asyncio.get_running_loop()  # for wake-ups from store threads
        if self.queue.store.threaded:  # a shared store: take back dead replicas' jobs, often
            self._janitor = asyncio.create_task(self._take_back())
        else:
            self.queue.recover()
        self._tasks = [asyncio.create_task(self._run(i)) for i in range(self.count)]

    async def _take_back(self) -> None:
        """Shared store: re-queue jobs whose owner's lease ran out (a replica that died), and
        renew this replica's own leases, every quarter lease."""
        every = max(self.queue.lease / 4, 0.05)
        while not self._stopping:
            try:
                until = self.queue.clock() + self.queue.lease
                for index in range(self.count):
                    await self.queue.call(self.queue.store.renew, f"{self.owner}-{index}", until)
                await self.queue.call(self.queue.recover)
            except DB_ERRORS as exc:
                log.warning("lease upkeep failed: %s", exc)
            await asyncio.sleep(every)

    async def stop(self) -> None:
        self._stopping = True
        self.queue.wakeup.set()
        tasks = self._tasks + ([self._janitor] if self._janitor else [])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks, self._janitor = [], None

    async def _run(self, index: int) -> None:
        owner = f"{self.owner}-{index}"
        failures = 0
        job: Job | None = None  # the next job, when the last one's finish claimed it
        while not self._stopping:
            if job is None:
                try:
                    job = await self.queue.call(self.queue.claim, owner)
                except DB_ERRORS as exc:  # the database: keep the worker, wait, try again
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
            job = await self._work(job, index, owner)
            self.queue.wakeup.set()  # the PR's next job may be runnable now

    async def _back_off(self, index: int, failures: int, exc: Exception) -> None:
        wait = min(self.poll * 2 ** failures, self.MAX_BACKOFF)
        self.errors[index] = f"{type(exc).__name__}: {exc}"
        log.warning("worker %d: database error (%s); retrying in %.1fs", index,
                    self.errors[index], wait)
        await asyncio.sleep(wait)

    async def _work(self, job: Job, index: int = 0, owner: str | None = None) -> Job | None:
        """Run the job and record its outcome; a done or failed job's finish also claims the
        next job for ``owner`` in the same commit (unless stopping), which is returned."""
        try:
            await self.handler(job)
        except asyncio.CancelledError:
            raise
        except RetryLater as exc:
            log.warning("job %s (%s %s#%s) will be retried: %s", job.id, job.kind, job.repo,
                        job.number, exc)
            message, after = str(exc), exc.after
            await self._record(index, lambda: self.queue.retry_later(job, message, after))
        except DB_ERRORS as exc:  # the database failed under the job: try it again later
            log.warning("job %s (%s %s#%s) hit a database error, will be retried: %s", job.id,
                        job.kind, job.repo, job.number, exc)
            message = f"{type(exc).__name__}: {exc}"
            await self._record(index, lambda: self.queue.retry_later(job, message))
        except Exception as exc:
            log.exception("job %s (%s %s#%s) failed", job.id, job.kind, job.repo, job.number)
            error = f"{type(exc).__name__}: {exc}"
            return await self._record(index, lambda: self._finish(job, owner, "failed", error))
        else:
            return await self._record(index, lambda: self._finish(job, owner, "done"))
        return None

    def _finish(self, job: Job, owner: str | None, status: str,
                error: str | None = None) -> Job | None:
        if owner is None or self._stopping:
            self.queue.finish(job, status, error)
            return None
        return self.queue.finish_and_claim(job, owner, status, error)

    async def _record(self, index: int, write: Callable[[], Any]) -> Any:
        """Write a job's outcome, waiting out database errors (never leave it running);
        what the write returned."""
        failures = 0
        while True:
            try:
                outcome = await self.queue.call(write)
            except DB_ERRORS as exc:
                if self._stopping:
                    raise
                failures += 1
                await self._back_off(index, failures, exc)
                continue
            if failures:
                self.errors.pop(index, None)
            return outcome
