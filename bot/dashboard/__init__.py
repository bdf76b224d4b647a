"""The dashboard: the ledger and the bot's live quality in the browser, for signed-in people.

Served by ``roundwise serve`` under ``/dashboard`` and, for a ledger on its own (read-only), by
``roundwise dashboard --db URL``. Three pages: an overview of the repositories a viewer may see
(with the server's health), a repository (its pull requests and the bot's quality over time)
and a pull request's ledger as a timeline, one row per defect and one cell per round.

The package (its settings, who may sign in and the public URL, are ``bot.config.dashboard``,
read with the server's): ``sessions`` (signed cookies,
sessions in memory), ``oauth`` (GitHub sign-in and the repositories a person may see),
``access`` (the viewer of a request), ``views`` (rows into pages), ``charts`` (server-side SVG),
``routes`` (the aiohttp routes and ``mount``), ``templates/`` (jinja2, and the stylesheet).
The ledger is read through ``bot.store.ledger_reads``; nothing here writes it. Nothing is
imported here, so that importing one module does not load the pages' libraries.
"""

__all__ = ["access", "charts", "oauth", "routes", "sessions", "views"]
