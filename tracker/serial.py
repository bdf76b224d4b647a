"""Per-PR serialisation: two rounds of the same PR never interleave; different PRs may.

Inside one process an asyncio lock per PR orders the work; across processes sharing the
database a lease row does (it expires, so a crashed holder cannot block a PR forever). The
leases live in the server's queue store (``bot.store``; one on PostgreSQL says ``threaded``:
its calls then run in a thread, off the event loop).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol


class LeaseStore(Protocol):
    """What the serializer needs of a store: per-PR leases."""

    def acquire_lease(self, pr_id: int, owner: str, ttl: float = 600.0) -> bool: ...
    def release_lease(self, pr_id: int, owner: str) -> None: ...


class PRSerializer:
    """``async with serializer.hold(pr_id): ...`` runs the block alone for that PR."""

    def __init__(self, ledger: LeaseStore, *, owner: str | None = None,
                 ttl: float = 900.0, poll: float = 0.05):
        self.ledger = ledger
        self.owner = owner or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.ttl = ttl
        self.poll = poll
        self._locks: dict[int, asyncio.Lock] = {}
        self._users: dict[int, int] = {}

    async def _call(self, fn, *args):
        if getattr(self.ledger, "threaded", False):
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    @asynccontextmanager
    async def hold(self, pr_id: int) -> AsyncIterator[None]:
        lock = self._locks.setdefault(pr_id, asyncio.Lock())
        self._users[pr_id] = self._users.get(pr_id, 0) + 1
        try:
            async with lock:
                while not await self._call(self.ledger.acquire_lease, pr_id, self.owner,
                                           self.ttl):
                    await asyncio.sleep(self.poll)
                try:
                    yield
                finally:
                    await self._call(self.ledger.release_lease, pr_id, self.owner)
        finally:
            self._users[pr_id] -= 1
            if not self._users[pr_id]:  # forget idle PRs so the table does not grow forever
                del self._users[pr_id]
                self._locks.pop(pr_id, None)
