"""Server logging: plain text lines, or one JSON object a line (``ROUNDWISE_LOG_FORMAT=json``).

Log collectors (Loki, CloudWatch, ``jq``) read JSON lines without a parsing rule. Every line
written while a job runs carries the job's delivery id and pull request (``delivery``, ``pr``),
in both formats, so one delivery's work can be followed from the webhook to the review; the
values travel in context variables that ``job_context`` sets for the job's task. A message
never carries a control character (``bot.observe.printable``): a file name from a pull request
cannot forge a log line, nor drive the terminal that tails the log.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..observe.printable import EscapingFormatter, printable

__all__ = ["JsonFormatter", "configure_logging", "job_context", "with_job_context"]

DELIVERY: contextvars.ContextVar[str | None] = contextvars.ContextVar("delivery", default=None)
PR: contextvars.ContextVar[str | None] = contextvars.ContextVar("pr", default=None)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s%(job)s"


class _JobFilter(logging.Filter):
    """Puts the current job's delivery id and PR on the record (``record.job`` for text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.delivery = DELIVERY.get()
        record.pr = PR.get()
        parts = [f"delivery={record.delivery}" if record.delivery else "",
                 f"pr={record.pr}" if record.pr else ""]
        record.job = (" [" + " ".join(p for p in parts if p) + "]") if any(parts) else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, delivery, pr, and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": printable(record.getMessage()),
        }
        for name in ("delivery", "pr"):
            value = getattr(record, name, None)
            if value:
                out[name] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(fmt: str = "text", level: int = logging.INFO) -> None:
    """Send the server's logs to stderr in ``fmt`` (text or json), replacing earlier handlers."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_JobFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else EscapingFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    for chatty in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):  # a line per call
        logging.getLogger(chatty).setLevel(logging.WARNING)


def job_context(delivery: str | None, repo: str | None, number: int | None) -> None:
    """Mark the rest of the current task's log lines as the work of this job."""
    DELIVERY.set(delivery or None)
    PR.set(f"{repo}#{number}" if repo and number is not None else (repo or None))


def with_job_context(handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    """``handler`` for the workers, with every line it logs tagged with its job.

    The context stays set after the handler returns, so the worker's own line about the job's
    outcome (retry, failure) is tagged too; the next job replaces it.
    """
    async def handle(job) -> Any:
        job_context(getattr(job, "delivery_id", None), getattr(job, "repo", None),
                    getattr(job, "number", None))
        return await handler(job)

    return handle
