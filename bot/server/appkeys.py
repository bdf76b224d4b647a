"""The typed keys of the aiohttp application's shared state.

aiohttp warns (``NotAppKeyWarning``) for every string key set on an ``Application``; a typed
``web.AppKey`` is its documented replacement. It lives in its own module so the routes in
``bot.github.webhooks`` and the app in ``bot.server.app`` can share it without importing each other.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

__all__ = ["STATE", "UNVERIFIED"]

#: the server's ``bot.server.app.State`` (config, ledger, queue, GitHub client, workers)
STATE: web.AppKey[Any] = web.AppKey("state")
#: the budget of webhook bodies read before their signature can be checked (``bot.server.unverified``)
UNVERIFIED: web.AppKey[Any] = web.AppKey("unverified")
