"""Retention: processed webhook deliveries and finished jobs are dropped once old.

They only serve deduplication (GitHub redelivers for a few days at most) and debugging, so
they need not grow forever; the ledger (defects, rounds, history) is kept. The server prunes
every hour (``prune_periodically``) and ``roundwise db prune`` does it by hand; both keep
``ROUNDWISE_RETENTION_DAYS`` days (default 14).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from ..store import DB_ERRORS, QueueStore

__all__ = ["EVERY", "cutoff", "prune", "prune_periodically"]

log = logging.getLogger(__name__)

#: seconds between two prunes in the server
EVERY = 3600.0


def cutoff(days: float, at: datetime | None = None) -> str:
    """The ISO time before which processed deliveries and finished jobs go."""
    moment = (at or datetime.now(UTC)) - timedelta(days=days)
    return moment.isoformat(timespec="milliseconds")


def prune(store: QueueStore, days: float) -> dict[str, int]:
    """Drop what is older than ``days``; how many jobs and deliveries were dropped."""
    counts = store.prune(cutoff(days))
    if any(counts.values()):
        log.info("pruned %d finished job(s) and %d processed deliver(ies) older than %g days",
                 counts["jobs"], counts["deliveries"], days)
    return counts


async def prune_periodically(queue, days: float, every: float = EVERY) -> None:
    """The server's task: prune now and then every ``every`` seconds, off the event loop for
    a network store; a database error is logged and tried again next time."""
    while True:
        try:
            await queue.call(prune, queue.store, days)
        except DB_ERRORS as exc:
            log.warning("pruning old deliveries and jobs failed: %s", exc)
        await asyncio.sleep(every)
