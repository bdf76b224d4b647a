"""The server's HTTP face: what ``roundwise serve`` runs in front of the job queue.

``app`` (the aiohttp application, its routes, start-up and shutdown: the composition root),
``hosts`` (the code-host backends it serves, in one list, and the settings read with them),
``serving`` (connection limits no single client can get round), ``disconnects`` (a client
hanging up is one log line), ``home`` (``GET /``), ``health`` (``GET /healthz`` and the
one-server-per-file lock), ``logs`` (plain or JSON log lines) and ``startup`` (start-up checks
of the outside world). The layers below keep what they share with it: the metrics
(``bot.observe``), the app's typed keys and the budget of unverified webhook bodies
(``bot.forge``).

Nothing is imported here: ``bot.server.app`` imports every layer below it.
"""

__all__ = ["app", "disconnects", "health", "home", "hosts", "logs", "serving", "startup"]
