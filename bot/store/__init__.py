"""The bot's storage seam: the durable queue behind one small interface, two engines.

``open_queue_store(target)`` picks the engine from ``ROUNDWISE_DB``'s form: a file path or
``sqlite:///PATH`` opens the SQLite store (the embedded default, sharing the ledger's file);
``postgresql://...`` opens the PostgreSQL store (several ``roundwise serve`` replicas).
"""

from __future__ import annotations

from .queue import DB_ERRORS, Delivery, Installation, Job, QueueStore, is_postgres, sqlite_path

__all__ = ["DB_ERRORS", "Delivery", "Installation", "Job", "QueueStore", "is_postgres",
           "open_queue_store", "postgres", "queue", "sqlite", "sqlite_path"]


def open_queue_store(target: str, *, ledger=None, schema: str | None = None) -> QueueStore:
    """The queue store for ``target`` (see the module docstring). A SQLite store may share an
    open ``ledger`` (one file, one connection, so a job and its delivery commit together)."""
    if is_postgres(target):
        from .postgres import PostgresQueueStore

        return PostgresQueueStore(target, schema=schema)
    from .sqlite import SqliteQueueStore

    if ledger is None:
        from tracker.ledger import Ledger

        ledger = Ledger(sqlite_path(target))
    return SqliteQueueStore(ledger)
