"""What a database target (``ROUNDWISE_DB``, ``--db``, ``--ledger``) may be, checked in one place.

A target is a SQLite path, ``sqlite:///PATH`` or ``postgresql://...`` (``postgres://`` too).
``sqlite:///PATH`` follows SQLAlchemy's convention: three slashes and a *relative* path, so
``sqlite:///tmp/x.db`` is ``./tmp/x.db``; four slashes (``sqlite:////tmp/x.db``) name an
absolute path. Every command that opens a target calls ``check_target`` first, so a mistake
ends in one line naming what is wrong (exit status 2), never in a traceback or in an empty
ledger created where none was meant:

- a scheme we do not speak (``mysql://``) is named, with the ones we do;
- a SQLite file whose folder does not exist is refused (with the ``sqlite:///`` hint when the
  target used it), instead of creating folders from a typo;
- commands that only read what is there (``db prune``, ``stats``) refuse a missing file;
- a PostgreSQL server that does not answer is reported within ``PG_TIMEOUT`` seconds, where
  the connection pool would otherwise wait 30 s and end in ``PoolTimeout``.
"""

from __future__ import annotations

import re
from pathlib import Path

from .queue_base import is_postgres, redact, split_schema, sqlite_path

__all__ = ["PG_TIMEOUT", "SUPPORTED", "TargetError", "check_target", "relative_hint"]

PG_TIMEOUT = 5  # seconds to wait for a PostgreSQL server's first answer
SUPPORTED = ("a SQLite path, sqlite:///PATH (relative, as in SQLAlchemy: sqlite:////abs/path.db "
             "for an absolute path) or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class TargetError(ValueError):
    """A database target that cannot be used; the message says why and what would work."""


def relative_hint(path: Path) -> str:
    """For a relative SQLite path, how ``sqlite:///`` reads it (the usual surprise)."""
    if path.is_absolute():
        return ""
    return (f" (a relative path: sqlite:///{path} is ./{path} too, as in SQLAlchemy; "
            f"write sqlite:////{path} for /{path})")


def check_target(target: str, *, must_exist: bool = False, reach: bool = True,
                 folder: bool = True) -> None:
    """Raise ``TargetError`` when ``target`` cannot be opened as asked.

    ``must_exist``: a SQLite file must already be there (commands that read a ledger).
    ``reach``: a PostgreSQL server must answer. ``folder``: a SQLite file's folder must exist.
    """
    scheme = _SCHEME.match(target)
    if scheme and not is_postgres(target) and not target.startswith("sqlite:///"):
        raise TargetError(f"{redact(target)}: the {scheme.group(1)}:// scheme is not supported; "
                          f"use {SUPPORTED}")
    if is_postgres(target):
        if reach:
            _reach(target)
        return
    path = Path(sqlite_path(target)).expanduser()
    hint = relative_hint(path)
    if must_exist and not path.is_file():
        raise TargetError(f"no ledger at {path}{hint}; check the path (roundwise db migrate "
                          "creates one)")
    parent = path.parent if str(path.parent) else Path(".")
    if folder and not parent.is_dir():
        raise TargetError(f"{target}: the folder {parent} does not exist{hint}; create it or "
                          "name a file in an existing folder")


def _reach(target: str) -> None:
    import psycopg

    try:
        conninfo, _schema = split_schema(target)
    except ValueError as exc:
        raise TargetError(f"{redact(target)}: {exc}") from None
    try:
        psycopg.connect(conninfo, connect_timeout=PG_TIMEOUT).close()
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise TargetError(f"{redact(target)}: the PostgreSQL server does not answer "
                          f"({type(exc).__name__}: {first}); check the URL, the server and its "
                          "pg_hba.conf") from None
