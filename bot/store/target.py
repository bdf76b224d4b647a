"""What a database target (``ROUNDWISE_DB``, ``--db``, ``--ledger``) may be, checked in one place.

A target is a SQLite path, ``sqlite:///PATH`` or ``postgresql://...`` (``postgres://`` too).
``sqlite:///PATH`` follows SQLAlchemy's convention: three slashes and a *relative* path, so
``sqlite:///tmp/x.db`` is ``./tmp/x.db``; four slashes (``sqlite:////tmp/x.db``) name an
absolute path. Every command that opens a target calls ``check_target`` first, so a mistake
ends in one line naming what is wrong (exit status 2), never in a traceback or in an empty
ledger created where none was meant (each engine's part: its ``check``, ``bot.store.engines``):

- a scheme we do not speak (``mysql://``) is named, with the ones we do;
- a SQLite file whose folder does not exist is refused (with the ``sqlite:///`` hint when the
  target used it), instead of creating folders from a typo;
- commands that only read what is there (``db prune``, ``stats``) refuse a missing file;
- a PostgreSQL server that does not answer is reported within ``PG_TIMEOUT`` seconds, where
  the connection pool would otherwise wait 30 s and end in ``PoolTimeout``.
"""

from __future__ import annotations

from .engines import ENGINES, PG_TIMEOUT, SCHEME, TargetError, engine_of, relative_hint
from .queue_base import redact

__all__ = ["PG_TIMEOUT", "SUPPORTED", "TargetError", "check_target", "relative_hint"]

#: every engine's forms (``bot.store.engines``), for the message naming what is supported
SUPPORTED = " or ".join(filter(None, (", ".join(e.forms for e in ENGINES[:-1]),
                                      ENGINES[-1].forms)))


def check_target(target: str, *, must_exist: bool = False, reach: bool = True,
                 folder: bool = True) -> None:
    """Raise ``TargetError`` when ``target`` cannot be opened as asked.

    ``must_exist``: a SQLite file must already be there (commands that read a ledger).
    ``reach``: a PostgreSQL server must answer (without it, only the URL's form is checked).
    ``folder``: a SQLite file's folder must exist.
    """
    scheme = SCHEME.match(target)
    engine = engine_of(target)
    if scheme and not engine.claims(target):
        raise TargetError(f"{redact(target)}: the {scheme.group(1)}:// scheme is not supported; "
                          f"use {SUPPORTED}")
    engine.check(target, must_exist, reach, folder)
