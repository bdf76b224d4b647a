"""The typed keys of the aiohttp application's shared state.

aiohttp warns (``NotAppKeyWarning``) for every string key set on an ``Application``; a typed
``web.AppKey`` is its documented replacement. It lives in the port, below both, so the
backends' routes (``bot.github.webhooks``, ``bot.gitlab.webhooks``) and the app in
``bot.server.app`` share it without importing each other.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

__all__ = ["STATE", "UNVERIFIED"]

#: the server's ``bot.server.app.State`` (config, ledger, queue, GitHub client, workers)
STATE: web.AppKey[Any] = web.AppKey("state")
#: the budget of webhook bodies read before their signature is known (``bot.forge.unverified``)
UNVERIFIED: web.AppKey[Any] = web.AppKey("unverified")
