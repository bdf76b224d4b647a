"""Is this server able to do its work? And is it the only one on its ledger file?

``/healthz`` used to say ok while every worker was dead or the database could not be written
(disk full), so nothing restarted the server. ``problems(state)`` writes a heartbeat row (a real
write: it fails while the disk is full) and asks the worker pool for dead or failing workers;
any problem makes ``/healthz`` answer 503 with the reasons.

One SQLite ledger file takes one server: two processes on it fight over locks, and each
re-queues the other's running jobs at start-up. ``ServerLock`` (an exclusive ``flock`` on the
ledger file itself, released by the OS even after ``kill -9``) makes a second server on the
same file refuse to start, saying why. The lock is on the file, not on a name: a symlink or a
hard link to the ledger is the same file and is refused too. (SQLite's own locks are POSIX
``fcntl`` locks, which a ``flock`` does not touch; the descriptor stays open until the ledger is
closed, since closing a descriptor of the file drops the process's ``fcntl`` locks.) The pid of
the holder is written to ``<ledger>.lock`` for the message. A PostgreSQL database takes any
number of servers (leases, not a lock file, keep them apart), so ``create_app`` takes no lock
for one.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..store import DB_ERRORS

__all__ = ["AlreadyServing", "ServerLock", "problems"]


class AlreadyServing(RuntimeError):
    """Another live process serves this ledger file."""


class ServerLock:
    """An exclusive ``flock`` on the ledger file for as long as this server runs."""

    def __init__(self, db_path: str | os.PathLike):
        self.db_path = Path(db_path)
        self.path = Path(f"{db_path}.lock")  # who holds it, for the message
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.db_path, os.O_RDWR | os.O_CREAT, 0o644)  # empty: a new database
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyServing(
                f"another roundwise server (pid {self._holder()}) is using the ledger "
                f"{self.db_path} (or a link to the same file); one SQLite ledger takes one "
                "server: stop it, or give this one its own ROUNDWISE_DB") from None
        self._fd = fd
        try:
            self.path.write_text(str(os.getpid()))
        except OSError:  # only the message would miss it
            pass

    def _holder(self) -> str:
        try:
            return self.path.read_text()[:20].strip() or "unknown"
        except OSError:
            return "unknown"

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def problems(state) -> list[str]:
    """Why the server cannot do its work now (empty when healthy)."""
    out = []
    try:
        state.ledger.heartbeat()
    except DB_ERRORS as exc:  # disk full, read-only, server gone: the reason goes to the caller
        out.append(f"the ledger database cannot be written: {type(exc).__name__}: {exc}")
    if state.workers is not None:
        out.extend(state.workers.problems())
    return out
