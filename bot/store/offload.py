"""Store calls from async code, off the event loop when the store is a network database.

The bot's async code (the round runner, handlers, checks) reads and writes the ledger and the
queue through synchronous store methods. SQLite answers in microseconds from one connection, so
its calls stay direct (and single-threaded, as before); a store that says ``threaded``
(PostgreSQL) could block the loop for a round trip, so ``off_loop`` runs the call in a worker
thread. Whole synchronous steps that make many calls (``commit``, ``tracker.intake``) are passed
as one function, so a ledger transaction never spans an ``await``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["off_loop"]


async def off_loop(store: Any, fn: Callable[..., T], /, *args, **kwargs) -> T:
    """``fn(*args, **kwargs)``, in a thread when ``store`` is ``threaded``."""
    if getattr(store, "threaded", False):
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)
