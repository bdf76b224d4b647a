"""What the tracker works out about a file's text, worked out once per round.

Deciding a round reads the same few texts (each file at the new head and at the previous one)
for every defect: split into lines, normalised, tokenised, parsed. The functions that do that
are decorated with ``per_text``: while a round is being decided (``one_round``, around
``decide_round``) they remember every answer for as long as the round lasts, however many
files the pull request has; outside a round they keep a small LRU cache as before. Nothing is
kept once the round is decided, so a big pull request does not pin its texts in memory.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = ["one_round", "per_text"]

F = TypeVar("F", bound=Callable[..., Any])

_round: ContextVar[dict | None] = ContextVar("tracker_round_memo", default=None)


def per_text(maxsize: int = 64) -> Callable[[F], F]:
    """Memoise a pure function of texts (hashable arguments): for the whole round in
    progress, else in an LRU of ``maxsize``. ``cache_clear`` empties the LRU."""

    def wrap(fn: F) -> F:
        lru = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def cached(*args):
            memo = _round.get()
            if memo is None:
                return lru(*args)
            table = memo.get(cached)
            if table is None:
                table = memo[cached] = {}
            try:
                return table[args]
            except KeyError:
                value = table[args] = fn(*args)
                return value

        cached.cache_clear = lru.cache_clear  # type: ignore[attr-defined]
        cached.cache_info = lru.cache_info  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return wrap


def one_round(fn: F) -> F:
    """Run ``fn`` as one round: ``per_text`` answers are shared for its duration and dropped
    when it returns (a call inside a round shares the round it is in)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if _round.get() is not None:
            return fn(*args, **kwargs)
        token = _round.set({})
        try:
            return fn(*args, **kwargs)
        finally:
            _round.reset(token)

    return run  # type: ignore[return-value]
