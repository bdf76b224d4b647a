"""The bot's storage seam: the ledger and the durable queue, each with two engines.

``open_ledger_store(target)`` and ``open_queue_store(target)`` pick the engine from
``ROUNDWISE_DB``'s form: a file path or ``sqlite:///PATH`` opens SQLite (the embedded default:
the ledger's file holds the queue too); ``postgresql://...`` opens PostgreSQL (several
``roundwise serve`` replicas on one database). A ``schema=NAME`` query parameter in the URL
puts the tables in that schema (created when missing). Every server-side user of the ledger
opens it here, so the tracker (which does no network I/O) never sees a PostgreSQL URL.
"""

from __future__ import annotations

from tracker.store import LedgerStore

from .offload import off_loop
from .queue import (
    DB_ERRORS,
    Delivery,
    Installation,
    Job,
    QueueStore,
    is_postgres,
    split_schema,
    sqlite_path,
)

__all__ = ["DB_ERRORS", "Delivery", "Installation", "Job", "LedgerStore", "QueueStore",
           "is_postgres", "ledger_postgres", "ledger_schema", "off_loop", "offload",
           "open_ledger_store", "open_queue_store", "postgres", "queue", "split_schema",
           "sqlite", "sqlite_path", "target"]


def open_ledger_store(target: str, *, schema: str | None = None) -> LedgerStore:
    """The ledger for ``target`` (see the module docstring): the SQLite ``Ledger`` or the
    PostgreSQL ``PostgresLedgerStore``."""
    if is_postgres(target):
        from .ledger_postgres import PostgresLedgerStore

        conninfo, named = split_schema(target)
        return PostgresLedgerStore(conninfo, schema=schema or named)
    from tracker.ledger import Ledger

    return Ledger(sqlite_path(target))


def open_queue_store(target: str, *, ledger=None, schema: str | None = None) -> QueueStore:
    """The queue store for ``target`` (see the module docstring). A SQLite store may share an
    open ``ledger`` (one file, one connection, so a job and its delivery commit together)."""
    if is_postgres(target):
        from .postgres import PostgresQueueStore

        conninfo, named = split_schema(target)
        return PostgresQueueStore(conninfo, schema=schema or named)
    from .sqlite import SqliteQueueStore

    if ledger is None:
        from tracker.ledger import Ledger

        ledger = Ledger(sqlite_path(target))
    return SqliteQueueStore(ledger)
