"""What the job queue needs from a database, as one small interface with typed rows.

``bot.jobs`` (workers, backoff, metrics) talks only to a ``QueueStore``; the SQL lives in the
engines (``bot.store.queue_sqlite``, ``bot.store.queue_postgres``). The queue's data is the bot's, not the
tracker's: webhook deliveries, jobs, per-PR leases and installations.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import psycopg

#: what a store raises when its database fails (a worker waits it out and tries again)
DB_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, psycopg.Error)

#: job states that are over (pruned once old enough)
FINISHED = ("done", "failed", "skipped")


def is_postgres(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def redact(target: str) -> str:
    """A database URL without its password, for logs and messages."""
    if "://" in target and "@" in target:
        scheme, rest = target.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}@{host}"
    return target


def split_schema(target: str) -> tuple[str, str | None]:
    """A PostgreSQL URL without its ``schema=NAME`` query parameter (not one libpq knows), and
    that name (None without one)."""
    parts = urlsplit(target)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), None)
    if schema is None:
        return target, None
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", schema):
        raise ValueError(f"schema={schema!r}: a PostgreSQL schema name is letters, digits and _")
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


def sqlite_path(target: str) -> str:
    """``sqlite:///PATH`` or a plain path, as a file path."""
    return target.removeprefix("sqlite:///")


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
    status: str = "queued"
    owner: str | None = None
    error: str | None = None

    @classmethod
    def from_row(cls, row: dict) -> Job:
        return cls(row["id"], row["kind"], row["repo"], row["number"], row["installation_id"],
                   _payload(row["payload"]), row["delivery_id"], row["head_sha"],
                   row["attempts"], row.get("status") or "queued", row.get("owner"),
                   row.get("error"))


def payload_text(payload: dict | None) -> str:
    """A job's payload as the JSON text both engines store: ``orjson``'s (compact, about a
    tenth of ``json.dumps``' time on a pull request's fields, paid once per delivery)."""
    return orjson.dumps(payload or {}, option=orjson.OPT_NON_STR_KEYS).decode()


def _payload(value) -> dict:
    """A job's payload: JSON text (SQLite) or already a dict (PostgreSQL's jsonb)."""
    if isinstance(value, dict):
        return value
    return json.loads(value or "{}")


@dataclass
class Delivery:
    id: str
    event: str | None
    action: str | None
    repo: str | None
    number: int | None
    received_at: str | None
    processed_at: str | None
    outcome: str | None
    attempts: int

    @classmethod
    def from_row(cls, row: dict) -> Delivery:
        return cls(**{k: row.get(k) for k in cls.__dataclass_fields__})


@dataclass
class Installation:
    id: int
    account: str | None
    suspended: bool


class QueueStore(Protocol):
    """Deliveries, jobs, leases and installations. Methods are synchronous; ``threaded`` says
    whether callers on the event loop must run them in a thread (a network database)."""

    threaded: bool

    # jobs
    def enqueue(self, kind: str, *, repo: str | None, number: int | None,
                installation_id: int | None, payload: dict, delivery_id: str | None,
                head_sha: str | None) -> int: ...
    def accept(self, delivery_id: str, event: str, action: str | None, kind: str, *,
               repo: str | None, number: int | None, installation_id: int | None,
               payload: dict, head_sha: str | None) -> int | None:
        """``record_delivery`` and ``enqueue`` in one transaction; None for a duplicate."""
    def claim(self, owner: str, stamp: float, lease: float) -> Job | None:
        """The oldest runnable job whose PR has nothing running and nothing older queued,
        marked running for ``owner`` until ``stamp + lease`` (superseded rounds skipped)."""
    def finish(self, job_id: int, status: str, error: str | None) -> None: ...
    def finish_and_claim(self, job_id: int, status: str, error: str | None, owner: str,
                         stamp: float, lease: float) -> Job | None:
        """``finish`` and then ``claim``, sharing one transaction (one durable commit, where
        two would be made one after the other): both happen or neither (a failed call leaves
        the job running, to be finished again). If the candidate it meets is a superseded
        round, the finish and that skip commit and the claim goes on as ``claim`` does."""
    def requeue(self, job_id: int, error: str, run_after: float) -> None: ...
    def renew(self, owner: str, until: float) -> int:
        """Extend the lease of the jobs ``owner`` runs; how many."""
    def give_up(self, stamp: float | None, max_attempts: int, error: str) -> int:
        """Mark failed, with ``error``, the running jobs ``recover`` would take back that were
        already claimed ``max_attempts`` times (each claim counts an attempt, so a job that
        kills its worker reaches its limit); how many."""
    def recover(self, stamp: float | None) -> int:
        """Queue again running jobs whose lease ended before ``stamp`` (their owner is gone),
        and drop expired PR leases; ``None``: every running job and lease (a sole server
        starting up). How many jobs were queued again."""
    def depth(self) -> int: ...
    def pending(self, repo: str, number: int) -> int: ...
    def job(self, job_id: int) -> Job | None: ...
    def jobs(self, repo: str | None = None, number: int | None = None,
             status: str | None = None) -> list[Job]:
        """Jobs (of one PR, in one status), oldest first."""
    def job_counts(self) -> dict[str, int]:
        """How many jobs stand in each status."""
    def forced_since(self, repo: str, number: int, since: str) -> int: ...
    # deliveries
    def record_delivery(self, delivery_id: str, event: str, action: str | None,
                        repo: str | None = None, number: int | None = None) -> bool: ...
    def mark_processed(self, delivery_id: str, outcome: str = "ok") -> None: ...
    def delivery(self, delivery_id: str) -> Delivery | None: ...
    # per-PR leases
    def acquire_lease(self, pr_id: int, owner: str, ttl: float = 600.0) -> bool: ...
    def release_lease(self, pr_id: int, owner: str) -> None: ...
    # installations
    def upsert_installation(self, installation_id: int, account: str | None,
                            suspended: bool = False) -> None: ...
    def remove_installation(self, installation_id: int) -> None: ...
    def installation(self, installation_id: int) -> Installation | None: ...
    # retention
    def prune(self, before: str) -> dict[str, int]:
        """Delete processed deliveries and finished jobs older than ``before`` (ISO time)."""
    def close(self) -> None: ...
