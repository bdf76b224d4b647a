"""How ``roundwise serve`` takes connections: limits no single client can get round.

aiohttp's defaults suit a trusted network: request bodies are inflated as they arrive, an idle
connection stays open for over an hour, and every connection is taken until the process runs out
of file descriptors (then every request fails, with a traceback each). ``GuardedRunner`` is an
``AppRunner`` that switches inflating off (``bot.forge.body`` refuses compressed bodies),
closes connections idle for ``IDLE_TIMEOUT`` seconds (also one that never sends a request),
and keeps at most ``MAX_CONNECTIONS`` open: past that a new connection closes the oldest idle
one (so idle sockets cannot lock GitHub out), or is refused when none is idle; either is logged
once a second at most; a stranger's malformed request or hang-up is one log line, never a
traceback (``bot.server.disconnects.StrangerFaults``, installed with the runner). ``serve_app``
then settles the heap (``settle_heap``): start-up's objects frozen, the young generation
collected less often.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
import time

from aiohttp import web
from aiohttp.web_server import Server

from ..forge.unverified import oldest_reading
from .disconnects import install_stranger_faults

__all__ = ["GC_THRESHOLDS", "IDLE_TIMEOUT", "MAX_CONNECTIONS", "GuardedRunner", "listening",
           "settle_heap", "until_stopped"]

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 512
IDLE_TIMEOUT = 10.0
#: garbage-collection thresholds of a serving process (Python's are 700, 10, 10): a burst of
#: deliveries holds thousands of objects while it commits, and with Python's first threshold
#: every few deliveries walked them all again (about a sixth of an acknowledgement's CPU)
GC_THRESHOLDS = (20_000, 20, 20)


def settle_heap() -> None:
    """For a process that has started serving: what start-up made (modules, configuration,
    the app) moves out of the collector's way for good (``gc.freeze``), and the young
    generation is collected every ``GC_THRESHOLDS[0]`` allocations rather than every 700.
    Only cyclic garbage waits longer; everything else is freed as soon as it is unused."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class _Refuse(asyncio.Protocol):
    """A connection over the limit: closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


class _CappedServer(Server):
    max_connections = MAX_CONNECTIONS
    _last_warning = 0.0

    def __call__(self):  # the protocol factory the listening socket calls per connection
        if len(self._connections) >= self.max_connections:
            idle = next((h for h in self._connections if not h._request_in_progress
                         and not h._messages), None)
            self._warn(f"{len(self._connections)} connections open: "
                       + ("closing the oldest idle one" if idle else "refusing new ones"))
            if idle is None:  # the oldest unverified body being read gives way (bot.forge.unverified)
                reader = oldest_reading()
                if reader is not None:
                    reader.close()
                    return super().__call__()
                return _Refuse()
            idle.force_close()
            self._connections.pop(idle, None)
        return super().__call__()

    @staticmethod
    def _warn(message: str) -> None:
        now = time.monotonic()
        if now - _CappedServer._last_warning > 1.0:
            _CappedServer._last_warning = now
            log.warning(message)


class GuardedRunner(web.AppRunner):
    """An ``AppRunner`` with the limits above (``max_connections`` to change the cap)."""

    def __init__(self, app: web.Application, *, max_connections: int | None = None,
                 **kwargs):
        kwargs.setdefault("auto_decompress", False)
        kwargs.setdefault("keepalive_timeout", IDLE_TIMEOUT)
        super().__init__(app, **kwargs)
        install_stranger_faults()
        self._max_connections = max_connections or MAX_CONNECTIONS

    async def _make_server(self) -> Server:
        server = await super()._make_server()
        capped = type("CappedServer", (_CappedServer,),
                      {"max_connections": self._max_connections})
        server.__class__ = capped
        return server


async def serve_app(app: web.Application, host: str, port: int) -> None:
    """Run ``app`` on ``host:port`` behind a ``GuardedRunner`` until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = GuardedRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        settle_heap()
        log.info("listening on http://%s:%d", host, port)
        await stop.wait()
    finally:
        await runner.cleanup()


async def listening(runner: web.AppRunner, host: str, port: int, cannot: str) -> int | None:
    """``runner`` (set up) listening on ``host:port``: the port it bound (port 0: any free
    one), or None once ``cannot`` is printed on stderr, formatted with ``where`` (host:port)
    and ``why`` (the system's reason). ``serve``, ``dashboard`` and ``setup`` listen so."""
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        print(cannot.format(where=f"{host}:{port}", why=exc.strerror or exc), file=sys.stderr)
        return None
    return runner.addresses[0][1]


async def until_stopped() -> None:
    """Wait for SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
