"""``GET /``: a small page saying what answers at this address, for whoever opens it.

The App's public URL (``url`` in the manifest) points here, so people following the App's
link, and operators checking a deployment, see the App's name, version and health, and where
the documentation is, instead of a 404.
"""

from __future__ import annotations

import html

from aiohttp import web

from ..forge.appkeys import STATE

__all__ = ["docs", "home", "readme"]


def readme() -> str:
    """The installed package's README (its long description), which is the documentation."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        text = metadata("roundwise").get_payload()
    except PackageNotFoundError:
        text = ""
    return text or "roundwise: see README.md in the source tree."


async def docs(request: web.Request) -> web.Response:
    return web.Response(text=readme(), content_type="text/plain")


async def home(request: web.Request) -> web.Response:
    from .startup import version

    state = request.app[STATE]
    name = state.config.bot_login.removesuffix("[bot]")
    depth = state.queue.depth()
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(name)}</title></head>
<body>
<h1>{html.escape(name)}</h1>
<p>A multi-round pull request reviewer with memory: a GitHub App. Version
<code>{html.escape(version())}</code>.</p>
<p>Health: <strong>ok</strong>, {depth} job(s) queued
(<a href="/healthz">/healthz</a>, <a href="/metrics">/metrics</a>).</p>
<p>Documentation: <a href="/docs">the README</a> (also <code>roundwise --help</code>).</p>
</body></html>
"""
    return web.Response(text=page, content_type="text/html")
