"""``roundwise db migrate`` and ``roundwise db prune``: the store's upkeep by hand.

Both take the database from ``--db`` or ``ROUNDWISE_DB`` (a path, ``sqlite:///PATH`` or
``postgresql://...``) and need no GitHub App settings, so an operator can run them beside the
servers (the servers migrate at start-up and prune hourly themselves). A target that cannot
be used (an unknown scheme, a missing folder, for ``prune`` a missing file, a PostgreSQL server
that does not answer) ends in one line and exit status 2 (``bot.store.target``).
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["add_commands"]


def add_commands(sub: argparse._SubParsersAction) -> None:
    db = sub.add_parser("db", help="migrate or prune the database",
                        description="Upkeep of the database named by --db or ROUNDWISE_DB.")
    dbsub = db.add_subparsers(dest="db_command", required=True)
    migrate = dbsub.add_parser("migrate", help="apply the schema migrations not applied yet")
    prune = dbsub.add_parser("prune", help="drop processed deliveries and finished jobs older "
                                           "than the retention")
    prune.add_argument("--days", type=float,
                       help="keep this many days (default: ROUNDWISE_RETENTION_DAYS, else 14)")
    for cmd in (migrate, prune):
        cmd.add_argument("--db", help="a SQLite path, sqlite:///PATH or postgresql://... "
                                      "(default: ROUNDWISE_DB, else roundwise.db)")
    migrate.set_defaults(func=cmd_migrate)
    prune.set_defaults(func=cmd_prune)


def _target(args) -> str:
    return args.db or os.environ.get("ROUNDWISE_DB") or "roundwise.db"


def _redact(target: str) -> str:
    from ..store.queue_base import redact

    return redact(target)


def _usable(command: str, target: str, *, must_exist: bool) -> bool:
    """Whether ``target`` can be opened for ``command``; else one line on stderr saying why."""
    from ..store.target import TargetError, check_target

    try:
        check_target(target, must_exist=must_exist)
    except TargetError as exc:
        print(f"roundwise db {command}: {exc}", file=sys.stderr)
        return False
    return True


def _failed(command: str, target: str, exc: BaseException) -> int:
    """A database that failed after all (it went away, refused the login): one line, exit 2."""
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    print(f"roundwise db {command}: {_redact(target)}: {type(exc).__name__}: {first}",
          file=sys.stderr)
    return 2


def cmd_migrate(args) -> int:
    from ..store import DB_ERRORS, engine_of, open_ledger_store, open_queue_store

    target = _target(args)
    if not _usable("migrate", target, must_exist=False):
        return 2
    try:
        # opening a store applies its migrations, under a lock: the ledger's, then the queue's
        ledger = open_ledger_store(target)
        try:
            shared = engine_of(target).shared  # the queue on a connection of its own
            open_queue_store(target, ledger=None if shared else ledger).close()
        finally:
            ledger.close()
    except (*DB_ERRORS, _pool_timeout()) as exc:
        return _failed("migrate", target, exc)
    print(f"{_redact(target)}: schema up to date")
    return 0


def _pool_timeout() -> type[BaseException]:
    from psycopg_pool import PoolTimeout

    return PoolTimeout


def cmd_prune(args) -> int:
    from ..config.env import ConfigError, retention_days
    from ..jobs.retention import prune
    from ..store import open_queue_store

    try:
        days = args.days if args.days is not None else retention_days(
            os.environ.get("ROUNDWISE_RETENTION_DAYS"))
        if days <= 0:
            raise ConfigError("--days must be above 0")
    except ConfigError as exc:
        print(f"roundwise db prune: {exc}", file=sys.stderr)
        return 2
    target = _target(args)
    if not _usable("prune", target, must_exist=True):  # never create an empty ledger here
        return 2
    from ..store import DB_ERRORS

    try:
        store = open_queue_store(target)  # retention is the queue's data (the ledger is kept)
        try:
            counts = prune(store, days)
        finally:
            store.close()
    except (*DB_ERRORS, _pool_timeout()) as exc:
        return _failed("prune", target, exc)
    print(f"{_redact(target)}: dropped {counts['jobs']} finished job(s) and "
          f"{counts['deliveries']} processed deliver(ies) older than {days:g} days")
    return 0
