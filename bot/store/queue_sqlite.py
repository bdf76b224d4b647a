"""The queue store on SQLite: the embedded default, in the ledger's own file.

It shares the ledger's connection, so a job and the delivery it settles commit together, and
it owns the ``jobs`` table's migrations. A claim runs under ``BEGIN IMMEDIATE`` (SQLite's one
writer), which is what keeps one PR's jobs in order. Deliveries, leases and installations are
this store's too (their tables stay in the ledger's schema, created with it); ``accept``
records the delivery and queues its job in the same transaction.
"""

from __future__ import annotations

import json
import time

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from .ledger_sqlite import Ledger, migration_lock, now
from .queue_base import FINISHED, Delivery, Installation, Job, payload_text

migrations = Migrations("roundwise-jobs")

#: the next job to run: the oldest queued and due whose PR has nothing running and nothing
#: older queued. It walks ``jobs_queued`` (queued jobs in id order) and stops at the first
#: runnable one; left to choose, SQLite (no ANALYZE statistics) takes the (status, run_after)
#: index and sorts every queued job first, 12 ms a claim at 10,000 queued instead of 0.1 ms.
#: ``INDEXED BY`` pins the plan (``python -m bench.perf.queue --explain`` prints it).
CLAIM = """
    select * from jobs j indexed by jobs_queued where j.status = 'queued' and j.run_after <= ?
    and not exists (
        select 1 from jobs o where o.repo = j.repo and o.number = j.number
        and j.number is not null and o.id != j.id
        and (o.status = 'running' or (o.status = 'queued' and o.id < j.id))
    )
    order by j.id limit 1
"""


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


@migrations()
def m002_job_leases(db: Database) -> None:
    # until when a running job's owner holds it; retention prunes by finish time
    db["jobs"].add_column("lease_until", float)
    db["jobs"].create_index(["status", "finished_at"])
    db["deliveries"].create_index(["processed_at"])


@migrations()
def m003_claim_index(db: Database) -> None:
    # the claim walks the queued jobs in id order (see CLAIM); a partial index holds only them
    db.execute("create index if not exists jobs_queued on jobs (id) where status = 'queued'")


class SqliteQueueStore:
    """The queue's data in the ledger's SQLite file (see the module docstring)."""

    threaded = False

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.db = ledger.db
        with migration_lock(ledger.path):
            migrations.apply(self.db)

    def close(self) -> None:
        self.ledger.close()

    # -- jobs --------------------------------------------------------------------------------

    # enqueue and accept are the webhook's path: plain SQL, a handful of statements in one
    # transaction (sqlite-utils' insert/get introspect the table each call, ~30 statements)

    def enqueue(self, kind: str, *, repo=None, number=None, installation_id=None, payload=None,
                delivery_id=None, head_sha=None) -> int:
        with self.ledger.transaction():
            return self._enqueue(kind, repo, number, installation_id, payload, delivery_id,
                                 head_sha)

    def _enqueue(self, kind, repo, number, installation_id, payload, delivery_id,
                 head_sha) -> int:
        conn = self.db.conn
        if delivery_id:
            row = conn.execute("select id, status from jobs where delivery_id = ? and kind = ?",
                               [delivery_id, kind]).fetchone()
            if row:
                if row[1] == "failed":  # a redelivery after a failure: queue it again
                    conn.execute("update jobs set status = 'queued', attempts = 0, "
                                 "run_after = 0.0, error = null where id = ?", [row[0]])
                return row[0]
        return conn.execute(
            "insert into jobs (delivery_id, kind, repo, number, installation_id, head_sha, "
            "payload, status, attempts, run_after, created_at) "
            "values (?, ?, ?, ?, ?, ?, ?, 'queued', 0, 0.0, ?)",
            [delivery_id, kind, repo, number, installation_id, head_sha,
             payload_text(payload), now()]).lastrowid

    def accept(self, delivery_id, event, action, kind, *, repo=None, number=None,
               installation_id=None, payload=None, head_sha=None) -> int | None:
        with self.ledger.transaction():
            return self._accept(delivery_id, event, action, kind, repo, number,
                                installation_id, payload, head_sha)

    def accept_many(self, deliveries: list[tuple[tuple, dict]]) -> list[int | None]:
        """``accept`` for each ``(args, kwargs)``, all in one transaction (one commit: most
        of what an acknowledgement costs); any failure rolls back all of them."""
        with self.ledger.transaction():
            return [self._accept(*args, kwargs.get("repo"), kwargs.get("number"),
                                 kwargs.get("installation_id"), kwargs.get("payload"),
                                 kwargs.get("head_sha")) for args, kwargs in deliveries]

    def _accept(self, delivery_id, event, action, kind, repo, number, installation_id,
                payload, head_sha) -> int | None:
        """``bot.store.ledger_sqlite``'s ``record_delivery`` then ``_enqueue``; a new delivery (the
        usual case) is two inserts."""
        conn = self.db.conn
        stamp = now()
        if conn.execute("insert into deliveries (id, event, action, repo, number, received_at, "
                        "attempts) values (?, ?, ?, ?, ?, ?, 1) on conflict (id) do nothing",
                        [delivery_id, event, action, repo, number, stamp]).rowcount == 0:
            row = conn.execute("select processed_at from deliveries where id = ?",
                               [delivery_id]).fetchone()
            if row[0]:
                return None  # already fully processed: a duplicate
            conn.execute("update deliveries set attempts = attempts + 1 where id = ?",
                         [delivery_id])
            return self._enqueue(kind, repo, number, installation_id, payload, delivery_id,
                                 head_sha)
        cursor = conn.execute(
            "insert into jobs (delivery_id, kind, repo, number, installation_id, head_sha, "
            "payload, status, attempts, run_after, created_at) "
            "values (?, ?, ?, ?, ?, ?, ?, 'queued', 0, 0.0, ?) "
            "on conflict (delivery_id, kind) do nothing",
            [delivery_id, kind, repo, number, installation_id, head_sha,
             payload_text(payload), stamp])
        if cursor.rowcount:
            return cursor.lastrowid
        return self._enqueue(kind, repo, number, installation_id, payload, delivery_id,
                             head_sha)  # its job outlived the delivery's row

    def claim(self, owner: str, stamp: float, lease: float = 600.0) -> Job | None:
        while True:
            outcome = self._in_transaction(lambda conn: self._claim_once(conn, owner, stamp,
                                                                           lease))
            if outcome != "skipped":
                return outcome

    def finish_and_claim(self, job_id: int, status: str, error: str | None, owner: str,
                         stamp: float, lease: float = 600.0) -> Job | None:
        def both(conn):
            conn.execute(self._FINISH, [status, now(), error, job_id])
            return self._claim_once(conn, owner, stamp, lease)

        outcome = self._in_transaction(both)
        return self.claim(owner, stamp, lease) if outcome == "skipped" else outcome

    def _in_transaction(self, work):
        """``work(conn)`` in one ``BEGIN IMMEDIATE`` transaction, committed unless it raises."""
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            outcome = work(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return outcome

    def _claim_once(self, conn, owner: str, stamp: float, lease: float):
        """The next job taken for ``owner`` (inside the caller's transaction), None when there
        is none, or "skipped" when the candidate was a superseded round (marked skipped)."""
        cursor = conn.execute(CLAIM, [stamp])
        row = cursor.fetchone()
        if row is None:
            return None
        job = dict(zip([d[0] for d in cursor.description], row))
        if job["kind"] == "round" and self._superseded(conn, job):
            conn.execute(
                "update jobs set status = 'skipped', finished_at = ?, error = ? "
                "where id = ?", [now(), "superseded by a newer push", job["id"]])
            conn.execute(
                "update deliveries set processed_at = ?, outcome = ? where id = ?",
                [now(), "skipped: superseded by a newer push", job["delivery_id"]])
            from bot.observe import metrics

            metrics.JOBS.labels(kind="round", outcome="skipped").inc()
            return "skipped"
        conn.execute(
            "update jobs set status = 'running', owner = ?, started_at = ?, "
            "lease_until = ?, attempts = attempts + 1 where id = ?",
            [owner, now(), stamp + lease, job["id"]])
        job.update(attempts=job["attempts"] + 1, status="running", owner=owner)
        return Job.from_row(job)

    @staticmethod
    def _superseded(conn, job: dict) -> bool:
        newer = conn.execute(
            "select 1 from jobs where repo = ? and number = ? and kind = 'round' "
            "and status = 'queued' and id > ? limit 1",
            [job["repo"], job["number"], job["id"]],
        ).fetchone()
        return newer is not None and not json.loads(job["payload"] or "{}").get("force")

    _FINISH = "update jobs set status = ?, finished_at = ?, error = ? where id = ?"

    def finish(self, job_id: int, status: str, error: str | None = None) -> None:
        self.db["jobs"].update(job_id, {"status": status, "finished_at": now(), "error": error})

    def requeue(self, job_id: int, error: str, run_after: float) -> None:
        self.db["jobs"].update(job_id, {"status": "queued", "owner": None, "error": error,
                                        "run_after": run_after})

    def renew(self, owner: str, until: float) -> int:
        with self.ledger.transaction():
            return self.db.execute(
                "update jobs set lease_until = ? where owner = ? and status = 'running'",
                [until, owner]).rowcount

    def give_up(self, stamp: float | None, max_attempts: int, error: str) -> int:
        expired, args = ("", []) if stamp is None else \
            (" and coalesce(lease_until, 0) < ?", [stamp])
        with self.ledger.transaction():
            return self.db.execute(
                "update jobs set status = 'failed', owner = null, finished_at = ?, error = ? "
                f"where status = 'running' and attempts >= ?{expired}",
                [now(), error, max_attempts, *args]).rowcount

    def recover(self, stamp: float | None) -> int:
        with self.ledger.transaction():
            if stamp is None:
                count = self.db.execute(
                    "update jobs set status = 'queued', owner = null where status = 'running'"
                ).rowcount
                self.db.execute("delete from leases")
            else:
                count = self.db.execute(
                    "update jobs set status = 'queued', owner = null where status = 'running' "
                    "and coalesce(lease_until, 0) < ?", [stamp]).rowcount
                self.db.execute("delete from leases where expires_at < ?", [stamp])
        return count

    def depth(self) -> int:
        return self.db.execute(
            "select count(*) from jobs where status in ('queued', 'running')").fetchone()[0]

    def pending(self, repo: str, number: int) -> int:
        return self.db.execute(
            "select count(*) from jobs where repo = ? and number = ? "
            "and status in ('queued', 'running')", [repo, number]).fetchone()[0]

    def job(self, job_id: int) -> Job | None:
        row = self.ledger._get("jobs", job_id)
        return Job.from_row(row) if row else None

    def jobs(self, repo: str | None = None, number: int | None = None,
             status: str | None = None) -> list[Job]:
        where, args = _job_filter(repo, number, status, "?")
        return [Job.from_row(dict(zip([c[0] for c in cur.description], row, strict=True)))
                for cur in [self.db.execute(f"select * from jobs{where} order by id", args)]
                for row in cur.fetchall()]

    def job_counts(self) -> dict[str, int]:
        return dict(self.db.execute("select status, count(*) from jobs group by status")
                    .fetchall())

    def forced_since(self, repo: str, number: int, since: str) -> int:
        return self.db.execute(
            "select count(*) from jobs where kind = 'round' and repo = ? and number = ? "
            "and json_extract(payload, '$.force') = 1 and created_at >= ?",
            [repo, number, since]).fetchone()[0]

    # -- deliveries, leases, installations --------------------------------------------------

    def record_delivery(self, delivery_id: str, event: str, action: str | None,
                        repo: str | None = None, number: int | None = None) -> bool:
        """Note a received delivery. False when it was already fully processed."""
        with self.ledger.transaction():
            row = self.db.execute("select processed_at from deliveries where id = ?",
                                  [delivery_id]).fetchone()
            if row and row[0]:
                return False
            if row:
                self.db.execute("update deliveries set attempts = attempts + 1 where id = ?",
                                [delivery_id])
            else:
                self.db.execute(
                    "insert into deliveries (id, event, action, repo, number, received_at, "
                    "attempts) values (?, ?, ?, ?, ?, ?, 1)",
                    [delivery_id, event, action, repo, number, now()])
        return True

    def mark_processed(self, delivery_id: str, outcome: str = "ok") -> None:
        with self.ledger.transaction():
            self.db.execute("update deliveries set processed_at = ?, outcome = ? where id = ?",
                            [now(), outcome, delivery_id])

    def delivery(self, delivery_id: str) -> Delivery | None:
        row = self._row("select * from deliveries where id = ?", [delivery_id])
        return Delivery.from_row(row) if row else None

    def acquire_lease(self, pr_id: int, owner: str, ttl: float = 600.0) -> bool:
        """Take the PR's lease unless another live owner holds it; True when taken. The read
        and the write run under ``BEGIN IMMEDIATE`` (the one writer), so two processes
        cannot both see the lease free and both take it."""
        stamp = time.time()
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("select owner, expires_at from leases where pr_id = ?",
                               [pr_id]).fetchone()
            if row and row[0] != owner and row[1] > stamp:
                conn.execute("ROLLBACK")
                return False
            conn.execute("insert or replace into leases (pr_id, owner, expires_at) "
                         "values (?, ?, ?)", [pr_id, owner, stamp + ttl])
            conn.execute("COMMIT")
            return True
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def release_lease(self, pr_id: int, owner: str) -> None:
        with self.ledger.transaction():
            self.db.execute("delete from leases where pr_id = ? and owner = ?", [pr_id, owner])

    def upsert_installation(self, installation_id: int, account: str | None,
                            suspended: bool = False) -> None:
        stamp = now()
        with self.ledger.transaction():
            self.db.execute(
                "insert into installations (id, account, suspended, created_at, updated_at) "
                "values (?, ?, ?, ?, ?) on conflict (id) do update set account = "
                "excluded.account, suspended = excluded.suspended, updated_at = "
                "excluded.updated_at", [installation_id, account, int(suspended), stamp, stamp])

    def remove_installation(self, installation_id: int) -> None:
        with self.ledger.transaction():
            self.db.execute("delete from installations where id = ?", [installation_id])

    def installation(self, installation_id: int) -> Installation | None:
        row = self._row("select * from installations where id = ?", [installation_id])
        return Installation(row["id"], row["account"], bool(row["suspended"])) if row else None

    def _row(self, query: str, args: list) -> dict | None:
        cur = self.db.execute(query, args)
        row = cur.fetchone()
        return dict(zip([c[0] for c in cur.description], row, strict=True)) if row else None

    # -- retention ---------------------------------------------------------------------------

    def prune(self, before: str) -> dict[str, int]:
        marks = ",".join("?" * len(FINISHED))
        with self.ledger.transaction():
            jobs = self.db.execute(
                f"delete from jobs where status in ({marks}) and finished_at < ?",
                [*FINISHED, before]).rowcount
            deliveries = self.db.execute(
                "delete from deliveries where processed_at is not null and processed_at < ? "
                "and id not in (select delivery_id from jobs where delivery_id is not null)",
                [before]).rowcount
        return {"jobs": jobs, "deliveries": deliveries}


def _job_filter(repo: str | None, number: int | None, status: str | None,
                mark: str) -> tuple[str, list]:
    """A ``where`` clause over jobs for the filters given (``mark`` is the engine's
    placeholder), and its arguments."""
    terms = [(c, v) for c, v in (("repo", repo), ("number", number), ("status", status))
             if v is not None]
    where = " and ".join(f"{c} = {mark}" for c, _ in terms)
    return (f" where {where}" if where else ""), [v for _, v in terms]
