"""A stranger's fault is one log line, never an ERROR traceback.

Three kinds of request come from clients, not from roundwise, and aiohttp logs each as an
"Error handling request" or "Unhandled exception" traceback, which looks like a bug in
roundwise, buries real errors and, under a flood, fills the disk:

- a client that hangs up mid-request (a ``ConnectionResetError`` while a handler reads the
  body, or aiohttp's ``RuntimeError("Connection closed.")`` when the body of a request it
  refused, a 429 or 503, is drained after the client has gone);
- a malformed request: a header line over aiohttp's 8,190 bytes, thousands of headers, a
  request line that is not HTTP (``aiohttp.http_exceptions.HttpProcessingError``);

``disconnects`` (a middleware) answers the first inside a handler with one line and the
nginx-style 499; ``StrangerFaults`` (a filter on aiohttp's ``aiohttp.server`` logger, which
``bot.server.serving.GuardedRunner`` installs) rewrites aiohttp's own records of all three as
one line at WARNING without the traceback, naming the client and the fault. Anything else
aiohttp logs (a real bug in a handler) keeps its traceback.

GitHub retries nothing on its own; a delivery cut off was never recorded, so a redelivery from
the App's settings page is handled as new.
"""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

__all__ = ["CLIENT_CLOSED", "StrangerFaults", "disconnects", "install_stranger_faults"]

log = logging.getLogger("roundwise.http")

#: the status the access log shows for a request whose client went away (nginx's convention)
CLIENT_CLOSED = 499
MAX_DETAIL = 200  # characters of aiohttp's description of a malformed request


def _hung_up(exc: BaseException | None) -> bool:
    """Whether ``exc`` says the client's connection went away (not a connection of ours that
    failed, such as a refused one, which stays a traceback)."""
    return isinstance(exc, ConnectionResetError | BrokenPipeError | ConnectionAbortedError) or (
        isinstance(exc, RuntimeError) and str(exc).startswith("Connection closed"))


@web.middleware
async def disconnects(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except (ConnectionResetError, RuntimeError) as exc:
        gone = request.transport is None or request.transport.is_closing()
        if not (isinstance(exc, ConnectionResetError) or (gone and _hung_up(exc))):
            raise
        log.warning("client %s disconnected during %s %s (delivery %s); nothing was recorded",
                    request.remote, request.method, request.path,
                    request.headers.get("X-GitHub-Delivery", "-"))
        return web.Response(status=CLIENT_CLOSED)


def _detail(exc: BaseException) -> str:
    """aiohttp's words for the fault, on one line and cut: they quote the client's bytes."""
    text = " ".join(str(exc).split())
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


class StrangerFaults(logging.Filter):
    """On ``aiohttp.server``: a record of a client's hang-up or malformed request becomes one
    WARNING line without its traceback (a DEBUG one stays DEBUG); other records pass as
    they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            what = "refused a malformed request"
        elif _hung_up(exc):
            what = "a client hung up before its request was read to the end"
        else:
            return True
        said = record.getMessage()
        client = said.rpartition(" from ")[2] if " from " in said else "a client"
        record.msg = "%s (from %s): %s: %s"
        record.args = (what, client, type(exc).__name__, _detail(exc))
        record.exc_info = record.exc_text = None
        record.stack_info = None
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def install_stranger_faults() -> None:
    """Put ``StrangerFaults`` on aiohttp's server logger, once per process."""
    logger = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, StrangerFaults) for f in logger.filters):
        logger.addFilter(StrangerFaults())
