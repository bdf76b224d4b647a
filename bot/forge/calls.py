"""How a backend's API calls are retried, and what their failures become, for every code host.

The policy and the loop are the same on GitHub and GitLab; only how an exception is read (its
status, its headers, which headers hint at a wait) is the host's. ``RetryPolicy`` says how often
and how long; ``backoff`` is the wait before a plain retry (doubling, capped, with jitter);
``hinted_wait`` reads a rate-limited answer's hint (``Retry-After``, or a reset time once the
budget is spent); ``limited`` turns a wait into a retry or, past the policy's longest wait, a
``RateLimited`` carrying ``retry_after`` (the job queue waits that long instead of a worker);
``ErrorTree`` maps a status to the host's typed error (``bot.forge.port``'s tree); and
``with_retries`` runs one call under all that, asking a ``probe`` before each retry of a write
that is not idempotent (found: the write had landed, its answer was lost) and letting the host
retry once at once after fixing the cause (GitHub's expired installation token). No I/O here
but the call and the sleep the host passes in.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .port import ForgeError, RateLimited

__all__ = ["ErrorTree", "RetryPolicy", "backoff", "hinted_wait", "limited", "outcome",
           "with_retries"]

log = logging.getLogger(__name__)


@dataclass
class RetryPolicy:
    attempts: int = 5
    backoff: float = 1.0  # first wait; doubles every attempt, with jitter
    max_wait: float = 120.0  # never sleep longer than this for one retry
    secondary_wait: float = 60.0  # GitHub's advice when a secondary limit gives no hint
    timeout: float = 60.0  # seconds one HTTP call may take (the server's session timeout)


def backoff(policy: RetryPolicy, attempt: int) -> float:
    """The wait before retry ``attempt`` (1: the first): doubling from ``policy.backoff``,
    capped at ``max_wait``, plus up to 10% so retries from many workers spread out."""
    wait = min(policy.backoff * 2 ** (attempt - 1), policy.max_wait)
    return wait * (1 + random.random() * 0.1)


def hinted_wait(headers: Mapping[str, str], now: float, *, reset: str,
                remaining: str | None = None) -> float | None:
    """The seconds a rate-limited answer asks to wait (``headers`` with lower-case names):
    its ``Retry-After``, else until its ``reset`` time (epoch seconds) and a second more, when
    ``remaining`` is None or that header says the budget is spent; None without a valid hint."""
    if "retry-after" in headers:
        try:
            return max(float(headers["retry-after"]), 0.0)
        except ValueError:
            pass
    if remaining is None or headers.get(remaining) == "0":
        try:
            return max(float(headers[reset]) - now, 0.0) + 1.0
        except (KeyError, ValueError):
            pass
    return None


def limited(policy: RetryPolicy, wait: float, error_class: type[RateLimited], message: str,
            **details: Any) -> tuple[float | None, RateLimited]:
    """Wait ``wait`` seconds and retry; past the policy's ``max_wait`` do not sleep: the error
    says when to come back (``retry_after``) and the job queue waits that long."""
    if wait > policy.max_wait:
        error = error_class(f"{message} for {wait:.0f}s", retryable=True, **details)
        error.retry_after = wait
        return None, error
    return wait, error_class(message, retryable=True, **details)


@dataclass(frozen=True)
class ErrorTree:
    """A host's error classes: its base, the ones a status names, and the two retry ones."""

    base: type[ForgeError]
    by_status: Mapping[int, type[ForgeError]]
    rate_limited: type[ForgeError]
    unavailable: type[ForgeError]

    def error_for(self, message: str, *, status: int | None = None, retryable: bool = False,
                  **details: Any) -> ForgeError:
        """The error for an HTTP ``status`` (the base class for the others)."""
        if retryable and status in (403, 429):
            cls = self.rate_limited
        elif retryable or (status is not None and status >= 500):
            cls = self.unavailable
        else:
            cls = self.by_status.get(status, self.base)
        return cls(message, status=status, retryable=retryable, **details)


def outcome(error: ForgeError) -> str:
    """A failed call as a metric label."""
    if error.retryable:
        return "retryable_error"
    return f"http_{error.status}" if error.status else "error"


async def with_retries(call: Callable[[], Awaitable[Any]], *, policy: RetryPolicy,
                       classify: Callable[[Exception, int], tuple[float | None, ForgeError]],
                       sleep: Callable[[float], Awaitable[None]], host: str, method: str,
                       url: str, probe: Callable[[], Awaitable[Any]] | None = None,
                       count: Callable[[str], None] | None = None,
                       refresh: Callable[[ForgeError], bool] | None = None) -> Any:
    """Run ``call``, retrying what ``classify`` says may be retried (``(wait, error)``: wait
    None means raise ``error``; an exception it does not know it re-raises).

    ``probe`` runs before every retry; what it finds is the call's result. ``refresh`` may fix
    the cause of the first failure (True: retry at once). ``count`` hears each outcome (``ok``,
    ``applied``, or the failure's ``outcome``)."""
    count = count or (lambda _: None)
    for attempt in range(1, policy.attempts + 1):
        if attempt > 1 and probe is not None:
            found = await probe()
            if found is not None:
                log.info("%s call %s %s had been applied; not sent again", host, method, url)
                count("applied")
                return found
        try:
            result = await call()
            count("ok")
            return result
        except Exception as exc:  # classified; anything unknown is re-raised by classify
            wait, error = classify(exc, attempt)
            count(outcome(error))
            if refresh is not None and attempt == 1 and policy.attempts > 1 and refresh(error):
                wait = 0.0
            elif wait is None or attempt == policy.attempts:
                level = logging.INFO if error.status == 404 else logging.WARNING
                log.log(level, "%s call failed: %s", host, error)
                raise error from exc
            log.info("%s call %s %s failed (%s); retry %d in %.1fs", host, method, url,
                     error.status or type(exc).__name__, attempt, wait)
            await sleep(wait)
    raise AssertionError("unreachable")
