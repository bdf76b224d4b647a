"""The bot's storage seam: the ledger and the durable queue, each with two engines side by side.

The ledger (``tracker.store.LedgerStore``): ``ledger_sqlite`` (``Ledger``, one file, its schema
``schema_sqlite``) and ``ledger_postgres`` (``PostgresLedgerStore``, its schema
``schema_postgres``), both thin backends over ``tracker.ledger_base``, their common
statements written once in ``ledger_sql``. The dashboard reads the ledger read-only through
``ledger_reads`` (the same SQL on both engines). The queue
(``queue_base.QueueStore``): ``queue_sqlite`` (in the ledger's file) and ``queue_postgres``.

``open_ledger_store(target)`` and ``open_queue_store(target)`` pick the engine from
``ROUNDWISE_DB``'s form (``engines.engine_of``, which also says what the engine is): a file
path or ``sqlite:///PATH`` opens SQLite (the embedded default: the ledger's file holds the
queue too); ``postgresql://...`` opens PostgreSQL (several
``roundwise serve`` replicas on one database). A ``schema=NAME`` query parameter in the URL
puts the tables in that schema (created when missing). Every server-side user of the ledger
opens it here, so the tracker (which does no network I/O) never sees a PostgreSQL URL.
"""

from __future__ import annotations

from tracker.store import LedgerStore

from .engines import Engine, engine_of
from .offload import off_loop
from .queue_base import (
    DB_ERRORS,
    Delivery,
    Installation,
    Job,
    QueueStore,
    is_postgres,
    split_schema,
    sqlite_path,
)

__all__ = ["DB_ERRORS", "Delivery", "Engine", "Installation", "Job", "LedgerStore", "QueueStore",
           "engine_of", "engines", "is_postgres", "ledger_postgres", "ledger_reads",
           "ledger_sql", "ledger_sqlite", "off_loop", "offload", "open_ledger_store",
           "open_queue_store", "queue_base", "queue_postgres", "queue_sqlite", "schema_postgres",
           "schema_sqlite", "split_schema", "sqlite_path", "target"]


def open_ledger_store(target: str, *, schema: str | None = None) -> LedgerStore:
    """The ledger for ``target`` (see the module docstring): the SQLite ``Ledger`` or the
    PostgreSQL ``PostgresLedgerStore``."""
    return engine_of(target).open_ledger(target, schema)


def open_queue_store(target: str, *, ledger=None, schema: str | None = None) -> QueueStore:
    """The queue store for ``target`` (see the module docstring). A SQLite store may share an
    open ``ledger`` (one file, one connection, so a job and its delivery commit together)."""
    return engine_of(target).open_queue(target, ledger, schema)
