"""A client that hangs up mid-request is logged as one line, not as an ERROR traceback.

Without this, aiohttp's default handling of a ``ConnectionResetError`` raised while a handler
reads the body is an "Error handling request" traceback, which looks like a bug in roundwise
and buries real errors. GitHub retries nothing on its own; the delivery was never recorded, so a
redelivery from the App's settings page is handled as new.
"""

from __future__ import annotations

import logging

from aiohttp import web

__all__ = ["CLIENT_CLOSED", "disconnects"]

log = logging.getLogger("roundwise.http")

#: the status the access log shows for a request whose client went away (nginx's convention)
CLIENT_CLOSED = 499


@web.middleware
async def disconnects(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ConnectionResetError:
        log.warning("client %s disconnected during %s %s (delivery %s); nothing was recorded",
                    request.remote, request.method, request.path,
                    request.headers.get("X-GitHub-Delivery", "-"))
        return web.Response(status=CLIENT_CLOSED)
