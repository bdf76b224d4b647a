"""The database engines a target (``ROUNDWISE_DB``, ``--db``) may name, one ``Engine`` each.

``engine_of(target)`` is the one question callers ask about a target: which engine it names
and what that engine is, so no caller reads a URL's scheme for another meaning. An ``Engine``
says how its targets are written (``forms``, for messages), whether it is a database server
several replicas share (``shared``: the queue then has its own connection and no one-server
file lock is taken), how its ledger and queue are opened, how a target is checked before use
(``check``: ``bot.store.target.check_target``'s engine part) and at ``roundwise serve``
start-up (``ready``: one line when it cannot be written). SQLite is the default: it takes
every target without a scheme, and ``sqlite:///PATH``; a scheme no engine claims is refused by
``check_target`` (``engine_of`` still answers SQLite for it, as the openers always did).
Adding an engine is its modules plus one entry in ``ENGINES``.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracker.store import LedgerStore

from .queue_base import QueueStore, is_postgres, redact, split_schema, sqlite_path

__all__ = ["ENGINES", "PG_TIMEOUT", "POSTGRES", "SCHEME", "SQLITE", "Engine", "TargetError",
           "engine_of", "relative_hint"]

PG_TIMEOUT = 5  # seconds to wait for a PostgreSQL server's first answer (check_target)
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class TargetError(ValueError):
    """A database target that cannot be used; the message says why and what would work."""


@dataclass(frozen=True)
class Engine:
    name: str
    #: how its targets are written, for the message naming what is supported
    forms: str
    #: a database server replicas share (else one file, one server)
    shared: bool
    claims: Callable[[str], bool]
    #: ``open_ledger(target, schema)``
    open_ledger: Callable[[str, str | None], LedgerStore]
    #: ``open_queue(target, ledger, schema)``: ``ledger`` an open ledger it may share, or None
    open_queue: Callable[[str, Any, str | None], QueueStore]
    #: ``check(target, must_exist, reach, folder)``: raise ``TargetError`` (see check_target)
    check: Callable[[str, bool, bool, bool], None]
    #: ``ready(target)``: at start-up, why the server cannot use it, or None
    ready: Callable[[str], str | None]


def relative_hint(path: Path) -> str:
    """For a relative SQLite path, how ``sqlite:///`` reads it (the usual surprise)."""
    if path.is_absolute():
        return ""
    return (f" (a relative path: sqlite:///{path} is ./{path} too, as in SQLAlchemy; "
            f"write sqlite:////{path} for /{path})")


# SQLite: one file holds the ledger and the queue

def _sqlite_claims(target: str) -> bool:
    return target.startswith("sqlite:///") or not SCHEME.match(target)


def _sqlite_ledger(target: str, schema: str | None) -> LedgerStore:
    from .ledger_sqlite import Ledger

    return Ledger(sqlite_path(target))


def _sqlite_queue(target: str, ledger: Any, schema: str | None) -> QueueStore:
    from .queue_sqlite import SqliteQueueStore

    if ledger is None:
        from .ledger_sqlite import Ledger

        ledger = Ledger(sqlite_path(target))
    return SqliteQueueStore(ledger)


def _sqlite_check(target: str, must_exist: bool, reach: bool, folder: bool) -> None:
    path = Path(sqlite_path(target)).expanduser()
    hint = relative_hint(path)
    if must_exist and not path.is_file():
        raise TargetError(f"no ledger at {path}{hint}; check the path (roundwise db migrate "
                          "creates one)")
    parent = path.parent if str(path.parent) else Path(".")
    if folder and not parent.is_dir():
        raise TargetError(f"{target}: the folder {parent} does not exist{hint}; create it or "
                          "name a file in an existing folder")


def _sqlite_ready(db_path: str) -> str | None:
    """Whether the ledger file can be opened for writing. A volume the container's user cannot
    write would otherwise end in a raw ``sqlite3.OperationalError`` from the first statement."""
    path = Path(db_path).expanduser()
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return (f"ROUNDWISE_DB={db_path!r}: the folder {folder} does not exist"
                f"{relative_hint(path)}; create it or point ROUNDWISE_DB at a writable place")
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK) or (not path.exists() and not os.access(folder, os.X_OK)):
        who = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"
        return (f"ROUNDWISE_DB={db_path!r}: {target} is not writable by {who}; fix the "
                f"owner or mode of {target} (in Docker: a volume the image's user, uid 10001, "
                "can write, such as the named volume in docker-compose.yml)")
    try:
        conn = sqlite3.connect(path)
        try:
            conn.execute("pragma user_version").fetchone()
            conn.execute("begin immediate")
            conn.rollback()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return f"ROUNDWISE_DB={db_path!r}: the ledger cannot be opened for writing ({exc})"
    return None


# PostgreSQL: a server the replicas share; a schema=NAME query parameter names the schema

def _pg_ledger(target: str, schema: str | None) -> LedgerStore:
    from .ledger_postgres import PostgresLedgerStore

    conninfo, named = split_schema(target)
    return PostgresLedgerStore(conninfo, schema=schema or named)


def _pg_queue(target: str, ledger: Any, schema: str | None) -> QueueStore:
    from .queue_postgres import PostgresQueueStore

    conninfo, named = split_schema(target)
    return PostgresQueueStore(conninfo, schema=schema or named)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:200]


def _pg_check(target: str, must_exist: bool, reach: bool, folder: bool) -> None:
    if not reach:  # the URL's form only: its schema name
        try:
            split_schema(target)
        except ValueError as exc:
            raise TargetError(str(exc)) from None
        return
    import psycopg

    try:
        conninfo, _schema = split_schema(target)
    except ValueError as exc:
        raise TargetError(f"{redact(target)}: {exc}") from None
    try:
        psycopg.connect(conninfo, connect_timeout=PG_TIMEOUT).close()
    except psycopg.Error as exc:
        raise TargetError(f"{redact(target)}: the PostgreSQL server does not answer "
                          f"({type(exc).__name__}: {_first_line(exc)}); check the URL, the "
                          "server and its pg_hba.conf") from None


def _pg_ready(target: str) -> str | None:
    """Whether the PostgreSQL server of ``target`` answers."""
    import psycopg

    conninfo, _schema = split_schema(target)
    try:
        psycopg.connect(conninfo, connect_timeout=10).close()
    except psycopg.Error as exc:
        return (f"ROUNDWISE_DB: the PostgreSQL server does not answer ({type(exc).__name__}: "
                f"{_first_line(exc)}); check the URL, the server and its pg_hba.conf")
    return None


SQLITE = Engine(
    name="sqlite", shared=False, claims=_sqlite_claims,
    forms=("a SQLite path, sqlite:///PATH (relative, as in SQLAlchemy: sqlite:////abs/path.db "
           "for an absolute path)"),
    open_ledger=_sqlite_ledger, open_queue=_sqlite_queue, check=_sqlite_check,
    ready=_sqlite_ready)
POSTGRES = Engine(
    name="postgresql", shared=True, claims=is_postgres,
    forms="postgresql://USER[:PASSWORD]@HOST[:PORT]/DB",
    open_ledger=_pg_ledger, open_queue=_pg_queue, check=_pg_check, ready=_pg_ready)

#: every engine, the default (SQLite) first
ENGINES: tuple[Engine, ...] = (SQLITE, POSTGRES)


def engine_of(target: str) -> Engine:
    """The engine ``target`` names; the default (SQLite) when none claims it."""
    return next((engine for engine in ENGINES if engine.claims(target)), ENGINES[0])
