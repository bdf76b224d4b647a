"""A budget for webhook bodies still arriving whose signature cannot be checked yet.

Anyone can send ``X-Hub-Signature-256: sha256=...`` with a body trickled a byte at a time;
until the body is whole it cannot be verified, and each such request holds a connection for up
to the read deadline. Hundreds of them once took every connection the server keeps, locking
out GitHub and ``/healthz``. ``UnverifiedBodies`` caps how many bodies are read at once before
their signature is known: ``PER_PEER`` for one client address (past it: 429) and ``TOTAL`` in
all (past it: 503), both answered at once with the connection closed. A body already whole
when its handler starts (nearly every delivery GitHub sends) takes no slot: it costs nothing to
check. While reading, a request's transport is listed in ``reading``, oldest first, so the
connection cap (``bot.server.serving``) closes the oldest of them rather than refuse a new client.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PER_PEER", "TOTAL", "Refused", "UnverifiedBodies", "oldest_reading", "reading"]

PER_PEER = 16
TOTAL = 128

#: transports of requests whose unverified body is being read, oldest first (every app of the
#: process: the connection cap is the process's too)
reading: dict[int, asyncio.BaseTransport] = {}


class Refused(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


class UnverifiedBodies:
    def __init__(self, per_peer: int | None = None, total: int | None = None):
        self.per_peer = per_peer
        self.total = total
        self.active = 0
        self.by_peer: Counter[str] = Counter()

    @contextmanager
    def slot(self, peer: str | None, transport: asyncio.BaseTransport | None) -> Iterator[None]:
        """Hold a slot while an unverified body is read; ``Refused`` when none is free."""
        peer = peer or "-"
        if self.by_peer[peer] >= (self.per_peer or PER_PEER):
            raise Refused(429, "too many unverified bodies from this address at once")
        if self.active >= (self.total or TOTAL):
            raise Refused(503, "too many unverified bodies at once; retry shortly")
        self.active += 1
        self.by_peer[peer] += 1
        key = id(transport)
        if transport is not None:
            reading[key] = transport
        try:
            yield
        finally:
            self.active -= 1
            self.by_peer[peer] -= 1
            if not self.by_peer[peer]:
                del self.by_peer[peer]
            reading.pop(key, None)


def oldest_reading() -> asyncio.BaseTransport | None:
    """The transport reading an unverified body the longest (removed from the list)."""
    while reading:
        key = next(iter(reading))
        transport = reading.pop(key)
        if not transport.is_closing():
            return transport
    return None
